//! Which temps a call must find zero-filled.
//!
//! kir promises zero-filled temps at the start of every call, and kernels that reuse their
//! temps refill them after each call. Most temps are written whole before anything reads
//! them, though: a product's output, a fused data operand, an anchor's result materialised
//! for the gate arithmetic (a Tree-LSTM node's kernel has 7 KB of them). Zeroing those is
//! wasted stores on every call, so only the others are refilled. Only an im2col buffer, whose
//! padding is never written, relies on the promise among today's compute rules — and it
//! needs no refill either: every call stores to the same elements (loops of constant extents,
//! no branches, indices of loop variables) before anything reads it, so the elements no call
//! writes are still the zeros the temp was allocated with (a 3×3 convolution's im2col buffer
//! is megabytes, whose refill cost an eighth of the convolution).

use relay_kir::coverage::{accesses, written_before_read};
use relay_kir::{BufferId, BufferRole, Index, Kernel, Stmt};
use std::collections::HashSet;

/// For each buffer of `kernel`, in order: whether it is a temp that must be zero when a call
/// starts. A temp is exempt when every call writes all of it before reading any
/// ([`written_before_read`]: a `gemm` into it, a loop nest that stores every element), or
/// when every call writes the same elements before reading any ([`rewritten_first`]).
pub(crate) fn needs_zero(kernel: &Kernel) -> Vec<bool> {
    (0u32..)
        .zip(&kernel.buffers)
        .map(|(i, b)| {
            b.role == BufferRole::Temp
                && !rewritten_first(&kernel.body, BufferId(i))
                && !written_before_read(kernel, BufferId(i))
        })
        .collect()
}

/// Whether the top-level statements of `body` that write `buf` all come before the first
/// that reads it, and each writes the same elements on every call: no branches, loops of
/// constant extents, store indices of loop variables and constants only (or a `gemm`). The
/// elements of a reused temp that no call writes then keep the zeros it was allocated with,
/// and the others are rewritten before they are read, so refilling it changes nothing.
fn rewritten_first(body: &[Stmt], buf: BufferId) -> bool {
    let mut reading = false;
    for s in body {
        let (mut stored, mut read) = (HashSet::new(), HashSet::new());
        accesses(s, &mut stored, &mut read);
        if read.contains(&buf) {
            reading = true;
        }
        if stored.contains(&buf) && (reading || !same_stores(s, buf)) {
            return false;
        }
    }
    true
}

/// Whether `s` stores to the same elements of `buf` every time it runs (see
/// [`rewritten_first`]).
fn same_stores(s: &Stmt, buf: BufferId) -> bool {
    match s {
        Stmt::For { extent, body, .. } => {
            extent.as_const().is_some() && body.iter().all(|s| same_stores(s, buf))
        }
        Stmt::Store { buf: b, index, .. } => *b != buf || fixed(index),
        Stmt::Assign { .. } | Stmt::Gemm { .. } => true,
        Stmt::If { .. } => false,
    }
}

/// Whether `index` is built from constants and loop variables only.
fn fixed(index: &Index) -> bool {
    match index {
        Index::Const(_) | Index::Var(_) => true,
        Index::Bin(_, a, b) => fixed(a) && fixed(b),
        Index::Sym(_) | Index::Value(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_devices::DType;
    use relay_kir::{Expr, KernelBuilder, LoopKind};

    fn temps_to_zero(k: &Kernel) -> Vec<String> {
        needs_zero(k).iter().zip(&k.buffers).filter(|(n, _)| **n).map(|(_, b)| b.name.clone()).collect()
    }

    #[test]
    fn temps_written_whole_first_are_not_zeroed() {
        let mut k = KernelBuilder::new("t");
        let x = k.input("x", DType::F32, [2, 3]);
        let w = k.input("w", DType::F32, [4, 3]);
        let y = k.output("y", DType::F32, [2, 4]);
        let copy = k.temp("copy", DType::F32, [2, 3]);
        let product = k.temp("product", DType::F32, [8]);
        k.for_(2, LoopKind::Serial, |k, i| {
            k.for_(3, LoopKind::Vectorize, |k, j| {
                let at = i.clone() * 3 + j;
                let v = Expr::load(x, at.clone());
                k.store(copy, at, v)
            })
        });
        k.gemm(product, copy, w, 2, 4, 3, true);
        k.for_(8, LoopKind::Vectorize, |k, i| k.store(y, i.clone(), Expr::load(product, i)));
        assert!(temps_to_zero(&k.finish().unwrap()).is_empty());
    }

    #[test]
    fn temps_each_call_rewrites_before_reading_are_not_zeroed() {
        let mut k = KernelBuilder::new("t");
        let x = k.input("x", DType::F32, [4]);
        let y = k.output("y", DType::F32, [4]);
        let part = k.temp("part", DType::F32, [4]);
        let transposed = k.temp("transposed", DType::F32, [2, 2]);
        // Only the first three elements (an im2col buffer's padding is never written): the
        // last is zero from the allocation on, and no call changes it.
        k.for_(3, LoopKind::Serial, |k, i| k.store(part, i.clone(), Expr::load(x, i)));
        // Every element, column-major, in two statements.
        for row in 0..2 {
            k.for_(2, LoopKind::Serial, |k, j| k.store(transposed, j * 2 + row, Expr::f32(1.0)));
        }
        k.for_(4, LoopKind::Serial, |k, i| {
            let v = Expr::load(part, i.clone()) + Expr::load(transposed, i.clone());
            k.store(y, i, v)
        });
        assert!(temps_to_zero(&k.finish().unwrap()).is_empty());
    }

    #[test]
    fn temps_read_before_written_or_written_where_data_says_are_zeroed() {
        let mut k = KernelBuilder::new("t");
        let x = k.input("x", DType::F32, [4]);
        let at = k.input("at", DType::I32, [4]);
        let y = k.output("y", DType::F32, [4]);
        let acc = k.temp("acc", DType::F32, [4]);
        let later = k.temp("later", DType::F32, [4]);
        let gathered = k.temp("gathered", DType::F32, [4]);
        let branched = k.temp("branched", DType::F32, [4]);
        // Accumulates: reads itself.
        k.for_(4, LoopKind::Serial, |k, i| {
            let v = Expr::load(acc, i.clone()) + Expr::load(x, i.clone());
            k.store(acc, i, v)
        });
        // Read, then written: the next call would read this call's values.
        k.for_(4, LoopKind::Serial, |k, i| k.store(y, i.clone(), Expr::load(later, i)));
        k.for_(2, LoopKind::Serial, |k, i| k.store(later, i.clone(), Expr::load(x, i)));
        // Where the data says: other elements on other calls.
        k.for_(1, LoopKind::Serial, |k, i| {
            let to = Index::value(Expr::load(at, i.clone())).clamp(0, 3);
            k.store(gathered, to, Expr::load(x, i))
        });
        // Under a branch on the data.
        k.for_(2, LoopKind::Serial, |k, i| {
            let cond = Expr::load(x, i.clone()).gt(Expr::f32(0.0));
            k.if_then(cond, |k| k.store(branched, i.clone(), Expr::f32(1.0)))
        });
        k.for_(4, LoopKind::Serial, |k, i| {
            let v = Expr::load(acc, i.clone())
                + Expr::load(later, i.clone())
                + Expr::load(gathered, i.clone())
                + Expr::load(branched, i.clone());
            k.store(y, i, v)
        });
        assert_eq!(temps_to_zero(&k.finish().unwrap()), ["acc", "later", "gathered", "branched"]);
    }
}
