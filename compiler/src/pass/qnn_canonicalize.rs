//! TVM's `QnnCanonicalize` (`src/relay/qnn/pass/legalize.cc`, each operator's
//! `FTVMQnnCanonicalize`): every call of an operator with a canonical form
//! ([`crate::op::OpDef::canonicalize`], the quantized `qnn.*` operators) is rewritten into
//! ordinary operators — casts, integer arithmetic, `nn.conv2d`/`nn.dense` in `int32` — which
//! then fuse like any others. A call whose rule declines (quantization parameters that are not
//! constants where the rule needs their values, a form it does not take) stays, and runs its
//! operator's reference kernel.

use super::util::builder::as_op_call;
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, Module, TypeId, TypeKind};
use crate::op::{Builder, CanonicalizeFn, OpDef, OpRegistry, RelType, TensorType};
use crate::ty::TypeMap;

/// Rewrites every call of an operator with a canonical form, in every global function.
///
/// # Errors
/// None today (the pass signature).
pub fn qnn_canonicalize(m: &mut Module, types: &TypeMap, ops: &OpRegistry) -> Result<(), CompileError> {
    rewrite_calls(m, types, ops, |def| def.canonicalize)
}

/// Puts the rule that `facet` picks of each call's operator (a canonical form, an
/// `AlterOpLayout` rewrite) in place of the call, where the operator has one and it takes the
/// call, in every global function.
pub(super) fn rewrite_calls(
    m: &mut Module,
    types: &TypeMap,
    ops: &OpRegistry,
    facet: fn(&OpDef) -> Option<CanonicalizeFn>,
) -> Result<(), CompileError> {
    for i in 0..m.functions.len() {
        let body = m.functions[i].func.body;
        m.functions[i].func.body = rewrite(m, body, &mut Canonicalize { types, ops, facet })?;
    }
    Ok(())
}

struct Canonicalize<'a> {
    types: &'a TypeMap,
    ops: &'a OpRegistry,
    facet: fn(&OpDef) -> Option<CanonicalizeFn>,
}

impl Rewrite for Canonicalize<'_> {
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let new = rebuild(m, old, kids);
        Ok(self.canonical(m, old, new).unwrap_or(new))
    }
}

impl Canonicalize<'_> {
    /// The canonical form of call `new` (the rewritten `old`), if its operator has one that
    /// takes it.
    fn canonical(&self, m: &mut Module, old: ExprId, new: ExprId) -> Option<ExprId> {
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
