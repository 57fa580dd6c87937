//! Latency of the example NLP models (`examples/`, ARCHITECTURE.md §4) with their shipped
//! weights, one thread:
//!
//! - `treelstm/sentence`: the Tree-LSTM on the first 200 SST test sentences;
//! - `charrnn/name`: greedy generation for every ninth (language, start letter) pair, 52 names
//!   over all 18 languages and 26 letters;
//! - `lstm/sequence_of_5`: the LSTM over 8 sequences of length 5.
//!
//! One measured iteration runs the whole set and the throughput is set to its size, so
//! criterion's `thrpt` line is in sentences, names or sequences per second (latency per item
//! is its inverse). The comparison with PyTorch is `benches/pytorch/compare.py`.
//!
//! Run with `cargo bench --bench models`.

// The treebank reader is the example's, not the library's; each user takes part of it.
#[allow(dead_code)]
#[path = "../examples/treelstm/sst.rs"]
mod sst;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use relay::vm::Value;
use relay::{scalar, tensor, Program};
use sst::{parse_trees, Vocab};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

/// SST test sentences per iteration of the Tree-LSTM benchmark.
const SENTENCES: usize = 200;
/// Every `NAME_STEP`-th of the 18 × 26 (language, start letter) pairs is generated.
const NAME_STEP: usize = 9;
/// Sequences per iteration of the LSTM benchmark.
const SEQUENCES: usize = 8;
/// Steps per LSTM sequence.
const STEPS: usize = 5;
/// The LSTM's input size.
const INPUT: usize = 128;

fn read(path: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples").join(path);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read_text(path: &str) -> String {
    String::from_utf8(read(path)).unwrap_or_else(|e| panic!("examples/{path}: {e}"))
}

/// A compiled example model and its weights, which are the leading parameters of `@main`.
struct Model {
    program: Program,
    weights: Vec<Value>,
}

impl Model {
    fn load(source: &str, weights: &str) -> Model {
        let program = Program::builder()
            .source(source, read_text(source))
            .build()
            .unwrap_or_else(|e| panic!("{source}: {e}"));
        let main = program.function("main").unwrap_or_else(|e| panic!("{e}"));
        let bound = relay::params::bind_params(main, &read(weights))
            .unwrap_or_else(|e| panic!("{weights}: {e}"))
            .values;
        assert!(
            bound.iter().enumerate().all(|(i, (param, _))| i == *param),
            "{weights}: not @main's leading parameters"
        );
        Model { program, weights: bound.into_iter().map(|(_, v)| v).collect() }
    }

    /// Runs `@main(weights..., inputs...)` on every input set.
    fn run_all(&self, vm: &mut relay::vm::Vm<'_>, inputs: &[Vec<Value>]) {
        for input in inputs {
            let args = self.weights.iter().chain(input).cloned().collect();
            let result = self.program.invoke(vm, "main", args).unwrap_or_else(|e| panic!("@main: {e}"));
            black_box(result);
        }
    }

    fn list(&self, items: Vec<Value>) -> Value {
        let constructor =
            |name, fields| self.program.constructor(name, fields).unwrap_or_else(|e| panic!("{e}"));
        items.into_iter().rev().fold(constructor("Nil", vec![]), |list, x| constructor("Cons", vec![x, list]))
    }
}

fn bench_models(c: &mut Criterion) {
    let mut group = c.benchmark_group("treelstm");
    let model = Model::load("treelstm/treelstm.relay", "treelstm/weights.safetensors");
    let vocab = Vocab::parse(&read_text("treelstm/vocab.txt")).unwrap_or_else(|e| panic!("vocab.txt: {e}"));
    let trees =
        parse_trees(&read_text("treelstm/data/sst-test.txt")).unwrap_or_else(|e| panic!("sst-test.txt: {e}"));
    let inputs: Vec<Vec<Value>> = trees
        .iter()
        .take(SENTENCES)
        .map(|t| vec![t.to_value(&model.program, |w| vocab.id(w)).unwrap_or_else(|e| panic!("{e}"))])
        .collect();
    let mut vm = model.program.vm();
    // A pass takes 0.15 s (fused JIT kernels) to 1 s (reference kernels): few, flat samples.
    group.sampling_mode(SamplingMode::Flat).sample_size(10).measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(inputs.len() as u64));
    group.bench_function("sentence", |b| b.iter(|| model.run_all(&mut vm, &inputs)));
    group.finish();

    let mut group = c.benchmark_group("charrnn");
    let model = Model::load("charrnn/charrnn.relay", "charrnn/weights.safetensors");
    // Start letters are `A`..`Z`, ids 26..51.
    let inputs: Vec<Vec<Value>> =
        (0i32..18 * 26).step_by(NAME_STEP).map(|k| vec![scalar(k / 26), scalar(26 + k % 26)]).collect();
    let mut vm = model.program.vm();
    group.throughput(Throughput::Elements(inputs.len() as u64));
    group.bench_function("name", |b| b.iter(|| model.run_all(&mut vm, &inputs)));
    group.finish();

    let mut group = c.benchmark_group("lstm");
    let model = Model::load("rnn/lstm.relay", "rnn/lstm.safetensors");
    // Deterministic inputs in [-2, 2), as the shipped ones.
    let step = |s: usize, k: usize| {
        let data = (0..INPUT).map(|i| ((s * 7919 + k * 131 + i * 31) % 256) as f32 / 64.0 - 2.0).collect();
        tensor(vec![1, INPUT], data).unwrap_or_else(|e| panic!("{e}"))
    };
    let inputs: Vec<Vec<Value>> =
        (0..SEQUENCES).map(|s| vec![model.list((0..STEPS).map(|k| step(s, k)).collect())]).collect();
    let mut vm = model.program.vm();
    group.throughput(Throughput::Elements(inputs.len() as u64));
    group.bench_function("sequence_of_5", |b| b.iter(|| model.run_all(&mut vm, &inputs)));
    group.finish();
}

criterion_group!(benches, bench_models);
criterion_main!(benches);
