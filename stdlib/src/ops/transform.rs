//! Shape and indexing transforms and tensor creation (TVM `src/relay/op/tensor/transform.cc`,
//! `src/relay/op/nn/pad.cc`, `nn.cc` for `nn.batch_flatten`).

use super::legacy;
use crate::kernels::{
    BatchFlatten, BroadcastTo, Concatenate, ExpandDims, Full, Ones, Pad, Reshape, ShapeOf, Split, Squeeze,
    Stack, StridedSlice, Take, Transpose, Zeros,
};
use crate::operator::OpEntry;
use crate::relations::*;

/// Transforms (`OpPattern::Injective`, `broadcast_to`: `Broadcast`), creation ops
/// (`ElemWise`) and `shape_of` (`Opaque`), with TVM's patterns.
pub const TRANSFORM: &[OpEntry] = &[
    legacy!(Reshape, 1, reshape_rel, Injective, "same elements, new shape (0 copies, -1 infers)"),
    legacy!(Transpose, 1, transpose_rel, Injective, "permute dimensions (default: reverse)"),
    legacy!(Squeeze, 1, squeeze_rel, Injective, "remove size-1 dimensions"),
    legacy!(ExpandDims, 1, expand_dims_rel, Injective, "insert size-1 dimensions at axis"),
    legacy!(Concatenate, 1, concatenate_rel, Injective, "join a tuple of tensors along axis"),
    legacy!(Split, 1, split_rel, Injective, "cut along axis into a tuple"),
    legacy!(Stack, 1, stack_rel, Injective, "join a tuple of tensors along a new axis"),
    legacy!(Take, 2, take_rel, Injective, "gather elements by integer indices"),
    legacy!(StridedSlice, 1, strided_slice_rel, Injective, "slice begin:end:stride per axis"),
    legacy!(BroadcastTo, 1, broadcast_to_rel, Broadcast, "broadcast to a given shape"),
    legacy!(BatchFlatten, 1, batch_flatten_rel, Injective, "[n, ...] to [n, product of the rest]"),
    legacy!(Pad, 2, pad_rel, Injective, "pad each dimension with a scalar, edge or reflection"),
    legacy!(Zeros, 0, init_rel, ElemWise, "a tensor of zeros"),
    legacy!(Ones, 0, init_rel, ElemWise, "a tensor of ones"),
    legacy!(Full, 1, full_rel, ElemWise, "a tensor filled with a scalar"),
    legacy!(ShapeOf, 1, shape_of_rel, Opaque, "the shape as a 1-d integer tensor"),
];
