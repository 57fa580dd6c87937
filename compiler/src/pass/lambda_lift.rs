//! Lambda lifting (TVM `LambdaLift`): every `fn` literal becomes a global.
//!
//! Nested literals are lifted inside-out, so the inner one's creation call is part of the
//! outer one's body when that is lifted. An outer function over the captured values keeps
//! the IR well-typed without closure types.
//!
//! The lifted global takes every type parameter in scope at the literal (the enclosing
//! global's and enclosing `fn [T]` literals', with the same ids), so captured types may
//! mention them; uses instantiate them as usual. Parameters and return types of the literal
//! that inference had to work out are written as annotations: lifted out of their context,
//! they could no longer be inferred.

use super::util::builder::{call, flag, fresh_var, function, is_incomplete, is_primitive, var_ref, Types};
use super::util::free_vars::free_vars;
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use super::util::walk::preorder;
use super::{closure_literal, CLOSURE};
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, Function, GlobalFunction, IdMap, Module, Symbol, TypeParamId, VarId};
use crate::ty::TypeMap;

/// What a lifted closure's name puts between its enclosing function's name and its number
/// (`main_lifted_0`): hosts leave such functions out of listings meant for people.
pub const LIFTED_INFIX: &str = "_lifted_";

/// Lifts every `fn` literal that is not `Primitive=1` out of every global function.
///
/// A literal `fn (%x: T) -> R { body }` with free variables `%c0, ...` becomes
///
/// ```text
/// def @outer_lifted_0[<outer's type params>](%c0: T0, ..., Closure=1) -> fn (T) -> R {
///   fn (%x: T) -> R { body' }
/// }
/// ```
///
/// and the literal is replaced by the call `@outer_lifted_0(%c0, ...)`, which creates the
/// closure: `Closure=1` tells the emitter that calling the global allocates a closure of the
/// inner literal over its arguments. In `body'` the captured variables are the outer
/// parameters, and for a recursive `let %f = fn ...` every `%f` becomes
/// `@outer_lifted_0(%c0, ...)`, the same closure rebuilt from the captured values (the
/// emitter can call such a known closure directly). `Primitive=1` literals are kernels and
/// stay where they are. The lifted globals are appended to `m.functions`.
///
/// A global made by an earlier run keeps its closure literal (only literals inside it are
/// lifted), so lifting twice changes nothing the second time.
///
/// # Errors
/// An internal error if `types` lacks a type (it must be the [`TypeMap`] of `m` as it is).
pub fn lambda_lift(m: &mut Module, types: &TypeMap) -> Result<(), CompileError> {
    let types = Types::new(types, "lambda_lift");
    for i in 0..m.functions.len() {
        let g = &m.functions[i];
        if is_primitive(m, &g.func) {
            continue;
        }
        let mut scope = g.func.type_params.clone();
        let closure = closure_literal(m, &g.func);
        let root = match &closure {
            Some((_, f)) => {
                scope.extend(&f.type_params);
                f.body
            }
            None => g.func.body,
        };
        let closure = closure.map(|(id, _)| id);
        let mut lifter = Lifter {
            types,
            outer: m.name(g.name).to_string(),
            next: 0,
            scopes: vec![scope],
            recursive: recursive_binders(m, root),
        };
        let new = rewrite(m, root, &mut lifter)?;
        m.functions[i].func.body = match closure {
            Some(id) => rebuild(m, id, &[new]),
            None => new,
        };
    }
    Ok(())
}

/// For each `fn` literal bound by a `let`, the `let`'s variable (which the literal may call
/// recursively).
fn recursive_binders(m: &Module, root: ExprId) -> IdMap<ExprId, VarId> {
    preorder(m, root, |_| true)
        .into_iter()
        .filter_map(|e| match &m.expr(e).kind {
            ExprKind::Let { var, value, .. } if matches!(m.expr(*value).kind, ExprKind::Function(_)) => {
                Some((*value, *var))
            }
            _ => None,
        })
        .collect()
}

struct Lifter<'t> {
    types: Types<'t>,
    /// The name of the global being processed, the prefix of lifted names.
    outer: String,
    /// The next suffix to try.
    next: usize,
    /// Type parameters in scope: the global's, then each enclosing `fn` literal's.
    scopes: Vec<Vec<TypeParamId>>,
    recursive: IdMap<ExprId, VarId>,
}

impl Rewrite for Lifter<'_> {
    fn enter(&mut self, m: &Module, e: ExprId) -> bool {
        match &m.expr(e).kind {
            ExprKind::Function(f) if is_primitive(m, f) => false,
            ExprKind::Function(f) => {
                self.scopes.push(f.type_params.clone());
                true
            }
            _ => true,
        }
    }

    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let new = rebuild(m, old, kids);
        if !matches!(m.expr(old).kind, ExprKind::Function(_)) {
            return Ok(new);
        }
        self.scopes.pop();
        self.lift(m, old, new)
    }
}

impl Lifter<'_> {
    /// Lifts the literal `old`, whose body has been processed into the literal `new`; returns
    /// the call that creates the closure.
    fn lift(&mut self, m: &mut Module, old: ExprId, new: ExprId) -> Result<ExprId, CompileError> {
        let span = m.expr(old).span;
        let ExprKind::Function(f) = &m.expr(new).kind else {
            return Err(self.types.error(span, "a rebuilt `fn` literal is not a function"));
        };
        let f = (**f).clone();
        let fn_ty = self.types.expr(m, old)?;
        let ret = self.types.func(m, old)?.ret;
        let this = self.recursive.get(old).copied();
        let captured: Vec<VarId> = free_vars(m, new).into_iter().filter(|&v| Some(v) != this).collect();
        let name = self.fresh_name(m);

        let mut params = Vec::with_capacity(captured.len());
        for &v in &captured {
            let ty = self.types.var(m, v)?;
            let (text, at) = (m.name(m.var(v).name).to_string(), m.var(v).span);
            params.push(fresh_var(m, &text, ty, at));
        }
        let mut subst = Subst {
            vars: captured.iter().copied().zip(params.iter().copied()).collect(),
            this,
            name,
            params: &params,
        };
        let body = rewrite(m, f.body, &mut subst)?;
        for &p in &f.params {
            if is_incomplete(m, m.var(p).ty) {
                m.vars[p.index()].ty = Some(self.types.var(m, p)?);
            }
        }
        let ret_type = if is_incomplete(m, f.ret_type) { Some(ret) } else { f.ret_type };
        let inner = function(m, Function { body, ret_type, ..f }, span);
        let lifted = Function {
            type_params: self.scopes.concat(),
            params,
            ret_type: Some(fn_ty),
            body: inner,
            attrs: flag(m, CLOSURE),
        };
        m.add_function(GlobalFunction { name, func: lifted, span })
            .map_err(|_| self.types.error(span, "the name of a lifted function is taken"))?;

        let callee = m.add_expr(ExprKind::Global(name), span);
        let args = captured.iter().map(|&v| var_ref(m, v, span)).collect();
        Ok(call(m, callee, args, span))
    }

    /// `<outer>_lifted_<n>`, not yet defined in `m`.
    fn fresh_name(&mut self, m: &mut Module) -> Symbol {
        loop {
            let text = format!("{}{LIFTED_INFIX}{}", self.outer, self.next);
            self.next += 1;
            if m.function_by_name(&text).is_none() {
                return m.symbols.intern(&text);
            }
        }
    }
}

/// Replaces captured variables by the lifted global's parameters, and the recursive `let`
/// variable by a call rebuilding the closure.
struct Subst<'p> {
    vars: IdMap<VarId, VarId>,
    this: Option<VarId>,
    name: Symbol,
    params: &'p [VarId],
}

impl Rewrite for Subst<'_> {
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let span = m.expr(old).span;
        let ExprKind::Var(v) = m.expr(old).kind else { return Ok(rebuild(m, old, kids)) };
        if Some(v) == self.this {
            let callee = m.add_expr(ExprKind::Global(self.name), span);
            let args = self.params.iter().map(|&p| var_ref(m, p, span)).collect();
            return Ok(call(m, callee, args, span));
        }
        Ok(match self.vars.get(v) {
            Some(&p) => var_ref(m, p, span),
            None => old,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::util::test_util::{checked, print};

    fn lifted(text: &str) -> (Module, String) {
        let (mut m, types) = checked(text);
        lambda_lift(&mut m, &types).unwrap();
        let out = print(&mut m);
        (m, out)
    }

    #[test]
    fn captured_variables_become_outer_parameters() {
        let (_, out) = lifted(
            "def @make_adder(%n: int32) -> fn (int32) -> int32 { fn (%x: int32) -> int32 { add(%x, %n) } }",
        );
        assert!(
            out.contains(
                "def @make_adder(%n: int32) -> fn (int32) -> int32 {\n  @make_adder_lifted_0(%n)\n}"
            ),
            "{out}"
        );
        assert!(
            out.contains("def @make_adder_lifted_0(%n: int32, Closure=1) -> fn (int32) -> int32 {\n  fn (%x: int32) -> int32 {\n    add(%x, %n)"),
            "{out}"
        );
    }

    #[test]
    fn recursive_closures_rebuild_themselves() {
        let (_, out) = lifted(
            "def @main(%k: int32) -> int32 {
               let %loop = fn (%i: int32) -> int32 { if (less(%i, %k)) { %loop(add(%i, 1)) } else { %i } };
               %loop(0)
             }",
        );
        assert!(out.contains("let %loop = @main_lifted_0(%k);"), "{out}");
        assert!(out.contains("def @main_lifted_0(%k: int32, Closure=1) -> fn (int32) -> int32 {"), "{out}");
        assert!(out.contains("@main_lifted_0(%k)(add(%i, 1))"), "{out}");
    }

    #[test]
    fn nested_literals_lift_inside_out() {
        let (m, out) =
            lifted("def @curry(%a: int32) { fn (%b: int32) { fn (%c: int32) { add(add(%a, %b), %c) } } }");
        assert!(
            out.contains("def @curry_lifted_0(%a: int32, %b: int32, Closure=1) -> fn (int32) -> int32 {"),
            "{out}"
        );
        assert!(
            out.contains(
                "def @curry_lifted_1(%a: int32, Closure=1) -> fn (int32) -> fn (int32) -> int32 {\n  \
                 fn (%b: int32) -> fn (int32) -> int32 {\n    @curry_lifted_0(%a, %b)"
            ),
            "{out}"
        );
        assert!(out.contains("def @curry(%a: int32) {\n  @curry_lifted_1(%a)\n}"), "{out}");
        assert_eq!(m.functions.len(), 3);
    }

    #[test]
    fn closed_and_polymorphic_literals() {
        let (_, out) = lifted(
            "def @main() -> (int32, float32, (int32, int32)) {
               let %id = fn [T](%t: T) -> T { %t };
               let %pair = fn [U](%u: U) -> (U, U) { let %k = fn () -> U { %u }; (%k(), %k()) };
               (%id(1), %id(2f), %pair(3))
             }",
        );
        assert!(out.contains("let %id = @main_lifted_0();"), "{out}");
        assert!(
            out.contains("def @main_lifted_0(Closure=1) -> fn [T](T) -> T {\n  fn [T](%t: T) -> T {"),
            "{out}"
        );
        // The inner literal captures `%u: U`, so the lifted global takes `U` from its scope.
        assert!(out.contains("def @main_lifted_1[U](%u: U, Closure=1) -> fn () -> U {"), "{out}");
        assert!(out.contains("def @main_lifted_2(Closure=1) -> fn [U](U) -> (U, U) {"), "{out}");
    }

    #[test]
    fn inferred_parameter_types_become_annotations() {
        let (_, out) = lifted("def @main() -> int32 { let %f = fn (%x) { add(%x, 1) }; %f(2) }");
        assert!(out.contains("fn (%x: int32) -> int32 {"), "{out}");
    }

    #[test]
    fn polymorphic_globals_pass_their_type_parameters() {
        let (_, out) = lifted(
            "def @compose[A, B, C](%f: fn (B) -> C, %g: fn (A) -> B) -> fn (A) -> C { fn (%x: A) -> C { %f(%g(%x)) } }",
        );
        assert!(
            out.contains("def @compose_lifted_0[A, B, C](%f: fn (B) -> C, %g: fn (A) -> B, Closure=1) -> fn (A) -> C {"),
            "{out}"
        );
    }

    #[test]
    fn lifting_twice_changes_nothing() {
        let (mut m, first) = lifted(
            "def @main(%k: int32) -> int32 { let %f = fn (%x: int32) -> int32 { let %g = fn () -> int32 { add(%x, %k) }; %g() }; %f(1) }",
        );
        let types = crate::pass::util::test_util::infer(&mut m);
        lambda_lift(&mut m, &types).unwrap();
        assert_eq!(print(&mut m), first);
    }
}
