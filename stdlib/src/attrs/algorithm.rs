//! Attributes of the sorting operators (TVM `include/tvm/relay/attrs/algorithm.h`:
//! `SortAttrs`, `ArgsortAttrs`, `TopKAttrs`).

// `attr_enum!` names `FromAttr` and `AttrValue` where it expands.
use super::{attr_enum, op_attrs, FromAttr};
use relay_compiler::ir::AttrValue;
use relay_devices::DType;

attr_enum! {
    /// What `topk` returns.
    TopkRetType, "one of \"both\", \"values\", \"indices\"" {
        /// The tuple `(values, indices)` (TVM's default).
        #[default]
        Both = "both",
        /// The values alone.
        Values = "values",
        /// The indices alone.
        Indices = "indices",
    }
}

op_attrs! {
    /// `sort` (TVM `SortAttrs`).
    pub struct SortAttrs {
        /// The axis sorted along (negative counts from the end).
        axis: i64 = (-1),
        /// Ascending order; descending when false.
        is_ascend: bool = true,
    }
}

op_attrs! {
    /// `argsort` (TVM `ArgsortAttrs`).
    pub struct ArgsortAttrs {
        /// The axis sorted along (negative counts from the end).
        axis: i64 = (-1),
        /// Ascending order; descending when false.
        is_ascend: bool = true,
        /// The dtype of the indices.
        dtype: DType = (DType::I32),
    }
}

op_attrs! {
    /// `topk` (TVM `TopKAttrs`).
    pub struct TopkAttrs {
        /// How many elements to keep; absent or below 1: the whole axis.
        k: Option<i64> = None,
        /// The axis searched (negative counts from the end).
        axis: i64 = (-1),
        /// What to return.
        ret_type: TopkRetType = (TopkRetType::Both),
        /// The `k` smallest instead of the `k` largest.
        is_ascend: bool = false,
        /// The dtype of the indices.
        dtype: DType = (DType::I32),
    }
}

op_attrs! {
    /// `searchsorted` (TVM `SearchSortedAttrs`).
    pub struct SearchSortedAttrs {
        /// Return the last insertion point (after equal elements) instead of the first.
        right: bool = false,
        /// The index dtype: `int32` or `int64`.
        dtype: DType = (DType::I32),
    }
}

op_attrs! {
    /// `unique` (TVM `UniqueAttrs`).
    pub struct UniqueAttrs {
        /// The unique elements in ascending order; otherwise in order of first occurrence.
        sorted: bool = true,
        /// Whether to return the count of each unique element as a fifth output.
        return_counts: bool = false,
    }
}
