//! Rewriting operator calls through a rewrite facet of their operators (a
//! [`CanonicalizeFn`]: `QnnCanonicalize`'s canonical forms, `DynamicToStatic`'s static
//! forms, `AlterOpLayout`'s layout rewrites): each call whose operator has the facet is handed to it with a
//! [`Builder`] and its arguments' types; a call the rule declines stays as it is.

use super::builder::as_op_call;
use super::rewrite::{rebuild, rewrite, Rewrite};
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, Module, TypeId, TypeKind};
use crate::op::{Builder, CanonicalizeFn, OpDef, OpRegistry, RelType, TensorType};
use crate::ty::TypeMap;

/// Which rule of an operator a pass applies.
pub(crate) type Facet = fn(&OpDef) -> Option<CanonicalizeFn>;

/// Rewrites every call whose operator has the rule `facet` picks, in every global function,
/// given the types of the module as it is; returns how many calls were rewritten.
///
/// # Errors
/// None today (the pass signature).
pub(crate) fn rewrite_calls(
    m: &mut Module,
    types: &TypeMap,
    ops: &OpRegistry,
    facet: Facet,
) -> Result<usize, CompileError> {
    let mut calls = ByFacet { types, ops, facet, rewritten: 0 };
    for i in 0..m.functions.len() {
        let body = m.functions[i].func.body;
        m.functions[i].func.body = rewrite(m, body, &mut calls)?;
    }
    Ok(calls.rewritten)
}

struct ByFacet<'a> {
    types: &'a TypeMap,
    ops: &'a OpRegistry,
    facet: Facet,
    rewritten: usize,
}

impl Rewrite for ByFacet<'_> {
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let new = rebuild(m, old, kids);
        Ok(match self.rewritten_call(m, old, new) {
            Some(e) => {
                self.rewritten += 1;
                e
            }
            None => new,
        })
    }
}

impl ByFacet<'_> {
    /// Call `new` (the rewritten `old`) as its operator's rule writes it, if it has one that
    /// takes it.
    fn rewritten_call(&self, m: &mut Module, old: ExprId, new: ExprId) -> Option<ExprId> {
        let (op, args, attrs) = as_op_call(m, new)?;
        let rule = (self.facet)(self.ops.get(self.ops.lookup(op)?))?;
        let (args, attrs) = (args.to_vec(), attrs.clone());
        // The argument types are the old call's (the new arguments have none yet).
        let ExprKind::Call { args: old_args, .. } = &m.expr(old).kind else { return None };
        let arg_types: Vec<RelType> =
            old_args.iter().map(|&a| self.types.expr(a).map(|t| rel_type(m, t))).collect::<Option<_>>()?;
        let span = m.expr(new).span;
        rule(&mut Builder::new(m, attrs, span), &args, &arg_types).ok()
    }
}

/// Type `t` as a relation sees it: tensors and tuples of them; anything else is `Other`.
fn rel_type(m: &Module, t: TypeId) -> RelType {
    match m.types.kind(t) {
        TypeKind::Tensor { shape, dtype } => RelType::Tensor(TensorType::new(shape.clone(), *dtype)),
        TypeKind::Tuple(fields) => RelType::Tuple(fields.iter().map(|&f| rel_type(m, f)).collect()),
        _ => RelType::Other(String::new()),
    }
}
