//! Transform operators (TVM `src/relay/op/tensor/transform.cc`, `src/relay/op/nn/pad.cc`,
//! `nn.cc` for `nn.batch_flatten`): reshaping, joining, indexing, padding and creating
//! tensors. All are dtype-agnostic copies unless noted; their kir rules live in
//! `crate::compute::transform`.

mod fill;
mod index;
mod join;
mod layout;
mod like;
mod mask;
mod shape;

pub use fill::{Full, MirrorPad, Ones, Pad, Zeros};
pub(crate) use index::slice_plan;
pub use index::{StridedSlice, Take};
pub(crate) use join::split_sizes;
pub use join::{Concatenate, Meshgrid, Split, Stack};
pub use layout::LayoutTransform;
pub use like::{BroadcastToLike, CastLike, CollapseSumLike, ReshapeLike, SliceLike};
pub use mask::{MatrixSetDiag, SequenceMask};
pub use shape::{
    infer_reshape, BatchFlatten, BroadcastTo, ExpandDims, NdarraySize, Reshape, ShapeOf, Squeeze, Transpose,
};

use crate::attrs::InitOpAttrs;
use crate::error::KernelError;
use crate::kernels::util::{args, to_size};
use crate::operator::{DTypeSet, OpEntry, ShapeDim};
use relay_devices::DType;

/// Transforms (`OpPattern::Injective`, `broadcast_to`: `Broadcast`), creation ops
/// (`ElemWise`) and `shape_of` (`Opaque`), with TVM's patterns.
pub const TRANSFORM: &[OpEntry] = &[
    OpEntry::of::<Reshape>(),
    OpEntry::of::<Transpose>(),
    OpEntry::of::<Squeeze>(),
    OpEntry::of::<ExpandDims>(),
    OpEntry::of::<Concatenate>(),
    OpEntry::of::<Split>(),
    OpEntry::of::<Stack>(),
    OpEntry::of::<Take>(),
    OpEntry::of::<StridedSlice>(),
    OpEntry::of::<BroadcastTo>(),
    OpEntry::of::<BatchFlatten>(),
    OpEntry::of::<Pad>(),
    OpEntry::of::<MirrorPad>(),
    OpEntry::of::<Zeros>(),
    OpEntry::of::<Ones>(),
    OpEntry::of::<Full>(),
    OpEntry::of::<ShapeOf>(),
    OpEntry::of::<ReshapeLike>(),
    OpEntry::of::<BroadcastToLike>(),
    OpEntry::of::<SliceLike>(),
    OpEntry::of::<CollapseSumLike>(),
    OpEntry::of::<CastLike>(),
    OpEntry::of::<NdarraySize>(),
    OpEntry::of::<Meshgrid>(),
    OpEntry::of::<SequenceMask>(),
    OpEntry::of::<MatrixSetDiag>(),
    OpEntry::of::<LayoutTransform>(),
];

/// One input of any dtype; the output has its dtype.
fn same_as_input(inputs: &[DType]) -> Result<Vec<DType>, KernelError> {
    let [d] = args(inputs)?;
    Ok(vec![DTypeSet::Any.check(d)?])
}

/// A size from an attribute as a dimension: non-negative, within Relay's `i64` dimensions.
fn dim_from_i64<D: ShapeDim>(v: i64) -> Result<D, KernelError> {
    to_size(v, "a dimension").map(D::known)
}

/// The sum of `dims`: unknown if any is.
///
/// # Errors
/// [`KernelError::Shape`] when it overflows.
fn sum<D: ShapeDim>(dims: &[D]) -> Result<D, KernelError> {
    let mut total = 0usize;
    for d in dims {
        match d.value() {
            None => return Ok(*d),
            Some(n) => {
                total = total
                    .checked_add(n)
                    .filter(|&t| i64::try_from(t).is_ok())
                    .ok_or_else(|| KernelError::Shape("the resulting size is too large".into()))?
            }
        }
    }
    Ok(D::known(total))
}

/// The required `shape` attribute of `zeros`, `ones`, `full`, `broadcast_to` as dimensions.
///
/// # Errors
/// [`KernelError::Attr`] when it is absent or has a negative size; a shape whose element count
/// overflows.
fn init_shape<D: ShapeDim>(op: &str, attrs: &InitOpAttrs) -> Result<Vec<D>, KernelError> {
    let shape = attrs.shape.as_ref().ok_or_else(|| KernelError::Attr(format!("{op} needs `shape`")))?;
    let shape = shape
        .iter()
        .map(|&d| {
            if d < 0 {
                Err(KernelError::Attr(format!("attribute `shape` has negative size {d}")))
            } else {
                dim_from_i64(d)
            }
        })
        .collect::<Result<Vec<D>, _>>()?;
    D::product(&shape)?;
    Ok(shape)
}
