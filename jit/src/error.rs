//! Errors of kernel compilation and calls.

use relay_devices::TensorError;
use relay_kir::{BoundsError, CallError, VerifyError};

/// Why a kernel could not be compiled or called.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum JitError {
    /// The kernel is malformed.
    #[error("invalid kernel: {0}")]
    Verify(#[from] VerifyError),
    /// The tensors or syms of a call do not fit the kernel.
    #[error(transparent)]
    Call(#[from] CallError),
    /// The kernel's accesses could not be proved in bounds (at compile time for a kernel
    /// without syms, else for the call's syms).
    #[error(transparent)]
    Bounds(#[from] BoundsError),
    /// A temp buffer could not be allocated.
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// The host CPU is not supported by Cranelift.
    #[error("host CPU not supported: {0}")]
    Host(String),
    /// Cranelift rejected the generated function or could not link it.
    #[error("code generation failed: {0}")]
    Codegen(String),
    /// The OpenCL device failed (no runtime, a build error with its log, an API error).
    #[error(transparent)]
    OpenCl(#[from] relay_devices::opencl::OpenClError),
    /// A device operation (allocation, copy) failed.
    #[error(transparent)]
    Device(#[from] relay_devices::DeviceError),
    /// The call's stop flag was set (a cancel or a passed deadline) before the kernel ended.
    #[error("stopped before the kernel ended")]
    Stopped,
    /// An inconsistency in the backend itself (a bug): the kernel verified but could not be
    /// lowered.
    #[error("internal JIT error: {0}")]
    Internal(String),
}
