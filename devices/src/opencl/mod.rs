//! OpenCL devices (GPUs, FPGAs, and POCL's CPU device in tests), ARCHITECTURE.md §3 "Devices".
//!
//! With the `opencl` cargo feature the runtime is `opencl3`, which loads `libOpenCL.so.1`
//! when first used: building needs no OpenCL headers or libraries, and a machine without a
//! runtime gets [`OpenClError::Unavailable`]. Without the feature the same API exists and
//! [`devices`] and [`OpenClDevice::open`] return [`OpenClError::NotCompiledWithOpenCl`].
//!
//! Devices are named `opencl:<platform>:<device>` ([`DeviceSelector`]). An [`OpenClDevice`]
//! owns a context and an in-order queue and implements [`crate::Device`] (memory from a
//! per-device pool keyed by byte size, copies in and out, so [`crate::DeviceTensor`]s live
//! there); [`OpenClDevice::program`] builds OpenCL C (cached by source and options; a compile
//! error carries the build log), [`OpenClDevice::launch`] queues a kernel on buffers
//! ([`buffer_of`] finds the buffer behind a device tensor's memory).

mod error;
#[cfg(feature = "opencl")]
mod runtime;
mod select;
#[cfg(not(feature = "opencl"))]
mod stub;

use crate::{DeviceError, DeviceMemory};
pub use error::OpenClError;
#[cfg(feature = "opencl")]
pub use runtime::{devices, DeviceBuffer, OpenClDevice, Program};
pub use select::{DeviceInfo, DeviceKind, DeviceSelector};
#[cfg(not(feature = "opencl"))]
pub use stub::{devices, DeviceBuffer, OpenClDevice, Program};

/// Whether this build has OpenCL support (the `opencl` cargo feature).
pub const COMPILED_IN: bool = cfg!(feature = "opencl");

/// Whether a test that finds no OpenCL runtime or device must fail instead of printing why
/// and passing: `RELAY_REQUIRE_OPENCL=1` in the environment (CI sets it, so that a skip there
/// cannot hide untested device code). A machine without OpenCL still builds and passes.
pub fn device_required() -> bool {
    std::env::var_os("RELAY_REQUIRE_OPENCL").is_some_and(|v| v == "1")
}

/// The OpenCL buffer behind a device tensor's memory.
///
/// # Errors
/// [`DeviceError::ForeignMemory`] for memory another backend allocated.
pub fn buffer_of(memory: &dyn DeviceMemory) -> Result<&DeviceBuffer, DeviceError> {
    let any: &dyn std::any::Any = memory;
    any.downcast_ref::<DeviceBuffer>().ok_or_else(|| DeviceError::ForeignMemory("an OpenCL device".into()))
}

/// One argument of a kernel launch.
#[derive(Clone, Copy, Debug)]
pub enum KernelArg<'a> {
    /// A `__global` pointer parameter.
    Buffer(&'a DeviceBuffer),
    /// A `long` parameter.
    Long(i64),
}
