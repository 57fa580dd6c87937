//! Mutation test of the executable loader: real executables, damaged by random byte flips,
//! extreme field values (0, 2^31, 2^32 − 1, 2^40, ...) and truncation, with the body length
//! and CRC-32 recomputed so that every case reaches the decoder and the verifier. Each case
//! must be rejected, or load and run within a memory budget (small [`Limits`]) and a
//! deadline (a watchdog fails the test). A case whose control flow could loop (a backward
//! jump, a call cycle or a closure call: the VM has no instruction fuel) is loaded and
//! verified but not run.
//!
//! 10,000 cases from a fixed seed (`PROPTEST_CASES` overrides the count); run with
//! `--nocapture` to see how many were rejected, ran, trapped or were not run.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use relay::compiler::kir;
use relay::vm::{Executable, Instr, Limits, Value, VmConfig};
use relay::{tensor, Program};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

/// Bytes before the body: magic (8), format version (4), body length (8).
const HEADER: usize = 20;
/// Where the body length is.
const LENGTH_AT: usize = 12;
/// How long one case may run before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// The memory budget: one statically shaped tensor or a kernel's temps at most 1 MiB, a
/// kernel call at most 2^24 statements, registers as by default.
fn limits() -> Limits {
    Limits { max_tensor_bytes: 1 << 20, max_kernel_work: 1 << 24, ..Limits::default() }
}

const TENSORS: &str = r#"#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {
  let %s = add(%x, %y);
  multiply(tanh(%s), sigmoid(subtract(%s, %y)))
}
"#;

const SCALARS: &str = r#"#[version = "0.0.5"]
def @twice(%a: float32) -> float32 { %a * 2f }
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) -> (float32, Tensor[(2, 3), float32]) {
  let %a = 1.5f;
  let %b = if (%a < 2f) { @twice(%a) } else { %a - 1f };
  (%b, add(%x, %y))
}
"#;

/// The saved executables the cases damage: each program at -O0 (reference kernels, frame
/// arena) and -O2 (fused kir kernels).
fn saved() -> &'static [Vec<u8>] {
    static SAVED: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SAVED.get_or_init(|| {
        [(TENSORS, 0), (TENSORS, 2), (SCALARS, 0)]
            .iter()
            .map(|&(text, opt)| {
                Program::builder().source("mutated.relay", text).opt_level(opt).build().unwrap().save()
            })
            .collect()
    })
}

#[derive(Clone, Debug)]
enum Mutation {
    /// XOR a byte of the body.
    Flip(prop::sample::Index, u8),
    /// Overwrite a little-endian `u32` of the body.
    Word(prop::sample::Index, u32),
    /// Overwrite a little-endian `u64` of the body.
    Wide(prop::sample::Index, u64),
    /// Cut the body short.
    Truncate(prop::sample::Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let word = prop::sample::select(vec![0u32, 1, 2, 255, 1 << 16, 1 << 31, u32::MAX - 1, u32::MAX]);
    let wide = prop::sample::select(vec![0u64, 1 << 31, (1 << 32) - 1, 1 << 32, 1 << 40, 1 << 63, u64::MAX]);
    prop_oneof![
        4 => (any::<prop::sample::Index>(), 1u8..=255).prop_map(|(at, x)| Mutation::Flip(at, x)),
        3 => (any::<prop::sample::Index>(), word).prop_map(|(at, v)| Mutation::Word(at, v)),
        2 => (any::<prop::sample::Index>(), wide).prop_map(|(at, v)| Mutation::Wide(at, v)),
        1 => any::<prop::sample::Index>().prop_map(Mutation::Truncate),
    ]
}

/// `file` with `edits` applied to its body, the body length and the checksum recomputed.
fn damage(file: &[u8], edits: &[Mutation]) -> Vec<u8> {
    let mut body = file[HEADER..file.len() - 4].to_vec();
    for edit in edits {
        let put = |body: &mut Vec<u8>, at: &prop::sample::Index, bytes: &[u8]| {
            let i = at.index(body.len());
            let n = bytes.len().min(body.len() - i);
            body[i..i + n].copy_from_slice(&bytes[..n]);
        };
        match edit {
            Mutation::Flip(at, x) => {
                let i = at.index(body.len());
                body[i] ^= x;
            }
            Mutation::Word(at, v) => put(&mut body, at, &v.to_le_bytes()),
            Mutation::Wide(at, v) => put(&mut body, at, &v.to_le_bytes()),
            Mutation::Truncate(at) => body.truncate(at.index(body.len())),
        }
        if body.is_empty() {
            break;
        }
    }
    let mut out = file[..HEADER].to_vec();
    out[LENGTH_AT..HEADER].copy_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    out
}

/// Whether a run of `main` surely ends: every jump it can reach goes forward, no closure is
/// called, and the functions it can reach call each other without a cycle.
fn terminates(exe: &Executable) -> bool {
    fn visit(exe: &Executable, f: usize, active: &mut Vec<usize>, done: &mut HashSet<usize>) -> bool {
        if done.contains(&f) {
            return true;
        }
        if active.contains(&f) {
            return false;
        }
        active.push(f);
        let ok = exe.functions[f].code.iter().enumerate().all(|(pc, ins)| match ins {
            Instr::Goto { target }
            | Instr::If { else_target: target, .. }
            | Instr::IfCmp { else_target: target, .. }
            | Instr::IfCmpImm { else_target: target, .. } => target.0 as usize > pc,
            Instr::SwitchTag { targets, .. } => targets.iter().all(|t| t.0 as usize > pc),
            Instr::Invoke { func, .. } | Instr::TailCall { func, .. } => {
                visit(exe, func.0 as usize, active, done)
            }
            Instr::InvokeClosure { .. } | Instr::TailCallClosure { .. } => false,
            _ => true,
        });
        active.pop();
        done.insert(f);
        ok
    }
    exe.function_index("main").is_some_and(|f| visit(exe, f, &mut vec![], &mut HashSet::new()))
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Rejected,
    NotRun,
    Ran,
    Trapped,
}

/// Loads `bytes` under [`limits`] and, when its control flow surely ends, runs `main`.
fn try_case(bytes: Vec<u8>) -> Outcome {
    let Ok(exe) = Executable::load_with(&bytes, &limits()) else { return Outcome::Rejected };
    // A host binding with the same limits decodes every kir payload under them first.
    let payloads = exe.kernels.iter().filter_map(|k| k.kernel.as_deref());
    if payloads.clone().any(|p| kir::Kernel::from_bytes_with(p, &limits()).is_err()) {
        return Outcome::Rejected;
    }
    let Ok(program) = Program::from_executable(exe) else { return Outcome::Rejected };
    let _ = program.executable().disassemble();
    if !terminates(program.executable()) {
        return Outcome::NotRun;
    }
    let args: Vec<Value> = vec![
        tensor(vec![2, 3], vec![0.5f32, -1.0, 2.0, 0.0, 3.0, -0.25]).unwrap(),
        tensor(vec![2, 3], vec![1f32; 6]).unwrap(),
    ];
    let mut vm = program.vm_with(VmConfig { max_call_depth: 64, ..VmConfig::default() });
    match program.invoke(&mut vm, "main", args) {
        Ok(_) => Outcome::Ran,
        Err(_) => Outcome::Trapped,
    }
}

/// [`try_case`] on a watchdog thread.
fn run_case(bytes: Vec<u8>) -> Result<Outcome, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(try_case(bytes));
    });
    rx.recv_timeout(DEADLINE).map_err(|e| format!("the case did not finish within {DEADLINE:?}: {e}"))
}

#[test]
fn a_mutated_executable_is_rejected_or_runs_within_the_budget() {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let counts: [AtomicUsize; 4] = Default::default();
    let strategy = (any::<prop::sample::Index>(), prop::collection::vec(mutation(), 1..4));
    let result = runner.run(&strategy, |(file, edits)| {
        let files = saved();
        let bytes = damage(&files[file.index(files.len())], &edits);
        let outcome = run_case(bytes).map_err(TestCaseError::fail)?;
        counts[outcome as usize].fetch_add(1, Ordering::Relaxed);
        Ok(())
    });
    let [rejected, not_run, ran, trapped] = counts.map(AtomicUsize::into_inner);
    println!("{cases} mutated executables: {rejected} rejected, {ran} ran, {trapped} trapped or refused the arguments, {not_run} loaded but not run (could loop)");
    result.unwrap();
    assert!(rejected > 0 && ran > 0, "the cases exercise both outcomes");
}
