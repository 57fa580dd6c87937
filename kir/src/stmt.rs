//! Statements of kir.

use super::{BufferId, Expr, Index, LocalId, RowOffsets, VarId};

/// How a backend should run a loop. The meaning of the loop is the same for every kind:
/// iterations in order, `var = 0, 1, ..., extent - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoopKind {
    /// A plain loop.
    Serial,
    /// Run several iterations at once in SIMD lanes. The Cranelift backend vectorises when
    /// every store in the loop writes a distinct element per iteration (index `var + c` with
    /// `c` invariant in the loop), reduces locals updated as `acc = acc + e` / `max` / `min`
    /// across lanes (reassociating float sums), and otherwise runs the loop serially.
    Vectorize,
    /// Unroll (constant extents up to a small bound; serial otherwise).
    Unroll,
    /// The iterations are independent and may run on several threads. Currently an
    /// annotation only: backends run the loop serially.
    Parallel,
}

/// A statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stmt {
    /// `for var in 0..extent { body }`; nothing runs if `extent <= 0`.
    For {
        /// The loop variable (bound by no other loop of the kernel).
        var: VarId,
        /// Number of iterations, evaluated once before the first.
        extent: Index,
        /// Scheduling hint.
        kind: LoopKind,
        /// The statements of one iteration.
        body: Vec<Stmt>,
    },
    /// `buf[index] = value` (`buf` is an output or a temp).
    Store {
        /// The buffer written.
        buf: BufferId,
        /// Flat row-major element index.
        index: Index,
        /// The value, of the buffer's dtype.
        value: Expr,
    },
    /// `local = value`.
    Assign {
        /// The local written.
        local: LocalId,
        /// The value, of the local's dtype.
        value: Expr,
    },
    /// `if cond { then } else { otherwise }`.
    If {
        /// A `bool` expression.
        cond: Expr,
        /// Run when `cond` is true.
        then: Vec<Stmt>,
        /// Run when `cond` is false.
        otherwise: Vec<Stmt>,
    },
    /// `out[i·n + j] = Σ_{p < k} a[i·k + p] · b(j, p)` for `i < m`, `j < n`, in `float32`: a
    /// matrix product into a whole row-major `out`, where `b(j, p)` is
    /// `b[b_offset + row(j) + p]` when `trans_b` (`b` is `[n, k]`, `nn.dense`'s weight layout)
    /// and `b[b_offset + row(p) + j]` otherwise (`b` is `[k, n]`), `row(r)` the offset of row `r`
    /// that `b_rows` gives ([`RowOffsets`]). With `b_offset = 0` and `b_rows = [(rows, row
    /// length)]` it is a product over whole buffers; with one pair `(rows, ldb)` a block of a
    /// larger row-major matrix (BLAS's leading dimension `ldb`), such as the columns of one
    /// tile of a convolution's data (`stdlib`'s tiled `im2col_product`); with more pairs
    /// (`[k, n]` form only) a convolution's padded data read in place, each reduction index's
    /// row a shifted window of it (`stdlib`'s `window_product`). With `m = 1` it is a
    /// matrix-vector product. Backends with a faster native routine call it (the Cranelift
    /// backend: AVX-512 GEMV, the window product, the `gemm` crate); the others, the
    /// interpreter and the bounds proof see its loops ([`super::Kernel::expand_intrinsics`]).
    /// The sums may be reassociated.
    Gemm {
        /// Written: `m · n` elements (an output or a temp).
        out: BufferId,
        /// The left matrix: `m · k` elements.
        a: BufferId,
        /// The right matrix, in the layout `trans_b` gives, from element `b_offset` on.
        b: BufferId,
        /// Where `b(0, 0)` is in `b`: loop variables and syms only (no loads), evaluated when
        /// the statement runs.
        b_offset: Index,
        /// Where the rows of `b` as stored start, from `b_offset` on (`[n, k]` rows when
        /// `trans_b`, `[k, n]` rows otherwise): extents multiplying to `n` or `k`; a single pair
        /// when `trans_b`.
        b_rows: RowOffsets,
        /// Rows of `a` and `out`.
        m: i64,
        /// Columns of `out`.
        n: i64,
        /// The reduction length: columns of `a`.
        k: i64,
        /// Whether `b` is stored `[n, k]` (transposed) rather than `[k, n]`.
        trans_b: bool,
    },
}

/// How many elements of [`Stmt::Gemm`]'s `b` the product reads from `b_offset` on: the last
/// row's offset plus the row length (`k` when `trans_b`, `n` otherwise), 0 when it is empty;
/// `None` on a negative size, a malformed `b_rows` or `i64` overflow.
pub fn gemm_b_span(n: i64, k: i64, b_rows: &RowOffsets, trans_b: bool) -> Option<i64> {
    let row = gemm_b_row(n, k, trans_b);
    let last = b_rows.last()?;
    if row < 0 || b_rows.rows()? < 0 {
        return None;
    }
    if row == 0 || b_rows.rows()? == 0 {
        return Some(0);
    }
    last.checked_add(row)
}

/// The row length of [`Stmt::Gemm`]'s `b` as stored: the stride of a whole, contiguous `b`'s rows.
pub fn gemm_b_row(n: i64, k: i64, trans_b: bool) -> i64 {
    if trans_b {
        k
    } else {
        n
    }
}
