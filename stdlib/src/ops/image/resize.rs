//! `image.resize1d`, `image.resize2d` and `image.resize3d` (TVM `src/relay/op/image/resize.cc`):
//! an image resampled to `size` along its spatial axes, channels first or last. One macro
//! writes the three; the sampling is `sample.rs`'s.

use super::sample::{output_sizes, resample, resampled_dtype, resampled_shape, spatial_axes, Sampling};
use crate::attrs::{CoordinateTransformationMode, Resize1dAttrs, Resize2dAttrs, Resize3dAttrs};
use crate::compute;
use crate::error::KernelError;
use crate::kernels::util::{args, only_output};
use crate::kernels::Checked;
use crate::operator::{ComputeRule, DTypeSet, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// Declares one `image.resize*d` item: its name, attributes, and channels-first and
/// channels-last layouts (whose length is the rank).
macro_rules! resize {
    ($(#[$doc:meta])* $name:ident = $op:literal, $attrs:ident, $first:literal, $last:literal) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl $name {
            /// The spatial axes and the sampling of a call, checked.
            fn sampling(a: &$attrs) -> Result<(std::ops::Range<usize>, Sampling), KernelError> {
                let axes = spatial_axes($op, &a.layout, $first, $last)?;
                let crop = a.coordinate_transformation_mode == CoordinateTransformationMode::TfCropAndResize;
                if crop && a.roi.len() != 2 * axes.len() {
                    return Err(KernelError::Attr(format!(
                        "{} under tf_crop_and_resize needs `roi` with {} values (the starts, then the ends), got {}",
                        $op,
                        2 * axes.len(),
                        a.roi.len()
                    )));
                }
                let sampling = Sampling {
                    method: a.method,
                    mode: a.coordinate_transformation_mode,
                    rounding: a.rounding_method,
                    cubic_alpha: a.cubic_alpha,
                    cubic_exclude: a.cubic_exclude != 0,
                    extrapolation_value: a.extrapolation_value,
                };
                Ok((axes, sampling))
            }
        }

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::Injective;
            const NUM_INPUTS: usize = 1;
            const DTYPES: DTypeSet = DTypeSet::Nums;
            const DOC: &'static str = "image resampled to `size` (nearest, linear or cubic)";
            type Attrs = $attrs;
            const COMPUTE: Option<ComputeRule<$attrs>> = Some(|inputs, a, out| {
                let (axes, sampling) = Self::sampling(a).map_err(|e| e.to_string())?;
                compute::image::resize(inputs, axes, &a.roi, sampling, out)
            });

            fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &$attrs) -> Result<Vec<Vec<D>>, KernelError> {
                let [x] = args(inputs)?;
                let (axes, _) = Self::sampling(a)?;
                let sizes = output_sizes::<D>($op, &a.size, axes.len())?;
                Ok(vec![resampled_shape($op, x, $first.len(), axes, &sizes)?])
            }

            fn dtypes(inputs: &[DType], a: &$attrs) -> Result<Vec<DType>, KernelError> {
                resampled_dtype(Self::DTYPES, inputs, a.out_dtype)
            }

            fn reference(
                inputs: &[&Tensor],
                a: &$attrs,
                outputs: &mut [Tensor],
                _: Checked,
            ) -> Result<(), KernelError> {
                let [x] = args(inputs)?;
                let (axes, sampling) = Self::sampling(a)?;
                resample(x, only_output(outputs)?, axes, &a.roi, &sampling)
            }
        }
    };
}

resize! {
    /// `image.resize1d(data, size, roi, layout, method, coordinate_transformation_mode,
    /// rounding_method, cubic_alpha, cubic_exclude, extrapolation_value, out_dtype)`: `(N, C,
    /// W)` (`NCW`) or `(N, W, C)` (`NWC`) to width `size[0]`. Integer and float dtypes; the
    /// output is `out_dtype` or the data's.
    Resize1d = "image.resize1d", Resize1dAttrs, "NCW", "NWC"
}

resize! {
    /// `image.resize2d(data, size, roi, layout, ...)`: `(N, C, H, W)` (`NCHW`) or `(N, H, W,
    /// C)` (`NHWC`) to `size = [height, width]`, attributes as `image.resize1d`'s.
    Resize2d = "image.resize2d", Resize2dAttrs, "NCHW", "NHWC"
}

resize! {
    /// `image.resize3d(data, size, roi, layout, ...)`: `(N, C, D, H, W)` (`NCDHW`) or `(N, D,
    /// H, W, C)` (`NDHWC`) to `size = [depth, height, width]`, attributes as
    /// `image.resize1d`'s.
    Resize3d = "image.resize3d", Resize3dAttrs, "NCDHW", "NDHWC"
}
