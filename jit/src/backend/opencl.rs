//! An OpenCL device as a [`KernelBackend`]: kir → OpenCL C ([`crate::OpenClKernel`]), run on
//! tensors the VM keeps resident on the device.

use super::KernelBackend;
use crate::{JitError, KernelCache, OpenClKernel};
use relay_devices::opencl::OpenClDevice;
use relay_devices::{DType, Device, DeviceTensor, Tensor};
use relay_kir::{infer_syms, Kernel};
use relay_runtime::{DevicePackedFunc, PackedFunc};
use std::sync::Arc;

/// Compilation for one OpenCL device (from source, or from the prebuilt binaries loaded into
/// the device), each distinct kernel once.
pub struct OpenClBackend {
    device: Arc<OpenClDevice>,
    /// The same device as the VM sees it.
    as_device: Arc<dyn Device>,
    cache: KernelCache<OpenClKernel>,
}

impl OpenClBackend {
    /// A backend compiling for `device`.
    pub fn new(device: Arc<OpenClDevice>) -> OpenClBackend {
        let as_device: Arc<dyn Device> = device.clone();
        OpenClBackend { device, as_device, cache: KernelCache::new() }
    }
}

impl KernelBackend for OpenClBackend {
    fn device(&self) -> Option<&Arc<dyn Device>> {
        Some(&self.as_device)
    }

    fn compile(&self, kernel: &Kernel) -> Result<Arc<dyn PackedFunc>, JitError> {
        let compiled = OpenClKernel::compile_cached(&self.cache, &self.device, kernel)?;
        Ok(Arc::new(OpenClPackedFunc { compiled, device: self.as_device.clone() }))
    }
}

/// A kir kernel built for an OpenCL device.
struct OpenClPackedFunc {
    compiled: Arc<OpenClKernel>,
    /// The kernel's device as the VM sees it.
    device: Arc<dyn Device>,
}

impl PackedFunc for OpenClPackedFunc {
    fn output_types(&self, inputs: &[&Tensor]) -> Result<Vec<(DType, Vec<usize>)>, String> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        self.compiled.output_types(&shapes).map_err(|e| e.to_string())
    }

    /// On host tensors (the VM calls [`DevicePackedFunc::run`] instead; this serves other
    /// callers of the table): copies in and out.
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), String> {
        let k = self.compiled.kernel();
        let syms = if k.syms.is_empty() {
            Vec::new()
        } else {
            let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
            infer_syms(k, &shapes, &[]).map_err(|e| e.to_string())?
        };
        self.compiled.run(inputs, outputs, &syms).map_err(|e| e.to_string())
    }

    fn on_device(&self) -> Option<&dyn DevicePackedFunc> {
        Some(self)
    }
}

impl DevicePackedFunc for OpenClPackedFunc {
    fn device(&self) -> &Arc<dyn Device> {
        &self.device
    }

    fn output_types(&self, input_shapes: &[&[usize]]) -> Result<Vec<(DType, Vec<usize>)>, String> {
        self.compiled.output_types(input_shapes).map_err(|e| e.to_string())
    }

    fn run(&self, inputs: &[&DeviceTensor], outputs: &[DeviceTensor]) -> Result<(), String> {
        self.compiled.run_device(inputs, outputs).map_err(|e| e.to_string())
    }
}
