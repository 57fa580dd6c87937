//! `image.crop_and_resize` (TVM `src/relay/op/image/resize.cc` `CropAndResizeRel`,
//! `topi.image.crop_and_resize`, TensorFlow's `crop_and_resize`): boxes cut out of a batch of
//! images, each resampled to `crop_size` by `sample.rs`'s `tf_crop_and_resize` coordinates,
//! the box being the region of interest.

use super::sample::{output_sizes, resampled, resampled_dtype, spatial_axes, write_values, Sampling};
use crate::attrs::{
    CoordinateTransformationMode, CropAndResizeAttrs, CropAndResizeMethod, ResizeMethod, RoundingMethod,
};
use crate::compute;
use crate::error::KernelError;
use crate::kernels::util::{args, only_output};
use crate::kernels::Checked;
use crate::operator::{shape_text, ComputeRule, DTypeSet, Operator, ShapeDim};
use crate::ops::index::may_equal;
use crate::ops::nn::converted;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// `image.crop_and_resize(data, boxes, box_indices)`: `data` `[n, c, h, w]` (`NCHW`) or `[n,
/// h, w, c]` (`NHWC`), `boxes` `[b, 4]` of normalised `(y1, x1, y2, x2)` and `box_indices`
/// `[b]` (the image of each box) give `[b, c, ch, cw]` (or `[b, ch, cw, c]`), `crop_size =
/// [ch, cw]`. Crop pixel `(i, j)` samples the image at
/// `y = y1 * (h - 1) + i * (y2 - y1) * (h - 1) / (ch - 1)` (the box's centre for `ch = 1`),
/// likewise `x`; outside the image it is `extrapolation_value`. `bilinear` or `nearest_neighbor` (ties to even). Numeric data,
/// float boxes, integer indices (one out of range is an error); the output is `out_dtype` or
/// the data's.
#[derive(Debug)]
pub struct CropAndResize;

/// The name, for messages.
const NAME: &str = "image.crop_and_resize";

impl Operator for CropAndResize {
    const NAME: &'static str = NAME;
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 3;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "boxes of a batch of images resampled to crop_size";
    type Attrs = CropAndResizeAttrs;
    const COMPUTE: Option<ComputeRule<CropAndResizeAttrs>> = Some(|inputs, a, out| {
        let axes = spatial_axes(NAME, &a.layout, "NCHW", "NHWC").map_err(|e| e.to_string())?;
        compute::image::crop_and_resize(inputs, axes, Self::sampling(a), out)
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &CropAndResizeAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, boxes, indices] = args(inputs)?;
        let axes = spatial_axes(NAME, &a.layout, "NCHW", "NHWC")?;
        let sizes = output_sizes::<D>(NAME, &a.crop_size, 2)?;
        let count = match (data.len(), boxes, indices) {
            (4, &[b, four], &[bi]) if may_equal(four, D::known(4)) && may_equal(b, bi) => {
                if b.value().is_some() {
                    b
                } else {
                    bi
                }
            }
            _ => {
                return Err(KernelError::Shape(format!(
                    "{NAME} needs 4-d data, boxes (b, 4) and box_indices (b), found {}, {} and {}",
                    shape_text(data),
                    shape_text(boxes),
                    shape_text(indices)
                )))
            }
        };
        let mut out = data.to_vec();
        out[0] = count;
        for (axis, size) in axes.zip(sizes) {
            out[axis] = size;
        }
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], a: &CropAndResizeAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, boxes, indices] = args(inputs)?;
        DTypeSet::Floats.check(boxes)?;
        DTypeSet::Ints.check(indices)?;
        resampled_dtype(Self::DTYPES, &[d], a.out_dtype)
    }

    fn reference(
        inputs: &[&Tensor],
        a: &CropAndResizeAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data, boxes, indices] = args(inputs)?;
        let axes = spatial_axes(NAME, &a.layout, "NCHW", "NHWC")?;
        let sampling = Self::sampling(a);
        let out = only_output(outputs)?;
        let (x, boxes, indices): (Vec<f64>, Vec<f64>, Vec<i64>) =
            (converted(data)?, converted(boxes)?, converted(indices)?);
        let images = data.shape().first().copied().unwrap_or(0);
        let one = |shape: &[usize]| [&[1][..], shape.get(1..).unwrap_or_default()].concat();
        let (in_shape, out_shape) = (one(data.shape()), one(out.shape()));
        let image_len: usize = in_shape.iter().product();
        let mut values = Vec::with_capacity(out.len());
        for (roi, &index) in boxes.chunks_exact(4).zip(&indices) {
            let at = usize::try_from(index).ok().filter(|&i| i < images);
            let Some(image) = at.and_then(|i| x.get(i * image_len..(i + 1) * image_len)) else {
                return Err(KernelError::IndexOutOfRange { index, size: images });
            };
            values.extend(resampled(&in_shape, image, &out_shape, axes.clone(), roi, &sampling)?);
        }
        write_values(out, values)
    }
}

impl CropAndResize {
    /// The sampling of a call: `tf_crop_and_resize` coordinates, the box being the region
    /// of interest.
    fn sampling(a: &CropAndResizeAttrs) -> Sampling {
        Sampling {
            method: match a.method {
                CropAndResizeMethod::Bilinear => ResizeMethod::Linear,
                CropAndResizeMethod::NearestNeighbor => ResizeMethod::NearestNeighbor,
            },
            mode: CoordinateTransformationMode::TfCropAndResize,
            rounding: RoundingMethod::Round,
            cubic_alpha: -0.5,
            cubic_exclude: false,
            extrapolation_value: a.extrapolation_value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_errors() {
        let a = CropAndResizeAttrs { crop_size: vec![3, 4], ..Default::default() };
        let out = CropAndResize::shapes::<usize>(&[&[2, 3, 8, 9], &[5, 4], &[5]], &a).unwrap();
        assert_eq!(out, vec![vec![5, 3, 3, 4]]);
        let nhwc = CropAndResizeAttrs { layout: "NHWC".into(), ..a.clone() };
        let out = CropAndResize::shapes::<usize>(&[&[2, 8, 9, 3], &[5, 4], &[5]], &nhwc).unwrap();
        assert_eq!(out, vec![vec![5, 3, 4, 3]]);
        assert!(CropAndResize::shapes::<usize>(&[&[2, 3, 8, 9], &[5, 4], &[4]], &a).is_err());
        assert!(CropAndResize::shapes::<usize>(&[&[2, 3, 8, 9], &[5, 3], &[5]], &a).is_err());
        let one = CropAndResizeAttrs { crop_size: vec![3], ..a };
        assert!(CropAndResize::shapes::<usize>(&[&[2, 3, 8, 9], &[5, 4], &[5]], &one).is_err());
    }
}
