//! Kernels under oclgrind (an OpenCL device simulator that reports out-of-bounds accesses,
//! data races and API misuse): `relay-vm run --device opencl` runs tensor goldens with
//! oclgrind as the only OpenCL platform (its ICD, registered through `OCL_ICD_VENDORS`), with
//! API checks and race detection on, and must print the expected results with no report.
//! (Not `--uninitialized`: oclgrind 21.10 does not count `clEnqueueFillBuffer`, which zeroes
//! kernel outputs and temps, as initialising memory, so every zeroed buffer is reported.)
//!
//! Needs the Debian package `oclgrind`; without it the test says so and passes, unless
//! `RELAY_REQUIRE_OPENCL=1` (CI), when it fails.
#![cfg(feature = "opencl")]

use std::path::Path;
use std::process::Command;

const ICD: &str = "/usr/lib/oclgrind/liboclgrind-rt-icd.so";

/// Golden files whose `@main` calls (`// run:` lines) run under oclgrind: convolution,
/// reductions, softmax, dense layers.
const FILES: &[&str] = &["tensor_conv2d", "tensor_reduce", "tensor_softmax", "tensor_mlp", "tensor_dense"];

/// What oclgrind prints when it finds a fault.
const REPORTS: &[&str] = &["Invalid read", "Invalid write", "data race", "Oclgrind -", "error detected"];

#[test]
fn tensor_goldens_run_clean_under_oclgrind() {
    if !Path::new(ICD).exists() {
        if !relay::devices::opencl::device_required() {
            eprintln!("skipped: oclgrind is not installed ({ICD} missing)");
            return;
        }
        panic!(
            "oclgrind is not installed ({ICD} missing): apt-get install oclgrind (RELAY_REQUIRE_OPENCL=1)"
        );
    }
    let vendors = std::env::temp_dir().join(format!("relay-oclgrind-{}.icd", std::process::id()));
    std::fs::write(&vendors, format!("{ICD}\n")).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut runs = 0;
    for name in FILES {
        let path = root.join(format!("tests/relay/run/{name}.relay"));
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines().filter_map(|l| l.strip_prefix("// run: @main(")) {
            let (args, expected) = line.rsplit_once(") == ").unwrap_or_else(|| panic!("{name}: {line}"));
            let out = Command::new(env!("CARGO_BIN_EXE_relay-vm"))
                .args(["run", "--device", "opencl", "--format", "text", "--args", &format!("[{args}]")])
                .arg(&path)
                .env("OCL_ICD_VENDORS", &vendors)
                .env("OCLGRIND_CHECK_API", "1")
                .env("OCLGRIND_DATA_RACES", "1")
                .output()
                .unwrap();
            let (stdout, stderr) =
                (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success(), "{name}: {}\n{stderr}", out.status);
            assert_eq!(stdout.trim(), expected.trim(), "{name}");
            let found: Vec<&&str> = REPORTS.iter().filter(|r| stderr.contains(**r)).collect();
            assert!(found.is_empty(), "{name}: oclgrind reported {found:?}:\n{stderr}");
            runs += 1;
        }
    }
    std::fs::remove_file(&vendors).unwrap();
    assert_eq!(runs, FILES.len());
}
