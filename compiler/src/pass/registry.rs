//! The pass registry: every pass once, under TVM's name where TVM has the pass, with the
//! lowest `-O` level whose default pipeline runs it, the passes it requires and the forms of
//! the program it preserves. The table's order is the order of the default pipelines.
//!
//! What each level means (`relay-vm opt -O N`, `run/compile --opt-level N`):
//! - **0**: lowering only ([`EtaExpand`](super::eta_expand), `LambdaLift`, `LowerPrimitives`,
//!   `ToANormalForm`): one operator per primitive function, each run by its reference
//!   kernel. The oracle the other levels are tested against.
//! - **1**: fused kernels. Globals marked `Inline=1` and small local functions inlined,
//!   local functions specialised to static shapes, tuple
//!   outputs projected, `FuseOps` groups, fused kernels on constants computed at compile time
//!   (`FoldFusedConstants`).
//! - **2** (the default): Relay-level cleanup before lowering, as TVM's build pipeline does:
//!   `QnnCanonicalize` (quantized operators to ordinary ones, which fuse; first, so that
//!   `FoldConstant` folds their constant parameters), `CanonicalizeOps` (the same for ordinary
//!   operators with a canonical form, such as `meshgrid`), `SimplifyInference` (batch-norm to scale
//!   and shift, dropout removed), `FoldConstant`, `DynamicToStatic` (`dyn.*` calls on
//!   constant shapes to their static operators, which fuse),
//!   `SimplifyExpr` and `DeadCodeElimination`. These change which kernels exist, not only how
//!   they are grouped. After the closures are inlined and the outputs projected, also
//!   `HoistTake` (row-wise operators over a lookup in a constant table become one lookup in a
//!   table computed at compile time; with weights bound as constants, the Tree-LSTM's leaves).
//! - **3**: also `EliminateCommonSubexpr` (TVM's level 3 too: merging equal calls can keep a
//!   tensor alive longer, trading memory for work) and `FoldScaleAxis` (TVM's level 3: it
//!   runs after `FoldConstant` and multiplies constant weights itself, so a batch norm's
//!   scale after a conv2d ends in the conv2d's weight).
//!
//! Passes with no level run only when named (`--passes`).

use super::manager::PassFn;
use super::{
    alter_op_layout, backward_fold_scale_axis, canonicalize_ops, combine_parallel_batch_matmul,
    combine_parallel_conv2d, combine_parallel_dense, dead_code, defuse_ops, dynamic_to_static,
    eliminate_common_subexpr, eta_expand, fold_constant, fold_fused_constants, fold_scale_axis,
    forward_fold_scale_axis, fuse_ops, hoist_take, inline, inline_closures, lambda_lift, lower_primitives,
    project_outputs, qnn_canonicalize, simplify_expr, simplify_inference, specialize_closures, to_anf,
    to_graph_normal_form,
};
use super::{partial_evaluate, to_basic_block_normal_form};

/// A form of the program that later passes may rely on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Every non-atomic expression is bound by `let` ([`to_anf`](super::to_anf())).
    ANormalForm,
    /// No `fn` literal outside `Closure=1` globals except `Primitive=1` kernels
    /// ([`lambda_lift`](super::lambda_lift())).
    LambdaLifted,
}

/// One registered pass.
#[derive(Clone, Copy, Debug)]
pub struct PassInfo {
    /// TVM's name (`FoldConstant`); ours for passes TVM does not have (`InlineClosures`).
    pub name: &'static str,
    /// The lowest `-O` level whose default pipeline runs it; `None`: only when named.
    pub opt_level: Option<u8>,
    /// Passes that must have run before it (run first when it is named alone).
    pub required: &'static [&'static str],
    /// The forms of the program it keeps when its input has them.
    pub preserves: &'static [Form],
    /// One line for listings.
    pub doc: &'static str,
    /// The pass itself.
    pub run: PassFn,
}

use Form::{ANormalForm, LambdaLifted};

/// Both forms.
const ALL: &[Form] = &[ANormalForm, LambdaLifted];

/// A `CombineParallel*` pass: TVM runs these at its level 4, above every default pipeline,
/// because one wide kernel is not always faster than several narrow ones; here they run only
/// when named.
const fn combine_parallel(name: &'static str, doc: &'static str, run: PassFn) -> PassInfo {
    PassInfo { name, opt_level: None, required: &[], preserves: &[LambdaLifted], doc, run }
}

/// Every pass, in default-pipeline order.
pub static PASSES: &[PassInfo] = &[
    PassInfo {
        name: "QnnCanonicalize",
        opt_level: Some(2),
        required: &[],
        preserves: &[LambdaLifted],
        doc: "qnn.* calls to casts, integer arithmetic and int32 conv2d/dense (their canonical forms), which fuse",
        run: |m, t, c| qnn_canonicalize(m, t, c.ops),
    },
    PassInfo {
        name: "CanonicalizeOps",
        // TVM's level is 3; here 2, since the operators it rewrites (`meshgrid`) have no
        // fused kernel otherwise.
        opt_level: Some(2),
        required: &[],
        preserves: &[LambdaLifted],
        doc: "ordinary operators with a canonical form to the operators it is made of, which fuse (meshgrid to broadcast_to of expand_dims)",
        run: |m, t, c| canonicalize_ops(m, t, c.ops),
    },
    PassInfo {
        name: "SimplifyInference",
        opt_level: Some(2),
        required: &[],
        preserves: &[LambdaLifted],
        doc: "nn.batch_norm to a scale and shift, nn.dropout removed (inference only); instance and group norm, l2_normalize to reductions and arithmetic",
        run: |m, t, _| simplify_inference(m, t),
    },
    PassInfo {
        name: "AlterOpLayout",
        // Off by default: measured, the Winograd kernel is not faster than the window
        // product yet (`benches/vision.md`, "Winograd convolutions").
        opt_level: None,
        required: &[],
        preserves: &[LambdaLifted],
        doc: "operators rewritten into the forms this backend computes faster: 3x3 conv2d with constant weights to Winograd",
        run: |m, t, c| alter_op_layout(m, t, c.ops),
    },
    PassInfo {
        name: "FoldConstant",
        opt_level: Some(2),
        required: &[],
        preserves: &[LambdaLifted],
        doc: "computes constant subexpressions (operators, tuples, if/match on constants) at compile time",
        run: |m, t, c| fold_constant(m, t, c.ops),
    },
    PassInfo {
        name: "DynamicToStatic",
        opt_level: Some(2),
        required: &[],
        preserves: &[LambdaLifted],
        doc: "dyn.* calls whose shape operands are constants become their static operators (folding constants between rounds)",
        run: |m, t, c| dynamic_to_static(m, t, c.ops),
    },
    PassInfo {
        name: "BackwardFoldScaleAxis",
        opt_level: None,
        required: &[],
        preserves: &[LambdaLifted],
        doc: "a per-channel constant scale of a conv2d/dense output folds into the weight",
        run: |m, t, c| backward_fold_scale_axis(m, t, c.ops),
    },
    PassInfo {
        name: "ForwardFoldScaleAxis",
        opt_level: None,
        required: &[],
        preserves: &[LambdaLifted],
        doc: "a per-channel constant scale of a conv2d/dense input folds into the weight",
        run: |m, t, c| forward_fold_scale_axis(m, t, c.ops),
    },
    PassInfo {
        name: "FoldScaleAxis",
        opt_level: Some(3),
        required: &[],
        preserves: &[LambdaLifted],
        doc: "BackwardFoldScaleAxis then ForwardFoldScaleAxis (constant weights absorb the scale at once)",
        run: |m, t, c| fold_scale_axis(m, t, c.ops),
    },
    combine_parallel(
        "CombineParallelConv2D",
        "three or more nn.conv2d calls on one input become one call on concatenated weights, then slices",
        |m, t, _| combine_parallel_conv2d(m, t),
    ),
    combine_parallel(
        "CombineParallelDense",
        "three or more nn.dense calls on one input become one call on concatenated weights, then slices",
        |m, t, _| combine_parallel_dense(m, t),
    ),
    combine_parallel(
        "CombineParallelBatchMatmul",
        "three or more nn.batch_matmul calls on one input become one call on concatenated weights, then slices",
        |m, t, _| combine_parallel_batch_matmul(m, t),
    ),
    PassInfo {
        name: "SimplifyExpr",
        opt_level: Some(2),
        required: &[],
        preserves: ALL,
        doc: "reshape chains, transpose pairs, x*1, x+0, cast chains, broadcast_to of the same shape",
        run: |m, t, _| simplify_expr(m, t),
    },
    PassInfo {
        name: "EliminateCommonSubexpr",
        opt_level: Some(3),
        required: &[],
        preserves: ALL,
        doc: "one binding for equal operator calls on the same operands",
        run: |m, t, _| eliminate_common_subexpr(m, t),
    },
    PassInfo {
        name: "DeadCodeElimination",
        opt_level: Some(2),
        required: &[],
        preserves: ALL,
        doc: "removes unused lets of pure values, and globals the entry functions do not reach",
        run: |m, t, c| dead_code(m, t, c.entries),
    },
    PassInfo {
        name: "Inline",
        opt_level: Some(1),
        required: &[],
        preserves: &[],
        doc: "copies the bodies of globals marked Inline=1 into their call sites",
        run: |m, t, _| inline(m, t),
    },
    PassInfo {
        name: "InlineClosures",
        opt_level: Some(1),
        required: &[],
        preserves: &[LambdaLifted],
        doc: "copies small non-recursive local functions into their call sites",
        run: |m, t, c| inline_closures(m, t, &c.inline),
    },
    PassInfo {
        name: "SpecializeClosures",
        opt_level: Some(1),
        required: &[],
        preserves: &[],
        doc: "one statically shaped copy of a `?`-typed local function per argument type",
        run: |m, t, _| specialize_closures(m, t),
    },
    PassInfo {
        name: "EtaExpand",
        opt_level: Some(0),
        required: &[],
        preserves: &[],
        doc: "globals and constructors used as values become fn literals",
        run: |m, t, _| eta_expand(m, t),
    },
    PassInfo {
        name: "LambdaLift",
        opt_level: Some(0),
        required: &["EtaExpand"],
        preserves: &[LambdaLifted],
        doc: "fn literals become Closure=1 globals taking their captured values",
        run: |m, t, _| lambda_lift(m, t),
    },
    PassInfo {
        name: "ProjectOutputs",
        opt_level: Some(1),
        required: &[],
        preserves: ALL,
        doc: "split(x).i becomes strided_slice(x, ...) through the operator's projection",
        run: |m, t, c| project_outputs(m, t, c.ops),
    },
    PassInfo {
        name: "HoistTake",
        // After InlineClosures and ProjectOutputs: a model's per-token chain is whole only
        // once its local functions are inlined and `split(x).i` is a `strided_slice`.
        opt_level: Some(2),
        required: &[],
        preserves: &[LambdaLifted],
        doc: "row-wise operators over take(constant table, %i, axis=0) become one lookup in a table computed now",
        run: |m, t, c| hoist_take(m, t, c.ops),
    },
    PassInfo {
        name: "LowerPrimitives",
        opt_level: Some(0),
        required: &["LambdaLift"],
        preserves: &[LambdaLifted],
        doc: "each operator call becomes a call of a one-operator Primitive=1 function",
        run: |m, t, _| lower_primitives(m, t),
    },
    PassInfo {
        name: "ToANormalForm",
        opt_level: Some(0),
        required: &[],
        preserves: ALL,
        doc: "binds every non-atomic expression by let",
        run: |m, t, _| to_anf(m, t),
    },
    PassInfo {
        name: "FuseOps",
        opt_level: Some(1),
        required: &["LowerPrimitives", "ToANormalForm"],
        // A fused group is called as a `fn` literal, not through a variable.
        preserves: &[LambdaLifted],
        doc: "groups primitive calls into fused kernels (TVM's rules, and ours on top)",
        run: |m, t, c| fuse_ops(m, t, c.ops, &c.fuse),
    },
    PassInfo {
        name: "FoldFusedConstants",
        opt_level: Some(1),
        required: &["FuseOps"],
        preserves: ALL,
        doc: "runs fused kernels on constant inputs once, at compile time, with the kir interpreter",
        run: |m, t, c| fold_fused_constants(m, t, c.ops),
    },
    PassInfo {
        name: "DefuseOps",
        opt_level: None,
        required: &[],
        preserves: &[LambdaLifted],
        doc: "calls of Primitive=1 functions become their bodies again (the inverse of FuseOps)",
        run: |m, t, _| defuse_ops(m, t),
    },
    PassInfo {
        name: "ToGraphNormalForm",
        opt_level: None,
        required: &[],
        preserves: &[LambdaLifted],
        doc: "pure lets become shared nodes of a dataflow graph (the inverse of ToANormalForm)",
        run: |m, t, _| to_graph_normal_form(m, t),
    },
    PassInfo {
        name: "PartialEvaluate",
        opt_level: None,
        required: &[],
        preserves: &[],
        doc: "unfolds calls of known functions and computes what is known (closures, ADTs, refs), then removes dead code",
        run: |m, t, c| partial_evaluate(m, t, c.ops),
    },
    PassInfo {
        name: "ToBasicBlockNormalForm",
        opt_level: None,
        required: &[],
        preserves: &[LambdaLifted],
        doc: "binds by let each expression shared by several blocks, in the innermost block holding its uses",
        run: |m, t, _| to_basic_block_normal_form(m, t),
    },
];

/// The pass named `name`.
pub fn lookup(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.name == name)
}

/// The default pipeline of level `opt_level` (levels above 3 are level 3).
pub fn pipeline(opt_level: u8) -> Vec<&'static PassInfo> {
    PASSES.iter().filter(|p| p.opt_level.is_some_and(|l| l <= opt_level)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_requirements_come_first() {
        for (i, p) in PASSES.iter().enumerate() {
            assert_eq!(PASSES.iter().filter(|q| q.name == p.name).count(), 1, "{}", p.name);
            for r in p.required {
                let at = PASSES.iter().position(|q| q.name == *r);
                assert!(at.is_some_and(|at| at < i), "{} requires {r}, which must come before it", p.name);
            }
        }
    }

    #[test]
    fn each_level_adds_to_the_one_below() {
        let names = |l| pipeline(l).iter().map(|p| p.name).collect::<Vec<_>>();
        assert_eq!(names(0), ["EtaExpand", "LambdaLift", "LowerPrimitives", "ToANormalForm"]);
        for l in 1..=3 {
            assert!(names(l).len() > names(l - 1).len(), "level {l} must mean something");
            assert!(names(l - 1).iter().all(|n| names(l).contains(n)));
        }
        assert_eq!(names(3), names(9));
    }
}
