//! Attributes of the `vision.*` operators (TVM `include/tvm/relay/attrs/vision.h`, v0.16).

use super::{attr_enum, op_attrs, FromAttr};
use relay_compiler::ir::AttrValue;

op_attrs! {
    /// `vision.multibox_prior` (TVM `MultiBoxPriorAttrs`): the anchor boxes of an SSD feature
    /// map.
    pub struct MultiBoxPriorAttrs {
        /// The box sizes, as fractions of the image height.
        sizes: Vec<f64> = (vec![1.0]),
        /// The aspect ratios (width over height) of the boxes of the first size.
        ratios: Vec<f64> = (vec![1.0]),
        /// `[step_h, step_w]` between box centres; a value `<= 0` is `1 / size` of its axis.
        steps: Vec<f64> = (vec![-1.0, -1.0]),
        /// `[offset_h, offset_w]` of the first centre, in steps.
        offsets: Vec<f64> = (vec![0.5, 0.5]),
        /// Whether to clip the coordinates into `[0, 1]`.
        clip: bool = false,
    }
}

op_attrs! {
    /// `vision.yolo_reorg` (TVM `YoloReorgAttrs`): Darknet's reorg layer.
    pub struct YoloReorgAttrs {
        /// The block size moved from the spatial axes into the channels.
        stride: i64 = 1,
    }
}

attr_enum! {
    /// How `vision.roi_align` pools the samples of a bin.
    RoiAlignMode, "one of \"avg\", \"max\"" {
        /// Their mean (TVM's default).
        #[default]
        Avg = "avg",
        /// Their maximum.
        Max = "max",
    }
}

op_attrs! {
    /// `vision.roi_align` (TVM `ROIAlignAttrs`).
    pub struct RoiAlignAttrs {
        /// `[pooled_h, pooled_w]` of each region's output (one value applies to both).
        pooled_size: Vec<i64> = required,
        /// The factor from region coordinates to data coordinates (`1 / stride` of the map).
        spatial_scale: f64 = required,
        /// Samples per bin along each axis; `<= 0`: `ceil(bin size)`, adaptive.
        sample_ratio: i64 = (-1),
        /// Data layout: `NCHW` or `NHWC`.
        layout: String = ("NCHW".to_string()),
        /// How a bin's samples are pooled.
        mode: RoiAlignMode = (RoiAlignMode::Avg),
    }
}

op_attrs! {
    /// `vision.roi_pool` (TVM `ROIPoolAttrs`).
    pub struct RoiPoolAttrs {
        /// `[pooled_h, pooled_w]` of each region's output (one value applies to both).
        pooled_size: Vec<i64> = required,
        /// The factor from region coordinates to data coordinates (`1 / stride` of the map).
        spatial_scale: f64 = required,
        /// Data layout: `NCHW` or `NHWC`.
        layout: String = ("NCHW".to_string()),
    }
}
