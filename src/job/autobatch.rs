//! `run --input FILE --batch B` and `bench --batch B`: the inputs B at a time on one thread,
//! their calls of one kernel with the same weights batched into one ([`relay::autobatch`]);
//! results print in input order, equal to `--batch 1`'s.

use super::parallel::{in_order, Outcome};
use super::{Entry, Passes, Timed};
use crate::Failure;
use relay::autobatch::Batcher;
use relay::batch::InputLine;
use relay::vm::{Value, VmConfig};
use relay::Program;
use std::time::{Duration, Instant};

/// Runs `items` (`(where from, JSON line)`) through `entry`, `batch` at a time, calling
/// `emit` for each result in input order.
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
    mut emit: impl FnMut(InputLine, Value, Duration) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let mut batcher = Batcher::new(program)?;
    let mut lanes: Vec<_> = (0..batch).map(|_| program.vm_with(config.clone())).collect();
    let mut outcomes: Vec<(usize, Outcome)> = vec![];
    let mut lines: Vec<Option<InputLine>> = vec![];
    let mut args: Vec<(usize, Vec<Value>)> = vec![];
    for (i, (what, text)) in items.iter().enumerate() {
        match entry.arguments(what, text) {
            Ok((line, a)) => {
                lines.push(Some(line));
                args.push((i, a));
            }
            Err(f) => {
                lines.push(None);
                outcomes.push((i, Outcome::Failed(f)));
            }
        }
    }
    let mut args = args.into_iter();
    batcher.run(
        &mut lanes,
        &entry.f.name,
        || args.next(),
        |i, result, time| {
            let outcome = match (result, lines[i].take()) {
                (Ok(v), Some(line)) => Outcome::Ran(line, v, time),
                (Err(e), _) => Outcome::Failed(e.into()),
                (Ok(_), None) => return true,
            };
            outcomes.push((i, outcome));
            true
        },
    )?;
    outcomes.sort_by_key(|(i, _)| *i);
    in_order(outcomes.into_iter(), &mut emit)
}

/// `bench --batch B`: `passes` over all of `inputs` (the entry's full argument lists), each
/// pass batching `batch` inputs at a time; an input's latency is from its start to its
/// result, and throughput is all timed runs over the timed passes' wall time.
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
) -> Result<Timed, Failure> {
    let mut batcher = Batcher::new(program)?;
    let mut lanes: Vec<_> = (0..batch).map(|_| program.vm_with(config.clone())).collect();
    let mut pass = |samples: &mut Vec<Duration>| -> Result<(), Failure> {
        let mut failed = None;
        let mut next = inputs.iter().cloned().enumerate();
        batcher.run(
            &mut lanes,
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
    };
    for _ in 0..passes.warmup {
        pass(&mut vec![])?;
    }
    let mut samples = Vec::new();
    let started = Instant::now();
    let mut reps = 0;
    while passes.another(reps, started, samples.len() + inputs.len()) {
        pass(&mut samples)?;
        reps += 1;
    }
    let wall = started.elapsed();
    let memory = lanes.iter().map(|vm| vm.memory_stats()).reduce(super::parallel::sum);
    Ok(Timed { samples, reps, wall, memory })
}
