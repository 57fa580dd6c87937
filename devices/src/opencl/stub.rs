//! The OpenCL API of a build without the `opencl` feature: discovery and opening fail with
//! [`OpenClError::NotCompiledWithOpenCl`], so no value of the other types can exist.

use super::{DeviceInfo, KernelArg, OpenClError};
use crate::{DeviceError, DeviceMemory, Tensor};
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

impl DeviceMemory for DeviceBuffer {
    fn len(&self) -> usize {
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

impl crate::Device for OpenClDevice {
    fn id(&self) -> String {
        match self.never {}
    }

    fn name(&self) -> &str {
        match self.never {}
    }

    fn allocate(&self, _bytes: usize) -> Result<Box<dyn DeviceMemory>, DeviceError> {
        match self.never {}
    }

    fn free(&self, _memory: Box<dyn DeviceMemory>) {
        match self.never {}
    }

    fn zero(&self, _memory: &mut dyn DeviceMemory) -> Result<(), DeviceError> {
        match self.never {}
    }

    fn copy_in(&self, _memory: &mut dyn DeviceMemory, _tensor: &Tensor) -> Result<(), DeviceError> {
        match self.never {}
    }

    fn copy_out(&self, _memory: &dyn DeviceMemory, _tensor: &mut Tensor) -> Result<(), DeviceError> {
        match self.never {}
    }

    fn synchronize(&self) -> Result<(), DeviceError> {
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
