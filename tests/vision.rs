//! The Relay paper's vision models, exported from PyTorch by `examples/vision/export.py`, against
//! the references the script committed: each model in `examples/vision/` is imported, run on
//! its `.ref.safetensors` input and compared with PyTorch's and onnxruntime's outputs
//! (`|ours - reference| <= 1e-4 |reference| + 1e-5` per element, the rule of `tests/onnx.rs`),
//! through the VM at every opt-level and through the reference interpreter (`relay::interp`,
//! the specification the passes are checked against). At every opt-level the VM's result is
//! the same bits with its frame arenas off (`reuse_memory: false`), and the planned runs
//! placed tensors in arenas.
//! ResNet-18 and VGG-16 are too large for git and are checked by `benches/vision.py`. The
//! trained digits CNN must classify its test set exactly as PyTorch did.

use relay::interp::Interpreter;
use relay::vm::VmConfig;
use relay::Program;
use safetensors::SafeTensors;
use std::path::{Path, PathBuf};

fn vision(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/vision").join(file)
}

/// The float32 tensor `name` of safetensors file `file`.
fn reference(file: &SafeTensors, name: &str) -> Vec<f32> {
    let view = file.tensor(name).unwrap();
    view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// Imports `NAME.onnx`, runs it on the `input` of `NAME.ref.safetensors` (on the VM at each
/// opt-level, and on the interpreter) and compares each output with the file's `torch` and
/// `onnxruntime` outputs.
fn check(name: &str) {
    let model = std::fs::read(vision(&format!("{name}.onnx"))).unwrap();
    let refs = std::fs::read(vision(&format!("{name}.ref.safetensors"))).unwrap();
    let imported = relay::onnx::import(&model).unwrap();
    let mut results = vec![];
    let mut arena_allocs = 0;
    for level in [0, 1, 2, 3] {
        let program = Program::builder()
            .source("model.relay", imported.text.clone())
            .params_bytes("model.onnx", imported.weights.clone())
            .opt_level(level)
            .build()
            .unwrap();
        let f = program.function("main").unwrap();
        let mut args = vec![None; f.param_types.len()];
        for bytes in [&imported.weights, &refs] {
            for (i, v) in relay::params::bind_params(f, bytes).unwrap().values {
                args[i] = Some(v);
            }
        }
        let args: Vec<_> = args.into_iter().map(|a| a.expect("every parameter is bound")).collect();
        let mut vm = program.vm();
        let planned = program.invoke(&mut vm, "main", args.clone()).unwrap();
        arena_allocs += vm.memory_stats().arena_allocs;
        let mut unplanned = program.vm_with(VmConfig { reuse_memory: false, ..VmConfig::default() });
        let pool_only = program.invoke(&mut unplanned, "main", args.clone()).unwrap();
        assert_eq!(planned.to_tensor(), pool_only.to_tensor(), "{name} at -O{level}: arenas on and off");
        assert_eq!(unplanned.memory_stats().arena_allocs, 0);
        results.push((format!("the VM at -O{level}"), planned));
        if level == 0 {
            let interpreter = Interpreter::compile("model.relay", &imported.text).unwrap();
            results.push(("the interpreter".to_string(), interpreter.invoke("main", args).unwrap()));
        }
    }
    assert!(arena_allocs > 0, "{name}: no tensor was placed in a frame arena");
    let refs = SafeTensors::deserialize(&refs).unwrap();
    for (executor, result) in results {
        let ours = result.to_tensor().expect("a tensor result");
        let ours: &[f32] = ours.as_slice().unwrap();
        for source in ["torch", "onnxruntime"] {
            let expected = reference(&refs, source);
            assert_eq!(ours.len(), expected.len(), "{name}: output size");
            let bad: Vec<String> = ours
                .iter()
                .zip(&expected)
                .enumerate()
                .filter(|(_, (x, y))| (*x - *y).abs() > 1e-4 * y.abs() + 1e-5)
                .take(5)
                .map(|(i, (x, y))| format!("[{i}] {x} vs {y}"))
                .collect();
            assert!(bad.is_empty(), "{name} on {executor} differs from {source}: {}", bad.join(", "));
        }
    }
}

#[test]
fn dqn_matches_pytorch_and_onnxruntime() {
    check("dqn");
}

#[test]
fn squeezenet1_1_matches_pytorch_and_onnxruntime() {
    check("squeezenet1_1");
}

#[test]
fn mobilenet_v2_matches_pytorch_and_onnxruntime() {
    check("mobilenet_v2");
}

#[test]
fn the_digits_cnn_classifies_its_test_set_as_pytorch_did() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_relay-vm"))
        .args(["run", vision("digits/digits.onnx").to_str().unwrap()])
        .args(["--input", vision("digits/test.jsonl").to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = std::fs::read_to_string(vision("digits/test.jsonl")).unwrap();
    let pytorch: Vec<i64> = lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["pytorch"].as_i64().unwrap())
        .collect();
    let ours: Vec<i64> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|r| r["prediction"].as_i64().unwrap())
        .collect();
    assert_eq!(ours, pytorch);
    // The summary goes to stderr, so that stdout is JSONL only.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("accuracy: 442/450 = 98.22%"), "{stderr}");
    assert!(!stdout.contains("accuracy"));
}
