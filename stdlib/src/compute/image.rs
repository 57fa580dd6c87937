//! Resampling rules, the `COMPUTE` of `image.resize1d/2d/3d`, `nn.upsampling`,
//! `nn.upsampling3d` and `image.crop_and_resize` (TVM registers them injective; reference
//! kernels: `crate::ops::image::sample`). Each output element is the weighted sum over the
//! product of its spatial axes' taps, as the reference kernel computes it: the coordinate
//! formulas, rounding and cubic weights are the reference's own (generic over
//! [`Real`]), evaluated in `float64` in the same order, so a fused result equals the
//! reference's up to FMA contraction on OpenCL. Every tap index is clamped into its axis, so
//! no coordinate, however wild (a NaN or infinite crop box), reads outside a buffer.

use super::util::{lazy, tensors};
use crate::attrs::{CoordinateTransformationMode, ResizeMethod};
use crate::ops::image::sample::{cubic_weights, source_coordinate, Real, Sampling};
use relay_compiler::kir::{Expr, Index, KernelBuilder};
use relay_compiler::op::{ComputeInput, LazyTensor, OutType, TensorDef};
use relay_devices::DType;
use std::ops::{Add, Range};
use std::rc::Rc;

/// An index as a `float64` value.
pub(crate) fn real_of(i: Index) -> Expr {
    Expr::index(i).cast(DType::F64)
}

/// The integer-valued `float64` `c` as an index clamped to `lo..=hi` (`as` semantics first:
/// saturating, NaN to 0), so that tap offsets added to it cannot overflow.
pub(crate) fn clamped_index(c: Expr, lo: i64, hi: i64) -> Index {
    Index::value(c.cast(DType::I64)).clamp(lo, hi)
}

/// The taps of one output coordinate along one axis.
struct AxisTaps {
    /// `(source index clamped to the axis, weight)`; no weight: 1 (`nearest_neighbor`).
    taps: Vec<(Index, Option<Expr>)>,
    /// Under `tf_crop_and_resize`, whether the source coordinate falls outside the axis.
    outside: Option<Expr>,
}

/// The taps of output coordinate `x` along an axis of `in_size` (at least 1) resampled to
/// `out_size`; `roi` is the axis's `(start, end)` under `tf_crop_and_resize`. Mirrors
/// `Sampling::axis_taps` of the reference.
fn axis_taps(s: &Sampling, x: Index, in_size: i64, out_size: i64, roi: (Expr, Expr)) -> AxisTaps {
    let c = source_coordinate(s.mode, real_of(x), in_size as usize, out_size as usize, roi);
    let last = in_size - 1;
    let (floor, clamp) = (c.clone().floor(), |i: Index| i.clamp(0, last));
    let t = c.clone() - floor.clone();
    let taps = match s.method {
        ResizeMethod::NearestNeighbor => vec![(clamped_index(s.nearest(c.clone()), 0, last), None)],
        ResizeMethod::Linear => {
            // A base below -1 or above `last` reads the same clamped pixels as -1 or `last`.
            let base = clamped_index(floor, -1, last);
            vec![(clamp(base.clone()), Some(Expr::real(1.0) - t.clone())), (clamp(base + 1), Some(t))]
        }
        ResizeMethod::Cubic => {
            let mut w = cubic_weights(t, s.cubic_alpha);
            if s.cubic_exclude {
                // The reference tests the unclamped integer index; in `float64` that is
                // exact for every finite coordinate.
                for (k, wk) in w.iter_mut().enumerate() {
                    let at = floor.clone() + Expr::real(k as f64 - 1.0);
                    let inside = at.clone().ge(Expr::real(0.0)).and(at.le(Expr::real(last as f64)));
                    *wk = Expr::select(inside, wk.clone(), Expr::real(0.0));
                }
                let [w0, w1, w2, w3] = w.clone();
                let total = w0 + w1 + w2 + w3;
                w = w.map(|wk| wk / total.clone());
            }
            let base = clamped_index(floor, -2, last + 1);
            w.into_iter()
                .enumerate()
                .map(|(k, wk)| (clamp(base.clone() + (k as i64 - 1)), Some(wk)))
                .collect()
        }
    };
    let outside = (s.mode == CoordinateTransformationMode::TfCropAndResize)
        .then(|| c.clone().lt(Expr::real(0.0)).or(c.gt(Expr::real(last as f64))));
    AxisTaps { taps, outside }
}

/// The sum over the product of `taps` (one per axis of `axes`) of the weighted elements of
/// `x` at `idx` with those axes replaced, outer axes outermost, as the reference sums.
fn weighted_sum(
    k: &KernelBuilder,
    x: &LazyTensor,
    taps: &[AxisTaps],
    axes: &[usize],
    idx: &mut Vec<Index>,
) -> Expr {
    let (Some((t, rest)), Some((&axis, rest_axes))) = (taps.split_first(), axes.split_first()) else {
        return x.at(k, idx).cast(DType::F64);
    };
    let terms = t.taps.iter().map(|(i, w)| {
        idx[axis] = i.clone();
        let inner = weighted_sum(k, x, rest, rest_axes, idx);
        match w {
            Some(w) => w.clone() * inner,
            None => inner,
        }
    });
    terms.collect::<Vec<_>>().into_iter().reduce(Add::add).unwrap_or_else(|| Expr::real(0.0))
}

/// Where a resampling reads its source: the data, and for each output element its image's
/// batch index and each axis's region of interest (`tf_crop_and_resize`).
type Source = Rc<dyn Fn(&KernelBuilder, &[Index]) -> (Index, Vec<(Expr, Expr)>)>;

/// `x` resampled with `sampling` along `axes` to the output `out`, `source` giving each
/// output element's batch index and regions of interest.
///
/// # Errors
/// An empty spatial axis (the reference kernel handles it).
fn resampled(
    x: &LazyTensor,
    axes: Range<usize>,
    sampling: Sampling,
    out: &OutType,
    source: Source,
) -> Result<TensorDef, String> {
    let axes: Vec<usize> = axes.collect();
    if axes.iter().any(|&a| x.shape.get(a).is_none_or(|&d| d == 0) || a >= out.shape.len()) {
        return Err("resampling an empty axis runs in the reference kernel".into());
    }
    let (x, out_shape, dtype) = (x.clone(), out.shape.clone(), out.dtype);
    Ok(lazy(move |k, idx| {
        let (batch, rois) = source(k, idx);
        let taps: Vec<AxisTaps> = axes
            .iter()
            .zip(rois)
            .map(|(&a, roi)| axis_taps(&sampling, idx[a].clone(), x.shape[a], out_shape[a], roi))
            .collect();
        let mut at = idx.to_vec();
        at[0] = batch;
        let sum = weighted_sum(k, &x, &taps, &axes, &mut at);
        let outside = taps.iter().filter_map(|t| t.outside.clone()).reduce(Expr::or);
        match outside {
            Some(o) => Expr::select(o, Expr::real(sampling.extrapolation_value), sum),
            None => sum,
        }
        .cast(dtype)
    }))
}

/// `image.resize*d`, `nn.upsampling*`: the one input resampled along `axes`, `roi` the
/// axes' starts then their ends.
pub(crate) fn resize(
    inputs: &[ComputeInput],
    axes: Range<usize>,
    roi: &[f64],
    sampling: Sampling,
    out: &OutType,
) -> Result<TensorDef, String> {
    let [x] = tensors(inputs)?;
    let n = axes.len();
    let roi: Vec<(f64, f64)> = (0..n)
        .map(|k| (roi.get(k).copied().unwrap_or(0.0), roi.get(k + n).copied().unwrap_or(0.0)))
        .collect();
    let source: Source = Rc::new(move |_, idx| {
        let rois = roi.iter().map(|&(start, end)| (Expr::real(start), Expr::real(end))).collect();
        (idx[0].clone(), rois)
    });
    resampled(x, axes, sampling, out, source)
}

/// `image.crop_and_resize(data, boxes, box_indices)`: output element `[b, ...]` resamples
/// image `box_indices[b]` over the region `boxes[b] = (y1, x1, y2, x2)`. An image index out
/// of range (an error of the reference kernel) reads the nearest image.
///
/// # Errors
/// Non-integer box indices, an empty batch or spatial axis (the reference kernel handles them).
pub(crate) fn crop_and_resize(
    inputs: &[ComputeInput],
    axes: Range<usize>,
    sampling: Sampling,
    out: &OutType,
) -> Result<TensorDef, String> {
    let [x, boxes, indices] = tensors(inputs)?;
    let images = x.shape.first().copied().unwrap_or(0);
    if images == 0 || !indices.dtype.is_int() || boxes.shape.get(1) != Some(&4) {
        return Err("this crop_and_resize runs in the reference kernel".into());
    }
    let (boxes, indices) = (boxes.clone(), indices.clone());
    let source: Source = Rc::new(move |k, idx| {
        let b = idx[0].clone();
        let corner = |j: i64| boxes.at(k, &[b.clone(), Index::Const(j)]).cast(DType::F64);
        let image = clamped_index(indices.at(k, std::slice::from_ref(&b)), 0, images - 1);
        (image, vec![(corner(0), corner(2)), (corner(1), corner(3))])
    });
    resampled(x, axes, sampling, out, source)
}
