//! Helpers shared by the compute rules.

use relay_compiler::kir::{Expr, Index, KernelBuilder};
use relay_compiler::op::{ComputeInput, LazyTensor, TensorDef};
use relay_devices::{DType, Scalar};
use std::rc::Rc;

/// The `N` tensor inputs of a call.
pub(crate) fn tensors<const N: usize>(inputs: &[ComputeInput]) -> Result<[&LazyTensor; N], String> {
    let ts: Vec<&LazyTensor> = inputs
        .iter()
        .map(|i| match i {
            ComputeInput::Tensor(t) => Ok(t),
            ComputeInput::Tuple(_) => Err("a tuple where a tensor was expected".to_string()),
        })
        .collect::<Result<_, _>>()?;
    ts.try_into().map_err(|v: Vec<_>| format!("expected {N} inputs, got {}", v.len()))
}

/// The literal `v` converted to `dtype` (`as` semantics).
pub(crate) fn lit(dtype: DType, v: f64) -> Expr {
    Expr::lit(dtype, Scalar::Float(v))
}

/// `x` rounded toward zero (`ceil` below zero, `floor` above), `x` a float of `dtype`; kir has
/// no `trunc` of its own.
pub(crate) fn trunc(dtype: DType, x: Expr) -> Expr {
    Expr::select(x.clone().lt(lit(dtype, 0.0)), x.clone().ceil(), x.floor())
}

/// A lazy definition from an element function.
pub(crate) fn lazy(f: impl Fn(&KernelBuilder, &[Index]) -> Expr + 'static) -> TensorDef {
    TensorDef::Lazy(Rc::new(f))
}

/// `axis` normalised against `rank` (negative counts from the end).
pub(crate) fn norm_axis(axis: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if (0..r).contains(&a) {
        Ok(a as usize)
    } else {
        Err(format!("axis {axis} out of range for rank {rank}"))
    }
}

/// Row-major strides of `shape`.
pub(crate) fn strides(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The flat row-major position of `idx` in `shape`.
pub(crate) fn flatten(shape: &[i64], idx: &[Index]) -> Index {
    shape.iter().zip(idx).fold(Index::Const(0), |acc, (&d, i)| acc * d + i.clone())
}

/// The indices in `shape` of flat row-major position `flat` (`0 <= flat < size`).
pub(crate) fn unflatten(shape: &[i64], flat: &Index) -> Vec<Index> {
    strides(shape)
        .iter()
        .zip(shape)
        .map(|(&s, &d)| if d == 1 { Index::Const(0) } else { flat.clone().floor_div(s).floor_mod(d) })
        .collect()
}
