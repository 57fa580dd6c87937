//! `BackwardFoldScaleAxis`: a per-channel constant scale applied to the output of
//! `nn.conv2d` / `nn.dense` moves into the weight's output-channel axis.
//!
//! `multiply(E, s)` (either operand order) where `s` varies only along `E`'s channel axis
//! and `E` is, through nodes each used only there,
//! - `nn.conv2d(x, w)` / `nn.dense(x, w)` → the call on `w * s` (laid along axis 0);
//! - `add(E', b)` with `b` a per-channel constant → `add(E'', b * s)`;
//! - `nn.bias_add(E', b)` along the channel axis → `nn.bias_add(E'', b * s)`;
//! - `nn.relu(E')` when every element of `s` is positive (`relu(y) * s = relu(y * s)` only
//!   then) → `nn.relu(E'')`;
//!
//! becomes `E` with the scale folded below. Anything else is left as it is.

use super::axis::{binary, call_with, channel_constant, channel_values, split_add, Consumer};
use super::{fold_each_function, Folder};
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, Module};
use crate::op::{AttrReader, OpRegistry};
use crate::pass::util::builder::{as_op_call, op_call};
use crate::ty::TypeMap;
use relay_devices::DType;

/// Folds scales backward in every global function (see the module docs).
///
/// # Errors
/// None today (the pass signature).
pub fn backward_fold_scale_axis(
    m: &mut Module,
    types: &TypeMap,
    ops: &OpRegistry,
) -> Result<(), CompileError> {
    fold_each_function(m, types, ops, fold)
}

/// The scale being folded: its values along the channel axis of an activation of `rank`.
struct Scale {
    values: Vec<f64>,
    dtype: DType,
    rank: usize,
    axis: usize,
}

/// `e` with its scale folded into a weight below, if `e` is such a `multiply`.
fn fold(f: &Folder, m: &mut Module, e: ExprId) -> Option<ExprId> {
    let (op, &[a, b], _) = as_op_call(m, e)? else { return None };
    if op != "multiply" {
        return None;
    }
    let (shape, dtype) = f.origins.tensor(m, f.types, e)?;
    let rank = shape.len();
    [(a, b), (b, a)].into_iter().find_map(|(x, s)| {
        let axis = consumer_axis(m, x, rank)?;
        let values = channel_values(m, s, rank, axis, shape[axis])?;
        fold_into(f, m, x, &Scale { values, dtype, rank, axis })
    })
}

/// The channel axis of the conv2d or dense at the bottom of the chain under `e`.
fn consumer_axis(m: &Module, mut e: ExprId, rank: usize) -> Option<usize> {
    loop {
        if let Some(c) = Consumer::of(m, e) {
            return Some(c.channel_axis(rank));
        }
        let (op, args, _) = as_op_call(m, e)?;
        e = match op {
            "add" => split_add(m, args)?.0,
            "nn.bias_add" | "nn.relu" => *args.first()?,
            _ => return None,
        };
    }
}

/// `e` (a node of the chain, used only by its parent) computed as `e * scale`.
fn fold_into(f: &Folder, m: &mut Module, e: ExprId, scale: &Scale) -> Option<ExprId> {
    if !f.single_use(e) {
        return None;
    }
    let span = m.expr(e).span;
    if let Some(c) = Consumer::of(m, e) {
        let (_, weight_dtype) = f.origins.tensor(m, f.types, c.weight)?;
        if weight_dtype != scale.dtype {
            return None;
        }
        let s = channel_constant(m, &scale.values, scale.dtype, c.weight_rank - 1, span);
        let weight = binary(m, f.ops, "multiply", c.weight, s, span);
        return Some(c.rebuild(m, c.data, weight, span));
    }
    let (op, args, attrs) = as_op_call(m, e)?;
    let (op, args, attrs) = (op.to_string(), args.to_vec(), attrs.clone());
    match (op.as_str(), args.as_slice()) {
        ("nn.relu", &[x]) if scale.values.iter().all(|&v| v > 0.0) => {
            let x = fold_into(f, m, x, scale)?;
            Some(op_call(m, "nn.relu", vec![x], vec![], span))
        }
        ("add", _) => {
            let (x, b) = split_add(m, &args)?;
            channel_values(m, b, scale.rank, scale.axis, scale.values.len() as i64)?;
            let x = fold_into(f, m, x, scale)?;
            let trailing = scale.rank - scale.axis - 1;
            let s = channel_constant(m, &scale.values, scale.dtype, trailing, span);
            let b = binary(m, f.ops, "multiply", b, s, span);
            Some(op_call(m, "add", vec![x, b], vec![], span))
        }
        ("nn.bias_add", &[x, b]) => {
            let axis = AttrReader::new(&m.symbols, &attrs).int("axis", 1).ok()?;
            let axis = if axis < 0 { axis + scale.rank as i64 } else { axis };
            if axis != scale.axis as i64 {
                return None;
            }
            let x = fold_into(f, m, x, scale)?;
            let s = channel_constant(m, &scale.values, scale.dtype, 0, span);
            let b = binary(m, f.ops, "multiply", b, s, span);
            Some(call_with(m, "nn.bias_add", vec![x, b], attrs, span))
        }
        _ => None,
    }
}
