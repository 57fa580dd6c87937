//! Reductions (TVM `src/relay/op/tensor/reduce.cc`): `sum`, `mean`, `max`, `min`, `prod`,
//! `all`, `any`, `argmax`, `argmin`, `variance`, `std` over a set of axes, with TVM's `axis`,
//! `keepdims` and `exclude`. Each of the first nine is one line of `reduce!`.
//!
//! The reference kernels view the input with the kept axes first and the reduced axes last
//! (each group in its original order), so each output element reduces one contiguous run of
//! that view; for `argmax`/`argmin` the position in the run is the row-major index over the
//! reduced axes. The kir compute rules are in `crate::compute::reduce`.

use crate::attrs::{ArgReduceAttrs, ReduceAttrs, VarianceAttrs};
use crate::compute::reduce::{arg, fold, Fold};
use crate::error::KernelError;
use crate::kernels::num::{from_usize, Float, Num};
use crate::kernels::util::{args, bools, floats, normalize_axis, nums, only_output, same_len};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Element, Tensor};

/// The attributes every reduction shares (TVM's `axis`, `keepdims`, `exclude`).
pub trait ReduceAxes {
    /// Axes to reduce; `None` reduces all.
    fn axis(&self) -> &Option<Vec<i64>>;
    /// Keep reduced axes as size-1 dimensions.
    fn keepdims(&self) -> bool;
    /// Reduce every axis *except* those in `axis`.
    fn exclude(&self) -> bool;
}

macro_rules! reduce_axes {
    ($($attrs:ty),*) => {$(
        impl ReduceAxes for $attrs {
            fn axis(&self) -> &Option<Vec<i64>> {
                &self.axis
            }
            fn keepdims(&self) -> bool {
                self.keepdims
            }
            fn exclude(&self) -> bool {
                self.exclude
            }
        }
    )*};
}

reduce_axes!(ReduceAttrs, ArgReduceAttrs, VarianceAttrs);

/// Which axes of a rank-`rank` input are reduced (TVM `GetReduceAxes`): all for `axis =
/// None`, else the listed ones (or all others with `exclude`).
///
/// # Errors
/// An axis out of range or listed twice.
pub(crate) fn reduced_axes(rank: usize, attrs: &impl ReduceAxes) -> Result<Vec<bool>, KernelError> {
    let Some(list) = attrs.axis() else {
        return Ok(vec![true; rank]);
    };
    let mut mask = vec![false; rank];
    for &a in list {
        let k = normalize_axis(a, rank)?;
        if mask[k] {
            return Err(KernelError::Attr(format!("axis {a} is given twice")));
        }
        mask[k] = true;
    }
    if attrs.exclude() {
        mask.iter_mut().for_each(|m| *m = !*m);
    }
    Ok(mask)
}

/// The output shape of a reduction: reduced axes dropped, or kept as 1 with `keepdims`.
///
/// # Errors
/// What [`reduced_axes`] rejects.
pub(crate) fn reduced_shape<D: ShapeDim>(
    shape: &[D],
    attrs: &impl ReduceAxes,
) -> Result<Vec<D>, KernelError> {
    let mask = reduced_axes(shape.len(), attrs)?;
    Ok(shape
        .iter()
        .zip(&mask)
        .filter_map(|(&d, &r)| match (r, attrs.keepdims()) {
            (false, _) => Some(d),
            (true, true) => Some(D::known(1)),
            (true, false) => None,
        })
        .collect())
}

/// Writes `f(run)` to each output element in order, where `run` is the input elements that
/// reduce to it.
fn reduce_runs<T: Element, O: Element>(
    x: &Tensor,
    mask: &[bool],
    out: &mut Tensor,
    mut f: impl FnMut(&[T]) -> Result<O, KernelError>,
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

/// Declares one-input reductions, one per line:
/// `Name = "tvm.name" [Attrs], dtype set -> output element type, "doc", |run, a| body, kir rule;`
/// The body reduces `run: &[T]` (the elements of one output, `T` the input element type) with
/// attributes `a`; the output element type is `T`, `i32` or `bool`.
macro_rules! reduce {
    ($(#[$ldoc:meta])* list $list:ident; $($(#[$doc:meta])* $name:ident = $op:literal [$attrs:ty], $set:ident -> $out:ty,
        $summary:literal, |$run:ident, $a:ident| $body:expr, kir $kir:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::CommReduce;
            const NUM_INPUTS: usize = 1;
            const DTYPES: DTypeSet = crate::operator::dtype_set!($set);
            const DOC: &'static str = $summary;
            type Attrs = $attrs;
            const COMPUTE: Option<crate::operator::ComputeRule<Self::Attrs>> = Some($kir);

            fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &Self::Attrs) -> Result<Vec<Vec<D>>, KernelError> {
                let [x] = args(inputs)?;
                Ok(vec![reduced_shape(x, attrs)?])
            }

            fn dtypes(inputs: &[DType], _: &Self::Attrs) -> Result<Vec<DType>, KernelError> {
                let [d] = args(inputs)?;
                Self::DTYPES.check(d)?;
                $set!(d, T => Ok(vec![<$out as Element>::DTYPE]))
            }

            fn reference(inputs: &[&Tensor], attrs: &Self::Attrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                let [x] = args(inputs)?;
                let mask = reduced_axes(x.ndim(), attrs)?;
                let out = only_output(outputs)?;
                // Most bodies do not read the attributes.
                #[allow(unused_variables)]
                let $a = attrs;
                $set!(x.dtype(), T => reduce_runs::<T, $out>(x, &mask, out, |$run: &[T]| $body))
            }
        }
    )*
        $(#[$ldoc])*
        pub const $list: &[crate::operator::OpEntry] = &[$(crate::operator::OpEntry::of::<$name>()),*];
    };
}

reduce! {
    /// The reductions (`OpPattern::CommReduce`).
    list REDUCE;
    /// `sum` (integers wrap; 0 over no elements).
    Sum = "sum" [ReduceAttrs], nums -> T, "sum over axes",
        |run, a| Ok(run.iter().fold(T::ZERO, |s, &v| s.add_wrapping(v))), kir |i, a, o| fold(i, a, o, Fold::Sum);
    /// `mean`: the sum divided by the count (truncating for integers; `NaN` for floats and 0
    /// for integers over no elements).
    Mean = "mean" [ReduceAttrs], nums -> T, "mean over axes",
        |run, a| Ok(run.iter().fold(T::ZERO, |s, &v| s.add_wrapping(v)).divide(from_usize::<T>(run.len()))),
        kir |i, a, o| fold(i, a, o, Fold::Mean);
    /// `max` (an error over no elements).
    Max = "max" [ReduceAttrs], nums -> T, "maximum over axes",
        |run, a| run.iter().copied().reduce(|m, v| if v > m { v } else { m }).ok_or_else(empty_reduction),
        kir |i, a, o| fold(i, a, o, Fold::Max);
    /// `min` (an error over no elements).
    Min = "min" [ReduceAttrs], nums -> T, "minimum over axes",
        |run, a| run.iter().copied().reduce(|m, v| if v < m { v } else { m }).ok_or_else(empty_reduction),
        kir |i, a, o| fold(i, a, o, Fold::Min);
    /// `prod` (integers wrap; 1 over no elements).
    Prod = "prod" [ReduceAttrs], nums -> T, "product over axes",
        |run, a| Ok(run.iter().fold(T::ONE, |s, &v| s.mul_wrapping(v))), kir |i, a, o| fold(i, a, o, Fold::Prod);
    /// `all`: logical and (`true` over no elements).
    All = "all" [ReduceAttrs], bools -> bool, "logical and over axes",
        |run, a| Ok(run.iter().all(|&v| v)), kir |i, a, o| fold(i, a, o, Fold::All);
    /// `any`: logical or (`false` over no elements).
    Any = "any" [ReduceAttrs], bools -> bool, "logical or over axes",
        |run, a| Ok(run.iter().any(|&v| v)), kir |i, a, o| fold(i, a, o, Fold::Any);
    /// `argmax`: `int32` index of the largest element (first on ties unless
    /// `select_last_index`; an error over no elements).
    ArgMax = "argmax" [ArgReduceAttrs], nums -> i32, "index of the maximum (int32)",
        |run, a| arg_best(run, |a, b| a > b, a.select_last_index), kir |i, a, o| arg(i, a, o, true);
    /// `argmin`: `int32` index of the smallest element (first on ties unless
    /// `select_last_index`; an error over no elements).
    ArgMin = "argmin" [ArgReduceAttrs], nums -> i32, "index of the minimum (int32)",
        |run, a| arg_best(run, |a, b| a < b, a.select_last_index), kir |i, a, o| arg(i, a, o, false);
}

/// `sum((x - m)^2) / (n - unbiased)` over one run, `NaN` when the divisor is not positive
/// (NumPy's `var`).
fn sum_squares_over<T: Float>(run: &[T], m: T, unbiased: bool) -> T {
    let ss = run.iter().fold(T::ZERO, |s, &v| s + (v - m) * (v - m));
    let n = run.len() - usize::from(unbiased && !run.is_empty());
    ss / from_usize::<T>(n)
}

/// The mean of one run (`NaN` over no elements).
fn mean_of<T: Float>(run: &[T]) -> T {
    run.iter().fold(T::ZERO, |s, &v| s + v) / from_usize::<T>(run.len())
}

/// `variance(data, mean)`: TVM's two-input form, as `relay.variance` emits it — `mean` is the
/// mean of `data` over the same axes with `keepdims` (so it has `data`'s rank, 1 on every
/// reduced axis). Float dtypes; the output has `data`'s dtype and the reduced shape.
#[derive(Debug)]
pub struct Variance;

impl Operator for Variance {
    const NAME: &'static str = "variance";
    const PATTERN: OpPattern = OpPattern::CommReduce;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "mean of (data - mean)^2 over axes (n - 1 with unbiased)";
    type Attrs = VarianceAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<VarianceAttrs>> =
        Some(|inputs, a, out| crate::compute::reduce::moment(inputs, a, out, false));

    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &VarianceAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, m] = args(inputs)?;
        let kept = reduced_shape(x, &VarianceAttrs { keepdims: true, ..attrs.clone() })?;
        let fits = m.len() == kept.len()
            && m.iter().zip(&kept).all(|(a, b)| a.value().is_none() || b.value().is_none() || a == b);
        if !fits {
            return Err(KernelError::Shape(format!(
                "the mean must have shape {} (the data {} reduced with keepdims), found {}",
                shape_text(&kept),
                shape_text(x),
                shape_text(m)
            )));
        }
        Ok(vec![reduced_shape(x, attrs)?])
    }

    fn dtypes(inputs: &[DType], _: &VarianceAttrs) -> Result<Vec<DType>, KernelError> {
        let [x, m] = args(inputs)?;
        if x != m {
            return Err(KernelError::DType(format!(
                "the mean must have the data's dtype `{x}`, found `{m}`"
            )));
        }
        Ok(vec![Self::DTYPES.check(x)?])
    }

    fn reference(
        inputs: &[&Tensor],
        attrs: &VarianceAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, m] = args(inputs)?;
        let mask = reduced_axes(x.ndim(), attrs)?;
        let out = only_output(outputs)?;
        // The mean's row-major order is the output's (its reduced axes have size 1).
        floats!(x.dtype(), T => {
            let mut means = m.as_slice::<T>()?.iter();
            reduce_runs::<T, T>(x, &mask, out, |run| {
                let mean = *means.next().ok_or_else(|| KernelError::Shape("the mean is too short".into()))?;
                Ok(sum_squares_over(run, mean, attrs.unbiased))
            })
        })
    }
}

/// `std`: the square root of the variance over axes (TVM's `relay.std`, which TVM builds as
/// `sqrt(variance(data, mean(data)))`). Float dtypes; the output has the input's dtype.
#[derive(Debug)]
pub struct Std;

impl Operator for Std {
    const NAME: &'static str = "std";
    const PATTERN: OpPattern = OpPattern::CommReduce;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "standard deviation over axes (n - 1 with unbiased)";
    type Attrs = VarianceAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<VarianceAttrs>> =
        Some(|inputs, a, out| crate::compute::reduce::moment(inputs, a, out, true));

    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &VarianceAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        Ok(vec![reduced_shape(x, attrs)?])
    }

    fn dtypes(inputs: &[DType], _: &VarianceAttrs) -> Result<Vec<DType>, KernelError> {
        let [x] = args(inputs)?;
        Ok(vec![Self::DTYPES.check(x)?])
    }

    fn reference(
        inputs: &[&Tensor],
        attrs: &VarianceAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let mask = reduced_axes(x.ndim(), attrs)?;
        let out = only_output(outputs)?;
        floats!(x.dtype(), T => reduce_runs::<T, T>(x, &mask, out, |run| {
            Ok(Float::sqrt(sum_squares_over(run, mean_of(run), attrs.unbiased)))
        }))
    }
}

/// The two-pass reductions (`variance`, `std`).
pub const MOMENTS: &[crate::operator::OpEntry] =
    &[crate::operator::OpEntry::of::<Variance>(), crate::operator::OpEntry::of::<Std>()];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::eval;
    use relay_compiler::ir::Dim;

    #[test]
    fn one_shape_function_for_both_worlds() {
        let a = ReduceAttrs { axis: Some(vec![-1]), keepdims: true, exclude: false };
        assert_eq!(reduced_shape::<usize>(&[2, 3], &a).unwrap(), vec![2, 1]);
        assert_eq!(reduced_shape(&[Dim::Any, Dim::Known(3)], &a).unwrap(), vec![Dim::Any, Dim::Known(1)]);
        let twice = ReduceAttrs { axis: Some(vec![0, -2]), ..a };
        assert_eq!(
            reduced_shape::<usize>(&[2, 3], &twice).unwrap_err().to_string(),
            "attribute error: axis -2 is given twice"
        );
    }

    #[test]
    fn variance_uses_the_given_mean() {
        let x = Tensor::from_vec(vec![2, 2], vec![1f32, 3.0, 2.0, 6.0]).unwrap();
        let m = Tensor::from_vec(vec![2, 1], vec![2f32, 4.0]).unwrap();
        let a = VarianceAttrs { axis: Some(vec![1]), unbiased: true, ..Default::default() };
        let v = eval::<Variance>(&[&x, &m], &a).unwrap();
        assert_eq!(v[0].as_slice::<f32>().unwrap(), &[2.0, 8.0]);
        let wrong = Tensor::from_vec(vec![2], vec![2f32, 4.0]).unwrap();
        assert!(eval::<Variance>(&[&x, &wrong], &a).is_err());
    }
}
