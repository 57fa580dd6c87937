//! Half floats (`float16`, `bfloat16`) in kir: storage only. A kernel loads them, widens them
//! to `float32` (exact), computes in `float32`, and rounds each operator's result back with
//! one `cast` to the half dtype, as TVM's CPU target legalises half-float arithmetic and as
//! the reference kernels do (`relay-stdlib`'s `kernels::half_float`). Keeping the arithmetic
//! in `float32` gives it one definition: no operator has a half-float form, and every backend
//! needs only the two conversions defined here.

use relay_devices::{DType, Scalar};

/// Whether kir may convert between `from` and `to` with [`crate::Expr::Cast`] when one of them
/// is a half float: only to and from `float32` (another dtype goes through `float32`, as the
/// reference kernels' widening does, so no conversion rounds differently from theirs).
pub(crate) fn cast_allowed(from: DType, to: DType) -> bool {
    !(from.is_half_float() || to.is_half_float()) || from == to || [from, to].contains(&DType::F32)
}

/// `value` (a `float32`) rounded to the half float `dtype`, to nearest even (NaN stays NaN,
/// quieted; values beyond the range become infinities), as a `float32` scalar: the rounding of
/// `cast<float16>`/`cast<bfloat16>`, the same as `half::f16::from_f32`/`half::bf16::from_f32`,
/// which the reference kernels use. `None` if `dtype` is not a half float.
pub fn round_to(dtype: DType, value: f32) -> Option<f32> {
    match dtype {
        DType::F16 => Some(::half::f16::from_f32(value).to_f32()),
        DType::BF16 => Some(::half::bf16::from_f32(value).to_f32()),
        _ => None,
    }
}

/// The value of a `cast` between a half float and `float32` in the interpreter: rounding with
/// [`round_to`] (not through `f64`, whose conversion in `half` rounds `bfloat16` differently),
/// or widening, which is exact. `None` when neither dtype is a half float.
pub(crate) fn cast(value: Scalar, to: DType) -> Option<Scalar> {
    let Scalar::Float(v) = value else { return None };
    match to {
        DType::F32 => Some(Scalar::Float(v)),
        _ => round_to(to, v as f32).map(|r| Scalar::Float(f64::from(r))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_ties_to_even_and_overflows_to_infinity() {
        assert_eq!(round_to(DType::F16, 2049.0), Some(2048.0));
        assert_eq!(round_to(DType::F16, 70000.0), Some(f32::INFINITY));
        assert_eq!(round_to(DType::BF16, 257.0), Some(256.0));
        assert!(round_to(DType::BF16, f32::NAN).is_some_and(f32::is_nan));
        assert_eq!(round_to(DType::F32, 1.0), None);
        // Above the tie only in bits `f64`'s top word does not hold: rounds up.
        let above_tie = 1.0 + 2f32.powi(-8) + 2f32.powi(-23);
        assert_eq!(round_to(DType::BF16, above_tie), Some(1.0 + 2f32.powi(-7)));
    }

    #[test]
    fn only_float32_converts_to_and_from_half_floats() {
        assert!(cast_allowed(DType::F16, DType::F32) && cast_allowed(DType::F32, DType::BF16));
        assert!(!cast_allowed(DType::F16, DType::I32) && !cast_allowed(DType::F64, DType::BF16));
        assert!(!cast_allowed(DType::F16, DType::BF16));
        assert!(cast_allowed(DType::I32, DType::F64));
    }

    /// `y = round(x * x)` over `dtype`: loads widened, one rounding per result.
    fn square(dtype: DType) -> Result<crate::Kernel, crate::VerifyError> {
        let mut k = crate::KernelBuilder::new("square");
        let x = k.input("x", dtype, [3]);
        let y = k.output("y", dtype, [3]);
        k.for_(3, crate::LoopKind::Vectorize, |k, i| {
            let v = crate::Expr::load(x, i.clone()).cast(DType::F32);
            k.store(y, i, (v.clone() * v).cast(dtype));
        });
        k.finish()
    }

    /// A tensor of `dtype` holding `values` rounded to it.
    fn halves(dtype: DType, values: &[f32]) -> relay_devices::Tensor {
        let shape = vec![values.len()];
        match dtype {
            DType::F16 => relay_devices::Tensor::from_vec(
                shape,
                values.iter().map(|&v| ::half::f16::from_f32(v)).collect(),
            ),
            _ => relay_devices::Tensor::from_vec(
                shape,
                values.iter().map(|&v| ::half::bf16::from_f32(v)).collect(),
            ),
        }
        .unwrap()
    }

    #[test]
    fn kernels_load_widen_compute_in_float32_and_round_stores() {
        // 1.00390625² and 1.0078125² need more significand bits than float16 and bfloat16
        // have: the square rounds once, from float32.
        for (dtype, x) in [(DType::F16, 1.000_976_6f32), (DType::BF16, 1.007_812_5)] {
            let input = halves(dtype, &[x, 3.0, -0.5]);
            let mut out = [relay_devices::Tensor::zeros(dtype, vec![3]).unwrap()];
            crate::interp::run(&square(dtype).unwrap(), &[&input], &mut out, &[]).unwrap();
            assert_eq!(out[0], halves(dtype, &[x * x, 9.0, 0.25]));
            assert_ne!(round_to(dtype, x * x), Some(x * x));
        }
    }

    #[test]
    fn the_verifier_refuses_half_float_arithmetic_locals_and_other_casts() {
        use crate::{Expr, KernelBuilder, VerifyError};
        let refused = |body: &dyn Fn(&mut KernelBuilder, crate::BufferId, crate::BufferId)| {
            let mut k = KernelBuilder::new("bad");
            let x = k.input("x", DType::F16, [2]);
            let y = k.output("y", DType::F16, [2]);
            body(&mut k, x, y);
            k.finish().unwrap_err()
        };
        let arith = refused(&|k, x, y| k.store(y, 0, Expr::load(x, 0) + Expr::load(x, 1)));
        assert_eq!(arith, VerifyError::BadOperand { op: "add", dtype: DType::F16 });
        let via_int = refused(&|k, x, y| k.store(y, 0, Expr::load(x, 0).cast(DType::I32).cast(DType::F16)));
        assert_eq!(via_int, VerifyError::BadOperand { op: "cast", dtype: DType::F16 });
        let local = refused(&|k, x, _| {
            let l = k.local("l", DType::F16);
            k.assign(l, Expr::load(x, 0));
        });
        assert_eq!(local, VerifyError::UnsupportedDType(DType::F16));
    }
}
