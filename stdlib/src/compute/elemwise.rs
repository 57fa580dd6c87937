//! Unary elementwise rules (the reference kernels are in `crate::kernels::elemwise`).

use super::util::{attrs, lazy, lit, tensors};
use crate::attrs::{ClipAttrs, LeakyReluAttrs};
use relay_compiler::kir::{Expr, UnOp};
use relay_compiler::op::{AttrReader, ComputeFn, ComputeInput, OutType, TensorDef};

/// The rule of unary elementwise operator `name`.
pub(super) fn rule(name: &str) -> Option<ComputeFn> {
    let f: ComputeFn = match name {
        "negative" => |i, _, _| unop(i, UnOp::Neg),
        "abs" => |i, _, _| unop(i, UnOp::Abs),
        "exp" => |i, _, _| unop(i, UnOp::Exp),
        "log" => |i, _, _| unop(i, UnOp::Log),
        "sqrt" => |i, _, _| unop(i, UnOp::Sqrt),
        "rsqrt" => |i, _, _| unop(i, UnOp::Rsqrt),
        "tanh" => |i, _, _| unop(i, UnOp::Tanh),
        "sigmoid" => |i, _, _| unop(i, UnOp::Sigmoid),
        "erf" => |i, _, _| unop(i, UnOp::Erf),
        "floor" => |i, _, _| unop(i, UnOp::Floor),
        "ceil" => |i, _, _| unop(i, UnOp::Ceil),
        "round" => |i, _, _| unop(i, UnOp::Round),
        "sign" => |i, _, _| unop(i, UnOp::Sign),
        "logical_not" => |i, _, _| unop(i, UnOp::Not),
        "copy" => |i, _, _| map(i, |_, x| x),
        "nn.relu" => |i, _, _| map(i, move |d, x| Expr::select(x.clone().gt(lit(d, 0.0)), x, lit(d, 0.0))),
        "zeros_like" => |i, _, _| map(i, |d, _| lit(d, 0.0)),
        "ones_like" => |i, _, _| map(i, |d, _| lit(d, 1.0)),
        "cast" => |i, _, out| {
            let to = out.dtype;
            map(i, move |_, x| x.cast(to))
        },
        "nn.leaky_relu" => leaky_relu,
        "clip" => clip,
        _ => return None,
    };
    Some(f)
}

/// `f(dtype, x)` elementwise.
fn map(
    inputs: &[ComputeInput],
    f: impl Fn(relay_devices::DType, Expr) -> Expr + 'static,
) -> Result<TensorDef, String> {
    let [x] = tensors(inputs)?;
    let x = x.clone();
    Ok(lazy(move |k, idx| f(x.dtype, x.at(k, idx))))
}

fn unop(inputs: &[ComputeInput], op: UnOp) -> Result<TensorDef, String> {
    map(inputs, move |_, x| x.unary(op))
}

fn leaky_relu(inputs: &[ComputeInput], r: &AttrReader, _: &OutType) -> Result<TensorDef, String> {
    let a: LeakyReluAttrs = attrs(r)?;
    map(inputs, move |d, x| Expr::select(x.clone().gt(lit(d, 0.0)), x.clone(), x * lit(d, a.alpha)))
}

fn clip(inputs: &[ComputeInput], r: &AttrReader, _: &OutType) -> Result<TensorDef, String> {
    let a: ClipAttrs = attrs(r)?;
    map(inputs, move |d, x| {
        let (lo, hi) = (lit(d, a.a_min), lit(d, a.a_max));
        Expr::select(x.clone().lt(lo.clone()), lo, Expr::select(x.clone().gt(hi.clone()), hi, x))
    })
}
