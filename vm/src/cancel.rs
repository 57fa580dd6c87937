//! Stopping a run from outside: a [`CancelHandle`] (a shared stop flag another thread may set)
//! and deadlines, which a watchdog thread turns into the same flag when they pass.
//!
//! The flag is one byte that everything running polls with a plain load: the interpreter at
//! calls, tail calls, kernel calls and backward jumps, JIT kernels between iterations of
//! their outermost loops. Nothing on those paths reads the clock — a deadline is enforced by
//! one process-wide watchdog thread that sleeps until the earliest deadline and sets the
//! flags of the handles whose deadline passed.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;

/// The flag's value while a run may continue.
const RUNNING: u8 = 0;
/// The flag's value after [`CancelHandle::cancel`].
const CANCELLED: u8 = 1;
/// The flag's value once a deadline armed with [`CancelHandle::expire_at`] has passed.
const EXPIRED: u8 = 2;

/// Why a run was stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StopReason {
    /// [`CancelHandle::cancel`] was called.
    #[error("cancelled")]
    Cancelled,
    /// The deadline passed (`VmConfig::deadline`, `relay-vm run --timeout`).
    #[error("deadline passed (time limit exceeded)")]
    DeadlinePassed,
}

/// A token that stops the runs of the VMs holding it: `Clone + Send + Sync`, so another
/// thread (a signal handler, a supervisor) can call [`CancelHandle::cancel`] while a run is in
/// progress. Stopping is final: once cancelled or expired, every later run traps at once.
#[derive(Clone, Debug, Default)]
pub struct CancelHandle {
    flag: Arc<AtomicU8>,
}

impl CancelHandle {
    /// A handle that has not stopped.
    pub fn new() -> CancelHandle {
        CancelHandle::default()
    }

    /// Stops the runs of every VM holding this handle: the run in progress traps at its next
    /// check (a call, a kernel call, a JIT kernel's next outermost iteration).
    pub fn cancel(&self) {
        // A passed deadline stays the reason.
        let _ = self.flag.compare_exchange(RUNNING, CANCELLED, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Stops the runs of every VM holding this handle once `deadline` passes (at once if it
    /// has). Several deadlines may be armed; the earliest wins.
    ///
    /// # Errors
    /// When the watchdog thread cannot be started.
    pub fn expire_at(&self, deadline: Instant) -> Result<(), String> {
        if Instant::now() >= deadline {
            self.expire();
            return Ok(());
        }
        let watchdog = watchdog()?;
        let mut queue = watchdog.queue.lock();
        queue.push((deadline, Arc::downgrade(&self.flag)));
        watchdog.wake.notify_one();
        Ok(())
    }

    /// Why runs stop, or `None` while they may continue.
    #[inline]
    pub fn stop_reason(&self) -> Option<StopReason> {
        reason(self.flag.load(Ordering::Relaxed))
    }

    /// The flag itself, for generated code to poll between loop iterations: non-zero means
    /// stop. Readers must not write it.
    pub fn as_atomic(&self) -> &AtomicU8 {
        &self.flag
    }

    fn expire(&self) {
        let _ = self.flag.compare_exchange(RUNNING, EXPIRED, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// The reason a flag value stands for.
#[inline]
pub(crate) fn reason(flag: u8) -> Option<StopReason> {
    match flag {
        RUNNING => None,
        EXPIRED => Some(StopReason::DeadlinePassed),
        _ => Some(StopReason::Cancelled),
    }
}

/// The deadlines still to come, and the condition variable their thread sleeps on.
struct Watchdog {
    queue: Mutex<Vec<(Instant, Weak<AtomicU8>)>>,
    wake: Condvar,
}

/// The process's watchdog, started by the first deadline.
fn watchdog() -> Result<&'static Watchdog, String> {
    static WATCHDOG: OnceLock<Result<&'static Watchdog, String>> = OnceLock::new();
    WATCHDOG
        .get_or_init(|| {
            // Lives as long as the process, as does its thread.
            let w: &'static Watchdog =
                Box::leak(Box::new(Watchdog { queue: Mutex::new(vec![]), wake: Condvar::new() }));
            std::thread::Builder::new()
                .name("relay-vm-deadlines".into())
                .spawn(move || watch(w))
                .map(|_| w)
                .map_err(|e| format!("cannot start the deadline thread: {e}"))
        })
        .clone()
}

/// The watchdog's loop: expires the flags whose deadline passed, forgets those nobody holds,
/// and sleeps until the next deadline (or a new one arrives).
fn watch(w: &Watchdog) {
    let mut queue = w.queue.lock();
    loop {
        let now = Instant::now();
        queue.retain(|(deadline, flag)| match flag.upgrade() {
            Some(flag) if *deadline <= now => {
                let _ = flag.compare_exchange(RUNNING, EXPIRED, Ordering::Relaxed, Ordering::Relaxed);
                false
            }
            Some(_) => true,
            None => false,
        });
        match queue.iter().map(|(d, _)| *d).min() {
            Some(next) => {
                w.wake.wait_for(&mut queue, next - now);
            }
            None => w.wake.wait(&mut queue),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn cancel_is_final_and_a_passed_deadline_keeps_its_reason() {
        let h = CancelHandle::new();
        assert_eq!(h.stop_reason(), None);
        let other_thread = h.clone();
        std::thread::spawn(move || other_thread.cancel()).join().unwrap();
        assert_eq!(h.stop_reason(), Some(StopReason::Cancelled));
        let late = CancelHandle::new();
        late.expire_at(Instant::now()).unwrap();
        late.cancel();
        assert_eq!(late.stop_reason(), Some(StopReason::DeadlinePassed));
    }

    #[test]
    fn the_watchdog_expires_the_earliest_deadline_first() {
        let (soon, later) = (CancelHandle::new(), CancelHandle::new());
        let start = Instant::now();
        later.expire_at(start + Duration::from_secs(3600)).unwrap();
        soon.expire_at(start + Duration::from_millis(20)).unwrap();
        while soon.stop_reason().is_none() {
            assert!(start.elapsed() < Duration::from_secs(60), "the deadline never fired");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(soon.stop_reason(), Some(StopReason::DeadlinePassed));
        assert_eq!(later.stop_reason(), None);
    }
}
