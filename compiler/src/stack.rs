//! Recursion over user-sized structure without overflowing the host's stack.
//!
//! Walks whose depth follows the program (nested `if`/`match` arms, patterns, types, printed
//! terms) run each level through [`grow`]: when less than [`RED_ZONE`] bytes of the current
//! stack are left, the next levels run on a fresh heap-allocated segment of [`SEGMENT`]
//! bytes. Depth is then bounded by memory, not by the thread's stack size, so the parser's
//! nesting limit (100,000 levels) is the only depth limit of every later stage.

/// Stack that must remain before a recursive step runs on the current segment: the largest
/// frame of a guarded walk (codegen's `match` compiler) stays well below it.
pub const RED_ZONE: usize = 128 * 1024;

/// Size of each fresh stack segment.
pub const SEGMENT: usize = 4 * 1024 * 1024;

/// Runs `f`, on a fresh stack segment when the current one has less than [`RED_ZONE`] left.
pub fn grow<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}
