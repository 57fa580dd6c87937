//! The quantized operators (TVM `src/relay/qnn/op/`, v0.16): `qnn.quantize`,
//! `qnn.dequantize`, `qnn.requantize` (`quantize.rs`), `qnn.add`/`subtract`/`mul`/
//! `concatenate` (`binary.rs`), `qnn.dense`/`batch_matmul`/`conv2d` (`product.rs`),
//! `qnn.sigmoid`/`tanh`/`leaky_relu`/`softmax` (`activation.rs`). As in TVM, scales and zero
//! points are operands: a scale is a `float32` tensor, a zero point an `int32` one, each a
//! scalar or (where TVM allows) a 1-d tensor of one value per channel of the data's `axis`.
//! Every reference kernel computes what TVM's canonicalization (`FTVMQnnCanonicalize`) lowers
//! the op to, in the same integer arithmetic (`fixed_point.rs`). This file holds what they
//! share: the dtype and shape rules of quantization parameters, the per-channel walk,
//! saturation and one requantized value.

mod activation;
mod binary;
mod canonical;
mod fixed_point;
mod product;
mod quantize;

pub use activation::*;
pub use binary::*;
pub use product::*;
pub use quantize::*;

use super::index::may_equal;
use super::nn::converted;
use crate::attrs::QnnRounding;
use crate::error::KernelError;
use crate::kernels::num::cast;
use crate::kernels::util::{ints, normalize_axis, same_len};
use crate::operator::{shape_text, OpEntry, ShapeDim};
pub(crate) use fixed_point::FixedPoint;
use relay_devices::{DType, DTypeCode, Tensor};

/// The quantized operators, in listing order.
pub const QNN: &[OpEntry] = &[
    OpEntry::of::<Quantize>(),
    OpEntry::of::<Dequantize>(),
    OpEntry::of::<Requantize>(),
    OpEntry::of::<QnnAdd>(),
    OpEntry::of::<QnnSubtract>(),
    OpEntry::of::<QnnMul>(),
    OpEntry::of::<QnnConcatenate>(),
    OpEntry::of::<QnnDense>(),
    OpEntry::of::<QnnBatchMatmul>(),
    OpEntry::of::<QnnConv2d>(),
    OpEntry::of::<QnnSigmoid>(),
    OpEntry::of::<QnnTanh>(),
    OpEntry::of::<QnnLeakyRelu>(),
    OpEntry::of::<QnnSoftmax>(),
];

/// The dtypes of quantized data TVM's requantize family accepts.
const QUANTIZED: [DType; 4] = [DType::I8, DType::U8, DType::I16, DType::I32];

/// `d` if it is one of `allowed`, else a dtype error naming operand `what`.
fn check_dtype(d: DType, what: &str, allowed: &[DType]) -> Result<DType, KernelError> {
    if allowed.contains(&d) {
        return Ok(d);
    }
    let names: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
    Err(KernelError::DType(format!("`{what}` must be {}, found `{d}`", names.join(" or "))))
}

/// The dtype rules of a scale (`float32`) and a zero point (`int32`) operand.
fn check_qparams(dtypes: &[DType], names: &[&str]) -> Result<(), KernelError> {
    for (&d, name) in dtypes.iter().zip(names) {
        let want = if name.ends_with("scale") || name.ends_with("scales") { DType::F32 } else { DType::I32 };
        check_dtype(d, name, &[want])?;
    }
    Ok(())
}

/// A data operand's channel axis and its size, against which per-channel parameters are
/// checked; `None` for a 0-d operand (TVM reads its axis as 0: parameters must be scalars).
fn channels<D: ShapeDim>(data: &[D], axis: i64) -> Result<Option<(usize, D)>, KernelError> {
    if data.is_empty() {
        return Ok(None);
    }
    let a = normalize_axis(axis, data.len())?;
    Ok(Some((a, data[a])))
}

/// The shape rule of a quantization parameter `what`: a scalar, or with `per_channel` a 1-d
/// tensor with one element per channel.
fn check_qparam_shape<D: ShapeDim>(
    shape: &[D],
    what: &str,
    per_channel: Option<(usize, D)>,
) -> Result<(), KernelError> {
    match (shape, per_channel) {
        ([], _) => Ok(()),
        ([n], Some((_, c))) if may_equal(*n, c) => Ok(()),
        (_, Some((axis, c))) => Err(KernelError::Shape(format!(
            "`{what}` must be a scalar or of shape {}, one element per channel of axis {axis}, found shape {}",
            shape_text(&[c]),
            shape_text(shape)
        ))),
        (_, None) => {
            Err(KernelError::Shape(format!("`{what}` must be a scalar, found shape {}", shape_text(shape))))
        }
    }
}

/// Every operand named in `names` (with its shape) must be a scalar.
fn check_scalars<D: ShapeDim>(shapes: &[&[D]], names: &[&str]) -> Result<(), KernelError> {
    shapes.iter().zip(names).try_for_each(|(s, name)| check_qparam_shape(s, name, None))
}

/// The elements of an integer tensor, widened.
fn int_values(t: &Tensor) -> Result<Vec<i64>, KernelError> {
    converted::<i64>(t)
}

/// The elements of a `float32` scale.
fn scale_values(t: &Tensor) -> Result<Vec<f32>, KernelError> {
    Ok(t.as_slice::<f32>()?.to_vec())
}

/// A per-tensor `(scale, zero point)` pair of operands.
fn scalar_params(scale: &Tensor, zero_point: &Tensor) -> Result<(f32, i64), KernelError> {
    Ok((at(&scale_values(scale)?, 0)?, at(&int_values(zero_point)?, 0)?))
}

/// The channel of each flat element index of a row-major tensor: `(i / inner) % size`.
#[derive(Clone, Copy, Debug)]
struct ChannelWalk {
    inner: usize,
    size: usize,
}

impl ChannelWalk {
    /// The walk over `shape`'s axis `axis` (`-1`: the last; a 0-d tensor has one channel).
    fn new(shape: &[usize], axis: i64) -> Result<ChannelWalk, KernelError> {
        if shape.is_empty() {
            return Ok(ChannelWalk { inner: 1, size: 1 });
        }
        let a = normalize_axis(axis, shape.len())?;
        Ok(ChannelWalk { inner: shape[a + 1..].iter().product::<usize>().max(1), size: shape[a].max(1) })
    }

    /// The channel of element `i`.
    fn channel(self, i: usize) -> usize {
        (i / self.inner) % self.size
    }
}

/// Parameter `values` at `channel`: its only value when per-tensor.
fn at<T: Copy>(values: &[T], channel: usize) -> Result<T, KernelError> {
    let i = if values.len() == 1 { 0 } else { channel };
    values
        .get(i)
        .copied()
        .ok_or_else(|| KernelError::Shape(format!("no quantization parameter for channel {channel}")))
}

/// The value range of an integer dtype.
fn int_range(d: DType) -> Result<(i64, i64), KernelError> {
    let bits = u32::from(d.bits);
    match d.code {
        DTypeCode::Int if (1..=64).contains(&bits) => Ok((i64::MIN >> (64 - bits), i64::MAX >> (64 - bits))),
        DTypeCode::UInt if (1..64).contains(&bits) => Ok((0, (1i64 << bits) - 1)),
        _ => Err(KernelError::DType(format!("expects a quantized integer dtype, found `{d}`"))),
    }
}

/// Writes `values`, saturated to `out`'s dtype range (TVM's final `clip` and `cast`).
fn store_saturated(out: &mut Tensor, values: &[i64]) -> Result<(), KernelError> {
    let (lo, hi) = int_range(out.dtype())?;
    ints!(out.dtype(), T => {
        let dst = out.as_mut_slice::<T>()?;
        same_len(dst.len(), values.len())?;
        for (d, &v) in dst.iter_mut().zip(values) {
            *d = cast::<i64, T>(v.clamp(lo, hi));
        }
        Ok(())
    })
}

/// TVM's requantize of one value from `(scale, zero point)` to `(out_scale, out_zero_point)`:
/// `out_zp + fixed_point(in_scale / out_scale) * (x - in_zp)`, before saturation.
#[derive(Clone, Copy, Debug)]
struct Rescale {
    multiplier: Option<FixedPoint>,
    in_zp: i64,
    out_zp: i64,
    rounding: QnnRounding,
}

impl Rescale {
    /// The rescaling between two parameter pairs; equal scales skip the multiplication, as
    /// TVM's lowering does (the result is the same).
    fn new(
        (in_scale, in_zp): (f32, i64),
        (out_scale, out_zp): (f32, i64),
        rounding: QnnRounding,
    ) -> Result<Rescale, KernelError> {
        let multiplier = if in_scale == out_scale {
            None
        } else {
            Some(FixedPoint::new(f64::from(in_scale) / f64::from(out_scale))?)
        };
        Ok(Rescale { multiplier, in_zp, out_zp, rounding })
    }

    /// `x` rescaled, not yet saturated.
    fn apply(self, x: i64) -> i64 {
        let shifted = x.wrapping_sub(self.in_zp);
        let scaled = self.multiplier.map_or(shifted, |m| m.multiply(shifted, self.rounding));
        scaled.wrapping_add(self.out_zp)
    }
}
