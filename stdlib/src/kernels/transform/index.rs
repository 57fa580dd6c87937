//! Indexing: `take` (gather along an axis, e.g. an embedding lookup) and `strided_slice`
//! (TVM `src/relay/op/tensor/transform.cc`, `include/tvm/topi/transform.h`).

use crate::attrs::{SliceMode, StridedSliceAttrs, TakeAttrs, TakeMode};
use crate::error::KernelError;
use crate::kernels::util::{any_type, args, ints, normalize_axis, only_output};
use crate::kernels::{Checked, Kernel};
use relay_devices::{shape_size, DType, Scalar, Tensor};

/// `take(data, indices)`: elements of `data` picked along `axis` by integer `indices`
/// (`axis = None` indexes the flattened data). Out-of-range indices are clamped (`clip`),
/// wrapped (`wrap`) or an error (`fast`). Any data dtype; integer indices.
#[derive(Debug)]
pub struct Take;

/// `take`'s geometry: data as `[batch, outer, n, inner]`, indices as `[batch, per_batch]`,
/// output as `[batch, outer, per_batch, inner]`.
struct TakePlan {
    out_shape: Vec<usize>,
    batch: usize,
    outer: usize,
    n: usize,
    inner: usize,
    per_batch: usize,
}

fn take_plan(data: &[usize], indices: &[usize], attrs: &TakeAttrs) -> Result<TakePlan, KernelError> {
    let size =
        |s: &[usize]| shape_size(s).ok_or_else(|| KernelError::Shape(format!("shape {s:?} is too large")));
    let Some(axis) = attrs.axis else {
        let n = size(data)?;
        let per_batch = size(indices)?;
        return Ok(TakePlan { out_shape: indices.to_vec(), batch: 1, outer: 1, n, inner: 1, per_batch });
    };
    let axis = normalize_axis(axis, data.len())?;
    let b = if attrs.batch_dims < 0 { attrs.batch_dims + indices.len() as i64 } else { attrs.batch_dims };
    let b = usize::try_from(b)
        .ok()
        .filter(|&b| b <= axis && b <= indices.len())
        .ok_or_else(|| KernelError::Attr(format!("batch_dims {} is out of range", attrs.batch_dims)))?;
    if data[..b] != indices[..b] {
        return Err(KernelError::Shape(format!("batch dimensions of {data:?} and {indices:?} differ")));
    }
    let mut out_shape = data[..axis].to_vec();
    out_shape.extend_from_slice(&indices[b..]);
    out_shape.extend_from_slice(&data[axis + 1..]);
    size(&out_shape)?;
    Ok(TakePlan {
        batch: size(&data[..b])?,
        outer: size(&data[b..axis])?,
        n: data[axis],
        inner: size(&data[axis + 1..])?,
        per_batch: size(&indices[b..])?,
        out_shape,
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

impl Kernel for Take {
    const NAME: &'static str = "take";
    type Attrs = TakeAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &TakeAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [data, indices] = args(inputs)?;
        Ok(vec![take_plan(data, indices, attrs)?.out_shape])
    }

    fn dtypes(inputs: &[DType], _: &TakeAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, i] = args(inputs)?;
        ints!(i, T => Ok(vec![d]))
    }

    fn compute(
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

/// `strided_slice`: for each listed axis, the elements `begin, begin + stride, ...` before
/// `end`, with NumPy-style negative indices and clamping (TVM `StridedSliceCanonicalizeBegin`
/// / `StridedSliceOutputShape`); a range that runs backwards is empty rather than an error.
/// Any dtype.
#[derive(Debug)]
pub struct StridedSlice;

/// `(axis, start, step, len)` per sliced axis (shared with the compute rule).
pub(crate) fn slice_plan(
    shape: &[usize],
    a: &StridedSliceAttrs,
) -> Result<Vec<(usize, usize, isize, usize)>, KernelError> {
    let rank = shape.len();
    let axes: Vec<usize> = match &a.axes {
        Some(axes) => axes.iter().map(|&x| normalize_axis(x, rank)).collect::<Result<_, _>>()?,
        None => (0..a.begin.len()).collect(),
    };
    if axes.len() != a.begin.len() || a.end.len() > axes.len() || axes.iter().any(|&x| x >= rank) {
        return Err(KernelError::Attr(format!(
            "begin {:?} / end {:?} do not fit rank {rank}",
            a.begin, a.end
        )));
    }
    let mut plan = Vec::with_capacity(axes.len());
    for (i, &axis) in axes.iter().enumerate() {
        let step = match (a.slice_mode, &a.strides) {
            (SliceMode::Size, _) | (_, None) => 1,
            (SliceMode::End, Some(s)) => s.get(i).copied().unwrap_or(1),
        };
        if step == 0 {
            return Err(KernelError::Attr("strided_slice stride must not be 0".into()));
        }
        let dim = shape[axis] as i128;
        let begin = a.begin[i] as i128;
        let end = match (a.end.get(i), a.slice_mode) {
            (Some(&e), SliceMode::Size) if e >= 0 => begin + e as i128,
            (Some(&e), SliceMode::End) => e as i128,
            _ if step > 0 => dim,
            _ => -dim - 1,
        };
        let canon = |x: i128| {
            let x = if x < 0 { x + dim } else { x };
            if step < 0 {
                x.clamp(-1, dim - 1)
            } else {
                x.clamp(0, dim)
            }
        };
        let (b, e, s) = (canon(begin), canon(end), step as i128);
        let span = if s > 0 { e - b } else { b - e };
        let len = if span > 0 { (span + s.abs() - 1) / s.abs() } else { 0 };
        let start = if len > 0 { b as usize } else { 0 };
        plan.push((axis, start, step as isize, len as usize));
    }
    Ok(plan)
}

impl Kernel for StridedSlice {
    const NAME: &'static str = "strided_slice";
    type Attrs = StridedSliceAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &StridedSliceAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [x] = args(inputs)?;
        let mut out = x.to_vec();
        for (axis, _, _, len) in slice_plan(x, attrs)? {
            out[axis] = len;
        }
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &StridedSliceAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![d])
    }

    fn compute(
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
