//! Transform operators (TVM `OpPattern::Injective` and friends): reshaping, joining,
//! indexing, padding and creating tensors. All are dtype-agnostic copies unless noted.

mod fill;
mod index;
mod join;
mod shape;

pub use fill::{Full, Ones, Pad, Zeros};
pub(crate) use index::slice_plan;
pub use index::{StridedSlice, Take};
pub use join::{Concatenate, Split, Stack};
pub use shape::{BatchFlatten, BroadcastTo, ExpandDims, Reshape, ShapeOf, Squeeze, Transpose};
