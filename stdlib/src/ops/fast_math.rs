//! TVM's fast approximations of `exp`, `tanh` and `erf` (`include/tvm/topi/elemwise.h`,
//! `fast_erf_float_expr` in `src/tir/op/op.cc`) for `float32`, written once as a host function
//! (the reference kernel) and once as a kir expression (the fused kernel) over the same
//! coefficients. `float64` uses the exact functions, as TVM does for every dtype but `float32`.
//!
//! Error against the exact function over `float32` inputs (measured by `tests/ops/gen_vectors.py`
//! on a dense grid, and checked by its vectors as an absolute tolerance):
//! `fast_exp` relative error below 5e-6 (Cephes' polynomial on a range reduction to
//! `[-ln2/2, ln2/2]` by one `float32` ln 2, so the error grows with `|x|`: 1.1e-6 on
//! `[-20, 20]`, 4.1e-6 near 72); `fast_tanh` absolute error below 1e-6 (Eigen's 13/6 rational
//! function, inputs clamped to `[-9, 9]`; 3.3e-7 measured); `fast_erf` absolute error below
//! 1e-6 (Eigen's 13/8 rational function, inputs clamped to `[-4, 4]`; 4.2e-7 measured).

use crate::compute::util::lit;
use crate::kernels::num::{cast, Float};
use relay_compiler::kir::Expr;
use relay_devices::DType;

/// `fast_exp`'s clamp: beyond it `e^x` is not a finite, normal `float32`.
const EXP_LIMIT: f64 = 88.376_262_664_795;
/// `log2(e)`.
const LOG2E: f64 = std::f64::consts::LOG2_E;
/// `ln(2)`.
const LN2: f64 = std::f64::consts::LN_2;
/// `fast_exp`'s polynomial in the reduced argument `f`, highest power first (Cephes `expf`).
const EXP_P: [f64; 6] = [
    1.987_569_150_0e-4,
    1.398_199_950_7e-3,
    8.333_451_907_3e-3,
    4.166_579_589_4e-2,
    1.666_666_545_9e-1,
    5.000_000_120_1e-1,
];

/// `fast_tanh`'s clamp: beyond it `tanh` is ±1 in `float32`.
const TANH_LIMIT: f64 = 9.0;
/// `fast_tanh`'s odd numerator, coefficients of `x^13, x^11, ..., x^1` (Eigen).
const TANH_P: [f64; 7] = [
    -2.760_768_477_423_55e-16,
    2.000_187_904_824_77e-13,
    -8.604_671_522_137_35e-11,
    5.122_297_090_371_14e-8,
    1.485_722_357_179_79e-5,
    6.372_619_288_754_36e-4,
    4.893_524_558_917_86e-3,
];
/// `fast_tanh`'s even denominator, coefficients of `x^6, x^4, x^2, x^0`.
const TANH_Q: [f64; 4] =
    [1.198_258_394_667_02e-6, 1.185_347_056_866_54e-4, 2.268_434_632_439e-3, 4.893_525_185_543_85e-3];

/// `fast_erf`'s clamp: beyond it `erf` is ±1 in `float32`.
const ERF_LIMIT: f64 = 4.0;
/// `fast_erf`'s odd numerator, coefficients of `x^13, ..., x^1` (Eigen).
const ERF_P: [f64; 7] = [
    -2.726_142_258_013_06e-10,
    2.770_681_424_959_02e-8,
    -2.101_024_020_825_08e-6,
    -5.692_506_394_623_46e-5,
    -7.349_906_303_268_55e-4,
    -2.954_599_808_540_25e-3,
    -1.609_603_332_624_15e-2,
];
/// `fast_erf`'s even denominator, coefficients of `x^8, ..., x^0`.
const ERF_Q: [f64; 5] = [
    -1.456_607_184_649_96e-5,
    -2.133_740_552_789_05e-4,
    -1.682_826_974_382_03e-3,
    -7.373_329_167_204_68e-3,
    -1.426_473_905_141_89e-2,
];

/// `c[0] * t^(n-1) + ... + c[n-1]` in `float32`, Horner's rule as TVM's expression orders it.
fn horner(t: f32, c: &[f64]) -> f32 {
    c.iter().fold(0.0, |acc, &k| acc * t + k as f32)
}

/// [`horner`] as a kir expression of dtype `d`.
fn horner_kir(d: DType, t: &Expr, c: &[f64]) -> Expr {
    let (first, rest) = c.split_first().map_or((0.0, &[][..]), |(f, r)| (*f, r));
    rest.iter().fold(lit(d, first), |acc, &k| acc * t.clone() + lit(d, k))
}

/// `x` through `approx` when `T` is `float32`, else through `exact`.
fn on_f32<T: Float>(x: T, approx: fn(f32) -> f32, exact: fn(T) -> T) -> T {
    if T::DTYPE == DType::F32 {
        cast::<f32, T>(approx(cast::<T, f32>(x)))
    } else {
        exact(x)
    }
}

/// `fast_exp` of a `float32`: `2^n * e^f` with `n = floor(x log2(e) + 1/2)` and `e^f` from a
/// degree-7 polynomial, never below `x` (so `-inf`-bound inputs stay ordered as TVM's).
fn exp_f32(x0: f32) -> f32 {
    let x = x0.clamp(-EXP_LIMIT as f32, EXP_LIMIT as f32);
    let n = (x * LOG2E as f32 + 0.5).floor();
    let f = x - n * LN2 as f32;
    let y = horner(f, &EXP_P) * f * f + f + 1.0;
    (2f32.powf(n) * y).max(x0)
}

/// `fast_tanh` of a `float32`: Eigen's rational function on `x` clamped to `[-9, 9]`.
fn tanh_f32(x: f32) -> f32 {
    let x = x.clamp(-TANH_LIMIT as f32, TANH_LIMIT as f32);
    let x2 = x * x;
    x * horner(x2, &TANH_P) / horner(x2, &TANH_Q)
}

/// `fast_erf` of a `float32`: Eigen's rational function on `x` clamped to `[-4, 4]`.
fn erf_f32(x: f32) -> f32 {
    let x = x.clamp(-ERF_LIMIT as f32, ERF_LIMIT as f32);
    let x2 = x * x;
    x * horner(x2, &ERF_P) / horner(x2, &ERF_Q)
}

/// `fast_exp` of any float element (exact `exp` but for `float32`).
pub(crate) fn exp<T: Float>(x: T) -> T {
    on_f32(x, exp_f32, Float::exp)
}

/// `fast_tanh` of any float element (exact `tanh` but for `float32`).
pub(crate) fn tanh<T: Float>(x: T) -> T {
    on_f32(x, tanh_f32, Float::tanh)
}

/// `fast_erf` of any float element (exact `erf` but for `float32`).
pub(crate) fn erf<T: Float>(x: T) -> T {
    on_f32(x, erf_f32, Float::erf)
}

/// `x` clamped to `[-limit, limit]` in kir.
fn clamp_kir(d: DType, x: Expr, limit: f64) -> Expr {
    x.min(lit(d, limit)).max(lit(d, -limit))
}

/// [`exp`] as a kir expression over `x` of dtype `d`.
pub(crate) fn exp_kir(d: DType, x: Expr) -> Expr {
    if d != DType::F32 {
        return x.exp();
    }
    let c = clamp_kir(d, x.clone(), EXP_LIMIT);
    let n = (c.clone() * lit(d, LOG2E) + lit(d, 0.5)).floor();
    let f = c - n.clone() * lit(d, LN2);
    let y = horner_kir(d, &f, &EXP_P) * f.clone() * f.clone() + f + lit(d, 1.0);
    (lit(d, 2.0).pow(n) * y).max(x)
}

/// `x * p(x^2) / q(x^2)` in kir over `x` clamped to `limit`.
fn rational_kir(d: DType, x: Expr, limit: f64, p: &[f64], q: &[f64]) -> Expr {
    let x = clamp_kir(d, x, limit);
    let x2 = x.clone() * x.clone();
    x * horner_kir(d, &x2, p) / horner_kir(d, &x2, q)
}

/// [`tanh`] as a kir expression over `x` of dtype `d`.
pub(crate) fn tanh_kir(d: DType, x: Expr) -> Expr {
    if d != DType::F32 {
        return x.tanh();
    }
    rational_kir(d, x, TANH_LIMIT, &TANH_P, &TANH_Q)
}

/// [`erf`] as a kir expression over `x` of dtype `d`.
pub(crate) fn erf_kir(d: DType, x: Expr) -> Expr {
    if d != DType::F32 {
        return x.erf();
    }
    rational_kir(d, x, ERF_LIMIT, &ERF_P, &ERF_Q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_approximations_stay_within_their_documented_bounds() {
        for i in -8800..=8800 {
            let x = i as f32 / 100.0;
            let e = f64::from(x).exp();
            assert!((f64::from(exp_f32(x)) - e).abs() <= 5e-6 * e, "fast_exp({x})");
            assert!((f64::from(tanh_f32(x)) - f64::from(x).tanh()).abs() <= 1e-6, "fast_tanh({x})");
            assert!((f64::from(erf_f32(x)) - Float::erf(f64::from(x))).abs() <= 1e-6, "fast_erf({x})");
        }
        assert_eq!(exp::<f64>(1.0), 1f64.exp());
    }
}
