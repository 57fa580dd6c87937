//! Errors of the OpenCL device: every failure, including a missing runtime, is a value.

/// Why an OpenCL operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpenClError {
    /// This build has no OpenCL support (the `opencl` cargo feature is off).
    #[error("OpenCL support is not compiled in (build with the `opencl` cargo feature)")]
    NotCompiledWithOpenCl,
    /// No OpenCL runtime could be loaded (`libOpenCL.so.1` is missing or unusable).
    #[error("OpenCL not available: {0}")]
    Unavailable(String),
    /// A device string that is not `opencl`, `opencl:<platform>` or `opencl:<platform>:<device>`.
    #[error(
        "bad OpenCL device `{0}`: expected `opencl`, `opencl:<platform>` or `opencl:<platform>:<device>`"
    )]
    BadSelector(String),
    /// The selector names no present device.
    #[error("no OpenCL device matches `{selector}` (present: {})", if available.is_empty() { "none".to_string() } else { available.join(", ") })]
    NoSuchDevice {
        /// The selector as given.
        selector: String,
        /// The ids of the devices that are present.
        available: Vec<String>,
    },
    /// The OpenCL C compiler rejected a program; `log` is its build log.
    #[error("OpenCL program build failed on {device}:\n{log}")]
    Build {
        /// The device the program was built for.
        device: String,
        /// The compiler's build log.
        log: String,
    },
    /// An OpenCL call returned an error code.
    #[error("{call} failed: {name} ({code})")]
    Api {
        /// The operation that failed (e.g. `clCreateBuffer`).
        call: &'static str,
        /// The OpenCL error code.
        code: i32,
        /// The code's name (`CL_OUT_OF_RESOURCES`, ...).
        name: String,
    },
    /// A copy between a tensor and a buffer of different byte sizes.
    #[error("a buffer of {buffer} bytes cannot hold a tensor of {tensor} bytes")]
    SizeMismatch {
        /// Bytes in the device buffer.
        buffer: usize,
        /// Bytes in the tensor.
        tensor: usize,
    },
    /// A host tensor that cannot be made (a shape too large for memory) or a device tensor
    /// in an impossible state.
    #[error("{0}")]
    HostTensor(String),
    /// The device takes prebuilt binaries only and none was loaded for this program (its
    /// first kernel signature is given): the binaries directory is not the executable's.
    #[error("no prebuilt OpenCL binary for the program of `{0}`: the binaries directory does not match this executable (rebuild it with `relay-vm compile --emit-opencl DIR --binaries`)")]
    NotPrebuilt(String),
    /// A launch with more than 3 work dimensions.
    #[error("a launch has 1 to 3 work dimensions, not {0}")]
    WorkDims(usize),
}

impl OpenClError {
    /// The [`crate::DeviceError`] this is when device `id` reports it through the
    /// [`crate::Device`] trait.
    pub fn on(self, id: String) -> crate::DeviceError {
        match self {
            OpenClError::SizeMismatch { buffer, tensor } => {
                crate::DeviceError::SizeMismatch { buffer, tensor }
            }
            e => crate::DeviceError::Backend { device: id, message: e.to_string() },
        }
    }
}
