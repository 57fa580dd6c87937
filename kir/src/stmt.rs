//! Statements of kir.

use super::{BufferId, DepthwiseWindow, Expr, Index, LocalId, VarId};

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
    /// matrix product over whole row-major buffers, where `b(j, p)` is `b[j·k + p]` when
    /// `trans_b` (`b` is `[n, k]`, `nn.dense`'s weight layout) and `b[p·n + j]` otherwise
    /// (`b` is `[k, n]`). With `m = 1` it is a matrix-vector product. Backends with a faster
    /// native routine call it (the Cranelift backend: AVX-512 GEMV, the `gemm` crate); the
    /// others, the interpreter and the bounds proof see its loops
    /// ([`super::Kernel::expand_intrinsics`]). The sums may be reassociated.
    Gemm {
        /// Written: `m · n` elements (an output or a temp).
        out: BufferId,
        /// The left matrix: `m · k` elements.
        a: BufferId,
        /// The right matrix: `k · n` elements, in the layout `trans_b` gives.
        b: BufferId,
        /// Rows of `a` and `out`.
        m: i64,
        /// Columns of `out`.
        n: i64,
        /// The reduction length: columns of `a`.
        k: i64,
        /// Whether `b` is stored `[n, k]` (transposed) rather than `[k, n]`.
        trans_b: bool,
    },
    /// A depthwise 2-d convolution (Relay's `nn.conv2d` with `groups` = channels and one
    /// output channel per group, NCHW data, OIHW weights), in `float32`: for each plane
    /// `p = n·C + c`, `out[(p·oh + y)·ow + x] = Σ_{ky, kx} data[(p·h + iy)·w + ix] ·
    /// weight[(c·kh + ky)·kw + kx]` over the taps with `iy = y·sh − pt + ky·dh` in `0..h` and
    /// `ix = x·sw − pl + kx·dw` in `0..w` (the others read zero padding). Like
    /// [`Stmt::Gemm`] it is one statement so that a backend can call a native routine (the
    /// Cranelift backend: AVX-512 over the output row, `jit/src/blas/depthwise.rs`); the
    /// others, the interpreter and the bounds proof see its loops
    /// ([`super::Kernel::expand_intrinsics`]). The sums may be reassociated.
    DepthwiseConv2d {
        /// Written: `images · channels · oh · ow` elements (an output or a temp).
        out: BufferId,
        /// The images: `images · channels · h · w` elements.
        data: BufferId,
        /// The windows: `channels · kh · kw` elements.
        weight: BufferId,
        /// Sizes, strides, dilation and padding.
        window: DepthwiseWindow,
    },
}
