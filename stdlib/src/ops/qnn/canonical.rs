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
//!
//! The `int8`/`uint8` activations (`qnn.sigmoid`, `qnn.tanh`, `qnn.leaky_relu`) are a table
//! of 256 values, [`table`]: the reference kernel run once at compile time on every value of
//! the dtype, then `take`. TVM's Python canonicalization does the same for its unary
//! quantized operators (`create_integer_lookup_table`); its C++ default, dequantize → float
//! function → quantize, would not give the reference kernel's bits here, because the fused
//! `exp`/`tanh` are polynomial approximations that can move a result across a rounding tie.

use super::activation::softmax_x0;
use super::fixed_point::{ties_away, FixedPoint, Steps};
use super::{int_range, int_values};
use crate::attrs::{
    ConcatenateAttrs, DequantizeAttrs, QnnBinaryAttrs, QnnRounding, QuantizeAttrs, RequantizeAttrs,
    SoftmaxAttrs,
};
use crate::kernels::eval;
use crate::kernels::util::normalize_axis;
use crate::operator::{message, Operator, ShapeDim};
use relay_compiler::codegen::constant_tensor;
use relay_compiler::ir::{AttrValue, ConstantData, ExprId};
use relay_compiler::op::{Builder, RelType, TensorType};
use relay_devices::{DType, Tensor};

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

/// `qnn.concatenate`: each input requantized from its parameters to the output's (skipped
/// where both are the same constants, as TVM's `ConcatenateQnnCanonicalize`) and saturated to
/// the data's dtype, then `concatenate` with the call's `axis`. The input scales must be
/// constants, given as a tuple expression.
pub(super) fn concatenate(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
    _: &ConcatenateAttrs,
) -> Result<ExprId, String> {
    let &[data, in_scales, in_zps, out_scale, out_zp] = args else {
        return Err("expects 5 arguments".into());
    };
    let Some(RelType::Tuple(fields)) = types.first() else { return Err("the data is not a tuple".into()) };
    let dtype = match fields.first() {
        Some(RelType::Tensor(t)) => t.dtype,
        _ => return Err("the data is not a tuple of tensors".into()),
    };
    let out_scale_value = *scales(b, out_scale)?.first().ok_or("the output scale is empty")?;
    let out_zp_value = b.value(out_zp).map(|c| c.data);
    let mut joined = Vec::with_capacity(fields.len());
    for i in 0..fields.len() {
        let x = b.field(data, i);
        let (scale, zp) = (b.field(in_scales, i), b.field(in_zps, i));
        let scale = *scales(b, scale)?.first().ok_or("an input scale is empty")?;
        if scale == out_scale_value && out_zp_value.is_some() && b.value(zp).map(|c| c.data) == out_zp_value {
            joined.push(x);
            continue;
        }
        let shifted = widened_minus(b, x, zp, false, 0, 0)?;
        let rescaling = Rescaling {
            in_scales: &[scale],
            out_scale: out_scale_value,
            rank: 0,
            axis: 0,
            rounding: QnnRounding::Unset,
        };
        let scaled = rescaling.apply(b, shifted)?;
        let out_zp = b.cast(out_zp, DType::I64);
        let sum = b.call("add", vec![scaled, out_zp], vec![]);
        joined.push(saturate(b, sum, dtype)?);
    }
    let joined = b.tuple(joined);
    Ok(b.call_forwarding("concatenate", vec![joined], vec![]))
}

/// The most entries of a [`table`]: the values of an 8-bit dtype.
const MAX_TABLE: i64 = 256;

/// A per-element quantized operator `T` on 8-bit data (its first argument; the others its
/// constant parameters) as a lookup table: `T`'s reference kernel run at compile time on
/// every value of the data's dtype, then `take(table, int32(x) - lowest)`, which computes
/// exactly what the reference kernel computes. Declined for wider dtypes and parameters that
/// are not constants.
pub(super) fn table<T: Operator>(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
    attrs: &T::Attrs,
) -> Result<ExprId, String> {
    let Some((&x, params)) = args.split_first() else { return Err("expects the data".into()) };
    let dtype = tensor(types, 0)?.dtype;
    let (lo, hi) = int_range(dtype).map_err(message)?;
    if hi - lo >= MAX_TABLE {
        return Err(format!("a table of every `{dtype}` would be too large"));
    }
    let domain =
        ConstantData { dtype, shape: vec![hi - lo + 1], data: (lo..=hi).map(|v| v as f64).collect() };
    let mut inputs = vec![constant_tensor(&domain)?];
    for &p in params {
        let value = b.value(p).ok_or("a quantization parameter is not a constant")?;
        inputs.push(constant_tensor(&value)?);
    }
    let inputs: Vec<&Tensor> = inputs.iter().collect();
    let outputs = eval::<T>(&inputs, attrs).map_err(message)?;
    let [values] = outputs.as_slice() else { return Err("expects one output".into()) };
    let entries: Vec<f64> = int_values(values).map_err(message)?.into_iter().map(|v| v as f64).collect();
    let table = b.constant(values.dtype(), vec![entries.len() as i64], entries);
    let index = b.cast(x, DType::I32);
    let lowest = b.int(lo, DType::I32);
    let index = b.call("subtract", vec![index, lowest], vec![]);
    Ok(b.call("take", vec![table, index], vec![("axis", AttrValue::Int(0))]))
}

/// `qnn.softmax`: the reference kernel's integer approximation as `int32` operators over the
/// lanes of `axis` (`max` and `sum` keeping the axis), with `x0 = round(1 / scale)` a
/// constant: `x = (int32(data) - zero_point) - max`, `x_p = x + (x >> 1) - (x >> 4)`,
/// `q = x_p / -x0`, `exp = (((x_p + q * x0) >> 1) + x0) << (8 - q)` (0 where `q > 8`; `q` is
/// never negative), `out = ((2^30 / sum(exp)) * exp) >> 23`, requantized from scale `1/128`
/// and zero point 0 to the output's parameters. Declined unless `1 <= x0` and
/// `x0 * 256 * lane length < 2^31`: then every `exp` is in `[0, x0 * 256]`, the lane's
/// maximum gives at least 256, and the sum neither wraps nor is 0 (where the reference kernel
/// divides by it).
pub(super) fn softmax(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
    a: &SoftmaxAttrs,
) -> Result<ExprId, String> {
    let &[data, scale, zero_point, out_scale, out_zp] = args else {
        return Err("expects 5 arguments".into());
    };
    let x_type = tensor(types, 0)?;
    let axis = normalize_axis(a.axis, x_type.rank()).map_err(message)?;
    let lane: usize =
        x_type.shape.get(axis).and_then(|d| d.value()).ok_or("the softmax axis has no static length")?;
    let x0 = softmax_x0(*scales(b, scale)?.first().ok_or("the scale is empty")?);
    let out_scale = *scales(b, out_scale)?.first().ok_or("the output scale is empty")?;
    if x0 < 1 || i64::from(x0) * 256 * (lane as i64) >= 1 << 31 || lane == 0 {
        return Err(format!("x0 = {x0} over lanes of {lane} could make the sum of exponentials wrap or 0"));
    }
    let i32_of = |b: &mut Builder<'_>, v: i64| b.int(v, DType::I32);
    let lanes = vec![
        ("axis", AttrValue::List(vec![AttrValue::Int(axis as i64)])),
        ("keepdims", AttrValue::Bool(true)),
    ];
    let q = b.cast(data, DType::I32);
    let q = b.call("subtract", vec![q, zero_point], vec![]);
    let max = b.call("max", vec![q], lanes.clone());
    let x = b.call("subtract", vec![q, max], vec![]);
    let (one, four) = (i32_of(b, 1), i32_of(b, 4));
    let half = b.call("right_shift", vec![x, one], vec![]);
    let sixteenth = b.call("right_shift", vec![x, four], vec![]);
    let x_p = b.call("add", vec![x, half], vec![]);
    let x_p = b.call("subtract", vec![x_p, sixteenth], vec![]);
    let minus_x0 = i32_of(b, -i64::from(x0));
    let quotient = b.call("divide", vec![x_p, minus_x0], vec![]);
    let x0_value = i32_of(b, i64::from(x0));
    let multiple = b.call("multiply", vec![quotient, x0_value], vec![]);
    let r = b.call("add", vec![x_p, multiple], vec![]);
    let r = b.call("right_shift", vec![r, one], vec![]);
    let x_b = b.call("add", vec![r, x0_value], vec![]);
    let eight = i32_of(b, 8);
    let shift = b.call("subtract", vec![eight, quotient], vec![]);
    let shifted = b.call("left_shift", vec![x_b, shift], vec![]);
    let in_range = b.call("less_equal", vec![quotient, eight], vec![]);
    let zero = i32_of(b, 0);
    let exp = b.call("where", vec![in_range, shifted, zero], vec![]);
    let sum = b.call("sum", vec![exp], lanes);
    let numerator = i32_of(b, 1 << 30);
    let share = b.call("divide", vec![numerator, sum], vec![]);
    let product = b.call("multiply", vec![share, exp], vec![]);
    let twenty_three = i32_of(b, 23);
    let out = b.call("right_shift", vec![product, twenty_three], vec![]);
    let out = b.cast(out, DType::I64);
    let rescaling =
        Rescaling { in_scales: &[1.0 / 128.0], out_scale, rank: 0, axis: 0, rounding: QnnRounding::Unset };
    let scaled = rescaling.apply(b, out)?;
    let out_zp = b.cast(out_zp, DType::I64);
    let sum = b.call("add", vec![scaled, out_zp], vec![]);
    saturate(b, sum, x_type.dtype)
}
