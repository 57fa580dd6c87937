//! TVM's `AlterOpLayout` (`src/relay/transforms/alter_op_layout.cc`, each operator's
//! `FTVMAlterOpLayout`): every call of an operator with a layout rewrite
//! ([`crate::op::OpDef::alter_op_layout`]) is replaced by what its rule builds, where the rule
//! takes the call — today `nn.conv2d`'s, which turns float32 3×3 stride-1 convolutions with
//! constant weights into Winograd convolutions (`stdlib`'s `ops/nn/winograd.rs`). It runs
//! before `FoldConstant`, which then computes the rewritten weights (the Winograd weight
//! transform) once. A call whose rule declines stays as it is.

use super::util::op_rewrite::rewrite_calls;
use crate::diagnostics::CompileError;
use crate::ir::Module;
use crate::op::OpRegistry;
use crate::ty::TypeMap;

/// Rewrites every call whose operator's layout rule takes it, in every global function.
///
/// # Errors
/// None today (the pass signature).
pub fn alter_op_layout(m: &mut Module, types: &TypeMap, ops: &OpRegistry) -> Result<(), CompileError> {
    rewrite_calls(m, types, ops, |def| def.alter_op_layout).map(|_| ())
}
