//! `reinterpret` (TVM `src/relay/op/tensor/unary.cc`, `topi::reinterpret`): each element's bits
//! read as another dtype of the same width. Fused through kir's `reinterpret` expression,
//! except on half floats (below).

use super::shape::elementwise_shape;
use crate::attrs::CastAttrs;
use crate::compute::util::{lazy, tensors};
use crate::error::KernelError;
use crate::kernels::util::{args, nums, only_output};
use crate::kernels::Checked;
use crate::operator::{DTypeSet, OpEntry, Operator, ShapeDim};
use half::{bf16, f16};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// `reinterpret` alone.
pub const REINTERPRET: &[OpEntry] = &[OpEntry::of::<Reinterpret>()];

/// `reinterpret(data, dtype)`: the bits of each element of `data` as `dtype`, which must have
/// the same width (`float32` ↔ `int32`/`uint32`, `int64` ↔ `float64`, ...). Integer and float
/// dtypes; `bool`, one bit in TVM, has no other dtype of its width. Bits in the host's byte
/// order, as TVM's CPU code reads them.
#[derive(Debug)]
pub struct Reinterpret;

impl Operator for Reinterpret {
    const NAME: &'static str = "reinterpret";
    const PATTERN: OpPattern = OpPattern::ElemWise;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "the same bits as another dtype of the same width";
    type Attrs = CastAttrs;
    /// It reads `float16`/`bfloat16` bits, not their values.
    const WIDENS_HALF_FLOATS: bool = false;
    /// Each element's bits as the target dtype. Half floats decline: compute rules see them
    /// widened to `float32` (`lower_kir`), whose bits are not theirs, so the width of the
    /// operand the rule sees differs from the target's (`float16` → `int16`), or the target
    /// is a half float; either way the reference kernel runs.
    const COMPUTE: Option<crate::operator::ComputeRule<CastAttrs>> = Some(|inputs, a, _| {
        let [x] = tensors(inputs)?;
        if a.dtype.is_half_float() || x.dtype.bits != a.dtype.bits {
            return Err("reinterpreting half floats runs in the reference kernel".into());
        }
        let (x, to) = (x.clone(), a.dtype);
        Ok(lazy(move |k, idx| x.at(k, idx).reinterpret(to)))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &CastAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        elementwise_shape(inputs)
    }

    fn dtypes(inputs: &[DType], a: &CastAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        let (from, to) = (Self::DTYPES.check(d)?, Self::DTYPES.check(a.dtype)?);
        if from.bits != to.bits {
            return Err(KernelError::DType(format!(
                "cannot reinterpret {from} ({} bits) as {to} ({} bits)",
                from.bits, to.bits
            )));
        }
        Ok(vec![to])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &CastAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let bytes = bits(x)?;
        let out = only_output(outputs)?;
        match out.dtype() {
            DType::F16 => write_halves(out.as_mut_slice::<f16>()?, &bytes, f16::from_bits),
            DType::BF16 => write_halves(out.as_mut_slice::<bf16>()?, &bytes, bf16::from_bits),
            d => nums!(d, U => {
                let dst = bytemuck::cast_slice_mut::<U, u8>(out.as_mut_slice::<U>()?);
                same_size(bytes.len(), dst.len())?;
                dst.copy_from_slice(&bytes);
                Ok(())
            }),
        }
    }
}

/// The elements' bits of `x`, in the host's byte order. Half floats are stored as
/// `half::f16`/`bf16`, which have no byte view: their bits go through `u16`.
fn bits(x: &Tensor) -> Result<Vec<u8>, KernelError> {
    fn halves<H: Copy>(xs: &[H], to_bits: fn(H) -> u16) -> Vec<u8> {
        xs.iter().flat_map(|&h| to_bits(h).to_ne_bytes()).collect()
    }
    match x.dtype() {
        DType::F16 => Ok(halves(x.as_slice::<f16>()?, f16::to_bits)),
        DType::BF16 => Ok(halves(x.as_slice::<bf16>()?, bf16::to_bits)),
        d => nums!(d, T => Ok(bytemuck::cast_slice::<T, u8>(x.as_slice::<T>()?).to_vec())),
    }
}

/// Writes `bytes` (two per element, the host's order) into the half floats `dst`.
fn write_halves<H>(dst: &mut [H], bytes: &[u8], from_bits: fn(u16) -> H) -> Result<(), KernelError> {
    same_size(bytes.len(), dst.len() * 2)?;
    for (d, b) in dst.iter_mut().zip(bytes.chunks_exact(2)) {
        *d = from_bits(u16::from_ne_bytes([b[0], b[1]]));
    }
    Ok(())
}

/// The dtype rule has checked the widths; this guards the copy.
fn same_size(bytes: usize, into: usize) -> Result<(), KernelError> {
    if bytes == into {
        Ok(())
    } else {
        Err(KernelError::Shape(format!("{bytes} bytes into {into}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::eval;

    #[test]
    fn bits_as_another_dtype() {
        let x = Tensor::from_vec(vec![2], vec![1.0f32, -2.0]).unwrap();
        let out = eval::<Reinterpret>(&[&x], &CastAttrs { dtype: DType::I32 }).unwrap();
        assert_eq!(out[0].as_slice::<i32>().unwrap(), &[1.0f32.to_bits() as i32, (-2.0f32).to_bits() as i32]);
        assert!(eval::<Reinterpret>(&[&x], &CastAttrs { dtype: DType::I64 }).is_err());
    }

    /// Half floats keep their 16 bits both ways (they are not widened to `float32` first).
    #[test]
    fn half_float_bits_both_ways() {
        let values = [1.0f32, -2.5, 65504.0, f32::NAN, -0.0];
        let h = Tensor::from_vec(vec![5], values.map(f16::from_f32).to_vec()).unwrap();
        let out = eval::<Reinterpret>(&[&h], &CastAttrs { dtype: DType::I16 }).unwrap();
        let want: Vec<i16> = values.iter().map(|&v| f16::from_f32(v).to_bits() as i16).collect();
        assert_eq!(out[0].as_slice::<i16>().unwrap(), want.as_slice());
        let back = eval::<Reinterpret>(&[&out[0]], &CastAttrs { dtype: DType::F16 }).unwrap();
        let bits: Vec<u16> = back[0].as_slice::<f16>().unwrap().iter().map(|h| h.to_bits()).collect();
        assert_eq!(bits, want.iter().map(|&b| b as u16).collect::<Vec<_>>());
        let b = eval::<Reinterpret>(&[&h], &CastAttrs { dtype: DType::BF16 }).unwrap();
        let bits: Vec<u16> = b[0].as_slice::<bf16>().unwrap().iter().map(|h| h.to_bits()).collect();
        assert_eq!(bits, want.iter().map(|&b| b as u16).collect::<Vec<_>>());
    }
}
