//! Sequence operators: an ONNX `seq(tensor)` is the prelude's `List` (`Cons`/`Nil`), read with
//! `@nth` and `@length`. The importer tracks a sequence's length where it is known
//! (`SequenceConstruct`, `SplitToSequence`, inserts into those), which `ConcatFromSequence`
//! needs to become one `concatenate`.

use super::{on, tuple};
use crate::dtype;
use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;
use crate::shape::{list, normalize_axis, tensor_type, Dims};
use relay_devices::DType;

/// The most tensors `SplitToSequence` makes: each is a list cell and a projection in the text.
const MAX_PIECES: i64 = 1 << 12;

/// A sequence value of elements of `dtype` and `dims`, of `len` elements if known.
fn sequence(expr: String, dtype: DType, dims: Dims, len: Option<usize>) -> Value {
    Value { sequence: Some(len), ..Value::new(expr, dtype, dims) }
}

/// Input `i` of `node`, which must be a sequence: the value and its known length.
fn sequence_input(cx: &mut Converter, node: &Node, i: usize) -> Result<(Value, Option<usize>), ImportError> {
    let v = cx.input(node, i)?;
    match v.sequence {
        Some(len) => Ok((v, len)),
        None => Err(node.error(format!("input {i} is a tensor, not a sequence"))),
    }
}

/// The shape elements of shapes `a` and `b` share: `?` where they differ.
fn merge(node: &Node, a: &[Option<i64>], b: &[Option<i64>]) -> Result<Dims, ImportError> {
    if a.len() != b.len() {
        return Err(node.error("the sequence's tensors differ in rank"));
    }
    Ok(a.iter().zip(b).map(|(x, y)| if x == y { *x } else { None }).collect())
}

/// `expr` (a tensor of `own` shape) as an element of shape `dims`: itself, or, where `dims`
/// has `?` for a size `own` knows, bound to a variable annotated with `dims` (Relay's
/// lists hold one type; the annotation widens the tensor's).
fn element(
    cx: &mut Converter,
    node: &Node,
    expr: &str,
    own: &[Option<i64>],
    dtype: DType,
    dims: &Dims,
) -> String {
    if own == dims.as_slice() {
        return expr.to_string();
    }
    let variable = cx.fresh_variable(&format!("{}_element", node.name_hint()));
    cx.bind_as(&format!("{variable}: {}", tensor_type(dtype, dims)), expr);
    variable
}

/// `Cons(x1, Cons(x2, ... tail))`.
fn cons(items: &[String], tail: &str) -> String {
    items.iter().rev().fold(tail.to_string(), |acc, x| format!("Cons({x}, {acc})"))
}

/// `SequenceConstruct(x...)`: the list of its inputs.
pub fn construct(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let items: Vec<Value> =
        (0..node.proto.input.len()).map(|i| cx.input(node, i)).collect::<Result<_, _>>()?;
    let first = items.first().ok_or_else(|| node.error("no inputs"))?;
    let mut dims = first.dims.clone();
    for v in &items[1..] {
        if v.dtype != first.dtype {
            return Err(node.error("the inputs differ in element type"));
        }
        dims = merge(node, &dims, &v.dims)?;
    }
    let exprs: Vec<String> =
        items.iter().map(|v| element(cx, node, &v.expr, &v.dims, v.dtype, &dims)).collect();
    Ok(vec![sequence(cons(&exprs, "Nil"), first.dtype, dims, Some(items.len()))])
}

/// `SequenceEmpty`: `Nil` (its element shape comes from the first insert).
pub fn empty(_: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let dtype = dtype::from_onnx(node.int("dtype", 1)? as i32).map_err(|m| node.error(m))?;
    Ok(vec![sequence("Nil".into(), dtype, vec![], Some(0))])
}

/// A position operand (a 0-d or one-element integer tensor) as the `int32` scalar the
/// prelude takes, counted from the end of `seq` (of `len` elements if known) when negative:
/// a literal where the position is a constant and that is enough to place it.
fn position(pos: &Value, seq: &str, len: Option<usize>) -> String {
    let known = pos.constant.as_ref().and_then(|c| c.to_i64().ok()).and_then(|v| v.first().copied());
    match (known, len) {
        (Some(p), _) if p >= 0 => return format!("{p}i32"),
        (Some(p), Some(n)) => return format!("{}i32", p + n as i64),
        _ => {}
    }
    let p = format!("cast(reshape({}, newshape=[]), dtype=\"int32\")", pos.expr);
    format!("where(less({p}, 0i32), add({p}, @length({seq})), {p})")
}

/// `SequenceInsert(seq, x)`: `x` appended; at a position, a local function that walks to it.
pub fn insert(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (seq, len) = sequence_input(cx, node, 0)?;
    let x = cx.input(node, 1)?;
    if x.dtype != seq.dtype {
        return Err(node.error("the tensor's element type is not the sequence's"));
    }
    let dims = if len == Some(0) { x.dims.clone() } else { merge(node, &seq.dims, &x.dims)? };
    if len != Some(0) && dims != seq.dims {
        return Err(node.error(format!(
            "inserting a tensor of shape {} into a sequence of {} is not supported",
            crate::shape::show(&x.dims),
            crate::shape::show(&seq.dims)
        )));
    }
    let x = Value::new(element(cx, node, &x.expr, &x.dims, x.dtype, &dims), x.dtype, dims.clone());
    let expr = match cx.optional_input(node, 2)? {
        None => format!("@concat({}, Cons({}, Nil))", seq.expr, x.expr),
        Some(pos) => {
            let (f, xs, n, h, t) = (
                cx.fresh_variable("insert"),
                cx.fresh_variable("xs"),
                cx.fresh_variable("n"),
                cx.fresh_variable("head"),
                cx.fresh_variable("tail"),
            );
            let ty = format!("List[{}]", tensor_type(x.dtype, &dims));
            let walk = format!(
                "fn ({xs}: {ty}, {n}: int32) -> {ty} {{\n    if (equal({n}, 0i32)) {{\n      Cons({x}, {xs})\n    }} else {{\n      match ({xs}) {{\n        Cons({h}, {t}) => Cons({h}, {f}({t}, subtract({n}, 1i32))),\n        Nil => Cons({x}, Nil),\n      }}\n    }}\n  }}",
                x = x.expr
            );
            cx.bind_as(&f, &walk);
            format!("{f}({}, {})", seq.expr, position(&pos, &seq.expr, len))
        }
    };
    Ok(vec![sequence(expr, x.dtype, dims, len.map(|l| l + 1))])
}

/// `SequenceAt(seq, position)`: `@nth`.
pub fn at(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (seq, len) = sequence_input(cx, node, 0)?;
    let pos = cx.input(node, 1)?;
    let expr = format!("@nth({}, {})", seq.expr, position(&pos, &seq.expr, len));
    Ok(vec![Value::new(expr, seq.dtype, seq.dims)])
}

/// `SequenceLength(seq)`: `@length`, as a 0-d `int64` tensor.
pub fn length(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (seq, _) = sequence_input(cx, node, 0)?;
    Ok(vec![Value::new(format!("cast(@length({}), dtype=\"int64\")", seq.expr), DType::I64, vec![])])
}

/// `ConcatFromSequence(seq)` along `axis` (a new axis with `new_axis` 1): one `concatenate`
/// (or `stack`) of its elements, so the sequence's length must be known.
pub fn concat(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (seq, len) = sequence_input(cx, node, 0)?;
    let len = len.filter(|&l| l > 0).ok_or_else(|| {
        node.error("the sequence's length must be known at import time (built by SequenceConstruct or SplitToSequence)")
    })?;
    let new_axis = node.int("new_axis", 0)? != 0;
    let rank = seq.dims.len() + usize::from(new_axis);
    let axis = on(node, normalize_axis(node.int("axis", 0)?, rank))?;
    // The graph binds every node's output, so `seq.expr` is a variable, not the list itself.
    let items: Vec<String> = (0..len).map(|i| format!("@nth({}, {i}i32)", seq.expr)).collect();
    let mut dims = seq.dims.clone();
    let expr = if new_axis {
        dims.insert(axis, Some(len as i64));
        format!("stack({}, axis={axis})", tuple(&items))
    } else {
        dims[axis] = dims[axis].map(|d| d * len as i64);
        format!("concatenate({}, axis={axis})", tuple(&items))
    };
    Ok(vec![Value::new(expr, seq.dtype, dims)])
}

/// `SplitToSequence(x, split)` along `axis`: `split`, then the list of the parts. Without
/// `split`, parts of size 1, squeezed unless `keepdims`.
pub fn split(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let axis = on(node, normalize_axis(node.int("axis", 0)?, x.dims.len()))?;
    let size = x.dims[axis].ok_or_else(|| node.error("the split axis must have a static size"))?;
    let split = cx.constant_input(node, 1)?.map(|c| c.to_i64().map(|v| (c.dims.is_empty(), v)));
    let pieces = |n: i64| {
        if n > MAX_PIECES {
            return Err(node.error(format!("splitting into {n} tensors is more than {MAX_PIECES}")));
        }
        Ok(n.max(0) as usize)
    };
    let (sizes, squeeze) = match split.transpose().map_err(|m| node.error(m))? {
        None => (vec![1; pieces(size)?], node.int("keepdims", 1)? == 0),
        Some((true, v)) if v.first().is_some_and(|&c| c > 0) => {
            let chunk = v[0];
            let n = pieces(size / chunk + i64::from(size % chunk != 0))?;
            ((0..n as i64).map(|i| chunk.min(size - i * chunk)).collect(), false)
        }
        Some((false, v))
            if pieces(v.len() as i64)? > 0
                && v.iter().all(|&d| d >= 0)
                && v.iter().try_fold(0i64, |s, &d| s.checked_add(d)) == Some(size) =>
        {
            (v, false)
        }
        Some(_) => return Err(node.error("`split` must be a positive size or sizes summing to the axis")),
    };
    let mut at = 0;
    let cuts: Vec<i64> = sizes[..sizes.len().saturating_sub(1)]
        .iter()
        .map(|d| {
            at += d;
            at
        })
        .collect();
    let parts = cx.bind(
        &node.name_hint(),
        Value::new(
            format!("split({}, indices_or_sections={}, axis={axis})", x.expr, list(&cuts)),
            x.dtype,
            vec![],
        ),
    );
    let mut dims = x.dims.clone();
    if squeeze {
        dims.remove(axis);
    } else {
        dims[axis] = sizes.first().copied().filter(|&f| sizes.iter().all(|&d| d == f));
    }
    let items: Vec<String> = sizes
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            let part = format!("{}.{i}", parts.expr);
            if squeeze {
                format!("squeeze({part}, axis=[{axis}])")
            } else {
                let mut own = x.dims.clone();
                own[axis] = Some(d);
                element(cx, node, &part, &own, x.dtype, &dims)
            }
        })
        .collect();
    Ok(vec![sequence(cons(&items, "Nil"), x.dtype, dims, Some(sizes.len()))])
}
