//! Scalar and vector element types, named as TVM names them (`float32`, `int8`, `bool`,
//! `float32x4`).

use std::fmt;
use std::str::FromStr;

/// The kind of number an element holds. The discriminants are the codes the executable format
/// writes; `BFloat` is DLPack's code 4 (the others are this project's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DTypeCode {
    /// Two's-complement signed integer.
    Int = 0,
    /// Unsigned integer.
    UInt = 1,
    /// IEEE-754 binary floating point.
    Float = 2,
    /// Truth value, one byte per element in memory.
    Bool = 3,
    /// Brain floating point (`bfloat16`): the top 16 bits of an IEEE binary32, with its 8-bit
    /// exponent and a 7-bit mantissa (DLPack's `kDLBfloat`, code 4; TVM's `bfloat16`).
    BFloat = 4,
}

/// An element type: code, bit width and vector lanes (`float32x4` has 4 lanes of 32 bits).
///
/// Only the widths TVM's text format names are accepted by [`DType::from_str`]:
/// `int8/16/32/64`, `uint8/16/32/64`, `float16/32/64`, `bfloat16`, `bool`, each optionally followed by
/// `xN` lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DType {
    /// The kind of number.
    pub code: DTypeCode,
    /// Bits per lane (1 for `bool`, stored as one byte).
    pub bits: u8,
    /// Vector lanes; 1 for scalars.
    pub lanes: u16,
}

impl DType {
    /// `float32`, the default element type of Relay literals such as `1f`.
    pub const F32: DType = DType::scalar(DTypeCode::Float, 32);
    /// `float16`.
    pub const F16: DType = DType::scalar(DTypeCode::Float, 16);
    /// `bfloat16`.
    pub const BF16: DType = DType::scalar(DTypeCode::BFloat, 16);
    /// `float64`.
    pub const F64: DType = DType::scalar(DTypeCode::Float, 64);
    /// `int8`.
    pub const I8: DType = DType::scalar(DTypeCode::Int, 8);
    /// `int16`.
    pub const I16: DType = DType::scalar(DTypeCode::Int, 16);
    /// `int32`, the type of unsuffixed integer literals that fit in 32 bits.
    pub const I32: DType = DType::scalar(DTypeCode::Int, 32);
    /// `int64`.
    pub const I64: DType = DType::scalar(DTypeCode::Int, 64);
    /// `uint8`.
    pub const U8: DType = DType::scalar(DTypeCode::UInt, 8);
    /// `uint16`.
    pub const U16: DType = DType::scalar(DTypeCode::UInt, 16);
    /// `uint32`.
    pub const U32: DType = DType::scalar(DTypeCode::UInt, 32);
    /// `uint64`.
    pub const U64: DType = DType::scalar(DTypeCode::UInt, 64);
    /// `bool`.
    pub const BOOL: DType = DType::scalar(DTypeCode::Bool, 1);

    /// A one-lane type.
    pub const fn scalar(code: DTypeCode, bits: u8) -> DType {
        DType { code, bits, lanes: 1 }
    }

    /// Bytes one element occupies in memory (`bool` takes a whole byte).
    pub fn size_bytes(self) -> usize {
        (self.bits as usize).div_ceil(8) * self.lanes as usize
    }

    /// Whether this is a floating-point type: IEEE binary (`float16/32/64`) or `bfloat16`.
    pub fn is_float(self) -> bool {
        matches!(self.code, DTypeCode::Float | DTypeCode::BFloat)
    }

    /// Whether this is a 16-bit float (`float16` or `bfloat16`) at one lane: stored in 16 bits,
    /// computed in `float32` and rounded once per operation, as TVM's CPU target legalises them.
    pub fn is_half_float(self) -> bool {
        self == DType::F16 || self == DType::BF16
    }

    /// Whether this is a signed or unsigned integer type.
    pub fn is_int(self) -> bool {
        matches!(self.code, DTypeCode::Int | DTypeCode::UInt)
    }
}

/// `float32`, the dtype Relay assumes when none is written (`1f`, `zeros(..)` without `dtype`).
impl Default for DType {
    fn default() -> Self {
        DType::F32
    }
}

/// Returned by [`DType::from_str`] for a name that is not a dtype.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dtype `{0}`")]
pub struct ParseDTypeError(pub String);

impl FromStr for DType {
    type Err = ParseDTypeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseDTypeError(s.to_string());
        let (base, lanes) = match s.rfind('x') {
            Some(i) if i > 0 && s[i + 1..].bytes().all(|b| b.is_ascii_digit()) => {
                let lanes: u16 = s[i + 1..].parse().map_err(|_| err())?;
                if lanes < 2 {
                    return Err(err());
                }
                (&s[..i], lanes)
            }
            _ => (s, 1),
        };
        let (code, bits) = match base {
            // TVM's boolean is the 1-bit unsigned integer, which it also spells `uint1`.
            "bool" | "uint1" => (DTypeCode::Bool, 1),
            "bfloat16" => (DTypeCode::BFloat, 16),
            _ => {
                let (code, digits) = if let Some(d) = base.strip_prefix("uint") {
                    (DTypeCode::UInt, d)
                } else if let Some(d) = base.strip_prefix("int") {
                    (DTypeCode::Int, d)
                } else if let Some(d) = base.strip_prefix("float") {
                    (DTypeCode::Float, d)
                } else {
                    return Err(err());
                };
                let bits: u8 = digits.parse().map_err(|_| err())?;
                let ok = match code {
                    DTypeCode::Float => matches!(bits, 16 | 32 | 64),
                    _ => matches!(bits, 8 | 16 | 32 | 64),
                };
                if !ok {
                    return Err(err());
                }
                (code, bits)
            }
        };
        Ok(DType { code, bits, lanes })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            DTypeCode::Bool => f.write_str("bool")?,
            DTypeCode::Int => write!(f, "int{}", self.bits)?,
            DTypeCode::UInt => write!(f, "uint{}", self.bits)?,
            DTypeCode::Float => write!(f, "float{}", self.bits)?,
            DTypeCode::BFloat => write!(f, "bfloat{}", self.bits)?,
        }
        if self.lanes != 1 {
            write!(f, "x{}", self.lanes)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in [
            "float32",
            "float16",
            "bfloat16",
            "float64",
            "int8",
            "int64",
            "uint8",
            "bool",
            "float32x4",
            "int8x16",
        ] {
            let d: DType = name.parse().unwrap();
            assert_eq!(d.to_string(), name);
        }
    }

    #[test]
    fn rejects_non_dtypes() {
        for name in [
            "float",
            "int7",
            "float8",
            "x4",
            "float32x",
            "float32x1",
            "List",
            "int1",
            "uint2",
            "bfloat32",
            "bfloat",
        ] {
            assert!(name.parse::<DType>().is_err(), "{name}");
        }
    }

    #[test]
    fn uint1_is_tvms_bool() {
        assert_eq!("uint1".parse::<DType>(), Ok(DType::BOOL));
        assert_eq!("uint1x4".parse::<DType>().map(|d| d.to_string()), Ok("boolx4".to_string()));
    }

    #[test]
    fn bfloat16_is_a_half_float_of_its_own_code() {
        let b: DType = "bfloat16".parse().unwrap();
        assert_eq!((b, b.size_bytes(), b.is_float(), b.is_half_float()), (DType::BF16, 2, true, true));
        assert_ne!(b, DType::F16);
        assert!(!DType::F32.is_half_float());
    }

    #[test]
    fn sizes() {
        assert_eq!(DType::BOOL.size_bytes(), 1);
        assert_eq!("float32x4".parse::<DType>().unwrap().size_bytes(), 16);
    }
}
