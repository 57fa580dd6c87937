//! Sorting operators (TVM `src/relay/op/algorithm/`, `python/tvm/topi/sort.py`): `sort`,
//! `argsort`, `topk`, and `searchsorted`, the binary search into sorted rows. Sorts are stable (equal elements keep their order, in descending order
//! too, as TVM's and onnxruntime's), NaN sorts above every number.

use super::index::may_equal;
use crate::attrs::{ArgsortAttrs, SearchSortedAttrs, SortAttrs, TopkAttrs, TopkRetType};
use crate::error::KernelError;
use crate::kernels::util::{args, normalize_axis, nums, only_output};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Element, Scalar, Tensor};
use std::cmp::Ordering;

/// The sorting operators.
pub const ALGORITHM: &[OpEntry] =
    &[OpEntry::of::<Sort>(), OpEntry::of::<Argsort>(), OpEntry::of::<Topk>(), OpEntry::of::<SearchSorted>()];

/// A total order on elements: numbers as usual, NaN above them all and equal to itself.
fn total_order<T: Element>(a: T, b: T) -> Ordering {
    #[allow(clippy::eq_op)] // `x != x` is the NaN test for every element type.
    match (a != a, b != b) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// For every line of `x` along `axis` (in row-major order of the other axes), its positions in
/// sorted order, the first `k` kept.
fn sorted_positions<T: Element>(
    x: &Tensor,
    axis: usize,
    ascending: bool,
    k: usize,
) -> Result<Vec<Vec<usize>>, KernelError> {
    let shape = x.shape();
    let (outer, n, inner): (usize, usize, usize) =
        (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product());
    let src = x.as_slice::<T>()?;
    let mut lines = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| src[(o * n + j) * inner + i];
            let mut order: Vec<usize> = (0..n).collect();
            if ascending {
                order.sort_by(|&p, &q| total_order(at(p), at(q)));
            } else {
                order.sort_by(|&p, &q| total_order(at(q), at(p)));
            }
            order.truncate(k);
            lines.push(order);
        }
    }
    Ok(lines)
}

/// Writes `f(l, p)` for the `j`-th position `p` of every line `l` to `out` at position `j`
/// along `axis` (where `out` has the lines' length `k`).
fn write_lines<O: Element>(
    out: &mut Tensor,
    axis: usize,
    lines: &[Vec<usize>],
    f: impl Fn(usize, usize) -> O,
) -> Result<(), KernelError> {
    let shape = out.shape().to_vec();
    let (k, inner): (usize, usize) = (shape[axis], shape[axis + 1..].iter().product());
    let dst = out.as_mut_slice::<O>()?;
    for (l, line) in lines.iter().enumerate() {
        let (o, i) = (l / inner.max(1), l % inner.max(1));
        for (j, &p) in line.iter().enumerate().take(k) {
            if let Some(d) = dst.get_mut((o * k + j) * inner + i) {
                *d = f(l, p);
            }
        }
    }
    Ok(())
}

/// Writes the sorted values of `x` (lines from [`sorted_positions`]) to `out`.
fn write_values(x: &Tensor, axis: usize, lines: &[Vec<usize>], out: &mut Tensor) -> Result<(), KernelError> {
    let inner: usize = x.shape()[axis + 1..].iter().product();
    let n = x.shape()[axis];
    nums!(x.dtype(), T => {
        let src = x.as_slice::<T>()?;
        write_lines::<T>(out, axis, lines, |l, p| src[(l / inner.max(1) * n + p) * inner + l % inner.max(1)])
    })
}

/// Writes the positions of `lines` to `out`, converted to its dtype.
fn write_indices(axis: usize, lines: &[Vec<usize>], out: &mut Tensor) -> Result<(), KernelError> {
    nums!(out.dtype(), I => write_lines::<I>(out, axis, lines, |_, p| I::from_scalar(Scalar::Int(p as i64))))
}

/// `sort`'s and `argsort`'s common part: the normalised axis and every line's sorted
/// positions.
fn sort_whole_axis(x: &Tensor, axis: i64, ascending: bool) -> Result<(usize, Vec<Vec<usize>>), KernelError> {
    let axis = normalize_axis(axis, x.ndim())?;
    let n = x.shape()[axis];
    let lines = nums!(x.dtype(), T => sorted_positions::<T>(x, axis, ascending, n))?;
    Ok((axis, lines))
}

/// Errors unless `d` can hold indices.
fn index_dtype(d: DType) -> Result<DType, KernelError> {
    DTypeSet::Nums
        .check(d)
        .map_err(|_| KernelError::DType(format!("the index dtype must be numeric, found `{d}`")))
}

/// `sort(data, axis, is_ascend)`: the elements sorted along `axis`. Same shape and dtype.
#[derive(Debug)]
pub struct Sort;

impl Operator for Sort {
    const NAME: &'static str = "sort";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "elements sorted along axis";
    type Attrs = SortAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &SortAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        normalize_axis(a.axis, x.len())?;
        Ok(vec![x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &SortAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![Self::DTYPES.check(d)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &SortAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let (axis, lines) = sort_whole_axis(x, a.axis, a.is_ascend)?;
        write_values(x, axis, &lines, only_output(outputs)?)
    }
}

/// `argsort(data, axis, is_ascend, dtype)`: the positions that sort `data` along `axis`, as
/// `dtype`. Same shape as `data`.
#[derive(Debug)]
pub struct Argsort;

impl Operator for Argsort {
    const NAME: &'static str = "argsort";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "positions that sort along axis";
    type Attrs = ArgsortAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &ArgsortAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        Sort::shapes(inputs, &SortAttrs { axis: a.axis, is_ascend: a.is_ascend })
    }

    fn dtypes(inputs: &[DType], a: &ArgsortAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Self::DTYPES.check(d)?;
        Ok(vec![index_dtype(a.dtype)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &ArgsortAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let (axis, lines) = sort_whole_axis(x, a.axis, a.is_ascend)?;
        write_indices(axis, &lines, only_output(outputs)?)
    }
}

/// `topk(data, k, axis, ret_type, is_ascend, dtype)`: the `k` largest (`is_ascend`: smallest)
/// elements along `axis`, in order, and their positions as `dtype`; `ret_type` picks the
/// tuple `(values, indices)`, or one of them. Dimension `axis` becomes `k` (`k` absent or
/// below 1: the whole axis).
#[derive(Debug)]
pub struct Topk;

/// `topk`'s axis and the number of elements kept on an axis of size `n` (`None`: unknown).
fn topk_plan(a: &TopkAttrs, rank: usize, n: Option<usize>) -> Result<(usize, Option<usize>), KernelError> {
    let axis = normalize_axis(a.axis, rank)?;
    let k = match a.k {
        Some(k) if k >= 1 => usize::try_from(k).ok(),
        _ => n,
    };
    if let (Some(k), Some(n)) = (k, n) {
        if k > n {
            return Err(KernelError::Attr(format!("topk k = {k} is larger than axis {axis} of size {n}")));
        }
    }
    Ok((axis, k))
}

impl Operator for Topk {
    const NAME: &'static str = "topk";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "the k largest (or smallest) elements along axis and their positions";
    type Attrs = TopkAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &TopkAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        let axis = normalize_axis(a.axis, x.len())?;
        let (_, k) = topk_plan(a, x.len(), x[axis].value())?;
        let mut out = x.to_vec();
        out[axis] = k.map_or(x[axis], D::known);
        Ok(match a.ret_type {
            TopkRetType::Both => vec![out.clone(), out],
            TopkRetType::Values | TopkRetType::Indices => vec![out],
        })
    }

    fn dtypes(inputs: &[DType], a: &TopkAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        let d = Self::DTYPES.check(d)?;
        let i = index_dtype(a.dtype)?;
        Ok(match a.ret_type {
            TopkRetType::Both => vec![d, i],
            TopkRetType::Values => vec![d],
            TopkRetType::Indices => vec![i],
        })
    }

    fn reference(
        inputs: &[&Tensor],
        a: &TopkAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let axis = normalize_axis(a.axis, x.ndim())?;
        let (_, k) = topk_plan(a, x.ndim(), Some(x.shape()[axis]))?;
        let k = k.unwrap_or(0);
        let lines = nums!(x.dtype(), T => sorted_positions::<T>(x, axis, a.is_ascend, k))?;
        match (a.ret_type, outputs) {
            (TopkRetType::Both, [values, indices]) => {
                write_values(x, axis, &lines, values)?;
                write_indices(axis, &lines, indices)
            }
            (TopkRetType::Values, [values]) => write_values(x, axis, &lines, values),
            (TopkRetType::Indices, [indices]) => write_indices(axis, &lines, indices),
            (_, outputs) => Err(KernelError::Shape(format!("topk cannot write {} outputs", outputs.len()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_sorts_last_and_ties_keep_their_order() {
        let x = Tensor::from_vec(vec![5], vec![2.0f32, f32::NAN, 1.0, 2.0, -1.0]).unwrap();
        let lines = sorted_positions::<f32>(&x, 0, true, 5).unwrap();
        assert_eq!(lines, vec![vec![4, 2, 0, 3, 1]]);
        let lines = sorted_positions::<f32>(&x, 0, false, 3).unwrap();
        assert_eq!(lines, vec![vec![1, 0, 3]]);
    }
}

/// `searchsorted(sorted_sequence, values, right, dtype)`: for each value, the number of
/// elements of its row of `sorted_sequence` that are below it (`right`: at most it), i.e. the
/// insertion point that keeps the row sorted. `sorted_sequence` is 1-D (one row for every
/// value) or has `values`' leading dimensions (one row per leading index). Numeric dtypes, the
/// same for both; output `values`' shape, `dtype` `int32` or `int64`.
#[derive(Debug)]
pub struct SearchSorted;

impl Operator for SearchSorted {
    const NAME: &'static str = "searchsorted";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "insertion points of values into sorted rows";
    type Attrs = SearchSortedAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &SearchSortedAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [seq, values] = args(inputs)?;
        // `split_last` first: a 0-d sequence has no leading dimensions to compare.
        let lead_matches = seq.split_last().is_some_and(|(_, lead)| {
            seq.len() == values.len() && lead.iter().zip(values).all(|(&a, &b)| may_equal(a, b))
        });
        if seq.is_empty() || (seq.len() > 1 && !lead_matches) {
            return Err(KernelError::Shape(format!(
                "sorted_sequence must be 1-D or share the leading dimensions of values, got {} and {}",
                shape_text(seq),
                shape_text(values)
            )));
        }
        Ok(vec![values.to_vec()])
    }

    fn dtypes(inputs: &[DType], a: &SearchSortedAttrs) -> Result<Vec<DType>, KernelError> {
        Self::DTYPES.check(crate::kernels::util::same_dtype(inputs)?)?;
        if a.dtype != DType::I32 && a.dtype != DType::I64 {
            return Err(KernelError::DType(format!(
                "the index dtype must be int32 or int64, got `{}`",
                a.dtype
            )));
        }
        Ok(vec![a.dtype])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &SearchSortedAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [seq, values] = args(inputs)?;
        let row = seq.shape().last().copied().unwrap_or(0);
        let per_row =
            if seq.ndim() == 1 { values.len() } else { values.shape().last().copied().unwrap_or(1) };
        let out = only_output(outputs)?;
        let positions: Vec<Scalar> = nums!(seq.dtype(), T => {
            let (s, v) = (seq.as_slice::<T>()?, values.as_slice::<T>()?);
            Ok::<_, KernelError>(v
                .iter()
                .enumerate()
                .map(|(i, &x)| {
                    let start = if seq.ndim() == 1 { 0 } else { i / per_row.max(1) * row };
                    let line = s.get(start..start + row).unwrap_or(&[]);
                    let n = line.partition_point(|&e| {
                        let o = total_order(e, x);
                        o == Ordering::Less || (a.right && o == Ordering::Equal)
                    });
                    Scalar::UInt(n as u64)
                })
                .collect())
        })?;
        for (i, p) in positions.into_iter().enumerate() {
            out.set(i, p);
        }
        Ok(())
    }
}
