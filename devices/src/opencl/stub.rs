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
