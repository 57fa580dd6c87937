//! `ForwardFoldScaleAxis`: a per-channel constant scale applied to the input of
//! `nn.conv2d` (with one group) / `nn.dense` moves into the weight's input-channel axis.
//!
//! `nn.conv2d(D, w)` / `nn.dense(D, w)` where `D` is, through nodes each used only there,
//! - `multiply(x, s)` (either operand order) with `s` varying only along the channel axis →
//!   `D' = x`;
//! - `nn.relu(D1)` when every element of the scale is positive → `nn.relu(D1')`;
//! - `add(D1, b)` with `b` a per-channel constant, every scale element non-zero (as
//!   `x * s + b = (x + b / s) * s`) → `add(D1', b / s)`, and `nn.bias_add` alike;
//!
//! becomes the call on `D'` and `w * s` (laid along axis 1). Anything else is left as it is.

use super::axis::{binary, call_with, channel_constant, channel_values, split_add, Consumer};
use super::{fold_each_function, Folder};
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, Module};
use crate::op::{AttrReader, OpRegistry};
use crate::pass::util::builder::{as_op_call, op_call};
use crate::ty::TypeMap;
use relay_devices::DType;

/// Folds scales forward in every global function (see the module docs).
///
/// # Errors
/// None today (the pass signature).
pub fn forward_fold_scale_axis(
    m: &mut Module,
    types: &TypeMap,
    ops: &OpRegistry,
) -> Result<(), CompileError> {
    fold_each_function(m, types, ops, fold)
}

/// Where the scale lies: the channel axis of an activation of `rank`, `channels` long.
#[derive(Clone, Copy)]
struct Axis {
    rank: usize,
    axis: usize,
    channels: i64,
    dtype: DType,
}

/// `e` with the scale of its input folded into its weight, if `e` is a consumer whose
/// input is scaled per channel.
fn fold(f: &Folder, m: &mut Module, e: ExprId) -> Option<ExprId> {
    let c = Consumer::of(m, e).filter(|c| c.groups == 1)?;
    let (shape, dtype) = f.origins.tensor(m, f.types, c.data)?;
    let (_, weight_dtype) = f.origins.tensor(m, f.types, c.weight)?;
    if weight_dtype != dtype {
        return None;
    }
    let axis = c.channel_axis(shape.len());
    let at = Axis { rank: shape.len(), axis, channels: *shape.get(axis)?, dtype };
    let (data, values) = unscale(f, m, c.data, at)?;
    let span = m.expr(e).span;
    let s = channel_constant(m, &values, dtype, c.weight_rank - 2, span);
    let weight = binary(m, f.ops, "multiply", c.weight, s, span);
    Some(c.rebuild(m, data, weight, span))
}

/// `e` (a node of the chain, used only by its parent) as `(d, s)` with `e = d * s`, `s`
/// the scale's values along the channel axis.
fn unscale(f: &Folder, m: &mut Module, e: ExprId, at: Axis) -> Option<(ExprId, Vec<f64>)> {
    if !f.single_use(e) {
        return None;
    }
    let span = m.expr(e).span;
    let (op, args, attrs) = as_op_call(m, e)?;
    let (op, args, attrs) = (op.to_string(), args.to_vec(), attrs.clone());
    let per_channel = |m: &Module, s| channel_values(m, s, at.rank, at.axis, at.channels);
    match (op.as_str(), args.as_slice()) {
        ("multiply", &[a, b]) => {
            [(a, b), (b, a)].into_iter().find_map(|(x, s)| Some((x, per_channel(m, s)?)))
        }
        ("nn.relu", &[x]) => {
            let (x, values) = unscale(f, m, x, at)?;
            values.iter().all(|&v| v > 0.0).then_some(())?;
            Some((op_call(m, "nn.relu", vec![x], vec![], span), values))
        }
        ("add", _) => {
            let (x, b) = split_add(m, &args)?;
            per_channel(m, b)?;
            let (x, values) = unscale(f, m, x, at)?;
            values.iter().all(|&v| v != 0.0).then_some(())?;
            let s = channel_constant(m, &values, at.dtype, at.rank - at.axis - 1, span);
            let b = binary(m, f.ops, "divide", b, s, span);
            Some((op_call(m, "add", vec![x, b], vec![], span), values))
        }
        ("nn.bias_add", &[x, b]) => {
            let axis = AttrReader::new(&m.symbols, &attrs).int("axis", 1).ok()?;
            let axis = if axis < 0 { axis + at.rank as i64 } else { axis };
            if axis != at.axis as i64 {
                return None;
            }
            let (x, values) = unscale(f, m, x, at)?;
            values.iter().all(|&v| v != 0.0).then_some(())?;
            let s = channel_constant(m, &values, at.dtype, 0, span);
            let b = binary(m, f.ops, "divide", b, s, span);
            Some((call_with(m, "nn.bias_add", vec![x, b], attrs, span), values))
        }
        _ => None,
    }
}
