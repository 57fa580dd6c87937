//! Element arithmetic shared by the kernels, with the workspace's one set of integer rules
//! ([`relay_devices::arith`], which kir and the VM evaluate too): `+ - *` wrap, `divide`
//! truncates, `floor_divide`/`floor_mod` round toward negative infinity, and dividing by zero
//! gives 0 instead of undefined behaviour.
//!
//! Method names are distinct from the inherent methods of the primitive types (`abs`,
//! `signum`, which panic on overflow in debug builds) so that a call can never pick the
//! wrong one.

use relay_devices::arith::{eval_binary_as, BinOp};
use relay_devices::{Element, Scalar};
use std::ops::{Add, Div, Mul, Neg, Sub};

/// A numeric element type: every integer type and `f32`/`f64`.
pub trait Num: Element {
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// The smallest value (`-inf` for floats): what a padded max-pool position holds.
    const LOWEST: Self;

    /// `a + b`, wrapping for integers.
    fn add_wrapping(self, b: Self) -> Self;
    /// `a - b`, wrapping for integers.
    fn sub_wrapping(self, b: Self) -> Self;
    /// `a * b`, wrapping for integers.
    fn mul_wrapping(self, b: Self) -> Self;
    /// `-a`, wrapping for integers (so unsigned negation is `2^n - a`).
    fn neg_wrapping(self) -> Self;
    /// `|a|`, wrapping for integers (`|MIN| == MIN`).
    fn abs_wrapping(self) -> Self;
    /// -1, 0 or 1 (0 for `NaN`, as TVM's `select`-based `sign`).
    fn sign(self) -> Self;
    /// `a / b`: IEEE for floats, truncating for integers (`x / 0 == 0`).
    fn divide(self, b: Self) -> Self;
    /// `floor(a / b)` (integers: `x floordiv 0 == 0`).
    fn floor_divide(self, b: Self) -> Self;
    /// `a - floor(a / b) * b`, the sign following `b` (integers: `x floormod 0 == 0`).
    fn floor_mod(self, b: Self) -> Self;
}

/// A floating-point element type.
pub trait Float:
    Num + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self>
{
    /// e^x.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Gauss error function (libm's, accurate to about 1 ulp).
    fn erf(self) -> Self;
    /// Round toward negative infinity.
    fn floor(self) -> Self;
    /// Round toward positive infinity.
    fn ceil(self) -> Self;
    /// Round half away from zero (C `round`, which TVM's `round` lowers to).
    fn round(self) -> Self;
    /// `self ^ e`.
    fn powf(self, e: Self) -> Self;
}

/// `v` converted to `T` with `as`-cast semantics.
pub fn from_f64<T: Element>(v: f64) -> T {
    T::from_scalar(Scalar::Float(v))
}

/// `n` converted to `T` (a count used as a divisor).
pub fn from_usize<T: Element>(n: usize) -> T {
    T::from_scalar(Scalar::UInt(n as u64))
}

/// `x` converted to `U` with `as`-cast semantics.
pub fn cast<T: Element, U: Element>(x: T) -> U {
    U::from_scalar(x.to_scalar())
}

/// An integer division operator of the shared table on `T` (defined for every integer type,
/// so the fallback is never taken).
fn int_division<T: Element>(op: BinOp, a: T, b: T) -> T {
    eval_binary_as(op, a, b).unwrap_or_default()
}

macro_rules! int_num {
    ($($t:ty: $abs:expr, $sign:expr;)*) => {$(
        impl Num for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const LOWEST: Self = <$t>::MIN;
            fn add_wrapping(self, b: Self) -> Self {
                self.wrapping_add(b)
            }
            fn sub_wrapping(self, b: Self) -> Self {
                self.wrapping_sub(b)
            }
            fn mul_wrapping(self, b: Self) -> Self {
                self.wrapping_mul(b)
            }
            fn neg_wrapping(self) -> Self {
                self.wrapping_neg()
            }
            fn abs_wrapping(self) -> Self {
                let f: fn($t) -> $t = $abs;
                f(self)
            }
            fn sign(self) -> Self {
                let f: fn($t) -> $t = $sign;
                f(self)
            }
            fn divide(self, b: Self) -> Self {
                int_division(BinOp::Div, self, b)
            }
            fn floor_divide(self, b: Self) -> Self {
                int_division(BinOp::FloorDiv, self, b)
            }
            fn floor_mod(self, b: Self) -> Self {
                int_division(BinOp::FloorMod, self, b)
            }
        }
    )*};
}

int_num! {
    i8: |x| x.wrapping_abs(), |x| x.signum();
    i16: |x| x.wrapping_abs(), |x| x.signum();
    i32: |x| x.wrapping_abs(), |x| x.signum();
    i64: |x| x.wrapping_abs(), |x| x.signum();
    u8: |x| x, |x| u8::from(x > 0);
    u16: |x| x, |x| u16::from(x > 0);
    u32: |x| x, |x| u32::from(x > 0);
    u64: |x| x, |x| u64::from(x > 0);
}

macro_rules! float_num {
    ($($t:ident: $erf:path;)*) => {$(
        impl Num for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const LOWEST: Self = $t::NEG_INFINITY;
            fn add_wrapping(self, b: Self) -> Self {
                self + b
            }
            fn sub_wrapping(self, b: Self) -> Self {
                self - b
            }
            fn mul_wrapping(self, b: Self) -> Self {
                self * b
            }
            fn neg_wrapping(self) -> Self {
                -self
            }
            fn abs_wrapping(self) -> Self {
                $t::abs(self)
            }
            fn sign(self) -> Self {
                if self < 0.0 {
                    -1.0
                } else if self > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            fn divide(self, b: Self) -> Self {
                self / b
            }
            fn floor_divide(self, b: Self) -> Self {
                $t::floor(self / b)
            }
            fn floor_mod(self, b: Self) -> Self {
                self - $t::floor(self / b) * b
            }
        }

        impl Float for $t {
            fn exp(self) -> Self {
                $t::exp(self)
            }
            fn ln(self) -> Self {
                $t::ln(self)
            }
            fn sqrt(self) -> Self {
                $t::sqrt(self)
            }
            fn tanh(self) -> Self {
                $t::tanh(self)
            }
            fn erf(self) -> Self {
                $erf(self)
            }
            fn floor(self) -> Self {
                $t::floor(self)
            }
            fn ceil(self) -> Self {
                $t::ceil(self)
            }
            fn round(self) -> Self {
                $t::round(self)
            }
            fn powf(self, e: Self) -> Self {
                $t::powf(self, e)
            }
        }
    )*};
}

float_num! {
    f32: libm::erff;
    f64: libm::erf;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_division_rounds_like_tvm() {
        assert_eq!(7i32.divide(-2), -3);
        assert_eq!(7i32.floor_divide(-2), -4);
        assert_eq!(7i32.floor_mod(-2), -1);
        assert_eq!((-7i64).floor_mod(3), 2);
        assert_eq!(6i8.floor_divide(-3), -2);
        assert_eq!(7u8.floor_mod(3), 1);
        assert_eq!(i32::MIN.divide(-1), i32::MIN);
        assert_eq!((1u16.divide(0), (-5i8).floor_divide(0), 5u64.floor_mod(0)), (0, 0, 0));
    }

    /// Every integer rule the kernels implement agrees with the shared table (which kir's
    /// interpreter and the VM evaluate) on the edge cases: 0 divisors, `MIN / -1`, overflow.
    #[test]
    fn integer_rules_are_the_shared_table() {
        fn check<T: Num + std::fmt::Debug>(values: &[T]) {
            for &a in values {
                for &b in values {
                    let table = |op| eval_binary_as(op, a, b).unwrap();
                    assert_eq!(a.add_wrapping(b), table(BinOp::Add), "{a:?} + {b:?}");
                    assert_eq!(a.sub_wrapping(b), table(BinOp::Sub), "{a:?} - {b:?}");
                    assert_eq!(a.mul_wrapping(b), table(BinOp::Mul), "{a:?} * {b:?}");
                    assert_eq!(a.divide(b), table(BinOp::Div), "{a:?} / {b:?}");
                    assert_eq!(a.floor_divide(b), table(BinOp::FloorDiv), "{a:?} floordiv {b:?}");
                    assert_eq!(a.floor_mod(b), table(BinOp::FloorMod), "{a:?} floormod {b:?}");
                }
            }
        }
        check(&[0i8, 1, -1, 7, -7, i8::MAX, i8::MIN]);
        check(&[0i32, 1, -1, 3, -3, i32::MAX, i32::MIN]);
        check(&[0i64, 1, -1, 5, -5, i64::MAX, i64::MIN]);
        check(&[0u8, 1, 3, u8::MAX]);
        check(&[0u64, 1, 3, u64::MAX]);
    }

    #[test]
    fn wrapping_and_signs() {
        assert_eq!(i8::MIN.abs_wrapping(), i8::MIN);
        assert_eq!(3u8.neg_wrapping(), 253);
        assert_eq!((-5i16).sign(), -1);
        assert_eq!(f32::NAN.sign(), 0.0);
        assert_eq!(Float::round(-2.5f64), -3.0);
        assert_eq!(cast::<f32, i8>(-1.9), -1);
        assert_eq!(from_usize::<f64>(3), 3.0);
    }
}
