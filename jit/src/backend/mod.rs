//! Kernel backends: the one seam between kir kernels and the machines that run them.
//!
//! A [`KernelBackend`] compiles a kir [`Kernel`] into something the VM calls behind its
//! [`PackedFunc`] trait and names the [`Device`] its tensors live on. The host CPU
//! ([`CpuBackend`], Cranelift) and OpenCL devices ([`OpenClBackend`]) are the two today; a
//! further accelerator adds one module here implementing this trait (and `relay-devices`'
//! `Device` for its memory) and touches nothing in the VM, which sees only `PackedFunc`,
//! `DevicePackedFunc` and `Device`. Reference kernels (operators without kir) are not a
//! backend: they are the host's fallback, bound by the root crate, which alone sees the stdlib.

mod cpu;
mod opencl;

pub use cpu::CpuBackend;
pub use opencl::OpenClBackend;

use crate::JitError;
use relay_devices::Device;
use relay_kir::Kernel;
use relay_runtime::PackedFunc;
use std::sync::Arc;

/// Compiles kir kernels for one target (ARCHITECTURE.md, "Devices behind one trait").
pub trait KernelBackend {
    /// The device that holds the tensors of the kernels this backend compiles: `None` for the
    /// host, whose kernels read and write the VM's own tensors; `Some` for a device whose
    /// kernels the VM calls on device-resident tensors
    /// ([`relay_runtime::DevicePackedFunc`]), copying through the host where needed.
    fn device(&self) -> Option<&Arc<dyn Device>>;

    /// `kernel` compiled for this backend, callable by the VM. Structurally equal kernels
    /// compile once per backend.
    ///
    /// # Errors
    /// [`JitError`] when the kernel cannot be compiled for this target (an OpenCL build
    /// failure carries the build log).
    fn compile(&self, kernel: &Kernel) -> Result<Arc<dyn PackedFunc>, JitError>;
}
