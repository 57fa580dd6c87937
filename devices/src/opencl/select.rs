//! Device descriptions and `opencl:<platform>:<device>` selector strings.

use super::OpenClError;
use std::fmt;
use std::str::FromStr;

/// What kind of processor an OpenCL device is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// A CPU (e.g. POCL's `pthread` device).
    Cpu,
    /// A GPU.
    Gpu,
    /// An accelerator (FPGA boards report this).
    Accelerator,
    /// Anything else the runtime reports.
    Other,
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Gpu => "gpu",
            DeviceKind::Accelerator => "accelerator",
            DeviceKind::Other => "other",
        })
    }
}

/// One OpenCL device as the runtime describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Index of its platform in the runtime's platform list.
    pub platform: usize,
    /// Index of the device within its platform.
    pub device: usize,
    /// The platform's name (`Portable Computing Language` for POCL).
    pub platform_name: String,
    /// The device's name.
    pub name: String,
    /// CPU, GPU, accelerator.
    pub kind: DeviceKind,
    /// The device's OpenCL version string.
    pub version: String,
    /// Parallel compute units.
    pub compute_units: u32,
    /// Global memory in bytes.
    pub global_mem_bytes: u64,
    /// Largest work-group size.
    pub max_work_group_size: usize,
    /// Whether the device supports `double` (`cl_khr_fp64`).
    pub fp64: bool,
}

impl DeviceInfo {
    /// The selector that names exactly this device: `opencl:<platform>:<device>`.
    pub fn id(&self) -> String {
        format!("opencl:{}:{}", self.platform, self.device)
    }
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}  {} [{}] on {} ({}, {} compute units, {} MiB)",
            self.id(),
            self.name,
            self.kind,
            self.platform_name,
            self.version,
            self.compute_units,
            self.global_mem_bytes >> 20
        )
    }
}

/// Which device to open: `opencl` (the first GPU, else the first accelerator, else the first
/// device), `opencl:<p>` (the first device of platform `p`) or `opencl:<p>:<d>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DeviceSelector {
    /// A platform index, if given.
    pub platform: Option<usize>,
    /// A device index within the platform, if given.
    pub device: Option<usize>,
}

impl FromStr for DeviceSelector {
    type Err = OpenClError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || OpenClError::BadSelector(s.to_string());
        let mut parts = s.split(':');
        if parts.next() != Some("opencl") {
            return Err(bad());
        }
        let mut index = || parts.next().map(|p| p.parse::<usize>().map_err(|_| bad())).transpose();
        let (platform, device) = (index()?, index()?);
        if index()?.is_some() {
            return Err(bad());
        }
        Ok(DeviceSelector { platform, device })
    }
}

impl DeviceSelector {
    /// The device this selector picks among `devices`, or [`OpenClError::NoSuchDevice`].
    pub fn pick<'a>(&self, selector: &str, devices: &'a [DeviceInfo]) -> Result<&'a DeviceInfo, OpenClError> {
        let matching = |d: &&DeviceInfo| {
            self.platform.is_none_or(|p| p == d.platform) && self.device.is_none_or(|i| i == d.device)
        };
        let preferred = if self.platform.is_none() {
            let of_kind = |k| devices.iter().filter(matching).find(|d| d.kind == k);
            of_kind(DeviceKind::Gpu).or_else(|| of_kind(DeviceKind::Accelerator))
        } else {
            None
        };
        preferred.or_else(|| devices.iter().find(matching)).ok_or_else(|| OpenClError::NoSuchDevice {
            selector: selector.to_string(),
            available: devices.iter().map(DeviceInfo::id).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(platform: usize, device: usize, kind: DeviceKind) -> DeviceInfo {
        DeviceInfo {
            platform,
            device,
            platform_name: "p".into(),
            name: "d".into(),
            kind,
            version: "OpenCL 3.0".into(),
            compute_units: 1,
            global_mem_bytes: 1 << 30,
            max_work_group_size: 256,
            fp64: true,
        }
    }

    #[test]
    fn parses_selectors() {
        let sel = |s: &str| s.parse::<DeviceSelector>();
        assert_eq!(sel("opencl"), Ok(DeviceSelector { platform: None, device: None }));
        assert_eq!(sel("opencl:1"), Ok(DeviceSelector { platform: Some(1), device: None }));
        assert_eq!(sel("opencl:0:2"), Ok(DeviceSelector { platform: Some(0), device: Some(2) }));
        for bad in ["", "cpu", "opencl:", "opencl:x", "opencl:0:1:2", "opencl:-1", "openclx"] {
            assert_eq!(sel(bad), Err(OpenClError::BadSelector(bad.into())), "{bad}");
        }
    }

    #[test]
    fn picks_gpus_first_unless_told() {
        let devices =
            [info(0, 0, DeviceKind::Cpu), info(1, 0, DeviceKind::Accelerator), info(1, 1, DeviceKind::Gpu)];
        let pick = |s: &str| s.parse::<DeviceSelector>().unwrap().pick(s, &devices).map(DeviceInfo::id);
        assert_eq!(pick("opencl"), Ok("opencl:1:1".into()));
        assert_eq!(pick("opencl:0"), Ok("opencl:0:0".into()));
        assert_eq!(pick("opencl:1:0"), Ok("opencl:1:0".into()));
        assert!(
            matches!(pick("opencl:2"), Err(OpenClError::NoSuchDevice { available, .. }) if available.len() == 3)
        );
        assert_eq!(
            devices[2].to_string(),
            "opencl:1:1  d [gpu] on p (OpenCL 3.0, 1 compute units, 1024 MiB)"
        );
    }
}
