//! `qnn.sigmoid`, `qnn.tanh` (TVM `src/relay/qnn/op/unary_elementwise_op.cc`: dequantize,
//! the float op in `float32`, quantize), `qnn.leaky_relu` (`leaky_relu.cc`: fixed-point
//! integer arithmetic) and `qnn.softmax` (`softmax.cc`: TVM's integer-only approximation,
//! arXiv 2207.01405 Algorithm 1), all per-tensor, the result of the input's dtype.

use super::canonical;
use super::{
    check_dtype, check_qparams, check_scalars, int_range, int_values, scalar_params, store_saturated,
    FixedPoint, Rescale,
};
use crate::attrs::{LeakyReluAttrs, NoAttrs, QnnRounding, SoftmaxAttrs};
use crate::error::KernelError;
use crate::kernels::util::{args, normalize_axis, only_output};
use crate::kernels::Checked;
use crate::operator::{CanonicalizeRule, DTypeSet, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The parameter operands of a quantized activation, after the data.
const UNARY_PARAMS: [&str; 4] = ["scale", "zero_point", "output_scale", "output_zero_point"];

/// The shape rule of the activations: scalar parameters, the data's shape.
fn unary_shape<D: ShapeDim>(inputs: &[&[D]]) -> Result<Vec<Vec<D>>, KernelError> {
    let [x, params @ ..]: [&[D]; 5] = args(inputs)?;
    check_scalars(&params, &UNARY_PARAMS)?;
    Ok(vec![x.to_vec()])
}

/// The dtype rule of the activations: data of one of `allowed`, which the result has.
fn unary_dtype(inputs: &[DType], allowed: &[DType]) -> Result<Vec<DType>, KernelError> {
    let [x, params @ ..]: [DType; 5] = args(inputs)?;
    check_dtype(x, "data", allowed)?;
    check_qparams(&params, &UNARY_PARAMS)?;
    Ok(vec![x])
}

/// The data's elements, widened, and the `(scale, zero point)` of the input and the output.
type UnaryOperands = (Vec<i64>, (f32, i64), (f32, i64));

fn unary_operands(inputs: &[&Tensor]) -> Result<UnaryOperands, KernelError> {
    let [x, s, z, os, oz] = args(inputs)?;
    Ok((int_values(x)?, scalar_params(s, z)?, scalar_params(os, oz)?))
}

/// Declares a quantized activation computed as TVM lowers it: dequantize to `float32`, the
/// float function, quantize back (`round` half away from zero, saturated).
macro_rules! through_float {
    ($($(#[$doc:meta])* $name:ident = $op:literal, $summary:literal, |$x:ident| $body:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::Opaque;
            const NUM_INPUTS: usize = 5;
            const DTYPES: DTypeSet = DTypeSet::Ints;
            const DOC: &'static str = $summary;
            type Attrs = NoAttrs;
            const CANONICALIZE: Option<CanonicalizeRule<NoAttrs>> = Some(canonical::table::<Self>);

            fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &NoAttrs) -> Result<Vec<Vec<D>>, KernelError> {
                unary_shape(inputs)
            }

            fn dtypes(inputs: &[DType], _: &NoAttrs) -> Result<Vec<DType>, KernelError> {
                unary_dtype(inputs, &[DType::I8, DType::U8])
            }

            fn reference(inputs: &[&Tensor], _: &NoAttrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                let (x, (s, z), (os, oz)) = unary_operands(inputs)?;
                let f = |$x: f32| -> f32 { $body };
                let q: Vec<i64> = x
                    .iter()
                    .map(|&v| {
                        let real = (v as i32).wrapping_sub(z as i32) as f32 * s;
                        ((f(real) / os).round() + oz as f32) as i64
                    })
                    .collect();
                store_saturated(only_output(outputs)?, &q)
            }
        }
    )*};
}

through_float! {
    /// `qnn.sigmoid(x, scale, zero_point, output_scale, output_zero_point)`: `int8`/`uint8`
    /// data dequantized, `1 / (1 + exp(-x))` in `float32`, quantized to the output's
    /// parameters.
    QnnSigmoid = "qnn.sigmoid", "quantize(sigmoid(dequantize(x)))", |x| 1.0 / (1.0 + (-x).exp());
    /// `qnn.tanh(x, scale, zero_point, output_scale, output_zero_point)`: as `qnn.sigmoid`
    /// with `tanh` (the library's `tanh`; TVM's CPU `float32` `tanh` is a rational
    /// approximation within 1e-6, which can move a result at a rounding tie).
    QnnTanh = "qnn.tanh", "quantize(tanh(dequantize(x)))", |x| x.tanh();
}

/// `qnn.leaky_relu(x, input_scale, input_zero_point, output_scale, output_zero_point)`:
/// `int8`/`uint8` data; `x` requantized to the output's parameters (`int32`, `UPWARD`) where
/// `x >= input_zero_point`, else `alpha * x' + (1 - alpha) * output_zero_point` with both
/// products in TVM's fixed point (`fixed_point_multiply`); saturated to the data's dtype.
#[derive(Debug)]
pub struct QnnLeakyRelu;

impl Operator for QnnLeakyRelu {
    const NAME: &'static str = "qnn.leaky_relu";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 5;
    const DTYPES: DTypeSet = DTypeSet::Ints;
    const DOC: &'static str = "quantized leaky_relu in fixed-point arithmetic";
    type Attrs = LeakyReluAttrs;
    const CANONICALIZE: Option<CanonicalizeRule<LeakyReluAttrs>> = Some(canonical::table::<Self>);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &LeakyReluAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        unary_shape(inputs)
    }

    fn dtypes(inputs: &[DType], _: &LeakyReluAttrs) -> Result<Vec<DType>, KernelError> {
        unary_dtype(inputs, &[DType::I8, DType::U8])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &LeakyReluAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let (x, input, output) = unary_operands(inputs)?;
        let (lo, hi) = int_range(DType::I32)?;
        let requantize = Rescale::new(input, output, QnnRounding::Unset)?;
        let (alpha, rest) = (FixedPoint::new(a.alpha)?, FixedPoint::new(1.0 - a.alpha)?);
        // `fixed_point_multiply` rounds upward and returns int32.
        let scaled_zp = rest.multiply(output.1, QnnRounding::Upward) as i32;
        let q: Vec<i64> = x
            .iter()
            .map(|&v| {
                let r = requantize.apply(v).clamp(lo, hi);
                if v < input.1 {
                    i64::from((alpha.multiply(r, QnnRounding::Upward) as i32).wrapping_add(scaled_zp))
                } else {
                    r
                }
            })
            .collect();
        store_saturated(only_output(outputs)?, &q)
    }
}

/// `qnn.softmax(x, scale, zero_point, output_scale, output_zero_point)`: `int8` data, softmax
/// over `axis` in TVM's integer approximation: with `x0 = round(1 / scale)` and
/// `x = (q - zp) - max`, `x_p = x + (x >> 1) - (x >> 4)` (≈ `x * log2(e)`), `q' = x_p / -x0`,
/// `exp = ((x_p + q' * x0) >> 1 + x0) << (8 - q')`, `out = ((2^30 / sum(exp)) * exp) >> 23`
/// (`int32`, truncating division), requantized from scale `1/128` to the output's parameters.
/// Where `q' > 8` TVM's left shift is undefined; here that exponential is 0.
#[derive(Debug)]
pub struct QnnSoftmax;

/// TVM's `x0 = round(1 / scale)` of `qnn.softmax`, clamped to `int32` (the reference kernel
/// and the canonical form both read it here).
pub(super) fn softmax_x0(scale: f32) -> i32 {
    ((1.0f32 / scale).round() as i64).clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

/// TVM's integer softmax of one lane (`int32` arithmetic, wrapping).
fn softmax_lane(lane: &[i32], x0: i32) -> Result<Vec<i32>, KernelError> {
    let max = lane.iter().copied().max().unwrap_or(0);
    let exps: Vec<i32> = lane
        .iter()
        .map(|&q| {
            let x = q.wrapping_sub(max);
            let x_p = x.wrapping_add(x >> 1).wrapping_sub(x >> 4);
            let quotient = x_p.checked_div(x0.wrapping_neg()).unwrap_or(0);
            let r = x_p.wrapping_sub(quotient.wrapping_mul(x0.wrapping_neg()));
            let x_b = (r >> 1).wrapping_add(x0);
            u32::try_from(8 - quotient).ok().filter(|&s| s < 32).map_or(0, |s| x_b.wrapping_shl(s))
        })
        .collect();
    let sum = exps.iter().fold(0i32, |s, &e| s.wrapping_add(e));
    let Some(share) = (1i32 << 30).checked_div(sum) else {
        return Err(KernelError::Attr("qnn.softmax: the input scale rounds 1 / scale to 0".into()));
    };
    Ok(exps.iter().map(|&e| share.wrapping_mul(e) >> 23).collect())
}

impl Operator for QnnSoftmax {
    const NAME: &'static str = "qnn.softmax";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 5;
    const DTYPES: DTypeSet = DTypeSet::Ints;
    const DOC: &'static str = "TVM's integer-only softmax over axis";
    type Attrs = SoftmaxAttrs;
    const CANONICALIZE: Option<CanonicalizeRule<SoftmaxAttrs>> = Some(canonical::softmax);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &SoftmaxAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let shape = unary_shape(inputs)?;
        let rank = inputs.first().map_or(0, |x| x.len());
        normalize_axis(a.axis, rank)?;
        Ok(shape)
    }

    fn dtypes(inputs: &[DType], _: &SoftmaxAttrs) -> Result<Vec<DType>, KernelError> {
        unary_dtype(inputs, &[DType::I8])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &SoftmaxAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let (x, (s, z), output) = unary_operands(inputs)?;
        let shape = inputs.first().map_or(&[][..], |t| t.shape());
        let axis = normalize_axis(a.axis, shape.len())?;
        let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
        let x0 = softmax_x0(s);
        let q: Vec<i32> = x.iter().map(|&v| (v as i32).wrapping_sub(z as i32)).collect();
        let mut out = vec![0i32; q.len()];
        let lanes = q.len().checked_div(len * inner).unwrap_or(0);
        for outer in 0..lanes {
            for i in 0..inner {
                let index = |k: usize| (outer * len + k) * inner + i;
                let lane: Vec<i32> = (0..len).map(|k| q[index(k)]).collect();
                for (k, v) in softmax_lane(&lane, x0)?.into_iter().enumerate() {
                    out[index(k)] = v;
                }
            }
        }
        let requantize = Rescale::new((1.0 / 128.0, 0), output, QnnRounding::Unset)?;
        let values: Vec<i64> = out.iter().map(|&v| requantize.apply(i64::from(v))).collect();
        store_saturated(only_output(outputs)?, &values)
    }
}
