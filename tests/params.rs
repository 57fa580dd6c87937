//! `--params` with PyTorch-style weight files: names bound as written or through the
//! sanitising rule, float16/bfloat16 and integer tensors converted where exact, extra tensors
//! ignored with one warning (or refused with `--strict-params`), and a missing weight named.
//! The safetensors files are written here with the `safetensors` crate, and one by the Python
//! package (`tests/params/make_every_dtype.py`).

use relay::devices::Tensor;
use relay::params::bind_params;
use relay::vm::Value;
use relay::Program;
use safetensors::tensor::TensorView;
use safetensors::Dtype;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_relay-vm");

/// A two-layer MLP whose weights are named as in a PyTorch `state_dict`: `%fc1.weight` as
/// written, `%fc1_bias` and `%fc2_weight` through the sanitising rule.
const MLP: &str = "def @main(%x: Tensor[(1, 2), float32], %fc1.weight: Tensor[(2, 2), float32], \
    %fc1_bias: Tensor[(2), float32], %fc2_weight: Tensor[(1, 2), float32], %steps: Tensor[(2), int32]) {\n\
    (nn.dense(nn.relu(nn.bias_add(nn.dense(%x, %fc1.weight), %fc1_bias)), %fc2_weight), %steps)\n}\n";

/// A safetensors file of `(name, dtype, shape, little-endian bytes)`.
fn file(tensors: &[(&str, Dtype, Vec<usize>, Vec<u8>)]) -> Vec<u8> {
    let views: Vec<(&str, TensorView<'_>)> =
        tensors.iter().map(|(n, d, s, b)| (*n, TensorView::new(*d, s.clone(), b).unwrap())).collect();
    safetensors::serialize(views, None).unwrap()
}

fn f16(xs: &[f32]) -> Vec<u8> {
    xs.iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect()
}

fn bf16(xs: &[f32]) -> Vec<u8> {
    xs.iter().flat_map(|&x| half::bf16::from_f32(x).to_le_bytes()).collect()
}

fn i64s(xs: &[i64]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(xs: &[f32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The PyTorch `state_dict` of `MLP` in half precision, with a batch-norm counter no
/// parameter takes.
fn state_dict(with_fc2: bool) -> Vec<u8> {
    let mut t = vec![
        ("fc1.weight", Dtype::F16, vec![2, 2], f16(&[1.0, 0.0, 0.0, -1.0])),
        ("fc1.bias", Dtype::BF16, vec![2], bf16(&[0.5, 0.25])),
        ("steps", Dtype::I64, vec![2], i64s(&[3, -4])),
        ("bn1.num_batches_tracked", Dtype::I64, vec![], i64s(&[7])),
    ];
    if with_fc2 {
        t.push(("fc2.weight", Dtype::F32, vec![1, 2], f32s(&[2.0, 4.0])));
    }
    file(&t)
}

#[test]
fn pytorch_names_and_dtypes_bind() {
    let program = Program::builder().source("mlp.relay", MLP).build().unwrap();
    let main = program.function("main").unwrap();
    let bound = bind_params(main, &state_dict(true)).unwrap();
    assert_eq!(bound.values.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(bound.unused, ["bn1.num_batches_tracked"]);
    let tensor = |i: usize| match &bound.values.iter().find(|(j, _)| *j == i).unwrap().1 {
        Value::Tensor(t) => (**t).clone(),
        v => panic!("not a tensor: {}", v.kind()),
    };
    assert_eq!(tensor(2), Tensor::from_vec(vec![2], vec![0.5f32, 0.25]).unwrap());
    assert_eq!(tensor(4), Tensor::from_vec(vec![2], vec![3i32, -4]).unwrap());
}

#[test]
fn inexact_conversions_are_refused() {
    let program = Program::builder().source("mlp.relay", MLP).build().unwrap();
    let main = program.function("main").unwrap();
    let big = file(&[("steps", Dtype::I64, vec![2], i64s(&[1, 1 << 40]))]);
    let e = bind_params(main, &big).unwrap_err();
    assert!(e.contains("tensor `steps`") && e.contains("not every element converts exactly"), "{e}");
    let fractional = file(&[("steps", Dtype::F32, vec![2], f32s(&[1.0, 1.5]))]);
    assert!(bind_params(main, &fractional).is_err());
    let whole = file(&[("steps", Dtype::F32, vec![2], f32s(&[1.0, 2.0]))]);
    assert!(bind_params(main, &whole).is_ok(), "whole floats convert to int32 exactly");
}

#[test]
fn the_cli_warns_once_refuses_when_strict_and_names_a_missing_weight() {
    let dir = std::env::temp_dir().join(format!("relay-vm-params-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let relay = dir.join("mlp.relay");
    std::fs::write(&relay, MLP).unwrap();
    let full = dir.join("full.safetensors");
    std::fs::write(&full, state_dict(true)).unwrap();
    let missing = dir.join("mlp.safetensors");
    std::fs::write(&missing, state_dict(false)).unwrap();
    let run = |weights: &std::path::Path, extra: &[&str]| {
        let mut c = Command::new(BIN);
        c.args(["run", relay.to_str().unwrap(), "--params", weights.to_str().unwrap()]);
        c.args(["--args", "[[[1, 2]]]", "--format", "text"]).args(extra);
        let out = c.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, stdout, stderr) = run(&full, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    // relu([1.5, -1.75]) = [1.5, 0]; · [2, 4] = 3.
    assert_eq!(stdout, "(float32[[3]], int32[3, -4])\n");
    assert_eq!(stderr.matches("warning").count(), 1, "{stderr}");
    assert!(stderr.contains("bn1.num_batches_tracked"), "{stderr}");
    // Weights made constants compute the same, with the same warning.
    let (code, unbound, stderr) = run(&full, &["--bind-params"]);
    assert_eq!((code, unbound.as_str()), (Some(0), stdout.as_str()), "{stderr}");
    assert_eq!(stderr.matches("warning").count(), 1, "{stderr}");
    let (code, _, stderr) = run(&full, &["--strict-params"]);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("error: ") && stderr.contains("bn1.num_batches_tracked"), "{stderr}");
    let (code, _, stderr) = run(&missing, &[]);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("`%fc2_weight` is not in")
            && stderr
                .contains("mlp.safetensors (it has: bn1.num_batches_tracked, fc1.bias, fc1.weight, steps)"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn weights_of_the_parameters_dtype_are_borrowed_from_the_mapped_file() {
    let path = std::env::temp_dir().join(format!("relay-vm-params-map-{}.safetensors", std::process::id()));
    std::fs::write(&path, state_dict(true)).unwrap();
    let program = Program::builder().source("mlp.relay", MLP).build().unwrap();
    let main = program.function("main").unwrap();
    let bytes = relay::params::map_file(&path).unwrap();
    let bound = relay::params::bind_shared_params(main, &bytes).unwrap();
    let storage = |i: usize| match &bound.values.iter().find(|(j, _)| *j == i).unwrap().1 {
        Value::Tensor(t) => t.storage().clone(),
        v => panic!("not a tensor: {}", v.kind()),
    };
    // float32 `fc2.weight` is read in place; float16 and int64 tensors are converted copies.
    let fc2 = storage(3);
    assert!(fc2.is_shared());
    let start = fc2.as_ptr() as usize - bytes.as_bytes().as_ptr() as usize;
    assert!(start < bytes.len(), "points into the mapping");
    assert!(!storage(1).is_shared() && !storage(4).is_shared());
    // Writing to a borrowed tensor copies it first: the mapping is never written.
    let mut t = Tensor::from_storage(vec![1, 2], fc2).unwrap();
    t.as_mut_slice::<f32>().unwrap()[0] = 9.0;
    assert_eq!(t.as_slice::<f32>().unwrap(), [9.0, 4.0]);
    assert_eq!(&bytes.as_bytes()[start..start + 4], 2f32.to_le_bytes());
    // The program built from the file computes what the in-memory one does.
    let x = relay::tensor(vec![1, 2], vec![1f32, 2.0]).unwrap();
    let program = Program::builder().source("mlp.relay", MLP).params(&path).build().unwrap();
    let out = program.run(&mut program.vm(), vec![x]).unwrap();
    let Value::Adt(tuple) = out else { panic!("not a tuple") };
    let Value::Tensor(y) = &tuple.fields[0] else { panic!("not a tensor") };
    assert_eq!(y.as_slice::<f32>().unwrap(), [3.0]);
    let _ = std::fs::remove_file(&path);
}

/// Every dtype `--params` reads binds a parameter of that dtype, from a file written by the
/// `safetensors` Python package (`tests/params/make_every_dtype.py`, through PyTorch).
#[test]
fn every_safetensors_dtype_binds_from_a_python_written_file() {
    let types = [
        ("f16", "float16"),
        ("bf16", "bfloat16"),
        ("f32", "float32"),
        ("f64", "float64"),
        ("i8", "int8"),
        ("u8", "uint8"),
        ("i16", "int16"),
        ("i32", "int32"),
        ("i64", "int64"),
        ("u32", "uint32"),
        ("flag", "bool"),
    ];
    let params: Vec<String> = types.iter().map(|(n, d)| format!("%{n}: Tensor[(3), {d}]")).collect();
    let fields: Vec<String> = types.iter().map(|(n, _)| format!("%{n}")).collect();
    let source = format!("def @main({}) {{\n  ({})\n}}\n", params.join(", "), fields.join(", "));
    let program = Program::builder().source("every.relay", &source).build().unwrap();
    let main = program.function("main").unwrap();
    let bound = bind_params(main, include_bytes!("params/every_dtype.safetensors")).unwrap();
    assert!(bound.unused.is_empty(), "{:?}", bound.unused);
    let tensor = |name: &str| {
        let i = types.iter().position(|(n, _)| *n == name).unwrap();
        match &bound.values.iter().find(|(j, _)| *j == i).unwrap().1 {
            Value::Tensor(t) => (**t).clone(),
            v => panic!("not a tensor: {}", v.kind()),
        }
    };
    let t = |v: Vec<_>| Tensor::from_vec(vec![3], v).unwrap();
    let halves = [1.5, -2.0, 65504.0].map(half::f16::from_f32).to_vec();
    assert_eq!(tensor("f16"), Tensor::from_vec(vec![3], halves).unwrap());
    let brains = [0.5, -3.0, 1e38].map(half::bf16::from_f32).to_vec();
    assert_eq!(tensor("bf16"), Tensor::from_vec(vec![3], brains).unwrap());
    assert_eq!(tensor("f32"), t(vec![0.25f32, -1.0, 3.0]));
    assert_eq!(tensor("f64"), Tensor::from_vec(vec![3], vec![0.125f64, -1.0, 1e300]).unwrap());
    assert_eq!(tensor("i8"), Tensor::from_vec(vec![3], vec![-128i8, 0, 127]).unwrap());
    assert_eq!(tensor("u8"), Tensor::from_vec(vec![3], vec![0u8, 1, 255]).unwrap());
    assert_eq!(tensor("i16"), Tensor::from_vec(vec![3], vec![-32768i16, 2, 32767]).unwrap());
    assert_eq!(tensor("i32"), Tensor::from_vec(vec![3], vec![-7i32, 0, 7]).unwrap());
    assert_eq!(tensor("i64"), Tensor::from_vec(vec![3], vec![-(1i64 << 40), 0, 1 << 40]).unwrap());
    assert_eq!(tensor("u32"), Tensor::from_vec(vec![3], vec![0u32, 1, u32::MAX]).unwrap());
    assert_eq!(tensor("flag"), Tensor::from_vec(vec![3], vec![true, false, true]).unwrap());
}

#[test]
fn weights_bound_as_constants_leave_the_signature_at_level_2_only() {
    let dir = std::env::temp_dir().join(format!("relay-vm-bind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let weights = dir.join("full.safetensors");
    std::fs::write(&weights, state_dict(true)).unwrap();
    let build = |bind: bool, level: u8| {
        let b =
            Program::builder().source("mlp.relay", MLP).params(&weights).bind_params(bind).opt_level(level);
        b.build().unwrap()
    };
    let params = |p: &Program| p.function("main").unwrap().param_names.clone();
    assert_eq!(params(&build(true, 2)), ["x"]);
    assert_eq!(params(&build(false, 2)).len(), 5);
    assert_eq!(params(&build(true, 1)).len(), 5, "levels 0 and 1 keep parameters");
    let bound = build(true, 2);
    assert!(bound.unused_weights() == ["bn1.num_batches_tracked"], "{:?}", bound.unused_weights());
    // A weight that does not fit its parameter is the error run-time binding reports.
    let wrong = dir.join("wrong.safetensors");
    std::fs::write(&wrong, file(&[("steps", Dtype::F32, vec![3], f32s(&[1.0, 2.0, 3.0]))])).unwrap();
    let e = Program::builder().source("mlp.relay", MLP).params(&wrong).bind_params(true).build().unwrap_err();
    assert!(
        e.to_string().contains(
            "tensor `steps` is `Tensor[(3), float32]`, but parameter `%steps` is `Tensor[(2), int32]`"
        ),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
