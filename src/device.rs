//! Where a program's fused kernels run: the host CPU (Cranelift JIT) or an OpenCL device
//! (`--device opencl[:<platform>[:<device>]]`). Control flow, ADTs and reference kernels stay
//! on the host VM either way.

use relay_devices::opencl::{DeviceSelector, OpenClDevice, OpenClError};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

/// The device a [`crate::Program`]'s kir kernels are bound to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Device {
    /// The host CPU: kir kernels JIT-compiled with Cranelift.
    #[default]
    Cpu,
    /// An OpenCL device: kir kernels rendered as OpenCL C and run there, their tensors kept
    /// resident on the device between kernels.
    OpenCl {
        /// `opencl`, `opencl:<platform>` or `opencl:<platform>:<device>`.
        selector: String,
        /// A directory written by `relay-vm compile --emit-opencl DIR --binaries`: programs
        /// are loaded from its prebuilt binaries instead of being built from source (the FPGA
        /// flow).
        binaries: Option<PathBuf>,
    },
}

impl Device {
    /// Whether kernels run on an OpenCL device.
    pub fn is_opencl(&self) -> bool {
        matches!(self, Device::OpenCl { .. })
    }

    /// Opens the OpenCL device this names (`None` for the CPU).
    ///
    /// # Errors
    /// [`OpenClError::NotCompiledWithOpenCl`] without the `opencl` feature,
    /// [`OpenClError::Unavailable`] without a runtime, [`OpenClError::NoSuchDevice`].
    pub fn open(&self) -> Result<Option<Arc<OpenClDevice>>, OpenClError> {
        match self {
            Device::Cpu => Ok(None),
            Device::OpenCl { selector, .. } => OpenClDevice::open(selector).map(|d| Some(Arc::new(d))),
        }
    }
}

impl FromStr for Device {
    type Err = OpenClError;

    /// `cpu`, or an OpenCL selector (checked for form here; whether the device exists is
    /// known when it is opened).
    fn from_str(s: &str) -> Result<Device, OpenClError> {
        if s == "cpu" {
            return Ok(Device::Cpu);
        }
        s.parse::<DeviceSelector>()?;
        Ok(Device::OpenCl { selector: s.to_string(), binaries: None })
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::OpenCl { selector, .. } => f.write_str(selector),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_and_opencl_selectors() {
        assert_eq!("cpu".parse::<Device>(), Ok(Device::Cpu));
        assert_eq!(
            "opencl:0:1".parse::<Device>(),
            Ok(Device::OpenCl { selector: "opencl:0:1".into(), binaries: None })
        );
        assert!("gpu".parse::<Device>().is_err());
        assert!("opencl:x".parse::<Device>().is_err());
        assert_eq!(Device::default().to_string(), "cpu");
    }
}
