//! Numeric literals: folding a leading `-`, choosing the dtype and checking the range.

use super::{PResult, Parser};
use crate::ir::{ExprId, ExprKind, Literal, LiteralValue};
use crate::syntax::token::{FloatLit, IntLit, TokenKind, TokenValue};
use relay_devices::{DType, DTypeCode};

/// The value of an integer literal with its sign, as TVM types it: the suffix's dtype, else
/// int32, else int64 when the value does not fit int32.
pub(super) fn int_literal(lit: IntLit, negative: bool) -> Result<(i64, DType), String> {
    let value = if negative { -i128::from(lit.magnitude) } else { i128::from(lit.magnitude) };
    let dtype = match lit.dtype {
        Some(d) => d,
        None if i32::try_from(value).is_ok() => DType::I32,
        None => DType::I64,
    };
    let (min, max) = match dtype.code {
        DTypeCode::UInt => (0, (1i128 << dtype.bits) - 1),
        _ => (-(1i128 << (dtype.bits - 1)), (1i128 << (dtype.bits - 1)) - 1),
    };
    // `LiteralValue::Int` is an i64, so uint64 literals stop at i64::MAX.
    let max = max.min(i128::from(i64::MAX));
    if value < min || value > max {
        return Err(format!("does not fit in {dtype}"));
    }
    Ok((value as i64, dtype))
}

/// The value of a float literal with its sign; finite values must fit the dtype.
pub(super) fn float_literal(lit: FloatLit, negative: bool) -> Result<(f64, DType), String> {
    let value = if negative { -lit.magnitude } else { lit.magnitude };
    let max = match (lit.dtype.code, lit.dtype.bits) {
        (DTypeCode::BFloat, _) => half::bf16::MAX.to_f64(),
        (_, 16) => 65504.0,
        (_, 32) => f64::from(f32::MAX),
        _ => f64::MAX,
    };
    if value.is_finite() && value.abs() > max {
        return Err(format!("does not fit in {}", lit.dtype));
    }
    Ok((value, lit.dtype))
}

impl Parser<'_> {
    /// A numeric literal token at the current position, negated if `negative`; `lo` is where
    /// the literal (including any `-`) starts.
    pub(super) fn parse_number(&mut self, negative: bool, lo: u32) -> PResult<ExprId> {
        let i = self.bump();
        let checked = match self.tok(i).value {
            TokenValue::Int(lit) => {
                int_literal(lit, negative).map(|(v, dtype)| Literal { value: LiteralValue::Int(v), dtype })
            }
            TokenValue::Float(lit) => float_literal(lit, negative)
                .map(|(v, dtype)| Literal { value: LiteralValue::Float(v), dtype }),
            _ => return Err(self.unexpected("a number")),
        };
        let span = self.span_from(lo);
        match checked {
            Ok(lit) => Ok(self.module.add_expr(ExprKind::Literal(lit), span)),
            Err(why) => {
                let t = self.tok(i);
                let text = &self.text[t.lo as usize..t.hi as usize];
                let sign = if negative { "-" } else { "" };
                let msg = format!("literal `{sign}{text}` {why}");
                Err(self.error(span, msg))
            }
        }
    }

    /// `True` or `False`.
    pub(super) fn parse_bool(&mut self) -> ExprId {
        let i = self.bump();
        let value = self.tok(i).kind == TokenKind::True;
        let lit = Literal { value: LiteralValue::Bool(value), dtype: DType::BOOL };
        let span = self.tok_span(i);
        self.module.add_expr(ExprKind::Literal(lit), span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(magnitude: u64, dtype: Option<DType>, negative: bool) -> Result<(i64, DType), String> {
        int_literal(IntLit { magnitude, dtype }, negative)
    }

    #[test]
    fn integer_types_and_ranges() {
        assert_eq!(int(5, None, true), Ok((-5, DType::I32)));
        assert_eq!(int(2147483647, None, false), Ok((2147483647, DType::I32)));
        assert_eq!(int(2147483648, None, false), Ok((2147483648, DType::I64)));
        assert_eq!(int(2147483648, None, true), Ok((-2147483648, DType::I32)));
        assert_eq!(int(1 << 63, None, true), Ok((i64::MIN, DType::I64)));
        assert!(int(1 << 63, None, false).is_err());
        assert_eq!(int(1, Some(DType::I64), false), Ok((1, DType::I64)));
        assert_eq!(int(127, Some(DType::I8), false), Ok((127, DType::I8)));
        assert!(int(128, Some(DType::I8), false).is_err());
        assert_eq!(int(128, Some(DType::I8), true), Ok((-128, DType::I8)));
        assert!(int(1, Some(DType::U8), true).is_err());
        assert_eq!(int(255, Some(DType::U8), false), Ok((255, DType::U8)));
    }

    #[test]
    fn float_ranges() {
        let f = |magnitude, dtype| float_literal(FloatLit { magnitude, dtype }, true);
        assert_eq!(f(1.5, DType::F32), Ok((-1.5, DType::F32)));
        assert_eq!(f(f64::INFINITY, DType::F32), Ok((f64::NEG_INFINITY, DType::F32)));
        assert!(f(70000.0, DType::F16).is_err());
        assert!(f(70000.0, DType::BF16).is_ok() && f(3.4e38, DType::BF16).is_err());
        assert!(f(1e39, DType::F32).is_err());
        assert!(f(1e39, DType::F64).is_ok());
    }
}
