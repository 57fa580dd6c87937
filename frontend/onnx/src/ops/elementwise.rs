//! Elementwise and broadcasting operators: activations, arithmetic, comparisons, `Cast`,
//! `Clip`, `Where`.

use super::on;
use crate::dtype;
use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;
use crate::shape::broadcast;
use relay_devices::DType;

/// `op(x)`, same dtype and shape.
pub fn unary(cx: &mut Converter, node: &Node, op: &str) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    Ok(vec![Value::new(format!("{op}({})", x.expr), x.dtype, x.dims)])
}

/// `op(a, b)` with broadcasting, of dtype `dtype` (the operands' when `None`).
fn broadcasting(
    node: &Node,
    op: &str,
    a: &Value,
    b: &Value,
    dtype: Option<DType>,
) -> Result<Value, ImportError> {
    let dims = on(node, broadcast(&a.dims, &b.dims))?;
    if a.dtype != b.dtype {
        return Err(node.error(format!("operands are {} and {}", a.dtype, b.dtype)));
    }
    Ok(Value::new(format!("{op}({}, {})", a.expr, b.expr), dtype.unwrap_or(a.dtype), dims))
}

/// A binary arithmetic or logical operator.
pub fn binary(cx: &mut Converter, node: &Node, op: &str) -> Result<Vec<Value>, ImportError> {
    let (a, b) = (cx.input(node, 0)?, cx.input(node, 1)?);
    Ok(vec![broadcasting(node, op, &a, &b, None)?])
}

/// A comparison: a `bool` tensor.
pub fn compare(cx: &mut Converter, node: &Node, op: &str) -> Result<Vec<Value>, ImportError> {
    let (a, b) = (cx.input(node, 0)?, cx.input(node, 1)?);
    Ok(vec![broadcasting(node, op, &a, &b, Some(DType::BOOL))?])
}

/// `Max`, `Min`, `Sum` of one or more operands: `op` folded from the left.
pub fn variadic(cx: &mut Converter, node: &Node, op: &str) -> Result<Vec<Value>, ImportError> {
    let mut acc = cx.input(node, 0)?;
    for i in 1..node.proto.input.len() {
        let next = cx.input(node, i)?;
        let folded = broadcasting(node, op, &acc, &next, None)?;
        acc = cx.bind(&node.name_hint(), folded);
    }
    Ok(vec![acc])
}

/// `Pow`: an exponent of another type is cast to the base's (ONNX allows integer exponents).
pub fn pow(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (a, mut b) = (cx.input(node, 0)?, cx.input(node, 1)?);
    if b.dtype != a.dtype {
        b = Value::new(format!("cast({}, dtype=\"{}\")", b.expr, a.dtype), a.dtype, b.dims);
    }
    Ok(vec![broadcasting(node, "power", &a, &b, None)?])
}

/// `Reciprocal`: `1 / x`.
pub fn reciprocal(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let expr = format!("divide({}, {})", dtype::literal(x.dtype, 1.0), x.expr);
    Ok(vec![Value::new(expr, x.dtype, x.dims)])
}

/// `LeakyRelu` (ONNX's default slope is 0.01, Relay's 0.25).
pub fn leaky_relu(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let alpha = node.float("alpha", 0.01)?;
    Ok(vec![Value::new(format!("nn.leaky_relu({}, alpha={alpha:?}f)", x.expr), x.dtype, x.dims)])
}

/// `Elu`: `x` where positive, else `alpha * (exp(x) - 1)`.
pub fn elu(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let alpha = f64::from(node.float("alpha", 1.0)?);
    let lit = |v| dtype::literal(x.dtype, v);
    let expr = format!(
        "where(greater({x}, {zero}), {x}, multiply({alpha}, subtract(exp({x}), {one})))",
        x = x.expr,
        zero = lit(0.0),
        one = lit(1.0),
        alpha = lit(alpha)
    );
    Ok(vec![Value::new(expr, x.dtype, x.dims)])
}

/// `Clip` (opset 11 on: bounds are optional inputs): `minimum(maximum(x, min), max)`.
pub fn clip(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let mut x = cx.input(node, 0)?;
    for (i, op) in [(1, "maximum"), (2, "minimum")] {
        if let Some(bound) = cx.optional_input(node, i)? {
            x = broadcasting(node, op, &x, &bound, None)?;
        }
    }
    Ok(vec![x])
}

/// `Cast` to the `to` element type.
pub fn cast(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let to = dtype::from_onnx(node.int("to", 0)? as i32).map_err(|m| node.error(m))?;
    Ok(vec![Value::new(format!("cast({}, dtype=\"{to}\")", x.expr), to, x.dims)])
}

/// `Where(condition, x, y)`, broadcasting all three.
pub fn where_(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (c, x, y) = (cx.input(node, 0)?, cx.input(node, 1)?, cx.input(node, 2)?);
    let dims = on(node, broadcast(&c.dims, &x.dims).and_then(|d| broadcast(&d, &y.dims)))?;
    Ok(vec![Value::new(format!("where({}, {}, {})", c.expr, x.expr, y.expr), x.dtype, dims)])
}

/// `Mod`: the remainder with the divisor's sign (`floor_mod`), or with `fmod` the dividend's
/// (`mod`, C's `fmod`).
pub fn mod_(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let op = if node.int("fmod", 0)? != 0 { "mod" } else { "floor_mod" };
    binary(cx, node, op)
}
