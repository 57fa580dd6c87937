//! The host CPU as a [`KernelBackend`]: kir → Cranelift machine code ([`crate::Jit`]), called
//! on the VM's own tensors.

use super::KernelBackend;
use crate::{CompiledKernel, Jit, JitError, KernelCache};
use relay_devices::{DType, Device, Tensor};
use relay_kir::{infer_syms, BufferRole, Kernel};
use relay_runtime::{CancelHandle, PackedFunc};
use std::sync::Arc;

/// Cranelift compilation for the host, with its cache of compiled kernels.
pub struct CpuBackend {
    jit: Jit,
    cache: KernelCache<CompiledKernel>,
}

impl CpuBackend {
    /// A backend for this machine's CPU (Cranelift's native ISA, with the features it has).
    ///
    /// # Errors
    /// [`JitError`] when Cranelift does not support the host.
    pub fn new() -> Result<CpuBackend, JitError> {
        Ok(CpuBackend { jit: Jit::new()?, cache: KernelCache::new() })
    }
}

impl KernelBackend for CpuBackend {
    fn device(&self) -> Option<&Arc<dyn Device>> {
        None
    }

    fn compile(&self, kernel: &Kernel) -> Result<Arc<dyn PackedFunc>, JitError> {
        let compiled = self.jit.compile_cached(&self.cache, kernel)?;
        Ok(Arc::new(JitPackedFunc { compiled }))
    }
}

/// A JIT-compiled kir kernel as the VM calls it.
struct JitPackedFunc {
    compiled: Arc<CompiledKernel>,
}

impl JitPackedFunc {
    /// The sym values for these inputs (kernels FuseOps makes have none).
    fn syms(&self, inputs: &[&Tensor]) -> Result<Vec<i64>, String> {
        if self.compiled.kernel().syms.is_empty() {
            // No `?` dimensions: nothing to infer, and an empty `Vec` does not allocate.
            return Ok(Vec::new());
        }
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        infer_syms(self.compiled.kernel(), &shapes, &[]).map_err(|e| e.to_string())
    }
}

impl PackedFunc for JitPackedFunc {
    fn output_types(&self, inputs: &[&Tensor]) -> Result<Vec<(DType, Vec<usize>)>, String> {
        let syms = self.syms(inputs)?;
        let k: &Kernel = self.compiled.kernel();
        k.buffers_with_role(BufferRole::Output)
            .map(|b| {
                let decl = &k.buffers[b.index()];
                let shape = relay_kir::buffer_shape(k, b, &syms)
                    .and_then(|s| s.into_iter().map(|d| usize::try_from(d).ok()).collect::<Option<Vec<_>>>())
                    .ok_or_else(|| format!("output `{}` has no valid shape", decl.name))?;
                Ok((decl.dtype, shape))
            })
            .collect()
    }

    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), String> {
        self.run_shared(inputs, &[], outputs, &CancelHandle::new())
    }

    fn run_shared(
        &self,
        inputs: &[&Tensor],
        handles: &[Option<&Arc<Tensor>>],
        outputs: &mut [Tensor],
        cancel: &CancelHandle,
    ) -> Result<(), String> {
        let syms = self.syms(inputs)?;
        let stop = cancel.as_atomic();
        self.compiled.run_shared(inputs, handles, outputs, &syms, stop).map_err(|e| e.to_string())
    }
}
