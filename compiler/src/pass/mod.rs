//! Relay-to-Relay passes (paper §4), one file each, and the pass manager that runs them.
//!
//! Every pass registers once in [`registry`] under TVM's name, with the `-O` level whose
//! default pipeline runs it (each level is documented there); [`manager`] runs a list of
//! them, re-inferring types after each: inference is the verifier, so a pass that breaks
//! typing fails at once with the diagnostics. Passes mutate the module in place: they add
//! nodes to the arenas, replace bodies and add globals; replaced nodes just become
//! unreachable. Every variable a pass creates is annotated with its type.
//!
//! The default pipelines end in the form the bytecode emitter takes ([`lower_for_vm`]):
//! - a global with attribute [`CLOSURE`]`=1` has the captured values as parameters and a
//!   `fn` literal as its body (the closure's code); calling it creates the closure;
//! - every other `fn` literal is [`PRIMITIVE`]`=1`, a kernel whose body is operator calls on
//!   its parameters;
//! - bodies are `let` chains as described in [`to_anf()`].

mod alter_op_layout;
mod bind_params;
mod canonicalize_ops;
mod combine_parallel;
mod dead_code;
mod defuse_ops;
mod dynamic_to_static;
mod eliminate_common_subexpr;
mod eta_expand;
mod fold_constant;
mod fold_fused_constants;
mod fold_scale_axis;
mod fuse_ops;
mod hoist_take;
mod inline;
mod inline_closures;
mod lambda_lift;
mod lower_primitives;
pub mod manager;
mod partial_evaluate;
mod project_outputs;
mod qnn_canonicalize;
pub mod registry;
mod simplify_expr;
mod simplify_inference;
mod specialize_closures;
mod specialize_params;
mod to_anf;
mod to_basic_block_normal_form;
mod to_graph_normal_form;
mod util;

pub use alter_op_layout::alter_op_layout;
pub use bind_params::bind_params;
pub use canonicalize_ops::{canonicalize_ops, canonicalized_by};
pub use combine_parallel::{
    combine_parallel_batch_matmul, combine_parallel_conv2d, combine_parallel_dense,
    MIN_BATCH_MATMUL_BRANCHES, MIN_CONV2D_BRANCHES, MIN_DENSE_BRANCHES,
};
pub use dead_code::dead_code;
pub use defuse_ops::defuse_ops;
pub use dynamic_to_static::{dynamic_to_static, MAX_ROUNDS};
pub use eliminate_common_subexpr::eliminate_common_subexpr;
pub use eta_expand::eta_expand;
pub use fold_constant::fold_constant;
pub use fold_fused_constants::{fold_fused_constants, MAX_FOLDED_ELEMENTS};
pub use fold_scale_axis::{backward_fold_scale_axis, fold_scale_axis, forward_fold_scale_axis};
pub use fuse_ops::{fuse_ops, FuseOptions};
pub use hoist_take::{hoist_take, MAX_TABLE_BYTES, MAX_TABLE_GROWTH, MAX_TABLE_WORK};
pub use inline::{inline, INLINE};
pub use inline_closures::{inline_closures, InlineOptions};
pub use lambda_lift::{lambda_lift, LIFTED_INFIX};
pub use lower_primitives::lower_primitives;
pub use manager::{node_count, resolve, run_passes, Instrument, PassContext, PassFn, Silent};
pub use partial_evaluate::{partial_evaluate, MAX_UNFOLDS, MAX_UNFOLD_DEPTH};
pub use project_outputs::project_outputs;
pub use qnn_canonicalize::qnn_canonicalize;
pub use registry::{pipeline, Form, PassInfo, PASSES};
pub use simplify_expr::simplify_expr;
pub use simplify_inference::{simplify_inference, SIMPLIFIED_BY_INFERENCE};
pub use specialize_closures::{specialize_closures, MAX_SPECIALIZATIONS};
pub use specialize_params::{specialize_params, BoundParam};
pub use to_anf::to_anf;
pub use to_basic_block_normal_form::to_basic_block_normal_form;
pub use to_graph_normal_form::to_graph_normal_form;
pub(crate) use util::builder::is_primitive;
pub use util::free_vars::free_vars;
#[cfg(test)]
pub(crate) use util::test_util;
pub use util::walk::{children, Slot};
pub(crate) use util::walk::{pattern_vars, preorder};

use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, Function, Module};
use crate::op::OpRegistry;
use crate::ty::TypeMap;

/// The function attribute (`Primitive=1`) of a kernel: a `fn` whose body is operator calls
/// on its parameters, compiled as one unit and never a closure.
pub const PRIMITIVE: &str = "Primitive";

/// The global-function attribute (`Closure=1`) of a lifted closure: its parameters are the
/// captured values and its body is the closure's `fn` literal.
pub const CLOSURE: &str = "Closure";

/// How much [`lower_for_vm`] optimises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LowerOptions {
    /// The default pipeline of this level runs ([`registry`] says what each level means).
    pub opt_level: u8,
    /// Options of [`fuse_ops`] (used from `opt_level` 1).
    pub fuse: FuseOptions,
    /// Options of [`inline_closures`] (used from `opt_level` 1).
    pub inline: InlineOptions,
}

impl Default for LowerOptions {
    /// Level 2 (fused kernels), TVM's default group limit.
    fn default() -> Self {
        LowerOptions { opt_level: 2, fuse: FuseOptions::default(), inline: InlineOptions::default() }
    }
}

impl LowerOptions {
    /// The defaults at `opt_level`.
    pub fn at_level(opt_level: u8) -> Self {
        LowerOptions { opt_level, ..LowerOptions::default() }
    }
}

/// Runs the default pipeline of `options.opt_level` ([`pipeline`]) through the pass
/// manager. Returns the types of the final module.
///
/// # Errors
/// The program's type errors (from the first inference), or the diagnostics of whichever
/// later inference fails, which means a pass produced an ill-typed program (a compiler bug).
pub fn lower_for_vm(
    module: &mut Module,
    ops: &OpRegistry,
    options: &LowerOptions,
) -> Result<TypeMap, CompileError> {
    let cx = PassContext { ops, fuse: options.fuse, inline: options.inline, entries: &[] };
    run_passes(module, &pipeline(options.opt_level), &cx, &mut Silent)
}

/// The `fn` literal of a global made by [`lambda_lift`] (`Closure=1`, body a `fn` literal):
/// its node and a copy of it.
pub(crate) fn closure_literal(m: &Module, f: &Function) -> Option<(ExprId, Function)> {
    if !util::builder::has_flag(m, &f.attrs, CLOSURE) {
        return None;
    }
    match &m.expr(f.body).kind {
        ExprKind::Function(inner) => Some((f.body, (**inner).clone())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::util::test_util::{checked, ops, print};
    use crate::syntax::parse_module;

    #[test]
    fn the_pipeline_lowers_closures_and_operators() {
        let (mut m, _) = checked(
            "def @main(%x: float32) -> float32 {
               let %f = fn (%y: float32) -> float32 { add(%y, %x) };
               %f(negative(%x))
             }",
        );
        lower_for_vm(&mut m, &ops(), &LowerOptions::at_level(0)).unwrap();
        let out = print(&mut m);
        assert!(out.contains("let %f = @main_lifted_0(%x);"), "{out}");
        assert!(
            out.contains("def @main_lifted_0(%x: float32, Closure=1) -> fn (float32) -> float32 {"),
            "{out}"
        );
        assert_eq!(out.matches("Primitive=1").count(), 2, "{out}");
    }

    #[test]
    fn type_errors_come_back_as_diagnostics() {
        let mut m = parse_module("t.relay", "def @main(%x: float32) -> int32 { %x }").unwrap();
        let err = lower_for_vm(&mut m, &ops(), &LowerOptions::default()).unwrap_err();
        assert!(!err.diagnostics.is_empty());
    }

    #[test]
    fn missing_types_are_internal_errors_not_panics() {
        let text = "type B { W(int32) }
                    def @main(%x: int32) { let %f = fn () { negative(%x) }; (W, %f()) }";
        let ops = ops();
        let cx = PassContext {
            ops: &ops,
            fuse: FuseOptions::default(),
            inline: InlineOptions::default(),
            entries: &[],
        };
        for pass in pipeline(0) {
            let mut m = parse_module("t.relay", text).unwrap();
            let err = (pass.run)(&mut m, &TypeMap::default(), &cx).unwrap_err();
            assert!(err.to_string().starts_with("internal compiler error in pass"), "{err}");
        }
    }
}
