//! Shape and indexing transforms and tensor creation (TVM `src/relay/op/tensor/transform.cc`,
//! `src/relay/op/nn/pad.cc`, `nn.cc` for `nn.batch_flatten`).

use crate::op;
use crate::relations::*;
use relay_compiler::op::OpDef;

/// Transforms (`OpPattern::Injective`, `broadcast_to`: `Broadcast`), creation ops
/// (`ElemWise`) and `shape_of` (`Opaque`), with TVM's patterns.
pub const TRANSFORM: &[OpDef] = &[
    op!("reshape", 1, reshape_rel, Injective, "same elements, new shape (0 copies, -1 infers)"),
    op!("transpose", 1, transpose_rel, Injective, "permute dimensions (default: reverse)"),
    op!("squeeze", 1, squeeze_rel, Injective, "remove size-1 dimensions"),
    op!("expand_dims", 1, expand_dims_rel, Injective, "insert size-1 dimensions at axis"),
    op!("concatenate", 1, concatenate_rel, Injective, "join a tuple of tensors along axis"),
    op!("split", 1, split_rel, Injective, "cut along axis into a tuple"),
    op!("stack", 1, stack_rel, Injective, "join a tuple of tensors along a new axis"),
    op!("take", 2, take_rel, Injective, "gather elements by integer indices"),
    op!("strided_slice", 1, strided_slice_rel, Injective, "slice begin:end:stride per axis"),
    op!("broadcast_to", 1, broadcast_to_rel, Broadcast, "broadcast to a given shape"),
    op!("nn.batch_flatten", 1, batch_flatten_rel, Injective, "[n, ...] to [n, product of the rest]"),
    op!("nn.pad", 2, pad_rel, Injective, "pad each dimension with a scalar, edge or reflection"),
    op!("zeros", 0, init_rel, ElemWise, "a tensor of zeros"),
    op!("ones", 0, init_rel, ElemWise, "a tensor of ones"),
    op!("full", 1, full_rel, ElemWise, "a tensor filled with a scalar"),
    op!("shape_of", 1, shape_of_rel, Opaque, "the shape as a 1-d integer tensor"),
];
