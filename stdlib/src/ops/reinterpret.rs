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
        let bytes: Vec<u8> = nums!(x.dtype(), T => Ok::<_, KernelError>(bytemuck::cast_slice::<T, u8>(x.as_slice::<T>()?).to_vec()))?;
        let out = only_output(outputs)?;
        nums!(out.dtype(), U => {
            let dst = bytemuck::cast_slice_mut::<U, u8>(out.as_mut_slice::<U>()?);
            if dst.len() != bytes.len() {
                return Err(KernelError::Shape(format!("{} bytes into {}", bytes.len(), dst.len())));
            }
            dst.copy_from_slice(&bytes);
            Ok(())
        })
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
}
