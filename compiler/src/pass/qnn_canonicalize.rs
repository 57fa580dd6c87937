//! TVM's `QnnCanonicalize` (`src/relay/qnn/pass/legalize.cc`, each operator's
//! `FTVMQnnCanonicalize`): every call of an operator with a canonical form
//! ([`crate::op::OpDef::canonicalize`]) among the quantized `qnn.*` operators is rewritten into
//! ordinary operators — casts, integer arithmetic, `nn.conv2d`/`nn.dense` in `int32` — which
//! then fuse like any others. A call whose rule declines (quantization parameters that are not
//! constants where the rule needs their values, a form it does not take) stays, and runs its
//! operator's reference kernel. Ordinary operators' canonical forms are
//! [`CanonicalizeOps`](super::canonicalize_ops())'s ([`canonicalized_by`] decides).

use super::canonicalize_ops::canonicalized_by;
use super::util::op_rewrite::rewrite_calls;
use crate::diagnostics::CompileError;
use crate::ir::Module;
use crate::op::OpRegistry;
use crate::ty::TypeMap;

/// Rewrites every call of a quantized operator with a canonical form, in every global function.
///
/// # Errors
/// None today (the pass signature).
pub fn qnn_canonicalize(m: &mut Module, types: &TypeMap, ops: &OpRegistry) -> Result<(), CompileError> {
    rewrite_calls(m, types, ops, |def| {
        def.canonicalize.filter(|_| canonicalized_by(def.name) == "QnnCanonicalize")
    })
    .map(|_| ())
}
