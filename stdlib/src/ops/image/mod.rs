//! The `image.*` operators (TVM `src/relay/op/image/`): resampling of 1-, 2- and 3-d images
//! (`resize.rs`), all through the one axis-wise sampling of `sample.rs`, which
//! `nn.upsampling`/`nn.upsampling3d` share, and sampling at a grid of coordinates
//! (`grid.rs`: `image.affine_grid`, `image.grid_sample`), and `image.crop_and_resize`
//! (`crop.rs`), the resampling of boxes.

mod crop;
mod grid;
mod resize;
pub(crate) mod sample;

pub use crop::*;
pub use grid::*;
pub use resize::*;

use crate::operator::OpEntry;

/// The image operators.
pub const IMAGE: &[OpEntry] = &[
    OpEntry::of::<Resize1d>(),
    OpEntry::of::<Resize2d>(),
    OpEntry::of::<Resize3d>(),
    OpEntry::of::<AffineGrid>(),
    OpEntry::of::<GridSample>(),
    OpEntry::of::<CropAndResize>(),
];
