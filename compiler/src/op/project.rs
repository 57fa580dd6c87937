//! The projection facet: how to compute one field of an operator's tuple result as a
//! single-output operator call (`split(x, 3, axis=1).1` is `strided_slice(x, begin=[k],
//! end=[2k], axes=[1])`). The [`project_outputs`](crate::pass::project_outputs) pass uses it so
//! that each field becomes an ordinary injective call that fuses with its consumers (TVM fuses
//! `split` with the `TupleGetItem`s that read it; here the tuple disappears instead).

use super::AttrReader;
use crate::ir::AttrValue;

/// A single-output operator call: the operator's name and its attributes. Its inputs are the
/// projected call's inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectedCall {
    /// The operator computing the field.
    pub op: &'static str,
    /// Its attributes, by TVM name.
    pub attrs: Vec<(&'static str, AttrValue)>,
}

/// Field `field` of the operator's result, given its attributes and its inputs' static
/// shapes (one per input). `Err` when the call cannot be projected (the pass then keeps it).
pub type ProjectFn = fn(&AttrReader, &[Vec<i64>], usize) -> Result<ProjectedCall, String>;
