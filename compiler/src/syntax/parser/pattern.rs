//! `match (e) { pattern => body, ... }`, `match?`, and patterns.

use super::{PResult, Parser};
use crate::diagnostics::Diagnostic;
use crate::ir::{ExprId, ExprKind, MatchArm, PatId, Pattern, PatternKind, Span, Symbol};
use crate::syntax::resolve::CtorPatternUse;
use crate::syntax::token::TokenKind as K;

impl Parser<'_> {
    /// `match (e) { arms }` or `match? ...`; arms are comma-separated, a trailing comma is
    /// fine. Each arm's pattern variables are scoped to its body.
    pub(super) fn parse_match(&mut self) -> PResult<ExprId> {
        let kw = self.bump();
        let lo = self.tok(kw).lo;
        let complete = self.tok(kw).kind == K::Match;
        // TVM's grammar has an atom (here with calls and projections) rather than a full
        // expression; it recurses without passing `parse_expr`, so guard it here.
        let scrutinee = self.nested(Self::parse_postfix)?;
        self.expect(K::LBrace, "`{` and the match arms")?;
        let mut arms = Vec::new();
        while !self.eat(K::RBrace) {
            let mark = self.locals.mark();
            let arm = self.parse_arm();
            self.locals.restore(mark);
            arms.push(arm?);
            if !self.eat(K::Comma) {
                self.expect(K::RBrace, "`,` or `}`")?;
                break;
            }
        }
        Ok(self.module.add_expr(ExprKind::Match { scrutinee, arms, complete }, self.span_from(lo)))
    }

    fn parse_arm(&mut self) -> PResult<MatchArm> {
        let mut bound = Vec::new();
        let pattern = self.parse_pattern(&mut bound)?;
        self.expect(K::FatArrow, "`=>`")?;
        let body = self.parse_expr()?;
        Ok(MatchArm { pattern, body })
    }

    /// One pattern; `bound` collects the variables of the whole arm's pattern so that a name
    /// bound twice is reported.
    fn parse_pattern(&mut self, bound: &mut Vec<(Symbol, Span)>) -> PResult<PatId> {
        self.nested(|p| p.parse_pattern_inner(bound))
    }

    fn parse_pattern_inner(&mut self, bound: &mut Vec<(Symbol, Span)>) -> PResult<PatId> {
        let lo = self.peek().lo;
        let kind = match self.kind() {
            K::Underscore => {
                self.bump();
                PatternKind::Wildcard
            }
            K::Local => {
                let i = self.bump();
                let name = self.tok_sym(i);
                let span = self.tok_span(i);
                let ty = if self.eat(K::Colon) { Some(self.parse_type()?) } else { None };
                if let Some(&(_, first)) = bound.iter().find(|(n, _)| *n == name) {
                    let text = self.tok(i).name();
                    let d =
                        Diagnostic::error(span, format!("`%{text}` is bound more than once in this pattern"))
                            .with_label(first, "first bound here");
                    self.report(d);
                }
                bound.push((name, span));
                let var = self.module.add_var(name, ty, span);
                self.locals.insert(name, var);
                PatternKind::Var(var)
            }
            K::Ident => {
                let i = self.bump();
                let text = self.tok(i).name().to_string();
                let name = self.sym(&text);
                let args = if self.at(K::LParen) { self.parse_pattern_list(bound)? } else { vec![] };
                let looks_like_var =
                    self.locals.get(&name).is_some() || text.starts_with(|c: char| c.is_ascii_lowercase());
                let span = self.span_from(lo);
                self.unresolved.ctor_patterns.push(CtorPatternUse {
                    name,
                    arity: args.len(),
                    span,
                    looks_like_var,
                });
                PatternKind::Constructor { name, args }
            }
            K::LParen => PatternKind::Tuple(self.parse_pattern_list(bound)?),
            _ => return Err(self.unexpected("a pattern (`_`, `%x`, a constructor or a tuple)")),
        };
        Ok(self.module.add_pattern(Pattern { kind, span: self.span_from(lo) }))
    }

    /// `(p, ...)` with an optional trailing comma; `(p)` is a one-element list.
    fn parse_pattern_list(&mut self, bound: &mut Vec<(Symbol, Span)>) -> PResult<Vec<PatId>> {
        self.bump();
        let mut pats = Vec::new();
        while !self.eat(K::RParen) {
            pats.push(self.parse_pattern(bound)?);
            if !self.eat(K::Comma) {
                self.expect(K::RParen, "`,` or `)`")?;
                break;
            }
        }
        Ok(pats)
    }
}
