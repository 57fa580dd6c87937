//! `CombineParallelConv2D` (TVM's, at its opt level 4): at least [`MIN_CONV2D_BRANCHES`]
//! `nn.conv2d` calls on the same input with the same attributes (but `channels`) and weights
//! of the same shape but the output channels become one `nn.conv2d` on the weights
//! concatenated along `O`, each branch a `strided_slice` of its channels (axis 1).
//! Only ungrouped convolutions in the layouts the kernels run (`NCHW`, `OIHW`) combine.

use super::{combine_parallel, Combiner};
use crate::diagnostics::CompileError;
use crate::ir::{Attrs, Module};
use crate::op::AttrReader;
use crate::ty::TypeMap;

/// The fewest parallel convolutions combined (TVM's default `min_num_branches`).
pub const MIN_CONV2D_BRANCHES: usize = 3;

/// Combines parallel `nn.conv2d` calls in every global function (see the module docs).
///
/// # Errors
/// None today (the pass signature).
pub fn combine_parallel_conv2d(m: &mut Module, types: &TypeMap) -> Result<(), CompileError> {
    let combiner = Combiner {
        op: "nn.conv2d",
        width: Some("channels"),
        min_branches: MIN_CONV2D_BRANCHES,
        weight_axis,
        output_axis: |_| 1,
    };
    combine_parallel(m, types, &combiner)
}

/// Axis 0 (`O`) of an ungrouped `NCHW`/`OIHW` convolution's weight.
fn weight_axis(m: &Module, attrs: &Attrs) -> Option<usize> {
    let r = AttrReader::new(&m.symbols, attrs);
    let layouts = (r.str("data_layout", "NCHW").ok()?, r.str("kernel_layout", "OIHW").ok()?);
    let out = r.str("out_layout", "").ok()?;
    (layouts == ("NCHW", "OIHW") && matches!(out, "" | "NCHW") && r.int("groups", 1).ok()? == 1).then_some(0)
}
