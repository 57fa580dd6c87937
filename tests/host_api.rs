//! The host API (`Program::builder`, `Program::run`): weights bound by name build the program
//! `relay-vm run --params` runs, inputs go in by position or by name, results convert to
//! tensors whatever their rank, and every misuse is an error.

use relay::vm::Value;
use relay::{scalar, tensor, Error, Program};
use std::path::PathBuf;

fn example(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples").join(path)
}

const AFFINE: &str = "def @main(%w: Tensor[(?), float32], %x: Tensor[(3), float32], %b: float32) {
  add(multiply(%w, %x), %b)
}
def @dot(%x: Tensor[(3), float32]) -> float32 { sum(%x) }";

fn affine(weights: &[f32]) -> (tempfile_path::TempFile, Program) {
    let file = tempfile_path::TempFile::new("affine.safetensors");
    let bytes = safetensors_bytes("w", weights);
    std::fs::write(&file.0, bytes).unwrap();
    let program = Program::builder().source("affine.relay", AFFINE).params(&file.0).build().unwrap();
    (file, program)
}

/// A safetensors file of one float32 vector `name`.
fn safetensors_bytes(name: &str, data: &[f32]) -> Vec<u8> {
    let raw: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
    let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![data.len()], &raw).unwrap();
    safetensors::serialize([(name, view)], None).unwrap()
}

/// A file under the system's temporary directory, removed when dropped.
mod tempfile_path {
    pub struct TempFile(pub std::path::PathBuf);

    impl TempFile {
        pub fn new(name: &str) -> TempFile {
            let dir = std::env::temp_dir().join(format!("relay-host-api-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            TempFile(dir.join(format!("{:?}-{name}", std::thread::current().id())))
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

fn f32s(v: &Value) -> Vec<f32> {
    v.to_tensor().unwrap().as_slice::<f32>().unwrap().to_vec()
}

#[test]
fn inputs_go_in_by_position_or_by_name_after_the_weights() {
    let (_file, program) = affine(&[1.0, 2.0, 3.0]);
    assert_eq!(program.inputs().unwrap(), ["x", "b"]);
    let x = || tensor(vec![3], vec![10f32, 20.0, 30.0]).unwrap();
    let mut vm = program.vm();
    let by_position = program.run(&mut vm, vec![x(), scalar(0.5f32)]).unwrap();
    let by_name = program.run(&mut vm, vec![("%b", scalar(0.5f32)), ("x", x())]).unwrap();
    assert_eq!(f32s(&by_position), [10.5, 40.5, 90.5]);
    assert_eq!(f32s(&by_name), f32s(&by_position));
}

#[test]
fn weights_specialise_the_parameters_they_bind() {
    let (_file, program) = affine(&[1.0, 2.0, 3.0]);
    let w = &program.function("main").unwrap().param_types[0];
    assert!(matches!(w, relay::vm::ValueType::Tensor { shape, .. } if shape[..] == [Some(3)]), "{w:?}");
}

#[test]
fn every_misuse_of_run_is_an_input_error() {
    let (_file, program) = affine(&[1.0, 2.0, 3.0]);
    let x = || tensor(vec![3], vec![1f32, 2.0, 3.0]).unwrap();
    let mut vm = program.vm();
    let cases: Vec<(relay::Inputs, &str)> = vec![
        (vec![x()].into(), "takes 2 input(s) (%x, %b), 1 given"),
        (vec![("x", x())].into(), "needs input `%b`"),
        (vec![("x", x()), ("x", x()), ("b", scalar(1f32))].into(), "`%x` is given twice"),
        (vec![("w", x())].into(), "`%w` is bound to a weight"),
        (vec![("y", x())].into(), "has no parameter `%y`"),
        (vec![scalar(1f32), scalar(1f32)].into(), "argument 2 (`%x`)"),
    ];
    for (inputs, message) in cases {
        match program.run(&mut vm, inputs) {
            Err(Error::Input(m)) => assert!(m.contains(message), "{m:?} lacks {message:?}"),
            other => panic!("{message}: {other:?}"),
        }
    }
}

#[test]
fn a_0d_result_is_a_tensor_like_any_other() {
    let program = Program::builder().source("dot.relay", AFFINE).entry("@dot").build().unwrap();
    let sum = program.run(&mut program.vm(), vec![tensor(vec![3], vec![1f32, 2.0, 3.5]).unwrap()]).unwrap();
    let t = sum.to_tensor().unwrap();
    assert_eq!((t.shape(), t.as_slice::<f32>().unwrap()), (&[][..], &[6.5f32][..]));
}

#[test]
fn files_that_cannot_be_used_name_themselves() {
    let missing = Program::builder().file("no/such/file.relay").build().unwrap_err();
    assert!(
        matches!(&missing, Error::File { .. })
            && missing.to_string().contains("cannot read no/such/file.relay")
    );
    let weights = example("treelstm/weights.safetensors");
    let binary = Program::builder().file(&weights).build().unwrap_err();
    assert!(binary.to_string().contains("is neither UTF-8 Relay source nor an executable"), "{binary}");
    // Tensors that bind no parameter are ignored, or an error when asked.
    let loose = Program::builder().source("t.relay", AFFINE).params(&weights).build().unwrap();
    assert_eq!(loose.inputs().unwrap().len(), 3, "none of the TreeLSTM's weights binds");
    let wrong = Program::builder()
        .source("t.relay", AFFINE)
        .params(&weights)
        .strict_params(true)
        .build()
        .unwrap_err();
    assert!(wrong.to_string().contains("bind no parameter of `@main`"), "{wrong}");
    let none = Program::builder().opt_level(0).build().unwrap_err();
    assert!(matches!(none, Error::Input(_)), "{none}");
}

#[test]
fn the_builder_loads_executables_and_binds_their_weights() {
    let (_file, program) = affine(&[1.0, 2.0, 3.0]);
    let exe = tempfile_path::TempFile::new("affine.rvm");
    std::fs::write(&exe.0, program.save()).unwrap();
    let params = tempfile_path::TempFile::new("w.safetensors");
    std::fs::write(&params.0, safetensors_bytes("w", &[2.0, 2.0, 2.0])).unwrap();
    let loaded = Program::builder().file(&exe.0).params(&params.0).build().unwrap();
    let out =
        loaded.run(&mut loaded.vm(), vec![tensor(vec![3], vec![1f32, 2.0, 3.0]).unwrap(), scalar(0f32)]);
    assert_eq!(f32s(&out.unwrap()), [2.0, 4.0, 6.0]);
}

#[test]
fn treelstm_with_params_has_the_kernels_of_run_params() {
    let plain = Program::builder().file(example("treelstm/treelstm.relay")).build().unwrap();
    let bound = Program::builder()
        .file(example("treelstm/treelstm.relay"))
        .params(example("treelstm/weights.safetensors"))
        .build()
        .unwrap();
    // Binding the embedding's rows fixes its `?` dimension, so one kernel fewer is needed.
    assert!(bound.executable().kernels.len() < plain.executable().kernels.len());
    assert_eq!(bound.inputs().unwrap(), ["tree"]);
}
