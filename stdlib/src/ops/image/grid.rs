//! `image.affine_grid` and `image.grid_sample` (TVM `src/relay/op/image/grid_sample.cc`,
//! `python/tvm/topi/image/grid_sample.py`, which follow PyTorch's `affine_grid` and
//! `grid_sample`). TVM's grid is `[N, 2, H, W]` — field 0 the `x` (width) coordinate, field 1
//! the `y` — where PyTorch's is `[N, H, W, 2]`; coordinates are normalised, -1 and 1 the two
//! edges of the image. Reference kernels only; sums in `float64`, cast to the dtype.

use super::sample::{cubic_weights, write_values, Real};
use crate::attrs::{AffineGridAttrs, GridSampleAttrs, GridSampleMethod, GridSamplePadding};
use crate::compute;
use crate::error::KernelError;
use crate::kernels::util::{args, only_output, same_dtype, to_positive};
use crate::kernels::Checked;
use crate::operator::{shape_text, ComputeRule, DTypeSet, Operator, ShapeDim};
use crate::ops::index::may_equal;
use crate::ops::nn::converted;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// `image.affine_grid(data)`: `data` `[n, 2, 3]` holds one 2-d affine map per batch; the
/// result `[n, 2, h, w]` (`target_shape = [h, w]`) is the map applied to the grid of `y = -1
/// + 2 i / (h - 1)`, `x = -1 + 2 j / (w - 1)` (TVM's, PyTorch's with `align_corners=True`):
/// field `k` is `data[n, k, 0] * x + data[n, k, 1] * y + data[n, k, 2]`. Float dtypes. A
/// target size of 1 divides by zero as TVM does (the grid is `NaN`).
#[derive(Debug)]
pub struct AffineGrid;

/// The `[h, w]` of `target_shape`.
fn target_shape(a: &AffineGridAttrs) -> Result<[usize; 2], KernelError> {
    match *a.target_shape {
        [h, w] => Ok([to_positive(h, "target_shape")?, to_positive(w, "target_shape")?]),
        _ => Err(KernelError::Attr(format!(
            "attribute `target_shape` must have 2 values, [height, width], found {}",
            a.target_shape.len()
        ))),
    }
}

impl Operator for AffineGrid {
    const NAME: &'static str = "image.affine_grid";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "the grid of a batch of 2-d affine maps, [n, 2, 3] -> [n, 2, h, w]";
    type Attrs = AffineGridAttrs;
    const COMPUTE: Option<ComputeRule<AffineGridAttrs>> = Some(compute::grid::affine_grid);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &AffineGridAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data] = args(inputs)?;
        let [h, w] = target_shape(a)?;
        match *data {
            [n, two, three] if may_equal(two, D::known(2)) && may_equal(three, D::known(3)) => {
                Ok(vec![vec![n, D::known(2), D::known(h), D::known(w)]])
            }
            _ => Err(KernelError::Shape(format!(
                "image.affine_grid needs affine maps of shape (n, 2, 3), found {}",
                shape_text(data)
            ))),
        }
    }

    fn dtypes(inputs: &[DType], _: &AffineGridAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![Self::DTYPES.check(d)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &AffineGridAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data] = args(inputs)?;
        let [h, w] = target_shape(a)?;
        let theta: Vec<f64> = converted(data)?;
        // TVM's steps, `2 / (size - 1)`: infinite for a size of 1.
        let (ystep, xstep) = (2.0 / (h as f64 - 1.0), 2.0 / (w as f64 - 1.0));
        let mut values = Vec::with_capacity(theta.len() / 6 * 2 * h * w);
        for map in theta.chunks_exact(6) {
            for row in map.chunks_exact(3) {
                for i in 0..h {
                    for j in 0..w {
                        let (y, x) = (-1.0 + i as f64 * ystep, -1.0 + j as f64 * xstep);
                        values.push(row[0] * x + row[1] * y + row[2]);
                    }
                }
            }
        }
        write_values(only_output(outputs)?, values)
    }
}

/// `image.grid_sample(data, grid)`: `data` `[n, c, h, w]` (`NCHW`) sampled at the `[n, 2, oh,
/// ow]` normalised coordinates of `grid` gives `[n, c, oh, ow]`. A coordinate `g` is pixel
/// `(g + 1) / 2 * (size - 1)` with `align_corners`, else `((g + 1) * size - 1) / 2`; under
/// `border` it is clamped into the image, under `reflection` mirrored at the edges (at the
/// corner pixels' centres with `align_corners`, else at their outer edges) and clamped; pixels
/// outside the image read 0. `nearest` rounds ties to even, `bilinear` weighs the 2 x 2
/// neighbours, `bicubic` the 4 x 4 with `a = -0.75`, padding applied to each tap. Float
/// dtypes; `data` and `grid` share one.
#[derive(Debug)]
pub struct GridSample;

impl Operator for GridSample {
    const NAME: &'static str = "image.grid_sample";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "data sampled at grid's normalised coordinates (NCHW)";
    type Attrs = GridSampleAttrs;
    const COMPUTE: Option<ComputeRule<GridSampleAttrs>> = Some(compute::grid::grid_sample);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &GridSampleAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, grid] = args(inputs)?;
        if a.layout != "NCHW" {
            return Err(KernelError::Attr(format!(
                "image.grid_sample supports layout \"NCHW\" only, got {:?}",
                a.layout
            )));
        }
        match (data, grid) {
            (&[n, c, _, _], &[gn, two, oh, ow]) if may_equal(n, gn) && may_equal(two, D::known(2)) => {
                Ok(vec![vec![if n.value().is_some() { n } else { gn }, c, oh, ow]])
            }
            _ => Err(KernelError::Shape(format!(
                "image.grid_sample needs data (n, c, h, w) and a grid (n, 2, oh, ow), found {} and {}",
                shape_text(data),
                shape_text(grid)
            ))),
        }
    }

    fn dtypes(inputs: &[DType], _: &GridSampleAttrs) -> Result<Vec<DType>, KernelError> {
        Ok(vec![Self::DTYPES.check(same_dtype(inputs)?)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &GridSampleAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data, grid] = args(inputs)?;
        let (&[n, c, h, w], &[_, _, oh, ow]) = (data.shape(), grid.shape()) else {
            return Err(KernelError::Shape("image.grid_sample needs 4-d data and grid".to_string()));
        };
        let (x, g): (Vec<f64>, Vec<f64>) = (converted(data)?, converted(grid)?);
        let plane = oh * ow;
        let mut values = Vec::with_capacity(n * c * plane);
        for b in 0..n {
            let taps: Vec<[Taps; 2]> = (0..plane)
                .map(|p| {
                    let at = |field: usize| g.get((b * 2 + field) * plane + p).copied().unwrap_or(0.0);
                    [a.axis_taps(at(1), h), a.axis_taps(at(0), w)]
                })
                .collect();
            for ch in 0..c {
                let image = x.get((b * c + ch) * h * w..(b * c + ch + 1) * h * w).unwrap_or_default();
                values.extend(taps.iter().map(|[ys, xs]| {
                    let mut sum = 0.0;
                    for &(iy, wy) in ys {
                        for &(ix, wx) in xs {
                            if let (Some(iy), Some(ix)) = (iy, ix) {
                                sum += wy * wx * image.get(iy * w + ix).copied().unwrap_or(0.0);
                            }
                        }
                    }
                    sum
                }));
            }
        }
        write_values(only_output(outputs)?, values)
    }
}

/// The taps of one coordinate along one axis: `(pixel, weight)`, the pixel `None` outside the
/// image.
type Taps = Vec<(Option<usize>, f64)>;

impl GridSampleAttrs {
    /// The pixel coordinate of normalised coordinate `g` along an axis of `size`.
    pub(crate) fn unnormalize<T: Real>(&self, g: T, size: usize) -> T {
        let (size, one, two) = (T::real(size as f64), T::real(1.0), T::real(2.0));
        if self.align_corners {
            (g + one.clone()) / two * (size - one)
        } else {
            ((g + one.clone()) * size - one) / two
        }
    }

    /// Pixel coordinate `p` under `padding_mode` (`zeros` leaves it as it is).
    pub(crate) fn padded<T: Real>(&self, p: T, size: usize) -> T {
        let last = size as f64 - 1.0;
        let clamp = |p: T| p.max(T::real(0.0)).min(T::real(last));
        match self.padding_mode {
            GridSamplePadding::Zeros => p,
            GridSamplePadding::Border => clamp(p),
            GridSamplePadding::Reflection if self.align_corners => clamp(reflect(p, 0.0, last)),
            GridSamplePadding::Reflection => clamp(reflect(p, -0.5, size as f64 - 0.5)),
        }
    }

    /// The taps of normalised coordinate `g` along an axis of `size`: `(pixel coordinate,
    /// weight)`, the coordinate an integer under the padding, perhaps outside the image.
    pub(crate) fn axis_points<T: Real>(&self, g: T, size: usize) -> Vec<(T, T)> {
        let p = self.unnormalize(g, size);
        let fraction = |p: T| (p.clone().floor(), p.clone() - p.floor());
        match self.method {
            GridSampleMethod::Nearest => vec![(self.padded(p, size).round_ties_even(), T::real(1.0))],
            GridSampleMethod::Bilinear => {
                let (f, t) = fraction(self.padded(p, size));
                vec![(f.clone(), T::real(1.0) - t.clone()), (f + T::real(1.0), t)]
            }
            GridSampleMethod::Bicubic => {
                let (f, t) = fraction(p);
                let w = cubic_weights(t, -0.75);
                let at = |k: usize| self.padded(f.clone() - T::real(1.0) + T::real(k as f64), size);
                w.into_iter().enumerate().map(|(k, wk)| (at(k), wk)).collect()
            }
        }
    }

    /// The taps of normalised coordinate `g` along an axis of `size`: `(pixel, weight)`, the
    /// pixel `None` outside the image.
    fn axis_taps(&self, g: f64, size: usize) -> Taps {
        let inside = |p: f64| {
            // `as` saturates (and maps NaN to 0), so a wild coordinate cannot wrap around.
            let i = p as i64;
            (p >= 0.0 && (i as u64) < size as u64).then_some(i as usize)
        };
        self.axis_points(g, size).into_iter().map(|(p, w)| (inside(p), w)).collect()
    }
}

/// `p` mirrored into `[low, high]` at its ends, as often as it takes (PyTorch's
/// `reflect_coordinates`); a point interval gives `low`.
fn reflect<T: Real>(p: T, low: f64, high: f64) -> T {
    let span = high - low;
    if span <= 0.0 {
        return T::real(low.max(0.0));
    }
    let d = (p - T::real(low)).abs();
    let (flips, extra) = ((d.clone() / T::real(span)).floor(), d.rem(T::real(span)));
    flips.if_even(T::real(low) + extra.clone(), T::real(high) - extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflection_and_taps() {
        assert_eq!(reflect(-1.0, 0.0, 3.0), 1.0);
        assert_eq!(reflect(4.0, 0.0, 3.0), 2.0);
        assert_eq!(reflect(7.5, 0.0, 3.0), 1.5);
        assert_eq!(reflect(-1.0, -0.5, 2.5), 0.0);
        let a = GridSampleAttrs::default();
        assert_eq!(a.axis_taps(-1.0, 4), vec![(Some(0), 1.0), (Some(1), 0.0)]);
        assert_eq!(a.axis_taps(1.0, 4), vec![(Some(3), 1.0), (None, 0.0)]);
        let nearest =
            GridSampleAttrs { method: GridSampleMethod::Nearest, align_corners: false, ..a.clone() };
        assert_eq!(nearest.axis_taps(-1.5, 4), vec![(None, 1.0)]);
        let border = GridSampleAttrs { padding_mode: GridSamplePadding::Border, ..nearest };
        assert_eq!(border.axis_taps(-1.5, 4), vec![(Some(0), 1.0)]);
        assert_eq!(border.axis_taps(f64::NAN, 4).len(), 1);
    }

    #[test]
    fn shapes_and_errors() {
        let a = GridSampleAttrs::default();
        let out = GridSample::shapes::<usize>(&[&[2, 3, 5, 6], &[2, 2, 4, 7]], &a).unwrap();
        assert_eq!(out, vec![vec![2, 3, 4, 7]]);
        assert!(GridSample::shapes::<usize>(&[&[2, 3, 5, 6], &[2, 4, 7, 2]], &a).is_err());
        let nhwc = GridSampleAttrs { layout: "NHWC".into(), ..a };
        assert!(GridSample::shapes::<usize>(&[&[2, 3, 5, 6], &[2, 2, 4, 7]], &nhwc).is_err());
        let g = AffineGridAttrs { target_shape: vec![4, 5] };
        assert_eq!(AffineGrid::shapes::<usize>(&[&[3, 2, 3]], &g).unwrap(), vec![vec![3, 2, 4, 5]]);
        assert!(AffineGrid::shapes::<usize>(&[&[3, 3, 2]], &g).is_err());
        assert!(
            AffineGrid::shapes::<usize>(&[&[3, 2, 3]], &AffineGridAttrs { target_shape: vec![4] }).is_err()
        );
    }
}
