//! Operators that rearrange or mask elements: `Trilu`, `CumSum`, `DepthToSpace`,
//! `SpaceToDepth`.

use super::on;
use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;
use crate::shape::normalize_axis;

/// `Trilu(x[, k])`: Relay `trilu` (`k` 0 when absent).
pub fn trilu(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    if x.dims.len() < 2 {
        return Err(node.error(format!("the input must have rank 2 or more, got {}", x.dims.len())));
    }
    let k = match cx.optional_input(node, 1)? {
        Some(k) => k.expr,
        None => "0i64".to_string(),
    };
    let upper = if node.int("upper", 1)? != 0 { "True" } else { "False" };
    Ok(vec![Value::new(format!("trilu({}, {k}, upper={upper})", x.expr), x.dtype, x.dims)])
}

/// `CumSum(x, axis)`: Relay `cumsum` along the constant `axis`; `reverse` scans from the end
/// (the input and the result reversed along the axis, as TVM's frontend does).
pub fn cumsum(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let axis = match cx.constant_input(node, 1)?.map(|c| c.to_i64()) {
        Some(Ok(a)) if a.len() == 1 => on(node, normalize_axis(a[0], x.dims.len()))?,
        _ => return Err(node.error("input 1 (`axis`) must be a constant integer with one element")),
    };
    let exclusive = if node.int("exclusive", 0)? != 0 { "True" } else { "False" };
    let reverse = node.int("reverse", 0)? != 0;
    let input = if reverse { format!("reverse({}, axis={axis})", x.expr) } else { x.expr.clone() };
    let mut expr = format!("cumsum({input}, axis={axis}, exclusive={exclusive})");
    if reverse {
        let scanned = cx.bind(&node.name_hint(), Value::new(expr, x.dtype, x.dims.clone()));
        expr = format!("reverse({}, axis={axis})", scanned.expr);
    }
    Ok(vec![Value::new(expr, x.dtype, x.dims)])
}

/// The positive `blocksize` attribute and its square.
fn block_size(node: &Node) -> Result<(i64, i64), ImportError> {
    let b = node.int("blocksize", 0)?;
    match b.checked_mul(b) {
        Some(area) if b >= 1 => Ok((b, area)),
        _ => Err(node.error(format!("attribute `blocksize` must be positive and small, got {b}"))),
    }
}

/// `d` times or divided by `b`, `None` staying `None`.
fn scaled(d: Option<i64>, mul: i64, div: i64) -> Option<i64> {
    d.and_then(|d| d.checked_mul(mul)).map(|d| d / div)
}

/// `DepthToSpace` (NCHW, `mode` DCR or CRD): Relay `nn.depth_to_space`.
pub fn depth_to_space(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let (b, area) = block_size(node)?;
    let mode = node.string("mode", "DCR")?;
    if mode != "DCR" && mode != "CRD" {
        return Err(node.error(format!("attribute `mode` must be DCR or CRD, got `{mode}`")));
    }
    if x.dims.len() != 4 {
        return Err(node.error(format!("the input must have rank 4, got {}", x.dims.len())));
    }
    let dims = vec![x.dims[0], scaled(x.dims[1], 1, area), scaled(x.dims[2], b, 1), scaled(x.dims[3], b, 1)];
    let expr = format!("nn.depth_to_space({}, block_size={b}, mode=\"{mode}\")", x.expr);
    Ok(vec![Value::new(expr, x.dtype, dims)])
}

/// `SpaceToDepth` (NCHW): Relay `nn.space_to_depth`.
pub fn space_to_depth(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let (b, area) = block_size(node)?;
    if x.dims.len() != 4 {
        return Err(node.error(format!("the input must have rank 4, got {}", x.dims.len())));
    }
    let dims = vec![x.dims[0], scaled(x.dims[1], area, 1), scaled(x.dims[2], 1, b), scaled(x.dims[3], 1, b)];
    let expr = format!("nn.space_to_depth({}, block_size={b})", x.expr);
    Ok(vec![Value::new(expr, x.dtype, dims)])
}
