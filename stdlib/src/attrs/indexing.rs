//! Attributes of the gather, scatter and one-hot operators
//! (TVM `include/tvm/relay/attrs/transform.h`: `GatherAttrs`, `GatherNDAttrs`,
//! `ScatterElementsAttrs`, `ScatterNDAttrs`, `OneHotAttrs`).

// `attr_enum!` names `FromAttr` and `AttrValue` where it expands.
use super::{attr_enum, op_attrs, FromAttr};
use relay_compiler::ir::AttrValue;
use relay_devices::DType;

attr_enum! {
    /// How a scatter combines an update with the value already at its position (TVM's
    /// `reduction` of `scatter_elements`, `mode` of `scatter_nd`).
    ScatterReduction, "one of \"update\", \"add\", \"mul\", \"min\", \"max\"" {
        /// The update replaces the value (TVM's default; the last update wins).
        #[default]
        Update = "update",
        /// The updates are added to the value.
        Add = "add",
        /// The value is multiplied by the updates.
        Mul = "mul",
        /// The smallest of the value and the updates.
        Min = "min",
        /// The largest of the value and the updates.
        Max = "max",
    }
}

op_attrs! {
    /// `gather` (TVM `GatherAttrs`).
    pub struct GatherAttrs {
        /// The axis indexed by the values of `indices` (negative counts from the end).
        axis: i64 = required,
    }
}

op_attrs! {
    /// `gather_nd` (TVM `GatherNDAttrs`).
    pub struct GatherNdAttrs {
        /// The number of leading dimensions shared by `data` and `indices[1:]`.
        batch_dims: i64 = 0,
        /// The length of `indices`' first dimension, when it is not known from its type.
        index_rank: Option<i64> = None,
    }
}

op_attrs! {
    /// `scatter_elements` (TVM `ScatterElementsAttrs`).
    pub struct ScatterElementsAttrs {
        /// The axis indexed by the values of `indices` (negative counts from the end).
        axis: i64 = 0,
        /// How updates combine with the data.
        reduction: ScatterReduction = (ScatterReduction::Update),
    }
}

op_attrs! {
    /// `scatter_nd` (TVM `ScatterNDAttrs`).
    pub struct ScatterNdAttrs {
        /// How updates combine with the data.
        mode: ScatterReduction = (ScatterReduction::Update),
    }
}

op_attrs! {
    /// `one_hot` (TVM `OneHotAttrs`).
    pub struct OneHotAttrs {
        /// The length of the new axis.
        depth: i64 = required,
        /// Where the new axis goes (`-1`: last).
        axis: i64 = (-1),
        /// The output dtype.
        dtype: DType = required,
    }
}
