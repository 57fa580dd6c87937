//! The example models through the reference interpreter give the VM's results at every
//! opt-level: Tree-LSTM on SST sentences, CharRNN's generated names, and the RNN, GRU and LSTM
//! cells on their input sequences, each on a few inputs, with their committed weights. Floats
//! agree within 1e-5 (the VM's JIT kernels approximate `tanh`, `sigmoid` and `exp` and contract
//! multiply-adds).

// The treebank reader is the example's, not the library's; each user takes part of it.
#[allow(dead_code)]
#[path = "../examples/treelstm/sst.rs"]
mod sst;

use relay::interp::Interpreter;
use relay::vm::Value;
use relay::Program;
use serde_json::Value as Json;
use sst::{parse_trees, Vocab};
use std::path::PathBuf;

fn read(path: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples").join(path);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read_text(path: &str) -> String {
    String::from_utf8(read(path)).unwrap_or_else(|e| panic!("examples/{path}: {e}"))
}

/// The opt-levels the VM runs each model at.
const OPT_LEVELS: [u8; 4] = [0, 1, 2, 3];

/// Both executors of `examples/<source>` (the VM's program at each of [`OPT_LEVELS`]), and
/// the weights of `examples/<weights>` (the leading parameters of `@main`) as values.
fn load(source: &str, weights: &str) -> (Vec<Program>, Interpreter, Vec<Value>) {
    let text = read_text(source);
    let programs = OPT_LEVELS
        .iter()
        .map(|&level| {
            Program::builder()
                .source(source, &text)
                .opt_level(level)
                .build()
                .unwrap_or_else(|e| panic!("{source} at -O{level}: {e}"))
        })
        .collect();
    let interp = Interpreter::compile(source, &text).unwrap_or_else(|e| panic!("{source}: {e}"));
    let main = interp.function("main").unwrap();
    let bound =
        relay::params::bind_params(main, &read(weights)).unwrap_or_else(|e| panic!("{weights}: {e}")).values;
    assert!(
        bound.iter().enumerate().all(|(i, (param, _))| i == *param),
        "{weights} binds @main's leading parameters"
    );
    (programs, interp, bound.into_iter().map(|(_, v)| v).collect())
}

/// Where two values differ beyond 1e-5 (relative, or absolute near zero), if anywhere.
fn difference(vm: &Value, interp: &Value) -> Option<String> {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-5 * a.abs().max(b.abs()).max(1.0);
    let mut work = vec![(vm.clone(), interp.clone())];
    while let Some((a, b)) = work.pop() {
        match (&a, &b) {
            (Value::Scalar(x), Value::Scalar(y)) if x.dtype == y.dtype && close(x.as_f64(), y.as_f64()) => {}
            (Value::Tensor(x), Value::Tensor(y)) if x.shape() == y.shape() && x.dtype() == y.dtype() => {
                let (Ok(xs), Ok(ys)) = (x.as_slice::<f32>(), y.as_slice::<f32>()) else {
                    return Some(format!("a {} tensor", x.dtype()));
                };
                if let Some(i) = xs.iter().zip(ys).position(|(&p, &q)| !close(p.into(), q.into())) {
                    return Some(format!("element {i}: VM {}, interpreter {}", xs[i], ys[i]));
                }
            }
            (Value::Adt(x), Value::Adt(y)) if x.tag == y.tag && x.fields.len() == y.fields.len() => {
                work.extend(x.fields.iter().cloned().zip(y.fields.iter().cloned()));
            }
            _ => return Some(format!("VM {a:?}, interpreter {b:?}")),
        }
    }
    None
}

/// Runs `@main(weights..., args...)` on the interpreter and on the VM at every opt-level, for
/// each argument list.
fn agree(programs: &[Program], interp: &Interpreter, weights: &[Value], inputs: Vec<Vec<Value>>) {
    for (k, args) in inputs.into_iter().enumerate() {
        let all: Vec<Value> = weights.iter().cloned().chain(args).collect();
        let got =
            interp.invoke("main", all.clone()).unwrap_or_else(|e| panic!("interpreter, input {k}: {e}"));
        for (program, level) in programs.iter().zip(OPT_LEVELS) {
            let mut vm = program.vm();
            let want = program
                .invoke(&mut vm, "main", all.clone())
                .unwrap_or_else(|e| panic!("VM at -O{level}, input {k}: {e}"));
            if let Some(d) = difference(&want, &got) {
                panic!("-O{level}, input {k}: {d}");
            }
        }
    }
}

#[test]
fn treelstm_agrees_with_the_vm() {
    let (programs, interp, weights) = load("treelstm/treelstm.relay", "treelstm/weights.safetensors");
    let trees = parse_trees(&read_text("treelstm/data/sst-test.txt")).unwrap();
    let vocab = Vocab::parse(&read_text("treelstm/vocab.txt")).unwrap();
    let inputs =
        trees[..4].iter().map(|t| vec![t.to_value(&programs[0], |w| vocab.id(w)).unwrap()]).collect();
    agree(&programs, &interp, &weights, inputs);
}

#[test]
fn charrnn_agrees_with_the_vm() {
    let (programs, interp, weights) = load("charrnn/charrnn.relay", "charrnn/weights.safetensors");
    let inputs = read_text("charrnn/names.jsonl")
        .lines()
        .step_by(97)
        .map(|l| {
            let r: Json = serde_json::from_str(l).unwrap();
            let arg = |i: usize| relay::scalar(i32::try_from(r["args"][i].as_i64().unwrap()).unwrap());
            vec![arg(0), arg(1)]
        })
        .collect();
    agree(&programs, &interp, &weights, inputs);
}

#[test]
fn rnn_cells_agree_with_the_vm() {
    for model in ["rnn", "gru", "lstm"] {
        let (programs, interp, weights) =
            load(&format!("rnn/{model}.relay"), &format!("rnn/{model}.safetensors"));
        let program = &programs[0];
        let xs_type = program.function("main").unwrap().param_types.last().unwrap().clone();
        let inputs = read_text("rnn/inputs.jsonl")
            .lines()
            .take(3)
            .map(|line| {
                let json: Json = serde_json::from_str(line).unwrap();
                vec![relay::json::from_json(program.executable(), &xs_type, &json["args"][0]).unwrap()]
            })
            .collect();
        agree(&programs, &interp, &weights, inputs);
    }
}

#[test]
fn differences_are_found() {
    let one = relay::scalar(1.0f32);
    assert_eq!(difference(&one, &relay::scalar(1.000_001f32)), None);
    assert!(difference(&one, &relay::scalar(1.1f32)).is_some());
    assert!(difference(&Value::tuple(vec![one.clone()]), &Value::tuple(vec![])).is_some());
}
