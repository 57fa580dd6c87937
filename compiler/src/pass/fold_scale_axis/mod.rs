//! Scale-axis folding (TVM `FoldScaleAxis`): a multiplication by a per-channel constant next
//! to an `nn.conv2d` or `nn.dense` is folded into the operator's weight, so it costs nothing
//! at run time once the weight is a constant (a batch norm that `SimplifyInference` turned
//! into a scale and shift after a convolution disappears into the convolution's weight).
//!
//! [`backward_fold_scale_axis`] folds a scale of the output into the weight's output
//! channels, [`forward_fold_scale_axis`] a scale of the input into its input channels;
//! [`fold_scale_axis`] runs backward then forward, as TVM does. Like TVM's, the directions
//! work on dataflow (graph form: operands nested or shared, not bound by `let`), which
//! [`fold_scale_axis`] converts to first. A scale folds only when it is a compile-time
//! constant (literal or metadata constant) varying at most along the channel axis of the layouts the kernels run (`NCHW` data, `OIHW` weights; `[units,
//! in]` for dense), and every node it passes through has no other user; otherwise the
//! program is left alone. When the weight is a constant too, the product is computed at
//! once; else the weight becomes a `multiply` call.

mod axis;
mod backward;
mod forward;

pub use backward::backward_fold_scale_axis;
pub use forward::forward_fold_scale_axis;

use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, Module};
use crate::op::OpRegistry;
use crate::pass::manager::Revision;
use crate::pass::to_graph_normal_form;
use crate::pass::util::builder::is_primitive;
use crate::pass::util::rewrite::{rebuild, rewrite, Rewrite};
use crate::ty::{infer_types, TypeMap};
use axis::{use_counts, Origins};
use std::collections::HashMap;

/// [`backward_fold_scale_axis`] then [`forward_fold_scale_axis`] on the program in graph
/// form: programs bind most values by `let` (the ONNX importer binds every node), which
/// would hide every scale from the dataflow rules, so [`to_graph_normal_form`] runs first.
/// Types are inferred again after each step that changed something.
///
/// # Errors
/// The diagnostics of an inference between the steps (a bug of the step before it).
pub fn fold_scale_axis(m: &mut Module, types: &TypeMap, ops: &OpRegistry) -> Result<(), CompileError> {
    let mut types = types.clone();
    let steps: [Step; 3] =
        [|m, t, _| to_graph_normal_form(m, t), backward_fold_scale_axis, forward_fold_scale_axis];
    for (i, step) in steps.iter().enumerate() {
        let before = Revision::of(m);
        step(m, &types, ops)?;
        // Inference is most of the time: only when the step changed something, as the pass
        // manager decides between passes.
        if i + 1 < steps.len() && Revision::of(m) != before {
            types = infer_types(m, ops)?;
        }
    }
    Ok(())
}

/// One step of [`fold_scale_axis`].
type Step = fn(&mut Module, &TypeMap, &OpRegistry) -> Result<(), CompileError>;

/// What one direction reads while it rewrites a function: the program before the pass.
struct Folder<'a> {
    types: &'a TypeMap,
    ops: &'a OpRegistry,
    /// Use counts in the function before the pass.
    uses: HashMap<ExprId, usize>,
    origins: Origins,
}

impl Folder<'_> {
    /// Whether `e` (through its origin) has exactly one user, so rewriting it for that user
    /// neither changes nor duplicates what others see.
    fn single_use(&self, e: ExprId) -> bool {
        self.uses.get(&self.origins.old(e)).copied() == Some(1)
    }
}

/// A direction's rule: the replacement of a node whose operands are already rewritten.
type Rule = fn(&Folder, &mut Module, ExprId) -> Option<ExprId>;

/// Applies `rule` bottom-up to every global function (kernels left alone).
fn fold_each_function(
    m: &mut Module,
    types: &TypeMap,
    ops: &OpRegistry,
    rule: Rule,
) -> Result<(), CompileError> {
    for i in 0..m.functions.len() {
        let body = m.functions[i].func.body;
        let uses = use_counts(m, body);
        let mut pass = Pass { folder: Folder { types, ops, uses, origins: Origins::default() }, rule };
        m.functions[i].func.body = rewrite(m, body, &mut pass)?;
    }
    Ok(())
}

struct Pass<'a> {
    folder: Folder<'a>,
    rule: Rule,
}

impl Rewrite for Pass<'_> {
    fn enter(&mut self, m: &Module, e: ExprId) -> bool {
        !matches!(&m.expr(e).kind, ExprKind::Function(f) if is_primitive(m, f))
    }

    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let new = rebuild(m, old, kids);
        self.folder.origins.record(new, old);
        Ok((self.rule)(&self.folder, m, new).unwrap_or(new))
    }
}
