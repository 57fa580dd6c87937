//! Broadcasting binary rules and `where` (reference: `crate::kernels::broadcast`): each
//! operand is read at the output indices through NumPy's right-aligned broadcasting.

use super::util::{lazy, tensors};
use relay_compiler::kir::{BinOp, Expr};
use relay_compiler::op::{ComputeFn, ComputeInput, OutType, TensorDef};

/// The rule of broadcasting operator `name`.
pub(super) fn rule(name: &str) -> Option<ComputeFn> {
    let f: ComputeFn = match name {
        "add" => |i, _, _| binary(i, |a, b| a + b),
        "subtract" => |i, _, _| binary(i, |a, b| a - b),
        "multiply" => |i, _, _| binary(i, |a, b| a * b),
        // Integer division still runs in the reference kernel (whose rules, x / 0 == 0, are
        // kir's: relay_devices::arith); only float division is lowered to kir so far.
        "divide" => |i, _, o| float_only(o, i, |a, b| a / b),
        "floor_divide" => |i, _, o| float_only(o, i, |a, b| a.binary(BinOp::Div, b).floor()),
        "floor_mod" => {
            |i, _, o| float_only(o, i, |a, b| a.clone() - a.binary(BinOp::Div, b.clone()).floor() * b)
        }
        "power" => |i, _, _| binary(i, Expr::pow),
        // The reference picks `a` on ties (`a >= b`); kir's max picks `b` unless `a > b`.
        "maximum" => |i, _, _| binary(i, |a, b| Expr::select(a.clone().ge(b.clone()), a, b)),
        "minimum" => |i, _, _| binary(i, |a, b| Expr::select(a.clone().le(b.clone()), a, b)),
        "equal" => |i, _, _| binary(i, Expr::equal),
        "not_equal" => |i, _, _| binary(i, Expr::not_equal),
        "less" => |i, _, _| binary(i, Expr::lt),
        "less_equal" => |i, _, _| binary(i, Expr::le),
        "greater" => |i, _, _| binary(i, Expr::gt),
        "greater_equal" => |i, _, _| binary(i, Expr::ge),
        "logical_and" => |i, _, _| binary(i, Expr::and),
        "logical_or" => |i, _, _| binary(i, Expr::or),
        "where" => select,
        _ => return None,
    };
    Some(f)
}

/// `f(a, b)` with both operands broadcast to the output.
pub(super) fn binary(inputs: &[ComputeInput], f: fn(Expr, Expr) -> Expr) -> Result<TensorDef, String> {
    let [a, b] = tensors(inputs)?;
    let (a, b) = (a.clone(), b.clone());
    Ok(lazy(move |k, idx| f(a.at_broadcast(k, idx), b.at_broadcast(k, idx))))
}

fn float_only(
    out: &OutType,
    inputs: &[ComputeInput],
    f: fn(Expr, Expr) -> Expr,
) -> Result<TensorDef, String> {
    if !out.dtype.is_float() {
        return Err(format!("integer division ({}) runs in the reference kernel", out.dtype));
    }
    binary(inputs, f)
}

fn select(
    inputs: &[ComputeInput],
    _: &relay_compiler::op::AttrReader,
    _: &OutType,
) -> Result<TensorDef, String> {
    let [c, x, y] = tensors(inputs)?;
    let (c, x, y) = (c.clone(), x.clone(), y.clone());
    Ok(lazy(move |k, idx| {
        Expr::select(c.at_broadcast(k, idx), x.at_broadcast(k, idx), y.at_broadcast(k, idx))
    }))
}
