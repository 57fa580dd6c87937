//! Expressions, statement sequences, functions and patterns.

use super::names::Use;
use super::sharing::{continues_chain, ScopeKey, ROOT};
use super::{Hole, Printer};
use crate::ir::{Expr, ExprId, ExprKind, Function, PatId, PatternKind, VarId};
use crate::stack::grow;
use std::fmt::Write;

/// Where an expression is printed, which decides whether it needs parentheses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// The last statement of a sequence: anything goes.
    Stmt,
    /// An argument, field, condition or right-hand side.
    Operand,
    /// Before `(args)`.
    Callee,
    /// Before `.N`.
    ProjBase,
}

/// Whether `kind` must be parenthesised in `ctx`. Any expression may be an operand (a `let`
/// prints as a parenthesised block by itself); callees and projected tuples other than
/// names, calls and projections are parenthesised so that the text also reads well (and
/// parses in TVM, whose postfix grammar is narrower). A literal before `.N` must be, or
/// `1.0` would read as a float.
fn needs_parens(kind: &ExprKind, ctx: Ctx) -> bool {
    let simple = matches!(
        kind,
        ExprKind::Var(_)
            | ExprKind::Global(_)
            | ExprKind::Call { .. }
            | ExprKind::Proj { .. }
            | ExprKind::Let { .. }
    );
    match ctx {
        Ctx::Stmt | Ctx::Operand => false,
        Ctx::Callee => !simple && !matches!(kind, ExprKind::Constructor(_) | ExprKind::Op(_)),
        Ctx::ProjBase => !simple && !matches!(kind, ExprKind::Tuple(_)),
    }
}

impl Printer<'_> {
    /// Prints `[A](%x: T, attrs) -> R { body }` (the caller wrote `def @f` or `fn `) and
    /// brings parameters into scope for the body. `key` is the body's scope.
    pub(super) fn function(&mut self, f: &Function, key: ScopeKey) {
        self.bind_type_params(&f.type_params);
        self.w("(");
        self.comma_list(&f.params, |p, v| {
            p.var_decl(v);
            let name = p.m.name(p.m.var(v).name);
            if key == ROOT {
                p.vars.bind_outer(v, name);
            } else {
                p.vars.bind(v, name);
            }
        });
        self.attrs(&f.attrs, !f.params.is_empty());
        self.w(")");
        if let Some(ret) = f.ret_type {
            self.w(" -> ");
            self.ty(ret);
        }
        self.w(" {");
        self.indent += 1;
        self.nl();
        if key == ROOT && self.free_decls.is_some() {
            self.hole(Hole::FreeVars);
        }
        self.scope(key, f.body, false);
        self.indent -= 1;
        self.nl();
        self.w("}");
        f.params.iter().rev().for_each(|&v| self.vars.unbind(v));
        self.unbind_type_params(&f.type_params);
    }

    /// Prints the statement sequence starting at `root`: graph bindings, `let`s, then the
    /// final expression, one per line. `block` starts a parenthesised `let` block, whose
    /// first `let` is `root` itself even when `root` is a graph binding.
    pub(super) fn scope(&mut self, key: ScopeKey, root: ExprId, block: bool) {
        let m = self.m;
        let mut lets = Vec::new();
        let (mut e, mut stmt, mut first) = (root, 0, block);
        loop {
            self.graph_bindings(key, stmt);
            if !continues_chain(m, e, first, self.layout.is_bound(e)) {
                break;
            }
            let ExprKind::Let { var, value, body } = &m.expr(e).kind else { break };
            let span = m.expr(e).span;
            self.comments_before(span.file, span.lo);
            // Only a `fn` on the right sees its own variable (a local recursive function).
            let recursive = matches!(m.expr(*value).kind, ExprKind::Function(_));
            self.w("let ");
            self.var_decl(*var);
            self.w(" = ");
            if recursive {
                self.bind_var(*var);
            }
            self.expr(*value, Ctx::Operand);
            if !recursive {
                self.bind_var(*var);
            }
            self.w(";");
            self.nl();
            lets.push(*var);
            (e, stmt, first) = (*body, stmt + 1, false);
        }
        self.expr(e, Ctx::Stmt);
        let span = m.expr(e).span;
        self.comments_before_close(span.file, span.hi);
        // Innermost first: each is then on top of its stack.
        lets.iter().rev().for_each(|&v| self.vars.unbind(v));
    }

    fn graph_bindings(&mut self, key: ScopeKey, stmt: u32) {
        let bindings = self.layout.bindings_at(key, stmt).to_vec();
        for b in bindings {
            let span = self.m.expr(b).span;
            self.comments_before(span.file, span.lo);
            let n = self.graph.len() as u32;
            self.graph.insert(b, n);
            let _ = write!(self.out.text, "%{n} = ");
            self.content(b, Ctx::Operand);
            self.w(";");
            self.nl();
        }
    }

    /// `{ body }` on its own lines.
    fn block(&mut self, key: ScopeKey, root: ExprId) {
        self.w("{");
        self.indent += 1;
        self.nl();
        self.scope(key, root, false);
        self.indent -= 1;
        self.nl();
        self.w("}");
    }

    fn expr(&mut self, e: ExprId, ctx: Ctx) {
        match self.graph.get(&e) {
            Some(&n) => {
                let _ = write!(self.out.text, "%{n}");
            }
            None => grow(|| self.content(e, ctx)),
        }
    }

    /// Prints `e` itself, even if it is a graph binding.
    fn content(&mut self, e: ExprId, ctx: Ctx) {
        let m = self.m;
        let Expr { kind, span } = m.expr(e);
        self.comments_before(span.file, span.lo);
        let parens = needs_parens(kind, ctx);
        if parens {
            self.w("(");
        }
        match kind {
            ExprKind::Var(v) => self.var_use(*v),
            ExprKind::Global(name) => {
                self.w("@");
                self.w(m.name(*name));
            }
            ExprKind::Constructor(name) | ExprKind::Op(name) => self.w(m.name(*name)),
            ExprKind::Literal(lit) => self.literal(lit),
            ExprKind::Constant(i) => self.constant(*i),
            ExprKind::Tuple(fields) => {
                self.w("(");
                self.comma_list(fields, |p, f| p.expr(f, Ctx::Operand));
                self.w(if fields.len() == 1 { ",)" } else { ")" });
            }
            ExprKind::Proj { tuple, index } => {
                self.expr(*tuple, Ctx::ProjBase);
                let _ = write!(self.out.text, ".{index}");
            }
            // TVM's spelling; the parser reads `Nil` and `Nil()` alike (but `Nil()(x)` is
            // the call of a call).
            ExprKind::Call { callee, args, attrs }
                if args.is_empty()
                    && attrs.is_empty()
                    && ctx != Ctx::Callee
                    && self.is_fieldless(*callee) =>
            {
                self.expr(*callee, Ctx::Callee);
            }
            ExprKind::Call { callee, args, attrs } => {
                self.expr(*callee, Ctx::Callee);
                self.w("(");
                self.comma_list(args, |p, a| p.expr(a, Ctx::Operand));
                self.attrs(attrs, !args.is_empty());
                self.w(")");
            }
            ExprKind::Let { .. } => {
                self.w("(");
                self.indent += 1;
                self.nl();
                self.scope((e, 0), e, true);
                self.indent -= 1;
                self.nl();
                self.w(")");
            }
            ExprKind::If { cond, then_branch, else_branch } => {
                self.w("if (");
                self.expr(*cond, Ctx::Operand);
                self.w(") ");
                self.block((e, 0), *then_branch);
                self.w(" else ");
                self.block((e, 1), *else_branch);
            }
            ExprKind::Match { scrutinee, arms, complete } => {
                self.w(if *complete { "match (" } else { "match? (" });
                self.expr(*scrutinee, Ctx::Operand);
                self.w(") {");
                self.indent += 1;
                for (i, arm) in arms.iter().enumerate() {
                    self.nl();
                    let pattern = m.pattern(arm.pattern).span;
                    self.comments_before(pattern.file, pattern.lo);
                    let mut bound = Vec::new();
                    self.pattern(arm.pattern, &mut bound);
                    self.w(" => ");
                    self.block((e, i as u32), arm.body);
                    self.w(",");
                    bound.iter().rev().for_each(|&v| self.vars.unbind(v));
                }
                self.indent -= 1;
                self.nl();
                self.w("}");
            }
            ExprKind::Function(f) => {
                self.w("fn ");
                self.function(f, (e, 0));
            }
            ExprKind::RefNew(x) => self.keyword_call("ref(", &[*x]),
            ExprKind::RefRead(x) => self.keyword_call("ref_read(", &[*x]),
            ExprKind::RefWrite { cell, value } => self.keyword_call("ref_write(", &[*cell, *value]),
        }
        if parens {
            self.w(")");
        }
    }

    /// Whether `e` is a constructor without fields.
    fn is_fieldless(&self, e: ExprId) -> bool {
        match self.m.expr(e).kind {
            ExprKind::Constructor(c) => self.m.constructor(c).is_some_and(|c| c.fields.is_empty()),
            _ => false,
        }
    }

    fn keyword_call(&mut self, head: &str, args: &[ExprId]) {
        self.w(head);
        self.comma_list(args, |p, a| p.expr(a, Ctx::Operand));
        self.w(")");
    }

    /// Prints a pattern, binding its variables (pushed on `bound`).
    fn pattern(&mut self, pat: PatId, bound: &mut Vec<VarId>) {
        grow(|| match &self.m.pattern(pat).kind {
            PatternKind::Wildcard => self.w("_"),
            PatternKind::Var(v) => {
                self.var_decl(*v);
                self.bind_var(*v);
                bound.push(*v);
            }
            PatternKind::Constructor { name, args } => {
                self.w(self.m.name(*name));
                if !args.is_empty() {
                    self.w("(");
                    self.comma_list(args, |p, a| p.pattern(a, bound));
                    self.w(")");
                }
            }
            PatternKind::Tuple(items) => {
                self.w("(");
                self.comma_list(items, |p, a| p.pattern(a, bound));
                self.w(")");
            }
        })
    }

    /// `%x` or `%x: T` at a binding site.
    fn var_decl(&mut self, v: VarId) {
        self.hole(Hole::Var(v));
        if let Some(t) = self.m.var(v).ty {
            self.w(": ");
            self.ty(t);
        }
    }

    fn bind_var(&mut self, v: VarId) {
        self.vars.bind(v, self.m.name(self.m.var(v).name));
    }

    fn var_use(&mut self, v: VarId) {
        if self.vars.use_id(v, self.m.name(self.m.var(v).name)) == Use::NewFree {
            self.declare_free(v);
        }
        self.hole(Hole::Var(v));
    }

    /// Appends `free_var %x: T;` to the declarations at the top of the definition body.
    fn declare_free(&mut self, v: VarId) {
        let Some(mut decls) = self.free_decls.take() else { return };
        std::mem::swap(&mut self.out, &mut decls);
        let indent = std::mem::replace(&mut self.indent, 1);
        self.w("free_var ");
        self.var_decl(v);
        self.w(";");
        self.nl();
        self.indent = indent;
        std::mem::swap(&mut self.out, &mut decls);
        self.free_decls = Some(decls);
    }
}
