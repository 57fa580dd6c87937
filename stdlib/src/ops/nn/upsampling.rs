//! `nn.upsampling` and `nn.upsampling3d` (TVM `src/relay/op/nn/upsampling.cc`): an image scaled
//! by factors, each output size `round(in * scale)`, resampled by the image operators'
//! sampling (`ops/image/sample.rs`) exactly as TVM's topi calls `resize2d`/`resize3d`.

use crate::attrs::{
    CoordinateTransformationMode, ResizeMethod, Upsampling3dAttrs, Upsampling3dMethod, UpsamplingAttrs,
    UpsamplingMethod,
};
use crate::compute;
use crate::error::KernelError;
use crate::kernels::util::{args, only_output};
use crate::kernels::Checked;
use crate::operator::{ComputeRule, DTypeSet, OpEntry, Operator, ShapeDim};
use crate::ops::image::sample::{resample, resampled_dtype, resampled_shape, spatial_axes, Sampling};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};
use std::ops::Range;

/// The upsampling operators.
pub const UPSAMPLING: &[OpEntry] = &[OpEntry::of::<Upsampling>(), OpEntry::of::<Upsampling3d>()];

/// The shape of `x` (rank `rank`) with each spatial axis scaled by its factor and rounded
/// (ties to even, as TVM folds `round`); `?` stays `?`.
///
/// # Errors
/// A factor that is not positive and finite, a scaled size too large, or another rank.
fn scaled_shape<D: ShapeDim>(
    op: &str,
    x: &[D],
    rank: usize,
    axes: Range<usize>,
    scales: &[(&str, f64)],
) -> Result<Vec<D>, KernelError> {
    let mut sizes = Vec::with_capacity(scales.len());
    for (a, &(name, scale)) in axes.clone().zip(scales) {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(KernelError::Attr(format!("{op}'s {name} must be positive, got {scale}")));
        }
        sizes.push(match x.get(a).and_then(|d| d.value()) {
            None => x.get(a).copied().unwrap_or_else(|| D::known(0)),
            Some(v) => {
                let scaled = (v as f64 * scale).round_ties_even();
                if scaled >= u32::MAX as f64 {
                    return Err(KernelError::Shape(format!(
                        "{op}: {v} scaled by {name} {scale} is too large"
                    )));
                }
                D::known(scaled as usize)
            }
        });
    }
    resampled_shape(op, x, rank, axes, &sizes)
}

/// `nn.upsampling(data, scale_h, scale_w, layout, method, align_corners)`: `(N, C, H, W)`
/// (`NCHW`) or `(N, H, W, C)` (`NHWC`) to `round(H * scale_h)` by `round(W * scale_w)`,
/// `image.resize2d` with `nearest_neighbor`/`linear`/`cubic` and `align_corners` or
/// `asymmetric` coordinates. Integer and float dtypes; the data's dtype.
#[derive(Debug)]
pub struct Upsampling;

impl Operator for Upsampling {
    const NAME: &'static str = "nn.upsampling";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "image scaled by scale_h, scale_w";
    type Attrs = UpsamplingAttrs;
    const COMPUTE: Option<ComputeRule<UpsamplingAttrs>> = Some(|inputs, a, out| {
        let (axes, sampling) = Self::sampling(a).map_err(|e| e.to_string())?;
        compute::image::resize(inputs, axes, &[], sampling, out)
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &UpsamplingAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        let axes = spatial_axes(Self::NAME, &a.layout, "NCHW", "NHWC")?;
        Ok(vec![scaled_shape(Self::NAME, x, 4, axes, &[("scale_h", a.scale_h), ("scale_w", a.scale_w)])?])
    }

    fn dtypes(inputs: &[DType], _: &UpsamplingAttrs) -> Result<Vec<DType>, KernelError> {
        resampled_dtype(Self::DTYPES, inputs, None)
    }

    fn reference(
        inputs: &[&Tensor],
        a: &UpsamplingAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let (axes, sampling) = Self::sampling(a)?;
        resample(x, only_output(outputs)?, axes, &[], &sampling)
    }
}

impl Upsampling {
    /// The spatial axes and the sampling of a call: `image.resize2d`'s, as TVM's topi calls
    /// it.
    fn sampling(a: &UpsamplingAttrs) -> Result<(Range<usize>, Sampling), KernelError> {
        let axes = spatial_axes(Self::NAME, &a.layout, "NCHW", "NHWC")?;
        let method = match a.method {
            UpsamplingMethod::NearestNeighbor => ResizeMethod::NearestNeighbor,
            UpsamplingMethod::Bilinear => ResizeMethod::Linear,
            UpsamplingMethod::Bicubic => ResizeMethod::Cubic,
        };
        let mode = if a.align_corners {
            CoordinateTransformationMode::AlignCorners
        } else {
            CoordinateTransformationMode::Asymmetric
        };
        Ok((axes, Sampling::new(method, mode)))
    }
}

/// `nn.upsampling3d(data, scale_d, scale_h, scale_w, layout, method,
/// coordinate_transformation_mode)`: `(N, C, D, H, W)` (`NCDHW`) or `(N, D, H, W, C)`
/// (`NDHWC`) to the rounded scaled sizes, `image.resize3d` with `nearest_neighbor` or
/// `linear`. Integer and float dtypes; the data's dtype.
#[derive(Debug)]
pub struct Upsampling3d;

impl Operator for Upsampling3d {
    const NAME: &'static str = "nn.upsampling3d";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "volume scaled by scale_d, scale_h, scale_w";
    type Attrs = Upsampling3dAttrs;
    const COMPUTE: Option<ComputeRule<Upsampling3dAttrs>> = Some(|inputs, a, out| {
        let (axes, sampling) = Self::sampling(a).map_err(|e| e.to_string())?;
        compute::image::resize(inputs, axes, &[], sampling, out)
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &Upsampling3dAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        let axes = spatial_axes(Self::NAME, &a.layout, "NCDHW", "NDHWC")?;
        let scales = [("scale_d", a.scale_d), ("scale_h", a.scale_h), ("scale_w", a.scale_w)];
        Ok(vec![scaled_shape(Self::NAME, x, 5, axes, &scales)?])
    }

    fn dtypes(inputs: &[DType], _: &Upsampling3dAttrs) -> Result<Vec<DType>, KernelError> {
        resampled_dtype(Self::DTYPES, inputs, None)
    }

    fn reference(
        inputs: &[&Tensor],
        a: &Upsampling3dAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let (axes, sampling) = Self::sampling(a)?;
        resample(x, only_output(outputs)?, axes, &[], &sampling)
    }
}

impl Upsampling3d {
    /// The spatial axes and the sampling of a call: `image.resize3d`'s, as TVM's topi calls
    /// it.
    fn sampling(a: &Upsampling3dAttrs) -> Result<(Range<usize>, Sampling), KernelError> {
        let axes = spatial_axes(Self::NAME, &a.layout, "NCDHW", "NDHWC")?;
        let method = match a.method {
            Upsampling3dMethod::NearestNeighbor => ResizeMethod::NearestNeighbor,
            Upsampling3dMethod::Trilinear => ResizeMethod::Linear,
        };
        Ok((axes, Sampling::new(method, a.coordinate_transformation_mode)))
    }
}
