//! The scalar facet: the unboxed VM instruction an operator becomes when every operand and the
//! result are 0-d tensors (`add(%i, 1)` in a loop counter is one `BinImm`, not a kernel call).

/// The VM's scalar operations, re-exported so that operator libraries can name them without
/// depending on the VM crate.
pub use relay_runtime::{BinOp, UnOp};

/// How a call of an operator on 0-d operands runs as one VM instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarForm {
    /// `Instr::Bin` (or `Instr::BinImm` with a literal operand) with this operation.
    Bin(BinOp),
    /// `Instr::Un` with this operation.
    Un(UnOp),
    /// `Instr::Move`: the value itself (`copy`).
    Move,
    /// `Instr::Cast` to the call's result dtype (`cast`).
    Cast,
}

impl ScalarForm {
    /// Whether the binary operation `op` gives the same result with its operands swapped, so
    /// a literal left operand can become the immediate of a `BinImm`.
    pub fn is_commutative(op: BinOp) -> bool {
        matches!(
            op,
            BinOp::Add
                | BinOp::Mul
                | BinOp::Max
                | BinOp::Min
                | BinOp::Eq
                | BinOp::Ne
                | BinOp::And
                | BinOp::Or
                | BinOp::Xor
        )
    }
}
