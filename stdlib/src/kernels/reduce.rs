//! Reductions (TVM `src/relay/op/tensor/reduce.cc`): `sum`, `mean`, `max`, `min`, `prod`,
//! `argmax`, `argmin` over a set of axes.
//!
//! The input is viewed with the kept axes first and the reduced axes last (each group in its
//! original order), so each output element reduces one contiguous run of that view; for
//! `argmax`/`argmin` the position in the run is the row-major index over the reduced axes.

use super::num::{from_usize, Num};
use super::util::{args, normalize_axis, nums, only_output, same_len};
use super::{Checked, Kernel};
use crate::attrs::{ArgReduceAttrs, ReduceAttrs};
use crate::error::KernelError;
use relay_devices::{DType, Element, Tensor};

/// Which axes of a rank-`rank` input are reduced: all for `axis = None`, else the listed ones
/// (or all others with `exclude`). Repeated axes are an error.
fn reduced_axes(rank: usize, axis: &Option<Vec<i64>>, exclude: bool) -> Result<Vec<bool>, KernelError> {
    let Some(list) = axis else {
        return Ok(vec![true; rank]);
    };
    let mut mask = vec![false; rank];
    for &a in list {
        let k = normalize_axis(a, rank)?;
        if mask[k] {
            return Err(KernelError::Attr(format!("axis {a} is listed twice")));
        }
        mask[k] = true;
    }
    if exclude {
        mask.iter_mut().for_each(|m| *m = !*m);
    }
    Ok(mask)
}

/// The output shape: reduced axes dropped, or kept as 1 with `keepdims`.
fn reduced_shape(shape: &[usize], mask: &[bool], keepdims: bool) -> Vec<usize> {
    shape
        .iter()
        .zip(mask)
        .filter_map(|(&d, &r)| match (r, keepdims) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// Writes `f(run)` to each output element, where `run` is the input elements that reduce to it.
fn reduce_runs<T: Element, O: Element>(
    x: &Tensor,
    mask: &[bool],
    out: &mut Tensor,
    f: impl Fn(&[T]) -> Result<O, KernelError>,
) -> Result<(), KernelError> {
    let axes = 0..mask.len();
    let perm: Vec<usize> = axes.clone().filter(|&k| !mask[k]).chain(axes.filter(|&k| mask[k])).collect();
    let values = x.view::<T>()?.permute(&perm)?.to_vec();
    let run: usize = x.shape().iter().zip(mask).filter(|(_, &r)| r).map(|(&d, _)| d).product();
    let dst = out.as_mut_slice::<O>()?;
    if run == 0 {
        for d in dst.iter_mut() {
            *d = f(&[])?;
        }
        return Ok(());
    }
    same_len(values.len() / run, dst.len())?;
    for (d, chunk) in dst.iter_mut().zip(values.chunks_exact(run)) {
        *d = f(chunk)?;
    }
    Ok(())
}

fn empty_reduction() -> KernelError {
    KernelError::Shape("reduction over zero elements has no identity".into())
}

/// Declares value reductions: `Name = "op", |run| body;` over numeric dtypes, output dtype =
/// input dtype.
macro_rules! reduction {
    ($($(#[$doc:meta])* $name:ident = $op:literal, |$run:ident| $body:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Kernel for $name {
            const NAME: &'static str = $op;
            type Attrs = ReduceAttrs;

            fn shapes(inputs: &[&[usize]], attrs: &ReduceAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
                let [x] = args(inputs)?;
                let mask = reduced_axes(x.len(), &attrs.axis, attrs.exclude)?;
                Ok(vec![reduced_shape(x, &mask, attrs.keepdims)])
            }

            fn dtypes(inputs: &[DType], _: &ReduceAttrs) -> Result<Vec<DType>, KernelError> {
                let [d] = args(inputs)?;
                nums!(d, T => Ok(vec![d]))
            }

            fn compute(inputs: &[&Tensor], attrs: &ReduceAttrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                let [x] = args(inputs)?;
                let mask = reduced_axes(x.ndim(), &attrs.axis, attrs.exclude)?;
                let out = only_output(outputs)?;
                nums!(x.dtype(), T => reduce_runs::<T, T>(x, &mask, out, |$run: &[T]| $body))
            }
        }
    )*};
}

reduction! {
    /// `sum` (integers wrap; 0 over no elements). Numeric dtypes.
    Sum = "sum", |run| Ok(run.iter().fold(T::ZERO, |s, &v| s.add_wrapping(v)));
    /// `prod` (integers wrap; 1 over no elements). Numeric dtypes.
    Prod = "prod", |run| Ok(run.iter().fold(T::ONE, |s, &v| s.mul_wrapping(v)));
    /// `mean`: the sum divided by the count (truncating for integers; `NaN` for floats and 0
    /// for integers over no elements). Numeric dtypes.
    Mean = "mean", |run| Ok(run.iter().fold(T::ZERO, |s, &v| s.add_wrapping(v)).divide(from_usize::<T>(run.len())));
    /// `max` (an error over no elements). Numeric dtypes.
    Max = "max", |run| run.iter().copied().reduce(|m, v| if v > m { v } else { m }).ok_or_else(empty_reduction);
    /// `min` (an error over no elements). Numeric dtypes.
    Min = "min", |run| run.iter().copied().reduce(|m, v| if v < m { v } else { m }).ok_or_else(empty_reduction);
}

/// Index of the element of `run` that `better` prefers to all before it (first on ties, or
/// last with `last_on_tie`).
fn arg_best<T: Element>(
    run: &[T],
    better: fn(&T, &T) -> bool,
    last_on_tie: bool,
) -> Result<i32, KernelError> {
    let mut best = 0;
    let first = run.first().ok_or_else(empty_reduction)?;
    let mut best_value = first;
    for (i, v) in run.iter().enumerate().skip(1) {
        if better(v, best_value) || (last_on_tie && v == best_value) {
            best = i;
            best_value = v;
        }
    }
    i32::try_from(best).map_err(|_| KernelError::Shape(format!("index {best} does not fit in int32")))
}

/// Declares index reductions (`argmax`, `argmin`): numeric input, `int32` output.
macro_rules! arg_reduction {
    ($($(#[$doc:meta])* $name:ident = $op:literal, $better:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Kernel for $name {
            const NAME: &'static str = $op;
            type Attrs = ArgReduceAttrs;

            fn shapes(inputs: &[&[usize]], attrs: &ArgReduceAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
                let [x] = args(inputs)?;
                let mask = reduced_axes(x.len(), &attrs.axis, attrs.exclude)?;
                Ok(vec![reduced_shape(x, &mask, attrs.keepdims)])
            }

            fn dtypes(inputs: &[DType], _: &ArgReduceAttrs) -> Result<Vec<DType>, KernelError> {
                let [d] = args(inputs)?;
                nums!(d, T => Ok(vec![DType::I32]))
            }

            fn compute(inputs: &[&Tensor], attrs: &ArgReduceAttrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                let [x] = args(inputs)?;
                let mask = reduced_axes(x.ndim(), &attrs.axis, attrs.exclude)?;
                let out = only_output(outputs)?;
                nums!(x.dtype(), T => reduce_runs::<T, i32>(x, &mask, out, |run: &[T]| {
                    arg_best(run, $better, attrs.select_last_index)
                }))
            }
        }
    )*};
}

arg_reduction! {
    /// `argmax`: `int32` index of the largest element (first on ties unless
    /// `select_last_index`; an error over no elements). Numeric dtypes.
    ArgMax = "argmax", |a, b| a > b;
    /// `argmin`: `int32` index of the smallest element (first on ties unless
    /// `select_last_index`; an error over no elements). Numeric dtypes.
    ArgMin = "argmin", |a, b| a < b;
}
