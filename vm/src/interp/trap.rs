//! Run-time faults: the [`Trap`] a run returns, and the messages of the dispatch loop's
//! faults, built out of line as faults are rare.

use crate::cancel;
use crate::executable::Executable;
use crate::operand::Reg;
use crate::value::Value;

/// A run-time fault, returned to the host: which function, which instruction, what happened,
/// and the Relay call stack that led there.
///
/// Displayed as `trap in `f` at instruction 3: message`, then one `called from` line per
/// caller, innermost first, each with the caller's definition site when the executable
/// records it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("trap in `{function}` at instruction {pc}: {message}{}", CallStack(stack))]
pub struct Trap {
    /// The function that was running.
    pub function: String,
    /// The index of the faulting instruction in that function.
    pub pc: usize,
    /// What went wrong.
    pub message: String,
    /// The faulting function, then its callers, innermost first: at most
    /// [`MAX_TRAP_FRAMES`] of them, the outermost ones dropped beyond that.
    pub stack: Vec<TrapFrame>,
}

/// One active call when a [`Trap`] happened.
#[derive(Debug, Clone, PartialEq)]
pub struct TrapFrame {
    /// The function.
    pub function: String,
    /// Where it is defined (`file:line:col`); empty when the executable does not record it.
    pub source: String,
    /// The instruction it was running: the fault, or the call it waits on.
    pub pc: usize,
}

/// How many frames a [`Trap`] keeps: a fault 100,000 calls deep reports the innermost ones
/// (where the fault is) without copying the whole stack.
pub const MAX_TRAP_FRAMES: usize = 64;

/// The callers' lines of a trap's message.
struct CallStack<'a>(&'a [TrapFrame]);

impl std::fmt::Display for CallStack<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(def) = self.0.first().filter(|d| !d.source.is_empty()) {
            write!(f, "\n  in `{}` defined at {}", def.function, def.source)?;
        }
        for caller in self.0.iter().skip(1) {
            write!(f, "\n  called from `{}` at instruction {}", caller.function, caller.pc)?;
            if !caller.source.is_empty() {
                write!(f, " (defined at {})", caller.source)?;
            }
        }
        Ok(())
    }
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

/// The trap for a fault at `pc` of function `func`, called through `callers` (outermost
/// first, each a function index and the pc of its pending call); out of line, as faults are
/// rare.
#[cold]
#[inline(never)]
pub(super) fn trap_at(
    exe: &Executable,
    callers: impl DoubleEndedIterator<Item = (u32, usize)>,
    func: u32,
    pc: usize,
    message: String,
) -> Trap {
    let frame = |(func, pc): (u32, usize)| match exe.functions.get(func as usize) {
        Some(f) => TrapFrame { function: f.name.clone(), source: f.source.clone(), pc },
        None => TrapFrame { function: format!("#{func}"), source: String::new(), pc },
    };
    let stack: Vec<TrapFrame> =
        std::iter::once((func, pc)).chain(callers.rev()).take(MAX_TRAP_FRAMES).map(frame).collect();
    Trap { function: stack[0].function.clone(), pc, message, stack }
}
