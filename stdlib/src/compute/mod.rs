//! Compute rules over kir (see `relay_compiler::op::TensorDef`), one file per operator
//! family; each operator item's `COMPUTE` points at its rule here.
//!
//! Every rule must agree with the op's reference kernel (`crate::kernels`) on every input it
//! accepts, up to the float tolerances the JIT documents (approximated `exp`/`tanh`/...,
//! FMA contraction, reassociated sums). Where a rule does not cover an input (a layout other
//! than `NCHW`, an empty axis to mirror), it refuses the input and the op runs its reference
//! kernel.

mod depthwise;
pub(crate) mod einsum;
pub(crate) mod grid;
mod im2col;
pub(crate) mod image;
pub(crate) mod nn;
pub(crate) mod pool;
pub(crate) mod reduce;
pub(crate) mod transform;
pub(crate) mod util;
mod window;
mod window_gemm;
pub(crate) mod winograd;
