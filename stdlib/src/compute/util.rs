//! Helpers shared by the compute rules.

use crate::ops::index::{coordinates, flat_position};
use relay_compiler::kir::{Expr, Index, KernelBuilder, LoopKind};
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

/// Runs `image` for each of `images` images (a serial loop), or once on image 0 with no loop
/// of extent 1 around it for one image (batch 1, the common case of the convolution rules).
pub(crate) fn for_images(
    k: &mut KernelBuilder,
    images: i64,
    mut image: impl FnMut(&mut KernelBuilder, &Index),
) {
    if images == 1 {
        image(k, &Index::Const(0));
    } else {
        k.for_(images, LoopKind::Serial, |k, n| image(k, &n));
    }
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

/// The flat row-major position of `idx` in `shape` ([`flat_position`] over kir's `Index`).
pub(crate) fn flatten(shape: &[i64], idx: &[Index]) -> Index {
    flat_position(&sizes(shape), idx)
}

/// The indices in `shape` of flat row-major position `flat` (`0 <= flat < size`;
/// [`coordinates`] over kir's `Index`).
pub(crate) fn unflatten(shape: &[i64], flat: &Index) -> Vec<Index> {
    let mut out = vec![Index::Const(0); shape.len()];
    coordinates(&sizes(shape), flat, &mut out);
    out
}

/// A kernel's static shape as sizes (kernel dimensions are never negative).
pub(crate) fn sizes(shape: &[i64]) -> Vec<usize> {
    shape.iter().map(|&d| usize::try_from(d).unwrap_or(0)).collect()
}
