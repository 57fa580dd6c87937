//! TVM's fixed-point rescaling (`src/relay/qnn/utils.cc` `GetFixedPointMultiplierShift`,
//! `FixedPointMultiply`): a real multiplier `m` becomes a 31-bit significand and a power of
//! two, and `x * m` is computed in 64-bit integers with one rounding, as TVM's lowering of
//! `qnn.requantize` (its default `compute_dtype="int64"`) and the `fixed_point_multiply` op do.

use crate::attrs::QnnRounding;
use crate::error::KernelError;

/// A real multiplier as `significand * 2^(shift - 31)`, `significand` in `[2^30, 2^31)` (or
/// 0, or negative for a negative multiplier).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FixedPoint {
    significand: i64,
    shift: i32,
}

/// `x = f * 2^e` with `|f|` in `[0.5, 1)` (C's `frexp`), for finite nonzero `x`.
fn frexp(x: f64) -> (f64, i32) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Subnormal: scale into the normal range first.
        let (f, e) = frexp(x * 2f64.powi(64));
        return (f, e - 64);
    }
    let e = biased - 1022;
    let f = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (f, e)
}

impl FixedPoint {
    /// The fixed-point form of `multiplier` (TVM rounds the significand half away from zero
    /// and renormalises a significand that rounds up to `2^31`).
    ///
    /// # Errors
    /// [`KernelError::Attr`] for a multiplier that is not finite (a zero scale divides).
    pub(crate) fn new(multiplier: f64) -> Result<FixedPoint, KernelError> {
        if !multiplier.is_finite() {
            return Err(KernelError::Attr(format!("the scale ratio {multiplier} is not finite")));
        }
        if multiplier == 0.0 {
            return Ok(FixedPoint { significand: 0, shift: 0 });
        }
        let (f, mut shift) = frexp(multiplier);
        let mut significand = (f * 2f64.powi(31)).round() as i64;
        if significand == 1 << 31 {
            significand /= 2;
            shift += 1;
        }
        Ok(FixedPoint { significand, shift })
    }

    /// The integer steps of `x * multiplier`, `((x << left) * significand + round) >> right`
    /// in wrapping 64-bit arithmetic (`round` from [`FixedPoint::multiply`]'s rounding);
    /// `None` where the product is 0 whatever `x` (a right shift of 63 bits or more, a
    /// multiplier below about 2^-32, where TVM's shift is undefined; or a left shift of 64 or
    /// more). The reference kernels and the canonical forms both compute through them.
    pub(crate) fn steps(self) -> Option<Steps> {
        let (left, right) =
            if self.shift > 0 { (self.shift as u32, 0) } else { (0, self.shift.unsigned_abs()) };
        let right = right + 31;
        (left < 64 && right < 63).then_some(Steps { left, significand: self.significand, right })
    }

    /// `x * multiplier`, rounded as `rounding` says (`Unset` is TVM's default, `UPWARD`), in
    /// TVM's wrapping 64-bit arithmetic.
    pub(crate) fn multiply(self, x: i64, rounding: QnnRounding) -> i64 {
        let Some(s) = self.steps() else { return 0 };
        let product = x.wrapping_shl(s.left).wrapping_mul(s.significand);
        let round = if ties_away(rounding) && product < 0 { s.half() - 1 } else { s.half() };
        product.wrapping_add(round) >> s.right
    }
}

/// [`FixedPoint::steps`]: shift left by `left`, multiply by `significand`, add the rounding
/// (`half`, less 1 for a negative product under `TONEAREST`), shift right by `right` (in
/// `31..63`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Steps {
    pub(crate) left: u32,
    pub(crate) significand: i64,
    pub(crate) right: u32,
}

impl Steps {
    /// Half of the last step's divisor, `2^(right - 1)`: the rounding of a non-negative
    /// product.
    pub(crate) fn half(self) -> i64 {
        1 << (self.right - 1)
    }
}

/// Whether `rounding` takes a negative product's halves away from zero (`TONEAREST`: its
/// rounding is `half - 1`) rather than up (`UPWARD`, TVM's default).
pub(crate) fn ties_away(rounding: QnnRounding) -> bool {
    rounding == QnnRounding::ToNearest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frexp_is_cs() {
        assert_eq!(frexp(1.0), (0.5, 1));
        assert_eq!(frexp(0.75), (0.75, 0));
        assert_eq!(frexp(-3.0), (-0.75, 2));
        assert_eq!(frexp(f64::MIN_POSITIVE / 4.0), (0.5, -1023));
    }

    #[test]
    fn multipliers_and_roundings() {
        let one = FixedPoint::new(1.0).unwrap();
        assert_eq!(one, FixedPoint { significand: 1 << 30, shift: 1 });
        for x in [-7, 0, 5, i32::MAX as i64] {
            assert_eq!(one.multiply(x, QnnRounding::Upward), x);
            assert_eq!(one.multiply(x, QnnRounding::ToNearest), x);
        }
        let half = FixedPoint::new(0.5).unwrap();
        assert_eq!(half.multiply(5, QnnRounding::Upward), 3);
        assert_eq!(half.multiply(-5, QnnRounding::Upward), -2);
        assert_eq!(half.multiply(-5, QnnRounding::ToNearest), -3);
        assert_eq!(half.multiply(-5, QnnRounding::Unset), -2);
        assert_eq!(FixedPoint::new(0.0).unwrap().multiply(99, QnnRounding::Upward), 0);
        assert_eq!(FixedPoint::new(1e-30).unwrap().multiply(99, QnnRounding::Upward), 0);
        assert!(FixedPoint::new(f64::INFINITY).is_err());
    }
}
