//! `--device opencl` end to end: without OpenCL support the device is a clear error; with it
//! (POCL in CI), fused kernels run on the device and tensors cross between host and device
//! only where they must — asserted on the VM's copy statistics.

use relay::{Device, Error, Program};

fn opencl() -> Device {
    Device::OpenCl { selector: "opencl".into(), binaries: None }
}

/// Three fused kernels in a row on one input and a weight: dense+bias, then softmax (its own
/// reductions), then a scaled add; and a host kernel (`sort`, a reference kernel only) reading
/// a device output. (`shape_of` of a static type is a constant at -O2: FoldConstant.)
const CHAIN: &str = r#"#[version = "0.0.5"]
def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(16, 8), float32]) {
  let %h = nn.relu(nn.bias_add(nn.dense(%x, %w), ones(shape=[16], dtype="float32")));
  let %s = nn.softmax(%h);
  let %t = nn.dense(%s, transpose(%w));
  %t * 2f + %x
}

def @host(%x: Tensor[(4, 8), float32], %w: Tensor[(16, 8), float32]) {
  let %h = nn.dense(%x, %w) * 3f;
  (sort(%h), %h + 1f)
}
"#;

#[cfg(not(feature = "opencl"))]
#[test]
fn without_the_feature_the_device_is_a_clear_error() {
    match Program::builder().source("chain.relay", CHAIN).opt_level(2).device(opencl()).build() {
        Err(Error::Device(e)) => assert!(e.to_string().contains("not compiled in"), "{e}"),
        other => panic!("expected a device error, got {:?}", other.map(|_| ())),
    }
}

#[cfg(not(feature = "opencl"))]
#[test]
fn the_cli_says_so_and_exits_as_for_bad_input() {
    let file = std::env::temp_dir().join(format!("relay-device-{}.relay", std::process::id()));
    std::fs::write(&file, CHAIN).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_relay-vm"))
        .args(["run", "--device", "opencl", "--args", "[[[0]], [[0]]]"])
        .arg(&file)
        .output()
        .unwrap();
    std::fs::remove_file(&file).unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("OpenCL support is not compiled in"));
}

/// `relay-vm ARGS [FILE]` (FILE holding `source` when given) with no OpenCL platform
/// registered — an empty `OCL_ICD_VENDORS` directory for the ICD loader — as a machine without
/// a runtime looks to an `opencl` build.
#[cfg(feature = "opencl")]
fn without_a_platform(args: &[&str], source: Option<&str>) -> (Option<i32>, String, String) {
    let empty = std::env::temp_dir().join(format!("relay-no-icd-{}-{}", std::process::id(), args[0]));
    std::fs::create_dir_all(&empty).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_relay-vm"));
    cmd.args(args).env("OCL_ICD_VENDORS", &empty);
    let file = empty.join("program.relay");
    if let Some(source) = source {
        std::fs::write(&file, source).unwrap();
        cmd.arg(&file);
    }
    let out = cmd.output().unwrap();
    std::fs::remove_dir_all(&empty).unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[cfg(feature = "opencl")]
#[test]
fn without_an_opencl_platform_the_cpu_runs_and_the_device_is_a_clear_error() {
    let (code, devices, _) = without_a_platform(&["devices"], None);
    assert_eq!(code, Some(0));
    assert!(devices.starts_with("cpu ") && devices.contains("no platform"), "{devices}");
    let add = "def @main(%x: Tensor[(2), float32]) { %x + 1f }";
    let (code, out, err) = without_a_platform(&["run", "--args", "[[1, 2]]"], Some(add));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains('2') && out.contains('3'), "{out}");
    let (code, _, err) =
        without_a_platform(&["run", "--device", "opencl", "--args", "[[[0]], [[0]]]"], Some(CHAIN));
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("no OpenCL device matches `opencl` (present: none)"), "{err}");
}

#[cfg(feature = "opencl")]
mod on_device {
    use super::*;
    use relay::vm::Value;

    /// The program on the OpenCL device, or `None` when no OpenCL runtime or device is
    /// present (said on stderr), unless `RELAY_REQUIRE_OPENCL=1` (CI), which fails instead.
    fn program(source: &str) -> Option<Program> {
        match Program::builder().source("chain.relay", source).opt_level(2).device(opencl()).build() {
            Ok(p) => Some(p),
            Err(Error::Device(e)) if !relay::devices::opencl::device_required() => {
                eprintln!("skipped: {e}");
                None
            }
            Err(e) => panic!("{e}"),
        }
    }

    fn inputs() -> (Value, Value) {
        let x: Vec<f32> = (0..32).map(|i| (i as f32 * 0.37).sin()).collect();
        let w: Vec<f32> = (0..128).map(|i| (i as f32 * 0.11).cos() * 0.5).collect();
        (relay::tensor(vec![4, 8], x).unwrap(), relay::tensor(vec![16, 8], w).unwrap())
    }

    fn floats(v: &Value) -> Vec<f32> {
        match v {
            Value::Tensor(t) => t.as_slice::<f32>().unwrap().to_vec(),
            other => panic!("a {} in the result", other.kind()),
        }
    }

    fn close(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= 1e-5 * x.abs().max(1.0), "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn a_chain_of_fused_kernels_copies_each_input_up_once_and_the_result_down_once() {
        let Some(program) = program(CHAIN) else { return };
        let cpu = Program::builder().source("chain.relay", CHAIN).build().unwrap();
        let (x, w) = inputs();
        let want = cpu.invoke(&mut cpu.vm(), "main", vec![x.clone(), w.clone()]).unwrap();
        let mut vm = program.vm();
        let got = program.invoke(&mut vm, "main", vec![x.clone(), w.clone()]).unwrap();
        close(&floats(&got), &floats(&want));
        let s = vm.copy_stats();
        assert!(s.device_calls >= 3, "{s}");
        // x (128 bytes) and w (512 bytes) up, each once though each feeds two kernels, and
        // the bias `ones(shape=[16])` (64 bytes), which FoldConstant (-O2) made a constant;
        // nothing else: `2f` is computed on the device.
        assert_eq!((s.to_device, s.to_device_bytes), (3, 128 + 512 + 64), "{s}");
        assert_eq!((s.to_host, s.to_host_bytes), (1, 128), "{s}");

        // The host still holds `x` and `w`: their uploads are reused by the next run.
        vm.reset_memory_stats();
        program.invoke(&mut vm, "main", vec![x, w.clone()]).unwrap();
        assert_eq!((vm.copy_stats().to_device, vm.copy_stats().to_host), (0, 1));
        // A new `x` goes up, once, although only the VM holds it.
        vm.reset_memory_stats();
        let x2 = relay::tensor(vec![4, 8], vec![0.5f32; 32]).unwrap();
        program.invoke(&mut vm, "main", vec![x2, w]).unwrap();
        let s = vm.copy_stats();
        assert_eq!((s.to_device, s.to_device_bytes, s.to_host, s.to_host_bytes), (1, 128, 1, 128), "{s}");
    }

    #[test]
    fn host_kernels_and_results_inside_tuples_bring_device_tensors_home() {
        let Some(program) = program(CHAIN) else { return };
        let cpu = Program::builder().source("chain.relay", CHAIN).build().unwrap();
        let (x, w) = inputs();
        let want = cpu.invoke(&mut cpu.vm(), "host", vec![x.clone(), w.clone()]).unwrap();
        let mut vm = program.vm();
        let got = program.invoke(&mut vm, "host", vec![x, w]).unwrap();
        let (Value::Adt(got), Value::Adt(want)) = (&got, &want) else { panic!("tuples") };
        close(&floats(&got.fields[0]), &floats(&want.fields[0]));
        close(&floats(&got.fields[1]), &floats(&want.fields[1]));
        assert!(
            program.executable().disassemble().contains("DeviceCopy"),
            "the device plan marks the crossing"
        );
        let s = vm.copy_stats();
        // x, w and the scalar `1f` go up.
        assert_eq!((s.to_device, s.to_device_bytes), (3, 128 + 512 + 4), "{s}");
        // `%h` comes down once for `sort` (a host kernel; the plan's `DeviceCopy` puts
        // the host copy in its register) and is not uploaded again for `%h + 1f`, whose
        // result comes down with the tuple.
        assert_eq!((s.to_host, s.to_host_bytes), (2, 256 + 256), "{s}");
    }

    #[test]
    fn programs_saved_as_binaries_load_back_and_give_the_same_results() {
        let Some(built) = program(CHAIN) else { return };
        let dir = std::env::temp_dir().join(format!("relay-opencl-binaries-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let dev = opencl().open().unwrap().remove(0);
        let n = relay::opencl_files::emit(built.executable(), &dir, Some(&dev)).unwrap();
        assert!(n >= 4, "{n} programs");
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
        let first = &manifest["kernels"][0];
        assert!(first["file"].as_str().unwrap().ends_with(".cl"), "{first}");
        assert!(
            first["buffers"][0]["dtype"] == "float32" && first["launches"][0]["global"].as_u64() > Some(0)
        );

        let from_binaries = Device::OpenCl { selector: "opencl".into(), binaries: Some(dir.clone()) };
        let loaded = Program::builder()
            .source("chain.relay", CHAIN)
            .opt_level(2)
            .device(from_binaries.clone())
            .build()
            .unwrap();
        let (x, w) = inputs();
        for f in ["main", "host"] {
            let a = built.invoke(&mut built.vm(), f, vec![x.clone(), w.clone()]).unwrap();
            let b = loaded.invoke(&mut loaded.vm(), f, vec![x.clone(), w.clone()]).unwrap();
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "@{f}");
        }

        // Another program's kernels are not in the directory: an error, not a source build.
        let other = "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(3), float32]) { exp(%x) }";
        match Program::builder()
            .source("other.relay", other)
            .opt_level(2)
            .device(from_binaries.clone())
            .build()
        {
            Err(Error::Kernel { message, .. }) => {
                assert!(message.contains("no prebuilt OpenCL binary"), "{message}")
            }
            r => panic!("expected a missing-binary error, got {:?}", r.map(|_| ())),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// `relay-vm run --stats ARGS CHAIN` with POCL's two devices (`pthread` and `basic`) as
/// platform 0's devices 0 and 1: `(the result's elements, the stats line, stderr)`, or `None`
/// when they are not there (a machine without POCL), unless `RELAY_REQUIRE_OPENCL=1`.
#[cfg(feature = "opencl")]
fn run_on_two_devices(device: &str) -> Option<(Vec<f64>, String)> {
    let file = std::env::temp_dir().join(format!("relay-two-devices-{}.relay", std::process::id()));
    std::fs::write(&file, CHAIN).unwrap();
    let x: Vec<String> =
        (0..4).map(|i| format!("[{}]", vec![format!("{}", i as f32 * 0.25 - 0.5); 8].join(","))).collect();
    let w: Vec<String> =
        (0..16).map(|i| format!("[{}]", vec![format!("{}", (i % 5) as f32 * 0.1); 8].join(","))).collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_relay-vm"))
        .args(["run", "--stats", "--device", device, "--args"])
        .arg(format!("[[{}], [{}]]", x.join(","), w.join(",")))
        .arg(&file)
        .env("POCL_DEVICES", "pthread basic")
        .output()
        .unwrap();
    std::fs::remove_file(&file).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.code() == Some(3)
        && stderr.contains("no OpenCL device matches")
        && !relay::devices::opencl::device_required()
    {
        eprintln!("skipped: {stderr}");
        return None;
    }
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let data = result["data"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    let stats = stderr.lines().find(|l| l.starts_with("device ")).unwrap().to_string();
    Some((data, stats))
}

/// The copies of a `--stats` line: `(host→device, device→host)`.
#[cfg(feature = "opencl")]
fn copies(stats: &str) -> (u64, u64) {
    let count = |after: &str| -> u64 {
        let rest = &stats[stats.find(after).unwrap() + after.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    (count("host→device "), count("device→host "))
}

/// Issue #15's test of the device trait: one program whose fused kernels alternate between
/// two OpenCL devices gives the CPU's results, its tensors crossing from one device to the
/// other (through the host, counted both ways) where consecutive kernels differ in device.
#[cfg(feature = "opencl")]
#[test]
fn kernels_split_across_two_devices_give_the_cpu_results() {
    let Some((one, one_stats)) = run_on_two_devices("opencl:0:0") else { return };
    let Some((two, two_stats)) = run_on_two_devices("opencl:0:0,opencl:0:1") else { return };
    let (cpu, _) = run_on_two_devices("cpu").unwrap();
    for got in [&one, &two] {
        assert_eq!(got.len(), cpu.len());
        for (a, b) in got.iter().zip(&cpu) {
            assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "{got:?} vs {cpu:?}");
        }
    }
    let ((up1, down1), (up2, down2)) = (copies(&one_stats), copies(&two_stats));
    // On one device only the result comes down; on two, a kernel whose input the other
    // device made copies it down and up again (and inputs go up to both devices).
    assert_eq!(down1, 1, "{one_stats}");
    assert!(down2 > down1 && up2 > up1, "{one_stats}\n{two_stats}");
}
