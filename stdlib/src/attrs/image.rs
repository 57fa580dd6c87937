//! Attributes of the `image.*` resampling operators and of `nn.upsampling`/`nn.upsampling3d`
//! (TVM `include/tvm/relay/attrs/image.h`, `nn.h`), which run through the same sampling.

use super::{attr_enum, op_attrs, FromAttr};
use relay_compiler::ir::AttrValue;
use relay_devices::DType;

attr_enum! {
    /// How `image.resize*` interpolates between source pixels.
    ResizeMethod, "one of \"nearest_neighbor\", \"linear\", \"cubic\"" {
        /// The nearest source pixel, as `rounding_method` picks it.
        NearestNeighbor = "nearest_neighbor",
        /// Linear along each spatial axis (bilinear, trilinear); TVM's default.
        #[default]
        Linear = "linear",
        /// Keys' cubic convolution along each spatial axis, with `cubic_alpha`.
        Cubic = "cubic",
    }
}

attr_enum! {
    /// How an output coordinate `x` maps to a source coordinate (ONNX `Resize`'s modes), with
    /// `scale = in_size / out_size`.
    CoordinateTransformationMode,
    "one of \"half_pixel\", \"align_corners\", \"asymmetric\", \"pytorch_half_pixel\", \"tf_half_pixel_for_nn\", \"tf_crop_and_resize\"" {
        /// `(x + 0.5) * scale - 0.5` (TVM's default).
        #[default]
        HalfPixel = "half_pixel",
        /// `x * (in_size - 1) / (out_size - 1)`: the corner pixels' centres align (`0` for an
        /// output of one pixel).
        AlignCorners = "align_corners",
        /// `x * scale`.
        Asymmetric = "asymmetric",
        /// `half_pixel`, but `0` for an output of one pixel.
        PytorchHalfPixel = "pytorch_half_pixel",
        /// `(x + 0.5) * scale`.
        TfHalfPixelForNn = "tf_half_pixel_for_nn",
        /// The region `roi` of the source resampled onto the output; outside the source,
        /// `extrapolation_value`.
        TfCropAndResize = "tf_crop_and_resize",
    }
}

attr_enum! {
    /// How `nearest_neighbor` rounds a source coordinate to a pixel.
    RoundingMethod, "one of \"\", \"round\", \"round_prefer_floor\", \"round_prefer_ceil\", \"floor\", \"ceil\"" {
        /// `round` under `align_corners`, otherwise `floor` (TVM's default).
        #[default]
        Auto = "",
        /// To the nearest integer, ties to even.
        Round = "round",
        /// To the nearest integer, ties down.
        RoundPreferFloor = "round_prefer_floor",
        /// To the nearest integer, ties up.
        RoundPreferCeil = "round_prefer_ceil",
        /// Down (after adding TVM's `1e-5`, so that `2.99999` reads pixel 3).
        Floor = "floor",
        /// Up (after subtracting TVM's `1e-5`).
        Ceil = "ceil",
    }
}

/// Declares the attribute struct of `image.resize{1,2,3}d` (TVM `Resize{1,2,3}DAttrs`): the
/// same fields, with the rank's default `layout` and `roi`.
macro_rules! resize_attrs {
    ($layout:literal, $roi:expr; $(#[$doc:meta])* pub struct $name:ident) => {
        op_attrs! {
            $(#[$doc])*
            pub struct $name {
                /// The region of interest of `tf_crop_and_resize`, as fractions of the source:
                /// the starts of the spatial axes, then their ends.
                roi: Vec<f64> = ($roi),
                /// The output's spatial sizes, one per spatial axis (required).
                size: Vec<i64> = required,
                /// Data layout: channels first or last.
                layout: String = ($layout.to_string()),
                /// Interpolation.
                method: ResizeMethod = (ResizeMethod::Linear),
                /// Output to source coordinates.
                coordinate_transformation_mode: CoordinateTransformationMode =
                    (CoordinateTransformationMode::HalfPixel),
                /// How `nearest_neighbor` picks its pixel.
                rounding_method: RoundingMethod = (RoundingMethod::Auto),
                /// The cubic kernel's `a` (`-0.5` as TensorFlow; PyTorch uses `-0.75`).
                cubic_alpha: f64 = (-0.5),
                /// Non-zero: cubic taps outside the source get weight 0 and the rest are
                /// renormalised.
                cubic_exclude: i64 = 0,
                /// The value outside the source under `tf_crop_and_resize`.
                extrapolation_value: f64 = 0.0,
                /// Output dtype; `None`: the data dtype.
                out_dtype: Option<DType> = None,
            }
        }
    };
}

resize_attrs! {
    "NCW", vec![0.0; 2];
    /// `image.resize1d` (TVM `Resize1DAttrs`): layout `NCW` or `NWC`.
    pub struct Resize1dAttrs
}

resize_attrs! {
    "NCHW", vec![0.0; 4];
    /// `image.resize2d` (TVM `Resize2DAttrs`): layout `NCHW` or `NHWC`.
    pub struct Resize2dAttrs
}

resize_attrs! {
    "NCDHW", vec![0.0; 6];
    /// `image.resize3d` (TVM `Resize3DAttrs`): layout `NCDHW` or `NDHWC`.
    pub struct Resize3dAttrs
}

attr_enum! {
    /// How `nn.upsampling` interpolates.
    UpsamplingMethod, "one of \"nearest_neighbor\", \"bilinear\", \"bicubic\"" {
        /// The nearest source pixel (TVM's default).
        #[default]
        NearestNeighbor = "nearest_neighbor",
        /// `image.resize2d`'s `linear`.
        Bilinear = "bilinear",
        /// `image.resize2d`'s `cubic`.
        Bicubic = "bicubic",
    }
}

op_attrs! {
    /// `nn.upsampling` (TVM `UpSamplingAttrs`): `image.resize2d` to `round(H * scale_h)` by
    /// `round(W * scale_w)`, `align_corners` or `asymmetric` coordinates.
    pub struct UpsamplingAttrs {
        /// The height factor (positive).
        scale_h: f64 = 1.0,
        /// The width factor (positive).
        scale_w: f64 = 1.0,
        /// Data layout: `NCHW` or `NHWC`.
        layout: String = ("NCHW".to_string()),
        /// Interpolation.
        method: UpsamplingMethod = (UpsamplingMethod::NearestNeighbor),
        /// `align_corners` coordinates rather than `asymmetric`.
        align_corners: bool = false,
    }
}

attr_enum! {
    /// How `nn.upsampling3d` interpolates.
    Upsampling3dMethod, "one of \"nearest_neighbor\", \"trilinear\"" {
        /// The nearest source pixel (TVM's default).
        #[default]
        NearestNeighbor = "nearest_neighbor",
        /// `image.resize3d`'s `linear`.
        Trilinear = "trilinear",
    }
}

op_attrs! {
    /// `nn.upsampling3d` (TVM `UpSampling3DAttrs`): `image.resize3d` to the rounded scaled
    /// sizes.
    pub struct Upsampling3dAttrs {
        /// The depth factor (positive).
        scale_d: f64 = 1.0,
        /// The height factor (positive).
        scale_h: f64 = 1.0,
        /// The width factor (positive).
        scale_w: f64 = 1.0,
        /// Data layout: `NCDHW` or `NDHWC`.
        layout: String = ("NCDHW".to_string()),
        /// Interpolation.
        method: Upsampling3dMethod = (Upsampling3dMethod::NearestNeighbor),
        /// Output to source coordinates.
        coordinate_transformation_mode: CoordinateTransformationMode =
            (CoordinateTransformationMode::HalfPixel),
    }
}

attr_enum! {
    /// How `image.grid_sample` interpolates.
    GridSampleMethod, "one of \"nearest\", \"bilinear\", \"bicubic\"" {
        /// The nearest pixel (ties to even, as PyTorch's `nearbyint`).
        Nearest = "nearest",
        /// Linear along each axis (TVM's default).
        #[default]
        Bilinear = "bilinear",
        /// Cubic convolution along each axis with `a = -0.75` (PyTorch's).
        Bicubic = "bicubic",
    }
}

attr_enum! {
    /// What `image.grid_sample` reads outside the image.
    GridSamplePadding, "one of \"zeros\", \"border\", \"reflection\"" {
        /// Zero (TVM's default).
        #[default]
        Zeros = "zeros",
        /// The nearest edge pixel: coordinates are clamped into the image.
        Border = "border",
        /// The image mirrored at its edges, then clamped.
        Reflection = "reflection",
    }
}

op_attrs! {
    /// `image.grid_sample` (TVM `GridSampleAttrs`).
    pub struct GridSampleAttrs {
        /// Interpolation.
        method: GridSampleMethod = (GridSampleMethod::Bilinear),
        /// Data layout; `NCHW` only.
        layout: String = ("NCHW".to_string()),
        /// What is read outside the image.
        padding_mode: GridSamplePadding = (GridSamplePadding::Zeros),
        /// Grid values -1 and 1 are the centres of the corner pixels (else their outer edges).
        align_corners: bool = true,
    }
}

op_attrs! {
    /// `image.affine_grid` (TVM `AffineGridAttrs`).
    pub struct AffineGridAttrs {
        /// The grid's `[height, width]` (required).
        target_shape: Vec<i64> = required,
    }
}

attr_enum! {
    /// How `image.crop_and_resize` interpolates.
    CropAndResizeMethod, "one of \"bilinear\", \"nearest_neighbor\"" {
        /// Linear along each axis (TVM's default).
        #[default]
        Bilinear = "bilinear",
        /// The nearest source pixel.
        NearestNeighbor = "nearest_neighbor",
    }
}

op_attrs! {
    /// `image.crop_and_resize` (TVM `CropAndResizeAttrs`).
    pub struct CropAndResizeAttrs {
        /// The `[height, width]` of each crop (required).
        crop_size: Vec<i64> = required,
        /// Data layout: `NCHW` or `NHWC`.
        layout: String = ("NCHW".to_string()),
        /// Interpolation.
        method: CropAndResizeMethod = (CropAndResizeMethod::Bilinear),
        /// The value of crop pixels outside the image.
        extrapolation_value: f64 = 0.0,
        /// Output dtype; `None`: the data dtype.
        out_dtype: Option<DType> = None,
    }
}
