//! `vision.roi_align` and `vision.roi_pool` (TVM `src/relay/op/vision/rcnn_op.cc`
//! `ROIAlignRel`/`ROIPoolRel`, `topi.vision.rcnn`): each region of interest of a feature map
//! pooled into a fixed grid of bins, by bilinear samples (Mask R-CNN's align) or by the
//! maximum over the bin's pixels (Fast R-CNN's pool).

use crate::attrs::{RoiAlignAttrs, RoiAlignMode, RoiPoolAttrs};
use crate::error::KernelError;
use crate::kernels::util::{args, only_output};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use crate::ops::image::sample::{spatial_axes, write_values};
use crate::ops::index::may_equal;
use crate::ops::nn::converted;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// `[pooled_h, pooled_w]`, each positive (one value applies to both).
fn pooled(op: &str, size: &[i64]) -> Result<[usize; 2], KernelError> {
    let two = match *size {
        [s] => [s, s],
        [h, w] => [h, w],
        _ => {
            return Err(KernelError::Attr(format!(
                "{op}: attribute `pooled_size` must have 1 or 2 values, found {}",
                size.len()
            )))
        }
    };
    let positive = |v: i64| usize::try_from(v).ok().filter(|&v| v > 0);
    match two.map(positive) {
        [Some(h), Some(w)] => Ok([h, w]),
        _ => {
            Err(KernelError::Attr(format!("{op}: attribute `pooled_size` must be positive, found {size:?}")))
        }
    }
}

/// The output shape of a region operator: data `[n, c, h, w]` (`NCHW`) or `[n, h, w, c]`
/// (`NHWC`) and rois `[r, 5]` give `[r, c, ph, pw]` (or `[r, ph, pw, c]`).
fn roi_shape<D: ShapeDim>(
    op: &str,
    [data, rois]: [&[D]; 2],
    pooled_size: &[i64],
    layout: &str,
) -> Result<Vec<Vec<D>>, KernelError> {
    let axes = spatial_axes(op, layout, "NCHW", "NHWC")?;
    let [ph, pw] = pooled(op, pooled_size)?;
    let count = match (data.len(), rois) {
        (4, &[r, five]) if may_equal(five, D::known(5)) => r,
        _ => {
            return Err(KernelError::Shape(format!(
                "{op} needs 4-d data and rois (r, 5) of [batch_index, x1, y1, x2, y2], found {} and {}",
                shape_text(data),
                shape_text(rois)
            )))
        }
    };
    let mut out = data.to_vec();
    out[0] = count;
    for (axis, size) in axes.zip([ph, pw]) {
        out[axis] = D::known(size);
    }
    Ok(vec![out])
}

/// The dtype rule of a region operator: float data and rois of one dtype, the output the data's.
fn roi_dtypes(inputs: &[DType]) -> Result<Vec<DType>, KernelError> {
    let [d, rois] = args(inputs)?;
    DTypeSet::Floats.check(d)?;
    if rois != d {
        return Err(KernelError::DType(format!("rois must have the data's dtype `{d}`, found `{rois}`")));
    }
    Ok(vec![d])
}

/// One image's feature map, read as `(channel, y, x)` in either layout.
struct FeatureMap<'a> {
    values: &'a [f64],
    /// `[channels, height, width]`.
    dims: [usize; 3],
    /// The flat strides of channel, row and column.
    strides: [usize; 3],
}

impl FeatureMap<'_> {
    fn at(&self, c: usize, y: usize, x: usize) -> f64 {
        self.values[c * self.strides[0] + y * self.strides[1] + x * self.strides[2]]
    }

    /// TVM's bilinear sample of roi_align (`_bilinear`): 0 beyond one pixel outside the map,
    /// else the coordinates clamped into it and the four neighbours weighted.
    fn bilinear(&self, c: usize, y: f64, x: f64) -> f64 {
        let [_, h, w] = self.dims;
        if h == 0 || w == 0 || y < -1.0 || x < -1.0 || y > h as f64 || x > w as f64 {
            return 0.0;
        }
        let (y, x) = (y.clamp(0.0, (h - 1) as f64), x.clamp(0.0, (w - 1) as f64));
        let (y0, x0) = (y.floor() as usize, x.floor() as usize);
        let (y1, x1) = ((y.ceil() as usize).min(h - 1), (x.ceil() as usize).min(w - 1));
        let (ly, lx) = (y - y0 as f64, x - x0 as f64);
        let top = self.at(c, y0, x0) * (1.0 - lx) + self.at(c, y0, x1) * lx;
        let bottom = self.at(c, y1, x0) * (1.0 - lx) + self.at(c, y1, x1) * lx;
        top * (1.0 - ly) + bottom * ly
    }
}

/// Runs `bin(map, roi, c, py, px)` for every region, channel and bin of a checked call,
/// writing the output in `layout`. `roi` is the region's `[x1, y1, x2, y2]`; its batch index
/// out of range is an error.
fn pool_regions(
    [data, rois]: [&Tensor; 2],
    layout: &str,
    out: &mut Tensor,
    bin: impl Fn(&FeatureMap, [f64; 4], usize, usize, usize) -> Result<f64, KernelError>,
) -> Result<(), KernelError> {
    let nhwc = layout == "NHWC";
    let (x, rois_v): (Vec<f64>, Vec<f64>) = (converted(data)?, converted(rois)?);
    let [n, a, b, cl] = <[usize; 4]>::try_from(data.shape())
        .map_err(|_| KernelError::Shape(format!("{} is not 4-d", shape_text(data.shape()))))?;
    let ([c, h, w], strides) =
        if nhwc { ([cl, a, b], [1, b * cl, cl]) } else { ([a, b, cl], [b * cl, cl, 1]) };
    let [_, o1, o2, o3] = <[usize; 4]>::try_from(out.shape())
        .map_err(|_| KernelError::Shape(format!("{} is not 4-d", shape_text(out.shape()))))?;
    let [ph, pw] = if nhwc { [o1, o2] } else { [o2, o3] };
    let image_len = c * h * w;
    let mut values = vec![0.0; out.len()];
    for (r, roi) in rois_v.chunks_exact(5).enumerate() {
        // TVM casts the index to int32: truncation toward zero.
        let index = roi[0].trunc();
        let image = (index >= 0.0 && index < n as f64).then_some(index as usize);
        let Some(values_of) = image.and_then(|i| x.get(i * image_len..(i + 1) * image_len)) else {
            return Err(KernelError::IndexOutOfRange { index: index as i64, size: n });
        };
        let map = FeatureMap { values: values_of, dims: [c, h, w], strides };
        let corners = [roi[1], roi[2], roi[3], roi[4]];
        for ch in 0..c {
            for py in 0..ph {
                for px in 0..pw {
                    let at = if nhwc {
                        ((r * ph + py) * pw + px) * c + ch
                    } else {
                        ((r * c + ch) * ph + py) * pw + px
                    };
                    values[at] = bin(&map, corners, ch, py, px)?;
                }
            }
        }
    }
    write_values(out, values)
}

/// `vision.roi_align(data, rois)`: data `[n, c, h, w]` (`NCHW`) or `[n, h, w, c]` (`NHWC`),
/// rois `[r, 5]` of `[batch_index, x1, y1, x2, y2]` give `[r, c, ph, pw]` (or `[r, ph, pw,
/// c]`). TVM v0.16's semantics (no half-pixel shift, `aligned=False` in torchvision's terms):
/// the region scaled by `spatial_scale`, at least 1 x 1, splits into `ph x pw` bins; a bin
/// averages (`avg`) or takes the maximum (`max`) of a `g x g` grid of bilinear samples at the
/// sub-cell centres, `g = sample_ratio` or `ceil(bin size)` when `sample_ratio <= 0`. A sample
/// more than one pixel outside the map is 0; nearer, it is clamped to the edge. Float data
/// and rois of one dtype; a batch index outside `[0, n)` is an error.
#[derive(Debug)]
pub struct RoiAlign;

/// The name, for messages.
const ALIGN: &str = "vision.roi_align";

/// The most bilinear samples one `roi_align` bin may take (TVM has no bound).
const MAX_SAMPLES_PER_BIN: usize = 1 << 20;

impl Operator for RoiAlign {
    const NAME: &'static str = ALIGN;
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "regions of interest pooled by bilinear samples (Mask R-CNN)";
    type Attrs = RoiAlignAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &RoiAlignAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        roi_shape(ALIGN, args(inputs)?, &a.pooled_size, &a.layout)
    }

    fn dtypes(inputs: &[DType], _: &RoiAlignAttrs) -> Result<Vec<DType>, KernelError> {
        roi_dtypes(inputs)
    }

    fn reference(
        inputs: &[&Tensor],
        a: &RoiAlignAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [ph, pw] = pooled(ALIGN, &a.pooled_size)?;
        let scale = a.spatial_scale;
        let bin = |map: &FeatureMap, [x1, y1, x2, y2]: [f64; 4], c: usize, py: usize, px: usize| {
            let (y1, x1) = (y1 * scale, x1 * scale);
            let (roi_h, roi_w) = ((y2 * scale - y1).max(1.0), (x2 * scale - x1).max(1.0));
            let (bin_h, bin_w) = (roi_h / ph as f64, roi_w / pw as f64);
            let grid = |size: f64| match a.sample_ratio {
                r if r > 0 => r as usize,
                _ => size.ceil() as usize,
            };
            let (gh, gw) = (grid(bin_h), grid(bin_w));
            // A region's size comes from the data: bound its samples so that a huge or infinite
            // box is an error, not a loop that never ends.
            if gh.checked_mul(gw).is_none_or(|n| n > MAX_SAMPLES_PER_BIN) {
                return Err(KernelError::Shape(format!(
                    "a region of {roi_h} x {roi_w} needs {gh} x {gw} samples per bin, more than {MAX_SAMPLES_PER_BIN}"
                )));
            }
            let (y0, x0) = (y1 + py as f64 * bin_h, x1 + px as f64 * bin_w);
            let samples = (0..gh).flat_map(|iy| (0..gw).map(move |ix| (iy, ix))).map(|(iy, ix)| {
                let y = y0 + (iy as f64 + 0.5) * bin_h / gh as f64;
                let x = x0 + (ix as f64 + 0.5) * bin_w / gw as f64;
                map.bilinear(c, y, x)
            });
            Ok(match a.mode {
                RoiAlignMode::Avg => samples.map(|v| v / (gh * gw) as f64).sum(),
                RoiAlignMode::Max => samples.fold(f64::NEG_INFINITY, f64::max),
            })
        };
        pool_regions(args(inputs)?, &a.layout, only_output(outputs)?, bin)
    }
}

/// `vision.roi_pool(data, rois)`: the shapes of [`RoiAlign`]; TVM's Fast R-CNN pooling: the
/// region's corners scaled by `spatial_scale` and rounded (ties to even), its size `end -
/// start + 1` (at least 1), bin `(py, px)` the maximum over rows `floor(py * bin_h)` to
/// `ceil((py + 1) * bin_h)` (TVM's 1e-5 guard against rounding), shifted by the start and
/// clamped to the map; an empty bin is 0. Float data and rois of one dtype.
#[derive(Debug)]
pub struct RoiPool;

/// The name, for messages.
const POOL: &str = "vision.roi_pool";

impl Operator for RoiPool {
    const NAME: &'static str = POOL;
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "regions of interest max-pooled into bins (Fast R-CNN)";
    type Attrs = RoiPoolAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &RoiPoolAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        roi_shape(POOL, args(inputs)?, &a.pooled_size, &a.layout)
    }

    fn dtypes(inputs: &[DType], _: &RoiPoolAttrs) -> Result<Vec<DType>, KernelError> {
        roi_dtypes(inputs)
    }

    fn reference(
        inputs: &[&Tensor],
        a: &RoiPoolAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [ph, pw] = pooled(POOL, &a.pooled_size)?;
        let scale = a.spatial_scale;
        const EPSILON: f64 = 1e-5;
        let bin = |map: &FeatureMap, corners: [f64; 4], c: usize, py: usize, px: usize| {
            let [x1, y1, x2, y2] = corners.map(|v| (v * scale).round_ties_even());
            let (roi_h, roi_w) = ((y2 - y1 + 1.0).max(1.0), (x2 - x1 + 1.0).max(1.0));
            let (bin_h, bin_w) = (roi_h / ph as f64, roi_w / pw as f64);
            let [_, h, w] = map.dims;
            let span = |p: usize, bin: f64, start: f64, size: usize| {
                let clamp = |v: f64| (v + start).clamp(0.0, size as f64) as usize;
                (clamp((p as f64 * bin + EPSILON).floor()), clamp(((p + 1) as f64 * bin - EPSILON).ceil()))
            };
            let ((ys, ye), (xs, xe)) = (span(py, bin_h, y1, h), span(px, bin_w, x1, w));
            if ys >= ye || xs >= xe {
                return Ok(0.0);
            }
            Ok((ys..ye)
                .flat_map(|y| (xs..xe).map(move |x| (y, x)))
                .map(|(y, x)| map.at(c, y, x))
                .fold(f64::NEG_INFINITY, f64::max))
        };
        pool_regions(args(inputs)?, &a.layout, only_output(outputs)?, bin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::Dim::{Any, Known as K};

    #[test]
    fn shapes_and_errors() {
        let a = RoiAlignAttrs { pooled_size: vec![2, 3], spatial_scale: 0.5, ..Default::default() };
        assert_eq!(RoiAlign::shapes::<usize>(&[&[2, 4, 8, 9], &[5, 5]], &a).unwrap(), vec![vec![5, 4, 2, 3]]);
        let nhwc = RoiAlignAttrs { layout: "NHWC".into(), ..a.clone() };
        assert_eq!(
            RoiAlign::shapes::<usize>(&[&[2, 8, 9, 4], &[5, 5]], &nhwc).unwrap(),
            vec![vec![5, 2, 3, 4]]
        );
        let sym = RoiAlign::shapes(&[&[K(2), K(4), K(8), K(9)][..], &[Any, K(5)]], &a).unwrap();
        assert_eq!(sym, vec![vec![Any, K(4), K(2), K(3)]]);
        assert!(RoiAlign::shapes::<usize>(&[&[2, 4, 8, 9], &[5, 4]], &a).is_err());
        let bad = RoiAlignAttrs { pooled_size: vec![0], ..a.clone() };
        assert!(RoiAlign::shapes::<usize>(&[&[2, 4, 8, 9], &[5, 5]], &bad).is_err());
        let packed = RoiAlignAttrs { layout: "NCHW4c".into(), ..a };
        assert!(RoiAlign::shapes::<usize>(&[&[2, 4, 8, 9], &[5, 5]], &packed).is_err());
        assert!(
            roi_dtypes(&[DType::F32, DType::F64]).is_err() && roi_dtypes(&[DType::I32, DType::I32]).is_err()
        );
    }

    #[test]
    fn a_huge_region_is_an_error_not_an_endless_loop() {
        let a = RoiAlignAttrs { pooled_size: vec![1, 1], spatial_scale: 1.0, ..Default::default() };
        let data = Tensor::from_vec(vec![1, 1, 2, 2], vec![1f32, 2.0, 3.0, 4.0]).unwrap();
        let run = |x2: f32| {
            let rois = Tensor::from_vec(vec![1, 5], vec![0f32, 0.0, 0.0, x2, 1.0]).unwrap();
            let mut out = [Tensor::zeros(DType::F32, vec![1, 1, 1, 1]).unwrap()];
            crate::kernels::run::<RoiAlign>(&[&data, &rois], &a, &mut out)
        };
        assert!(run(1.0).is_ok());
        assert!(matches!(run(1e30), Err(KernelError::Shape(m)) if m.contains("samples per bin")));
        assert!(run(f32::INFINITY).is_err());
    }
}
