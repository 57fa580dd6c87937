//! Element arithmetic shared by the kernels, with TVM's integer semantics: `+ - *` wrap,
//! `divide` truncates, `floor_divide`/`floor_mod` round toward negative infinity, and dividing
//! by zero is an error instead of undefined behaviour.
//!
//! Method names are distinct from the inherent methods of the primitive types (`abs`,
//! `signum`, which panic on overflow in debug builds) so that a call can never pick the
//! wrong one.

use crate::error::KernelError;
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
    /// `a / b`: IEEE for floats, truncating for integers.
    fn div_checked(self, b: Self) -> Result<Self, KernelError>;
    /// `floor(a / b)`.
    fn floor_div_checked(self, b: Self) -> Result<Self, KernelError>;
    /// `a - floor(a / b) * b` (the sign follows `b`).
    fn floor_mod_checked(self, b: Self) -> Result<Self, KernelError>;
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
            fn div_checked(self, b: Self) -> Result<Self, KernelError> {
                if b == 0 {
                    return Err(KernelError::DivisionByZero);
                }
                Ok(self.wrapping_div(b))
            }
            fn floor_div_checked(self, b: Self) -> Result<Self, KernelError> {
                let q = self.div_checked(b)?;
                // Truncation rounded toward zero; step down when the exact quotient was negative
                // and inexact (operands of opposite signs, which unsigned ones never are).
                let inexact = q.wrapping_mul(b) != self;
                Ok(if inexact && self.sign() != b.sign() { q.wrapping_sub(1) } else { q })
            }
            fn floor_mod_checked(self, b: Self) -> Result<Self, KernelError> {
                let q = self.floor_div_checked(b)?;
                Ok(self.wrapping_sub(q.wrapping_mul(b)))
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
            fn div_checked(self, b: Self) -> Result<Self, KernelError> {
                Ok(self / b)
            }
            fn floor_div_checked(self, b: Self) -> Result<Self, KernelError> {
                Ok($t::floor(self / b))
            }
            fn floor_mod_checked(self, b: Self) -> Result<Self, KernelError> {
                Ok(self - $t::floor(self / b) * b)
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
        assert_eq!(7i32.div_checked(-2), Ok(-3));
        assert_eq!(7i32.floor_div_checked(-2), Ok(-4));
        assert_eq!(7i32.floor_mod_checked(-2), Ok(-1));
        assert_eq!((-7i64).floor_mod_checked(3), Ok(2));
        assert_eq!(6i8.floor_div_checked(-3), Ok(-2));
        assert_eq!(7u8.floor_mod_checked(3), Ok(1));
        assert_eq!(i32::MIN.div_checked(-1), Ok(i32::MIN));
        assert_eq!(1u16.div_checked(0), Err(KernelError::DivisionByZero));
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
