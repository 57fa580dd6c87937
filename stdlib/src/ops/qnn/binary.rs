//! `qnn.add`, `qnn.subtract`, `qnn.mul` (TVM `src/relay/qnn/op/add.cc`, `subtract.cc`,
//! `mul.cc`: NumPy broadcasting, per-tensor parameters) and `qnn.concatenate`
//! (`concatenate.cc`), each computed as TVM's canonicalization lowers it.

use super::canonical;
use super::{
    check_dtype, check_qparams, check_scalars, int_range, int_values, scalar_params, store_saturated,
    Rescale, QUANTIZED,
};
use crate::attrs::{ConcatenateAttrs, QnnBinaryAttrs, QnnRounding};
use crate::error::KernelError;
use crate::kernels::util::{args, only_output};
use crate::kernels::Checked;
use crate::operator::{broadcast, CanonicalizeRule, DTypeSet, Operator, ShapeDim};
use crate::ops::Concatenate;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The parameter operands of a binary op, after `lhs` and `rhs`.
const BINARY_PARAMS: [&str; 6] =
    ["lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point", "output_scale", "output_zero_point"];

/// The shape rule of the binary ops: scalar parameters, broadcast operands.
fn binary_shape<D: ShapeDim>(inputs: &[&[D]]) -> Result<Vec<Vec<D>>, KernelError> {
    let [l, r, params @ ..]: [&[D]; 8] = args(inputs)?;
    check_scalars(&params, &BINARY_PARAMS)?;
    Ok(vec![broadcast(&[l, r])?])
}

/// The dtype rule of the binary ops: `lhs` and `rhs` of one quantized dtype, which the result
/// has.
fn binary_dtype(inputs: &[DType]) -> Result<Vec<DType>, KernelError> {
    let [l, r, params @ ..]: [DType; 8] = args(inputs)?;
    check_dtype(l, "lhs", &QUANTIZED)?;
    if r != l {
        return Err(KernelError::DType(format!("`lhs` and `rhs` must share a dtype, found `{l}` and `{r}`")));
    }
    check_qparams(&params, &BINARY_PARAMS)?;
    Ok(vec![l])
}

/// One broadcast operand's elements as the output's, widened.
fn broadcast_values(t: &Tensor, shape: &[usize]) -> Result<Vec<i64>, KernelError> {
    let wide = Tensor::from_vec(t.shape().to_vec(), int_values(t)?)?;
    let view = wide.view::<i64>()?.broadcast_to(shape)?;
    Ok(view.iter().collect())
}

/// Runs a binary op: `make(params)` builds the per-element function once per call from the
/// `(scale, zero point)` pairs of lhs, rhs and the output, which then runs on each pair of
/// broadcast elements; the results are saturated.
fn run_binary<F: Fn(i64, i64) -> i64>(
    inputs: &[&Tensor],
    outputs: &mut [Tensor],
    make: impl FnOnce([(f32, i64); 3]) -> Result<F, KernelError>,
) -> Result<(), KernelError> {
    let [l, r, ls, lz, rs, rz, os, oz] = args(inputs)?;
    let f = make([scalar_params(ls, lz)?, scalar_params(rs, rz)?, scalar_params(os, oz)?])?;
    let out = only_output(outputs)?;
    let shape = out.shape().to_vec();
    let (a, b) = (broadcast_values(l, &shape)?, broadcast_values(r, &shape)?);
    let q: Vec<i64> = a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect();
    store_saturated(out, &q)
}

/// Requantizes values from `from` to the output's parameters `to` as `int32` (TVM's
/// `RequantizeOrUpcast`, default rounding).
fn to_output(from: (f32, i64), to: (f32, i64)) -> Result<impl Fn(i64) -> i64, KernelError> {
    let (lo, hi) = int_range(DType::I32)?;
    let rescale = Rescale::new(from, to, QnnRounding::Unset)?;
    Ok(move |x| rescale.apply(x).clamp(lo, hi))
}

/// Declares a quantized broadcast op: `Name = "qnn.name", "doc", canonical_form, |params|
/// body`, where the body builds, once per call, the function of one lhs and one rhs element.
macro_rules! qnn_binary {
    ($($(#[$doc:meta])* $name:ident = $op:literal, $summary:literal, $canonical:expr, |$p:ident| $body:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::Opaque;
            const NUM_INPUTS: usize = 8;
            const DTYPES: DTypeSet = DTypeSet::Ints;
            const DOC: &'static str = $summary;
            type Attrs = QnnBinaryAttrs;
            const CANONICALIZE: Option<CanonicalizeRule<QnnBinaryAttrs>> = Some($canonical);

            fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &QnnBinaryAttrs) -> Result<Vec<Vec<D>>, KernelError> {
                binary_shape(inputs)
            }

            fn dtypes(inputs: &[DType], _: &QnnBinaryAttrs) -> Result<Vec<DType>, KernelError> {
                binary_dtype(inputs)
            }

            fn reference(
                inputs: &[&Tensor],
                _: &QnnBinaryAttrs,
                outputs: &mut [Tensor],
                _: Checked,
            ) -> Result<(), KernelError> {
                run_binary(inputs, outputs, |$p| $body)
            }
        }
    )*};
}

qnn_binary! {
    /// `qnn.add(lhs, rhs, lhs_scale, lhs_zero_point, rhs_scale, rhs_zero_point, output_scale,
    /// output_zero_point)`: both operands requantized to the output's parameters (`int32`,
    /// `UPWARD`), added, the output zero point subtracted once, saturated to the operands'
    /// dtype.
    QnnAdd = "qnn.add", "quantized lhs + rhs, both requantized to the output's scale", |b, args, types, _| canonical::combined(b, args, types, "add", "subtract"),
        |p| {
            let (lhs, rhs, out_zp) = (to_output(p[0], p[2])?, to_output(p[1], p[2])?, p[2].1);
            Ok(move |l, r| lhs(l) + rhs(r) - out_zp)
        };
    /// `qnn.subtract(...)` (operands as `qnn.add`): both operands requantized to the
    /// output's parameters, subtracted, the output zero point added back, saturated.
    QnnSubtract = "qnn.subtract", "quantized lhs - rhs, both requantized to the output's scale", |b, args, types, _| canonical::combined(b, args, types, "subtract", "add"),
        |p| {
            let (lhs, rhs, out_zp) = (to_output(p[0], p[2])?, to_output(p[1], p[2])?, p[2].1);
            Ok(move |l, r| lhs(l) - rhs(r) + out_zp)
        };
    /// `qnn.mul(...)` (operands as `qnn.add`): `(lhs - lhs_zp) * (rhs - rhs_zp)` in `int32`,
    /// requantized from scale `float32(lhs_scale * rhs_scale)` and zero point 0 to the output's
    /// parameters, saturated.
    QnnMul = "qnn.mul", "quantized lhs * rhs, the int32 product requantized to the output's scale", canonical::mul,
        |p| {
            let rescale = Rescale::new((p[0].0 * p[1].0, 0), p[2], QnnRounding::Unset)?;
            let (lhs_zp, rhs_zp) = (p[0].1 as i32, p[1].1 as i32);
            // TVM subtracts and multiplies in int32 (wrapping), then requantizes.
            Ok(move |l: i64, r: i64| {
                let (a, b) = ((l as i32).wrapping_sub(lhs_zp), (r as i32).wrapping_sub(rhs_zp));
                rescale.apply(i64::from(a.wrapping_mul(b)))
            })
        };
}

/// `qnn.concatenate(data, input_scales, input_zero_points, output_scale, output_zero_point)`:
/// `data` a tuple of `n` quantized tensors of one dtype, `input_scales`/`input_zero_points`
/// tuples of `n` scalars; each input whose parameters differ from the output's is requantized
/// to them (saturated to the dtype), then all are joined along `axis` as by `concatenate`.
/// The kernel sees the tuples' fields in order: `n` data, `n` scales, `n` zero points, then
/// the output's scale and zero point.
#[derive(Debug)]
pub struct QnnConcatenate;

/// The number of data tensors of a `qnn.concatenate` call with `len` flattened operands.
fn concat_count(len: usize) -> Result<usize, KernelError> {
    match len.checked_sub(2) {
        Some(rest) if rest > 0 && rest % 3 == 0 => Ok(rest / 3),
        _ => Err(KernelError::Shape(
            "expects as many input scales and input zero points as data tensors, and at least one".into(),
        )),
    }
}

impl Operator for QnnConcatenate {
    const NAME: &'static str = "qnn.concatenate";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 5;
    const TUPLE_INPUT: bool = true;
    const DTYPES: DTypeSet = DTypeSet::Ints;
    const DOC: &'static str =
        "join a tuple of quantized tensors along axis, requantized to the output's scale";
    type Attrs = ConcatenateAttrs;
    const CANONICALIZE: Option<CanonicalizeRule<ConcatenateAttrs>> = Some(canonical::concatenate);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &ConcatenateAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let n = concat_count(inputs.len())?;
        let names: Vec<&str> = ["input_scales", "input_zero_points"]
            .into_iter()
            .flat_map(|name| std::iter::repeat_n(name, n))
            .chain(["output_scale", "output_zero_point"])
            .collect();
        check_scalars(&inputs[n..], &names)?;
        <Concatenate as Operator>::shapes(&inputs[..n], a)
    }

    fn dtypes(inputs: &[DType], _: &ConcatenateAttrs) -> Result<Vec<DType>, KernelError> {
        let n = concat_count(inputs.len())?;
        let first = check_dtype(inputs[0], "data", &QUANTIZED)?;
        if let Some(other) = inputs[1..n].iter().find(|&&d| d != first) {
            return Err(KernelError::DType(format!(
                "the data tensors must share a dtype, found `{first}` and `{other}`"
            )));
        }
        for (i, &d) in inputs[n..3 * n].iter().enumerate() {
            let (what, want) =
                if i < n { ("input_scales", DType::F32) } else { ("input_zero_points", DType::I32) };
            check_dtype(d, &format!("{what}.{}", i % n), &[want])?;
        }
        check_qparams(&inputs[3 * n..], &["output_scale", "output_zero_point"])?;
        Ok(vec![first])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &ConcatenateAttrs,
        outputs: &mut [Tensor],
        checked: Checked,
    ) -> Result<(), KernelError> {
        let n = concat_count(inputs.len())?;
        let out_params = scalar_params(inputs[3 * n], inputs[3 * n + 1])?;
        let mut requantized = Vec::with_capacity(n);
        for i in 0..n {
            let x = inputs[i];
            let rescale = Rescale::new(
                scalar_params(inputs[n + i], inputs[2 * n + i])?,
                out_params,
                QnnRounding::Unset,
            )?;
            let q: Vec<i64> = int_values(x)?.into_iter().map(|v| rescale.apply(v)).collect();
            let mut t = Tensor::zeros(x.dtype(), x.shape().to_vec())?;
            store_saturated(&mut t, &q)?;
            requantized.push(t);
        }
        let refs: Vec<&Tensor> = requantized.iter().collect();
        <Concatenate as Operator>::reference(&refs, a, outputs, checked)
    }
}
