//! The `vision.*` operators (TVM `src/relay/op/vision/`, `topi.vision`): SSD's anchor boxes
//! (`prior.rs`), YOLO's reorg (`reorg.rs`) and the region-of-interest pooling of R-CNN
//! detectors (`roi.rs`), and the non-maximum suppression of detected boxes
//! (`valid_counts.rs`, `nms.rs`, `all_class_nms.rs`, sharing `boxes.rs`).

mod all_class_nms;
mod boxes;
mod nms;
mod prior;
mod reorg;
mod roi;
mod valid_counts;

pub use all_class_nms::*;
pub use nms::*;
pub use prior::*;
pub use reorg::*;
pub use roi::*;
pub use valid_counts::*;

use crate::operator::OpEntry;

/// The vision operators.
pub const VISION: &[OpEntry] = &[
    OpEntry::of::<MultiBoxPrior>(),
    OpEntry::of::<YoloReorg>(),
    OpEntry::of::<RoiAlign>(),
    OpEntry::of::<RoiPool>(),
    OpEntry::of::<GetValidCounts>(),
    OpEntry::of::<NonMaxSuppression>(),
    OpEntry::of::<AllClassNonMaxSuppression>(),
];
