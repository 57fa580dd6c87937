//! The dtype sets an operator family accepts (`floats`, `nums`, ...), named once for the
//! dtype rule, its error message and `relay-vm ops`; each set has a dispatch macro of the same
//! name in `crate::kernels::util` that instantiates a kernel body per element type.

use crate::error::KernelError;
use relay_devices::{DType, DTypeCode};

/// A set of element types an operator's operands may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DTypeSet {
    /// `float16`, `bfloat16`, `float32`, `float64`.
    Floats,
    /// Every integer and float type.
    Nums,
    /// Every integer type.
    Ints,
    /// Every integer type and `bool`.
    IntsBools,
    /// `bool` alone.
    Bools,
    /// Every type a tensor can hold.
    Any,
}

impl DTypeSet {
    /// Whether `d` (one lane) is in the set.
    pub fn contains(self, d: DType) -> bool {
        let int = matches!(d.code, DTypeCode::Int | DTypeCode::UInt) && [8, 16, 32, 64].contains(&d.bits);
        let float = d.is_half_float() || d.code == DTypeCode::Float && [32, 64].contains(&d.bits);
        let bool = d == DType::BOOL;
        d.lanes == 1
            && match self {
                DTypeSet::Floats => float,
                DTypeSet::Nums => int || float,
                DTypeSet::Ints => int,
                DTypeSet::IntsBools => int || bool,
                DTypeSet::Bools => bool,
                DTypeSet::Any => int || float || bool,
            }
    }

    /// The set in words, for messages and listings.
    pub fn describe(self) -> &'static str {
        match self {
            DTypeSet::Floats => "floating-point",
            DTypeSet::Nums => "numeric",
            DTypeSet::Ints => "integer",
            DTypeSet::IntsBools => "integer or bool",
            DTypeSet::Bools => "bool",
            DTypeSet::Any => "any",
        }
    }

    /// `d` if it is in the set.
    ///
    /// # Errors
    /// [`KernelError::DType`] saying what the operator expects.
    pub fn check(self, d: DType) -> Result<DType, KernelError> {
        if self.contains(d) {
            Ok(d)
        } else {
            Err(KernelError::DType(format!("expects a {} tensor, found `{d}`", self.describe())))
        }
    }
}

/// The [`DTypeSet`] of a dispatch macro's name (`dtype_set!(floats)`).
macro_rules! dtype_set {
    (floats) => {
        $crate::operator::DTypeSet::Floats
    };
    (nums) => {
        $crate::operator::DTypeSet::Nums
    };
    (ints) => {
        $crate::operator::DTypeSet::Ints
    };
    (ints_bools) => {
        $crate::operator::DTypeSet::IntsBools
    };
    (bools) => {
        $crate::operator::DTypeSet::Bools
    };
    (any_type) => {
        $crate::operator::DTypeSet::Any
    };
}

pub(crate) use dtype_set;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_messages() {
        assert!(DTypeSet::Floats.contains(DType::F32) && !DTypeSet::Floats.contains(DType::I32));
        assert!(DTypeSet::IntsBools.contains(DType::BOOL) && DTypeSet::IntsBools.contains(DType::U8));
        assert!(!DTypeSet::Nums.contains(DType::BOOL));
        let err = DTypeSet::Floats.check(DType::I32).unwrap_err();
        assert_eq!(err.to_string(), "dtype error: expects a floating-point tensor, found `int32`");
    }
}
