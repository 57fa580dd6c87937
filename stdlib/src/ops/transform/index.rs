//! Indexing: `take` (gather along an axis, e.g. an embedding lookup) and `strided_slice`
//! (TVM `src/relay/op/tensor/transform.cc`, `include/tvm/topi/transform.h`).

use crate::attrs::{SliceMode, StridedSliceAttrs, TakeAttrs, TakeMode};
use crate::compute::transform as rule;
use crate::error::KernelError;
use crate::kernels::util::{any_type, args, ints, normalize_axis, only_output};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{shape_size, DType, Scalar, Tensor};

/// `take(data, indices)`: elements of `data` picked along `axis` by integer `indices`
/// (`axis = None` indexes the flattened data). Out-of-range indices are clamped (`clip`),
/// wrapped (`wrap`) or an error (`fast`). Any data dtype; integer indices.
#[derive(Debug)]
pub struct Take;

/// `take`'s geometry: data as `[batch, outer, n, inner]`, indices as `[batch, per_batch]`,
/// output as `[batch, outer, per_batch, inner]`.
struct TakePlan {
    batch: usize,
    outer: usize,
    n: usize,
    inner: usize,
    per_batch: usize,
}

/// The normalised `axis` and `batch_dims` of a `take` on data of rank `data_rank` with indices
/// of rank `indices_rank`: `batch_dims` (negative counts from the indices' end) may be at most
/// the indices' rank and `axis`.
fn take_axes(
    attrs: &TakeAttrs,
    axis: i64,
    data_rank: usize,
    indices_rank: usize,
) -> Result<(usize, usize), KernelError> {
    let axis = normalize_axis(axis, data_rank)?;
    let n_idx = indices_rank as i64;
    let b = if attrs.batch_dims < 0 { attrs.batch_dims + n_idx } else { attrs.batch_dims };
    let b = usize::try_from(b).ok().filter(|&b| b <= axis && b <= indices_rank).ok_or_else(|| {
        KernelError::Attr(format!(
            "batch_dims {} must be within the indices' rank {n_idx} and not after axis {axis}",
            attrs.batch_dims
        ))
    })?;
    Ok((axis, b))
}

fn take_plan(data: &[usize], indices: &[usize], attrs: &TakeAttrs) -> Result<TakePlan, KernelError> {
    let size =
        |s: &[usize]| shape_size(s).ok_or_else(|| KernelError::Shape(format!("shape {s:?} is too large")));
    let Some(axis) = attrs.axis else {
        return Ok(TakePlan { batch: 1, outer: 1, n: size(data)?, inner: 1, per_batch: size(indices)? });
    };
    let (axis, b) = take_axes(attrs, axis, data.len(), indices.len())?;
    Ok(TakePlan {
        batch: size(&data[..b])?,
        outer: size(&data[b..axis])?,
        n: data[axis],
        inner: size(&data[axis + 1..])?,
        per_batch: size(&indices[b..])?,
    })
}

/// An index adjusted into `0..n` as `mode` says.
fn resolve(index: i64, n: usize, mode: TakeMode) -> Result<usize, KernelError> {
    let oob = KernelError::IndexOutOfRange { index, size: n };
    let n_i = i64::try_from(n).map_err(|_| oob.clone())?;
    if n_i == 0 {
        return Err(oob);
    }
    let i = match mode {
        TakeMode::Clip => index.clamp(0, n_i - 1),
        TakeMode::Wrap => index.rem_euclid(n_i),
        TakeMode::Fast if (0..n_i).contains(&index) => index,
        TakeMode::Fast => return Err(oob),
    };
    Ok(i as usize)
}

impl Operator for Take {
    const NAME: &'static str = "take";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "gather elements by integer indices";
    type Attrs = TakeAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<TakeAttrs>> = Some(rule::take);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &TakeAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, indices] = args(inputs)?;
        let Some(axis) = attrs.axis else { return Ok(vec![indices.to_vec()]) };
        let (axis, b) = take_axes(attrs, axis, data.len(), indices.len())?;
        for i in 0..b {
            if let (Some(x), Some(y)) = (data[i].value(), indices[i].value()) {
                if x != y {
                    return Err(KernelError::Shape(format!(
                        "batch dimension {i} differs: {} and {}",
                        shape_text(data),
                        shape_text(indices)
                    )));
                }
            }
        }
        let mut out = data[..axis].to_vec();
        out.extend_from_slice(&indices[b..]);
        out.extend_from_slice(&data[axis + 1..]);
        D::product(&out)?;
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &TakeAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, i] = args(inputs)?;
        if !i.is_int() {
            return Err(KernelError::DType(format!("indices must be an integer tensor, found {i}")));
        }
        ints!(i, T => Ok(vec![DTypeSet::Any.check(d)?]))
    }

    fn reference(
        inputs: &[&Tensor],
        attrs: &TakeAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data, indices] = args(inputs)?;
        let p = take_plan(data.shape(), indices.shape(), attrs)?;
        let idx = (0..indices.len())
            .map(|k| match indices.get(k) {
                Some(Scalar::Int(v)) => resolve(v, p.n, attrs.mode),
                Some(Scalar::UInt(v)) => resolve(i64::try_from(v).unwrap_or(i64::MAX), p.n, attrs.mode),
                _ => Err(KernelError::DType("take indices must be integers".into())),
            })
            .collect::<Result<Vec<usize>, _>>()?;
        let out = only_output(outputs)?;
        any_type!(data.dtype(), T => {
            let src = data.as_slice::<T>()?;
            let mut dst = out.as_mut_slice::<T>()?.iter_mut();
            for b in 0..p.batch {
                for o in 0..p.outer {
                    for &i in &idx[b * p.per_batch..(b + 1) * p.per_batch] {
                        let base = ((b * p.outer + o) * p.n + i) * p.inner;
                        for &v in &src[base..base + p.inner] {
                            if let Some(d) = dst.next() {
                                *d = v;
                            }
                        }
                    }
                }
            }
            Ok(())
        })
    }
}

/// `strided_slice`: for each listed axis (the leading ones unless `axes` is given), the
/// elements `begin, begin + stride, ...` before `end`, with NumPy-style negative indices and
/// clamping (TVM `StridedSliceCanonicalizeBegin` / `StridedSliceOutputShape`). A missing `end`
/// or stride takes the whole dimension in the stride's direction; in `size` mode `end` holds
/// sizes (negative: to the end) and strides are 1. A range running against its stride is an
/// error, as in TVM; a `?` dimension stays `?`. Any dtype.
#[derive(Debug)]
pub struct StridedSlice;

/// `index` (negative counts from the end) clamped into the range a slice with `stride` may
/// start or stop at (TVM `CanonicalizeIndex`).
fn canonical_index(index: i64, extent: i64, stride: i64) -> i64 {
    let (lo, hi) = if stride < 0 { (-1, extent - 1) } else { (0, extent) };
    let index = if index < 0 { index.saturating_add(extent) } else { index };
    index.clamp(lo, hi)
}

/// One sliced axis: where it is and its begin, end and stride (ends not yet canonicalised).
struct AxisSlice {
    axis: usize,
    begin: i64,
    end: i64,
    stride: i64,
}

/// The per-axis slices the attributes describe, on an input of rank `rank`.
fn axis_slices(rank: usize, a: &StridedSliceAttrs) -> Result<Vec<AxisSlice>, KernelError> {
    let bad = |m: String| KernelError::Attr(m);
    let strides = a.strides.clone().unwrap_or_default();
    let (begin, end) = (&a.begin, &a.end);
    if end.len() > begin.len() || strides.len() > begin.len() {
        return Err(bad(format!(
            "end {end:?} and strides {strides:?} may not be longer than begin {begin:?}"
        )));
    }
    let axes: Vec<usize> = match &a.axes {
        Some(axes) if axes.len() != begin.len() => {
            return Err(bad(format!("axes {axes:?} and begin {begin:?} must have the same length")));
        }
        Some(axes) => axes.iter().map(|&x| normalize_axis(x, rank)).collect::<Result<_, _>>()?,
        None if begin.len() > rank => {
            return Err(bad(format!("begin {begin:?} is longer than the rank {rank}")))
        }
        None => (0..begin.len()).collect(),
    };
    let size_mode = a.slice_mode == SliceMode::Size;
    Ok(axes
        .into_iter()
        .zip(begin)
        .enumerate()
        .map(|(i, (axis, &begin))| {
            let stride = if size_mode { 1 } else { strides.get(i).copied().unwrap_or(1) };
            let end = match end.get(i) {
                Some(&size) if size_mode && size >= 0 => begin.saturating_add(size),
                Some(&e) if !size_mode => e,
                _ if stride < 0 => i64::MIN,
                _ => i64::MAX,
            };
            AxisSlice { axis, begin, end, stride }
        })
        .collect())
}

/// `(start, len)` of `begin..end` by `stride` within a dimension of size `extent`, after
/// canonicalising both ends.
///
/// # Errors
/// A zero stride, or a slice running against its stride.
fn slice_range(extent: i64, begin: i64, end: i64, stride: i64) -> Result<(i64, i64), KernelError> {
    if stride == 0 {
        return Err(KernelError::Attr("strides must not be 0".into()));
    }
    let b = canonical_index(begin, extent, stride);
    let e = canonical_index(end, extent, stride);
    if (stride > 0 && b > e) || (stride < 0 && e > b) {
        return Err(KernelError::Attr(format!("the slice {begin}:{end}:{stride} runs against its stride")));
    }
    let len = e.abs_diff(b).div_ceil(stride.unsigned_abs()) as i64;
    Ok((if len > 0 { b } else { 0 }, len))
}

/// `(axis, start, step, len)` per sliced axis of an input of `shape` (shared with the compute
/// rule).
pub(crate) fn slice_plan(
    shape: &[usize],
    a: &StridedSliceAttrs,
) -> Result<Vec<(usize, usize, isize, usize)>, KernelError> {
    axis_slices(shape.len(), a)?
        .into_iter()
        .map(|s| {
            let (start, len) = slice_range(shape[s.axis] as i64, s.begin, s.end, s.stride).map_err(|e| {
                KernelError::Attr(format!("{} on axis {}", crate::operator::message(e), s.axis))
            })?;
            Ok((s.axis, start as usize, s.stride as isize, len as usize))
        })
        .collect()
}

impl Operator for StridedSlice {
    const NAME: &'static str = "strided_slice";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "slice begin:end:stride per axis";
    type Attrs = StridedSliceAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<StridedSliceAttrs>> = Some(rule::strided_slice);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &StridedSliceAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        let mut out = x.to_vec();
        for s in axis_slices(x.len(), attrs)? {
            if let Some(extent) = x[s.axis].value() {
                let (_, len) = slice_range(extent as i64, s.begin, s.end, s.stride).map_err(|e| {
                    KernelError::Attr(format!("{} on axis {}", crate::operator::message(e), s.axis))
                })?;
                out[s.axis] = D::known(len as usize);
            } else if s.stride == 0 {
                return Err(KernelError::Attr("strides must not be 0".into()));
            }
        }
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &StridedSliceAttrs) -> Result<Vec<DType>, KernelError> {
        super::same_as_input(inputs)
    }

    fn reference(
        inputs: &[&Tensor],
        attrs: &StridedSliceAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let plan = slice_plan(x.shape(), attrs)?;
        let out = only_output(outputs)?;
        any_type!(x.dtype(), T => {
            let mut view = x.view::<T>()?;
            for &(axis, start, step, len) in &plan {
                view = view.slice_axis(axis, start, step, len)?;
            }
            out.view_mut::<T>()?.copy_from(&view)?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn len(extent: i64, begin: i64, end: i64, stride: i64) -> Result<i64, KernelError> {
        slice_range(extent, begin, end, stride).map(|(_, n)| n)
    }

    #[test]
    fn slices() {
        assert_eq!(len(10, 0, 10, 1).unwrap(), 10);
        assert_eq!(len(10, 1, 8, 3).unwrap(), 3);
        assert_eq!(len(10, -3, i64::MAX, 1).unwrap(), 3);
        assert_eq!(len(10, 0, 100, 1).unwrap(), 10);
        assert_eq!(len(10, 9, -11, -1).unwrap(), 10);
        assert_eq!(len(10, i64::MAX, 0, -2).unwrap(), 5);
        assert_eq!(len(10, 9, i64::MIN, -1).unwrap(), 10);
        assert_eq!(len(10, -100, 2, 1).unwrap(), 2);
        assert_eq!(len(10, 3, 3, 1).unwrap(), 0);
        assert!(len(10, 5, 2, 1).unwrap_err().to_string().contains("runs against"));
        assert!(len(10, 0, 2, 0).is_err());
        assert!(len(10, i64::MIN, i64::MAX, i64::MIN).unwrap_err().to_string().contains("runs against"));
    }

    #[test]
    fn take_shapes() {
        use relay_compiler::ir::Dim::{Any, Known as K};
        let a = |axis, batch_dims| TakeAttrs { axis, batch_dims, ..TakeAttrs::default() };
        let (data, idx) = ([K(4), K(5), K(6)], [K(2), Any]);
        let take = |attrs: &TakeAttrs| Take::shapes(&[&data, &idx], attrs).map(|mut v| v.remove(0));
        assert_eq!(take(&a(None, 0)).unwrap(), vec![K(2), Any]);
        assert_eq!(take(&a(Some(1), 0)).unwrap(), vec![K(4), K(2), Any, K(6)]);
        assert_eq!(take(&a(Some(-1), 0)).unwrap(), vec![K(4), K(5), K(2), Any]);
        assert!(take(&a(Some(3), 0)).is_err());
        let batched = Take::shapes(&[&data, &[K(4), K(3)]], &a(Some(1), 1)).unwrap();
        assert_eq!(batched, vec![vec![K(4), K(3), K(6)]]);
        let mismatch = Take::shapes(&[&data, &[K(3), K(3)]], &a(Some(1), 1)).unwrap_err();
        assert!(mismatch.to_string().contains("batch dimension 0 differs"));
    }
}
