//! The memory plan (ARCHITECTURE.md §3, "Memory"): on random programs with branches, calls
//! and tuples, and on the example models, every plan keeps tensors that are live together
//! apart in the frame arena, and results are bit-identical with planning on and off.
//!
//! `measure_models` (ignored; run with `--release -- --ignored --nocapture`) prints the
//! figures of the brief: system-allocator calls, peak heap bytes and latency per input for
//! TreeLSTM and CharRNN, planned and unplanned, counted by the global allocator below.

use proptest::prelude::*;
use relay::compiler::codegen::memory::analyse_executable;
use relay::vm::{Value, VmConfig};
use relay::Program;
use serde_json::Value as Json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Counts allocator calls and live bytes (test binary only).
struct Counting;

static CALLS: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Relaxed) + n;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the
// counters are plain atomics and never touch the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        CALLS.fetch_add(1, Relaxed);
        grew(l.size());
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        CALLS.fetch_add(1, Relaxed);
        grew(l.size());
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        CALLS.fetch_add(1, Relaxed);
        LIVE.fetch_sub(l.size(), Relaxed);
        grew(new);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

/// A random program over `Tensor[(2, 3)]` values: a chain of operators, some inside `if`
/// branches, calls of a helper, tuples and projections, so that tensors die in branches,
/// escape through calls and tuples, and are reused.
fn program(seed: u64, nodes: usize) -> String {
    let mut rng = Lcg(seed);
    let mut values = vec!["%x".to_string(), "%y".to_string()];
    let mut body = String::new();
    for n in 0..nodes {
        let a = values[rng.below(values.len())].clone();
        let b = values[rng.below(values.len())].clone();
        let expr = match rng.below(7) {
            0 => format!("tanh({a})"),
            1 => format!("add({a}, {b})"),
            2 => format!("multiply({a}, {b})"),
            3 => format!("@helper({a}, {b})"),
            4 => format!("(({a}, {b}).1)"),
            5 => {
                format!("if (%flag) {{ let %t = negative({a}); add(%t, {b}) }} else {{ subtract({a}, {b}) }}")
            }
            _ => format!("match (Some({a})) {{ Some(%z) => sigmoid(%z), None => {b} }}"),
        };
        body.push_str(&format!("  let %v{n} = {expr};\n"));
        values.push(format!("%v{n}"));
    }
    let last = values.last().cloned().unwrap_or_else(|| "%x".into());
    format!(
        "def @helper(%a: Tensor[(2, 3), float32], %b: Tensor[(2, 3), float32]) {{ add(tanh(%a), %b) }}\n\
         def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32], %flag: bool) {{\n{body}  ({last}, %v0)\n}}\n"
    )
}

fn args(seed: u64) -> Vec<Value> {
    let mut rng = Lcg(seed ^ 0x5eed);
    let mut t = || {
        let data: Vec<f32> = (0..6).map(|_| rng.below(64) as f32 / 16.0 - 2.0).collect();
        relay::tensor(vec![2, 3], data).unwrap()
    };
    vec![t(), t(), relay::scalar(seed.is_multiple_of(2))]
}

/// A value as JSON text, for exact comparison.
fn show(program: &Program, v: &Value) -> String {
    let f = program.function("main").unwrap();
    relay::json::to_json(program.executable(), &f.ret_type, v).unwrap()
}

fn compile(name: &str, src: &str, opt: u8, plan: bool) -> Result<Program, TestCaseError> {
    Program::builder()
        .source(name, src)
        .opt_level(opt)
        .memory_plan(plan)
        .build()
        .map_err(|e| TestCaseError::fail(format!("{src}\n{e}")))
}

fn check_plans(program: &Program) -> Result<(), String> {
    analyse_executable(program.executable()).iter().try_for_each(|p| p.check())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn plans_are_sound_and_change_no_result(seed in any::<u64>(), nodes in 1usize..12, opt in 0u8..3) {
        let src = program(seed, nodes);
        let planned = compile("mem.relay", &src, opt, true)?;
        let unplanned = compile("mem.relay", &src, opt, false)?;
        check_plans(&planned).map_err(|e| TestCaseError::fail(format!("{src}\n{e}")))?;
        let mut vm_on = planned.vm();
        let mut vm_off = unplanned.vm_with(VmConfig { reuse_memory: false, ..VmConfig::default() });
        // Twice on the same VM: the second run reuses the first one's buffers.
        for round in 0..2 {
            let on = planned.invoke(&mut vm_on, "main", args(seed + round)).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let off = unplanned.invoke(&mut vm_off, "main", args(seed + round)).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(show(&planned, &on), show(&unplanned, &off), "{}", src);
        }
    }
}

/// A straight-line chain at opt-level 0 plans its intermediates into a shared arena.
#[test]
fn dead_intermediates_share_arena_space() {
    let src = "def @main(%x: Tensor[(4, 4), float32]) {\n\
               let %a = tanh(%x); let %b = sigmoid(%a); let %c = negative(%b); let %d = exp(%c); add(%d, %x)\n}";
    let p = Program::builder().source("chain.relay", src).opt_level(0).memory_plan(true).build().unwrap();
    let plans = analyse_executable(p.executable());
    let main = plans.iter().find(|p| p.function == "main").unwrap();
    main.check().unwrap();
    // %a..%d are arena tensors (the result escapes); at most two are live at once.
    assert_eq!(main.tensors.len(), 4, "{main}");
    assert!(main.arena_bytes <= 2 * 64, "{main}");
    let mut vm = p.vm();
    for _ in 0..3 {
        let x = relay::tensor(vec![4, 4], vec![0.5f32; 16]).unwrap();
        p.invoke(&mut vm, "main", vec![x]).unwrap();
    }
    let s = vm.memory_stats();
    // Every run places its four intermediates in one block, taken once and then recycled.
    assert_eq!((s.arena_allocs, s.arena_fallbacks, s.arena_blocks), (12, 0, 1), "{s}");
    assert!(s.system_allocs <= 3 && s.peak_arena_bytes == main.arena_bytes, "{s}");
}

fn example(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples").join(path)
}

/// A model, its weights bound, and its first `n` input lines as argument lists.
struct Model {
    planned: Program,
    unplanned: Program,
    weights: Vec<Value>,
    inputs: Vec<Vec<Json>>,
}

fn model(source: &str, weights: &str, inputs: &str, n: usize) -> Model {
    let bytes = std::fs::read(example(weights)).unwrap();
    // As `relay-vm run --params` compiles: specialised to the weights' shapes.
    let build = |memory_plan| {
        Program::builder().file(example(source)).params(example(weights)).memory_plan(memory_plan).build()
    };
    let planned = build(true).unwrap();
    let unplanned = build(false).unwrap();
    let main = planned.function("main").unwrap();
    let bound = relay::params::bind_params(main, &bytes).unwrap().values;
    let weights = bound.into_iter().map(|(_, v)| v).collect();
    let lines = std::fs::read_to_string(example(inputs)).unwrap();
    let inputs = lines
        .lines()
        .take(n)
        .map(|l| std::mem::take(&mut relay::batch::parse_input_line(l).unwrap().args))
        .collect();
    Model { planned, unplanned, weights, inputs }
}

impl Model {
    fn args(&self, p: &Program, line: &[Json]) -> Vec<Value> {
        let main = p.function("main").unwrap();
        let free = &main.param_types[self.weights.len()..];
        let mut all = self.weights.clone();
        all.extend(free.iter().zip(line).map(|(t, j)| relay::json::from_json(p.executable(), t, j).unwrap()));
        all
    }
}

const MODELS: [(&str, &str, &str); 2] = [
    ("treelstm/treelstm.relay", "treelstm/weights.safetensors", "treelstm/sst-test.jsonl"),
    ("charrnn/charrnn.relay", "charrnn/weights.safetensors", "charrnn/names.jsonl"),
];

#[test]
fn example_models_are_identical_with_planning_on_and_off() {
    for (source, weights, inputs) in MODELS {
        let m = model(source, weights, inputs, 40);
        check_plans(&m.planned).unwrap();
        let mut on = m.planned.vm();
        let mut off = m.unplanned.vm_with(VmConfig { reuse_memory: false, ..VmConfig::default() });
        for line in &m.inputs {
            let a = m.planned.invoke(&mut on, "main", m.args(&m.planned, line)).unwrap();
            let b = m.unplanned.invoke(&mut off, "main", m.args(&m.unplanned, line)).unwrap();
            assert_eq!(show(&m.planned, &a), show(&m.unplanned, &b), "{source}");
        }
        // Their tensors are kernel outputs that escape or fused intermediates: nothing is
        // planned into an arena (tests/vision.rs has the models that are); what is, lands.
        let (s, t) = (on.memory_stats(), off.memory_stats());
        assert!(
            s.arena_fallbacks == 0 && t.arena_allocs == 0 && t.peak_arena_bytes == 0,
            "{source}: {s} / {t}"
        );
    }
}

#[test]
#[ignore = "measurement: run with --release -- --ignored --nocapture"]
fn measure_models() {
    for (source, weights, inputs) in MODELS {
        let m = model(source, weights, inputs, 500);
        for (name, program, reuse) in [("off", &m.unplanned, false), ("on ", &m.planned, true)] {
            let mut vm = program.vm_with(VmConfig { reuse_memory: reuse, ..VmConfig::default() });
            let all: Vec<Vec<Value>> = m.inputs.iter().map(|l| m.args(program, l)).collect();
            for a in &all {
                program.invoke(&mut vm, "main", a.clone()).unwrap();
            }
            vm.reset_memory_stats();
            let (mut calls, mut peak) = (0usize, 0usize);
            let start = std::time::Instant::now();
            for a in &all {
                let a = a.clone();
                let before = CALLS.load(Relaxed);
                PEAK.store(LIVE.load(Relaxed), Relaxed);
                let base = LIVE.load(Relaxed);
                let r = program.invoke(&mut vm, "main", a).unwrap();
                calls += CALLS.load(Relaxed) - before;
                peak = peak.max(PEAK.load(Relaxed) - base);
                drop(r);
            }
            let n = all.len() as f64;
            let s = vm.memory_stats();
            println!(
                "{source} planning {name}: {:.1} allocator calls/input, peak heap {} bytes/input, {:.3} ms/input; \
                 tensors/input: {:.1} arena, {:.1} pool, {:.1} system",
                calls as f64 / n,
                peak,
                1e3 * start.elapsed().as_secs_f64() / n,
                s.arena_allocs as f64 / n,
                s.pool_allocs as f64 / n,
                s.system_allocs as f64 / n
            );
        }
    }
}
