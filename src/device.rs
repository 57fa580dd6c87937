//! Where a program's fused kernels run: the host CPU (Cranelift JIT) or OpenCL devices
//! (`--device opencl[:<platform>[:<device>]]`, or several such selectors separated by commas,
//! which take the fused kernels in turn). Control flow, ADTs and reference kernels stay on
//! the host VM either way.

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
    /// OpenCL devices: kir kernels rendered as OpenCL C and run there, their tensors kept
    /// resident on the device between kernels. With several devices the kernels of the
    /// executable's kernel list that carry kir go to them round-robin (the first to the
    /// first device, the second to the second, ...), and a tensor one device made is copied
    /// to the next through the host.
    OpenCl {
        /// `opencl`, `opencl:<platform>` or `opencl:<platform>:<device>`; or several of these
        /// separated by commas (`opencl:0:0,opencl:0:1`).
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

    /// Opens the OpenCL devices this names, in order (none for the CPU).
    ///
    /// # Errors
    /// [`OpenClError::NotCompiledWithOpenCl`] without the `opencl` feature,
    /// [`OpenClError::Unavailable`] without a runtime, [`OpenClError::NoSuchDevice`].
    pub fn open(&self) -> Result<Vec<Arc<OpenClDevice>>, OpenClError> {
        match self {
            Device::Cpu => Ok(Vec::new()),
            Device::OpenCl { selector, .. } => {
                selector.split(',').map(|s| OpenClDevice::open(s).map(Arc::new)).collect()
            }
        }
    }
}

impl FromStr for Device {
    type Err = OpenClError;

    /// `cpu`, or OpenCL selectors separated by commas (checked for form here; whether the
    /// devices exist is known when they are opened).
    fn from_str(s: &str) -> Result<Device, OpenClError> {
        if s == "cpu" {
            return Ok(Device::Cpu);
        }
        for part in s.split(',') {
            part.parse::<DeviceSelector>()?;
        }
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
        assert_eq!(
            "opencl:0:0,opencl:0:1".parse::<Device>(),
            Ok(Device::OpenCl { selector: "opencl:0:0,opencl:0:1".into(), binaries: None })
        );
        assert!("opencl:0:0,".parse::<Device>().is_err());
        assert!("opencl,cpu".parse::<Device>().is_err());
        assert_eq!(Device::default().to_string(), "cpu");
    }
}
