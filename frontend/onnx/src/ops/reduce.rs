//! Reductions: `ReduceSum`, `ReduceMean`, `ReduceMax`, `ReduceMin`, `ReduceProd`.

use super::{int_list, list_attr};
use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;
use crate::shape::normalize_axis;

/// The opset from which `op_type` takes its axes as an input instead of an attribute.
fn axes_input_since(op_type: &str) -> i64 {
    if op_type == "ReduceSum" {
        13
    } else {
        18
    }
}

/// `op(x, axis=[...], keepdims=...)` over the node's axes (all axes when none are given,
/// unless `noop_with_empty_axes` makes that the identity).
pub fn reduce(cx: &mut Converter, node: &Node, op: &str) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let axes = int_list(cx, node, 1, "axes", axes_input_since(&node.proto.op_type))?;
    let axes = axes.filter(|a| !a.is_empty());
    if axes.is_none() && node.int("noop_with_empty_axes", 0)? != 0 {
        return Ok(vec![x]);
    }
    let rank = x.dims.len();
    let axes: Vec<usize> = match axes {
        Some(a) => {
            a.iter().map(|&a| normalize_axis(a, rank)).collect::<Result<_, _>>().map_err(|m| node.error(m))?
        }
        None => (0..rank).collect(),
    };
    let keep = node.int("keepdims", 1)? != 0;
    let dims = x
        .dims
        .iter()
        .enumerate()
        .filter_map(|(i, &d)| match (axes.contains(&i), keep) {
            (false, _) => Some(d),
            (true, true) => Some(Some(1)),
            (true, false) => None,
        })
        .collect();
    let axes: Vec<i64> = axes.iter().map(|&a| a as i64).collect();
    let keepdims = if keep { "True" } else { "False" };
    let expr = format!("{op}({}, {}, keepdims={keepdims})", x.expr, list_attr("axis", &axes));
    Ok(vec![Value::new(expr, x.dtype, dims)])
}
