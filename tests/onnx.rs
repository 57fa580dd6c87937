//! The ONNX importer against onnxruntime: every model `tests/onnx/make_models.py` wrote (one
//! graph per supported operator, an MLP with a dynamic batch, a small CNN) is imported, run
//! on the VM with the script's inputs, and compared with onnxruntime's outputs; so is every
//! PyTorch export of `tests/onnx/torch/export.py` (LSTM, GRU, a transformer encoder layer, a
//! scripted loop, a narrow VGG-11), against PyTorch's outputs too. A `.json`'s `also` runs
//! the same compiled model again at other sizes of a dynamic dimension. Tolerance:
//! `|ours - ort| <= 1e-4 * |ort| + 1e-5` per element (1e-4 relative, with an absolute floor
//! for results near zero); integer and boolean outputs must be equal.

use relay::compiler::ir::sanitize_name;
use relay::Program;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};

/// The `.onnx` files of `tests/` folder `folder`, sorted.
fn models(folder: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(folder);
    let mut models: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "onnx"))
        .collect();
    models.sort();
    models
}

/// Imports and compiles `model` once and runs it on the inputs of its `.json` and of each
/// entry of the `.json`'s `also` (the same model at other sizes of a dynamic dimension),
/// returning, per run, the result as JSON (an array for several outputs) and the run's part of
/// the `.json` (`inputs` and the references).
fn run(model: &Path, opt_level: u8) -> Result<Vec<(Json, Json)>, String> {
    let imported = relay::onnx::import(&std::fs::read(model).unwrap()).map_err(|e| format!("import: {e}"))?;
    let mut doc: Json =
        serde_json::from_str(&std::fs::read_to_string(model.with_extension("json")).unwrap()).unwrap();
    let program = Program::builder()
        .source("model.relay", imported.text.clone())
        .params_bytes("model.onnx", imported.weights.clone())
        .opt_level(opt_level)
        .build()
        .map_err(|e| format!("{e}\n{}", imported.text))?;
    let f = program.function("main").map_err(|e| e.to_string())?;
    let weights = relay::params::bind_params(f, &imported.weights)?.values;
    let also = doc.as_object_mut().unwrap().remove("also");
    let runs = std::iter::once(doc).chain(also.into_iter().flat_map(|a| a.as_array().unwrap().clone()));
    let mut vm = program.vm();
    let mut results = vec![];
    for doc in runs {
        let mut args: Vec<Option<relay::vm::Value>> = vec![None; f.param_types.len()];
        for (i, v) in &weights {
            args[*i] = Some(v.clone());
        }
        for (name, value) in doc["inputs"].as_object().unwrap() {
            let i = f
                .param_names
                .iter()
                .position(|p| *p == sanitize_name(name))
                .ok_or(format!("no parameter for {name}"))?;
            args[i] = Some(relay::json::from_json(program.executable(), &f.param_types[i], value)?);
        }
        let args: Vec<_> =
            args.into_iter().map(|a| a.ok_or("a parameter is unbound")).collect::<Result<_, _>>()?;
        let result = program.invoke(&mut vm, "main", args).map_err(|e| e.to_string())?;
        let printed = relay::json::to_json(program.executable(), &f.ret_type, &result)?;
        results.push((serde_json::from_str(&printed).unwrap(), doc));
    }
    Ok(results)
}

/// Why `ours` differs from onnxruntime's `expected` tensor, if it does.
fn compare(ours: &Json, expected: &Json) -> Result<(), String> {
    if ours["shape"] != expected["shape"] || ours["dtype"] != expected["dtype"] {
        return Err(format!(
            "got {} {}, expected {} {}",
            ours["dtype"], ours["shape"], expected["dtype"], expected["shape"]
        ));
    }
    let (a, b) = (ours["data"].as_array().unwrap(), expected["data"].as_array().unwrap());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let close = match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) if expected["dtype"] == "float32" => (x - y).abs() <= 1e-4 * y.abs() + 1e-5,
            // About two float16 steps: both round once per operator, summing in other orders.
            (Some(x), Some(y)) if expected["dtype"] == "float16" => (x - y).abs() <= 2e-3 * y.abs() + 1e-3,
            _ => x == y,
        };
        if !close {
            return Err(format!("element {i}: {x} vs onnxruntime's {y}"));
        }
    }
    Ok(())
}

/// Why `ours` (one tensor, or an array of them) differs from the `expected` tensors.
fn compare_all(ours: &Json, expected: &Json) -> Result<(), String> {
    match expected.as_array().unwrap().as_slice() {
        [one] => compare(ours, one),
        many => ours
            .as_array()
            .ok_or("not a tuple".to_string())
            .and_then(|o| o.iter().zip(many).try_for_each(|(x, y)| compare(x, y))),
    }
}

/// Runs every model of `folder` at `opt_level` and compares it with each reference output
/// list its `.json` has under the keys `references`.
fn check_all(folder: &str, opt_level: u8, references: &[&str]) {
    let mut failures = vec![];
    let all = models(folder);
    for model in &all {
        let outcome = run(model, opt_level).and_then(|runs| {
            runs.iter().enumerate().try_for_each(|(k, (ours, doc))| {
                references
                    .iter()
                    .try_for_each(|r| compare_all(ours, &doc[r]).map_err(|e| format!("run {k}, {r}: {e}")))
            })
        });
        if let Err(e) = outcome {
            failures.push(format!("{}: {e}", model.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} models differ:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

/// The operator models of `make_models.py`, against onnxruntime.
fn check_operators(opt_level: u8) {
    let count = models("onnx").len();
    assert!(count > 80, "tests/onnx has {count} models");
    check_all("onnx", opt_level, &["outputs"]);
}

/// The PyTorch exports, against onnxruntime and PyTorch.
fn check_pytorch(opt_level: u8) {
    let count = models("onnx/torch").len();
    assert!(count >= 4, "tests/onnx/torch has {count} models");
    check_all("onnx/torch", opt_level, &["outputs", "torch"]);
}

#[test]
fn imported_models_match_onnxruntime() {
    check_operators(relay::DEFAULT_OPT_LEVEL);
}

#[test]
fn imported_models_match_onnxruntime_on_reference_kernels() {
    check_operators(0);
}

#[test]
fn pytorch_exports_match_pytorch_and_onnxruntime() {
    check_pytorch(relay::DEFAULT_OPT_LEVEL);
}

#[test]
fn pytorch_exports_match_pytorch_and_onnxruntime_on_reference_kernels() {
    check_pytorch(0);
}

/// `relay-vm` with `args`; (exit code, stdout, stderr).
fn relay_vm(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_relay-vm")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn import_writes_text_and_weights_that_run_like_the_model_itself() {
    let dir = std::env::temp_dir().join(format!("relay-onnx-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/onnx/mlp.onnx");
    let (text, weights) = (dir.join("mlp.relay"), dir.join("mlp.safetensors"));
    let (code, _, err) = relay_vm(&[
        "import",
        model.to_str().unwrap(),
        "-o",
        text.to_str().unwrap(),
        "--params-out",
        weights.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&text).unwrap().contains("%x: Tensor[(?, 8), float32]"));
    let args = "[[[1, 2, 3, 4, 5, 6, 7, 8], [0, 0, 0, 0, 0, 0, 0, 1]]]";
    let imported =
        relay_vm(&["run", text.to_str().unwrap(), "--params", weights.to_str().unwrap(), "--args", args]);
    // By name, as the ONNX graph calls its input.
    let named = format!("{{\"x\": {}}}", &args[1..args.len() - 1]);
    let direct = relay_vm(&["run", model.to_str().unwrap(), "--args", &named]);
    assert_eq!(imported.0, 0, "{}", imported.2);
    assert_eq!(imported, direct);
    assert!(direct.1.contains("\"shape\":[2,4]"), "{}", direct.1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_model_is_a_bad_input_with_the_importers_message() {
    let dir = std::env::temp_dir().join(format!("relay-onnx-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("truncated.onnx");
    let bytes = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/onnx/cnn.onnx")).unwrap();
    std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
    let (code, _, err) = relay_vm(&["run", bad.to_str().unwrap(), "--args", "[]"]);
    assert_eq!(code, 3);
    assert!(err.contains("truncated.onnx: not an ONNX model"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_imports_onnx_and_jsonl_inputs_are_keyed_by_input_name() {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/onnx/mlp.onnx");
    let model = model.to_str().unwrap();
    let (code, out, err) = relay_vm(&[
        "bench",
        model,
        "--args",
        "{\"x\": [[1, 2, 3, 4, 5, 6, 7, 8]]}",
        "--reps",
        "2",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"reps\":2"), "{out}");
    let dir = std::env::temp_dir().join(format!("relay-onnx-jsonl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lines = dir.join("inputs.jsonl");
    let rows = ["[[1, 2, 3, 4, 5, 6, 7, 8]]", "[[0, 0, 0, 0, 0, 0, 0, 1], [1, 1, 1, 1, 1, 1, 1, 1]]"];
    std::fs::write(&lines, rows.map(|r| format!("{{\"x\": {r}}}\n")).concat()).unwrap();
    let (code, out, err) = relay_vm(&["run", model, "--input", lines.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // One output line per input line, each what `--args` by name gives.
    let each: Vec<String> =
        rows.iter().map(|r| relay_vm(&["run", model, "--args", &format!("{{\"x\": {r}}}")]).1).collect();
    assert_eq!(out, each.concat());
    std::fs::remove_dir_all(&dir).unwrap();
}
