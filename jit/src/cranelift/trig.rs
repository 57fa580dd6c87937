//! `sin cos tan asin acos atan sinh cosh` for `f32` and `f32x4` as straight-line Cranelift
//! code, like `math.rs`: argument reduction, a polynomial, and selects for the special cases.
//! No calls and no branches, so scalar loops and vector lanes give the same bits.
//!
//! - `sin`/`cos`/`tan`: `x = j π/2 + r`, `|r| <= π/4`, by Cody–Waite reduction with π/2 split
//!   in four (three parts of 11 bits, so that `j · part` is exact for `|j| < 2^13` even
//!   without FMA, and the rest), then `sin r`, `cos r` by odd/even polynomials; the quadrant
//!   `j mod 4` picks and negates them; `tan = sin / cos` of the same reduction.
//! - `atan`: on `|x|`, `atan x = π/2 - atan(1/x)` above `tan(3π/8)`, `π/4 + atan((x-1)/(x+1))`
//!   above `tan(π/8)`, then an odd polynomial on `|t| <= tan(π/8)`; the sign copied back.
//! - `asin x = atan(x / sqrt((1-x)(1+x)))` and `acos x = 2 atan(sqrt((1-x)/(1+x)))`: `1 - x` is
//!   exact near 1, so neither cancels there (`π/2 - asin x` would lose `acos`'s small values).
//! - `cosh x = e^|x|/2 + (1/4)/(e^|x|/2)`, `sinh x = ±(e^|x|/2 - (1/4)/(e^|x|/2))` for `|x| >= 1`
//!   and an odd polynomial below (where the difference cancels); `e^|x|/2` is scaled by 2^-1
//!   in the exponent, so it stays finite up to `cosh`'s own overflow at 89.4.
//!
//! The coefficients are our own Lawson (iteratively reweighted least-squares) minimax fits of
//! the relative error, made with NumPy in `f64`; rounded to `f32` their approximation error is
//! below 2.2e-8 (atan), 5e-9 (sin, cos, sinh), so the results are rounding-dominated.
//! Measured against `f64` on grids of 1M–2M points (`jit/tests/approx.rs` checks each with a
//! little margin; on a CPU with FMA, which the reduction's accuracy past 12868 relies on):
//!
//! | function | inputs | max error |
//! |---|---|---|
//! | `sin`, `cos` | [-1e4, 1e4] | absolute 9.9e-8 (< 1 ulp of 1) |
//! | `sin` / `cos` | [-π, π] / [-1.5, 1.5] | relative 1.2e-7 / 1.1e-7 |
//! | `sin`, `cos` | [-1e5, 1e5], [-1e7, 1e7], [-1e9, 1e9] | absolute 1.1e-7, 1.4e-7, 7.5e-6 |
//! | `tan` | [-1e4, 1e4] | relative 2.7e-7 |
//! | `asin`, `acos` | [-1, 1] | relative 2.4e-7, 2.2e-7 |
//! | `atan` | [-1e4, 1e4] | relative 1.4e-7 |
//! | `sinh`, `cosh` | [-89, 89] | relative 1.3e-7, 1.2e-7 |
//! | `sin tan asin atan sinh` | [-1e-3, 1e-3] | relative 1.4e-7 |
//!
//! (`exp`'s stated bound in `math.rs` is 2e-6 relative; the fusion tests compare at 2e-5.)
//!
//! Special values: `sin`/`cos`/`tan` of ±inf or NaN is NaN; `sin(±0) = tan(±0) = ±0`,
//! `asin`/`atan`/`sinh` keep the sign of zero; `asin(±1) = ±π/2`, `acos(1) = 0`,
//! `acos(-1) = π`, `asin`/`acos` outside [-1, 1] are NaN; `atan(±inf) = ±π/2`; `sinh`/`cosh`
//! overflow to ±inf past 89.4.
//!
//! **Huge arguments.** One Cody–Waite step is exact while `j · part` is, `|x| < 2^13 · π/2 ≈
//! 12868` (with FMA further: each product then rounds once). Past `|x| ≈ 2^23` the rounded
//! quotient `j` itself is off by whole quadrants, so a second step reduces the remainder the
//! first left; with FMA that keeps `sin`/`cos` within 1.4e-7 up to 1e7 and 7.5e-6 up to 1e9.
//! Past about 2^30 the remainder is no longer `x mod π/2` (an `f32` there is a multiple of
//! 128 and its sine is noise in its last bit anyway): it is clamped, and the result is some
//! value in [-1, 1], not `sin x`. Accurate reduction there would need Payne–Hanek's
//! multi-word 2/π.

use super::ops::Ops;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{I32, I32X4};
use cranelift_codegen::ir::{InstBuilder, Value};
use std::f32::consts::{FRAC_PI_2, FRAC_PI_4};

/// π/2 = `PIO2[0] + PIO2[1] + PIO2[2] + PIO2[3]`: three parts of 11 significant bits and
/// the rest (exact binary values: 0x1.92p0, 0x1.fb4p-12, 0x1.444p-24, 0x1.68c234p-39).
#[allow(clippy::excessive_precision)]
const PIO2: [f32; 4] =
    [1.570_312_5, 4.837_512_969_970_703e-4, 7.549_533_620_476_723e-8, 2.563_344_068_257_09e-12];
/// `sin r = r + r z S(z)`, `z = r²`, `|r| <= π/4`.
const SIN_S: [f32; 4] = [-0.166_666_67, 0.008_333_329, -1.983_931_3e-4, 2.718_121_6e-6];
/// `cos r = 1 - z/2 + z² C(z)`, `z = r²`, `|r| <= π/4`.
const COS_C: [f32; 4] = [0.041_666_668, -0.001_388_888_3, 2.479_946e-5, -2.720_575_5e-7];
/// `atan t = t + t z A(z)`, `z = t²`, `|t| <= tan(π/8)`.
const ATAN_A: [f32; 5] = [-0.333_333_16, 0.199_984_71, -0.142_435_33, 0.105_938_14, -0.060_782_205];
/// `tan(π/8)` and `tan(3π/8)`, where `atan`'s reduction changes branch.
const TAN_PI_8: f32 = 0.414_213_57;
const TAN_3PI_8: f32 = 2.414_213_6;
/// `sinh x = x + x z H(z)`, `z = x²`, `|x| < 1`.
const SINH_H: [f32; 4] = [0.166_666_67, 0.008_333_35, 1.983_616e-4, 2.816_951_3e-6];

/// `sin r` and `cos r` of a reduced argument, and the quadrant `j` as integer lanes.
struct Reduced {
    sin: Value,
    cos: Value,
    quadrant: Value,
}

impl Ops<'_, '_> {
    /// `(j, x - j π/2)` with `j = round(x · 2/π)` (Cody–Waite).
    fn subtract_pio2(&mut self, x: Value) -> (Value, Value) {
        let ty = self.ty(x);
        let two_over_pi = self.fconst(ty, std::f32::consts::FRAC_2_PI);
        let j = self.b.ins().fmul(x, two_over_pi);
        let j = self.b.ins().nearest(j);
        let minus_j = self.b.ins().fneg(j);
        let mut r = x;
        for part in PIO2 {
            let part = self.fconst(ty, part);
            r = self.mul_add(minus_j, part, r);
        }
        (j, r)
    }

    /// `x = j π/2 + r`, with `sin r`, `cos r` and `j`'s integer lanes. Past `|x| ≈ 2^23` the
    /// rounded quotient `j` is off by whole quadrants, so a second step reduces what the
    /// first left: `|r| <= π/4` for every finite `x`, and the polynomials stay in range.
    fn reduce_pio2(&mut self, x: Value) -> Reduced {
        let ty = self.ty(x);
        let (j, r) = self.subtract_pio2(x);
        let (j2, r) = self.subtract_pio2(r);
        // Past about 2^30 even two steps leave a wrong `r`: clamped, the result is still
        // some value in [-1, 1] (an exact `r` is never farther out than π/4 plus an ulp).
        let r = self.clamp(r, -0.8, 0.8);
        let z = self.b.ins().fmul(r, r);
        let s = self.poly(z, &SIN_S);
        let rz = self.b.ins().fmul(r, z);
        let sin = self.mul_add(rz, s, r);
        let c = self.poly(z, &COS_C);
        let z2 = self.b.ins().fmul(z, z);
        let minus_half = self.fconst(ty, -0.5);
        let one = self.fconst(ty, 1.0);
        let head = self.mul_add(z, minus_half, one);
        let cos = self.mul_add(z2, c, head);
        let int_ty = if ty.is_vector() { I32X4 } else { I32 };
        let j = self.b.ins().fcvt_to_sint_sat(int_ty, j);
        let j2 = self.b.ins().fcvt_to_sint_sat(int_ty, j2);
        let quadrant = self.b.ins().iadd(j, j2);
        Reduced { sin, cos, quadrant }
    }

    /// `v` negated where bit 1 of the quadrant lanes `q` is set (sign-bit flip, so NaN stays NaN).
    fn negate_by_quadrant(&mut self, v: Value, q: Value) -> Value {
        let bits = self.float_bits(v);
        let ity = self.ty(bits);
        let two = self.iconst(ity, 2);
        let bit = self.b.ins().band(q, two);
        let sign = self.b.ins().ishl_imm_u(bit, 30);
        let flipped = self.b.ins().bxor(bits, sign);
        self.bits_float(flipped)
    }

    /// Whether the quadrant lanes `q` are odd, as a condition for `select`.
    fn odd_quadrant(&mut self, q: Value) -> Value {
        let ity = self.ty(q);
        let one = self.iconst(ity, 1);
        let bit = self.b.ins().band(q, one);
        let zero = self.iconst(ity, 0);
        self.b.ins().icmp(IntCC::NotEqual, bit, zero)
    }

    /// `sin(j π/2 + r)` or, with `shift` 1, `cos` (= `sin` of the next quadrant).
    fn sin_quadrant(&mut self, x: Value, shift: i64) -> Value {
        let Reduced { sin, cos, quadrant } = self.reduce_pio2(x);
        let q = if shift == 0 {
            quadrant
        } else {
            let ity = self.ty(quadrant);
            let s = self.iconst(ity, shift);
            self.b.ins().iadd(quadrant, s)
        };
        let odd = self.odd_quadrant(q);
        let v = self.select(odd, cos, sin);
        self.negate_by_quadrant(v, q)
    }

    /// `x` where `x == 0` (keeping the sign of zero), else `y`.
    fn zero_passes(&mut self, x: Value, y: Value) -> Value {
        let ty = self.ty(x);
        let zero = self.fconst(ty, 0.0);
        let is_zero = self.b.ins().fcmp(FloatCC::Equal, x, zero);
        self.select(is_zero, x, y)
    }

    /// The sine.
    pub(crate) fn sin(&mut self, x: Value) -> Value {
        let y = self.sin_quadrant(x, 0);
        self.zero_passes(x, y)
    }

    /// The cosine.
    pub(crate) fn cos(&mut self, x: Value) -> Value {
        self.sin_quadrant(x, 1)
    }

    /// The tangent: `sin r / cos r` in even quadrants, `-cos r / sin r` in odd ones.
    pub(crate) fn tan(&mut self, x: Value) -> Value {
        let Reduced { sin, cos, quadrant } = self.reduce_pio2(x);
        let odd = self.odd_quadrant(quadrant);
        let num = self.select(odd, cos, sin);
        let den = self.select(odd, sin, cos);
        let minus_num = self.b.ins().fneg(num);
        let num = self.select(odd, minus_num, num);
        let y = self.b.ins().fdiv(num, den);
        self.zero_passes(x, y)
    }

    /// The arctangent.
    pub(crate) fn atan(&mut self, x: Value) -> Value {
        let ty = self.ty(x);
        let a = self.b.ins().fabs(x);
        let one = self.fconst(ty, 1.0);
        // Far: -1/a with offset π/2; middle: (a-1)/(a+1) with offset π/4; near: a itself.
        let far_limit = self.fconst(ty, TAN_3PI_8);
        let far = self.b.ins().fcmp(FloatCC::GreaterThan, a, far_limit);
        let mid_limit = self.fconst(ty, TAN_PI_8);
        let mid = self.b.ins().fcmp(FloatCC::GreaterThan, a, mid_limit);
        let minus_one = self.fconst(ty, -1.0);
        let a_minus_1 = self.b.ins().fsub(a, one);
        let a_plus_1 = self.b.ins().fadd(a, one);
        let num = self.select(mid, a_minus_1, a);
        let num = self.select(far, minus_one, num);
        let den = self.select(mid, a_plus_1, one);
        let den = self.select(far, a, den);
        let t = self.b.ins().fdiv(num, den);
        let zero = self.fconst(ty, 0.0);
        let pi_4 = self.fconst(ty, FRAC_PI_4);
        let pi_2 = self.fconst(ty, FRAC_PI_2);
        let offset = self.select(mid, pi_4, zero);
        let offset = self.select(far, pi_2, offset);
        let z = self.b.ins().fmul(t, t);
        let p = self.poly(z, &ATAN_A);
        let tz = self.b.ins().fmul(t, z);
        let at = self.mul_add(tz, p, t);
        let y = self.b.ins().fadd(offset, at);
        // `copysign` keeps NaN a NaN and gives atan(-0) = -0.
        self.copysign(y, x)
    }

    /// `(1 - x, 1 + x)`, each exact where the other's factor would cancel (`1 - x` for `x`
    /// near 1, `1 + x` near -1).
    fn one_minus_plus(&mut self, x: Value) -> (Value, Value) {
        let ty = self.ty(x);
        let one = self.fconst(ty, 1.0);
        (self.b.ins().fsub(one, x), self.b.ins().fadd(one, x))
    }

    /// The arcsine, `atan(x / sqrt((1 - x)(1 + x)))`.
    pub(crate) fn asin(&mut self, x: Value) -> Value {
        let (below, above) = self.one_minus_plus(x);
        let d = self.b.ins().fmul(below, above);
        let d = self.b.ins().sqrt(d);
        let t = self.b.ins().fdiv(x, d);
        self.atan(t)
    }

    /// The arccosine, `2 atan(sqrt((1 - x) / (1 + x)))`.
    pub(crate) fn acos(&mut self, x: Value) -> Value {
        let (below, above) = self.one_minus_plus(x);
        let q = self.b.ins().fdiv(below, above);
        let t = self.b.ins().sqrt(q);
        let a = self.atan(t);
        self.b.ins().fadd(a, a)
    }

    /// `(e^|x| / 2, (1/4) / (e^|x| / 2))`: the two halves of `cosh` and `sinh` for large `|x|`.
    fn half_exps(&mut self, x: Value) -> (Value, Value) {
        let ty = self.ty(x);
        let a = self.b.ins().fabs(x);
        let big = self.half_exp(a);
        let quarter = self.fconst(ty, 0.25);
        let small = self.b.ins().fdiv(quarter, big);
        (big, small)
    }

    /// The hyperbolic cosine.
    pub(crate) fn cosh(&mut self, x: Value) -> Value {
        let (big, small) = self.half_exps(x);
        self.b.ins().fadd(big, small)
    }

    /// The hyperbolic sine.
    pub(crate) fn sinh(&mut self, x: Value) -> Value {
        let ty = self.ty(x);
        let (big, small) = self.half_exps(x);
        let large = self.b.ins().fsub(big, small);
        let large = self.copysign(large, x);
        let z = self.b.ins().fmul(x, x);
        let h = self.poly(z, &SINH_H);
        let xz = self.b.ins().fmul(x, z);
        let near = self.mul_add(xz, h, x);
        let a = self.b.ins().fabs(x);
        let one = self.fconst(ty, 1.0);
        let is_near = self.b.ins().fcmp(FloatCC::LessThan, a, one);
        self.select(is_near, near, large)
    }
}
