//! The buffers kir statements and expressions touch, for the analyses that decide what code
//! may skip: which temps need zeroing (`temps.rs`), which vector loops may end on an
//! overlapping vector instead of a scalar tail (`emit.rs`).

use relay_kir::{BufferId, Expr, Index, Stmt};
use std::collections::HashSet;

/// Whether some buffer `body` stores to is also read in it: then an iteration may see what
/// another wrote, and iterations cannot be redone or reordered.
pub(crate) fn reads_what_it_writes(body: &[Stmt]) -> bool {
    let (mut stored, mut read) = (HashSet::new(), HashSet::new());
    for s in body {
        accesses(s, &mut stored, &mut read);
    }
    !stored.is_disjoint(&read)
}

/// Adds the buffers `s` stores to (or a `gemm` writes) to `stored`, and those it reads to `read`.
pub(crate) fn accesses(s: &Stmt, stored: &mut HashSet<BufferId>, read: &mut HashSet<BufferId>) {
    match s {
        Stmt::For { extent, body, .. } => {
            index_buffers(extent, read);
            body.iter().for_each(|s| accesses(s, stored, read));
        }
        Stmt::Store { buf, index, value } => {
            stored.insert(*buf);
            index_buffers(index, read);
            expr_buffers(value, read);
        }
        Stmt::Assign { value, .. } => expr_buffers(value, read),
        Stmt::If { cond, then, otherwise } => {
            expr_buffers(cond, read);
            then.iter().chain(otherwise).for_each(|s| accesses(s, stored, read));
        }
        Stmt::Gemm { out, a, b, .. } => {
            stored.insert(*out);
            read.extend([*a, *b]);
        }
        Stmt::DepthwiseConv2d { out, data, weight, .. } => {
            stored.insert(*out);
            read.extend([*data, *weight]);
        }
    }
}

/// Adds every buffer `s` reads or writes to `out`.
pub(crate) fn stmt_buffers(s: &Stmt, out: &mut HashSet<BufferId>) {
    let mut read = HashSet::new();
    accesses(s, out, &mut read);
    out.extend(read);
}

/// Adds every buffer `e` reads to `out`.
pub(crate) fn expr_buffers(e: &Expr, out: &mut HashSet<BufferId>) {
    e.visit(&mut |x| {
        if let Expr::Load { buf, .. } = x {
            out.insert(*buf);
        }
    });
}

/// Adds every buffer `i` reads (in `Value` indices) to `out`.
pub(crate) fn index_buffers(i: &Index, out: &mut HashSet<BufferId>) {
    i.visit_exprs(&mut |x| {
        if let Expr::Load { buf, .. } = x {
            out.insert(*buf);
        }
    });
}
