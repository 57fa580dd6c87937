//! Expressions: binding sequences, infix operators, prefix `-`, calls and projections, atoms.

use super::{PResult, Parser};
use crate::diagnostics::suggest::closest;
use crate::diagnostics::{Diagnostic, MAX_SHOWN};
use crate::ir::{Attrs, ExprId, ExprKind, Function, Span, VarId};
use crate::syntax::resolve::{GlobalUse, IdentUse};
use crate::syntax::token::{TokenKind as K, TokenValue};

/// A binary operator: TVM's precedence (higher binds tighter) and the op it calls. All are
/// left-associative.
fn binary_op(kind: K) -> Option<(u8, &'static str)> {
    Some(match kind {
        K::Star => (12, "multiply"),
        K::Slash => (12, "divide"),
        K::Plus => (10, "add"),
        K::Minus => (10, "subtract"),
        K::Lt => (8, "less"),
        K::Le => (8, "less_equal"),
        K::Gt => (8, "greater"),
        K::Ge => (8, "greater_equal"),
        K::EqEq => (7, "equal"),
        K::NotEq => (7, "not_equal"),
        _ => return None,
    })
}

/// One `let %x = v;` or `e;` of a sequence, waiting for the body it scopes over.
struct Binding {
    var: VarId,
    value: ExprId,
    span: Span,
}

impl Parser<'_> {
    /// A full expression: any number of `let`, `%N =`, `free_var` and `e;` statements, then
    /// the result. Bindings are scoped to the sequence. Iterative, so a 100,000-long `let`
    /// chain uses constant stack.
    ///
    /// Every recursion between expressions passes through here (or through a `match`
    /// scrutinee), so this is where nesting depth is counted and the stack grown.
    pub(super) fn parse_expr(&mut self) -> PResult<ExprId> {
        self.nested(|p| {
            let mark = p.locals.mark();
            let result = p.parse_sequence();
            p.locals.restore(mark);
            result
        })
    }

    fn parse_sequence(&mut self) -> PResult<ExprId> {
        let mut bindings = Vec::new();
        let mut body = loop {
            match self.kind() {
                K::Let => bindings.push(self.parse_let()?),
                K::Graph if self.nth(1) == K::Eq => self.parse_graph_binding()?,
                K::FreeVar => self.parse_free_var()?,
                _ => {
                    let value = self.parse_binary()?;
                    if !self.eat(K::Semi) {
                        break value;
                    }
                    // `e1; e2` is `let %_ = e1; e2`.
                    let span = self.module.expr(value).span;
                    let name = self.sym("_");
                    let var = self.module.add_var(name, None, span);
                    bindings.push(Binding { var, value, span });
                }
            }
        };
        for b in bindings.into_iter().rev() {
            body = self.module.add_expr(ExprKind::Let { var: b.var, value: b.value, body }, b.span);
        }
        Ok(body)
    }

    /// `let %x (: T)? = value;`. The variable is in scope in `value` only when `value` is a
    /// `fn` literal (a recursive local function); otherwise `%x` there is the outer `%x`.
    fn parse_let(&mut self) -> PResult<Binding> {
        let lo = self.bump_lo();
        let name_tok = self.expect_local("a variable `%name` after `let`")?;
        let ty = if self.eat(K::Colon) { Some(self.parse_type()?) } else { None };
        self.expect(K::Eq, "`=`")?;
        let name = self.tok_sym(name_tok);
        let var = self.module.add_var(name, ty, self.tok_span(name_tok));
        let recursive = self.at(K::Fn) && self.fn_literal_ends_binding();
        if recursive {
            self.locals.insert(name, var);
        }
        let value = self.parse_binary()?;
        self.expect(K::Semi, "`;` after the bound value")?;
        if !recursive {
            self.locals.insert(name, var);
        }
        Ok(Binding { var, value, span: self.span_from(lo) })
    }

    /// Whether the `fn` literal at the current token is followed directly by `;`, i.e. is the
    /// whole right-hand side of a `let`. Jumps over brackets with the precomputed partners.
    fn fn_literal_ends_binding(&self) -> bool {
        let mut i = self.pos + 1;
        while let Some(tok) = self.tokens.get(i) {
            match tok.kind {
                K::LBrace => {
                    let close = self.partner[i] as usize;
                    return self.tokens.get(close + 1).is_some_and(|t| t.kind == K::Semi);
                }
                K::LParen | K::LBracket => i = self.partner[i] as usize + 1,
                K::Semi | K::Eof | K::Metadata => return false,
                _ => i += 1,
            }
        }
        false
    }

    /// `%N = value;`: later `%N`s in this function are the same node.
    fn parse_graph_binding(&mut self) -> PResult<()> {
        let i = self.bump();
        let TokenValue::Graph(n) = self.tok(i).value else { return Err(self.unexpected("`%N`")) };
        self.bump();
        let value = self.parse_binary()?;
        self.expect(K::Semi, "`;` after the bound value")?;
        if let Some(table) = self.graph.last_mut() {
            table.insert(n, value);
        }
        Ok(())
    }

    /// `free_var %x (: T)?;`: a parameter of the `@main` a top-level expression becomes.
    fn parse_free_var(&mut self) -> PResult<()> {
        let kw = self.bump();
        let name_tok = self.expect_local("a variable `%name` after `free_var`")?;
        let ty = if self.eat(K::Colon) { Some(self.parse_type()?) } else { None };
        self.expect(K::Semi, "`;`")?;
        let name = self.tok_sym(name_tok);
        let var = self.module.add_var(name, ty, self.tok_span(name_tok));
        match &mut self.free_vars {
            Some(vars) => vars.push(var),
            None => {
                let span = self.tok_span(kw);
                self.report(Diagnostic::error(span, "`free_var` is only allowed in a top-level expression"));
            }
        }
        self.locals.insert(name, var);
        Ok(())
    }

    /// Operands joined by infix operators, by precedence climbing with an explicit stack of
    /// pending left operands (no recursion, so `1 + 1 + ... + 1` of any length is fine).
    pub(super) fn parse_binary(&mut self) -> PResult<ExprId> {
        let mut pending: Vec<(ExprId, u8, &'static str, Span)> = Vec::new();
        let mut rhs = self.parse_unary()?;
        while let Some((prec, name)) = binary_op(self.kind()) {
            let op_span = self.bump_span();
            while let Some(&(lhs, top, top_name, top_span)) = pending.last() {
                if top < prec {
                    break;
                }
                pending.pop();
                rhs = self.binary_call(top_name, top_span, lhs, rhs);
            }
            pending.push((rhs, prec, name, op_span));
            rhs = self.parse_unary()?;
        }
        while let Some((lhs, _, name, op_span)) = pending.pop() {
            rhs = self.binary_call(name, op_span, lhs, rhs);
        }
        Ok(rhs)
    }

    fn binary_call(&mut self, name: &str, op_span: Span, lhs: ExprId, rhs: ExprId) -> ExprId {
        let span = self.module.expr(lhs).span.to(self.module.expr(rhs).span);
        self.op_call(name, op_span, vec![lhs, rhs], span)
    }

    /// `name(args)` for a built-in operator that syntax desugars to.
    fn op_call(&mut self, name: &str, op_span: Span, args: Vec<ExprId>, span: Span) -> ExprId {
        let op = self.sym(name);
        let callee = self.module.add_expr(ExprKind::Op(op), op_span);
        self.module.add_expr(ExprKind::Call { callee, args, attrs: Attrs::default() }, span)
    }

    /// Prefix `-`s: folded into a numeric literal (`-5`, `-inff`), else `negative(e)`.
    fn parse_unary(&mut self) -> PResult<ExprId> {
        let mut minus = Vec::new();
        while self.at(K::Minus) {
            minus.push(self.bump_span());
        }
        if let Some(first) = minus.first() {
            if matches!(self.kind(), K::Int | K::Float) {
                let lit = self.parse_number(minus.len() % 2 == 1, first.lo)?;
                return self.parse_postfix_from(lit);
            }
        }
        let mut e = self.parse_postfix()?;
        for m in minus.into_iter().rev() {
            let span = m.to(self.module.expr(e).span);
            e = self.op_call("negative", m, vec![e], span);
        }
        Ok(e)
    }

    /// An atom followed by calls `(...)` and projections `.N`, in any order.
    pub(super) fn parse_postfix(&mut self) -> PResult<ExprId> {
        let atom = self.parse_atom()?;
        self.parse_postfix_from(atom)
    }

    fn parse_postfix_from(&mut self, mut e: ExprId) -> PResult<ExprId> {
        let lo = self.module.expr(e).span.lo;
        loop {
            match self.kind() {
                K::LParen => {
                    // Only an identifier written right before `(` is called: `%0(x)` where
                    // `%0 = Nil` calls the value `Nil()`, not the constructor.
                    let just_written = self.pos > 0
                        && Some(self.tok_span(self.pos - 1)) == self.unresolved.idents.last().map(|u| u.span);
                    if let Some(last) = self.unresolved.idents.last_mut() {
                        if last.expr == e && just_written {
                            last.called = true;
                        }
                    }
                    e = self.parse_call(e, lo)?;
                }
                K::Dot => {
                    self.bump();
                    let i = self.expect(K::Int, "a tuple index after `.`")?;
                    let index = match self.tok(i).value {
                        TokenValue::Int(lit) if lit.dtype.is_none() => u32::try_from(lit.magnitude).ok(),
                        _ => None,
                    };
                    let Some(index) = index else {
                        let span = self.tok_span(i);
                        return Err(self.error(span, "a tuple index must be a plain integer below 2^32"));
                    };
                    e = self.module.add_expr(ExprKind::Proj { tuple: e, index }, self.span_from(lo));
                }
                _ => return Ok(e),
            }
        }
    }

    /// `(args, key=value, ...)` after `callee`.
    fn parse_call(&mut self, callee: ExprId, lo: u32) -> PResult<ExprId> {
        self.bump();
        let mut args = Vec::new();
        let mut attrs = Attrs::default();
        loop {
            if self.eat(K::RParen) {
                break;
            }
            if self.at_attribute() {
                attrs = self.parse_attrs(K::RParen)?;
                self.expect(K::RParen, "`)`")?;
                break;
            }
            args.push(self.parse_expr()?);
            if !self.eat(K::Comma) {
                self.expect(K::RParen, "`,` or `)`")?;
                break;
            }
        }
        Ok(self.module.add_expr(ExprKind::Call { callee, args, attrs }, self.span_from(lo)))
    }

    /// A primary expression.
    fn parse_atom(&mut self) -> PResult<ExprId> {
        let lo = self.peek().lo;
        match self.kind() {
            K::Int | K::Float => self.parse_number(false, lo),
            K::True | K::False => Ok(self.parse_bool()),
            K::Local => Ok(self.parse_local()),
            K::Graph => Ok(self.parse_graph_ref()),
            K::Global => {
                let i = self.bump();
                let name = self.tok_sym(i);
                let span = self.tok_span(i);
                self.unresolved.globals.push(GlobalUse { name, span });
                Ok(self.module.add_expr(ExprKind::Global(name), span))
            }
            K::Ident if self.peek().name() == "meta" && self.nth(1) == K::LBracket => {
                let (index, span) = self.parse_meta_constant()?;
                Ok(self.module.add_expr(ExprKind::Constant(index), span))
            }
            K::Ident => {
                let (name, span) = self.dotted_name()?;
                let sym = self.sym(&name);
                let expr = self.module.add_expr(ExprKind::Op(sym), span);
                // Dotted names (`nn.conv2d`) are always operators.
                if !name.contains('.') {
                    self.unresolved.idents.push(IdentUse { expr, name: sym, span, called: false });
                }
                Ok(expr)
            }
            K::Fn => {
                self.bump();
                let func = self.parse_function()?;
                Ok(self.module.add_expr(ExprKind::Function(Box::new(func)), self.span_from(lo)))
            }
            K::If => self.parse_if(),
            K::Match | K::MatchPartial => self.parse_match(),
            K::Ref | K::RefRead => {
                let is_new = self.kind() == K::Ref;
                self.bump();
                self.expect(K::LParen, "`(`")?;
                let e = self.parse_expr()?;
                self.expect(K::RParen, "`)`")?;
                let kind = if is_new { ExprKind::RefNew(e) } else { ExprKind::RefRead(e) };
                Ok(self.module.add_expr(kind, self.span_from(lo)))
            }
            K::RefWrite => {
                self.bump();
                self.expect(K::LParen, "`(`")?;
                let cell = self.parse_expr()?;
                self.expect(K::Comma, "`,`")?;
                let value = self.parse_expr()?;
                self.expect(K::RParen, "`)`")?;
                Ok(self.module.add_expr(ExprKind::RefWrite { cell, value }, self.span_from(lo)))
            }
            K::LParen => self.parse_paren(),
            K::LBrace => self.parse_block(),
            _ => Err(self.unexpected("an expression")),
        }
    }

    /// `%x`: the innermost binding, or an error with a suggestion.
    fn parse_local(&mut self) -> ExprId {
        let i = self.bump();
        let span = self.tok_span(i);
        let name = self.tok_sym(i);
        if let Some(var) = self.locals.get(&name) {
            return self.module.add_expr(ExprKind::Var(var), span);
        }
        let text = self.module.name(name);
        let mut d = Diagnostic::error(span, format!("undeclared variable `%{text}`"));
        let in_scope = self.locals.keys().map(|s| self.module.name(*s));
        // Past the diagnostics shown, a suggestion (a scan of every local) would be wasted.
        let shown = self.diags.len() < MAX_SHOWN;
        if let Some(s) = shown.then(|| closest(text, in_scope)).flatten() {
            d = d.with_note(format!("help: did you mean `%{s}`?"));
        }
        self.report(d);
        self.placeholder(span)
    }

    /// `%N`: the node bound by `%N = ...;` in this or an enclosing function.
    fn parse_graph_ref(&mut self) -> ExprId {
        let i = self.bump();
        let span = self.tok_span(i);
        if let TokenValue::Graph(n) = self.tok(i).value {
            if let Some(&e) = self.graph.iter().rev().find_map(|t| t.get(&n)) {
                return e;
            }
            self.report(Diagnostic::error(span, format!("undefined graph variable `%{n}`")));
        }
        self.placeholder(span)
    }

    /// Stands in for a name that failed to resolve; the module is rejected anyway.
    fn placeholder(&mut self, span: Span) -> ExprId {
        self.module.add_expr(ExprKind::Tuple(vec![]), span)
    }

    /// `()`, `(e)` (grouping), `(e,)`, `(e1, e2, ...)`.
    fn parse_paren(&mut self) -> PResult<ExprId> {
        let lo = self.bump_lo();
        if self.eat(K::RParen) {
            return Ok(self.module.add_expr(ExprKind::Tuple(vec![]), self.span_from(lo)));
        }
        let first = self.parse_expr()?;
        if self.eat(K::RParen) {
            return Ok(first);
        }
        self.expect(K::Comma, "`,` or `)`")?;
        let mut fields = vec![first];
        while !self.eat(K::RParen) {
            fields.push(self.parse_expr()?);
            if !self.eat(K::Comma) {
                self.expect(K::RParen, "`,` or `)`")?;
                break;
            }
        }
        Ok(self.module.add_expr(ExprKind::Tuple(fields), self.span_from(lo)))
    }

    /// `{ expr }`.
    pub(super) fn parse_block(&mut self) -> PResult<ExprId> {
        self.expect(K::LBrace, "`{`")?;
        let e = self.parse_expr()?;
        self.expect(K::RBrace, "`}`")?;
        Ok(e)
    }

    /// `if (cond) { ... } else { ... }`.
    fn parse_if(&mut self) -> PResult<ExprId> {
        let lo = self.bump_lo();
        self.expect(K::LParen, "`(` after `if`")?;
        let cond = self.parse_expr()?;
        self.expect(K::RParen, "`)`")?;
        let then_branch = self.parse_block()?;
        self.expect(K::Else, "`else`")?;
        let else_branch = self.parse_block()?;
        Ok(self.module.add_expr(ExprKind::If { cond, then_branch, else_branch }, self.span_from(lo)))
    }

    /// After `fn` or `def @name`: `[A, ...]? (params, attrs) (-> T)? { body }`. Parameters,
    /// type parameters and graph bindings are scoped to the function.
    pub(super) fn parse_function(&mut self) -> PResult<Function> {
        let local_mark = self.locals.mark();
        let type_mark = self.type_params.mark();
        self.graph.push(Default::default());
        let result = self.parse_function_inner();
        self.graph.pop();
        self.type_params.restore(type_mark);
        self.locals.restore(local_mark);
        result
    }

    fn parse_function_inner(&mut self) -> PResult<Function> {
        let type_params = if self.at(K::LBracket) { self.parse_type_params()? } else { vec![] };
        self.expect(K::LParen, "`(` before the parameters")?;
        let mut params: Vec<VarId> = Vec::new();
        let mut attrs = Attrs::default();
        loop {
            if self.eat(K::RParen) {
                break;
            }
            if self.at_attribute() {
                attrs = self.parse_attrs(K::RParen)?;
                self.expect(K::RParen, "`)`")?;
                break;
            }
            let tok = self.expect_local("a parameter `%name`")?;
            let ty = if self.eat(K::Colon) { Some(self.parse_type()?) } else { None };
            let name = self.tok_sym(tok);
            let span = self.tok_span(tok);
            if let Some(&prev) = params.iter().find(|&&p| self.module.var(p).name == name) {
                let first = self.module.var(prev).span;
                let text = self.tok(tok).name();
                let d = Diagnostic::error(span, format!("duplicate parameter `%{text}`"))
                    .with_label(first, "first bound here");
                self.report(d);
            }
            let var = self.module.add_var(name, ty, span);
            self.locals.insert(name, var);
            params.push(var);
            if !self.eat(K::Comma) {
                self.expect(K::RParen, "`,` or `)`")?;
                break;
            }
        }
        let ret_type = if self.eat(K::Arrow) { Some(self.parse_type()?) } else { None };
        let body = self.parse_block()?;
        Ok(Function { type_params, params, ret_type, body, attrs })
    }
}
