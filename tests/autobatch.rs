//! Batching across requests (`relay::autobatch`, `run --batch B`) gives what running each
//! input alone gives: on the example models (Tree-LSTM on SST, CharRNN, RNN/GRU/LSTM cells),
//! with inputs in random groups and orders (a property test), and the Tree-LSTM's accuracy
//! with `--batch 16` on the whole SST test set.

use proptest::prelude::*;
use relay::autobatch::{Batcher, GroupSizes};
use relay::vm::Value;
use relay::Program;
use serde_json::Value as Json;
use std::path::PathBuf;
use std::sync::OnceLock;

fn read_text(path: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples").join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A compiled example, its weights (the leading parameters of `@main`) and its inputs from a
/// JSONL file (`args` after the weights; `label` when given).
struct Model {
    program: Program,
    weights: Vec<Value>,
    inputs: Vec<(Vec<Value>, Option<usize>)>,
}

impl Model {
    fn load(source: &str, weights: &str, inputs: &str) -> Model {
        let weights = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples").join(weights);
        // Compiled as `relay-vm run --params` compiles it: the weights' shapes replace the
        // `?` dimensions (the embedding's rows), so every kernel has static shapes.
        let program = Program::builder().source(source, read_text(source)).params(&weights).build().unwrap();
        let main = program.function("main").unwrap();
        let bytes = std::fs::read(&weights).unwrap();
        let weights: Vec<Value> =
            relay::params::bind_params(main, &bytes).unwrap().values.into_iter().map(|(_, v)| v).collect();
        let types = &main.param_types[weights.len()..];
        let inputs = read_text(inputs)
            .lines()
            .map(|line| {
                // SST trees nest deeper than serde_json's default limit.
                let json: Json = relay::batch::parse_json(line).unwrap();
                let args = types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| relay::json::from_json(program.executable(), t, &json["args"][i]).unwrap())
                    .collect();
                let label = json["label"].as_u64().map(|l| l as usize);
                relay::json::dismantle(json);
                (args, label)
            })
            .collect();
        Model { program, weights, inputs }
    }

    fn args(&self, i: usize) -> Vec<Value> {
        self.weights.iter().chain(&self.inputs[i].0).cloned().collect()
    }

    /// Each of `order`'s inputs alone.
    fn alone(&self, order: &[usize]) -> Vec<Value> {
        let mut vm = self.program.vm();
        order.iter().map(|&i| self.program.invoke(&mut vm, "main", self.args(i)).unwrap()).collect()
    }

    /// `order`'s inputs, `batch` at a time; results in `order`'s order.
    fn batched(&self, order: &[usize], batch: usize) -> Vec<Value> {
        self.batched_passes(order, batch, 1).0
    }

    /// `order`'s inputs, `batch` at a time, `passes` times over on the same lanes: the last
    /// pass's results in `order`'s order, its batched calls by lanes, and the tensors the
    /// lanes took from the system allocator (not their pools) during it.
    fn batched_passes(&self, order: &[usize], batch: usize, passes: usize) -> (Vec<Value>, GroupSizes, u64) {
        let mut batcher = Batcher::new(&self.program).unwrap();
        assert!(batcher.batchable_kernels() > 0);
        let mut lanes: Vec<_> = (0..batch).map(|_| self.program.vm()).collect();
        let system =
            |lanes: &[relay::vm::Vm]| lanes.iter().map(|vm| vm.memory_stats().system_allocs).sum::<u64>();
        let mut results: Vec<Option<Value>> = vec![None; order.len()];
        let mut before = 0;
        for _ in 0..passes {
            before = system(&lanes);
            batcher.take_group_sizes();
            let mut next = order.iter().enumerate();
            batcher
                .run(
                    &mut lanes,
                    "main",
                    || next.next().map(|(k, &i)| (k, self.args(i))),
                    |k, result, _| {
                        results[k] = Some(result.unwrap());
                        true
                    },
                )
                .unwrap();
        }
        let results = results.into_iter().map(|r| r.expect("every input finishes")).collect();
        (results, batcher.take_group_sizes(), system(&lanes) - before)
    }
}

/// Every float of a value (tensors, scalars, ADT fields in order).
fn floats(v: &Value, out: &mut Vec<f64>) {
    match v {
        Value::Tensor(t) => out.extend((0..t.len()).filter_map(|i| t.get(i)).map(|s| match s {
            relay::devices::Scalar::Float(f) => f,
            relay::devices::Scalar::Int(i) => i as f64,
            relay::devices::Scalar::UInt(u) => u as f64,
            relay::devices::Scalar::Bool(b) => f64::from(u8::from(b)),
        })),
        Value::Scalar(s) => out.push(s.as_f64()),
        Value::Adt(a) => a.fields.iter().for_each(|f| floats(f, out)),
        other => panic!("a {} in a result", other.kind()),
    }
}

/// The batched kernels sum products in another order than the single-row ones (a GEMM of
/// many rows, not a GEMV), so results agree to float32 rounding, not to the bit.
fn assert_close(got: &[Value], want: &[Value]) {
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let (mut a, mut b) = (vec![], vec![]);
        floats(g, &mut a);
        floats(w, &mut b);
        assert_eq!(a.len(), b.len(), "result {k}: shapes differ");
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "result {k}: {x} vs {y} alone");
        }
    }
}

fn treelstm() -> &'static Model {
    static M: OnceLock<Model> = OnceLock::new();
    M.get_or_init(|| {
        Model::load("treelstm/treelstm.relay", "treelstm/weights.safetensors", "treelstm/sst-test.jsonl")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn treelstm_in_random_groups_equals_each_input_alone(
        picks in proptest::collection::vec(0usize..2210, 1..40),
        batch in 1usize..12,
    ) {
        let m = treelstm();
        let order: Vec<usize> = picks.into_iter().map(|i| i % m.inputs.len()).collect();
        assert_close(&m.batched(&order, batch), &m.alone(&order));
    }
}

#[test]
fn treelstm_accuracy_is_unchanged_with_batch_16() {
    let m = treelstm();
    let order: Vec<usize> = (0..m.inputs.len()).collect();
    let results = m.batched(&order, 16);
    let correct = results
        .iter()
        .zip(&m.inputs)
        .filter(|(r, (_, label))| {
            let mut xs = vec![];
            floats(r, &mut xs);
            let best = (0..xs.len()).max_by(|&a, &b| xs[a].total_cmp(&xs[b]));
            best == *label
        })
        .count();
    assert_eq!((correct, m.inputs.len()), (999, 2210));
}

#[test]
fn each_paused_call_runs_once_and_lanes_recycle_their_buffers() {
    let m = treelstm();
    let order: Vec<usize> = (0..200).collect();
    let (_, alone, _) = m.batched_passes(&order, 1, 1);
    assert_eq!(alone.counts().count(), 1, "batch 1 runs every call alone: {alone}");
    let (results, groups, system) = m.batched_passes(&order, 16, 2);
    assert_close(&results, &m.alone(&order));
    // Every call that running alone makes, once: a lane resumed without its call having
    // run (or run in two calls) changes the count.
    assert_eq!(groups.lane_calls(), alone.lane_calls(), "{groups}");
    assert!(groups.counts().any(|(lanes, _)| lanes >= 8), "{groups}");
    // Warm lanes take their tensors from their pools: one from the system per input (its
    // result, which the caller keeps), not one per kernel call (a paused call's inputs
    // held past the call keep the resumed run from recycling them).
    assert!(system <= order.len() as u64, "{system} system allocations for {} inputs", order.len());
}

#[test]
fn rnn_cells_batched_equal_each_sequence_alone() {
    for model in ["rnn", "gru", "lstm"] {
        let m = Model::load(
            &format!("rnn/{model}.relay"),
            &format!("rnn/{model}.safetensors"),
            "rnn/inputs.jsonl",
        );
        let order: Vec<usize> = (0..m.inputs.len()).chain(0..m.inputs.len()).collect();
        assert_close(&m.batched(&order, 4), &m.alone(&order));
    }
}

#[test]
fn charrnn_batched_generates_what_it_generates_alone() {
    let m = Model::load("charrnn/charrnn.relay", "charrnn/weights.safetensors", "charrnn/names.jsonl");
    let order: Vec<usize> = (0..m.inputs.len()).step_by(7).collect();
    // Generated letter ids are integers: equal, not just close.
    let (got, want) = (m.batched(&order, 8), m.alone(&order));
    let ids = |v: &[Value]| -> Vec<Vec<f64>> {
        v.iter()
            .map(|r| {
                let mut xs = vec![];
                floats(r, &mut xs);
                xs
            })
            .collect()
    };
    assert_eq!(ids(&got), ids(&want));
}

/// Every number of a JSON value, in order.
fn json_numbers(v: &Json, out: &mut Vec<f64>) {
    match v {
        Json::Number(n) => out.extend(n.as_f64()),
        Json::Array(items) => items.iter().for_each(|x| json_numbers(x, out)),
        Json::Object(fields) => fields.values().for_each(|x| json_numbers(x, out)),
        _ => {}
    }
}

/// `relay-vm run --batch B -j N` on the Tree-LSTM's first 300 SST sentences: each result's
/// numbers per output line, in output order.
fn run_cli(batch: &str, jobs: &str) -> Vec<Vec<f64>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/treelstm");
    let input =
        std::env::temp_dir().join(format!("relay-autobatch-{}-{batch}-{jobs}.jsonl", std::process::id()));
    let text: String =
        read_text("treelstm/sst-test.jsonl").lines().take(300).map(|l| format!("{l}\n")).collect();
    std::fs::write(&input, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_relay-vm"))
        .args(["run", &dir.join("treelstm.relay").display().to_string()])
        .args(["--params", &dir.join("weights.safetensors").display().to_string()])
        .args(["--input", &input.display().to_string(), "--batch", batch, "-j", jobs])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let mut xs = vec![];
            json_numbers(&relay::batch::parse_json(line).unwrap(), &mut xs);
            xs
        })
        .collect()
}

#[test]
fn two_threads_batching_print_what_one_prints_in_input_order() {
    let one = run_cli("8", "1");
    let two = run_cli("8", "2");
    assert_eq!(one.len(), 300);
    assert_eq!(two.len(), 300);
    for (k, (a, b)) in two.iter().zip(&one).enumerate() {
        assert_eq!(a.len(), b.len(), "line {k}");
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "line {k}: {x} with -j 2 vs {y} with -j 1");
        }
    }
}
