//! The kernel table: what `InvokePacked` calls. The VM does not know how kernels are made
//! (reference Rust, Cranelift JIT, OpenCL); the host hands it one [`Kernel`] per entry of the
//! executable's kernel list.

use relay_devices::{DType, Tensor};
use std::sync::Arc;

/// A compiled operator or fused group, called in destination-passing style.
pub trait Kernel: Send + Sync {
    /// The dtypes and shapes of the outputs for these inputs (used when an output was not
    /// preallocated, e.g. because its shape has `?` dimensions).
    ///
    /// # Errors
    /// A message when the inputs' shapes or dtypes are not ones the kernel accepts.
    fn output_types(&self, inputs: &[&Tensor]) -> Result<Vec<(DType, Vec<usize>)>, String>;

    /// Computes the outputs from the inputs, writing into `outputs` (already of the right
    /// dtypes and shapes).
    ///
    /// # Errors
    /// A message on a run-time fault (shape mismatch on a `?` dimension, index out of range).
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), String>;
}

/// The kernels of one executable, in the order of its kernel list.
pub type KernelTable = Vec<Arc<dyn Kernel>>;
