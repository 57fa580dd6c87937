//! The window product: `out = a · B` where the rows of the `[k, n]` matrix `B` start at
//! arbitrary offsets of one buffer (kir's `gemm` with several `b_rows` pairs) and are read
//! where they lie — a stride-1 convolution's padded image, each reduction index `(ic, ky, kx)`
//! a row shifted by `ic·hp·wp + ky·wp + kx`, with no im2col copy and no packing of it.
//!
//! The AVX-512 kernel keeps a register tile of [`MR`] output rows (channels) × [`NV`] 16-float
//! vectors of positions in 24 accumulators, broadcasting each weight from memory and loading
//! each row of `B` once per tile (the last vector masked), over blocks of [`KC`] reduction
//! rows so that the `KC × 64` slice of `B` stays in L1 while every panel of output rows
//! passes over it (BLIS's loop order without BLIS's copy of `B`: Van Zee and van de Geijn,
//! "BLIS: A Framework for Rapidly Instantiating BLAS Functionality", 2015, §3). Each output
//! sums its `k` products in order in one FMA chain (between blocks the partial sum goes
//! through `out` unchanged), so splitting the rows over threads gives the same bits. Other CPUs
//! run [`portable`].

use super::gemm::intra_op_threads;
use rayon::prelude::*;

/// Output rows of the register tile.
const MR: usize = 6;
/// 16-float vectors of output positions in the register tile.
const NV: usize = 4;
/// Output positions of the register tile.
const NC: usize = NV * 16;
/// Reduction rows per block: the block's `KC × NC` floats of `B` (32 KiB) stay in the 48 KiB L1.
const KC: usize = 128;
/// A `B` of at most this many bytes (half the 2 MiB L2) is not blocked along `k`: it stays in
/// L2 whole, and each register tile runs all `k` reduction rows with its sums in registers,
/// reading its weight rows as long streams. Blocking then made ResNet-18's 512-channel 3×3
/// convolutions (9.4 MB of weights over a 166 KB image) 40% slower than the `gemm` crate: each
/// block read 8 cache lines of each of the 6 weight rows of each panel, too short a stream
/// for the prefetchers.
const UNBLOCKED_B_BYTES: usize = 1 << 20;
/// Below this many multiply-adds a product stays on the calling thread (the `gemm` crate's
/// threshold, 48·48·256).
const THREADING_THRESHOLD: usize = 48 * 48 * 256;

/// `out[i·n + j] = Σ_{p < k} a[i·k + p] · b[rows[p] + j]` for `i < m = out.len() / n`, `j < n`,
/// float32, on [`intra_op_threads`] threads (same bits on any number). Does nothing unless
/// `out` is `m·n`, `a` is `m·k` and `rows` `k` elements long and every `rows[p] + n` is at most
/// `b.len()`: the bounds kir's proof gave the caller.
pub(crate) fn gemm_window(out: &mut [f32], a: &[f32], b: &[f32], rows: &[usize], [m, n, k]: [usize; 3]) {
    let fits = rows.iter().all(|&r| r.checked_add(n).is_some_and(|end| end <= b.len()));
    if !fits || rows.len() != k || Some(out.len()) != m.checked_mul(n) || Some(a.len()) != m.checked_mul(k) {
        return;
    }
    if n == 0 || m == 0 {
        return;
    }
    let threads = intra_op_threads();
    if threads > 1 && m >= 2 * MR && m * n * k >= THREADING_THRESHOLD {
        // Whole register panels per task, so that every thread runs full tiles.
        let per = m.div_ceil(threads).div_ceil(MR) * MR;
        out.par_chunks_mut(per * n)
            .zip(a.par_chunks(per * k))
            .for_each(|(out, a)| rows_product(out, a, b, rows, [n, k]));
    } else {
        rows_product(out, a, b, rows, [n, k]);
    }
}

/// [`gemm_window`] on the calling thread, over `out.len() / n` rows (checked by the caller).
fn rows_product(out: &mut [f32], a: &[f32], b: &[f32], rows: &[usize], [n, k]: [usize; 2]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (checked above); the slices' lengths are the ones
        // `avx512::product` requires (`gemm_window` checked them).
        return unsafe { avx512::product(out, a, b, rows, [n, k]) };
    }
    portable(out, a, b, rows, [n, k]);
}

/// The product in plain loops (CPUs without AVX-512): each output row accumulates the rows of
/// `B` scaled by its weights, which the compiler vectorises at the CPU's baseline width.
fn portable(out: &mut [f32], a: &[f32], b: &[f32], rows: &[usize], [n, k]: [usize; 2]) {
    for (out, a) in out.chunks_exact_mut(n).zip(a.chunks_exact(k)) {
        out.fill(0.0);
        for (&w, &r) in a.iter().zip(rows) {
            for (o, &x) in out.iter_mut().zip(&b[r..r + n]) {
                *o += w * x;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{KC, MR, NC, NV, UNBLOCKED_B_BYTES};
    use std::arch::x86_64::*;

    /// The blocked product (see the module documentation).
    ///
    /// # Safety
    /// The CPU must support AVX-512F; `out.len()` must be a multiple of `n` (`m` rows),
    /// `a.len()` be `m·k`, `rows.len()` be `k` and every `rows[p] + n ≤ b.len()`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn product(out: &mut [f32], a: &[f32], b: &[f32], rows: &[usize], [n, k]: [usize; 2]) {
        let m = out.len() / n;
        let kc = if b.len() * 4 <= UNBLOCKED_B_BYTES { k.max(1) } else { KC };
        for j0 in (0..n).step_by(NC) {
            let cols = NC.min(n - j0);
            let vectors = cols.div_ceil(16);
            // Lanes of the last vector inside the row (all 16 unless `cols` is not a multiple).
            let last = match cols % 16 {
                0 => 0xffff,
                r => (1u16 << r) - 1,
            };
            for k0 in (0..k).step_by(kc) {
                let block = &rows[k0..k.min(k0 + kc)];
                for i0 in (0..m).step_by(MR) {
                    let tile = Tile {
                        out: out[i0 * n + j0..].as_mut_ptr(),
                        ldo: n,
                        a: a[i0 * k + k0..].as_ptr(),
                        lda: k,
                        b: b.as_ptr(),
                        j0,
                        last,
                        accumulate: k0 > 0,
                    };
                    // SAFETY: rows `i0..i0 + MR.min(m - i0)` of `out` and `a` exist, the tile's
                    // columns `j0..j0 + cols` are inside each `n`-long output row, its block of
                    // `a` columns `k0..k0 + block.len()` inside each `k`-long row, and every
                    // `B` element read, `rows[p] + j0 + c` with `c < cols`, is below
                    // `rows[p] + n ≤ b.len()`; lanes past `cols` are masked off.
                    unsafe { tile.run(MR.min(m - i0), vectors, block) };
                }
            }
        }
    }

    /// One register tile's pointers: `out` and `a` at the tile's first row (and first column
    /// of `out` / first reduction index of the block), `b` the whole buffer.
    struct Tile {
        out: *mut f32,
        ldo: usize,
        a: *const f32,
        lda: usize,
        b: *const f32,
        j0: usize,
        last: u16,
        /// Whether `out` holds the sums of earlier blocks (else they start at zero).
        accumulate: bool,
    }

    impl Tile {
        /// Runs the tile of `r ≤ MR` rows × `v ≤ NV` vectors over the reduction rows `block`.
        ///
        /// # Safety
        /// As [`product`]'s call site states; the CPU has AVX-512F.
        #[target_feature(enable = "avx512f")]
        unsafe fn run(&self, r: usize, v: usize, block: &[usize]) {
            macro_rules! dispatch {
                ($(($r:literal, $v:literal)),*) => {
                    match (r, v) {
                        // SAFETY: forwarded from this function's contract.
                        $(($r, $v) => unsafe { self.fixed::<$r, $v>(block) },)*
                        _ => {}
                    }
                };
            }
            dispatch!(
                (1, 1),
                (1, 2),
                (1, 3),
                (1, 4),
                (2, 1),
                (2, 2),
                (2, 3),
                (2, 4),
                (3, 1),
                (3, 2),
                (3, 3),
                (3, 4),
                (4, 1),
                (4, 2),
                (4, 3),
                (4, 4),
                (5, 1),
                (5, 2),
                (5, 3),
                (5, 4),
                (6, 1),
                (6, 2),
                (6, 3),
                (6, 4)
            );
        }

        /// [`Tile::run`] with `R` rows and `V` vectors known, so that the accumulators are
        /// registers: `R·V` zmm (24 at most), `V` loads and `R` broadcasts per reduction row.
        ///
        /// # Safety
        /// As [`Tile::run`].
        #[target_feature(enable = "avx512f")]
        #[inline]
        unsafe fn fixed<const R: usize, const V: usize>(&self, block: &[usize]) {
            const { assert!(R <= MR && V <= NV) };
            let mask = |v: usize| if v + 1 == V { self.last } else { 0xffff };
            // SAFETY (all raw accesses below): inside the rows and columns the caller proved,
            // masked lanes are neither read nor written.
            let mut acc = [[_mm512_setzero_ps(); V]; R];
            if self.accumulate {
                for (i, row) in acc.iter_mut().enumerate() {
                    for (v, x) in row.iter_mut().enumerate() {
                        *x = unsafe { _mm512_maskz_loadu_ps(mask(v), self.out.add(i * self.ldo + v * 16)) };
                    }
                }
            }
            for (p, &offset) in block.iter().enumerate() {
                let bp = unsafe { self.b.add(offset + self.j0) };
                let bv: [__m512; V] =
                    std::array::from_fn(|v| unsafe { _mm512_maskz_loadu_ps(mask(v), bp.add(v * 16)) });
                for (i, row) in acc.iter_mut().enumerate() {
                    let w = _mm512_set1_ps(unsafe { *self.a.add(i * self.lda + p) });
                    for (x, &b) in row.iter_mut().zip(&bv) {
                        *x = _mm512_fmadd_ps(w, b, *x);
                    }
                }
            }
            for (i, row) in acc.iter().enumerate() {
                for (v, &x) in row.iter().enumerate() {
                    unsafe { _mm512_mask_storeu_ps(self.out.add(i * self.ldo + v * 16), mask(v), x) };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::gemm::set_intra_op_threads;
    use super::*;

    /// A naive product in `f64` over rows at `rows`.
    fn naive(a: &[f32], b: &[f32], rows: &[usize], [m, n, k]: [usize; 3]) -> Vec<f64> {
        (0..m * n)
            .map(|o| {
                let (i, j) = (o / n, o % n);
                (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[rows[p] + j])).sum()
            })
            .collect()
    }

    /// Conv-like window rows over a `[c, hp, wp]` image (`k = c·kh·kw`), or a single shifted row.
    fn window_rows(c: usize, [hp, wp]: [usize; 2], [kh, kw]: [usize; 2]) -> Vec<usize> {
        let mut rows = vec![];
        for ic in 0..c {
            for ky in 0..kh {
                for kx in 0..kw {
                    rows.push(ic * hp * wp + ky * wp + kx);
                }
            }
        }
        rows
    }

    #[test]
    fn window_product_matches_the_definition_at_odd_sizes_on_one_and_two_threads() {
        // (m, c, hp, wp, kh, kw): m and n off the tiles, n < 16, k = 1, k = 9·c past KC.
        let cases = [
            (1, 1, 1, 1, 1, 1),
            (7, 3, 6, 7, 3, 3),
            (13, 1, 3, 5, 1, 1),
            (6, 2, 2, 9, 1, 3),
            (17, 16, 9, 10, 3, 3),
            (64, 24, 12, 12, 3, 3),
            (5, 2, 20, 23, 5, 5),
        ];
        for (m, c, hp, wp, kh, kw) in cases {
            let rows = window_rows(c, [hp, wp], [kh, kw]);
            let k = rows.len();
            let n = (hp - kh) * wp + wp - kw + 1;
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
            let b: Vec<f32> = (0..c * hp * wp).map(|i| ((i * 13 % 29) as f32 - 14.0) / 7.0).collect();
            let want = naive(&a, &b, &rows, [m, n, k]);
            let run = |threads: usize| {
                set_intra_op_threads(threads);
                let mut out = vec![f32::NAN; m * n];
                gemm_window(&mut out, &a, &b, &rows, [m, n, k]);
                set_intra_op_threads(1);
                out
            };
            let one = run(1);
            let close =
                one.iter().zip(&want).all(|(&g, &e)| (f64::from(g) - e).abs() <= 1e-4 * e.abs().max(1.0));
            assert!(close, "{m}x{n}x{k}: {one:?} vs {want:?}");
            assert_eq!(run(2), one, "{m}x{n}x{k} on 2 threads");
            let mut plain = vec![f32::NAN; m * n];
            portable(&mut plain, &a, &b, &rows, [n, k]);
            let close =
                plain.iter().zip(&want).all(|(&g, &e)| (f64::from(g) - e).abs() <= 1e-4 * e.abs().max(1.0));
            assert!(close, "portable {m}x{n}x{k}");
        }
    }

    #[test]
    fn a_row_past_the_end_of_b_is_refused_not_read() {
        let rows = [0, 3];
        let (a, b) = ([1.0f32; 2], [1.0f32; 6]);
        let mut out = [f32::NAN; 4];
        gemm_window(&mut out, &a, &b, &rows, [1, 4, 2]);
        assert!(out.iter().all(|v| v.is_nan()), "rows[1] + n = 7 > 6: nothing computed");
        gemm_window(&mut out[..3], &a, &b, &rows, [1, 3, 2]);
        assert_eq!(out[..3], [2.0; 3]);
    }
}
