//! The value stack: the register windows of every active call, one after another in one
//! vector that grows but never shrinks during a run. The running function's window is
//! `regs[base..top]`; every slot at or above `top` is empty, so entering a call writes its
//! arguments into empty slots and leaving it clears its window — no allocation, no resizing.

use crate::memory::Pool;
use crate::operand::Reg;
use crate::value::Value;

/// Why gathering call arguments failed.
pub(super) enum ArgError {
    /// The register was empty.
    Empty(Reg),
    /// The register is outside the frame.
    OutOfFrame(Reg),
    /// The callee register is not a closure.
    NotAClosure(Reg),
    /// The value stack would need more registers than the memory budget allows.
    TooManyRegisters(usize),
}

impl ArgError {
    pub(super) fn message(&self) -> String {
        match self {
            ArgError::Empty(r) => format!("read of empty register ${}", r.0),
            ArgError::OutOfFrame(r) => format!("register ${} outside the frame", r.0),
            ArgError::NotAClosure(r) => format!("register ${} holds no closure", r.0),
            ArgError::TooManyRegisters(n) => {
                format!("a value stack of {n} registers exceeds the memory budget")
            }
        }
    }
}

/// Stores `v` in `slot`, running no drop code when the old content has none (the common
/// case: an empty slot, or a register that held a scalar). A heap value it displaces is
/// returned, for the pool to recycle (and count as freed).
#[inline(always)]
#[must_use]
pub(super) fn put(slot: &mut Option<Value>, v: Value) -> Option<Value> {
    match slot {
        None | Some(Value::Scalar(_)) => {
            std::mem::forget(slot.replace(v));
            None
        }
        Some(_) => slot.replace(v),
    }
}

/// Empties `slot`, running drop code only for a heap value; a dead tensor's buffer goes to
/// `pool` for reuse.
#[inline(always)]
fn clear(slot: &mut Option<Value>, pool: &mut Pool) {
    match slot {
        None => {}
        Some(Value::Scalar(_)) => std::mem::forget(slot.take()),
        Some(_) => {
            if let Some(v) = slot.take() {
                pool.recycle_value(v);
            }
        }
    }
}

/// Makes `regs` at least `len` slots long, growing geometrically up to `limit` slots.
///
/// # Errors
/// When `len` is over `limit` or the system refuses the memory.
#[cold]
pub(super) fn grow(regs: &mut Vec<Option<Value>>, len: usize, limit: usize) -> Result<(), ArgError> {
    if len > limit {
        return Err(ArgError::TooManyRegisters(len));
    }
    let len = len.max(regs.len() * 2).max(64).min(limit);
    regs.try_reserve_exact(len - regs.len()).map_err(|_| ArgError::TooManyRegisters(len))?;
    regs.resize_with(len, || None);
    Ok(())
}

/// Sets up the window `regs[top..top + num_regs]` of a call from the window
/// `regs[base..top]`: the values captured by the closure in register `closure` (if any),
/// then the values of the caller's registers `args`: moved for the arguments whose bit is set
/// in `moves` (their last use), cloned for the rest. The stack grows up to `limit` registers.
///
/// # Errors
/// An argument register that is empty or outside the caller's window; a `closure` register
/// without a closure; a stack over `limit`.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the caller's window, the callee's, and the stack's bound
pub(super) fn enter(
    regs: &mut Vec<Option<Value>>,
    base: usize,
    top: usize,
    num_regs: usize,
    closure: Option<Reg>,
    args: &[Reg],
    moves: u64,
    limit: usize,
) -> Result<(), ArgError> {
    if regs.len() < top + num_regs {
        grow(regs, top + num_regs, limit)?;
    }
    let (below, above) = regs.split_at_mut(top);
    let caller = &mut below[base..];
    let mut slots = above[..num_regs].iter_mut();
    if let Some(c) = closure {
        let Some(Some(Value::Closure(c))) = caller.get(c.0 as usize) else {
            return Err(ArgError::NotAClosure(c));
        };
        // Captured values drive the loop, so no slot is consumed past the last of them.
        for (v, slot) in c.captured.iter().zip(slots.by_ref()) {
            // Above `top` every slot is empty: nothing is displaced.
            let _ = put(slot, v.clone());
        }
    }
    for (i, (slot, &a)) in slots.zip(args).enumerate() {
        match caller.get_mut(a.0 as usize) {
            Some(Some(Value::Scalar(s))) => drop(put(slot, Value::Scalar(*s))),
            Some(from @ Some(_)) if moves.checked_shr(i as u32).is_some_and(|m| m & 1 != 0) => {
                drop(put(slot, from.take().ok_or(ArgError::Empty(a))?))
            }
            Some(Some(v)) => drop(put(slot, v.clone())),
            Some(None) => return Err(ArgError::Empty(a)),
            None => return Err(ArgError::OutOfFrame(a)),
        }
    }
    Ok(())
}

/// Clears the window `regs[base..top]` of a returning call (the result was taken out).
#[inline]
pub(super) fn leave(regs: &mut [Option<Value>], base: usize, top: usize, pool: &mut Pool) {
    if let Some(window) = regs.get_mut(base..top) {
        window.iter_mut().for_each(|s| clear(s, pool));
    }
}

/// Turns the window `regs[base..top]` into a window of `num_regs` registers holding
/// `captured`, then the values of its registers `args`, and nothing else (a stale tensor
/// must not pass for a preallocated kernel output, nor keep memory alive). Returns the new
/// `top`.
///
/// The old window dies, so argument values are moved, not cloned. When the moves can run in
/// order without clobbering a source still to be read — the usual case, as arguments are
/// computed into fresh registers above the parameters — they go straight to their slots;
/// otherwise through a temporary buffer.
///
/// # Errors
/// An argument register that is empty or outside the window; a stack over `limit`
/// registers.
#[inline]
#[allow(clippy::too_many_arguments)] // the window, the callee's, and the stack's bound
pub(super) fn reuse(
    regs: &mut Vec<Option<Value>>,
    base: usize,
    top: usize,
    num_regs: usize,
    captured: &[Value],
    args: &[Reg],
    pool: &mut Pool,
    limit: usize,
) -> Result<usize, ArgError> {
    let n = captured.len() + args.len();
    let new_top = base + num_regs;
    // The slots this touches: the old window, the new one, and room for the arguments.
    let end = top.max(new_top).max(base + n);
    if regs.len() < end {
        grow(regs, end, limit)?;
    }
    let window = &mut regs[base..end];
    let old_len = top - base;
    if moves_in_order(captured.len(), args) {
        for (slot, v) in window.iter_mut().zip(captured) {
            if let Some(old) = put(slot, v.clone()) {
                pool.recycle_value(old);
            }
        }
        for (j, &a) in args.iter().enumerate() {
            // Swapped rather than moved: whatever the destination held lands in a register
            // no later move reads, and is cleared below.
            match window[..old_len].get(a.0 as usize) {
                Some(Some(_)) => window.swap(captured.len() + j, a.0 as usize),
                Some(None) => return Err(ArgError::Empty(a)),
                None => return Err(ArgError::OutOfFrame(a)),
            }
        }
    } else {
        let mut tmp: Vec<Value> = Vec::with_capacity(n);
        tmp.extend(captured.iter().cloned());
        for (j, &a) in args.iter().enumerate() {
            let read = match window[..old_len].get_mut(a.0 as usize) {
                Some(slot) => slot.take().ok_or(ArgError::Empty(a)),
                None => Err(ArgError::OutOfFrame(a)),
            };
            let v = match read {
                Ok(v) => v,
                // Already moved: the register is passed more than once.
                Err(e) => match args[..j].iter().position(|&b| b == a) {
                    Some(i) => tmp[captured.len() + i].clone(),
                    None => return Err(e),
                },
            };
            tmp.push(v);
        }
        for (slot, v) in window.iter_mut().zip(tmp) {
            if let Some(old) = put(slot, v) {
                pool.recycle_value(old);
            }
        }
    }
    // Arguments beyond the callee's registers (only in unverified code) are dropped too.
    clear_from(window, n.min(num_regs), pool);
    Ok(new_top)
}

/// Empties the registers of `window` from `start` on.
#[inline]
pub(super) fn clear_from(window: &mut [Option<Value>], start: usize, pool: &mut Pool) {
    if let Some(rest) = window.get_mut(start..) {
        rest.iter_mut().for_each(|s| clear(s, pool));
    }
}

/// Whether moving `args` one by one to the registers after `offset` captured values reads
/// each source before anything overwrites it: sources are distinct and none is a slot
/// already written (argument `j` must not come from below `offset + j`).
#[inline]
pub(super) fn moves_in_order(offset: usize, args: &[Reg]) -> bool {
    let mut seen = 0u64;
    for (j, &a) in args.iter().enumerate() {
        let a = a.0 as usize;
        if a < offset + j || a >= 64 || seen & (1 << a) != 0 {
            return false;
        }
        seen |= 1 << a;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::ScalarValue;
    use relay_devices::DType;

    fn regs(rs: &[u32]) -> Vec<Reg> {
        rs.iter().map(|&r| Reg(r)).collect()
    }

    #[test]
    fn which_argument_lists_move_in_order() {
        assert!(moves_in_order(0, &regs(&[0, 1, 2])));
        assert!(moves_in_order(0, &regs(&[3, 4])));
        assert!(moves_in_order(1, &regs(&[1, 5])));
        assert!(!moves_in_order(0, &regs(&[1, 0])));
        assert!(!moves_in_order(0, &regs(&[2, 2])));
        assert!(!moves_in_order(1, &regs(&[0])));
        assert!(!moves_in_order(0, &regs(&[64])));
        assert!(moves_in_order(0, &[]));
    }

    #[test]
    fn windows_grow_reuse_and_clear() {
        let v = |i: i64| Some(Value::Scalar(ScalarValue::int(DType::I32, i)));
        let ints = |s: &[Option<Value>]| -> Vec<Option<i64>> {
            s.iter()
                .map(|x| match x {
                    Some(Value::Scalar(s)) => Some(s.as_i64()),
                    _ => None,
                })
                .collect()
        };
        let mut stack: Vec<Option<Value>> = vec![v(10), v(11), None];
        // A call from the window 0..3 to a callee of 4 registers taking $1, $0.
        assert!(enter(&mut stack, 0, 3, 4, None, &regs(&[1, 0]), 0, usize::MAX).is_ok());
        assert_eq!(ints(&stack[3..7]), [Some(11), Some(10), None, None]);
        // A tail call from that window to one of 2 registers taking its $1 twice.
        let pool = &mut Pool::default();
        assert_eq!(reuse(&mut stack, 3, 7, 2, &[], &regs(&[1, 1]), pool, usize::MAX).ok(), Some(5));
        assert_eq!(ints(&stack[3..7]), [Some(10), Some(10), None, None]);
        leave(&mut stack, 3, 5, pool);
        assert!(stack[3..].iter().all(Option::is_none));
        assert!(matches!(
            enter(&mut stack, 0, 3, 1, None, &regs(&[2]), 0, usize::MAX),
            Err(ArgError::Empty(Reg(2)))
        ));
        assert!(matches!(
            reuse(&mut stack, 0, 3, 1, &[], &regs(&[7]), pool, usize::MAX),
            Err(ArgError::OutOfFrame(Reg(7)))
        ));
        // A window past the stack's bound is an error, not an allocation.
        assert!(matches!(
            enter(&mut stack, 0, 3, 1 << 40, None, &[], 0, 1 << 20),
            Err(ArgError::TooManyRegisters(_))
        ));
    }
}
