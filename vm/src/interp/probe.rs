//! What the dispatch loop does before each instruction besides running it: nothing in a normal
//! run (the loop is compiled for [`NoProbe`], whose hook is empty and inlined away, so the
//! profiler costs nothing when off), or counting and timing by instruction class
//! ([`InstrProfile`], `relay-vm profile`).

use crate::isa::{Instr, InstrClass};
use std::time::{Duration, Instant};

/// A hook the dispatch loop calls before each instruction.
pub(super) trait Probe {
    /// `ins` is about to run.
    fn before(&mut self, ins: &Instr);
    /// The run ended (returned or trapped) after the last instruction `before` saw.
    fn finish(&mut self);
    /// Whether the run stops before calling `kernel`, to be resumed later (a lane of a
    /// batched run, `lane.rs`); no by default, which the compiler folds away.
    #[inline(always)]
    fn pauses_at(&self, kernel: u32) -> bool {
        let _ = kernel;
        false
    }
}

/// The hook of a normal run: does nothing.
pub(super) struct NoProbe;

impl Probe for NoProbe {
    #[inline(always)]
    fn before(&mut self, _: &Instr) {}
    #[inline(always)]
    fn finish(&mut self) {}
}

const CLASSES: usize = InstrClass::ALL.len();

/// How many instructions of each class a VM ran and the time from each one's start to the
/// next one's (its self time: a call's callee and a kernel's work count to the callee's
/// instructions and to `kernel call`), summed over the runs since the profile started
/// ([`crate::Vm::start_instr_profile`]). Each instruction costs one clock read more while
/// profiled (tens of nanoseconds), which the times include.
#[derive(Clone, Debug)]
pub struct InstrProfile {
    counts: [u64; CLASSES],
    nanos: [u64; CLASSES],
    /// The instruction running now: its class and start.
    current: Option<(InstrClass, Instant)>,
}

/// One instruction class's count and time in an [`InstrProfile`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstrClassRow {
    /// The class.
    pub class: InstrClass,
    /// Instructions of the class that ran.
    pub count: u64,
    /// Their self time, summed.
    pub time: Duration,
}

impl Default for InstrProfile {
    fn default() -> InstrProfile {
        InstrProfile { counts: [0; CLASSES], nanos: [0; CLASSES], current: None }
    }
}

impl InstrProfile {
    /// Every class that ran, most time first (ties in class order).
    pub fn rows(&self) -> Vec<InstrClassRow> {
        let mut rows: Vec<InstrClassRow> = InstrClass::ALL
            .iter()
            .map(|&class| InstrClassRow {
                class,
                count: self.counts[class as usize],
                time: Duration::from_nanos(self.nanos[class as usize]),
            })
            .filter(|r| r.count > 0)
            .collect();
        rows.sort_by(|a, b| b.time.cmp(&a.time).then(a.class.cmp(&b.class)));
        rows
    }

    /// Adds `other`'s counts and times to these (profiles of several VMs).
    pub fn merge(&mut self, other: &InstrProfile) {
        for i in 0..CLASSES {
            self.counts[i] += other.counts[i];
            self.nanos[i] += other.nanos[i];
        }
    }

    /// Charges the running instruction's time up to `now` to its class.
    fn charge(&mut self, now: Instant) {
        if let Some((class, since)) = self.current.take() {
            let nanos = u64::try_from(now.duration_since(since).as_nanos()).unwrap_or(u64::MAX);
            self.nanos[class as usize] = self.nanos[class as usize].saturating_add(nanos);
        }
    }
}

impl Probe for InstrProfile {
    #[inline]
    fn before(&mut self, ins: &Instr) {
        let now = Instant::now();
        self.charge(now);
        let class = ins.class();
        self.counts[class as usize] += 1;
        self.current = Some((class, now));
    }

    fn finish(&mut self) {
        self.charge(Instant::now());
    }
}
