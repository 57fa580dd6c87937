//! Operators that read or write at positions given as data, or repeat and rank elements:
//! `GatherElements`, `GatherND`, `ScatterElements`, `ScatterND`, `OneHot`, `Tile`, `TopK`,
//! `NonZero` (TVM v0.16's ONNX frontend maps them the same way: `gather`, `gather_nd`,
//! `scatter_elements`, `scatter_nd`, `one_hot`, `tile`, `topk`, `argwhere`).

use super::{list_attr, on, required_ints};
use crate::dtype::literal;
use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;
use crate::shape::normalize_axis;
use relay_devices::DType;

/// The Relay name of ONNX's scatter `reduction` (`none` is TVM's `update`).
fn reduction(node: &Node) -> Result<&'static str, ImportError> {
    match node.string("reduction", "none")?.as_str() {
        "none" => Ok("update"),
        "add" => Ok("add"),
        "mul" => Ok("mul"),
        "min" => Ok("min"),
        "max" => Ok("max"),
        other => Err(node.error(format!("unsupported reduction `{other}`"))),
    }
}

/// `GatherElements` along `axis`: `gather`.
pub fn gather_elements(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (x, indices) = (cx.input(node, 0)?, cx.input(node, 1)?);
    let axis = node.int("axis", 0)?;
    let expr = format!("gather({}, {}, axis={axis})", x.expr, indices.expr);
    Ok(vec![Value::new(expr, x.dtype, indices.dims)])
}

/// `GatherND` with `batch_dims`: `gather_nd` over the indices with their last axis moved to
/// the front (ONNX puts the index tuple last, TVM first).
pub fn gather_nd(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (x, indices) = (cx.input(node, 0)?, cx.input(node, 1)?);
    let b = node.int("batch_dims", 0)?;
    let (first, m) = index_tuple_first(node, &indices)?;
    let kept = usize::try_from(b)
        .ok()
        .and_then(|b| x.dims.get(b + m..))
        .ok_or_else(|| node.error("indices are longer than the data's rank"))?;
    let dims = [&indices.dims[..indices.dims.len() - 1], kept].concat();
    let expr = format!("gather_nd({}, {first}, batch_dims={b}, index_rank={m})", x.expr);
    Ok(vec![Value::new(expr, x.dtype, dims)])
}

/// `indices` of shape `(..., m)` as TVM's `(m, ...)`, and `m`.
fn index_tuple_first(node: &Node, indices: &Value) -> Result<(String, usize), ImportError> {
    let rank = indices.dims.len();
    let m = indices
        .dims
        .last()
        .copied()
        .flatten()
        .filter(|&m| m >= 1)
        .ok_or_else(|| node.error("the indices' last dimension must be known"))?;
    let axes: Vec<i64> = std::iter::once(rank as i64 - 1).chain(0..rank as i64 - 1).collect();
    Ok((format!("transpose({}, {})", indices.expr, list_attr("axes", &axes)), m as usize))
}

/// `ScatterElements` along `axis` with `reduction`: `scatter_elements`.
pub fn scatter_elements(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (x, indices, updates) = (cx.input(node, 0)?, cx.input(node, 1)?, cx.input(node, 2)?);
    let axis = node.int("axis", 0)?;
    let r = reduction(node)?;
    let expr = format!(
        "scatter_elements({}, {}, {}, axis={axis}, reduction=\"{r}\")",
        x.expr, indices.expr, updates.expr
    );
    Ok(vec![Value::new(expr, x.dtype, x.dims)])
}

/// `ScatterND` with `reduction`: `scatter_nd` over the indices with their last axis first.
pub fn scatter_nd(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (x, indices, updates) = (cx.input(node, 0)?, cx.input(node, 1)?, cx.input(node, 2)?);
    let (first, _) = index_tuple_first(node, &indices)?;
    let r = reduction(node)?;
    let expr = format!("scatter_nd({}, {first}, {}, mode=\"{r}\")", x.expr, updates.expr);
    Ok(vec![Value::new(expr, x.dtype, x.dims)])
}

/// `Tile` with constant `repeats`: `tile`.
pub fn tile(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let reps = required_ints(cx, node, 1)?;
    if reps.len() != x.dims.len() {
        return Err(node.error("`repeats` must have one entry per axis"));
    }
    let dims = x.dims.iter().zip(&reps).map(|(d, &r)| d.map(|d| d * r)).collect();
    Ok(vec![Value::new(format!("tile({}, {})", x.expr, list_attr("reps", &reps)), x.dtype, dims)])
}

/// `TopK` with constant `K`, `axis`, `largest` (`sorted=0` is accepted: sorted output is one
/// valid order): `topk` returning values and `int64` indices.
pub fn topk(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let k = match required_ints(cx, node, 1)?.as_slice() {
        [k] if *k >= 1 => *k,
        _ => return Err(node.error("K must be one positive constant")),
    };
    let axis = on(node, normalize_axis(node.int("axis", -1)?, x.dims.len()))?;
    let ascend = if node.int("largest", 1)? == 0 { "True" } else { "False" };
    let whole = Value::new(
        format!("topk({}, k={k}, axis={axis}, is_ascend={ascend}, dtype=\"int64\")", x.expr),
        x.dtype,
        vec![],
    );
    let tuple = cx.bind(&node.name_hint(), whole);
    let mut dims = x.dims.clone();
    dims[axis] = Some(k);
    Ok(vec![
        Value::new(format!("{}.0", tuple.expr), x.dtype, dims.clone()),
        Value::new(format!("{}.1", tuple.expr), DType::I64, dims),
    ])
}

/// `OneHot` with a constant `depth`: `one_hot` of the indices with negative ones counted from
/// the end (`i + depth`), `values = [off, on]` read with `take`.
pub fn one_hot(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (indices, values) = (cx.input(node, 0)?, cx.input(node, 2)?);
    let depth = match required_ints(cx, node, 1)?.as_slice() {
        [d] if *d >= 1 => *d,
        _ => return Err(node.error("depth must be one positive constant")),
    };
    let axis = node.int("axis", -1)?;
    let rank = indices.dims.len();
    let at = if axis < 0 { axis + rank as i64 + 1 } else { axis };
    let at = usize::try_from(at)
        .ok()
        .filter(|&a| a <= rank)
        .ok_or_else(|| node.error(format!("axis {axis} is out of range")))?;
    let (i, zero, n) = (&indices.expr, literal(indices.dtype, 0.0), literal(indices.dtype, depth as f64));
    let wrapped = format!("where(less({i}, {zero}), add({i}, {n}), {i})");
    let v = &values.expr;
    let expr = format!(
        "one_hot({wrapped}, take({v}, 1), take({v}, 0), depth={depth}, axis={axis}, dtype=\"{}\")",
        values.dtype
    );
    let mut dims = indices.dims.clone();
    dims.insert(at, Some(depth));
    Ok(vec![Value::new(expr, values.dtype, dims)])
}

/// `NonZero`: the coordinates of the non-zero elements, one column each (`int64`, `[rank,
/// ?]`): `argwhere`'s rows transposed, as TVM's frontend converts it.
pub fn non_zero(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let expr = format!("cast(transpose(argwhere({})), dtype=\"int64\")", x.expr);
    Ok(vec![Value::new(expr, DType::I64, vec![Some(x.dims.len() as i64), None])])
}
