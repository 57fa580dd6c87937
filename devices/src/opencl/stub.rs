//! The OpenCL API of a build without the `opencl` feature: discovery and opening fail with
//! [`OpenClError::NotCompiledWithOpenCl`], so no value of the other types can exist.

use super::{DeviceInfo, KernelArg, OpenClError};
use crate::Tensor;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// Always [`OpenClError::NotCompiledWithOpenCl`] in this build.
pub fn devices() -> Result<Vec<DeviceInfo>, OpenClError> {
    Err(OpenClError::NotCompiledWithOpenCl)
}

/// Device memory (never created in this build).
#[derive(Debug)]
pub struct DeviceBuffer {
    never: Infallible,
}

impl DeviceBuffer {
    /// Size in bytes.
    pub fn len(&self) -> usize {
        match self.never {}
    }

    /// Whether the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        match self.never {}
    }
}

/// A built OpenCL program (never created in this build).
#[derive(Debug)]
pub struct Program {
    never: Infallible,
}

impl Program {
    /// How long the OpenCL C compiler took.
    pub fn build_time(&self) -> Duration {
        match self.never {}
    }

    /// The names of the program's kernels.
    pub fn kernel_names(&self) -> Vec<String> {
        match self.never {}
    }

    /// The device binary the runtime built.
    pub fn binary(&self) -> Result<Vec<u8>, OpenClError> {
        match self.never {}
    }
}

/// An OpenCL device; [`OpenClDevice::open`] always fails in this build.
#[derive(Debug)]
pub struct OpenClDevice {
    never: Infallible,
}

impl OpenClDevice {
    /// Always [`OpenClError::NotCompiledWithOpenCl`] in this build.
    pub fn open(_selector: &str) -> Result<OpenClDevice, OpenClError> {
        Err(OpenClError::NotCompiledWithOpenCl)
    }

    /// What the runtime says about this device.
    pub fn info(&self) -> &DeviceInfo {
        match self.never {}
    }

    /// An uninitialised buffer of `len` bytes.
    pub fn alloc(&self, _len: usize) -> Result<DeviceBuffer, OpenClError> {
        match self.never {}
    }

    /// A device tensor of `dtype` and `shape`.
    pub fn alloc_tensor(
        self: &Arc<Self>,
        _dtype: crate::DType,
        _shape: &[usize],
    ) -> Result<DeviceTensor, OpenClError> {
        match self.never {}
    }

    /// A zero-filled device tensor of `dtype` and `shape`.
    pub fn zeros_tensor(
        self: &Arc<Self>,
        _dtype: crate::DType,
        _shape: &[usize],
    ) -> Result<DeviceTensor, OpenClError> {
        match self.never {}
    }

    /// A device tensor holding a copy of `tensor`.
    pub fn upload_tensor(self: &Arc<Self>, _tensor: &Tensor) -> Result<DeviceTensor, OpenClError> {
        match self.never {}
    }

    /// Sets every byte of `buf` to 0.
    pub fn zero(&self, _buf: &mut DeviceBuffer) -> Result<(), OpenClError> {
        match self.never {}
    }

    /// Free buffers in the device's pool, and their total bytes.
    pub fn pooled(&self) -> (usize, usize) {
        match self.never {}
    }

    /// A new buffer holding a copy of `tensor`'s elements.
    pub fn upload(&self, _tensor: &Tensor) -> Result<DeviceBuffer, OpenClError> {
        match self.never {}
    }

    /// Copies `tensor`'s elements into `buf`.
    pub fn write(&self, _buf: &mut DeviceBuffer, _tensor: &Tensor) -> Result<(), OpenClError> {
        match self.never {}
    }

    /// Copies `buf` into `tensor`'s elements.
    pub fn read(&self, _buf: &DeviceBuffer, _tensor: &mut Tensor) -> Result<(), OpenClError> {
        match self.never {}
    }

    /// The program built from `source` with build `options`.
    pub fn program(&self, _source: &str, _options: &str) -> Result<Arc<Program>, OpenClError> {
        match self.never {}
    }

    /// Creates and caches the program of `source` from a device binary.
    pub fn load_binary(
        &self,
        _source: &str,
        _options: &str,
        _binary: &[u8],
    ) -> Result<Arc<Program>, OpenClError> {
        match self.never {}
    }

    /// Makes [`OpenClDevice::program`] fail for sources not loaded from binaries.
    pub fn require_prebuilt(&self) {
        match self.never {}
    }

    /// Number of programs in the cache.
    pub fn cached_programs(&self) -> usize {
        match self.never {}
    }

    /// Queues kernel `name` of `program` over `global` work-items.
    ///
    /// # Safety
    /// As for the OpenCL build: argument types match the kernel and accesses stay in bounds.
    pub unsafe fn launch(
        &self,
        _program: &Program,
        _name: &str,
        _args: &[KernelArg<'_>],
        _global: &[usize],
    ) -> Result<(), OpenClError> {
        match self.never {}
    }

    /// Waits until everything queued has finished.
    pub fn finish(&self) -> Result<(), OpenClError> {
        match self.never {}
    }
}

/// A device-resident tensor (never created in this build).
#[derive(Debug)]
pub struct DeviceTensor {
    never: Infallible,
}

impl DeviceTensor {
    /// The element type.
    pub fn dtype(&self) -> crate::DType {
        match self.never {}
    }

    /// The dimensions.
    pub fn shape(&self) -> &[usize] {
        match self.never {}
    }

    /// Bytes of device memory the elements take.
    pub fn size_bytes(&self) -> usize {
        match self.never {}
    }

    /// The device the tensor lives on.
    pub fn device(&self) -> &Arc<OpenClDevice> {
        match self.never {}
    }

    /// The device memory.
    pub fn buffer(&self) -> Result<&DeviceBuffer, OpenClError> {
        match self.never {}
    }

    /// The device memory, for a kernel to write.
    pub fn buffer_mut(&mut self) -> Result<&mut DeviceBuffer, OpenClError> {
        match self.never {}
    }

    /// A host copy.
    pub fn to_host(&self) -> Result<Tensor, OpenClError> {
        match self.never {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run by `cargo test -p relay-devices` (the crate alone has no default features; CI runs
    /// it so): every entry point says OpenCL is not compiled in.
    #[test]
    fn without_the_feature_everything_says_so() {
        const { assert!(!super::super::COMPILED_IN) };
        assert_eq!(devices(), Err(OpenClError::NotCompiledWithOpenCl));
        assert!(matches!(OpenClDevice::open("opencl"), Err(OpenClError::NotCompiledWithOpenCl)));
    }
}
