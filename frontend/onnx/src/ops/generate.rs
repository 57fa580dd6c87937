//! Operators that create a tensor from constant operands: `Range` (Relay `arange`) and
//! `ConstantOfShape` (Relay `full`). Their sizes come from constants, so the result's shape is
//! known at import time, except a `ConstantOfShape` of sizes read from a tensor's run-time
//! shape (a zero initial state of a dynamic batch, as PyTorch exports it).

use super::{list_attr, on, required_ints};
use crate::dtype;
use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;
use crate::shape::ShapeElement;
use crate::tensor::Const;
use relay_devices::DType;

/// The one element of constant input `i` as `f64`.
fn scalar_input(
    cx: &mut Converter,
    node: &Node,
    i: usize,
) -> Result<(f64, relay_devices::DType), ImportError> {
    let c = cx.constant_input(node, i)?.ok_or_else(|| node.error(format!("input {i} is missing")))?;
    match c.to_f64().as_slice() {
        [v] => Ok((*v, c.dtype)),
        _ => Err(node.error(format!("input {i} must hold one element, got shape {:?}", c.dims))),
    }
}

/// `Range(start, limit, delta)`: `arange` with the constant operands as attributes, length
/// `max(ceil((limit - start) / delta), 0)`.
pub fn range(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (start, dtype) = scalar_input(cx, node, 0)?;
    let (limit, _) = scalar_input(cx, node, 1)?;
    let (delta, _) = scalar_input(cx, node, 2)?;
    if delta == 0.0 || !(start.is_finite() && limit.is_finite() && delta.is_finite()) {
        return Err(node.error(format!("`delta` must be finite and non-zero, got {delta}")));
    }
    let n = ((limit - start) / delta).ceil().max(0.0);
    if n > f64::from(u32::MAX) {
        return Err(node.error(format!("a range of {n} elements is too long")));
    }
    let expr = format!("arange(start={start:?}, stop={limit:?}, step={delta:?}, dtype=\"{dtype}\")");
    Ok(vec![Value::new(expr, dtype, vec![Some(n as i64)])])
}

/// `ConstantOfShape(shape)`: `full` of `value` (a one-element tensor, default `0.0f32`).
pub fn constant_of_shape(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let elements = match cx.shape_elements(node, 0)? {
        Some(elements) => elements,
        None => required_ints(cx, node, 0)?.into_iter().map(ShapeElement::Known).collect(),
    };
    if elements.iter().any(|e| e.known().is_some_and(|d| d < 0)) {
        return Err(node.error(format!("the shape {elements:?} has a negative dimension")));
    }
    let (dtype, v) = match node.tensor("value")? {
        Some(t) => {
            let c = on(node, Const::from_proto(t))?;
            match c.to_f64().as_slice() {
                [v] => (c.dtype, *v),
                _ => return Err(node.error("attribute `value` must hold one element")),
            }
        }
        None => (relay_devices::DType::F32, 0.0),
    };
    // A run-time size is 1 in `full`, then broadcast against `[1, .., n, .., 1]` zeros made
    // from the axis it is the size of (`zeros_like` of a sum over the other axes).
    let ones: Vec<i64> = elements.iter().map(|e| e.known().unwrap_or(1)).collect();
    let mut expr =
        format!("full({}, {}, dtype=\"{dtype}\")", dtype::literal(dtype, v), list_attr("shape", &ones));
    for (i, e) in elements.iter().enumerate() {
        if let ShapeElement::Size { of, axis } = e {
            if !(dtype.is_float() || matches!(dtype, DType::I32 | DType::I64)) {
                return Err(
                    node.error(format!("a {dtype} tensor of a size known only at run time is not supported"))
                );
            }
            let mut at = vec![1; elements.len()];
            at[i] = -1;
            let zeros =
                format!("cast(zeros_like(sum({of}, axis=[{axis}], exclude=True)), dtype=\"{dtype}\")");
            expr = format!("add({expr}, reshape({zeros}, {}))", list_attr("newshape", &at));
        }
    }
    Ok(vec![Value::new(expr, dtype, elements.iter().map(ShapeElement::known).collect())])
}
