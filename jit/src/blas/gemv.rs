//! The matrix-vector product behind kir's `gemm` statement with one row: the widest vectors
//! the CPU has. Cranelift emits 128-bit vectors only, and a GEMV's inner loop already
//! runs at that width's FMA bound; AVX-512 (or AVX2+FMA) doubles or quadruples the lanes.
//! Measured on the Tree-LSTM's and LSTM's shapes (`cargo bench --bench kernels`): see
//! ARCHITECTURE.md.

/// `out[i] = Σ_{j < k} w[i·k + j] · x[j]` for `i < out.len()` (row-major `w`, `k = x.len()`),
/// with the widest vectors the CPU has.
/// Lengths that do not fit (a caller bug; `gemm.rs` passes fitting ones) give zeros: the
/// vector code must never read past a slice.
pub(super) fn gemv(out: &mut [f32], w: &[f32], x: &[f32]) {
    let k = x.len();
    if k == 0 || w.len() != out.len() * k {
        out.fill(0.0);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F; the lengths were checked above.
            return unsafe { x86::gemv_avx512(out, w, x, k) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA; the lengths were checked above.
            return unsafe { x86::gemv_avx2(out, w, x, k) };
        }
    }
    gemv_portable(out, w, x, k);
}

/// `out[i·n + j] = Σ_{p < k} x[i·k + p] · w[j·k + p]` for every row `i` of `x` (a few vectors
/// through one row-major `[n, k]` matrix, `k = x.len() / out.len() · n`): with AVX-512 each
/// block of four matrix rows is read once for up to four vectors, so the matrix streams from
/// cache a quarter as often as with one [`gemv`] per vector; with AVX2 each pair of matrix
/// rows is read once for up to four vectors (each output summed exactly as [`gemv`] sums
/// it); otherwise one [`gemv`] per row.
/// Lengths that do not fit give zeros, as for [`gemv`].
pub(super) fn gemv_rows(out: &mut [f32], w: &[f32], x: &[f32], k: usize) {
    let n = w.len().checked_div(k).unwrap_or(0);
    if n == 0 || w.len() != n * k || !x.len().is_multiple_of(k) || out.len() != x.len() / k * n {
        out.fill(0.0);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F; the lengths were checked above.
        return unsafe { x86::gemv_rows_avx512(out, w, x, k, n) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA; the lengths were checked above.
        return unsafe { x86::gemv_rows_avx2(out, w, x, k, n) };
    }
    for (row, v) in out.chunks_exact_mut(n).zip(x.chunks_exact(k)) {
        gemv(row, w, v);
    }
}

/// Any CPU: eight partial sums per row, which compilers vectorise.
fn gemv_portable(out: &mut [f32], w: &[f32], x: &[f32], k: usize) {
    for (o, row) in out.iter_mut().zip(w.chunks_exact(k)) {
        let mut acc = [0f32; 8];
        let (rc, xc) = (row.chunks_exact(8), x.chunks_exact(8));
        let (rt, xt) = (rc.remainder(), xc.remainder());
        for (r, v) in rc.zip(xc) {
            for l in 0..8 {
                acc[l] += r[l] * v[l];
            }
        }
        *o = acc.iter().sum::<f32>() + rt.iter().zip(xt).map(|(a, b)| a * b).sum::<f32>();
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Rows in one pass over `x`: each `x` vector is loaded once for all of them.
    const ROWS: usize = 4;

    /// # Safety
    /// The CPU must have AVX-512F; `w.len() == out.len() * k`, `x.len() == k`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn gemv_avx512(out: &mut [f32], w: &[f32], x: &[f32], k: usize) {
        let full = k / 16;
        // Lanes of the last, partial vector (masked loads read nothing beyond it).
        let tail: __mmask16 = ((1u32 << (k % 16)) - 1) as __mmask16;
        let (xp, wp) = (x.as_ptr(), w.as_ptr());
        // SAFETY (every load below): row `r < out.len()` spans `w[r·k .. (r+1)·k]`, and column
        // offsets stay below `k` (full vectors) or are masked to it (the tail).
        // Macros, not closures: closures do not inherit `target_feature`, and the intrinsics
        // must inline into this function.
        macro_rules! row {
            ($r:expr, $j:expr) => {
                unsafe { _mm512_loadu_ps(wp.add($r * k + $j * 16)) }
            };
        }
        macro_rules! row_tail {
            ($r:expr) => {
                unsafe { _mm512_maskz_loadu_ps(tail, wp.add($r * k + full * 16)) }
            };
        }
        let x_tail = unsafe { _mm512_maskz_loadu_ps(tail, xp.add(full * 16)) };
        let blocks = out.len() / ROWS;
        // Four rows per pass over `x`, in four registers: each `x` vector is loaded once.
        for b in 0..blocks {
            let i = b * ROWS;
            let (mut a0, mut a1, mut a2, mut a3) =
                (_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps());
            for j in 0..full {
                let xv = unsafe { _mm512_loadu_ps(xp.add(j * 16)) };
                a0 = _mm512_fmadd_ps(row!(i, j), xv, a0);
                a1 = _mm512_fmadd_ps(row!(i + 1, j), xv, a1);
                a2 = _mm512_fmadd_ps(row!(i + 2, j), xv, a2);
                a3 = _mm512_fmadd_ps(row!(i + 3, j), xv, a3);
            }
            if tail != 0 {
                a0 = _mm512_fmadd_ps(row_tail!(i), x_tail, a0);
                a1 = _mm512_fmadd_ps(row_tail!(i + 1), x_tail, a1);
                a2 = _mm512_fmadd_ps(row_tail!(i + 2), x_tail, a2);
                a3 = _mm512_fmadd_ps(row_tail!(i + 3), x_tail, a3);
            }
            out[i] = _mm512_reduce_add_ps(a0);
            out[i + 1] = _mm512_reduce_add_ps(a1);
            out[i + 2] = _mm512_reduce_add_ps(a2);
            out[i + 3] = _mm512_reduce_add_ps(a3);
        }
        for (i, o) in out.iter_mut().enumerate().skip(blocks * ROWS) {
            let mut a = _mm512_setzero_ps();
            for j in 0..full {
                a = _mm512_fmadd_ps(row!(i, j), unsafe { _mm512_loadu_ps(xp.add(j * 16)) }, a);
            }
            if tail != 0 {
                a = _mm512_fmadd_ps(row_tail!(i), x_tail, a);
            }
            *o = _mm512_reduce_add_ps(a);
        }
    }

    /// Vectors per pass over a block of matrix rows in [`gemv_rows_avx512`]: 4 × [`ROWS`]
    /// accumulators, half the vector registers.
    const VECTORS: usize = 4;

    /// # Safety
    /// The CPU must have AVX-512F; `w.len() == n * k`, `x.len() == out.len() / n * k`, `k > 0`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn gemv_rows_avx512(out: &mut [f32], w: &[f32], x: &[f32], k: usize, n: usize) {
        let (m, full) = (x.len() / k, k / 16);
        let tail: __mmask16 = ((1u32 << (k % 16)) - 1) as __mmask16;
        let (xp, wp) = (x.as_ptr(), w.as_ptr());
        // SAFETY (every load below): matrix row `j < n` spans `w[j·k .. (j+1)·k]`, vector
        // `i < m` spans `x[i·k .. (i+1)·k]`, and column offsets stay below `k` (full vectors)
        // or are masked to it (the tail).
        macro_rules! load {
            ($p:expr, $row:expr, $c:expr, $mask:expr) => {
                unsafe { _mm512_maskz_loadu_ps($mask, $p.add($row * k + $c * 16)) }
            };
        }
        let mut i = 0;
        while i < m {
            let vs = (m - i).min(VECTORS);
            let mut j = 0;
            while j + ROWS <= n {
                let mut acc = [[_mm512_setzero_ps(); ROWS]; VECTORS];
                for c in 0..full + usize::from(tail != 0) {
                    let mask = if c < full { !0 } else { tail };
                    let mut wv = [_mm512_setzero_ps(); ROWS];
                    for (r, v) in wv.iter_mut().enumerate() {
                        *v = load!(wp, j + r, c, mask);
                    }
                    for (v, row_acc) in acc.iter_mut().enumerate().take(vs) {
                        let xv = load!(xp, i + v, c, mask);
                        for (a, &wr) in row_acc.iter_mut().zip(&wv) {
                            *a = _mm512_fmadd_ps(wr, xv, *a);
                        }
                    }
                }
                for (v, row_acc) in acc.iter().enumerate().take(vs) {
                    for (r, a) in row_acc.iter().enumerate() {
                        out[(i + v) * n + j + r] = _mm512_reduce_add_ps(*a);
                    }
                }
                j += ROWS;
            }
            // The last `n % ROWS` matrix rows, one vector at a time.
            for jj in j..n {
                for v in 0..vs {
                    let mut a = _mm512_setzero_ps();
                    for c in 0..full + usize::from(tail != 0) {
                        let mask = if c < full { !0 } else { tail };
                        a = _mm512_fmadd_ps(load!(wp, jj, c, mask), load!(xp, i + v, c, mask), a);
                    }
                    out[(i + v) * n + jj] = _mm512_reduce_add_ps(a);
                }
            }
            i += vs;
        }
    }

    /// # Safety
    /// The CPU must have AVX2 and FMA; `w.len() == out.len() * k`, `x.len() == k`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn gemv_avx2(out: &mut [f32], w: &[f32], x: &[f32], k: usize) {
        let full = k / 8;
        let (xp, wp) = (x.as_ptr(), w.as_ptr());
        let mut i = 0;
        while i < out.len() {
            let n = ROWS.min(out.len() - i);
            let mut acc = [_mm256_setzero_ps(); ROWS];
            for j in 0..full {
                // SAFETY: as in `gemv_avx512`; the tail is summed in scalar code below.
                let xv = unsafe { _mm256_loadu_ps(xp.add(j * 8)) };
                for (r, a) in acc.iter_mut().enumerate().take(n) {
                    let wv = unsafe { _mm256_loadu_ps(wp.add((i + r) * k + j * 8)) };
                    *a = _mm256_fmadd_ps(wv, xv, *a);
                }
            }
            for (r, a) in acc.iter().enumerate().take(n) {
                let mut lanes = [0f32; 8];
                // SAFETY: `lanes` holds 8 floats.
                unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), *a) };
                let row = &w[(i + r) * k..(i + r + 1) * k];
                let tail: f32 = row[full * 8..].iter().zip(&x[full * 8..]).map(|(a, b)| a * b).sum();
                out[i + r] = lanes.iter().sum::<f32>() + tail;
            }
            i += n;
        }
    }

    /// Vectors per pass over a pair of matrix rows in [`gemv_rows_avx2`] (8 accumulators of
    /// the 16 AVX2 registers).
    const AVX2_VECTORS: usize = 4;
    /// Matrix rows per pass in [`gemv_rows_avx2`].
    const AVX2_ROWS: usize = 2;

    /// [`super::gemv_rows`] with AVX2: each output is summed as [`gemv_avx2`] sums it (one
    /// accumulator per output, chunks of 8 in order, then the lanes, then the scalar tail), so
    /// the results are the same bits as one [`gemv_avx2`] per vector.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `k > 0`, `w.len() == n * k`, `x.len()` a multiple of
    /// `k` and `out.len() == x.len() / k * n`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn gemv_rows_avx2(out: &mut [f32], w: &[f32], x: &[f32], k: usize, n: usize) {
        let m = x.len() / k;
        let full = k / 8;
        let (xp, wp) = (x.as_ptr(), w.as_ptr());
        let mut v0 = 0;
        while v0 < m {
            let nv = AVX2_VECTORS.min(m - v0);
            let mut j0 = 0;
            while j0 < n {
                let nr = AVX2_ROWS.min(n - j0);
                let mut acc = [[_mm256_setzero_ps(); AVX2_VECTORS]; AVX2_ROWS];
                if nv == AVX2_VECTORS && nr == AVX2_ROWS {
                    // The full block with named accumulators, which stay in registers (the
                    // loops below keep their array in memory).
                    let z = _mm256_setzero_ps();
                    let [mut a0, mut a1, mut a2, mut a3, mut b0, mut b1, mut b2, mut b3] = [z; 8];
                    for p in 0..full {
                        // SAFETY: vectors `v0..v0 + 4 <= m` and matrix rows `j0..j0 + 2 <= n`
                        // each hold `k >= (p + 1) * 8` floats.
                        let [x0, x1, x2, x3] =
                            [0, 1, 2, 3].map(|v| unsafe { _mm256_loadu_ps(xp.add((v0 + v) * k + p * 8)) });
                        let [w0, w1] =
                            [0, 1].map(|r| unsafe { _mm256_loadu_ps(wp.add((j0 + r) * k + p * 8)) });
                        a0 = _mm256_fmadd_ps(w0, x0, a0);
                        a1 = _mm256_fmadd_ps(w0, x1, a1);
                        a2 = _mm256_fmadd_ps(w0, x2, a2);
                        a3 = _mm256_fmadd_ps(w0, x3, a3);
                        b0 = _mm256_fmadd_ps(w1, x0, b0);
                        b1 = _mm256_fmadd_ps(w1, x1, b1);
                        b2 = _mm256_fmadd_ps(w1, x2, b2);
                        b3 = _mm256_fmadd_ps(w1, x3, b3);
                    }
                    acc = [[a0, a1, a2, a3], [b0, b1, b2, b3]];
                }
                for p in (if nv == AVX2_VECTORS && nr == AVX2_ROWS { full } else { 0 })..full {
                    let mut xv = [_mm256_setzero_ps(); AVX2_VECTORS];
                    for (v, xr) in xv.iter_mut().enumerate().take(nv) {
                        // SAFETY: vector `v0 + v < m` holds `k >= (p + 1) * 8` floats.
                        *xr = unsafe { _mm256_loadu_ps(xp.add((v0 + v) * k + p * 8)) };
                    }
                    for (r, row) in acc.iter_mut().enumerate().take(nr) {
                        // SAFETY: matrix row `j0 + r < n` holds `k >= (p + 1) * 8` floats.
                        let wv = unsafe { _mm256_loadu_ps(wp.add((j0 + r) * k + p * 8)) };
                        for (a, xr) in row.iter_mut().zip(&xv).take(nv) {
                            *a = _mm256_fmadd_ps(wv, *xr, *a);
                        }
                    }
                }
                for (r, row) in acc.iter().enumerate().take(nr) {
                    let wr = &w[(j0 + r) * k..(j0 + r + 1) * k];
                    for (v, a) in row.iter().enumerate().take(nv) {
                        let mut lanes = [0f32; 8];
                        // SAFETY: `lanes` holds 8 floats.
                        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), *a) };
                        let xs = &x[(v0 + v) * k..(v0 + v + 1) * k];
                        let tail: f32 = wr[full * 8..].iter().zip(&xs[full * 8..]).map(|(a, b)| a * b).sum();
                        out[(v0 + v) * n + j0 + r] = lanes.iter().sum::<f32>() + tail;
                    }
                }
                j0 += nr;
            }
            v0 += nv;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_with_avx2_are_the_bits_of_one_gemv_per_vector() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            for (m, n, k) in [(1, 1, 1), (3, 5, 7), (4, 9, 16), (7, 450, 300), (5, 3, 17)] {
                let w: Vec<f32> = (0..n * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
                let x: Vec<f32> = (0..m * k).map(|i| ((i * 13 % 29) as f32 - 14.0) / 7.0).collect();
                let mut want = vec![0f32; m * n];
                for (row, v) in want.chunks_exact_mut(n).zip(x.chunks_exact(k)) {
                    // SAFETY: checked AVX2 and FMA above; `w` is `n × k`, `v` has `k` floats.
                    unsafe { x86::gemv_avx2(row, &w, v, k) };
                }
                let mut got = vec![f32::NAN; m * n];
                // SAFETY: as above; `x` is `m` vectors of `k`, `got` is `m × n`.
                unsafe { x86::gemv_rows_avx2(&mut got, &w, &x, k, n) };
                assert_eq!(got, want, "{m}x{n}x{k}");
            }
        }
    }

    #[test]
    fn every_path_matches_the_definition() {
        for (rows, k) in [(1, 1), (3, 7), (4, 16), (5, 17), (9, 33), (450, 300), (2, 0), (0, 5)] {
            let w: Vec<f32> = (0..rows * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
            let x: Vec<f32> = (0..k).map(|i| ((i * 13 % 29) as f32 - 14.0) / 7.0).collect();
            let want: Vec<f64> =
                (0..rows).map(|i| (0..k).map(|j| f64::from(w[i * k + j]) * f64::from(x[j])).sum()).collect();
            let close = |got: &[f32]| {
                got.iter().zip(&want).all(|(&g, &e)| (f64::from(g) - e).abs() <= 1e-4 * e.abs().max(1.0))
            };
            let mut out = vec![f32::NAN; rows];
            gemv(&mut out, &w, &x);
            assert!(close(&out), "dispatch {rows}x{k}");
            // The same vector three times through `gemv_rows`: three equal rows.
            if rows > 0 && k > 0 {
                let mut out3 = vec![f32::NAN; 3 * rows];
                gemv_rows(&mut out3, &w, &x.repeat(3), k);
                assert!(out3.chunks_exact(rows).all(close), "rows {rows}x{k}");
            }
            let mut out = vec![f32::NAN; rows];
            if k > 0 {
                gemv_portable(&mut out, &w, &x, k);
                assert!(close(&out), "portable {rows}x{k}");
            }
            #[cfg(target_arch = "x86_64")]
            if k > 0
                && std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                let mut out = vec![f32::NAN; rows];
                // SAFETY: checked features; lengths as documented.
                unsafe { x86::gemv_avx2(&mut out, &w, &x, k) };
                assert!(close(&out), "avx2 {rows}x{k}");
            }
        }
    }
}
