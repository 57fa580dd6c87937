//! Reductions (TVM `src/relay/op/tensor/reduce.cc`), still registered the old way: a
//! relation function of their own and a separate reference kernel (see `legacy!`).

use super::legacy;
use crate::kernels::{ArgMax, ArgMin, Max, Mean, Min, Prod, Sum};
use crate::operator::OpEntry;
use crate::relations::*;

/// Reductions (`OpPattern::CommReduce`).
pub const REDUCE: &[OpEntry] = &[
    legacy!(Sum, 1, reduce_rel, CommReduce, "sum over axes"),
    legacy!(Mean, 1, reduce_rel, CommReduce, "mean over axes"),
    legacy!(Max, 1, reduce_rel, CommReduce, "maximum over axes"),
    legacy!(Min, 1, reduce_rel, CommReduce, "minimum over axes"),
    legacy!(Prod, 1, reduce_rel, CommReduce, "product over axes"),
    legacy!(ArgMax, 1, arg_reduce_rel, CommReduce, "index of the maximum (int32)"),
    legacy!(ArgMin, 1, arg_reduce_rel, CommReduce, "index of the minimum (int32)"),
];
