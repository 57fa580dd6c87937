//! Run-time faults: the [`Trap`] a run returns, and the messages of the dispatch loop's
//! faults, built out of line as faults are rare.

use crate::cancel;
use crate::executable::Executable;
use crate::operand::Reg;
use crate::value::Value;

/// A run-time fault, returned to the host: what happened, and the Relay call stack that led
/// there (its first frame says which function and instruction faulted).
///
/// Displayed as `trap in `f` at instruction 3: message`, then one `at @f (file:line:col)` line
/// per active call, innermost first: the source of the faulting instruction, then of each
/// caller's pending call (its definition site, or its instruction, when the executable does
/// not record that). A fault before any function runs (an unknown entry, a wrong argument
/// count) has no frames and displays as `trap: message`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{message}{}", Where(stack.first()), CallStack(stack))]
pub struct Trap {
    /// What went wrong.
    pub message: String,
    /// The faulting function, then its callers, innermost first: at most
    /// [`MAX_TRAP_FRAMES`] of them, the outermost ones dropped beyond that; empty when the
    /// fault came before any function ran.
    pub stack: Vec<TrapFrame>,
}

impl Trap {
    /// A fault before any function ran (no call stack).
    pub fn outside(message: impl Into<String>) -> Trap {
        Trap { message: message.into(), stack: vec![] }
    }
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
    /// Where that instruction comes from (`file:line:col`): the faulting expression, or the
    /// call expression; empty when the executable does not record it.
    pub span: String,
}

/// How many frames a [`Trap`] keeps: a fault 100,000 calls deep reports the innermost ones
/// (where the fault is) without copying the whole stack.
pub const MAX_TRAP_FRAMES: usize = 64;

/// The head of a trap's message: the faulting function and instruction.
struct Where<'a>(Option<&'a TrapFrame>);

impl std::fmt::Display for Where<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(frame) => write!(f, "trap in `{}` at instruction {}: ", frame.function, frame.pc),
            None => write!(f, "trap: "),
        }
    }
}

/// The callers' lines of a trap's message.
struct CallStack<'a>(&'a [TrapFrame]);

impl std::fmt::Display for CallStack<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for frame in self.0 {
            write!(f, "\n  at @{} (", frame.function)?;
            if !frame.span.is_empty() {
                write!(f, "{})", frame.span)?;
            } else if !frame.source.is_empty() {
                write!(f, "instruction {}, defined at {})", frame.pc, frame.source)?;
            } else {
                write!(f, "instruction {})", frame.pc)?;
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
        Some(f) => TrapFrame {
            function: f.name.clone(),
            source: f.source.clone(),
            pc,
            span: f.spans.location(pc).unwrap_or_default(),
        },
        None => TrapFrame { function: format!("#{func}"), source: String::new(), pc, span: String::new() },
    };
    let stack: Vec<TrapFrame> =
        std::iter::once((func, pc)).chain(callers.rev()).take(MAX_TRAP_FRAMES).map(frame).collect();
    Trap { message, stack }
}
