//! `relay-vm devices`: the devices kernels can run on in this build on this machine.

use relay_devices::opencl::{self, OpenClError};

/// One line per device: the host CPU (Cranelift JIT), then every OpenCL device with its
/// selector (`opencl:<platform>:<device>`), or a line saying why there are none (support not
/// compiled in, no runtime, no platform).
pub fn report() -> String {
    let mut out = String::from("cpu  host CPU (Cranelift JIT)\n");
    match opencl::devices() {
        Ok(list) if list.is_empty() => {
            out.push_str("OpenCL: runtime present but no platform (install an ICD such as POCL)\n")
        }
        Ok(list) => list.iter().for_each(|d| out.push_str(&format!("{d}\n"))),
        Err(OpenClError::NotCompiledWithOpenCl) => {
            out.push_str("OpenCL: support is not compiled in (build with `--features opencl`)\n")
        }
        Err(e) => out.push_str(&format!("OpenCL: {e}\n")),
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn lists_the_host_and_says_what_opencl_has() {
        let report = super::report();
        assert!(report.starts_with("cpu  host CPU"));
        let opencl_line = report.lines().nth(1).unwrap_or_default();
        if relay_devices::opencl::COMPILED_IN {
            assert!(opencl_line.starts_with("opencl:") || opencl_line.starts_with("OpenCL: "), "{report}");
        } else {
            assert!(opencl_line.contains("not compiled in"), "{report}");
        }
    }
}
