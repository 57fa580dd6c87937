//! Types: `Tensor[(1, ?), float32]`, dtypes, tuples, `fn [A](A) -> A`, `ref(T)`, `_`, type
//! parameters and ADT applications `List[Tree[A]]`.

use super::{PResult, Parser};
use crate::diagnostics::suggest::closest;
use crate::diagnostics::Diagnostic;
use crate::ir::{Dim, TypeId, TypeKind, TypeParamId};
use crate::syntax::resolve::{AdtUse, DTYPE_NAMES};
use crate::syntax::token::{TokenKind as K, TokenValue};
use relay_devices::DType;

/// Whether `name` is spelt like a dtype (`float32`, `int8x4`, `float31`): a name TVM would
/// take as a dtype, so a failure to parse it is an unknown dtype rather than an unknown ADT.
fn looks_like_dtype(name: &str) -> bool {
    let rest = ["uint", "int", "float", "bool"].iter().find_map(|p| name.strip_prefix(p));
    rest.is_some_and(|r| r.chars().all(|c| c.is_ascii_digit() || c == 'x'))
}

impl Parser<'_> {
    /// One type.
    pub(super) fn parse_type(&mut self) -> PResult<TypeId> {
        self.nested(Self::parse_type_inner)
    }

    fn parse_type_inner(&mut self) -> PResult<TypeId> {
        let kind = match self.kind() {
            K::LParen => {
                let fields = self.parse_type_list(K::RParen)?;
                TypeKind::Tuple(fields)
            }
            K::Fn => {
                self.bump();
                let mark = self.type_params.mark();
                let result = self.parse_func_type();
                self.type_params.restore(mark);
                result?
            }
            K::Ref => {
                self.bump();
                self.expect(K::LParen, "`(` after `ref`")?;
                let inner = self.parse_type()?;
                self.expect(K::RParen, "`)`")?;
                TypeKind::Ref(inner)
            }
            K::Underscore => {
                self.bump();
                TypeKind::Hole
            }
            K::Ident => self.parse_named_type()?,
            _ => return Err(self.unexpected("a type")),
        };
        Ok(self.module.types.intern(kind))
    }

    /// `[A, B]` after `fn`: the parameters, then `(T, ...) -> R`.
    fn parse_func_type(&mut self) -> PResult<TypeKind> {
        let type_params = if self.at(K::LBracket) { self.parse_type_params()? } else { vec![] };
        let params = self.parse_type_list(K::RParen)?;
        self.expect(K::Arrow, "`->` and the return type")?;
        let ret = self.parse_type()?;
        Ok(TypeKind::Func { type_params, params, ret })
    }

    /// At an opening delimiter: `T, T, ... close` with an optional trailing comma.
    pub(super) fn parse_type_list(&mut self, close: K) -> PResult<Vec<TypeId>> {
        self.bump();
        let mut types = Vec::new();
        while !self.eat(close) {
            types.push(self.parse_type()?);
            if !self.eat(K::Comma) {
                let what = if close == K::RParen { "`,` or `)`" } else { "`,` or `]`" };
                self.expect(close, what)?;
                break;
            }
        }
        Ok(types)
    }

    /// `Tensor[...]`, a type parameter, a dtype or an ADT application.
    fn parse_named_type(&mut self) -> PResult<TypeKind> {
        let i = self.bump();
        let text = self.tok(i).name().to_string();
        let name_span = self.tok_span(i);
        if text == "Tensor" {
            self.expect(K::LBracket, "`[` after `Tensor`")?;
            let shape = self.parse_shape()?;
            self.expect(K::Comma, "`,` and the dtype")?;
            let dtype = self.parse_dtype()?;
            self.expect(K::RBracket, "`]`")?;
            return Ok(TypeKind::Tensor { shape, dtype });
        }
        let sym = self.sym(&text);
        if let Some(p) = self.type_params.get(&sym) {
            if self.at(K::LBracket) {
                let span = self.tok_span(self.pos);
                return Err(self.error(span, format!("type parameter `{text}` takes no type arguments")));
            }
            return Ok(TypeKind::Param(p));
        }
        if let Ok(dtype) = text.parse::<DType>() {
            return Ok(TypeKind::Tensor { shape: vec![], dtype });
        }
        if looks_like_dtype(&text) {
            return Err(self.unknown_dtype(&text, name_span));
        }
        let args = if self.at(K::LBracket) { self.parse_type_list(K::RBracket)? } else { vec![] };
        let span = self.span_from(name_span.lo);
        self.unresolved.adts.push(AdtUse { name: sym, arity: args.len(), span });
        Ok(TypeKind::Adt { name: sym, args })
    }

    fn unknown_dtype(&mut self, text: &str, span: crate::ir::Span) -> super::Abort {
        let mut d = Diagnostic::error(span, format!("unknown dtype `{text}`"));
        if let Some(s) = closest(text, DTYPE_NAMES.iter().copied()) {
            d = d.with_note(format!("help: did you mean `{s}`?"));
        }
        self.report(d);
        super::Abort
    }

    /// `(d, ...)` with `d` a non-negative integer, `?` or TVM's `meta[tir.SizeVar][i]`.
    fn parse_shape(&mut self) -> PResult<Vec<Dim>> {
        self.expect(K::LParen, "a shape `(d0, d1, ...)`")?;
        let mut dims = Vec::new();
        while !self.eat(K::RParen) {
            if self.eat(K::Question) {
                dims.push(Dim::Any);
            } else if self.peek().kind == K::Ident
                && self.peek().name() == "meta"
                && self.nth(1) == K::LBracket
            {
                self.parse_meta_dim()?;
                dims.push(Dim::Any);
            } else {
                let i = self.expect(K::Int, "a dimension (an integer or `?`)")?;
                let size = match self.tok(i).value {
                    TokenValue::Int(lit) if lit.dtype.is_none_or(|d| d.is_int()) => {
                        i64::try_from(lit.magnitude).ok()
                    }
                    _ => None,
                };
                let Some(size) = size else {
                    let span = self.tok_span(i);
                    return Err(self.error(span, "dimension is too large"));
                };
                dims.push(Dim::Known(size));
            }
            if !self.eat(K::Comma) {
                self.expect(K::RParen, "`,` or `)`")?;
                break;
            }
        }
        Ok(dims)
    }

    fn parse_dtype(&mut self) -> PResult<DType> {
        let i = self.expect(K::Ident, "a dtype such as `float32`")?;
        let text = self.tok(i).name().to_string();
        match text.parse::<DType>() {
            Ok(d) => Ok(d),
            Err(_) => {
                let span = self.tok_span(i);
                Err(self.unknown_dtype(&text, span))
            }
        }
    }

    /// `[A, B, ...]`: binds fresh type parameters in the current type scope.
    pub(super) fn parse_type_params(&mut self) -> PResult<Vec<TypeParamId>> {
        self.bump();
        let mut params: Vec<TypeParamId> = Vec::new();
        while !self.eat(K::RBracket) {
            let i = self.expect(K::Ident, "a type parameter name")?;
            let name = self.tok_sym(i);
            let span = self.tok_span(i);
            if let Some(&prev) = params.iter().find(|&&p| self.module.type_params[p.index()].name == name) {
                let first = self.module.type_params[prev.index()].span;
                let text = self.tok(i).name();
                let d = Diagnostic::error(span, format!("duplicate type parameter `{text}`"))
                    .with_label(first, "first bound here");
                self.report(d);
            }
            let id = self.module.add_type_param(name, span);
            self.type_params.insert(name, id);
            params.push(id);
            if !self.eat(K::Comma) {
                self.expect(K::RBracket, "`,` or `]`")?;
                break;
            }
        }
        Ok(params)
    }
}

#[cfg(test)]
mod tests {
    use super::looks_like_dtype;

    #[test]
    fn dtype_spellings() {
        assert!(looks_like_dtype("float31"));
        assert!(looks_like_dtype("int8x4"));
        assert!(!looks_like_dtype("integer_list"));
        assert!(!looks_like_dtype("List"));
    }
}
