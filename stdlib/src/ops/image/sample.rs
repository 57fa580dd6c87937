//! The one resampling behind `image.resize{1,2,3}d` and `nn.upsampling{,3d}` (TVM
//! `python/tvm/topi/image/resize.py`): per spatial axis, an output coordinate maps to a source
//! coordinate ([`CoordinateTransformationMode`]) and from it to taps — one source index for
//! `nearest_neighbor`, two for `linear`, four for `cubic`, each clamped to the edge, with
//! weights. An output element is the weighted sum over the product of its axes' taps, so one
//! axis-wise rule serves every rank; sums in `float64`, cast to the output dtype as TVM's
//! `astype` does.

use super::super::index::strides;
use super::super::nn::converted;
use crate::attrs::{CoordinateTransformationMode, ResizeMethod, RoundingMethod};
use crate::error::KernelError;
use crate::kernels::num::from_f64;
use crate::kernels::util::{for_each_index, nums, to_size};
use crate::operator::{shape_text, DTypeSet, ShapeDim};
use relay_devices::{DType, Tensor};
use std::ops::Range;

/// TVM's nudge before `floor`/`ceil` rounding, so that `2.99999` computed for `3` reads pixel 3.
const ROUNDING_EPSILON: f64 = 1e-5;

/// Everything of a resampling but the sizes: how coordinates map and how taps combine.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sampling {
    /// Interpolation.
    pub method: ResizeMethod,
    /// Output to source coordinates.
    pub mode: CoordinateTransformationMode,
    /// How `nearest_neighbor` picks its pixel.
    pub rounding: RoundingMethod,
    /// The cubic kernel's `a`.
    pub cubic_alpha: f64,
    /// Cubic taps outside the source get weight 0, the rest renormalised.
    pub cubic_exclude: bool,
    /// The value outside the source under `tf_crop_and_resize`.
    pub extrapolation_value: f64,
}

/// The taps of one output coordinate along one axis.
#[derive(Debug)]
struct AxisTaps {
    /// `(source index, weight)`, the index clamped to the axis.
    taps: Vec<(usize, f64)>,
    /// The source coordinate falls outside the axis under `tf_crop_and_resize`.
    outside: bool,
}

/// The source coordinate of output coordinate `x` along an axis of `in_size` resampled to
/// `out_size`; `roi` is the axis's `(start, end)` under `tf_crop_and_resize`.
fn source_coordinate(
    mode: CoordinateTransformationMode,
    x: usize,
    in_size: usize,
    out_size: usize,
    roi: (f64, f64),
) -> f64 {
    use CoordinateTransformationMode as M;
    let (x, in_f, out_f) = (x as f64, in_size as f64, out_size as f64);
    let scale = in_f / out_f;
    // A one-pixel output has no corner-to-corner span: TVM divides by zero there, PyTorch
    // (whose models bring these modes) samples the first pixel.
    let spans = out_size > 1;
    match mode {
        M::HalfPixel => (x + 0.5) * scale - 0.5,
        M::AlignCorners if spans => x * (in_f - 1.0) / (out_f - 1.0),
        M::AlignCorners => 0.0,
        M::Asymmetric => x * scale,
        M::PytorchHalfPixel if spans => (x + 0.5) * scale - 0.5,
        M::PytorchHalfPixel => 0.0,
        M::TfHalfPixelForNn => (x + 0.5) * scale,
        M::TfCropAndResize if spans => {
            roi.0 * (in_f - 1.0) + x * (roi.1 - roi.0) * (in_f - 1.0) / (out_f - 1.0)
        }
        M::TfCropAndResize => 0.5 * (roi.0 + roi.1) * (in_f - 1.0),
    }
}

/// Keys' cubic convolution weights of the four taps around fraction `t` (TVM
/// `_cubic_spline_weights`).
pub(crate) fn cubic_weights(t: f64, a: f64) -> [f64; 4] {
    let (t2, t3) = (t * t, t * t * t);
    [
        a * (t3 - 2.0 * t2 + t),
        (a + 2.0) * t3 - (3.0 + a) * t2 + 1.0,
        -(a + 2.0) * t3 + (3.0 + 2.0 * a) * t2 - a * t,
        -a * t3 + a * t2,
    ]
}

impl Sampling {
    /// `method` over `mode` coordinates with TVM's `resize` defaults for the rest (as
    /// `nn.upsampling` calls it): rounding by mode, `cubic_alpha = -0.5`, no exclusion.
    pub(crate) fn new(method: ResizeMethod, mode: CoordinateTransformationMode) -> Sampling {
        Sampling {
            method,
            mode,
            rounding: RoundingMethod::Auto,
            cubic_alpha: -0.5,
            cubic_exclude: false,
            extrapolation_value: 0.0,
        }
    }

    /// The nearest pixel of source coordinate `c`, unclamped.
    fn nearest(&self, c: f64) -> i64 {
        let rounding = match (self.rounding, self.mode) {
            (RoundingMethod::Auto, CoordinateTransformationMode::AlignCorners) => RoundingMethod::Round,
            (RoundingMethod::Auto, _) => RoundingMethod::Floor,
            (r, _) => r,
        };
        let i = match rounding {
            RoundingMethod::Round | RoundingMethod::Auto => c.round_ties_even(),
            RoundingMethod::RoundPreferFloor => (c - 0.5).ceil(),
            RoundingMethod::RoundPreferCeil => (c + 0.5).floor(),
            RoundingMethod::Floor => (c + ROUNDING_EPSILON).floor(),
            RoundingMethod::Ceil => (c - ROUNDING_EPSILON).ceil(),
        };
        i as i64
    }

    /// The taps of output coordinate `x` along an axis of `in_size` (at least 1 when
    /// `out_size` is) resampled to `out_size`.
    fn axis_taps(&self, x: usize, in_size: usize, out_size: usize, roi: (f64, f64)) -> AxisTaps {
        let c = source_coordinate(self.mode, x, in_size, out_size, roi);
        let last = i64::try_from(in_size).unwrap_or(i64::MAX) - 1;
        // `min` then `max`, as TVM clamps: never a panic on an empty axis.
        let clamp = |i: i64| i.min(last).max(0) as usize;
        let (base, t) = (c.floor() as i64, c - c.floor());
        let taps = match self.method {
            ResizeMethod::NearestNeighbor => vec![(clamp(self.nearest(c)), 1.0)],
            ResizeMethod::Linear => vec![(clamp(base), 1.0 - t), (clamp(base + 1), t)],
            ResizeMethod::Cubic => {
                let mut w = cubic_weights(t, self.cubic_alpha);
                let index = |k: usize| base - 1 + k as i64;
                if self.cubic_exclude {
                    for (k, wk) in w.iter_mut().enumerate() {
                        if !(0..=last).contains(&index(k)) {
                            *wk = 0.0;
                        }
                    }
                    let total: f64 = w.iter().sum();
                    w.iter_mut().for_each(|wk| *wk /= total);
                }
                w.iter().enumerate().map(|(k, &wk)| (clamp(index(k)), wk)).collect()
            }
        };
        let outside =
            self.mode == CoordinateTransformationMode::TfCropAndResize && (c < 0.0 || c > last as f64);
        AxisTaps { taps, outside }
    }
}

/// The spatial axes of `layout` for operator `op`: `2..rank` when it is `first` (channels
/// first, `NCHW`), `1..rank - 1` when it is `last` (`NHWC`).
///
/// # Errors
/// Any other layout (packed layouts such as `NCHW4c` included).
pub(crate) fn spatial_axes(
    op: &str,
    layout: &str,
    first: &str,
    last: &str,
) -> Result<Range<usize>, KernelError> {
    let rank = first.len();
    if layout == first {
        Ok(2..rank)
    } else if layout == last {
        Ok(1..rank - 1)
    } else {
        Err(KernelError::Attr(format!("{op} supports layout {first:?} or {last:?}, got {layout:?}")))
    }
}

/// The `size` attribute of `op`, one non-negative size per spatial axis (`count` of them).
///
/// # Errors
/// Another number of values, or a negative one.
pub(crate) fn output_sizes<D: ShapeDim>(op: &str, size: &[i64], count: usize) -> Result<Vec<D>, KernelError> {
    if size.len() != count {
        return Err(KernelError::Attr(format!(
            "{op} needs `size` with {count} values, one per spatial axis, got {}",
            size.len()
        )));
    }
    size.iter().map(|&s| to_size(s, "size").map(D::known)).collect()
}

/// The shape of `x` (rank `rank`) resampled by `op` to `sizes` on `axes`.
///
/// # Errors
/// Another rank, or an empty source axis resampled to a non-empty one.
pub(crate) fn resampled_shape<D: ShapeDim>(
    op: &str,
    x: &[D],
    rank: usize,
    axes: Range<usize>,
    sizes: &[D],
) -> Result<Vec<D>, KernelError> {
    if x.len() != rank {
        return Err(KernelError::Shape(format!("{op} needs a {rank}-d tensor, got {}", shape_text(x))));
    }
    let mut out = x.to_vec();
    for (a, &size) in axes.zip(sizes) {
        if x[a].value() == Some(0) && size.value() != Some(0) {
            return Err(KernelError::Shape(format!(
                "{op} cannot resample the empty axis {a} of {} to {}",
                shape_text(x),
                shape_text(&[size])
            )));
        }
        out[a] = size;
    }
    Ok(out)
}

/// The output dtype of a resampling of `inputs`' one operand: `out_dtype` or the data's.
///
/// # Errors
/// An input or output dtype outside `set`, or not one input.
pub(crate) fn resampled_dtype(
    set: DTypeSet,
    inputs: &[DType],
    out_dtype: Option<DType>,
) -> Result<Vec<DType>, KernelError> {
    let [d] = crate::kernels::util::args(inputs)?;
    Ok(vec![set.check(out_dtype.unwrap_or(set.check(d)?))?])
}

/// Writes `x` resampled onto `out` (whose shape gives the output sizes) along `axes` with
/// `sampling`; `roi` holds the axes' starts then their ends (read by `tf_crop_and_resize`).
///
/// # Errors
/// A dtype other than the integer and float types.
pub(crate) fn resample(
    x: &Tensor,
    out: &mut Tensor,
    axes: Range<usize>,
    roi: &[f64],
    sampling: &Sampling,
) -> Result<(), KernelError> {
    let data: Vec<f64> = converted(x)?;
    let values = resampled(x.shape(), &data, out.shape(), axes, roi, sampling)?;
    write_values(out, values)
}

/// The elements of `data` (of `in_shape`, row-major) resampled to `out_shape` along `axes`,
/// as [`resample`] writes them.
pub(crate) fn resampled(
    in_shape: &[usize],
    data: &[f64],
    out_shape: &[usize],
    axes: Range<usize>,
    roi: &[f64],
    sampling: &Sampling,
) -> Result<Vec<f64>, KernelError> {
    let n = axes.len();
    let roi_of = |k: usize| (roi.get(k).copied().unwrap_or(0.0), roi.get(k + n).copied().unwrap_or(0.0));
    let per_axis: Vec<Vec<AxisTaps>> = axes
        .clone()
        .enumerate()
        .map(|(k, a)| {
            (0..out_shape[a]).map(|o| sampling.axis_taps(o, in_shape[a], out_shape[a], roi_of(k))).collect()
        })
        .collect();
    let in_strides = strides(in_shape);
    let axis_strides: Vec<usize> = axes.clone().map(|a| in_strides[a]).collect();
    let mut values = Vec::with_capacity(out_shape.iter().product());
    for_each_index(out_shape, |p| {
        let base: usize = p
            .iter()
            .zip(&in_strides)
            .enumerate()
            .filter(|(i, _)| !axes.contains(i))
            .map(|(_, (i, s))| i * s)
            .sum();
        let taps: Vec<&AxisTaps> = axes.clone().zip(&per_axis).filter_map(|(a, t)| t.get(p[a])).collect();
        values.push(if taps.iter().any(|t| t.outside) {
            sampling.extrapolation_value
        } else {
            weighted_sum(&taps, &axis_strides, base, data)
        });
        Ok(())
    })?;
    Ok(values)
}

/// Writes `values` (`float64`) into `out`, cast to its numeric dtype as TVM's `astype`.
///
/// # Errors
/// A dtype other than the integer and float types.
pub(crate) fn write_values(out: &mut Tensor, values: Vec<f64>) -> Result<(), KernelError> {
    nums!(out.dtype(), T => {
        for (d, v) in out.as_mut_slice::<T>()?.iter_mut().zip(values) {
            *d = from_f64::<T>(v);
        }
        Ok(())
    })
}

/// The sum over the product of `taps` (one per remaining axis, with its `strides`) of the
/// weighted source elements from flat offset `offset`.
fn weighted_sum(taps: &[&AxisTaps], strides: &[usize], offset: usize, data: &[f64]) -> f64 {
    match (taps.split_first(), strides.split_first()) {
        (Some((t, rest)), Some((&stride, rest_strides))) => {
            t.taps.iter().map(|&(i, w)| w * weighted_sum(rest, rest_strides, offset + i * stride, data)).sum()
        }
        _ => data.get(offset).copied().unwrap_or(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates() {
        use CoordinateTransformationMode as M;
        assert_eq!(source_coordinate(M::HalfPixel, 0, 2, 4, (0.0, 0.0)), -0.25);
        assert_eq!(source_coordinate(M::AlignCorners, 3, 2, 4, (0.0, 0.0)), 1.0);
        assert_eq!(source_coordinate(M::AlignCorners, 0, 5, 1, (0.0, 0.0)), 0.0);
        assert_eq!(source_coordinate(M::Asymmetric, 3, 2, 4, (0.0, 0.0)), 1.5);
        assert_eq!(source_coordinate(M::TfCropAndResize, 1, 5, 3, (0.25, 0.75)), 2.0);
    }

    #[test]
    fn taps_clamp_and_weigh() {
        use CoordinateTransformationMode as M;
        let t = Sampling::new(ResizeMethod::Linear, M::HalfPixel).axis_taps(0, 2, 4, (0.0, 0.0));
        assert_eq!(t.taps, vec![(0, 0.25), (0, 0.75)]);
        let t = Sampling::new(ResizeMethod::Cubic, M::Asymmetric).axis_taps(0, 3, 3, (0.0, 0.0));
        assert_eq!(t.taps.iter().map(|&(i, _)| i).collect::<Vec<_>>(), vec![0, 0, 1, 2]);
        assert!((t.taps.iter().map(|&(_, w)| w).sum::<f64>() - 1.0).abs() < 1e-12);
        let t =
            Sampling::new(ResizeMethod::NearestNeighbor, M::TfCropAndResize).axis_taps(0, 4, 2, (-1.0, 0.0));
        assert!(t.outside);
        // An empty axis is refused by the shape function; the taps still do not panic.
        let t = Sampling::new(ResizeMethod::Linear, M::HalfPixel).axis_taps(0, 0, 1, (0.0, 0.0));
        assert_eq!(t.taps[0].0, 0);
    }
}
