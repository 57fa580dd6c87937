//! Shape and indexing transforms and tensor creation (TVM `src/relay/op/tensor/transform.cc`,
//! `src/relay/op/nn/pad.cc`, `nn.cc` for `nn.batch_flatten`).

use crate::op;
use crate::relations::*;
use relay_compiler::op::OpDef;

/// Transforms (`OpPattern::Injective`, `broadcast_to`: `Broadcast`), creation ops
/// (`ElemWise`) and `shape_of` (`Opaque`), with TVM's patterns.
pub const TRANSFORM: &[OpDef] = &[
    op!(
        "reshape",
        1,
        ["newshape", "allowzero"],
        reshape_rel,
        Injective,
        "same elements, new shape (0 copies, -1 infers)"
    ),
    op!("transpose", 1, ["axes"], transpose_rel, Injective, "permute dimensions (default: reverse)"),
    op!("squeeze", 1, ["axis"], squeeze_rel, Injective, "remove size-1 dimensions"),
    op!(
        "expand_dims",
        1,
        ["axis", "num_newaxis"],
        expand_dims_rel,
        Injective,
        "insert size-1 dimensions at axis"
    ),
    op!("concatenate", 1, ["axis"], concatenate_rel, Injective, "join a tuple of tensors along axis"),
    op!("split", 1, ["indices_or_sections", "axis"], split_rel, Injective, "cut along axis into a tuple"),
    op!("stack", 1, ["axis"], stack_rel, Injective, "join a tuple of tensors along a new axis"),
    op!("take", 2, ["axis", "batch_dims", "mode"], take_rel, Injective, "gather elements by integer indices"),
    op!(
        "strided_slice",
        1,
        ["begin", "end", "strides", "axes", "slice_mode"],
        strided_slice_rel,
        Injective,
        "slice begin:end:stride per axis"
    ),
    op!("broadcast_to", 1, ["shape", "dtype"], broadcast_to_rel, Broadcast, "broadcast to a given shape"),
    op!("nn.batch_flatten", 1, [], batch_flatten_rel, Injective, "[n, ...] to [n, product of the rest]"),
    op!(
        "nn.pad",
        2,
        ["pad_width", "pad_mode"],
        pad_rel,
        Injective,
        "pad each dimension with a scalar, edge or reflection"
    ),
    op!("zeros", 0, ["shape", "dtype"], init_rel, ElemWise, "a tensor of zeros"),
    op!("ones", 0, ["shape", "dtype"], init_rel, ElemWise, "a tensor of ones"),
    op!("full", 1, ["shape", "dtype"], full_rel, ElemWise, "a tensor filled with a scalar"),
    op!("shape_of", 1, ["dtype"], shape_of_rel, Opaque, "the shape as a 1-d integer tensor"),
];
