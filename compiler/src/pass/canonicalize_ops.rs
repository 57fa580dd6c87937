//! TVM's `CanonicalizeOps` (`src/relay/transforms/canonicalize_ops.cc`): every call of an
//! ordinary (not quantized) operator with a canonical form ([`crate::op::OpDef::canonicalize`])
//! is rewritten into operators that fuse — `meshgrid`'s grids into `broadcast_to(expand_dims(x))`
//! each, since a compute rule has one output. The quantized operators' canonical forms are
//! [`QnnCanonicalize`](super::qnn_canonicalize())'s: TVM keeps the two apart (`FTVMQnnCanonicalize`
//! and the `relay.qnn` pass), and so does [`canonicalized_by`], so that one operator is rewritten
//! by one named pass. TVM runs `CanonicalizeOps` at level 3; here it runs at 2, the default,
//! because the operators it rewrites have no fused kernel otherwise.

use super::util::op_rewrite::rewrite_calls;
use crate::diagnostics::CompileError;
use crate::ir::Module;
use crate::op::OpRegistry;
use crate::ty::TypeMap;

/// The pass that rewrites calls of operator `name` into its canonical form, when it has one:
/// `"QnnCanonicalize"` for the quantized operators (`qnn.*`), `"CanonicalizeOps"` for the rest.
pub fn canonicalized_by(name: &str) -> &'static str {
    if name.starts_with("qnn.") {
        "QnnCanonicalize"
    } else {
        "CanonicalizeOps"
    }
}

/// Rewrites every call of an operator that [`canonicalized_by`] gives to this pass, in every
/// global function; a call whose rule declines stays and runs its reference kernel.
///
/// # Errors
/// None today (the pass signature).
pub fn canonicalize_ops(m: &mut Module, types: &TypeMap, ops: &OpRegistry) -> Result<(), CompileError> {
    rewrite_calls(m, types, ops, |def| {
        def.canonicalize.filter(|_| canonicalized_by(def.name) == "CanonicalizeOps")
    })
    .map(|_| ())
}
