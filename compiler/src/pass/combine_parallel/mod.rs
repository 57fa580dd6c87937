//! What the `CombineParallel*` passes share (TVM's `ParallelOpCombiner`): finding the
//! branches — calls of one operator on the same input with compatible attributes and
//! weights — and replacing a group of at least `min_branches` of them by one call on the
//! weights concatenated, each branch becoming a `strided_slice` of the combined result.
//!
//! Like TVM's, the passes work on dataflow: the input must be one node shared by the
//! branches (graph form) or a parameter of the global function, and each weight a metadata
//! constant or such a parameter, so the combined call is valid wherever a branch was. Calls
//! evaluated only in some `if`/`match` branch or inside a `fn` body are not combined with
//! others. Unlike TVM's combiners, the elementwise operators following the branches are not
//! combined too (each branch's slice feeds them as before).

mod batch_matmul;
mod conv2d;
mod dense;

pub use batch_matmul::{combine_parallel_batch_matmul, MIN_BATCH_MATMUL_BRANCHES};
pub use conv2d::{combine_parallel_conv2d, MIN_CONV2D_BRANCHES};
pub use dense::{combine_parallel_dense, MIN_DENSE_BRANCHES};

use super::util::builder::{as_op_call, op_call, static_tensor};
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use super::util::walk::{preorder, Slot};
use crate::diagnostics::CompileError;
use crate::ir::{AttrValue, Attrs, ExprId, ExprKind, Module, VarId};
use crate::ty::TypeMap;
use std::collections::HashMap;
use std::rc::Rc;

/// How one operator combines.
pub(super) struct Combiner {
    /// The operator (`nn.conv2d`).
    pub op: &'static str,
    /// The attribute giving the output width (`channels`, `units`), summed when combined.
    pub width: Option<&'static str>,
    /// The fewest branches worth combining.
    pub min_branches: usize,
    /// The weight axis the branches' weights are concatenated along, given the call's
    /// attributes; `None` when the call is not supported (a layout the kernels do not run).
    pub weight_axis: fn(&Module, &Attrs) -> Option<usize>,
    /// The axis of the output (of `rank`) each branch's part lies along.
    pub output_axis: fn(usize) -> usize,
}

/// What makes two calls of the operator combinable.
#[derive(PartialEq)]
struct Key {
    input: Input,
    /// The attributes other than the width.
    attrs: Attrs,
    /// The weight's shape with the concatenated axis set to 0, and its dtype.
    weight: (Vec<i64>, relay_devices::DType),
}

/// The input the branches share.
#[derive(Clone, Copy, PartialEq)]
enum Input {
    Node(ExprId),
    Param(VarId),
}

/// One branch: the call and how wide its part of the combined output is.
struct Branch {
    call: ExprId,
    width: i64,
}

/// Combines the parallel calls of `c.op` in every global function (see the module docs).
pub(super) fn combine_parallel(m: &mut Module, types: &TypeMap, c: &Combiner) -> Result<(), CompileError> {
    for i in 0..m.functions.len() {
        let params = m.functions[i].func.params.clone();
        let body = m.functions[i].func.body;
        let groups = groups(m, types, c, &params, body);
        let mut slices = Slices { combiner: c, types, groups, combined: HashMap::new() };
        m.functions[i].func.body = rewrite(m, body, &mut slices)?;
    }
    Ok(())
}

/// The groups of at least `c.min_branches` combinable calls under `body`, each call mapped
/// to its group's branches.
fn groups(
    m: &Module,
    types: &TypeMap,
    c: &Combiner,
    params: &[VarId],
    body: ExprId,
) -> HashMap<ExprId, Rc<Vec<Branch>>> {
    let atom = |e: ExprId| match m.expr(e).kind {
        ExprKind::Var(v) if params.contains(&v) => Some(Input::Param(v)),
        ExprKind::Constant(_) => Some(Input::Node(e)),
        _ => None,
    };
    let mut found: Vec<(Key, Vec<Branch>)> = vec![];
    for e in preorder(m, body, |s| matches!(s, Slot::Operand | Slot::Callee)) {
        let Some((op, &[input, weight], attrs)) = as_op_call(m, e) else { continue };
        if op != c.op || atom(weight).is_none() {
            continue;
        }
        let Some(axis) = (c.weight_axis)(m, attrs) else { continue };
        let Some((mut shape, dtype)) = types.expr(weight).and_then(|t| static_tensor(m, t)) else { continue };
        let Some(width) = shape.get_mut(axis).map(std::mem::take) else { continue };
        let input = atom(input).unwrap_or(Input::Node(input));
        let width_attr = c.width.map(|w| m.symbols.get(w));
        let attrs = Attrs(attrs.0.iter().filter(|(k, _)| Some(Some(*k)) != width_attr).cloned().collect());
        let key = Key { input, attrs, weight: (shape, dtype) };
        let branch = Branch { call: e, width };
        match found.iter_mut().find(|(k, _)| *k == key) {
            Some((_, branches)) => branches.push(branch),
            None => found.push((key, vec![branch])),
        }
    }
    let mut groups = HashMap::new();
    for (_, branches) in found.into_iter().filter(|(_, b)| b.len() >= c.min_branches) {
        let branches = Rc::new(branches);
        for b in branches.iter() {
            groups.insert(b.call, branches.clone());
        }
    }
    groups
}

/// Replaces each branch by its slice of the group's combined call, made at the first branch
/// reached (its operands already rewritten; the input is the same for every branch).
struct Slices<'a> {
    combiner: &'a Combiner,
    types: &'a TypeMap,
    groups: HashMap<ExprId, Rc<Vec<Branch>>>,
    /// The combined call of each group, by its first branch.
    combined: HashMap<ExprId, ExprId>,
}

impl Rewrite for Slices<'_> {
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let new = rebuild(m, old, kids);
        let Some(branches) = self.groups.get(&old).cloned() else { return Ok(new) };
        let Some(rank) = self.types.expr(old).and_then(|t| static_tensor(m, t)).map(|(s, _)| s.len()) else {
            return Ok(new);
        };
        let span = m.expr(old).span;
        let first = branches[0].call;
        let combined = match self.combined.get(&first) {
            Some(&c) => c,
            None => {
                let c = self.combine(m, new, &branches);
                self.combined.insert(first, c);
                c
            }
        };
        let at = branches.iter().position(|b| b.call == old).unwrap_or(0);
        let begin: i64 = branches[..at].iter().map(|b| b.width).sum();
        let end = begin + branches[at].width;
        let axis = (self.combiner.output_axis)(rank) as i64;
        let list = |v: i64| AttrValue::List(vec![AttrValue::Int(v)]);
        let attrs = vec![("begin", list(begin)), ("end", list(end)), ("axes", list(axis))];
        Ok(op_call(m, "strided_slice", vec![combined], attrs, span))
    }
}

impl Slices<'_> {
    /// The combined call: `branch`'s operator on its input and the concatenated weights,
    /// the width attribute (when given) the sum of the branches'.
    fn combine(&self, m: &mut Module, branch: ExprId, branches: &[Branch]) -> ExprId {
        let span = m.expr(branch).span;
        let (input, mut attrs) = match as_op_call(m, branch) {
            Some((_, args, attrs)) => (args[0], attrs.clone()),
            None => return branch,
        };
        let weights: Vec<ExprId> = branches
            .iter()
            .filter_map(|b| match &m.expr(b.call).kind {
                ExprKind::Call { args, .. } => args.get(1).copied(),
                _ => None,
            })
            .collect();
        let axis = (self.combiner.weight_axis)(m, &attrs).unwrap_or(0) as i64;
        let tuple = m.add_expr(ExprKind::Tuple(weights), span);
        let weight = op_call(m, "concatenate", vec![tuple], vec![("axis", AttrValue::Int(axis))], span);
        if let Some(width) = self.combiner.width.and_then(|w| m.symbols.get(w)) {
            let total = branches.iter().map(|b| b.width).sum();
            for (k, v) in &mut attrs.0 {
                if *k == width && *v != AttrValue::Null {
                    *v = AttrValue::Int(total);
                }
            }
        }
        let callee = match &m.expr(branch).kind {
            ExprKind::Call { callee, .. } => *callee,
            _ => return branch,
        };
        m.add_expr(ExprKind::Call { callee, args: vec![input, weight], attrs }, span)
    }
}
