//! Types, literals, constants and attributes.

use super::{Hole, Printer};
use crate::ir::{AttrValue, Attrs, Dim, Literal, LiteralValue, TypeId, TypeKind};
use crate::stack::grow;
use relay_devices::{DType, DTypeCode};
use std::fmt::Write;

/// The metadata kind of tensor constants, the only one the parser reads.
const CONSTANT_KIND: &str = "relay.Constant";

/// The shortest text that reads back as `v`, without a suffix: `1`, `1.5`, `1e-7`, `inf`,
/// `-inf`, `nan`.
fn float_text(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        // `{:?}` is the shortest round-tripping form and switches to an exponent for very
        // large and small magnitudes, where `{}` would print hundreds of digits.
        let s = format!("{v:?}");
        s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
    }
}

/// The suffix of a float literal of type `dtype`: `f` (float32), `f16`, `bf16`, `f64`.
fn float_suffix(dtype: DType) -> &'static str {
    match (dtype.code, dtype.bits) {
        (DTypeCode::BFloat, _) => "bf16",
        (_, 16) => "f16",
        (_, 64) => "f64",
        _ => "f",
    }
}

/// The text of a scalar literal: `1`, `-5`, `1i64`, `1i16`, `1i8`, `1u8`, `1f`, `1.5f16`,
/// `-inff`, `True`.
fn literal_text(lit: &Literal) -> String {
    let d = lit.dtype;
    match lit.value {
        LiteralValue::Bool(b) => bool_text(b).into(),
        LiteralValue::Int(v) => match d.code {
            DTypeCode::Int if d.bits == 32 => v.to_string(),
            DTypeCode::Int => format!("{v}i{}", d.bits),
            DTypeCode::UInt => format!("{v}u{}", d.bits),
            DTypeCode::Float | DTypeCode::BFloat => format!("{}{}", float_text(v as f64), float_suffix(d)),
            DTypeCode::Bool => bool_text(v != 0).into(),
        },
        LiteralValue::Float(v) => format!("{}{}", float_text(v), float_suffix(d)),
    }
}

fn bool_text(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// `s` as a double-quoted string literal with the escapes the lexer knows (`\"`, `\\`, `\n`,
/// `\r`, `\t`); every other character stands for itself.
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\r' => q.push_str("\\r"),
            '\t' => q.push_str("\\t"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

impl Printer<'_> {
    /// Prints a type.
    pub(super) fn ty(&mut self, t: TypeId) {
        grow(|| self.ty_inner(t))
    }

    fn ty_inner(&mut self, t: TypeId) {
        let m = self.m;
        match m.types.kind(t) {
            TypeKind::Tensor { shape, dtype } if shape.is_empty() => {
                let _ = write!(self.out.text, "{dtype}");
            }
            TypeKind::Tensor { shape, dtype } => {
                self.w("Tensor[(");
                self.comma_list(shape, |p, d| match d {
                    Dim::Known(n) => {
                        let _ = write!(p.out.text, "{n}");
                    }
                    Dim::Any => p.w("?"),
                });
                let _ = write!(self.out.text, "), {dtype}]");
            }
            TypeKind::Tuple(fields) => {
                self.w("(");
                self.comma_list(fields, Self::ty);
                self.w(if fields.len() == 1 { ",)" } else { ")" });
            }
            TypeKind::Func { type_params, params, ret } => {
                self.w("fn ");
                self.bind_type_params(type_params);
                self.w("(");
                self.comma_list(params, Self::ty);
                self.w(") -> ");
                self.ty(*ret);
                self.unbind_type_params(type_params);
            }
            TypeKind::Param(p) => {
                self.tparams.use_id(*p, m.name(m.type_params[p.index()].name));
                self.hole(Hole::TypeParam(*p));
            }
            TypeKind::Adt { name, args } => {
                self.w(m.name(*name));
                if !args.is_empty() {
                    self.w("[");
                    self.comma_list(args, Self::ty);
                    self.w("]");
                }
            }
            TypeKind::Ref(inner) => {
                self.w("ref(");
                self.ty(*inner);
                self.w(")");
            }
            TypeKind::Hole => self.w("_"),
        }
    }

    pub(super) fn literal(&mut self, lit: &Literal) {
        self.w(&literal_text(lit));
    }

    /// `meta[relay.Constant][i]`, renumbered when printing a module.
    pub(super) fn constant(&mut self, index: u32) {
        let i = self.meta.as_mut().map_or(index, |meta| meta.number(index));
        let _ = write!(self.out.text, "meta[{CONSTANT_KIND}][{i}]");
    }

    /// Prints `key=value, ...`, preceded by `, ` when `after_items`.
    pub(super) fn attrs(&mut self, attrs: &Attrs, after_items: bool) {
        for (i, (key, value)) in attrs.0.iter().enumerate() {
            if after_items || i > 0 {
                self.w(", ");
            }
            self.w(self.m.name(*key));
            self.w("=");
            self.attr_value(value);
        }
    }

    fn attr_value(&mut self, value: &AttrValue) {
        grow(|| match value {
            AttrValue::Int(i) => self.w(&i.to_string()),
            // The suffix keeps an integral float a float when read back; `f` is float32,
            // whose range the parser checks.
            AttrValue::Float(f) => {
                let suffix = if f.is_finite() && f.abs() > f64::from(f32::MAX) { "f64" } else { "f" };
                self.w(&format!("{}{suffix}", float_text(*f)));
            }
            AttrValue::Bool(b) => self.w(bool_text(*b)),
            AttrValue::Str(s) => self.w(&quote(s)),
            AttrValue::List(items) => {
                self.w("[");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.w(", ");
                    }
                    self.attr_value(item);
                }
                self.w("]");
            }
            AttrValue::Null => self.w("None"),
            AttrValue::Meta { kind, index } if kind == CONSTANT_KIND => self.constant(*index),
            AttrValue::Meta { kind, index } => self.w(&format!("meta[{kind}][{index}]")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(value: LiteralValue, dtype: DType) -> String {
        literal_text(&Literal { value, dtype })
    }

    #[test]
    fn literals_carry_their_dtype() {
        assert_eq!(lit(LiteralValue::Int(-5), DType::I32), "-5");
        assert_eq!(lit(LiteralValue::Int(1), DType::I64), "1i64");
        assert_eq!(lit(LiteralValue::Int(1), DType::I16), "1i16");
        assert_eq!(lit(LiteralValue::Int(1), DType::I8), "1i8");
        assert_eq!(lit(LiteralValue::Int(7), DType::U8), "7u8");
        assert_eq!(lit(LiteralValue::Float(1.0), DType::F32), "1f");
        assert_eq!(lit(LiteralValue::Float(1.5), DType::F16), "1.5f16");
        assert_eq!(lit(LiteralValue::Float(-2.5), DType::BF16), "-2.5bf16");
        assert_eq!(lit(LiteralValue::Float(-0.25), DType::F64), "-0.25f64");
        assert_eq!(lit(LiteralValue::Float(1e-7), DType::F32), "1e-7f");
        assert_eq!(lit(LiteralValue::Float(1e300), DType::F64), "1e300f64");
        assert_eq!(lit(LiteralValue::Float(f64::INFINITY), DType::F32), "inff");
        assert_eq!(lit(LiteralValue::Float(f64::NEG_INFINITY), DType::F16), "-inff16");
        assert_eq!(lit(LiteralValue::Bool(true), DType::BOOL), "True");
    }

    #[test]
    fn floats_print_shortest_round_trip() {
        for v in [0.1, 1.0 / 3.0, 1e-5, 5e-324, f64::MAX, 123456789.0, -0.0] {
            let text = float_text(v);
            assert_eq!(text.parse::<f64>().unwrap().to_bits(), v.to_bits(), "{text}");
        }
        assert_eq!(float_text(123456789.0), "123456789");
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(quote("a\"b\\c\nd"), r#""a\"b\\c\nd""#);
        assert_eq!(quote("\u{1}é"), "\"\u{1}é\"");
    }
}
