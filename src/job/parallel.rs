//! `run --input FILE -j N` and `bench -j N`: the inputs on N worker threads, each with its own VM on the one
//! shared program (its executable, kernels and packed weights are shared, read-only), and
//! the results handed back in input order.
//!
//! Workers take input indices from one `crossbeam` channel, so a slow input never holds up
//! the others (work is shared, not split up front), and send each outcome back on another;
//! this thread prints outcome `i` as soon as outcomes `0..i` are printed. A VM's result does
//! not depend on which thread ran it or what ran before (the packed and unpacked kernels sum
//! in one order), so the output is the same bits as with one thread.

use super::{Entry, Passes, Timed};
use crate::{Failure, EXIT_TRAP};
use crossbeam_channel::unbounded;
use relay::vm::{CancelHandle, MemoryStats, StopReason, Value, VmConfig};
use relay::Program;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// What a worker reports for one input.
pub(super) enum Outcome {
    /// The input ran: its line, its result and its time in the VM.
    Ran(Option<i64>, Value, Duration),
    /// Its run was cancelled (SIGINT).
    Cancelled,
    /// A bad input line or a trap.
    Failed(Failure),
}

/// Runs `items` (`(where from, JSON line)`) through `entry` on `jobs` VMs made with `config`,
/// calling `emit` for each result in input order. Stops at the first cancelled input
/// (SIGINT cancels every worker's VM) and returns; `emit` has then seen the inputs before it.
///
/// # Errors
/// The first input, in input order, that does not parse or traps (the results before it are
/// emitted), or the first error of `emit`.
pub(super) fn run(
    program: &Program,
    config: &VmConfig,
    entry: &Entry,
    items: &[(String, String)],
    jobs: usize,
    mut emit: impl FnMut(Option<i64>, Value, Duration) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let vms: Vec<_> = (0..jobs).map(|_| program.vm_with(config.clone())).collect();
    let cancels: Vec<CancelHandle> = vms.iter().map(|vm| vm.cancel_handle().clone()).collect();
    let on_sigint = cancels.clone();
    if let Err(e) = ctrlc::set_handler(move || on_sigint.iter().for_each(CancelHandle::cancel)) {
        eprintln!("warning: Ctrl-C will not print the results so far: {e}");
    }
    let (work_tx, work_rx) = unbounded::<usize>();
    (0..items.len()).for_each(|i| {
        // The receiver lives until every worker is done.
        let _ = work_tx.send(i);
    });
    drop(work_tx);
    let (done_tx, done_rx) = unbounded::<(usize, Outcome)>();
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for mut vm in vms {
            let (work_rx, done_tx, stop) = (work_rx.clone(), done_tx.clone(), &stop);
            scope.spawn(move || {
                while let Ok(i) = work_rx.recv() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let (what, text) = &items[i];
                    let outcome = match entry.arguments(what, text) {
                        Err(f) => Outcome::Failed(f),
                        Ok((line, args)) => {
                            let start = Instant::now();
                            match program.invoke(&mut vm, &entry.f.name, args) {
                                Ok(result) => Outcome::Ran(line, result, start.elapsed()),
                                Err(_) if vm.cancel_handle().stop_reason() == Some(StopReason::Cancelled) => {
                                    Outcome::Cancelled
                                }
                                Err(e) => Outcome::Failed(e.into()),
                            }
                        }
                    };
                    if done_tx.send((i, outcome)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        let result = in_order(done_rx.iter(), &mut emit);
        // Whatever ended it, the workers stop: no more inputs, and runs still in progress
        // (after a failure or SIGINT) are cancelled, since their outcomes are not wanted.
        stop.store(true, Ordering::Relaxed);
        cancels.iter().for_each(CancelHandle::cancel);
        drop(done_rx);
        result
    })
}

/// The failure of a worker thread that panicked (`what`: the kind of thread).
pub(super) fn panicked(what: &str) -> Failure {
    Failure { code: EXIT_TRAP, message: format!("error: a {what} thread panicked\n") }
}

/// Emits the outcomes of `outcomes` (in completion order) in input order, until an input
/// fails (its error), is cancelled, or all are emitted.
pub(super) fn in_order(
    outcomes: impl Iterator<Item = (usize, Outcome)>,
    emit: &mut impl FnMut(Option<i64>, Value, Duration) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let mut waiting: BTreeMap<usize, Outcome> = BTreeMap::new();
    let mut next = 0;
    for (i, outcome) in outcomes {
        waiting.insert(i, outcome);
        while let Some(outcome) = waiting.remove(&next) {
            match outcome {
                Outcome::Ran(line, result, time) => emit(line, result, time)?,
                Outcome::Cancelled => return Ok(()),
                Outcome::Failed(failure) => return Err(failure),
            }
            next += 1;
        }
    }
    Ok(())
}

/// `bench -j N`: every one of `jobs` threads, each with its own VM, makes `passes` over all of
/// `inputs` (the entry's full argument lists); the timed passes start together after every
/// thread's warm-up ([`on_threads`]).
///
/// # Errors
/// The first trap of any thread.
pub(super) fn bench(
    program: &Program,
    config: &VmConfig,
    entry: &Entry,
    inputs: &[Vec<Value>],
    passes: &Passes,
    jobs: usize,
) -> Result<Timed, Failure> {
    on_threads(jobs, |ready| {
        let mut vm = program.vm_with(config.clone());
        let mut run = |args: &Vec<Value>| program.invoke(&mut vm, &entry.f.name, args.clone());
        // A thread that traps still meets the others at the barrier.
        let warm = (0..passes.warmup).try_for_each(|_| inputs.iter().try_for_each(|a| run(a).map(drop)));
        ready.wait();
        warm?;
        let mut samples = Vec::new();
        let started = Instant::now();
        let mut reps = 0;
        while passes.another(reps, started, samples.len() + inputs.len()) {
            for args in inputs {
                let start = Instant::now();
                run(args)?;
                samples.push(start.elapsed());
            }
            reps += 1;
        }
        let wall = started.elapsed();
        Ok(Timed { samples, reps, wall, memory: Some(vm.memory_stats()), groups: None })
    })
}

/// Runs `thread` on each of `jobs` threads, each passed one `Barrier` for all, which it must
/// wait at exactly once (after its warm-up, whether that failed or not) so that the timed
/// passes start together; pools their figures: latencies together, allocation counts and
/// batched calls summed, and the wall time the slowest thread's, so throughput is all timed runs over it.
///
/// # Errors
/// The first thread's error, in thread order, or a panicked thread.
pub(super) fn on_threads(
    jobs: usize,
    thread: impl Fn(&Barrier) -> Result<Timed, Failure> + Sync,
) -> Result<Timed, Failure> {
    let ready = Barrier::new(jobs);
    let per_thread: Vec<Result<Timed, Failure>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs).map(|_| scope.spawn(|| thread(&ready))).collect();
        workers.into_iter().map(|w| w.join().unwrap_or_else(|_| Err(panicked("benchmark")))).collect()
    });
    let mut all =
        Timed { samples: vec![], reps: usize::MAX, wall: Duration::ZERO, memory: None, groups: None };
    for t in per_thread {
        let t = t?;
        all.samples.extend(t.samples);
        all.reps = all.reps.min(t.reps);
        all.wall = all.wall.max(t.wall);
        all.memory = Some(sum(all.memory.unwrap_or_default(), t.memory.unwrap_or_default()));
        if let Some(g) = t.groups {
            all.groups.get_or_insert_with(Default::default).add(&g);
        }
    }
    Ok(all)
}

/// Two VMs' allocation counts together (peaks are each VM's own: the larger is kept).
pub(super) fn sum(a: MemoryStats, b: MemoryStats) -> MemoryStats {
    MemoryStats {
        arena_allocs: a.arena_allocs + b.arena_allocs,
        arena_fallbacks: a.arena_fallbacks + b.arena_fallbacks,
        arena_blocks: a.arena_blocks + b.arena_blocks,
        pool_allocs: a.pool_allocs + b.pool_allocs,
        system_allocs: a.system_allocs + b.system_allocs,
        system_bytes: a.system_bytes + b.system_bytes,
        peak_arena_bytes: a.peak_arena_bytes.max(b.peak_arena_bytes),
        peak_pool_bytes: a.peak_pool_bytes.max(b.peak_pool_bytes),
    }
}
