//! `run --input FILE --batch B -j N` and `bench --batch B -j N`: the inputs B at a time on
//! each of N threads, their calls of one kernel with the same weights batched into one
//! ([`relay::autobatch`]); results print in input order, equal to `--batch 1`'s.
//!
//! Each thread runs its own [`Batcher`] (its own lanes and batched kernels, over the one
//! shared program and weights) on the inputs it takes from one `crossbeam` channel, so a
//! thread whose inputs finish early takes more rather than waiting for the others.

use super::parallel::{in_order, on_threads, panicked, Outcome};
use super::{Entry, Passes, Timed};
use crate::Failure;
use crossbeam_channel::unbounded;
use relay::autobatch::Batcher;
use relay::vm::{Value, Vm, VmConfig};
use relay::{Error, Program};
use std::time::{Duration, Instant};

/// An input's tag, its result and its latency.
type Finished = (usize, Result<Value, Error>, Duration);

/// Runs `items` (`(where from, JSON line)`) through `entry`, `batch` at a time on each of
/// `jobs` threads, calling `emit` for each result in input order.
///
/// # Errors
/// The first input, in input order, that does not parse or traps (the results before it are
/// emitted), or the first error of `emit`.
pub(super) fn run(
    program: &Program,
    config: &VmConfig,
    entry: &Entry,
    items: &[(String, String)],
    batch: usize,
    jobs: usize,
    mut emit: impl FnMut(Option<i64>, Value, Duration) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let mut outcomes: Vec<(usize, Outcome)> = vec![];
    let mut lines = vec![];
    let (work_tx, work_rx) = unbounded::<(usize, Vec<Value>)>();
    for (i, (what, text)) in items.iter().enumerate() {
        match entry.arguments(what, text) {
            Ok((line, args)) => {
                lines.push(Some(line));
                // The receiver lives until every worker is done.
                let _ = work_tx.send((i, args));
            }
            Err(f) => {
                lines.push(None);
                outcomes.push((i, Outcome::Failed(f)));
            }
        }
    }
    drop(work_tx);
    let per_thread: Vec<Result<Vec<Finished>, Failure>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                let work_rx = work_rx.clone();
                scope.spawn(move || -> Result<Vec<Finished>, Failure> {
                    let mut batcher = Batcher::new(program)?;
                    let mut lanes: Vec<_> = (0..batch).map(|_| program.vm_with(config.clone())).collect();
                    let mut finished = vec![];
                    batcher.run(
                        &mut lanes,
                        &entry.f.name,
                        || work_rx.try_recv().ok(),
                        |i, result, time| {
                            finished.push((i, result, time));
                            true
                        },
                    )?;
                    Ok(finished)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_else(|_| Err(panicked("batching")))).collect()
    });
    for finished in per_thread {
        for (i, result, time) in finished? {
            let outcome = match (result, lines[i].take()) {
                (Ok(v), Some(line)) => Outcome::Ran(line, v, time),
                (Err(e), _) => Outcome::Failed(e.into()),
                (Ok(_), None) => continue,
            };
            outcomes.push((i, outcome));
        }
    }
    // `in_order` puts the outcomes (per thread, then the bad lines) back in input order.
    in_order(outcomes.into_iter(), &mut emit)
}

/// `bench --batch B -j N`: on each of `jobs` threads ([`on_threads`]), `passes` over all of
/// `inputs` (the entry's full argument lists), each pass batching `batch` inputs at a time;
/// an input's latency is from its start to its result, and throughput is all timed runs over
/// the slowest thread's wall time.
///
/// # Errors
/// The first trap.
pub(super) fn bench(
    program: &Program,
    config: &VmConfig,
    entry: &Entry,
    inputs: &[Vec<Value>],
    passes: &Passes,
    batch: usize,
    jobs: usize,
) -> Result<Timed, Failure> {
    on_threads(jobs, |ready| {
        let mut lanes: Vec<_> = (0..batch).map(|_| program.vm_with(config.clone())).collect();
        // A thread that fails still meets the others at the barrier.
        let warm = Batcher::new(program).map_err(Failure::from).and_then(|mut batcher| {
            (0..passes.warmup)
                .try_for_each(|_| pass(&mut batcher, &mut lanes, entry, inputs, &mut vec![]))
                .map(|()| batcher)
        });
        ready.wait();
        let mut batcher = warm?;
        // The timed passes' calls only.
        batcher.take_group_sizes();
        let mut samples = Vec::new();
        let started = Instant::now();
        let mut reps = 0;
        while passes.another(reps, started, samples.len() + inputs.len()) {
            pass(&mut batcher, &mut lanes, entry, inputs, &mut samples)?;
            reps += 1;
        }
        let wall = started.elapsed();
        let memory = lanes.iter().map(|vm| vm.memory_stats()).reduce(super::parallel::sum);
        let groups = Some(batcher.take_group_sizes());
        Ok(Timed { samples, reps, wall, memory, groups })
    })
}

/// One pass over all of `inputs` on `lanes`, each input's latency appended to `samples`.
///
/// # Errors
/// The first trap.
fn pass<'p>(
    batcher: &mut Batcher<'p>,
    lanes: &mut [Vm<'p>],
    entry: &Entry,
    inputs: &[Vec<Value>],
    samples: &mut Vec<Duration>,
) -> Result<(), Failure> {
    let mut failed = None;
    let mut next = inputs.iter().cloned().enumerate();
    batcher.run(
        lanes,
        &entry.f.name,
        || next.next(),
        |_, result, time| match result {
            Ok(_) => {
                samples.push(time);
                true
            }
            Err(e) => {
                failed = Some(e);
                false
            }
        },
    )?;
    failed.map_or(Ok(()), |e| Err(e.into()))
}
