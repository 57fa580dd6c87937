//! `CombineParallelDense` (TVM's, at its opt level 4): at least [`MIN_DENSE_BRANCHES`]
//! `nn.dense` calls on the same input with the same attributes (but `units`) and weights of
//! the same input width become one `nn.dense` on the weights concatenated along their rows,
//! each branch a `strided_slice` of its units (the last axis). This is TVM's
//! `to_batch=False` form: one wider dense rather than a `batch_matmul` of stacked weights,
//! which needs no reshapes and combines branches of different widths.

use super::{combine_parallel, Combiner};
use crate::diagnostics::CompileError;
use crate::ir::Module;
use crate::ty::TypeMap;

/// The fewest parallel dense calls combined (TVM's default `min_num_branches`).
pub const MIN_DENSE_BRANCHES: usize = 3;

/// Combines parallel `nn.dense` calls in every global function (see the module docs).
///
/// # Errors
/// None today (the pass signature).
pub fn combine_parallel_dense(m: &mut Module, types: &TypeMap) -> Result<(), CompileError> {
    let combiner = Combiner {
        op: "nn.dense",
        width: Some("units"),
        min_branches: MIN_DENSE_BRANCHES,
        weight_axis: |_, _| Some(0),
        output_axis: |rank| rank - 1,
    };
    combine_parallel(m, types, &combiner)
}
