//! The canonical forms of the quantized operators (TVM's `FTVMQnnCanonicalize`:
//! `src/relay/qnn/op/quantize.cc`, `dequantize.cc`, `requantize.cc`'s `RequantizeLower`,
//! `add.cc`, `subtract.cc`, `mul.cc`, `dense.cc`, `batch_matmul.cc`, `convolution.cc`): each
//! call as ordinary operators — casts, `int32`/`int64` arithmetic, `round`, `clip`,
//! `nn.conv2d`/`nn.dense`/`nn.batch_matmul` in `int32` — that compute exactly what the
//! reference kernel computes, so that the `QnnCanonicalize` pass can put them in its place and
//! they fuse.
//!
//! Where TVM's lowering and the reference kernel part ways the kernel wins: the products
//! subtract the zero points from both operands before an `int32` product (the reference
//! kernel's form, exact in wrapping `int32`) rather than TVM's four-term expansion, and the
//! fixed-point multiplication is [`FixedPoint::steps`] as `int64` operators
//! (`left_shift`, `multiply`, `add`, `right_shift`: kir's integer arithmetic wraps and its
//! right shift of a signed value is arithmetic, as the reference kernel's). A multiplier needs
//! the scales' values, so a call whose scales are not constants is declined and stays.

use super::fixed_point::{ties_away, FixedPoint, Steps};
use super::int_range;
use crate::attrs::{DequantizeAttrs, QnnBinaryAttrs, QnnRounding, QuantizeAttrs, RequantizeAttrs};
use crate::kernels::util::normalize_axis;
use crate::operator::message;
use relay_compiler::ir::{AttrValue, ExprId};
use relay_compiler::op::{Builder, RelType, TensorType};
use relay_devices::DType;

/// The type of argument `i`, which must be a tensor.
fn tensor(types: &[RelType], i: usize) -> Result<&TensorType, String> {
    match types.get(i) {
        Some(RelType::Tensor(t)) => Ok(t),
        _ => Err(format!("argument {} is not a tensor", i + 1)),
    }
}

/// Quantization parameter `p` (a 1-d tensor if `vector`, else a scalar) shaped to broadcast
/// along axis `axis` of data of rank `rank`: a scalar as it is, a per-channel vector given a
/// size-1 dimension for each axis after `axis` (TVM's `ExpandBiasToMatchAxis`).
fn along(b: &mut Builder<'_>, p: ExprId, vector: bool, rank: usize, axis: i64) -> Result<ExprId, String> {
    if !vector || rank == 0 {
        return Ok(p);
    }
    let trailing = rank - normalize_axis(axis, rank).map_err(message)? - 1;
    if trailing == 0 {
        return Ok(p);
    }
    let attrs = vec![("axis", AttrValue::Int(1)), ("num_newaxis", AttrValue::Int(trailing as i64))];
    Ok(b.call("expand_dims", vec![p], attrs))
}

/// The values of scale operand `e`, which must be a constant.
fn scales(b: &Builder<'_>, e: ExprId) -> Result<Vec<f32>, String> {
    let c = b.value(e).ok_or("a scale is not a constant")?;
    Ok(c.data.into_iter().map(|v| v as f32).collect())
}

/// One `int64` value per channel as an operand along `axis` of data of rank `rank`: a scalar
/// when every channel has the same value.
fn per_channel(b: &mut Builder<'_>, values: &[i64], rank: usize, axis: i64) -> Result<ExprId, String> {
    if values.iter().all(|&v| v == values[0]) {
        return Ok(b.int(values[0], DType::I64));
    }
    let c = b.constant(DType::I64, vec![values.len() as i64], values.iter().map(|&v| v as f64).collect());
    along(b, c, true, rank, axis)
}

/// Where the rescaling of `x` from `in_scales` (one, or one per channel of `axis`) to
/// `out_scale` is taken: the channel-wise layout of the data, and the rounding.
struct Rescaling<'s> {
    in_scales: &'s [f32],
    out_scale: f32,
    rank: usize,
    axis: i64,
    rounding: QnnRounding,
}

impl Rescaling<'_> {
    /// `int64` operand `x` times `in_scale / out_scale` per channel, as the reference kernel's
    /// `Rescale` (equal scales: `x` itself; a channel with equal scales among others is
    /// multiplied by 1.0, exact for the values of `int32` data less an `int32` zero point).
    fn apply(&self, b: &mut Builder<'_>, x: ExprId) -> Result<ExprId, String> {
        if self.in_scales.iter().all(|&s| s == self.out_scale) {
            return Ok(x);
        }
        let ratio = |&s: &f32| FixedPoint::new(f64::from(s) / f64::from(self.out_scale));
        let multipliers = self.in_scales.iter().map(ratio).collect::<Result<Vec<_>, _>>().map_err(message)?;
        // A multiplier whose product is always 0: a significand of 0 gives 0 as well.
        let never = Steps { left: 0, significand: 0, right: 31 };
        let steps: Vec<Steps> = multipliers.iter().map(|m| m.steps().unwrap_or(never)).collect();
        let column = |f: fn(&Steps) -> i64| steps.iter().map(f).collect::<Vec<i64>>();
        let (rank, axis) = (self.rank, self.axis);
        let left = column(|s| i64::from(s.left));
        let shifted = if left.iter().all(|&l| l == 0) {
            x
        } else {
            let l = per_channel(b, &left, rank, axis)?;
            b.call("left_shift", vec![x, l], vec![])
        };
        let significand = per_channel(b, &column(|s| s.significand), rank, axis)?;
        let product = b.call("multiply", vec![shifted, significand], vec![]);
        let half = per_channel(b, &column(|s| s.half()), rank, axis)?;
        let mut rounded = b.call("add", vec![product, half], vec![]);
        if ties_away(self.rounding) {
            let zero = b.int(0, DType::I64);
            let negative = b.call("less", vec![product, zero], vec![]);
            let one_if_negative = b.cast(negative, DType::I64);
            rounded = b.call("subtract", vec![rounded, one_if_negative], vec![]);
        }
        let right = per_channel(b, &column(|s| i64::from(s.right)), rank, axis)?;
        Ok(b.call("right_shift", vec![rounded, right], vec![]))
    }
}

/// `x` clamped to `dtype`'s range (in `x`'s own dtype).
fn clamped(b: &mut Builder<'_>, x: ExprId, dtype: DType) -> Result<ExprId, String> {
    let (lo, hi) = int_range(dtype).map_err(message)?;
    let attrs = vec![("a_min", AttrValue::Float(lo as f64)), ("a_max", AttrValue::Float(hi as f64))];
    Ok(b.call("clip", vec![x], attrs))
}

/// `x` clamped to `dtype`'s range and cast to it (the reference kernels' `store_saturated`).
fn saturate(b: &mut Builder<'_>, x: ExprId, dtype: DType) -> Result<ExprId, String> {
    let clipped = clamped(b, x, dtype)?;
    Ok(b.cast(clipped, dtype))
}

/// `cast(x, int64) - cast(zero_point, int64)`, the zero point along `axis`.
fn widened_minus(
    b: &mut Builder<'_>,
    x: ExprId,
    zero_point: ExprId,
    per_channel: bool,
    rank: usize,
    axis: i64,
) -> Result<ExprId, String> {
    let x = b.cast(x, DType::I64);
    let zp = along(b, zero_point, per_channel, rank, axis)?;
    let zp = b.cast(zp, DType::I64);
    Ok(b.call("subtract", vec![x, zp], vec![]))
}

/// The data, scale and zero point of a `qnn.quantize`/`dequantize` call, the two
/// parameters shaped to broadcast along `axis` when they are per-channel vectors.
fn scale_and_zero_point(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
    axis: i64,
) -> Result<[ExprId; 3], String> {
    let &[data, scale, zero_point] = args else { return Err("expects 3 arguments".into()) };
    let rank = tensor(types, 0)?.rank();
    let scale = along(b, scale, tensor(types, 1)?.rank() > 0, rank, axis)?;
    let zero_point = along(b, zero_point, tensor(types, 2)?.rank() > 0, rank, axis)?;
    Ok([data, scale, zero_point])
}

/// `qnn.quantize`: `cast(round(data / scale) + float32(zero_point), out_dtype)`, whose
/// float-to-integer cast saturates (and maps NaN to 0) as the reference kernel's does.
pub(super) fn quantize(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
    a: &QuantizeAttrs,
) -> Result<ExprId, String> {
    let [data, scale, zero_point] = scale_and_zero_point(b, args, types, a.axis)?;
    let scaled = b.call("divide", vec![data, scale], vec![]);
    let rounded = b.call("round", vec![scaled], vec![]);
    let zero_point = b.cast(zero_point, DType::F32);
    let shifted = b.call("add", vec![rounded, zero_point], vec![]);
    Ok(b.cast(shifted, a.out_dtype))
}

/// `qnn.dequantize`: `float32(int32(data) - zero_point) * scale`.
pub(super) fn dequantize(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
    a: &DequantizeAttrs,
) -> Result<ExprId, String> {
    let [data, scale, zero_point] = scale_and_zero_point(b, args, types, a.axis)?;
    let data = b.cast(data, DType::I32);
    let shifted = b.call("subtract", vec![data, zero_point], vec![]);
    let shifted = b.cast(shifted, DType::F32);
    Ok(b.call("multiply", vec![shifted, scale], vec![]))
}

/// `qnn.requantize`: `saturate(rescale(int64(data) - input_zero_point) + output_zero_point)`
/// in `int64`, the rescaling [`Rescaling::apply`].
pub(super) fn requantize(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
    a: &RequantizeAttrs,
) -> Result<ExprId, String> {
    let &[data, in_scale, in_zp, out_scale, out_zp] = args else { return Err("expects 5 arguments".into()) };
    let rank = tensor(types, 0)?.rank();
    let in_scales = scales(b, in_scale)?;
    let out_scale = *scales(b, out_scale)?.first().ok_or("the output scale is empty")?;
    let shifted = widened_minus(b, data, in_zp, tensor(types, 2)?.rank() > 0, rank, a.axis)?;
    let rescaling = Rescaling { in_scales: &in_scales, out_scale, rank, axis: a.axis, rounding: a.rounding };
    let scaled = rescaling.apply(b, shifted)?;
    let out_zp = b.cast(out_zp, DType::I64);
    let sum = b.call("add", vec![scaled, out_zp], vec![]);
    saturate(b, sum, a.out_dtype)
}

/// The operands and scales of a `qnn.add`/`subtract`/`mul` call, read once.
struct Binary {
    lhs: ExprId,
    rhs: ExprId,
    zero_points: [ExprId; 3],
    scales: [f32; 3],
    dtype: DType,
}

impl Binary {
    /// The call's operands; its scales must be constants.
    fn new(b: &Builder<'_>, args: &[ExprId], types: &[RelType]) -> Result<Binary, String> {
        let &[lhs, rhs, ls, lz, rs, rz, os, oz] = args else { return Err("expects 8 arguments".into()) };
        let scale = |e| scales(b, e)?.first().copied().ok_or_else(|| "a scale is empty".to_string());
        Ok(Binary {
            lhs,
            rhs,
            zero_points: [lz, rz, oz],
            scales: [scale(ls)?, scale(rs)?, scale(os)?],
            dtype: tensor(types, 0)?.dtype,
        })
    }

    /// The output zero point in `int64`.
    fn out_zp(&self, b: &mut Builder<'_>) -> ExprId {
        b.cast(self.zero_points[2], DType::I64)
    }

    /// Operand `i` (0: lhs, 1: rhs) requantized to the output's parameters and clamped to
    /// `int32` (TVM's `RequantizeOrUpcast`), in `int64`.
    fn to_output(&self, b: &mut Builder<'_>, i: usize) -> Result<ExprId, String> {
        let x = [self.lhs, self.rhs][i];
        let shifted = widened_minus(b, x, self.zero_points[i], false, 0, 0)?;
        let scaled = self.rescaled(b, shifted, self.scales[i])?;
        clamped(b, scaled, DType::I32)
    }

    /// `int64` operand `x` of scale `scale` rescaled to the output's parameters (default
    /// rounding), the output zero point added.
    fn rescaled(&self, b: &mut Builder<'_>, x: ExprId, scale: f32) -> Result<ExprId, String> {
        let rescaling = Rescaling {
            in_scales: &[scale],
            out_scale: self.scales[2],
            rank: 0,
            axis: 0,
            rounding: QnnRounding::Unset,
        };
        let scaled = rescaling.apply(b, x)?;
        let out_zp = self.out_zp(b);
        Ok(b.call("add", vec![scaled, out_zp], vec![]))
    }
}

/// `qnn.add` (`op` `add`, `undo` `subtract`) and `qnn.subtract` (`subtract`, `add`): both
/// operands requantized to the output's parameters, combined by `op`, the doubled output zero
/// point undone by `undo`, saturated.
pub(super) fn combined(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
    op: &str,
    undo: &str,
) -> Result<ExprId, String> {
    let binary = Binary::new(b, args, types)?;
    let (l, r) = (binary.to_output(b, 0)?, binary.to_output(b, 1)?);
    let value = b.call(op, vec![l, r], vec![]);
    let out_zp = binary.out_zp(b);
    let value = b.call(undo, vec![value, out_zp], vec![]);
    saturate(b, value, binary.dtype)
}

/// `qnn.mul`: `(lhs - lhs_zp) * (rhs - rhs_zp)` in wrapping `int32`, requantized from scale
/// `float32(lhs_scale * rhs_scale)` and zero point 0 to the output's parameters, saturated.
pub(super) fn mul(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
    _: &QnnBinaryAttrs,
) -> Result<ExprId, String> {
    let op = Binary::new(b, args, types)?;
    let mut factors = [op.lhs, op.rhs];
    for (x, &zp) in factors.iter_mut().zip(&op.zero_points) {
        let wide = b.cast(*x, DType::I32);
        *x = b.call("subtract", vec![wide, zp], vec![]);
    }
    let product = b.call("multiply", factors.to_vec(), vec![]);
    let product = b.cast(product, DType::I64);
    let scaled = op.rescaled(b, product, op.scales[0] * op.scales[1])?;
    saturate(b, scaled, op.dtype)
}

/// A product `qnn.dense`/`batch_matmul`/`conv2d` as float operator `op` (`nn.dense`, ...)
/// on `int32(data) - input_zero_point` and `int32(weight) - kernel_zero_point` (the kernel's
/// zero point along weight axis `kernel_axis`), with the call's attributes and
/// `out_dtype="int32"`.
pub(super) fn shifted_product(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
    op: &str,
    kernel_axis: usize,
) -> Result<ExprId, String> {
    let &[data, weight, in_zp, kernel_zp, _, _] = args else { return Err("expects 6 arguments".into()) };
    let data = b.cast(data, DType::I32);
    let data = b.call("subtract", vec![data, in_zp], vec![]);
    let rank = tensor(types, 1)?.rank();
    let kernel_zp = along(b, kernel_zp, tensor(types, 3)?.rank() > 0, rank, kernel_axis as i64)?;
    let weight = b.cast(weight, DType::I32);
    let weight = b.call("subtract", vec![weight, kernel_zp], vec![]);
    Ok(b.call_forwarding(op, vec![data, weight], vec![("out_dtype", AttrValue::Str("int32".into()))]))
}
