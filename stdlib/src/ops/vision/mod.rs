//! The `vision.*` operators (TVM `src/relay/op/vision/`, `topi.vision`): SSD's anchor boxes
//! (`prior.rs`), YOLO's reorg (`reorg.rs`) and the region-of-interest pooling of R-CNN
//! detectors (`roi.rs`).

mod prior;
mod reorg;
mod roi;

pub use prior::*;
pub use reorg::*;
pub use roi::*;

use crate::operator::OpEntry;

/// The vision operators.
pub const VISION: &[OpEntry] = &[
    OpEntry::of::<MultiBoxPrior>(),
    OpEntry::of::<YoloReorg>(),
    OpEntry::of::<RoiAlign>(),
    OpEntry::of::<RoiPool>(),
];
