//! Attributes of the `dyn.*` operators that TVM's attribute structs cannot carry here because
//! ours make the operand-carried field required (TVM `include/tvm/relay/attrs/transform.h`,
//! `nn.h`, `image.h`: the dynamic forms use the static structs with that field unset). The
//! `dyn.*` operators whose static struct has it optional (`InitOpAttrs`, `SqueezeAttrs`,
//! `TopkAttrs`) take that struct and reject the field.

use super::{
    op_attrs, CoordinateTransformationMode, PadMode, ResizeMethod, RoundingMethod, SliceMode,
    UpsamplingMethod,
};
use relay_devices::DType;

op_attrs! {
    /// `dyn.reshape` (TVM `ReshapeAttrs` without `newshape`, an operand).
    pub struct DynReshapeAttrs {
        /// A `0` in the shape is a size 0 rather than a copy of the input dimension.
        allowzero: bool = false,
    }
}

op_attrs! {
    /// `dyn.strided_slice` (TVM `StridedSliceAttrs` without `begin`, `end`, `strides`,
    /// operands).
    pub struct DynStridedSliceAttrs {
        /// Whether `end` holds exclusive ends or sizes.
        slice_mode: SliceMode = (SliceMode::End),
    }
}

op_attrs! {
    /// `dyn.one_hot` (TVM `OneHotAttrs` without `depth`, an operand).
    pub struct DynOneHotAttrs {
        /// Where the new axis goes (`-1`: last).
        axis: i64 = (-1),
        /// The output dtype.
        dtype: DType = required,
    }
}

op_attrs! {
    /// `dyn.expand_dims` (TVM `DynExpandDimsAttrs`; `axis` is an operand).
    pub struct DynExpandDimsAttrs {
        /// How many size-1 axes to insert.
        num_newaxis: i64 = 1,
    }
}

op_attrs! {
    /// `dyn.nn.pad` (TVM `PadAttrs` without `pad_width`, an operand).
    pub struct DynPadAttrs {
        /// What fills the border.
        pad_mode: PadMode = (PadMode::Constant),
    }
}

op_attrs! {
    /// `dyn.nn.upsampling` (TVM `UpSamplingAttrs` without `scale_h`, `scale_w`, operands).
    pub struct DynUpsamplingAttrs {
        /// Data layout: `NCHW` or `NHWC`.
        layout: String = ("NCHW".to_string()),
        /// Interpolation.
        method: UpsamplingMethod = (UpsamplingMethod::NearestNeighbor),
        /// `align_corners` coordinates rather than `asymmetric`.
        align_corners: bool = false,
    }
}

op_attrs! {
    /// `dyn.image.resize2d` (TVM `Resize2DAttrs` without `size`, `roi`, operands).
    pub struct DynResize2dAttrs {
        /// Data layout: `NCHW` or `NHWC`.
        layout: String = ("NCHW".to_string()),
        /// Interpolation.
        method: ResizeMethod = (ResizeMethod::Linear),
        /// Output to source coordinates.
        coordinate_transformation_mode: CoordinateTransformationMode = (CoordinateTransformationMode::HalfPixel),
        /// How `nearest_neighbor` picks its pixel.
        rounding_method: RoundingMethod = (RoundingMethod::Auto),
        /// The cubic kernel's `a`.
        cubic_alpha: f64 = (-0.5),
        /// Non-zero: cubic taps outside the source get weight 0 and the rest are renormalised.
        cubic_exclude: i64 = 0,
        /// The value outside the source under `tf_crop_and_resize`.
        extrapolation_value: f64 = 0.0,
        /// Output dtype; `None`: the data dtype.
        out_dtype: Option<DType> = None,
    }
}
