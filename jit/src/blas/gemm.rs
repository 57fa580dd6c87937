//! The native routine behind kir's `gemm` statement (`out = a · b`, float32, row-major), which
//! JIT code calls: up to 64 rows over `[n, k]` weights that get a packed copy (`packed.rs`:
//! weights the calls keep passing) take the packed product, or before the copy exists the
//! same sums in the same order over the row-major weights; otherwise one row (a dense layer
//! on one vector) and a few rows take the AVX-512 GEMV routines of `gemv.rs` — bound by
//! reading the matrix, where the `gemm` crate's packing costs more than it saves; `[k, n]`
//! operands of a small `k` or few rows (pointwise convolutions' tiles) the window product of
//! `window.rs`, reading `b` in place; and everything else the `gemm` crate (packed,
//! cache-blocked, AVX-512 micro-kernels), split over [`set_intra_op_threads`] threads when
//! large. Figures: `cargo bench --bench kernels`,
//! ARCHITECTURE.md.

use super::gemv::{gemv, gemv_rows};
use super::packed::{avx512, gemm_rows_in_order, packs, reads_packed, PackedMatrix};
use super::window::gemm_window;
use relay_kir::RowOffsets;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many threads one `gemm` crate product may use ([`set_intra_op_threads`]).
static INTRA_OP_THREADS: AtomicUsize = AtomicUsize::new(1);

/// Lets every later matrix product of `m·n·k` at least the `gemm` crate's threading threshold
/// (`gemm_common::gemm::DEFAULT_THREADING_THRESHOLD`, 48·48·256, per cache block) split its
/// output blocks over `threads` tasks of rayon's global pool (one thread per core, or
/// `RAYON_NUM_THREADS`); 1, the default, keeps every kernel on the calling thread, and 0 counts
/// as 1. Process-wide, like PyTorch's `torch.set_num_threads`: kernels get no context to carry
/// it. Smaller products — every GEMV and product of under 16 rows, the NLP models' dense
/// layers — stay on the calling thread whatever the setting: handing them to other threads
/// costs more than it saves. Each output element sums over `k` in the same blocks and
/// order on any number of threads, so results are the same bits.
pub fn set_intra_op_threads(threads: usize) {
    INTRA_OP_THREADS.store(threads.max(1), Ordering::Relaxed);
}

/// The setting of [`set_intra_op_threads`] (1 unless changed).
pub fn intra_op_threads() -> usize {
    INTRA_OP_THREADS.load(Ordering::Relaxed)
}

/// Below this many rows, `[n, k]` weights go through [`gemv_rows`] (each block of matrix rows
/// read once for four vectors) rather than the `gemm` crate, whose packing does not pay for
/// few rows. Measured through the VM on 450×300 weights (`cargo bench --bench kernels`,
/// GFLOP/s, `gemv_rows` against `gemm`): 4 rows 67 vs 28, 8 rows 72 vs 39, 19 rows 69 vs 71.
const GEMM_MIN_ROWS: usize = 16;

/// `[k, n]` right operands (`trans_b` false) take the window product (`window.rs`, its rows
/// `ldb` apart, read in place) rather than the `gemm` crate, on CPUs with AVX-512, when `k`
/// is at most this or `m` at most [`WINDOW_MAX_M`]: there the crate's packing of `b` is a
/// large part of its work. Measured on single convolutions + bias + clip (`benches/vision.md`,
/// issue #21, helper `pw`; CPU time of the product from `perf` samples, load 5 on 2 cores):
/// the 3→32 stride-2 stem's im2col product (`k` = 27) 0.52, 0.55 → 0.33, 0.46 ms; 16→96 at
/// 112² 0.40 → 0.34 ms; 144→24 at 56² (`m` = 24) 0.70, 0.64 → 0.67, 0.61 ms. With many rows
/// and a large `k` the crate's packed copy pays for itself, and a short `n` (49, 196 positions)
/// wastes the window product's 64-position tiles: 96→576 at 14² went 0.55 → 0.65–0.7 ms
/// (whole kernel) through the window product, so it stays with the crate.
const WINDOW_MAX_K: usize = 32;

/// See [`WINDOW_MAX_K`]: the crate's copy of `b` is read by `m` rows, too few below this.
const WINDOW_MAX_M: usize = 32;

/// Window row offsets kept on the stack: a depthwise convolution's taps (25 for 5×5, 36 for
/// 5×5 at stride 2 over its phases).
const INLINE_OFFSETS: usize = 36;

/// `out[i·n + j] = Σ_{p < k} a[i·k + p] · b(j, p)` for `i < m`, `j < n`, where `b(j, p)` is
/// `b[row(j) + p]` if `trans_b != 0` and `b[row(p) + j]` otherwise, `row(r)` the offset of
/// row `r` that the `pairs` `(extent, stride)` pairs at `rows` give (kir's `Stmt::Gemm` and its
/// `RowOffsets`, `b` already advanced to its `b_offset`). `packed` is null or `b` repacked
/// (`pack_cache.rs`), which a product of a few rows (`packed::reads_packed`) then reads
/// instead; the result is the same to the bit either way. The packed and GEMV paths need a
/// contiguous `b` (one pair, stride the row length); a block of a larger matrix goes to the
/// `gemm` crate, which takes strides, or (`[k, n]` form, [`WINDOW_MAX_K`]) to `window.rs`, as
/// window rows (several pairs) do.
///
/// # Safety
/// `out` must be valid for `m·n` writes, `a` for `m·k` reads, `rows` for `2·pairs` reads of
/// `i64` and `b` for `relay_kir::gemm_b_span(n, k, rows, trans_b)` reads, all of `f32`, and
/// `out` must not overlap `a` or `b`; `packed` must be null or point to a live
/// [`PackedMatrix`] holding the same matrix as `b`. The JIT calls it only for a verified kernel
/// whose bounds proof covers exactly these ranges.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn relay_jit_gemm(
    out: *mut f32,
    a: *const f32,
    b: *const f32,
    packed: *const PackedMatrix,
    rows: *const i64,
    m: i64,
    n: i64,
    k: i64,
    pairs: i64,
    trans_b: i64,
) {
    let trans_b = trans_b != 0;
    let size = |d: i64| usize::try_from(d).ok();
    let Some(pairs) = size(pairs) else { return };
    // SAFETY: the caller guarantees `2·pairs` readable `i64`s at `rows`.
    let dims = unsafe { std::slice::from_raw_parts(rows, 2 * pairs) };
    // Inline pairs and offsets: a depthwise convolution calls once per channel, and an
    // allocation per call was a measurable share of MobileNet-v2's time.
    let b_rows: RowOffsets = dims.chunks_exact(2).map(|d| (d[0], d[1])).collect();
    let b_span = relay_kir::gemm_b_span(n, k, &b_rows, trans_b).and_then(size);
    let (Some(m), Some(n), Some(k), Some(b_len)) = (size(m), size(n), size(k), b_span) else {
        return;
    };
    let (Some(out_len), Some(a_len)) = (m.checked_mul(n), m.checked_mul(k)) else { return };
    if out_len == 0 {
        return;
    }
    // SAFETY: the caller guarantees these ranges (see above).
    let out = unsafe { std::slice::from_raw_parts_mut(out, out_len) };
    if k == 0 {
        out.fill(0.0);
        return;
    }
    // SAFETY: as above.
    let (a, b) = unsafe { (std::slice::from_raw_parts(a, a_len), std::slice::from_raw_parts(b, b_len)) };
    let Some(ldb) = b_rows.ldb().and_then(size) else {
        let offsets: Option<SmallVec<[usize; INLINE_OFFSETS]>> = b_rows.offsets().map(size).collect();
        if let (false, Some(offsets)) = (trans_b, offsets) {
            gemm_window(out, a, b, &offsets, [m, n, k]);
        }
        return;
    };
    if !trans_b && (k <= WINDOW_MAX_K || m <= WINDOW_MAX_M) && avx512() {
        // One pair is a window of uniformly spaced rows: BLAS's `ldb` (in range: `b_span`).
        let offsets: SmallVec<[usize; INLINE_OFFSETS]> = (0..k).map(|p| p * ldb).collect();
        return gemm_window(out, a, b, &offsets, [m, n, k]);
    }
    if ldb != if trans_b { k } else { n } {
        return gemm_blocked(out, a, b, [m, n, k, ldb], trans_b);
    }
    if reads_packed(m as i64, trans_b) && packs(n, k) {
        // SAFETY: null or a live packed copy of `b` (see above).
        return match unsafe { packed.as_ref() } {
            Some(p) if p.shape() == (n, k) => p.gemm_rows(out, a),
            // Not packed yet: the same sums in the same order, so the result does not
            // depend on whether it is.
            _ => gemm_rows_in_order(out, b, a, n, k),
        };
    }
    if trans_b && m == 1 {
        return gemv(out, b, a);
    }
    if trans_b && m < GEMM_MIN_ROWS {
        return gemv_rows(out, b, a, k);
    }
    gemm_blocked(out, a, b, [m, n, k, ldb], trans_b);
}

/// The `gemm` crate on slices of exactly `m·n`, `m·k` and `gemm_b_span(n, k, [(rows, ldb)],
/// trans_b)` elements, on [`intra_op_threads`] threads.
fn gemm_blocked(out: &mut [f32], a: &[f32], b: &[f32], [m, n, k, ldb]: [usize; 4], trans_b: bool) {
    // Strides in elements: `b` read as the `[k, n]` matrix `rhs[p, j]`.
    let (rhs_cs, rhs_rs) = if trans_b { (ldb, 1) } else { (1, ldb) };
    let stride = |s: usize| isize::try_from(s).unwrap_or(isize::MAX);
    // A product of few rows (a batch of a few vectors) is too small to share.
    let parallelism = match intra_op_threads() {
        threads if threads > 1 && m >= GEMM_MIN_ROWS => gemm::Parallelism::Rayon(threads),
        _ => gemm::Parallelism::None,
    };
    // SAFETY: every matrix lies inside its slice: `out` is `m × n` with row stride `n`, `a`
    // is `m × k` with row stride `k`, and `rhs` is `k × n` with the strides above, whose last
    // element is `b`'s last (`gemm_b_span`; the slices have exactly these lengths, and `gemm`
    // reads and writes nothing else). `read_dst` is false, so `out`'s old contents are never read.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            1,
            stride(n),
            false,
            a.as_ptr(),
            1,
            stride(k),
            b.as_ptr(),
            stride(rhs_cs),
            stride(rhs_rs),
            0.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_paths_and_layouts_match_the_definition() {
        // `[k, n]` operands with AVX-512 take the window product (40×70×16: a pointwise
        // convolution's tile, several register panels and a masked last vector).
        let shapes = [
            (1, 5, 7),
            (3, 4, 5),
            (7, 33, 17),
            (8, 9, 16),
            (19, 45, 30),
            (2, 3, 0),
            (0, 4, 2),
            (1, 1, 1),
            (40, 70, 16),
        ];
        // `pad` extra elements per row of `b`: a block of a wider matrix (`ldb` > row).
        for ((m, n, k), pad) in shapes.into_iter().flat_map(|s| [(s, 0), (s, 3)]) {
            for trans_b in [true, false] {
                let ldb = if trans_b { k } else { n } + pad;
                let b_rows = RowOffsets::uniform(if trans_b { n } else { k } as i64, ldb as i64);
                let span = relay_kir::gemm_b_span(n as i64, k as i64, &b_rows, trans_b).unwrap() as usize;
                let a: Vec<f32> = (0..m * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
                let b: Vec<f32> = (0..span).map(|i| ((i * 13 % 29) as f32 - 14.0) / 7.0).collect();
                let want: Vec<f64> = (0..m * n)
                    .map(|o| {
                        let (i, j) = (o / n.max(1), o % n.max(1));
                        (0..k)
                            .map(|p| {
                                let bv = if trans_b { b[j * ldb + p] } else { b[p * ldb + j] };
                                f64::from(a[i * k + p]) * f64::from(bv)
                            })
                            .sum()
                    })
                    .collect();
                let product = |packed: *const PackedMatrix| {
                    let mut out = vec![f32::NAN; m * n];
                    // SAFETY: the buffers have exactly the lengths the routine reads and
                    // writes; `packed` is null or a packed copy of `b`.
                    unsafe {
                        relay_jit_gemm(
                            out.as_mut_ptr(),
                            a.as_ptr(),
                            b.as_ptr(),
                            packed,
                            [b_rows.dims()[0].0, ldb as i64].as_ptr(),
                            m as i64,
                            n as i64,
                            k as i64,
                            1,
                            i64::from(trans_b),
                        )
                    };
                    out
                };
                let out = product(std::ptr::null());
                let close =
                    out.iter().zip(&want).all(|(&g, &e)| (f64::from(g) - e).abs() <= 1e-4 * e.abs().max(1.0));
                assert!(close, "{m}x{n}x{k} ldb={ldb} trans_b={trans_b}: {out:?} vs {want:?}");
                // Packed or not yet packed: the same bits (only CPUs that pack get here).
                if let (true, 0, Some(p)) = (trans_b, pad, PackedMatrix::new(&b, n, k)) {
                    assert_eq!(product(&p), out, "packed {m}x{n}x{k}");
                }
            }
        }
    }

    #[test]
    fn one_row_over_phase_split_window_rows_matches_the_definition() {
        // A depthwise channel at stride 2 (`stdlib`'s `compute/depthwise.rs`): one output row
        // over the four `[hq, wq]` phases of the padded channel, the rows `(a, b, dy, dx)`.
        // Widths below, at and past the register tile, and a masked last vector.
        for (hq, wq) in [(2, 2), (6, 6), (9, 17), (30, 71)] {
            let plane = hq * wq;
            let dims = [2, 2 * plane, 2, plane, 2, wq, 2, 1].map(|d| d as i64);
            let (n, k) = ((hq - 2) * wq + wq - 1, 16);
            let offsets: Vec<usize> = RowOffsets::new(dims.chunks(2).map(|d| (d[0], d[1])).collect())
                .offsets()
                .map(|o| o as usize)
                .collect();
            let a: Vec<f32> = (0..k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
            let b: Vec<f32> = (0..4 * plane).map(|i| ((i * 13 % 29) as f32 - 14.0) / 7.0).collect();
            let product = |dims: &[i64]| {
                let mut out = vec![f32::NAN; n];
                // SAFETY: `out` is `m·n = n` long, `a` `k`, `b` the span of the rows (the four
                // phases), `dims` `2·pairs` values.
                unsafe {
                    relay_jit_gemm(
                        out.as_mut_ptr(),
                        a.as_ptr(),
                        b.as_ptr(),
                        std::ptr::null(),
                        dims.as_ptr(),
                        1,
                        n as i64,
                        k as i64,
                        dims.len() as i64 / 2,
                        0,
                    )
                };
                out
            };
            let out = product(&dims);
            for (j, &got) in out.iter().enumerate() {
                let want: f64 = (0..k).map(|p| f64::from(a[p]) * f64::from(b[offsets[p] + j])).sum();
                assert!((f64::from(got) - want).abs() <= 1e-4 * want.abs().max(1.0), "{hq}x{wq} at {j}");
            }
            // A fifth pair is past `MAX_ROW_PAIRS`: refused, nothing written.
            let five = [&[1, 0][..], &dims[..]].concat();
            assert!(product(&five).iter().all(|v| v.is_nan()), "{hq}x{wq}: five pairs");
        }
    }

    #[test]
    fn threads_give_the_same_bits_as_one() {
        // Large enough (m·n·k over the crate's threading threshold) to be split.
        for (m, n, k, trans_b) in [(200, 96, 64, false), (96, 200, 70, true), (33, 300, 129, false)] {
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
            let b: Vec<f32> = (0..n * k).map(|i| ((i * 13 % 29) as f32 - 14.0) / 7.0).collect();
            let product = |threads: usize| {
                set_intra_op_threads(threads);
                let mut out = vec![f32::NAN; m * n];
                gemm_blocked(&mut out, &a, &b, [m, n, k, if trans_b { k } else { n }], trans_b);
                set_intra_op_threads(1);
                out
            };
            let one = product(1);
            assert!(one.iter().all(|v| v.is_finite()));
            for threads in [2, 3] {
                assert_eq!(product(threads), one, "{m}x{n}x{k} trans_b={trans_b} on {threads} threads");
            }
        }
    }
}
