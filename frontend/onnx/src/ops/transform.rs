//! Shape and data-movement operators: `Reshape`, `Flatten`, `Transpose`, `Concat`,
//! `Squeeze`, `Unsqueeze`, `Expand`, `Gather`, `Slice`, `Split`, `Pad`, and the ones that
//! only pass or make values (`Identity`, `Dropout`, `Constant`).

use super::{int_list, list_attr, on, required_ints};
use crate::dtype;
use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;
use crate::shape::{broadcast, known, list, normalize_axis, product, Dims, ShapeElement};
use crate::tensor::Const;
use onnx_protobuf::TensorProto;
use relay_devices::DType;

/// `Identity`, and `Dropout` at inference: the input itself.
pub fn identity(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    Ok(vec![cx.input(node, 0)?])
}

/// `Constant`: a tensor known at import time (`value`, or `value_float(s)`/`value_int(s)`).
pub fn constant(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let proto = if let Some(t) = node.tensor("value")? {
        t.clone()
    } else if let Some(v) = node.floats("value_floats")? {
        TensorProto::from_f32s(vec![v.len() as i64], v)
    } else if let Some(v) = node.ints("value_ints")? {
        TensorProto::from_i64s(vec![v.len() as i64], v)
    } else if node.proto.attribute.iter().any(|a| a.name == "value_float") {
        TensorProto::from_f32s(vec![], vec![node.float("value_float", 0.0)?])
    } else if node.proto.attribute.iter().any(|a| a.name == "value_int") {
        TensorProto::from_i64s(vec![], vec![node.int("value_int", 0)?])
    } else {
        return Err(node.error("only `value`, `value_float(s)` and `value_int(s)` are supported"));
    };
    let c = Const::from_proto(&proto).map_err(|m| node.error(m))?;
    Ok(vec![cx.constant_output(node, c)])
}

/// Building `TensorProto`s for `Constant`'s list and scalar attributes.
trait FromValues {
    fn from_f32s(dims: Vec<i64>, values: Vec<f32>) -> Self;
    fn from_i64s(dims: Vec<i64>, values: Vec<i64>) -> Self;
}

impl FromValues for TensorProto {
    fn from_f32s(dims: Vec<i64>, values: Vec<f32>) -> Self {
        TensorProto { dims, data_type: 1, float_data: values, ..TensorProto::default() }
    }
    fn from_i64s(dims: Vec<i64>, values: Vec<i64>) -> Self {
        TensorProto { dims, data_type: 7, int64_data: values, ..TensorProto::default() }
    }
}

/// `Shape` (opset 15 on: of the axes from `start` to `end`): a constant when those sizes are
/// known, which lets the shape arithmetic after it fold (`fold.rs`); else `shape_of`.
pub fn shape(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let rank = x.dims.len() as i64;
    let clamp = |v: i64| if v < 0 { (v + rank).max(0) } else { v.min(rank) } as usize;
    let (start, end) = (clamp(node.int("start", 0)?), clamp(node.int("end", rank)?));
    let dims = x.dims.get(start..end.max(start)).unwrap_or_default();
    if let Some(sizes) = dims.iter().copied().collect::<Option<Vec<i64>>>() {
        let c = Const::from_i64s(DType::I64, vec![sizes.len() as i64], &sizes);
        return Ok(vec![cx.constant_output(node, c)]);
    }
    let mut expr = format!("shape_of({}, dtype=\"int64\")", x.expr);
    if (start, end) != (0, rank as usize) {
        expr = format!("strided_slice({expr}, begin=[{start}], end=[{end}])");
    }
    let elements = (start..).zip(dims).map(|(axis, d)| match d {
        Some(d) => ShapeElement::Known(*d),
        None => ShapeElement::Size { of: x.expr.clone(), axis },
    });
    let shape = Value::new(expr, DType::I64, vec![Some(dims.len() as i64)]);
    Ok(vec![Value { shape_elements: Some(elements.collect()), ..shape }])
}

/// `Reshape` to a constant shape (0 copies the input's size unless `allowzero`, -1 infers),
/// to a shape whose run-time elements `Reshape` can name (see [`dynamic_target`]), or else to
/// any shape computed at run time (`dyn.reshape`).
pub fn reshape(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let allowzero = node.int("allowzero", 0)? != 0;
    let shape = match cx.shape_elements(node, 1)? {
        Some(elements) => match dynamic_target(&elements, &x, allowzero) {
            Ok(shape) => shape,
            Err(_) => return run_time_reshape(cx, node, &x, allowzero),
        },
        None => match cx.constant_input(node, 1) {
            Ok(Some(c)) => c.to_i64().map_err(|m| node.error(m))?,
            Ok(None) => return Err(node.error("input 1 is missing")),
            Err(_) => return run_time_reshape(cx, node, &x, allowzero),
        },
    };
    let mut dims: Dims = shape
        .iter()
        .enumerate()
        .map(|(i, &d)| match d {
            0 if !allowzero => x.dims.get(i).copied().flatten(),
            -1 => None,
            d => Some(d),
        })
        .collect();
    if let (Some(at), Some(total)) = (shape.iter().position(|&d| d == -1), product(&x.dims)) {
        let rest: i64 =
            dims.iter().enumerate().filter(|&(i, _)| i != at).map(|(_, d)| d.unwrap_or(0)).product();
        dims[at] = (rest > 0).then(|| total / rest);
    }
    let zero = if allowzero { ", allowzero=True" } else { "" };
    let expr = format!("reshape({}, {}{zero})", x.expr, list_attr("newshape", &shape));
    Ok(vec![Value::new(expr, x.dtype, dims)])
}

/// `Reshape` to a shape tensor computed at run time that [`dynamic_target`] cannot read as
/// keep/infer sizes: `dyn.reshape`, every size `?` (known when it runs).
fn run_time_reshape(
    cx: &mut Converter,
    node: &Node,
    x: &Value,
    allowzero: bool,
) -> Result<Vec<Value>, ImportError> {
    let shape = cx.input(node, 1)?;
    let rank = match shape.dims.as_slice() {
        [Some(n)] => usize::try_from(*n).map_err(|_| node.error("the shape has a negative length"))?,
        _ => return Err(node.error("a shape computed at run time must be 1-d of known length")),
    };
    let zero = if allowzero { ", allowzero=True" } else { "" };
    let expr = format!("dyn.reshape({}, {}{zero})", x.expr, shape.expr);
    Ok(vec![Value::new(expr, x.dtype, vec![None; rank])])
}

/// The `newshape` of a `Reshape` of `x` to a shape tensor with run-time `elements`: the size
/// of `x`'s own axis at the same position is 0 (keep it; not with `allowzero`), and one other
/// run-time size, where no element is -1, is -1 (infer it: the element counts agree).
fn dynamic_target(elements: &[ShapeElement], x: &Value, allowzero: bool) -> Result<Vec<i64>, String> {
    let mut inferred = elements.contains(&ShapeElement::Known(-1));
    elements
        .iter()
        .enumerate()
        .map(|(i, e)| match e {
            ShapeElement::Known(v) => Ok(*v),
            ShapeElement::Size { of, axis } if *of == x.expr && *axis == i && !allowzero => Ok(0),
            ShapeElement::Size { .. } if !inferred => {
                inferred = true;
                Ok(-1)
            }
            ShapeElement::Size { .. } => {
                Err("the shape has more than one size known only at run time that is not the input's own"
                    .into())
            }
        })
        .collect()
}

/// `Flatten`: a matrix of the axes before `axis` by the axes from it on.
pub fn flatten(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let rank = x.dims.len();
    let axis = node.int("axis", 1)?;
    let axis = if axis == rank as i64 { rank } else { on(node, normalize_axis(axis, rank))? };
    let (rows, cols) = (product(&x.dims[..axis]), product(&x.dims[axis..]));
    let newshape = match (axis, rows) {
        (0, _) => "[1, -1]".to_string(),
        (1, _) => "[0, -1]".to_string(),
        (_, Some(r)) => format!("[{r}, -1]"),
        _ => return Err(node.error("flattening several dynamic leading axes is not supported")),
    };
    let dims = vec![if axis == 0 { Some(1) } else { rows }, cols];
    Ok(vec![Value::new(format!("reshape({}, newshape={newshape})", x.expr), x.dtype, dims)])
}

/// `Transpose` by `perm` (default: reverse the axes).
pub fn transpose(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let rank = x.dims.len();
    let perm = node.ints("perm")?.unwrap_or_else(|| (0..rank as i64).rev().collect());
    let axes: Vec<usize> =
        perm.iter().map(|&p| normalize_axis(p, rank)).collect::<Result<_, _>>().map_err(|m| node.error(m))?;
    let dims = axes.iter().map(|&a| x.dims[a]).collect();
    Ok(vec![Value::new(format!("transpose({}, {})", x.expr, list_attr("axes", &perm)), x.dtype, dims)])
}

/// `Concat` along `axis`.
pub fn concat(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let parts: Vec<Value> =
        (0..node.proto.input.len()).map(|i| cx.input(node, i)).collect::<Result<_, _>>()?;
    let first = parts.first().ok_or_else(|| node.error("no inputs"))?;
    let axis = on(node, normalize_axis(node.int("axis", 0)?, first.dims.len()))?;
    let mut dims = first.dims.clone();
    dims[axis] = parts.iter().try_fold(0i64, |sum, p| p.dims.get(axis).copied().flatten().map(|d| sum + d));
    let exprs: Vec<&str> = parts.iter().map(|p| p.expr.as_str()).collect();
    // A one-element tuple needs its trailing comma.
    let comma = if exprs.len() == 1 { "," } else { "" };
    let expr = format!("concatenate(({}{comma}), axis={axis})", exprs.join(", "));
    Ok(vec![Value::new(expr, first.dtype, dims)])
}

/// `Squeeze` of the given axes, or of every axis of size 1.
pub fn squeeze(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let rank = x.dims.len();
    let axes: Vec<usize> = match int_list(cx, node, 1, "axes", 13)? {
        Some(a) => {
            a.iter().map(|&a| normalize_axis(a, rank)).collect::<Result<_, _>>().map_err(|m| node.error(m))?
        }
        None => {
            on(node, known(&x.dims, "Squeeze without axes"))?;
            (0..rank).filter(|&i| x.dims[i] == Some(1)).collect()
        }
    };
    let dims = (0..rank).filter(|i| !axes.contains(i)).map(|i| x.dims[i]).collect();
    let axes: Vec<i64> = axes.iter().map(|&a| a as i64).collect();
    Ok(vec![Value::new(format!("squeeze({}, {})", x.expr, list_attr("axis", &axes)), x.dtype, dims)])
}

/// `Unsqueeze`: one `expand_dims` per new axis, in increasing order of output position.
pub fn unsqueeze(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let axes = int_list(cx, node, 1, "axes", 13)?.ok_or_else(|| node.error("`axes` is missing"))?;
    let rank = x.dims.len() + axes.len();
    let mut axes: Vec<usize> =
        axes.iter().map(|&a| normalize_axis(a, rank)).collect::<Result<_, _>>().map_err(|m| node.error(m))?;
    axes.sort_unstable();
    let (mut expr, mut dims) = (x.expr.clone(), x.dims.clone());
    for a in axes {
        expr = format!("expand_dims({expr}, axis={a})");
        dims.insert(a.min(dims.len()), Some(1));
    }
    Ok(vec![Value::new(expr, x.dtype, dims)])
}

/// `Expand` to a constant shape (broadcast both ways).
pub fn expand(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let shape: Dims = required_ints(cx, node, 1)?.into_iter().map(Some).collect();
    let dims = on(node, broadcast(&x.dims, &shape))?;
    let target = on(node, known(&dims, "Expand"))?;
    Ok(vec![Value::new(format!("broadcast_to({}, shape={})", x.expr, list(&target)), x.dtype, dims)])
}

/// `Gather` along `axis`: `take` (negative indices count from the end, as `wrap` does).
pub fn gather(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let indices = cx.input(node, 1)?;
    let axis = on(node, normalize_axis(node.int("axis", 0)?, x.dims.len()))?;
    let dims = [&x.dims[..axis], &indices.dims[..], &x.dims[axis + 1..]].concat();
    let expr = format!("take({}, {}, axis={axis}, mode=\"wrap\")", x.expr, indices.expr);
    Ok(vec![Value::new(expr, x.dtype, dims)])
}

/// `Slice` with constant starts, ends, axes and positive steps.
pub fn slice(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let operands: Vec<Option<Vec<i64>>> = (1..5)
        .map(|i| cx.constant_input(node, i)?.map(|c| c.to_i64().map_err(|m| node.error(m))).transpose())
        .collect::<Result<_, _>>()?;
    let ranges = on(node, slice_ranges(&x.dims, &operands))?;
    let mut dims = x.dims.clone();
    for r in &ranges {
        let len = (r.end - r.begin).max(0);
        dims[r.axis] = x.dims[r.axis].map(|_| len / r.step + i64::from(len % r.step != 0));
    }
    let field = |f: fn(&SliceRange) -> i64| ranges.iter().map(f).collect::<Vec<i64>>();
    let expr = format!(
        "strided_slice({}, {}, {}, {}, {})",
        x.expr,
        list_attr("begin", &field(|r| r.begin)),
        list_attr("end", &field(|r| r.end)),
        list_attr("strides", &field(|r| r.step)),
        list_attr("axes", &field(|r| r.axis as i64))
    );
    Ok(vec![Value::new(expr, x.dtype, dims)])
}

/// One sliced axis: elements `begin, begin + step, ...` below `end`.
pub struct SliceRange {
    /// The axis (normalised).
    pub axis: usize,
    /// The first index (clamped to the axis where its size is known).
    pub begin: i64,
    /// The bound (clamped likewise).
    pub end: i64,
    /// The step, at least 1.
    pub step: i64,
}

/// The ranges `Slice`'s operands `[starts, ends, axes, steps]` select from a tensor of shape
/// `dims` (shared by the converter and constant folding).
///
/// # Errors
/// Missing starts or ends, lists of different lengths, an axis out of range, a step below 1.
pub fn slice_ranges(dims: &[Option<i64>], operands: &[Option<Vec<i64>>]) -> Result<Vec<SliceRange>, String> {
    let [Some(starts), Some(ends), axes, steps] = operands else {
        return Err("the starts and ends must be given".into());
    };
    let axes = axes.clone().unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.clone().unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err("starts, ends, axes and steps differ in length".into());
    }
    if steps.iter().any(|&s| s < 1) {
        return Err("only positive steps are supported".into());
    }
    let mut ranges = vec![];
    for i in 0..starts.len() {
        let axis = normalize_axis(axes[i], dims.len())?;
        // Clamp to the axis as ONNX does, where its size is known; Relay clamps the same way.
        let (begin, end) = match dims[axis] {
            Some(d) => {
                let clamp = |v: i64| if v < 0 { v.saturating_add(d).max(0) } else { v.min(d) };
                (clamp(starts[i]), clamp(ends[i]))
            }
            None => (starts[i], ends[i].min(i64::from(i32::MAX))),
        };
        ranges.push(SliceRange { axis, begin, end, step: steps[i] });
    }
    Ok(ranges)
}

/// `Split` along `axis` into the given sizes, or into equal parts: `split(...)` and one
/// projection per output.
pub fn split(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let axis = on(node, normalize_axis(node.int("axis", 0)?, x.dims.len()))?;
    let outputs = node.proto.output.len();
    let size = x.dims[axis];
    let sizes: Vec<Option<i64>> = match int_list(cx, node, 1, "split", 13)? {
        Some(s) => s.into_iter().map(Some).collect(),
        None => {
            let parts = node.int("num_outputs", outputs as i64)?;
            if parts != outputs as i64 || parts < 1 {
                return Err(
                    node.error(format!("`num_outputs` is {parts}, but the node has {outputs} output(s)"))
                );
            }
            let d = size.map(|d| (d + parts - 1) / parts);
            (0..parts).map(|i| size.zip(d).map(|(s, d)| d.min(s - i * d).max(0))).collect()
        }
    };
    if sizes.is_empty() {
        return Err(node.error("no parts to split into"));
    }
    let sections = match sizes.iter().copied().collect::<Option<Vec<i64>>>() {
        Some(s) if size.is_some() || s.iter().all(|&d| d == s[0]) => {
            let mut at = 0;
            let cuts: Vec<i64> = s[..s.len() - 1]
                .iter()
                .map(|d| {
                    at = d.saturating_add(at);
                    at
                })
                .collect();
            list(&cuts)
        }
        _ => sizes.len().to_string(),
    };
    let whole = Value::new(
        format!("split({}, indices_or_sections={sections}, axis={axis})", x.expr),
        x.dtype,
        vec![],
    );
    let tuple = cx.bind(&node.name_hint(), whole);
    Ok(sizes
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            let mut dims = x.dims.clone();
            dims[axis] = d;
            Value::new(format!("{}.{i}", tuple.expr), x.dtype, dims)
        })
        .collect())
}

/// `Pad` (opset 11 on: pads, value and axes are inputs) in `constant`, `edge` or `reflect`
/// mode: `nn.pad`.
pub fn pad(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let rank = x.dims.len();
    let pads = required_ints(cx, node, 1)?;
    let axes: Vec<usize> = match cx.constant_input(node, 3)? {
        Some(c) => c
            .to_i64()
            .map_err(|m| node.error(m))?
            .iter()
            .map(|&a| normalize_axis(a, rank))
            .collect::<Result<_, _>>()
            .map_err(|m| node.error(m))?,
        None => (0..rank).collect(),
    };
    if pads.len() != 2 * axes.len() || pads.iter().any(|&p| p < 0) {
        return Err(
            node.error(format!("`pads` must be {} non-negative integers, got {pads:?}", 2 * axes.len()))
        );
    }
    let mut width = vec![vec![0, 0]; rank];
    let mut dims = x.dims.clone();
    for (i, &a) in axes.iter().enumerate() {
        let (b, e) = (pads[i], pads[i + axes.len()]);
        width[a] = vec![b, e];
        dims[a] = dims[a].and_then(|d| d.checked_add(b)?.checked_add(e));
    }
    let mode = node.string("mode", "constant")?;
    if !matches!(mode.as_str(), "constant" | "edge" | "reflect") {
        return Err(node.error(format!("mode `{mode}` is not supported")));
    }
    let value = match cx.optional_input(node, 2)? {
        Some(v) => v.expr,
        None => dtype::literal(x.dtype, 0.0),
    };
    let rows: Vec<String> = width.iter().map(|w| list(w)).collect();
    let expr = format!("nn.pad({}, {value}, pad_width=[{}], pad_mode=\"{mode}\")", x.expr, rows.join(", "));
    Ok(vec![Value::new(expr, x.dtype, dims)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_reshape_target_keeps_its_own_sizes_and_infers_one_other() {
        let x = Value::new("%x".into(), DType::F32, vec![None, Some(3)]);
        let size = |of: &str, axis| ShapeElement::Size { of: of.into(), axis };
        let own = [size("%x", 0), ShapeElement::Known(-1)];
        assert_eq!(dynamic_target(&own, &x, false), Ok(vec![0, -1]));
        assert_eq!(dynamic_target(&[size("%w", 0), ShapeElement::Known(12)], &x, false), Ok(vec![-1, 12]));
        // With `allowzero` a 0 is a size, so the own axis is inferred instead.
        assert_eq!(dynamic_target(&[size("%x", 0), ShapeElement::Known(3)], &x, true), Ok(vec![-1, 3]));
        let two_others = [size("%x", 0), size("%w", 1), size("%w", 0)];
        assert!(dynamic_target(&two_others, &x, false).is_err());
    }
}
