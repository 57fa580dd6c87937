//! Run-time faults: the [`Trap`] a run returns, and the messages of the dispatch loop's
//! faults, built out of line as faults are rare.

use crate::cancel;
use crate::executable::Executable;
use crate::operand::Reg;
use crate::value::Value;

/// A run-time fault, returned to the host: which function, which instruction, what happened.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("trap in `{function}` at instruction {pc}: {message}")]
pub struct Trap {
    /// The function that was running.
    pub function: String,
    /// The index of the faulting instruction in that function.
    pub pc: usize,
    /// What went wrong.
    pub message: String,
}

/// The trap message for a stop flag's value.
#[cold]
#[inline(never)]
pub(super) fn stopped(flag: u8) -> String {
    cancel::reason(flag).map_or_else(|| "stopped".to_string(), |r| r.to_string())
}

/// Why register `r` of `window` could not be read as the instruction wanted.
#[cold]
#[inline(never)]
pub(super) fn read_error(window: &[Option<Value>], r: Reg) -> String {
    match window.get(r.0 as usize) {
        None => format!("register ${} outside the frame", r.0),
        Some(None) => format!("read of empty register ${}", r.0),
        Some(Some(v)) => format!("expected a scalar in ${}, found a {}", r.0, v.kind()),
    }
}

/// The trap for a fault at `pc` of function `func`; out of line, as faults are rare.
#[cold]
#[inline(never)]
pub(super) fn trap_at(exe: &Executable, func: u32, pc: usize, message: String) -> Trap {
    let function = exe.functions.get(func as usize).map_or_else(|| format!("#{func}"), |f| f.name.clone());
    Trap { function, pc, message }
}
