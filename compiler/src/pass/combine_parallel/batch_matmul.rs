//! `CombineParallelBatchMatmul` (TVM's, at its opt level 4): at least
//! [`MIN_BATCH_MATMUL_BRANCHES`] `nn.batch_matmul(x, y)` calls on the same `x` with the same
//! attributes and `y` of the same shape but the output width become one call on the `y`s
//! concatenated along their `n` axis (2, or 1 with `transpose_b`), each branch a
//! `strided_slice` of its columns (the last axis).

use super::{combine_parallel, Combiner};
use crate::diagnostics::CompileError;
use crate::ir::{Attrs, Module};
use crate::op::AttrReader;
use crate::ty::TypeMap;

/// The fewest parallel batch matmuls combined (TVM's default `min_num_branches`).
pub const MIN_BATCH_MATMUL_BRANCHES: usize = 3;

/// Combines parallel `nn.batch_matmul` calls in every global function (see the module docs).
///
/// # Errors
/// None today (the pass signature).
pub fn combine_parallel_batch_matmul(m: &mut Module, types: &TypeMap) -> Result<(), CompileError> {
    let combiner = Combiner {
        op: "nn.batch_matmul",
        width: None,
        min_branches: MIN_BATCH_MATMUL_BRANCHES,
        weight_axis,
        output_axis: |_| 2,
    };
    combine_parallel(m, types, &combiner)
}

/// The `n` axis of `y`: 1 when it is `[b, n, k]` (`transpose_b`), else 2.
fn weight_axis(m: &Module, attrs: &Attrs) -> Option<usize> {
    let r = AttrReader::new(&m.symbols, attrs);
    Some(if r.bool("transpose_b", false).ok()? { 1 } else { 2 })
}
