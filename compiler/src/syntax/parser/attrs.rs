//! Keyword attributes of calls and functions: `padding=[1, 1]`, `Primitive=1`,
//! `out_dtype="float32"`, `axis=None`, `value=meta[relay.Constant][0]`.

use super::literal::{float_literal, int_literal};
use super::{PResult, Parser};
use crate::diagnostics::Diagnostic;
use crate::ir::{AttrValue, Attrs, Span};
use crate::syntax::token::{TokenKind as K, TokenValue};

impl Parser<'_> {
    /// `key=value, ...` up to (not including) `close`; a trailing comma is fine. Positional
    /// arguments may not follow.
    pub(super) fn parse_attrs(&mut self, close: K) -> PResult<Attrs> {
        let mut attrs: Vec<(crate::ir::Symbol, AttrValue)> = Vec::new();
        let mut spans: Vec<Span> = Vec::new();
        loop {
            if !self.at_attribute() {
                return Err(self.unexpected("an attribute `name=value` (positional arguments come first)"));
            }
            let (key, span) = self.dotted_name()?;
            self.bump();
            let value = self.parse_attr_value()?;
            let sym = self.sym(&key);
            if let Some(k) = attrs.iter().position(|(s, _)| *s == sym) {
                let d = Diagnostic::error(span, format!("duplicate attribute `{key}`"))
                    .with_label(spans[k], "first given here");
                self.report(d);
            }
            attrs.push((sym, value));
            spans.push(span);
            if !self.eat(K::Comma) || self.at(close) {
                return Ok(Attrs(attrs));
            }
        }
    }

    fn parse_attr_value(&mut self) -> PResult<AttrValue> {
        self.nested(Self::parse_attr_value_inner)
    }

    fn parse_attr_value_inner(&mut self) -> PResult<AttrValue> {
        match self.kind() {
            K::Minus | K::Int | K::Float => self.parse_attr_number(),
            K::True | K::False => Ok(AttrValue::Bool(self.bump_kind() == K::True)),
            K::Str => {
                let i = self.bump();
                match &self.tok(i).value {
                    TokenValue::Str(s) => Ok(AttrValue::Str(s.to_string())),
                    _ => Err(self.unexpected("a string")),
                }
            }
            K::LBracket => Ok(AttrValue::List(self.parse_attr_list(K::RBracket)?)),
            // TVM prints tuples of integers in parentheses; `(v)` is just `v`.
            K::LParen => {
                let mut items = self.parse_attr_list(K::RParen)?;
                Ok(if items.len() == 1 { items.remove(0) } else { AttrValue::List(items) })
            }
            K::Ident if matches!(self.peek().name(), "None" | "nullptr") => {
                self.bump();
                Ok(AttrValue::Null)
            }
            K::Ident if self.peek().name() == "meta" && self.nth(1) == K::LBracket => {
                let (index, _) = self.parse_meta_constant()?;
                Ok(AttrValue::Meta { kind: "relay.Constant".to_string(), index })
            }
            _ => Err(self.unexpected(
                "an attribute value (a number, string, `True`, `False`, list, `None` or `meta[...]`)",
            )),
        }
    }

    /// At an opening delimiter: values separated by commas, an optional trailing comma, `close`.
    fn parse_attr_list(&mut self, close: K) -> PResult<Vec<AttrValue>> {
        self.bump();
        let mut items = Vec::new();
        while !self.eat(close) {
            items.push(self.parse_attr_value()?);
            if !self.eat(K::Comma) {
                let what = if close == K::RParen { "`,` or `)`" } else { "`,` or `]`" };
                self.expect(close, what)?;
                break;
            }
        }
        Ok(items)
    }

    /// An integer or float, with any leading `-`s folded in.
    fn parse_attr_number(&mut self) -> PResult<AttrValue> {
        let lo = self.peek().lo;
        let mut negative = false;
        while self.eat(K::Minus) {
            negative = !negative;
        }
        if !matches!(self.kind(), K::Int | K::Float) {
            return Err(self.unexpected("a number after `-`"));
        }
        let i = self.bump();
        let value = match self.tok(i).value {
            TokenValue::Int(lit) => int_literal(lit, negative).map(|(v, _)| AttrValue::Int(v)),
            TokenValue::Float(lit) => float_literal(lit, negative).map(|(v, _)| AttrValue::Float(v)),
            _ => return Err(self.unexpected("a number")),
        };
        value.map_err(|why| {
            let span = self.span_from(lo);
            self.error(span, format!("attribute value {why}"))
        })
    }
}
