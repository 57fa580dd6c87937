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
use relay_compiler::kir::Expr;
use relay_devices::{DType, Scalar, Tensor};
use std::ops::{Add, Div, Mul, Range, Sub};

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

/// The arithmetic the sampling formulas need, so that one formula serves the reference
/// kernels (`f64`) and the compute rules (`crate::compute::image`: kir `float64`
/// expressions, evaluated in the same order, so the fused kernels compute the same values).
pub(crate) trait Real:
    Clone + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    /// The constant `v`.
    fn real(v: f64) -> Self;
    /// The largest integer not above `self`.
    fn floor(self) -> Self;
    /// The smallest integer not below `self`.
    fn ceil(self) -> Self;
    /// The nearest integer, ties to even.
    fn round_ties_even(self) -> Self;
    /// The absolute value.
    fn abs(self) -> Self;
    /// The larger of `self` and `o`; `o` where `self` is NaN.
    fn max(self, o: Self) -> Self;
    /// The smaller of `self` and `o`; `o` where `self` is NaN.
    fn min(self, o: Self) -> Self;
    /// The remainder of `self / o`, for `self >= 0` and `o > 0` (where truncating and
    /// flooring agree).
    fn rem(self, o: Self) -> Self;
    /// `even` where `self` (an integer) is even, else `odd` (also for infinities and NaN).
    fn if_even(self, even: Self, odd: Self) -> Self;
}

impl Real for f64 {
    fn real(v: f64) -> f64 {
        v
    }

    fn floor(self) -> f64 {
        f64::floor(self)
    }

    fn ceil(self) -> f64 {
        f64::ceil(self)
    }

    fn round_ties_even(self) -> f64 {
        f64::round_ties_even(self)
    }

    fn abs(self) -> f64 {
        f64::abs(self)
    }

    fn max(self, o: f64) -> f64 {
        f64::max(self, o)
    }

    fn min(self, o: f64) -> f64 {
        f64::min(self, o)
    }

    fn rem(self, o: f64) -> f64 {
        self % o
    }

    fn if_even(self, even: f64, odd: f64) -> f64 {
        if self % 2.0 == 0.0 {
            even
        } else {
            odd
        }
    }
}

impl Real for Expr {
    fn real(v: f64) -> Expr {
        Expr::lit(DType::F64, Scalar::Float(v))
    }

    fn floor(self) -> Expr {
        Expr::floor(self)
    }

    fn ceil(self) -> Expr {
        Expr::ceil(self)
    }

    /// kir's `round` takes ties away from zero: round down, then up where more than half is
    /// left, or exactly half with an odd floor.
    fn round_ties_even(self) -> Expr {
        let f = Expr::floor(self.clone());
        let rest = self - f.clone();
        let half = Expr::real(0.5);
        let up =
            rest.clone().gt(half.clone()).or(rest.equal(half).and(!parity(f.clone()).equal(Expr::real(0.0))));
        Expr::select(up, f.clone() + Expr::real(1.0), f)
    }

    fn abs(self) -> Expr {
        Expr::abs(self)
    }

    /// kir's float `max` is `a > b ? a : b`: `o` where `self` is NaN, as Rust's.
    fn max(self, o: Expr) -> Expr {
        Expr::max(self, o)
    }

    /// kir's float `min` is `a < b ? a : b`: `o` where `self` is NaN, as Rust's.
    fn min(self, o: Expr) -> Expr {
        Expr::min(self, o)
    }

    fn rem(self, o: Expr) -> Expr {
        self.floor_mod(o)
    }

    fn if_even(self, even: Expr, odd: Expr) -> Expr {
        Expr::select(parity(self).equal(Expr::real(0.0)), even, odd)
    }
}

/// `f - 2 floor(f / 2)`: 0 for an even integer `f`, 1 for an odd one (exact), NaN for an
/// infinity.
fn parity(f: Expr) -> Expr {
    let two = Expr::real(2.0);
    f.clone() - two.clone() * Expr::floor(f / two)
}

/// The source coordinate of output coordinate `x` along an axis of `in_size` resampled to
/// `out_size`; `roi` is the axis's `(start, end)` under `tf_crop_and_resize`.
pub(crate) fn source_coordinate<T: Real>(
    mode: CoordinateTransformationMode,
    x: T,
    in_size: usize,
    out_size: usize,
    roi: (T, T),
) -> T {
    use CoordinateTransformationMode as M;
    let (in_f, out_f) = (T::real(in_size as f64), T::real(out_size as f64));
    let (half, one) = (T::real(0.5), T::real(1.0));
    let scale = in_f.clone() / out_f.clone();
    // A one-pixel output has no corner-to-corner span: TVM divides by zero there, PyTorch
    // (whose models bring these modes) samples the first pixel.
    let spans = out_size > 1;
    match mode {
        M::HalfPixel => (x + half.clone()) * scale - half,
        M::AlignCorners if spans => x * (in_f - one.clone()) / (out_f - one),
        M::AlignCorners => T::real(0.0),
        M::Asymmetric => x * scale,
        M::PytorchHalfPixel if spans => (x + half.clone()) * scale - half,
        M::PytorchHalfPixel => T::real(0.0),
        M::TfHalfPixelForNn => (x + half) * scale,
        M::TfCropAndResize if spans => {
            roi.0.clone() * (in_f.clone() - one.clone())
                + x * (roi.1 - roi.0) * (in_f - one.clone()) / (out_f - one)
        }
        M::TfCropAndResize => half * (roi.0 + roi.1) * (in_f - one),
    }
}

/// Keys' cubic convolution weights of the four taps around fraction `t` (TVM
/// `_cubic_spline_weights`).
pub(crate) fn cubic_weights<T: Real>(t: T, a: f64) -> [T; 4] {
    let r = T::real;
    let (t2, t3) = (t.clone() * t.clone(), t.clone() * t.clone() * t.clone());
    [
        r(a) * (t3.clone() - r(2.0) * t2.clone() + t.clone()),
        r(a + 2.0) * t3.clone() - r(3.0 + a) * t2.clone() + r(1.0),
        r(-(a + 2.0)) * t3.clone() + r(3.0 + 2.0 * a) * t2.clone() - r(a) * t,
        r(-a) * t3 + r(a) * t2,
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

    /// The nearest pixel of source coordinate `c`, unclamped (an integer-valued `T`).
    pub(crate) fn nearest<T: Real>(&self, c: T) -> T {
        let rounding = match (self.rounding, self.mode) {
            (RoundingMethod::Auto, CoordinateTransformationMode::AlignCorners) => RoundingMethod::Round,
            (RoundingMethod::Auto, _) => RoundingMethod::Floor,
            (r, _) => r,
        };
        match rounding {
            RoundingMethod::Round | RoundingMethod::Auto => c.round_ties_even(),
            RoundingMethod::RoundPreferFloor => (c - T::real(0.5)).ceil(),
            RoundingMethod::RoundPreferCeil => (c + T::real(0.5)).floor(),
            RoundingMethod::Floor => (c + T::real(ROUNDING_EPSILON)).floor(),
            RoundingMethod::Ceil => (c - T::real(ROUNDING_EPSILON)).ceil(),
        }
    }

    /// The taps of output coordinate `x` along an axis of `in_size` (at least 1 when
    /// `out_size` is) resampled to `out_size`.
    fn axis_taps(&self, x: usize, in_size: usize, out_size: usize, roi: (f64, f64)) -> AxisTaps {
        let c = source_coordinate(self.mode, x as f64, in_size, out_size, roi);
        let last = i64::try_from(in_size).unwrap_or(i64::MAX) - 1;
        // `min` then `max`, as TVM clamps: never a panic on an empty axis.
        let clamp = |i: i64| i.min(last).max(0) as usize;
        let (base, t) = (c.floor() as i64, c - c.floor());
        let taps = match self.method {
            ResizeMethod::NearestNeighbor => vec![(clamp(self.nearest(c) as i64), 1.0)],
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
        assert_eq!(source_coordinate(M::HalfPixel, 0.0, 2, 4, (0.0, 0.0)), -0.25);
        assert_eq!(source_coordinate(M::AlignCorners, 3.0, 2, 4, (0.0, 0.0)), 1.0);
        assert_eq!(source_coordinate(M::AlignCorners, 0.0, 5, 1, (0.0, 0.0)), 0.0);
        assert_eq!(source_coordinate(M::Asymmetric, 3.0, 2, 4, (0.0, 0.0)), 1.5);
        assert_eq!(source_coordinate(M::TfCropAndResize, 1.0, 5, 3, (0.25, 0.75)), 2.0);
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
