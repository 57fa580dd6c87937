//! Dense weights repacked for products of a few rows: the layout that lets a GEMV stream its
//! matrix at the cache's bandwidth.
//!
//! A `[n, k]` row-major weight matrix whose rows are not 64-byte aligned (any `k` that is not
//! a multiple of 16: the Tree-LSTM's 300 and 150) makes most 64-byte loads of
//! [`super::gemv::gemv`] straddle two cache lines, and each such load costs two. Measured here
//! on 450×300 float32 weights resident in L2: 5.9 µs (92 GB/s) row-major, 3.7 µs (145 GB/s)
//! packed — the L2 streams about 175 GB/s. The packed form is the matrix transposed into
//! panels of [`PANEL`] outputs: for each panel and each `j < k`, the panel's weights of input
//! `j`, 16 lanes per aligned vector, zero-padded past `n`. The product broadcasts `x[j]` and
//! accumulates whole output vectors, so it needs no horizontal sums either.
//!
//! Repacking reads the whole matrix and writes a copy: it pays only for weights used again,
//! which is what `pack_cache.rs` decides.

use relay_kir::{BufferId, BufferRole, Kernel, Stmt};

/// Output vectors (of 16 lanes) per panel: 8 accumulators, a quarter of the vector registers.
const PANEL: usize = 8;
/// Lanes per vector.
const LANES: usize = 16;
/// Most rows (vectors of a dense layer's input) of a block that reads whole panels: 3 ×
/// [`PANEL`] accumulators and 3 broadcasts fill most of the 32 vector registers.
const WIDE_ROWS: usize = 3;
/// Most rows of a block: blocks of more than [`WIDE_ROWS`] rows read a panel [`HALF`] vectors
/// at a time, into 6 × [`HALF`] accumulators. Per input `j` such a block loads half the bytes
/// of weights per multiply-add that a wide block does, which keeps it inside what the L2
/// cache streams: a wide block of 3 rows needs ~43 bytes a cycle at two FMAs a cycle, about
/// the L2's sustained rate, while 6 rows over half panels need ~21.
const ROWS: usize = 6;
/// Vectors of a panel that a block of more than [`WIDE_ROWS`] rows reads at a time.
const HALF: usize = 4;
/// Matrices larger than this (elements; 64 MB of float32) are not repacked: they stream from
/// memory, where line splits cost little, and a copy would double their footprint.
const MAX_ELEMENTS: usize = 1 << 24;

/// One aligned vector of lanes.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Lanes([f32; LANES]);

/// A `[n, k]` float32 matrix repacked for [`PackedMatrix::gemm_rows`].
pub(crate) struct PackedMatrix {
    data: Vec<Lanes>,
    n: usize,
    k: usize,
}

impl std::fmt::Debug for PackedMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackedMatrix").field("n", &self.n).field("k", &self.k).finish()
    }
}

/// [`PackedMatrix::pack`] with `column(w, rows, j)` the vector of `w[row·k + j]` for the
/// (up to 16) `rows`, zero past them; inlined into the AVX-512 variant, whose `column` gathers.
#[inline(always)]
fn pack_with(
    w: &[f32],
    n: usize,
    k: usize,
    column: impl Fn(&[f32], std::ops::Range<usize>, usize) -> Lanes,
) -> PackedMatrix {
    let mut data = Vec::with_capacity(n.div_ceil(LANES) * k);
    let mut start = 0;
    while start < n {
        let nv = panel_vectors(start, n);
        for j in 0..k {
            for v in 0..nv {
                let first = start + v * LANES;
                data.push(column(w, first..(first + LANES).min(n), j));
            }
        }
        start += nv * LANES;
    }
    PackedMatrix { data, n, k }
}

/// Whether the offsets `l·k` of 16 rows (`l < 16`) fit the `i32` lanes of an AVX-512 gather.
fn gathers(k: usize) -> bool {
    k.checked_mul(LANES).is_some_and(|span| i32::try_from(span).is_ok())
}

/// Vectors in the panel starting at output `start` of `n`.
fn panel_vectors(start: usize, n: usize) -> usize {
    (n - start).div_ceil(LANES).min(PANEL)
}

impl PackedMatrix {
    /// Repacks the row-major `[n, k]` matrix `w`, or `None` when the packed product would not
    /// be faster here: a CPU without AVX-512, an empty or oversized matrix, or `w` not of
    /// `n·k` elements.
    pub(crate) fn new(w: &[f32], n: usize, k: usize) -> Option<PackedMatrix> {
        if !packs(n, k) || n * k != w.len() {
            return None;
        }
        Some(PackedMatrix::pack(w, n, k))
    }

    /// The packed copy of the `[n, k]` matrix `w` (`n·k` elements, checked by the caller).
    fn pack(w: &[f32], n: usize, k: usize) -> PackedMatrix {
        #[cfg(target_arch = "x86_64")]
        if avx512() && gathers(k) {
            // SAFETY: the CPU has AVX-512F and `k` fits the gather's offsets.
            return unsafe { x86::pack(w, n, k) };
        }
        pack_with(w, n, k, |w, rows, j| {
            let mut lanes = Lanes([0.0; LANES]);
            for (lane, row) in lanes.0.iter_mut().zip(rows) {
                *lane = w[row * k + j];
            }
            lanes
        })
    }

    /// The matrix's shape `(n, k)`.
    pub(crate) fn shape(&self) -> (usize, usize) {
        (self.n, self.k)
    }

    /// Bytes the packed copy occupies.
    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of_val(self.data.as_slice())
    }

    /// `out[i·n + c] = Σ_{j < k} x[i·k + j] · w[c·k + j]` for every row `i` of `x` (`m =
    /// x.len() / k` rows; a dense layer on `m` vectors) and `c < n`, each output summed in
    /// order of `j` with one fused multiply-add per term (with AVX-512), so a row's result does
    /// not depend on the rows computed with it, nor on how many there are. The rows go in
    /// blocks of at most [`ROWS`] ([`blocks`]), each reading each panel once. Lengths that do
    /// not fit (`x.len()` not a multiple of `k`, `out.len() != m·n`) give zeros, as
    /// [`super::gemv::gemv`] does.
    pub(crate) fn gemm_rows(&self, out: &mut [f32], x: &[f32]) {
        self.product(out, x, avx512());
    }

    /// [`PackedMatrix::gemm_rows`] with AVX-512 (`vector`) or without.
    fn product(&self, out: &mut [f32], x: &[f32], vector: bool) {
        let (n, k) = (self.n, self.k);
        if !x.len().is_multiple_of(k) || out.len() != x.len() / k * n {
            out.fill(0.0);
            return;
        }
        let m = x.len() / k;
        let mut start = 0;
        let mut panels = self.data.as_slice();
        while start < n {
            let nv = panel_vectors(start, n);
            let (panel, rest) = panels.split_at(nv * k);
            let end = (start + nv * LANES).min(n);
            let mut i = 0;
            for rows in blocks(m) {
                let block = Block {
                    out: &mut out[i * n..(i + rows) * n],
                    x: &x[i * k..(i + rows) * k],
                    n,
                    k,
                    outputs: start..end,
                };
                i += rows;
                #[cfg(target_arch = "x86_64")]
                if vector {
                    // SAFETY: `vector` only when the CPU has AVX-512F.
                    unsafe { x86::panel(block, panel, nv) };
                    continue;
                }
                panel_portable(block, panel, nv);
            }
            start = end;
            panels = rest;
        }
    }
}

/// The row counts of the blocks a product of `m` rows goes in: one block of up to
/// [`WIDE_ROWS`] rows, else as few blocks of at most [`ROWS`] as cover them, their sizes
/// differing by at most one (13 rows: 5, 4, 4 — no block of one row, which would read the
/// weights for little work).
fn blocks(m: usize) -> impl Iterator<Item = usize> {
    let count = if m <= WIDE_ROWS { 1 } else { m.div_ceil(ROWS) };
    (0..count).map(move |b| m / count + usize::from(b < m % count))
}

/// Up to [`ROWS`] rows of a product against (part of) one panel: `out` and `x` hold exactly
/// those rows (`n` and `k` elements each), the panel computes outputs `outputs` of each row.
struct Block<'a> {
    out: &'a mut [f32],
    x: &'a [f32],
    n: usize,
    k: usize,
    outputs: std::ops::Range<usize>,
}

impl Block<'_> {
    fn rows(&self) -> usize {
        self.x.len() / self.k.max(1)
    }

    /// Whether the block's outputs are vectors `first..first + count` of a panel of `stride`
    /// vectors per input (`panel_len` vectors in all).
    fn fits(&self, stride: usize, first: usize, count: usize, panel_len: usize) -> bool {
        let len = self.outputs.len();
        self.k > 0
            && self.x.len() == self.rows() * self.k
            && self.out.len() == self.rows() * self.n
            && self.outputs.end <= self.n
            && len <= count * LANES
            && len + LANES > count * LANES
            && first + count <= stride
            && panel_len == stride * self.k
    }
}

/// Whether `[n, k]` weights get a packed copy on this CPU ([`PackedMatrix::new`]): with
/// AVX-512, when not empty and not oversized.
pub(crate) fn packs(n: usize, k: usize) -> bool {
    avx512() && n > 0 && k > 0 && n.checked_mul(k).is_some_and(|len| len <= MAX_ELEMENTS)
}

/// [`PackedMatrix::gemm_rows`] over the row-major `[n, k]` matrix `w` itself, to the bit: each
/// output summed in order of `j` with one fused multiply-add per term, from `+0.0`. Products
/// that would read `w` packed if it had a packed copy ([`reads_packed`] and [`packs`]) take
/// this until `pack_cache.rs` packs it, so that no result depends on when (or whether, with
/// other threads passing other tensors) the weights got packed: the first calls of a fresh
/// program give the bits of the later ones. Each output is one chain of FMAs, 16 chains in
/// flight, over `w` read with a stride of `k` (the access of packing it: with AVX-512 one
/// gather of 16 rows' weights per input `j`, as packing does); slower than
/// [`super::gemv::gemv`]'s lane-parallel sums, paid only until packing (MobileNet-v2's
/// 1000×1280 classifier: 5.3 ms a call with scalar loads, issue #21). More rows than one
/// block ([`ROWS`]) read the weights once, into a packed copy for this call only: row by
/// row, 64 rows over 4096×1024 weights took 1.3 s a call (each row a strided pass over 16
/// MB), while for two rows the copy made CharRNN's batched calls over never-packed weight
/// slices 10% slower. Lengths that do not fit give zeros, as [`PackedMatrix::gemm_rows`] does.
pub(crate) fn gemm_rows_in_order(out: &mut [f32], w: &[f32], x: &[f32], n: usize, k: usize) {
    if k == 0
        || n.checked_mul(k) != Some(w.len())
        || !x.len().is_multiple_of(k)
        || out.len() != x.len() / k * n
    {
        out.fill(0.0);
        return;
    }
    if x.len() > ROWS * k && avx512() {
        return PackedMatrix::pack(w, n, k).gemm_rows(out, x);
    }
    #[cfg(target_arch = "x86_64")]
    if avx512() && gathers(k) {
        let m = x.len() / k;
        macro_rules! rows {
            ($($r:literal)|*) => {
                match m {
                    // SAFETY (each arm): the CPU has AVX-512F, `k` fits the gather's
                    // offsets, `w` is `n·k`, `x` `m·k` and `out` `m·n` long (checked above).
                    $($r => return unsafe { x86::in_order::<$r>(out, w, x, n, k) },)*
                    _ => {}
                }
            };
        }
        rows!(1 | 2 | 3 | 4 | 5 | 6);
    }
    in_order(out, w, x, n, k);
}

/// [`gemm_rows_in_order`] on fitting lengths, without AVX-512 (the definition `x86::in_order`
/// follows).
fn in_order(out: &mut [f32], w: &[f32], x: &[f32], n: usize, k: usize) {
    for (out, x) in out.chunks_exact_mut(n).zip(x.chunks_exact(k)) {
        for (out, rows) in out.chunks_mut(LANES).zip(w.chunks(LANES * k)) {
            let mut acc = [0f32; LANES];
            let acc = &mut acc[..out.len()];
            // `j` outermost: the chains of the block's outputs advance together.
            for (j, &xj) in x.iter().enumerate() {
                for (l, a) in acc.iter_mut().enumerate() {
                    *a = rows[l * k + j].mul_add(xj, *a);
                }
            }
            out.copy_from_slice(acc);
        }
    }
}

/// Whether the CPU has AVX-512F, which the fast paths of `blas/` need.
pub(crate) fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// One panel without vector instructions (the definition the AVX-512 code follows).
fn panel_portable(block: Block<'_>, panel: &[Lanes], nv: usize) {
    if !block.fits(nv, 0, nv, panel.len()) {
        block.out.fill(0.0);
        return;
    }
    let (n, k, outputs) = (block.n, block.k, block.outputs.clone());
    for (row, x) in block.out.chunks_exact_mut(n).zip(block.x.chunks_exact(k)) {
        let mut acc = [0f32; PANEL * LANES];
        for (group, &xj) in panel.chunks_exact(nv).zip(x) {
            for (v, lanes) in group.iter().enumerate() {
                for (a, &w) in acc[v * LANES..(v + 1) * LANES].iter_mut().zip(&lanes.0) {
                    *a = w.mul_add(xj, *a);
                }
            }
        }
        row[outputs.clone()].copy_from_slice(&acc[..outputs.len()]);
    }
}

/// Up to this many rows, a product over packed weights reads them packed rather than going
/// to the `gemm` crate. Measured through the VM on 450×300 weights (`cargo bench --bench
/// kernels`): 19 rows packed 40 µs, the crate 69; 31 rows packed 64 µs (130 GFLOP/s), 32
/// rows by the crate 88 (98 GFLOP/s). The product reads one panel (`512·k` bytes) for all
/// blocks of [`ROWS`] rows before the next, so each weight comes from memory once whatever
/// the rows; the rows (`4·m·k` bytes) are read again per panel, which bounds `m` where the
/// crate's cache blocking takes over (`benches/pytorch/results.md`, 2026-11-27: 32 and 64
/// rows packed against the crate, `--batch 64`'s products).
const PACKED_MAX_ROWS: usize = 64;

/// Whether a product of `m` rows reads its right operand packed (when it has a packed copy):
/// `[n, k]` weights (`trans_b`) and at most [`PACKED_MAX_ROWS`] rows.
pub(crate) fn reads_packed(m: i64, trans_b: bool) -> bool {
    trans_b && (1..=PACKED_MAX_ROWS as i64).contains(&m)
}

/// A `gemm` weight operand that could be read packed: the input buffer, as an `[n, k]`
/// matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Packable {
    pub buf: BufferId,
    pub n: usize,
    pub k: usize,
}

/// The input buffers a kernel's `gemm` statements could read packed ([`reads_packed`]), each
/// once, in buffer order. The JIT's buffer table has one extra entry per operand, after the
/// kernel's buffers, holding its [`PackedMatrix`] or null.
pub(crate) fn packable_operands(kernel: &Kernel) -> Vec<Packable> {
    fn walk(k: &Kernel, body: &[Stmt], found: &mut Vec<Packable>) {
        for s in body {
            match s {
                Stmt::Gemm { b, m, n, k: depth, trans_b, .. } if reads_packed(*m, *trans_b) => {
                    let input = k.buffers.get(b.index()).is_some_and(|d| d.role == BufferRole::Input);
                    let (Ok(n), Ok(k)) = (usize::try_from(*n), usize::try_from(*depth)) else { continue };
                    let operand = Packable { buf: *b, n, k };
                    if input && !found.contains(&operand) {
                        found.push(operand);
                    }
                }
                Stmt::For { body, .. } => walk(k, body, found),
                Stmt::If { then, otherwise, .. } => {
                    walk(k, then, found);
                    walk(k, otherwise, found);
                }
                _ => {}
            }
        }
    }
    let mut found = Vec::new();
    walk(kernel, &kernel.body, &mut found);
    found.sort_by_key(|p| (p.buf.index(), p.n, p.k));
    found
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Block, Lanes, HALF, LANES, ROWS, WIDE_ROWS};
    use std::arch::x86_64::*;

    /// The offsets `l·k` (`l < 16`) of 16 consecutive rows of a `[·, k]` matrix: the lanes of
    /// one column's gather.
    #[target_feature(enable = "avx512f")]
    fn row_offsets(k: usize) -> __m512i {
        // `k · 16` fits `i32` (`super::gathers`, checked by every caller).
        _mm512_mullo_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm512_set1_epi32(k as i32),
        )
    }

    /// The elements `w[row·k + j]` of `rows` (at most 16 of the `[·, k]` matrix `w`), zero past
    /// them: one column of a block of rows, gathered.
    ///
    /// # Safety
    /// The CPU must have AVX-512F; `offsets` is `row_offsets(k)`, `j < k`, and every row of
    /// `rows` is a row of `w`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn column(
        w: &[f32],
        offsets: __m512i,
        rows: std::ops::Range<usize>,
        k: usize,
        j: usize,
    ) -> __m512 {
        let mask = ((1u32 << rows.len()) - 1) as __mmask16;
        // SAFETY: lane `l < rows.len()` reads `w[(rows.start + l)·k + j]`, inside `w` (the
        // caller's contract); masked lanes read nothing.
        unsafe {
            let base = w.as_ptr().add(rows.start * k + j);
            _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), mask, offsets, base.cast())
        }
    }

    /// [`super::PackedMatrix::pack`], each vector one gather of a column of 16 rows.
    ///
    /// # Safety
    /// The CPU must have AVX-512F; `w` is `n·k` long and `super::gathers(k)`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn pack(w: &[f32], n: usize, k: usize) -> super::PackedMatrix {
        let offsets = row_offsets(k);
        super::pack_with(w, n, k, |w, rows, j| {
            let mut lanes = Lanes([0.0; LANES]);
            // SAFETY: `rows` are rows of the `[n, k]` matrix and `j < k` (`pack_with`); the
            // store writes one aligned `Lanes`.
            unsafe { _mm512_store_ps(lanes.0.as_mut_ptr(), column(w, offsets, rows, k, j)) };
            lanes
        })
    }

    /// [`super::in_order`] for `R` rows: per block of 16 outputs, each input `j`'s 16 weights
    /// gathered (the column the packed copy would hold) and one FMA per row into its lanes,
    /// so each output is the packed product's chain, to the bit.
    ///
    /// # Safety
    /// The CPU must have AVX-512F; `w` is `n·k`, `x` `R·k` and `out` `R·n` long, `k > 0` and
    /// `super::gathers(k)`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn in_order<const R: usize>(out: &mut [f32], w: &[f32], x: &[f32], n: usize, k: usize) {
        let offsets = row_offsets(k);
        let xs: [&[f32]; R] = std::array::from_fn(|r| &x[r * k..(r + 1) * k]);
        for first in (0..n).step_by(LANES) {
            let rows = first..(first + LANES).min(n);
            let mut acc = [_mm512_setzero_ps(); R];
            for j in 0..k {
                // SAFETY: `rows` are rows of the `[n, k]` matrix `w` and `j < k`.
                let wj = unsafe { column(w, offsets, rows.clone(), k, j) };
                for (a, x) in acc.iter_mut().zip(&xs) {
                    *a = _mm512_fmadd_ps(wj, _mm512_set1_ps(x[j]), *a);
                }
            }
            let mask = ((1u32 << rows.len()) - 1) as __mmask16;
            for (a, out) in acc.iter().zip(out.chunks_exact_mut(n)) {
                // SAFETY: the masked store writes `rows.len()` floats from `first`, inside the
                // `n`-long row.
                unsafe { _mm512_mask_storeu_ps(out.as_mut_ptr().add(first), mask, *a) };
            }
        }
    }

    /// One panel of `nv` output vectors for the block's rows: whole for up to [`WIDE_ROWS`]
    /// rows, else [`HALF`] vectors at a time.
    ///
    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn panel(block: Block<'_>, panel: &[Lanes], nv: usize) {
        let rows = block.rows();
        if !block.fits(nv, 0, nv, panel.len()) || rows == 0 || rows > ROWS {
            block.out.fill(0.0);
            return;
        }
        // One monomorphised loop per shape keeps the accumulators in registers.
        macro_rules! rows {
            ($block:expr, $first:expr, $nv:literal, $($r:literal)|*) => {
                match $block.rows() {
                    // SAFETY (each arm): the block has this many rows and fits these vectors
                    // of the panel (checked above and, for a part, just before).
                    $($r => unsafe { panel_of::<$nv, $r>($block, panel, nv, $first) },)*
                    _ => $block.out.fill(0.0),
                }
            };
        }
        if rows <= WIDE_ROWS {
            match nv {
                1 => rows!(block, 0, 1, 1 | 2 | 3),
                2 => rows!(block, 0, 2, 1 | 2 | 3),
                3 => rows!(block, 0, 3, 1 | 2 | 3),
                4 => rows!(block, 0, 4, 1 | 2 | 3),
                5 => rows!(block, 0, 5, 1 | 2 | 3),
                6 => rows!(block, 0, 6, 1 | 2 | 3),
                7 => rows!(block, 0, 7, 1 | 2 | 3),
                _ => rows!(block, 0, 8, 1 | 2 | 3),
            }
            return;
        }
        let (start, end) = (block.outputs.start, block.outputs.end);
        for first in (0..nv).step_by(HALF) {
            let count = (nv - first).min(HALF);
            let part = Block {
                out: &mut *block.out,
                x: block.x,
                n: block.n,
                k: block.k,
                outputs: start + first * LANES..(start + (first + count) * LANES).min(end),
            };
            if !part.fits(nv, first, count, panel.len()) {
                part.out.fill(0.0);
                return;
            }
            match count {
                1 => rows!(part, first, 1, 4 | 5 | 6),
                2 => rows!(part, first, 2, 4 | 5 | 6),
                3 => rows!(part, first, 3, 4 | 5 | 6),
                _ => rows!(part, first, 4, 4 | 5 | 6),
            }
        }
    }

    /// The outputs of vectors `first..first + NV` of the panel's `stride` vectors per input,
    /// for the block's `R` rows.
    ///
    /// # Safety
    /// The CPU must have AVX-512F; `block` has `R` rows and fits ([`Block::fits`]) vectors
    /// `first..first + NV` of a panel of `stride` vectors per input.
    #[target_feature(enable = "avx512f")]
    unsafe fn panel_of<const NV: usize, const R: usize>(
        block: Block<'_>,
        panel: &[Lanes],
        stride: usize,
        first: usize,
    ) {
        let (n, k, start, len) = (block.n, block.k, block.outputs.start, block.outputs.len());
        let xs: [&[f32]; R] = std::array::from_fn(|r| &block.x[r * k..(r + 1) * k]);
        let mut acc = [[_mm512_setzero_ps(); NV]; R];
        for (j, group) in panel.chunks_exact(stride).enumerate() {
            let xb: [__m512; R] = std::array::from_fn(|r| _mm512_set1_ps(xs[r][j]));
            for (v, lanes) in group[first..first + NV].iter().enumerate() {
                // SAFETY: `Lanes` is 16 floats aligned to 64 bytes.
                let w = unsafe { _mm512_load_ps(lanes.0.as_ptr()) };
                for r in 0..R {
                    acc[r][v] = _mm512_fmadd_ps(w, xb[r], acc[r][v]);
                }
            }
        }
        for (row, acc) in block.out.chunks_exact_mut(n).zip(&acc) {
            let out = &mut row[start..start + len];
            for (v, a) in acc.iter().enumerate() {
                let lanes = (len - v * LANES).min(LANES);
                let mask: __mmask16 = ((1u32 << lanes) - 1) as __mmask16;
                // SAFETY: the masked store writes `lanes` floats from `v · 16`, inside `out`
                // (`fits`: the last vector has 1..=16 valid lanes).
                unsafe { _mm512_mask_storeu_ps(out.as_mut_ptr().add(v * LANES), mask, *a) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(n: usize, k: usize) -> (Vec<f32>, Vec<f32>) {
        let w = (0..n * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
        let x = (0..k).map(|i| ((i * 13 % 29) as f32 - 14.0) / 7.0).collect();
        (w, x)
    }

    fn definition(w: &[f32], x: &[f32], n: usize, k: usize) -> Vec<f64> {
        (0..n).map(|i| (0..k).map(|j| f64::from(w[i * k + j]) * f64::from(x[j])).sum()).collect()
    }

    #[test]
    fn the_packed_product_matches_the_definition() {
        // Panels of 1..=8 vectors, partial last vectors, one column, `n` and `k` not multiples
        // of 8 or 16; 1 to 20 rows: one block of whole panels (1–3 rows) or of half panels
        // (4–6), and several blocks of unequal sizes.
        for (n, k) in
            [(1, 1), (5, 3), (16, 7), (17, 33), (128, 9), (150, 150), (450, 300), (129, 1), (200, 13)]
        {
            let (w, _) = matrix(n, k);
            let packed = PackedMatrix::pack(&w, n, k);
            for m in 1..=20 {
                let x: Vec<f32> = (0..m * k).map(|i| ((i * 13 % 29) as f32 - 14.0) / 7.0).collect();
                let want: Vec<f64> = x.chunks_exact(k).flat_map(|row| definition(&w, row, n, k)).collect();
                let close = |got: &[f32]| {
                    got.iter().zip(&want).all(|(&g, &e)| (f64::from(g) - e).abs() <= 1e-4 * e.abs().max(1.0))
                };
                let mut out = vec![f32::NAN; m * n];
                packed.gemm_rows(&mut out, &x);
                assert!(close(&out), "{m}x{n}x{k}");
                let mut portable = vec![f32::NAN; m * n];
                packed.product(&mut portable, &x, false);
                assert!(close(&portable), "portable {m}x{n}x{k}");
                // Every path sums each output in order of `j` with fused multiply-adds: the
                // same bits, whichever rows are computed together.
                assert_eq!(out, portable, "{m}x{n}x{k}");
                // Row-major weights summed in the packed order: the same bits again.
                let mut unpacked = vec![f32::NAN; m * n];
                gemm_rows_in_order(&mut unpacked, &w, &x, n, k);
                assert_eq!(unpacked, portable, "in order {m}x{n}x{k}");
                for (i, row) in x.chunks_exact(k).enumerate() {
                    let mut alone = vec![f32::NAN; n];
                    packed.gemm_rows(&mut alone, row);
                    assert_eq!(alone, out[i * n..(i + 1) * n], "row {i} of {m}x{n}x{k}");
                }
            }
        }
    }

    #[test]
    fn blocks_cover_the_rows_evenly() {
        assert_eq!(blocks(13).collect::<Vec<_>>(), [5, 4, 4]);
        for m in 1..200 {
            let b: Vec<usize> = blocks(m).collect();
            assert_eq!(b.iter().sum::<usize>(), m, "{m}");
            assert!(b.iter().all(|&r| r <= ROWS), "{m}: {b:?}");
            assert!(b.len() == 1 || b.len() == m.div_ceil(ROWS), "{m}: {b:?}");
            assert!(b.iter().max().unwrap() - b.iter().min().unwrap() <= 1, "{m}: {b:?}");
        }
    }

    #[test]
    fn lengths_that_do_not_fit_give_zeros() {
        let (w, x) = matrix(20, 6);
        let packed = PackedMatrix::pack(&w, 20, 6);
        let mut out = vec![f32::NAN; 19];
        packed.gemm_rows(&mut out, &x);
        assert!(out.iter().all(|&v| v == 0.0));
        let mut out = vec![f32::NAN; 20];
        packed.gemm_rows(&mut out, &x[..5]);
        assert!(out.iter().all(|&v| v == 0.0));
        gemm_rows_in_order(&mut out, &w, &x[..5], 20, 6);
        assert!(out.iter().all(|&v| v == 0.0));
        gemm_rows_in_order(&mut out, &w[..119], &x, 20, 6);
        assert!(out.iter().all(|&v| v == 0.0));
    }

    #[test]
    fn only_matrices_worth_packing_are_packed() {
        assert!(PackedMatrix::new(&[], 0, 3).is_none());
        assert!(PackedMatrix::new(&[1.0; 6], 2, 4).is_none());
        assert_eq!(PackedMatrix::new(&[1.0; 6], 2, 3).map(|p| p.shape()), avx512().then_some((2, 3)));
    }
}
