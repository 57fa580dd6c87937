//! Fusion pattern kinds (TVM's `TOpPattern`, used by FuseOps).

/// How an operator's outputs depend on its inputs, which decides what it may fuse with
/// (TVM `include/tvm/relay/op_attr_types.h`, `OpPatternKind`). Ordered: a larger kind is less
/// fusible.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpPattern {
    /// Output element `i` depends only on input element `i` (e.g. `exp`, `nn.relu`).
    ElemWise = 0,
    /// Elementwise after NumPy broadcasting of the inputs (e.g. `add`).
    Broadcast = 1,
    /// Each output element is a function of some input elements, no reduction (e.g.
    /// `reshape`, `transpose`, `take`).
    Injective = 2,
    /// A commutative reduction (e.g. `sum`, `max`).
    CommReduce = 3,
    /// A complex op whose elementwise consumers can be fused into its output (e.g. `nn.conv2d`,
    /// `nn.dense`).
    OutEWiseFusable = 4,
    /// Tuple construction/projection.
    Tuple = 7,
    /// Never fused (e.g. `nn.batch_norm` before simplification, `shape_of`).
    Opaque = 8,
}
