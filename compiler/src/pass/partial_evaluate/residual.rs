//! Residualisation: the code the partial evaluator leaves for run time. Every non-atomic
//! residual expression is bound by a `let` in the current block (so nothing is computed
//! twice however often its value is used), blocks become `let` chains, and binders are fresh
//! variables annotated with their type when it is closed.

use super::value::PValue;
use crate::ir::{
    ExprId, ExprKind, Module, PatId, Pattern, PatternKind, Symbol, TypeId, TypeKind, TypeParamId, VarId,
};
use crate::pass::util::builder::{any_part, let_chain, var_ref};
use crate::ty::TypeMap;

/// The `let` bindings of one residual block, in evaluation order.
#[derive(Default)]
pub(super) struct Block(Vec<(VarId, ExprId)>);

impl Block {
    /// The block as a `let` chain ending in `result`.
    pub fn finish(self, m: &mut Module, result: ExprId) -> ExprId {
        let_chain(m, self.0, result)
    }

    /// Binds `value` to a fresh variable named `name` whose annotation is the type of the
    /// program's node `typed_as` (when closed), and returns a reference to it.
    pub fn bind(
        &mut self,
        m: &mut Module,
        types: &TypeMap,
        value: ExprId,
        typed_as: ExprId,
        name: Symbol,
    ) -> ExprId {
        let ty = closed(m, types.expr(typed_as), &[]);
        let span = m.expr(typed_as).span;
        let v = m.add_var(name, ty, span);
        self.0.push((v, value));
        m.add_expr(ExprKind::Var(v), span)
    }

    /// Binds `value` to the variable `v` (made by [`fresh`]).
    pub fn bind_var(&mut self, v: VarId, value: ExprId) {
        self.0.push((v, value));
    }

    /// Number of bindings so far.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The variable of the latest binding.
    pub fn last_var(&self) -> Option<VarId> {
        self.0.last().map(|(v, _)| *v)
    }
}

/// `Some(ty)` when type `ty` mentions no type parameter but those in `allowed` (bound by the
/// function being built) and leaves nothing to inference: then it can annotate a binder
/// anywhere. A type of a polymorphic function's body (`List[A]`) copied into another
/// function would not type-check, so such binders are left to inference.
pub(super) fn closed(m: &Module, ty: Option<TypeId>, allowed: &[TypeParamId]) -> Option<TypeId> {
    let ty = ty?;
    let open = |k: &TypeKind| match k {
        TypeKind::Hole => true,
        TypeKind::Param(p) => !allowed.contains(p),
        _ => false,
    };
    (!any_part(m, ty, open)).then_some(ty)
}

/// A fresh variable standing for the program's variable `v` (same name, its inferred type
/// when closed under `allowed`).
pub(super) fn fresh(m: &mut Module, types: &TypeMap, v: VarId, allowed: &[TypeParamId]) -> VarId {
    let decl = m.var(v).clone();
    let ty = closed(m, types.var(v), allowed).or_else(|| closed(m, decl.ty, allowed));
    m.add_var(decl.name, ty, decl.span)
}

/// A copy of pattern `p` with a fresh variable for each of its variables; each old variable
/// and the dynamic value of its fresh one go to `bound`.
pub(super) fn fresh_pattern(
    m: &mut Module,
    types: &TypeMap,
    p: PatId,
    bound: &mut Vec<(VarId, PValue)>,
) -> PatId {
    let Pattern { kind, span } = m.pattern(p).clone();
    let kind = match kind {
        PatternKind::Wildcard => PatternKind::Wildcard,
        PatternKind::Var(v) => {
            let new = fresh(m, types, v, &[]);
            let atom = var_ref(m, new, span);
            bound.push((v, PValue::dynamic(atom)));
            PatternKind::Var(new)
        }
        PatternKind::Constructor { name, args } => PatternKind::Constructor {
            name,
            args: args.into_iter().map(|a| fresh_pattern(m, types, a, bound)).collect(),
        },
        PatternKind::Tuple(ps) => {
            PatternKind::Tuple(ps.into_iter().map(|a| fresh_pattern(m, types, a, bound)).collect())
        }
    };
    m.add_pattern(Pattern { kind, span })
}
