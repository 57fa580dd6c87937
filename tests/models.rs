//! Numerical parity of the example NLP models with PyTorch (ARCHITECTURE.md §4): each model
//! of `examples/` runs on the VM with its committed weights and is compared with the outputs
//! its Python script stored. CI has no Python: everything read here is committed data.
//!
//! - Tree-LSTM: root logits of every SST test sentence within 1e-4, identical predicted
//!   classes, and the accuracy the training script reported.
//! - CharRNN: the greedily generated name for every (language, start letter) pair.
//! - RNN, GRU, LSTM cells: final states within 1e-5.
//! - Determinism: the same Tree-LSTM input, 100 times from 4 threads, gives one result.
//!
//! `RELAY_TEST_DEVICE=opencl` runs the fused kernels on an OpenCL device (same tolerances).

mod common;

// The treebank reader is the example's, not the library's; each user takes part of it.
#[allow(dead_code)]
#[path = "../examples/treelstm/sst.rs"]
mod sst;

use relay::vm::Value;
use relay::Program;
use safetensors::SafeTensors;
use serde_json::Value as Json;
use sst::{jsonl_line, parse_trees, Tree, Vocab};
use std::path::PathBuf;

fn example_path(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples").join(path)
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(example_path(path)).unwrap_or_else(|e| panic!("examples/{path}: {e}"))
}

fn read_text(path: &str) -> String {
    String::from_utf8(read(path)).unwrap_or_else(|e| panic!("examples/{path}: {e}"))
}

/// Compiles `examples/<source>` and binds the tensors of `examples/<weights>`, which must be
/// the leading parameters of `@main`; returns the program and the weight arguments.
fn load_model(source: &str, weights: &str) -> (Program, Vec<Value>) {
    load_model_text(source, &read_text(source), weights)
}

/// [`load_model`] for program text `text`, reported as `source`.
fn load_model_text(source: &str, text: &str, weights: &str) -> (Program, Vec<Value>) {
    let device = common::test_device();
    let program = Program::builder()
        .source(source, text)
        .opt_level(relay::DEFAULT_OPT_LEVEL)
        .device(device.clone())
        .build()
        .unwrap_or_else(|e| panic!("{source} on {device}: {e}"));
    let main = program.function("main").unwrap();
    let bound =
        relay::params::bind_params(main, &read(weights)).unwrap_or_else(|e| panic!("{weights}: {e}")).values;
    assert!(
        bound.iter().enumerate().all(|(i, (param, _))| i == *param),
        "{weights} binds @main's leading parameters"
    );
    (program, bound.into_iter().map(|(_, v)| v).collect())
}

/// `@main(weights..., args...)` for every argument list, spread over the machine's cores;
/// results in input order.
fn run_all(program: &Program, weights: &[Value], inputs: Vec<Vec<Value>>) -> Vec<Value> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    run_on_threads(program, weights, inputs, threads)
}

/// [`run_all`] on `threads` threads, each with its own VM.
fn run_on_threads(
    program: &Program,
    weights: &[Value],
    inputs: Vec<Vec<Value>>,
    threads: usize,
) -> Vec<Value> {
    let chunk = inputs.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = inputs
            .chunks(chunk)
            .map(|chunk| {
                scope.spawn(move || {
                    let mut vm = program.vm();
                    let run = |args: &Vec<Value>| {
                        let all = weights.iter().chain(args).cloned().collect();
                        program.invoke(&mut vm, "main", all).unwrap_or_else(|e| panic!("@main: {e}"))
                    };
                    chunk.iter().map(run).collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    })
}

/// The elements of a float32 tensor value.
fn floats(v: &Value) -> Vec<f32> {
    match v {
        Value::Tensor(t) => t.as_slice::<f32>().unwrap().to_vec(),
        other => panic!("expected a float32 tensor, got a {}", other.kind()),
    }
}

/// The fields of a constructor or tuple value.
fn fields(v: &Value) -> &[Value] {
    match v {
        Value::Adt(a) => &a.fields,
        other => panic!("expected an ADT value or tuple, got a {}", other.kind()),
    }
}

/// The elements of a float32 tensor in a safetensors file, in row-major order.
fn stored_floats(file: &SafeTensors<'_>, name: &str) -> Vec<f32> {
    let view = file.tensor(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(view.dtype(), safetensors::Dtype::F32, "{name}");
    view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// The largest absolute difference, after checking the lengths agree.
fn max_abs_diff(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max)
}

/// The index of the largest element (the first on a tie, as `torch.argmax`).
fn argmax(xs: &[f32]) -> usize {
    xs.iter().enumerate().fold(0, |best, (i, &x)| if x > xs[best] { i } else { best })
}

fn sst_test() -> (Vec<Tree>, Vocab) {
    let trees = parse_trees(&read_text("treelstm/data/sst-test.txt")).unwrap();
    let vocab = Vocab::parse(&read_text("treelstm/vocab.txt")).unwrap();
    assert_eq!(trees.len(), 2210);
    (trees, vocab)
}

#[test]
fn treelstm_matches_pytorch_on_every_sst_test_sentence() {
    let (trees, vocab) = sst_test();
    let (program, weights) = load_model("treelstm/treelstm.relay", "treelstm/weights.safetensors");
    let inputs = trees.iter().map(|t| vec![t.to_value(&program, |w| vocab.id(w)).unwrap()]).collect();
    let outputs = run_all(&program, &weights, inputs);

    let bytes = read("treelstm/reference.safetensors");
    let reference = SafeTensors::deserialize(&bytes).unwrap();
    let logits = stored_floats(&reference, "logits");
    let predicted = reference.tensor("predicted").unwrap();
    let predicted: Vec<i32> =
        predicted.data().chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
    let reported = header.metadata().as_ref().and_then(|m| m.get("test_correct")).cloned();

    let (mut worst, mut other_class, mut correct) = (0f32, Vec::new(), 0);
    for (i, (out, tree)) in outputs.iter().zip(&trees).enumerate() {
        let got = floats(out);
        worst = worst.max(max_abs_diff(&got, &logits[5 * i..5 * i + 5]));
        let class = argmax(&got);
        if class as i32 != predicted[i] {
            other_class.push(i + 1);
        }
        correct += usize::from(class == usize::from(tree.root().label));
    }
    assert!(worst <= 1e-4, "largest logit difference from PyTorch: {worst:e}");
    assert!(other_class.is_empty(), "sentences (from 1) classified unlike PyTorch: {other_class:?}");
    assert_eq!(Some(correct.to_string()), reported, "correct root labels of 2210");
}

/// Every internal SST node has two children, so the parity test above runs only the program's
/// two-children arm (one forget-gate product over both children). The arm for other arities
/// (`@map`/`@foldl`, one product per child) must compute the same states: here it runs alone,
/// the two-children arm cut out of the source, on the same trees.
#[test]
fn treelstm_any_arity_arm_agrees_with_the_two_children_arm() {
    let (trees, vocab) = sst_test();
    let source = read_text("treelstm/treelstm.relay");
    let start = source.find("      Rose(_, Cons(%left, Cons(%right, Nil)))").expect("the two-children arm");
    let len = source[start..].find("      Rose(_, %children)").expect("the any-arity arm");
    let general = format!("{}{}", &source[..start], &source[start + len..]);
    let weights = "treelstm/weights.safetensors";
    let (binary, binary_weights) = load_model("treelstm/treelstm.relay", weights);
    let (any_arity, any_weights) =
        load_model_text("treelstm.relay without its two-children arm", &general, weights);
    let trees = &trees[..300];
    let inputs = |p: &Program| trees.iter().map(|t| vec![t.to_value(p, |w| vocab.id(w)).unwrap()]).collect();
    let expected = run_all(&binary, &binary_weights, inputs(&binary));
    let got = run_all(&any_arity, &any_weights, inputs(&any_arity));
    let worst =
        expected.iter().zip(&got).map(|(e, g)| max_abs_diff(&floats(g), &floats(e))).fold(0f32, f32::max);
    assert!(worst <= 1e-5, "largest logit difference between the arms: {worst:e}");
}

/// The same input gives the same bits on every call of a fresh program, from whichever
/// thread: in particular before and after the weights get a packed copy (with AVX-512, after
/// some calls: `pack_cache.rs`), which must not change how the products sum.
#[test]
fn treelstm_gives_the_same_bits_on_every_call() {
    let (trees, vocab) = sst_test();
    let (program, weights) = load_model("treelstm/treelstm.relay", "treelstm/weights.safetensors");
    let tree = trees.iter().max_by_key(|t| t.nodes().len()).unwrap();
    let input = vec![tree.to_value(&program, |w| vocab.id(w)).unwrap()];
    let bits = |v: &Value| floats(v).iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let outputs: Vec<_> = run_on_threads(&program, &weights, vec![input; 100], 4).iter().map(bits).collect();
    let differ: Vec<usize> = (0..outputs.len()).filter(|&i| outputs[i] != outputs[0]).collect();
    assert!(differ.is_empty(), "calls (from 0) whose logits differ from call 0's: {differ:?}");
}

#[test]
fn committed_sst_test_jsonl_is_the_converter_output() {
    let (trees, vocab) = sst_test();
    let committed = read_text("treelstm/sst-test.jsonl");
    let mut lines = committed.lines();
    for (i, tree) in trees.iter().enumerate() {
        // Compared line by line: a failure names the line instead of printing megabytes.
        assert!(
            lines.next() == Some(&jsonl_line(tree, &vocab)),
            "line {} differs; rerun examples/sst_to_jsonl",
            i + 1
        );
    }
    assert_eq!(lines.next(), None, "sst-test.jsonl has more lines than trees");
}

/// Whether two values have the same constructors and scalars.
fn same_tree_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Scalar(x), Value::Scalar(y)) => x.as_i64() == y.as_i64(),
        (Value::Adt(x), Value::Adt(y)) => {
            x.tag == y.tag
                && x.fields.len() == y.fields.len()
                && x.fields.iter().zip(&y.fields).all(|(p, q)| same_tree_value(p, q))
        }
        _ => false,
    }
}

/// The trees the parity test builds in memory are the ones `relay-vm run --input` reads from
/// the JSONL file. Only trees within serde_json's nesting limit (128) are read back: the
/// deepest SST trees nest 172 levels.
#[test]
fn tree_values_are_the_jsonl_trees() {
    let (trees, vocab) = sst_test();
    let program =
        Program::builder().source("treelstm.relay", read_text("treelstm/treelstm.relay")).build().unwrap();
    let tree_type = program.function("main").unwrap().param_types.last().unwrap().clone();
    let mut read_back = 0;
    for (tree, line) in trees.iter().zip(read_text("treelstm/sst-test.jsonl").lines()) {
        let Ok(json) = serde_json::from_str::<Json>(line) else { continue };
        let from_file = relay::json::from_json(program.executable(), &tree_type, &json["args"][0]).unwrap();
        let built = tree.to_value(&program, |w| vocab.id(w)).unwrap();
        assert!(same_tree_value(&from_file, &built), "{line}");
        assert_eq!(json["label"], u64::from(tree.root().label));
        read_back += 1;
    }
    assert!(read_back > 2000, "only {read_back} lines read back");
}

#[test]
fn charrnn_generates_the_pytorch_names() {
    // The tutorial's letters; id 58 is end-of-name.
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .,;'-";
    let (program, weights) = load_model("charrnn/charrnn.relay", "charrnn/weights.safetensors");
    let reference: Vec<Json> =
        read_text("charrnn/names.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(reference.len(), 18 * 26);
    let inputs = reference
        .iter()
        .map(|r| {
            let arg = |i: usize| relay::scalar(i32::try_from(r["args"][i].as_i64().unwrap()).unwrap());
            vec![arg(0), arg(1)]
        })
        .collect();
    let outputs = run_all(&program, &weights, inputs);
    let mut differ = Vec::new();
    for (out, r) in outputs.iter().zip(&reference) {
        let mut name = String::new();
        let mut cell = out;
        while let [head, tail] = fields(cell) {
            let Value::Scalar(id) = head else { panic!("a letter id is a {}", head.kind()) };
            name.push(char::from(LETTERS[usize::try_from(id.as_i64()).unwrap()]));
            cell = tail;
        }
        if r["name"] != name.as_str() {
            differ.push(format!(
                "{}, {}: {name}",
                r["category"].as_str().unwrap(),
                r["name"].as_str().unwrap()
            ));
        }
    }
    assert!(differ.is_empty(), "names unlike PyTorch's (language, PyTorch: VM): {differ:#?}");
}

/// Runs `examples/rnn/<model>.relay` on every sequence of `inputs.jsonl` and compares each
/// final state (the tuple's fields for LSTM's `(h, c)`) with `reference.safetensors`.
fn check_cell(model: &str, state_names: &[&str]) {
    let (program, weights) = load_model(&format!("rnn/{model}.relay"), &format!("rnn/{model}.safetensors"));
    let xs_type = program.function("main").unwrap().param_types.last().unwrap().clone();
    let inputs: Vec<Vec<Value>> = read_text("rnn/inputs.jsonl")
        .lines()
        .map(|line| {
            let json: Json = serde_json::from_str(line).unwrap();
            vec![relay::json::from_json(program.executable(), &xs_type, &json["args"][0]).unwrap()]
        })
        .collect();
    assert_eq!(inputs.len(), 6);
    let bytes = read("rnn/reference.safetensors");
    let reference = SafeTensors::deserialize(&bytes).unwrap();
    for (k, out) in run_all(&program, &weights, inputs).iter().enumerate() {
        let states =
            if state_names.is_empty() { vec![floats(out)] } else { fields(out).iter().map(floats).collect() };
        let names: Vec<String> = match state_names {
            [] => vec![format!("{model}.{k}")],
            _ => state_names.iter().map(|s| format!("{model}.{k}.{s}")).collect(),
        };
        assert_eq!(states.len(), names.len());
        for (got, name) in states.iter().zip(&names) {
            let diff = max_abs_diff(got, &stored_floats(&reference, name));
            assert!(diff <= 1e-5, "{name}: largest difference from PyTorch {diff:e}");
        }
    }
}

#[test]
fn rnn_cell_matches_pytorch() {
    check_cell("rnn", &[]);
}

#[test]
fn gru_cell_matches_pytorch() {
    check_cell("gru", &[]);
}

#[test]
fn lstm_cell_matches_pytorch() {
    check_cell("lstm", &["h", "c"]);
}
