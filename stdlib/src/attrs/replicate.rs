//! Attributes of the operators that repeat or reorder a tensor's elements along axes
//! (TVM `include/tvm/relay/attrs/transform.h`: `TileAttrs`, `RepeatAttrs`, `ReverseAttrs`).

use super::op_attrs;

op_attrs! {
    /// `tile` (TVM `TileAttrs`).
    pub struct TileAttrs {
        /// Copies per axis, aligned at the right with the data's axes (the shorter of the two
        /// is padded with 1s on the left).
        reps: Vec<i64> = required,
    }
}

op_attrs! {
    /// `repeat` (TVM `RepeatAttrs`).
    pub struct RepeatAttrs {
        /// Copies of each element.
        repeats: i64 = required,
        /// The axis repeated along (negative counts from the end).
        axis: i64 = required,
    }
}

op_attrs! {
    /// `reverse` (TVM `ReverseAttrs`).
    pub struct ReverseAttrs {
        /// The axis reversed (negative counts from the end).
        axis: i64 = required,
    }
}
