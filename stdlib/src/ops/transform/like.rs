//! The `_like` operators: a transform whose target shape or dtype is read off a second tensor,
//! `shape_like`, which contributes only its type (TVM `src/relay/op/tensor/transform.cc`:
//! `reshape_like`, `broadcast_to_like`, `slice_like`, `collapse_sum_like`, `cast_like`).

use super::same_as_input;
use super::shape::broadcast_into;
use crate::attrs::{NoAttrs, ReshapeLikeAttrs, SliceLikeAttrs};
use crate::compute::transform as rule;
use crate::compute::util::{lazy, tensors};
use crate::error::KernelError;
use crate::kernels::num::Num;
use crate::kernels::util::{args, copy_elements, for_each_index, normalize_axis, nums, only_output};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use crate::ops::index::{copy_from_source, strides};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Storage, Tensor};

/// `a..b` of an axis range given as TVM's `begin`/`end` attributes over a tensor of rank
/// `rank` (negative values count from the end; `end` `None` is the rank).
///
/// # Errors
/// [`KernelError::Attr`] naming the attributes when the range is outside `0..=rank` or empty
/// backwards.
fn axis_range(begin: i64, end: Option<i64>, rank: usize, side: &str) -> Result<(usize, usize), KernelError> {
    let r = rank as i64;
    let norm = |v: i64| if v < 0 { v + r } else { v };
    let (b, e) = (norm(begin), norm(end.unwrap_or(r)));
    if !(0 <= b && b <= e && e <= r) {
        return Err(KernelError::Attr(format!(
            "`{side}_begin`={begin} and `{side}_end`={} do not give a range of axes of a rank-{rank} tensor",
            end.map_or("None".to_string(), |e| e.to_string())
        )));
    }
    Ok((b as usize, e as usize))
}

/// `reshape_like(data, shape_like)`: `data`'s elements under the shape of `data[..lhs_begin]`,
/// `shape_like[rhs_begin..rhs_end]`, `data[lhs_end..]`; the element counts must agree. Every
/// dtype.
#[derive(Debug)]
pub struct ReshapeLike;

impl Operator for ReshapeLike {
    const NAME: &'static str = "reshape_like";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "data reshaped to (part of) the shape of shape_like";
    type Attrs = ReshapeLikeAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<ReshapeLikeAttrs>> = Some(rule::reshape_like);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &ReshapeLikeAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, like] = args(inputs)?;
        let (lb, le) = axis_range(a.lhs_begin, a.lhs_end, x.len(), "lhs")?;
        let (rb, re) = axis_range(a.rhs_begin, a.rhs_end, like.len(), "rhs")?;
        let out: Vec<D> = x[..lb].iter().chain(&like[rb..re]).chain(&x[le..]).copied().collect();
        if let (Some(n), Some(m)) = (D::product(x)?.value(), D::product(&out)?.value()) {
            if n != m {
                return Err(KernelError::Shape(format!(
                    "cannot reshape {} ({n} elements) to {} ({m} elements)",
                    shape_text(x),
                    shape_text(&out)
                )));
            }
        }
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &ReshapeLikeAttrs) -> Result<Vec<DType>, KernelError> {
        let [x, _] = args(inputs)?;
        same_as_input(&[x])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &ReshapeLikeAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, _] = args(inputs)?;
        copy_elements(x, only_output(outputs)?)
    }
}

/// `broadcast_to_like(data, shape_like)`: `data` broadcast to `shape_like`'s shape (NumPy
/// rules, as `broadcast_to`). Every dtype.
#[derive(Debug)]
pub struct BroadcastToLike;

impl Operator for BroadcastToLike {
    const NAME: &'static str = "broadcast_to_like";
    const PATTERN: OpPattern = OpPattern::Broadcast;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "data broadcast to the shape of shape_like";
    type Attrs = NoAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<NoAttrs>> = Some(rule::broadcast_to_like);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &NoAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, like] = args(inputs)?;
        Ok(vec![super::shape::broadcast_target(x, like)?])
    }

    fn dtypes(inputs: &[DType], _: &NoAttrs) -> Result<Vec<DType>, KernelError> {
        let [x, _] = args(inputs)?;
        same_as_input(&[x])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &NoAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, _] = args(inputs)?;
        broadcast_into(x, only_output(outputs)?)
    }
}

/// `slice_like(data, shape_like, axes)`: the leading part of `data` of `shape_like`'s size
/// along `axes` (without `axes`, along every axis both have). Each sliced axis of
/// `shape_like` must be no longer than `data`'s. Every dtype.
#[derive(Debug)]
pub struct SliceLike;

impl Operator for SliceLike {
    const NAME: &'static str = "slice_like";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "data sliced from 0 to the size of shape_like along axes";
    type Attrs = SliceLikeAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<SliceLikeAttrs>> = Some(|inputs, _, _| {
        let [x, _] = tensors(inputs)?;
        let x = x.clone();
        Ok(lazy(move |k, idx| x.at(k, idx)))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &SliceLikeAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, like] = args(inputs)?;
        let axes: Vec<usize> = match &a.axes {
            None => (0..x.len().min(like.len())).collect(),
            Some(axes) => axes
                .iter()
                .map(|&ax| {
                    let i = normalize_axis(ax, x.len())?;
                    if i >= like.len() {
                        return Err(KernelError::Attr(format!(
                            "axis {ax} is out of range for shape_like of rank {}",
                            like.len()
                        )));
                    }
                    Ok(i)
                })
                .collect::<Result<_, _>>()?,
        };
        let mut out = x.to_vec();
        for i in axes {
            if let (Some(t), Some(s)) = (like[i].value(), x[i].value()) {
                if t > s {
                    return Err(KernelError::Shape(format!(
                        "cannot slice axis {i} of size {s} to size {t} (data {}, shape_like {})",
                        shape_text(x),
                        shape_text(like)
                    )));
                }
            }
            out[i] = like[i];
        }
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &SliceLikeAttrs) -> Result<Vec<DType>, KernelError> {
        let [x, _] = args(inputs)?;
        same_as_input(&[x])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &SliceLikeAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, _] = args(inputs)?;
        copy_from_source(x, only_output(outputs)?, |p, src| src.copy_from_slice(p))
    }
}

/// `collapse_sum_like(data, collapse_type)`: `data` summed down to `collapse_type`'s shape,
/// which must broadcast to `data`'s (the reverse of `broadcast_to_like`, as gradients of
/// broadcasting use it): leading axes and axes where `collapse_type` has 1 are summed.
/// Numeric dtypes (integers wrap).
#[derive(Debug)]
pub struct CollapseSumLike;

impl Operator for CollapseSumLike {
    const NAME: &'static str = "collapse_sum_like";
    const PATTERN: OpPattern = OpPattern::CommReduce;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "data summed down to the shape of collapse_type";
    type Attrs = NoAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<NoAttrs>> =
        Some(|inputs, _, out| crate::compute::reduce::collapse_sum(inputs, out));

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &NoAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, like] = args(inputs)?;
        super::shape::broadcast_target(like, x).map_err(|_| {
            KernelError::Shape(format!(
                "cannot collapse {} to {}: it does not broadcast back",
                shape_text(x),
                shape_text(like)
            ))
        })?;
        Ok(vec![like.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &NoAttrs) -> Result<Vec<DType>, KernelError> {
        let [x, _] = args(inputs)?;
        Ok(vec![Self::DTYPES.check(x)?])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &NoAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, _] = args(inputs)?;
        let out = only_output(outputs)?;
        let (os, lead) = (strides(out.shape()), x.ndim() - out.ndim());
        let shape = out.shape().to_vec();
        nums!(x.dtype(), T => {
            let src = x.as_slice::<T>()?;
            let dst = out.as_mut_slice::<T>()?;
            dst.fill(T::ZERO);
            let mut i = 0;
            for_each_index(x.shape(), |p| {
                let at: usize = p[lead..].iter().zip(&shape).zip(&os).map(|((&q, &d), s)| if d == 1 { 0 } else { q * s }).sum();
                dst[at] = dst[at].add_wrapping(src[i]);
                i += 1;
                Ok(())
            })
        })
    }
}

/// `cast_like(data, dtype_like)`: `data` converted to `dtype_like`'s dtype (as `cast`).
#[derive(Debug)]
pub struct CastLike;

impl Operator for CastLike {
    const NAME: &'static str = "cast_like";
    const PATTERN: OpPattern = OpPattern::ElemWise;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "convert to the dtype of dtype_like";
    type Attrs = NoAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<NoAttrs>> = Some(|inputs, _, out| {
        let [x, _] = tensors(inputs)?;
        let (x, to) = (x.clone(), out.dtype);
        Ok(lazy(move |k, idx| x.at(k, idx).cast(to)))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &NoAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, _] = args(inputs)?;
        Ok(vec![x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &NoAttrs) -> Result<Vec<DType>, KernelError> {
        let [x, like] = args(inputs)?;
        for d in [x, like] {
            if !Storage::supports(d) {
                return Err(KernelError::unsupported(d));
            }
        }
        Ok(vec![like])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &NoAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [_, _] = args(inputs)?;
        crate::ops::elemwise::convert(inputs, only_output(outputs)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::Dim::{Any, Known as K};

    #[test]
    fn reshape_like_takes_a_range_of_axes() {
        let a = ReshapeLikeAttrs { lhs_begin: 1, lhs_end: Some(-1), rhs_begin: 0, rhs_end: Some(2) };
        let out = ReshapeLike::shapes::<usize>(&[&[2, 6, 5], &[3, 2, 9]], &a).unwrap();
        assert_eq!(out, vec![vec![2, 3, 2, 5]]);
        assert_eq!(
            ReshapeLike::shapes(&[&[K(6)][..], &[Any, K(3)]], &ReshapeLikeAttrs::default()).unwrap(),
            vec![vec![Any, K(3)]]
        );
        let bad = ReshapeLikeAttrs { lhs_begin: 2, lhs_end: Some(1), ..ReshapeLikeAttrs::default() };
        assert!(ReshapeLike::shapes::<usize>(&[&[2, 3], &[6]], &bad)
            .unwrap_err()
            .to_string()
            .contains("lhs_begin"));
        let e = ReshapeLike::shapes::<usize>(&[&[2, 3], &[5]], &ReshapeLikeAttrs::default()).unwrap_err();
        assert_eq!(e.to_string(), "shape error: cannot reshape (2, 3) (6 elements) to (5) (5 elements)");
    }

    #[test]
    fn slice_and_collapse_check_their_shapes() {
        let none = SliceLikeAttrs::default();
        assert_eq!(SliceLike::shapes::<usize>(&[&[4, 5, 6], &[2, 3]], &none).unwrap(), vec![vec![2, 3, 6]]);
        let last = SliceLikeAttrs { axes: Some(vec![-1]) };
        assert!(SliceLike::shapes::<usize>(&[&[4, 5, 6], &[2, 3]], &last).is_err());
        assert!(SliceLike::shapes::<usize>(&[&[4], &[5]], &none)
            .unwrap_err()
            .to_string()
            .contains("size 4 to size 5"));
        assert_eq!(
            CollapseSumLike::shapes::<usize>(&[&[2, 3, 4], &[3, 1]], &NoAttrs::default()).unwrap(),
            vec![vec![3, 1]]
        );
        assert!(CollapseSumLike::shapes::<usize>(&[&[2, 3], &[2]], &NoAttrs::default()).is_err());
    }
}
