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

op_attrs! {
    /// `vision.get_valid_counts` (TVM `GetValidCountsAttrs`; the score threshold is the second
    /// operand, as in TVM v0.16).
    pub struct GetValidCountsAttrs {
        /// The column of the class id; a row with a negative id is invalid. `< 0`: no class
        /// column.
        id_index: i64 = 0,
        /// The column of the score.
        score_index: i64 = 1,
    }
}

op_attrs! {
    /// `vision.non_max_suppression` (TVM `NonMaximumSuppressionAttrs`; `max_output_size` and
    /// `iou_threshold` are operands, as in TVM v0.16).
    pub struct NonMaximumSuppressionAttrs {
        /// Whether a box suppresses boxes of every class, not only of its own.
        force_suppress: bool = false,
        /// How many of the best-scoring boxes take part; `<= 0`: all.
        top_k: i64 = (-1),
        /// The column of the first of the four box coordinates.
        coord_start: i64 = 2,
        /// The column of the score.
        score_index: i64 = 1,
        /// The column of the class id; `< 0`: no class column.
        id_index: i64 = 0,
        /// Whether to return the kept boxes' indices (and their count) instead of the boxes.
        return_indices: bool = true,
        /// Whether to move the kept boxes to the top of the box output.
        invalid_to_bottom: bool = false,
    }
}

attr_enum! {
    /// The result layout of `vision.all_class_non_max_suppression`.
    NmsOutputFormat, "\"onnx\" (\"tensorflow\" is not supported)" {
        /// ONNX `NonMaxSuppression`'s `[batch, class, box]` rows and their count.
        #[default]
        Onnx = "onnx",
    }
}

op_attrs! {
    /// `vision.all_class_non_max_suppression` (TVM `AllClassNonMaximumSuppressionAttrs`).
    pub struct AllClassNonMaximumSuppressionAttrs {
        /// The result layout.
        output_format: NmsOutputFormat = (NmsOutputFormat::Onnx),
    }
}
