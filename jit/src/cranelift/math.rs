//! `exp log tanh sigmoid erf` for `f32` and `f32x4` as straight-line Cranelift code: range
//! reduction and a polynomial (a rational function for `tanh`), and selects for the special
//! cases. No calls, no branches, so the
//! same code serves scalar loops and vector lanes, and a kernel's result does not depend on
//! whether an element fell in a vector body or a scalar tail.
//!
//! The polynomial coefficients are our own weighted least-squares (Lawson) minimax fits,
//! made with mpmath; their approximation error is far below `f32` rounding, so the errors
//! below are rounding-dominated. Maximum errors measured against `f64` references with FMA
//! (`jit/tests/approx.rs` checks them on grids of 2M points; the brief's bounds are 2e-6
//! relative for `exp`/`log` and 1e-5 absolute for the others):
//!
//! | function | inputs | max error |
//! |---|---|---|
//! | `exp` | [-87, 88] | relative 8.2e-8 (≈ 1 ulp) |
//! | `log` | every 997th positive float, subnormals to `f32::MAX` | relative 1.6e-7 (1.8e-7 near 1) |
//! | `tanh` | [-20, 20] | absolute 3.1e-7 (5 ulp of 1, near the clamp); relative 2.3e-7 on [-0.6, 0.6] |
//! | `sigmoid` | [-20, 20] | absolute 9.0e-8 |
//! | `erf` | [-6, 6] | absolute 1.2e-7; relative 2.0e-7 on [-0.6, 0.6] |
//!
//! Special values: `exp(-inf) = 0`, `exp(+inf) = +inf`, results below `f32`'s subnormal
//! range flush to 0 and above it overflow to +inf; `log(0) = -inf`, `log(x < 0) = NaN`,
//! `log(+inf) = +inf`; `tanh`, `sigmoid`, `erf` saturate to ±1 (or 0/1) at ±inf; NaN in gives
//! NaN out everywhere.

use super::ops::Ops;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};

/// `e^r ≈ 1 + r + r² Q(r)` on `|r| <= ln2 / 2`.
const EXP_Q: [f32; 5] = [0.499_999_94, 0.166_665_21, 0.041_668_39, 0.008_368_71, 0.001_381_461];
/// The bits of 1.5 · 2^23: adding it to a float of magnitude under 2^22 rounds to an integer
/// that then sits in the low mantissa bits.
const MAGIC_BITS: u32 = 0x4b40_0000;
/// `f32`'s exponent bias.
const EXP_BIAS: i64 = 127;
/// `ln 2` split so that `n * LN2_HI` is exact for `|n| < 2^15`.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// `log(m) = 2s + 2s z R(z)`, `s = (m - 1) / (m + 1)`, `z = s²`, `m` in `[√½, √2)`.
const LOG_R: [f32; 4] = [0.333_333_3, 0.200_001_67, 0.142_686_72, 0.117_907_43];
/// `tanh(x) = x P(z) / Q(z)`, `z = x²`, a relative-error minimax fit on `|x| <= TANH_LIMIT`.
/// Both polynomials have positive coefficients, so Horner's rule stays well conditioned.
const TANH_P: [f32; 5] = [1.0, 0.133_839_65, 0.003_498_977, 2.066_091_3e-5, 1.341_929_2e-8];
const TANH_Q: [f32; 5] = [1.0, 0.467_172_86, 0.025_890_136, 3.291_005_6e-4, 7.804_521e-7];
/// Where `tanh` is within 3.1e-8 of 1: larger inputs are clamped to it, which also gives
/// `tanh(±inf) = ±1` and keeps the rational from growing like `x`.
const TANH_LIMIT: f32 = 9.0;
/// `erf(x) = x P(z)`, `z = x²`, for `|x| < ERF_SMALL`. The first coefficient is the fit's,
/// one ulp below 2/√π: rounding it to 2/√π almost doubles the error.
#[allow(clippy::approx_constant)]
const ERF_P: [f32; 5] = [1.128_379_1, -0.376_119_67, 0.112_740_66, -0.026_369_58, 0.004_167_076];
const ERF_SMALL: f32 = 0.75;
/// `erf(x) = 1 - e^{-x²} Q(t)`, `t = 1 / (1 + x/2)`, for `ERF_SMALL <= x`.
const ERF_Q: [f32; 6] = [0.001_233_438_4, 0.264_695_67, 0.379_925_73, -0.036_059_19, 0.612_868, -0.222_843_7];

impl Ops<'_, '_> {
    /// `x` limited to `[lo, hi]`, NaN passing through.
    pub(crate) fn clamp(&mut self, x: Value, lo: f32, hi: f32) -> Value {
        let ty = self.ty(x);
        let lo = self.fconst(ty, lo);
        let hi = self.fconst(ty, hi);
        let below = self.b.ins().fcmp(FloatCC::LessThan, x, lo);
        let x = self.select(below, lo, x);
        let above = self.b.ins().fcmp(FloatCC::LessThan, hi, x);
        self.select(above, hi, x)
    }

    /// `2^n` as a float, for integer lanes `n` in the normal exponent range.
    fn pow2(&mut self, n: Value) -> Value {
        let ty = self.ty(n);
        let bias = self.iconst(ty, EXP_BIAS);
        let e = self.b.ins().iadd(n, bias);
        self.biased_pow2(e)
    }

    /// `2^(e - 127)` as a float, for integer lanes `e` in [1, 254] (a biased exponent).
    fn biased_pow2(&mut self, e: Value) -> Value {
        let bits = self.b.ins().ishl_imm_u(e, 23);
        self.bits_float(bits)
    }

    /// `e^x`.
    pub(crate) fn exp(&mut self, x: Value) -> Value {
        // e^-104 is below the smallest subnormal and e^89 above f32::MAX: clamping there
        // keeps the exponent arithmetic in range while rounding to 0 and +inf correctly.
        self.exp_scaled(x, 89.0, 0)
    }

    /// `e^x / 2` without `e^x`'s overflow: finite up to `x ≈ 89.4` (`cosh`'s and `sinh`'s
    /// large halves).
    pub(crate) fn half_exp(&mut self, x: Value) -> Value {
        self.exp_scaled(x, 90.0, -1)
    }

    /// `e^x · 2^k` with `x` clamped to `[-104, hi]`, the scaling folded into the exponent.
    fn exp_scaled(&mut self, x: Value, hi: f32, k: i64) -> Value {
        let x = self.clamp(x, -104.0, hi);
        let (p, n) = self.exp_reduced(x, k);
        // Scale by 2^n in two steps so that n in [-151, 129] needs no subnormal or infinite
        // intermediate.
        let n1 = self.b.ins().sshr_imm_u(n, 1);
        let n2 = self.b.ins().isub(n, n1);
        let s1 = self.pow2(n1);
        let s2 = self.pow2(n2);
        let p = self.b.ins().fmul(p, s1);
        self.b.ins().fmul(p, s2)
    }

    /// `e^-x` where only normal results matter: for `x` above 87 it is some value under
    /// 2^-125, and from about `x = -88.4` (a little before `f32::MAX`) it is +inf. One scaling
    /// step instead of `exp`'s two, and the exponent bias folded into the range reduction.
    ///
    /// The argument is negated inside the arithmetic rather than first: `-x` clamped to
    /// `[-87, 89]` is exactly `x` clamped to `[-89, 87]`, negated, and the negated value only
    /// feeds the two FMAs of the range reduction, which x86 computes as `vfnmadd`/`vfmsub`
    /// (a negation of its own is three instructions, the sign mask made anew each time).
    /// The bits are those of `exp` of the negation.
    fn exp_normal_of_neg(&mut self, x: Value) -> Value {
        let x = self.clamp(x, -89.0, 87.0);
        let minus_x = self.b.ins().fneg(x);
        let (p, e) = self.exp_reduced(minus_x, EXP_BIAS);
        let s = self.biased_pow2(e);
        self.b.ins().fmul(p, s)
    }

    /// `(e^r, n + k)` with `x = n ln2 + r`, `|r| <= ln2 / 2`, `n` an integer lane (`k` is
    /// folded into the subtraction that extracts `n`).
    fn exp_reduced(&mut self, x: Value, k: i64) -> (Value, Value) {
        let ty = self.ty(x);
        // n = round(x / ln2) by the 1.5 * 2^23 trick: adding it rounds to an integer that
        // then sits in the low mantissa bits.
        let magic = self.fconst(ty, f32::from_bits(MAGIC_BITS));
        let log2e = self.fconst(ty, std::f32::consts::LOG2_E);
        let t = self.mul_add(x, log2e, magic);
        let n_float = self.b.ins().fsub(t, magic);
        let minus_hi = self.fconst(ty, -LN2_HI);
        let minus_lo = self.fconst(ty, -LN2_LO);
        let r = self.mul_add(n_float, minus_hi, x);
        let r = self.mul_add(n_float, minus_lo, r);
        let q = self.poly(r, &EXP_Q);
        let r2 = self.b.ins().fmul(r, r);
        let p = self.mul_add(q, r2, r);
        let one = self.fconst(ty, 1.0);
        let p = self.b.ins().fadd(p, one);
        let t_bits = self.float_bits(t);
        let ity = self.ty(t_bits);
        // `n` sits in the low mantissa bits of `t`: subtracting the magic's bits (less `k`)
        // gives `n + k`.
        let offset = self.iconst(ity, i64::from(MAGIC_BITS) - k);
        (p, self.b.ins().isub(t_bits, offset))
    }

    /// The natural logarithm.
    pub(crate) fn log(&mut self, x: Value) -> Value {
        let ty = self.ty(x);
        // Scale subnormals into the normal range first.
        let min_normal = self.fconst(ty, f32::MIN_POSITIVE);
        let small = self.b.ins().fcmp(FloatCC::LessThan, x, min_normal);
        let two23 = self.fconst(ty, 8_388_608.0);
        let scaled = self.b.ins().fmul(x, two23);
        let xs = self.select(small, scaled, x);
        let bits = self.float_bits(xs);
        let ity = self.ty(bits);
        let biased = self.b.ins().ushr_imm_u(bits, 23);
        let bias = self.iconst(ity, 127);
        let e = self.b.ins().isub(biased, bias);
        let e_float = self.b.ins().fcvt_from_sint(ty, e);
        let zero = self.fconst(ty, 0.0);
        let minus23 = self.fconst(ty, -23.0);
        let e_adjust = self.select(small, minus23, zero);
        let e_float = self.b.ins().fadd(e_float, e_adjust);
        // Mantissa in [1, 2), folded into [√½, √2).
        let mant_mask = self.iconst(ity, 0x007f_ffff);
        let one_bits = self.iconst(ity, 0x3f80_0000);
        let m = self.b.ins().band(bits, mant_mask);
        let m = self.b.ins().bor(m, one_bits);
        let m = self.bits_float(m);
        let sqrt2 = self.fconst(ty, std::f32::consts::SQRT_2);
        let big = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, m, sqrt2);
        let half = self.fconst(ty, 0.5);
        let m_half = self.b.ins().fmul(m, half);
        let m = self.select(big, m_half, m);
        let one = self.fconst(ty, 1.0);
        let e_plus = self.b.ins().fadd(e_float, one);
        let e_float = self.select(big, e_plus, e_float);
        let f = self.b.ins().fsub(m, one);
        let d = self.b.ins().fadd(m, one);
        let s = self.b.ins().fdiv(f, d);
        let z = self.b.ins().fmul(s, s);
        let r = self.poly(z, &LOG_R);
        let two_s = self.b.ins().fadd(s, s);
        let two_s_z = self.b.ins().fmul(two_s, z);
        let log_m = self.mul_add(two_s_z, r, two_s);
        let lo = self.fconst(ty, LN2_LO);
        let hi = self.fconst(ty, LN2_HI);
        let y = self.mul_add(e_float, lo, log_m);
        let y = self.mul_add(e_float, hi, y);
        // Special cases: +inf, zero, negative, NaN.
        let inf = self.fconst(ty, f32::INFINITY);
        let is_inf = self.b.ins().fcmp(FloatCC::Equal, x, inf);
        let y = self.select(is_inf, inf, y);
        let minus_inf = self.fconst(ty, f32::NEG_INFINITY);
        let is_zero = self.b.ins().fcmp(FloatCC::Equal, x, zero);
        let y = self.select(is_zero, minus_inf, y);
        let nan = self.fconst(ty, f32::NAN);
        let negative = self.b.ins().fcmp(FloatCC::LessThan, x, zero);
        let y = self.select(negative, nan, y);
        let unordered = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        self.select(unordered, x, y)
    }

    /// The hyperbolic tangent, as `x P(x²) / Q(x²)` on `|x| <= TANH_LIMIT`: about 20
    /// operations where the `exp`-based form took about 50, which matters for the gate
    /// kernels of recurrent cells, the one place it runs hot.
    pub(crate) fn tanh(&mut self, x: Value) -> Value {
        let x = self.clamp(x, -TANH_LIMIT, TANH_LIMIT);
        let z = self.b.ins().fmul(x, x);
        let p = self.poly(z, &TANH_P);
        let q = self.poly(z, &TANH_Q);
        let xp = self.b.ins().fmul(x, p);
        self.b.ins().fdiv(xp, q)
    }

    /// `1 / (1 + e^-x)`. A tiny `e^-x` vanishes next to 1, so `exp_normal_of_neg` serves;
    /// results below about 2^-127 (x < -88.4) are 0, as `e^-x` overflows.
    pub(crate) fn sigmoid(&mut self, x: Value) -> Value {
        let ty = self.ty(x);
        let e = self.exp_normal_of_neg(x);
        let one = self.fconst(ty, 1.0);
        let d = self.b.ins().fadd(one, e);
        self.b.ins().fdiv(one, d)
    }

    /// The error function.
    pub(crate) fn erf(&mut self, x: Value) -> Value {
        let ty = self.ty(x);
        let a = self.b.ins().fabs(x);
        let z = self.b.ins().fmul(x, x);
        let p = self.poly(z, &ERF_P);
        let small = self.b.ins().fmul(x, p);
        let one = self.fconst(ty, 1.0);
        let half = self.fconst(ty, 0.5);
        let d = self.mul_add(a, half, one);
        let t = self.b.ins().fdiv(one, d);
        let q = self.poly(t, &ERF_Q);
        let minus_z = self.b.ins().fneg(z);
        let e = self.exp(minus_z);
        let tail = self.b.ins().fmul(e, q);
        let big = self.b.ins().fsub(one, tail);
        let big = self.copysign(big, x);
        let limit = self.fconst(ty, ERF_SMALL);
        let is_small = self.b.ins().fcmp(FloatCC::LessThan, a, limit);
        self.select(is_small, small, big)
    }
}
