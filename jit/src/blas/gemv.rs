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
            // SAFETY: the CPU has AVX2 and FMA; the lengths were checked above (one vector).
            return unsafe { x86::gemv_rows_avx2(out, w, x, k, out.len()) };
        }
    }
    gemv_portable(out, w, x, k);
}

/// `out[i·n + j] = Σ_{p < k} x[i·k + p] · w[j·k + p]` for every row `i` of `x` (a few vectors
/// through one row-major `[n, k]` matrix, `k = x.len() / out.len() · n`): with AVX-512 each
/// block of four matrix rows is read once for up to four vectors, so the matrix streams from
/// cache a quarter as often as with one [`gemv`] per vector; with AVX2 each pair of matrix
/// rows is read once for four vectors (each output summed exactly as [`gemv`] sums it, so a
/// batch of requests gets the bits of each alone); otherwise one [`gemv`] per row.
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

    /// Accumulators (vectors × matrix rows) of one block of [`gemv_rows_avx2`]: with the
    /// block's vectors and one matrix row loaded, 13 of the 16 AVX2 registers.
    const AVX2_ACCUMULATORS: usize = 8;

    /// [`super::gemv_rows`] with AVX2 (and [`super::gemv`], one vector): blocks of four vectors
    /// by two matrix rows (one vector by eight rows, two by four, three by two), each loaded
    /// once per block. Every output is summed the same way whatever its block: one
    /// accumulator of 8 lanes over the chunks of 8 in order, the last `k % 8` columns as a
    /// masked chunk, then the lanes pairwise (`((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7))`, eight
    /// outputs at once by horizontal adds); so the results are the same bits for any number
    /// of vectors, and a batch of requests gets the bits of each request alone.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `k > 0`, `w.len() == n * k`, `x.len()` a multiple of
    /// `k` and `out.len() == x.len() / k * n`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn gemv_rows_avx2(out: &mut [f32], w: &[f32], x: &[f32], k: usize, n: usize) {
        let p = Product { out: out.as_mut_ptr(), w: w.as_ptr(), x: x.as_ptr(), k, n };
        let m = x.len() / k;
        let mut v0 = 0;
        while v0 < m {
            // SAFETY (each call): vectors `v0..v0 + NV <= m`; the lengths are the caller's.
            match m - v0 {
                1 => unsafe { p.rows::<1, 8>(v0) },
                2 => unsafe { p.rows::<2, 4>(v0) },
                3 => unsafe { p.rows::<3, 2>(v0) },
                _ => unsafe { p.rows::<4, 2>(v0) },
            }
            v0 += (m - v0).min(4);
        }
    }

    /// The operands of [`gemv_rows_avx2`] as pointers: `out` is `m × n`, `w` is `n × k` and
    /// `x` is `m × k`, row-major.
    struct Product {
        out: *mut f32,
        w: *const f32,
        x: *const f32,
        k: usize,
        n: usize,
    }

    impl Product {
        /// Every output of vectors `v0..v0 + NV`: blocks of `R` matrix rows, then the last
        /// `n % R` one at a time.
        ///
        /// # Safety
        /// AVX2 and FMA; vectors `v0..v0 + NV` exist; `NV · R <= 8`.
        #[target_feature(enable = "avx2,fma")]
        unsafe fn rows<const NV: usize, const R: usize>(&self, v0: usize) {
            let mut j0 = 0;
            while j0 + R <= self.n {
                // SAFETY: matrix rows `j0..j0 + R <= n` exist; the rest is the caller's.
                unsafe { self.block::<NV, R>(v0, j0) };
                j0 += R;
            }
            for j in j0..self.n {
                // SAFETY: matrix row `j < n` exists.
                unsafe { self.block::<NV, 1>(v0, j) };
            }
        }

        /// The outputs of vectors `v0..v0 + NV` by matrix rows `j0..j0 + R`.
        ///
        /// # Safety
        /// AVX2 and FMA; vectors `v0..v0 + NV` and matrix rows `j0..j0 + R` exist; `NV · R
        /// <= 8`.
        #[target_feature(enable = "avx2,fma")]
        #[inline]
        unsafe fn block<const NV: usize, const R: usize>(&self, v0: usize, j0: usize) {
            let k = self.k;
            let (full, rest) = (k / 8, k % 8);
            let mut acc = [_mm256_setzero_ps(); AVX2_ACCUMULATORS];
            let mut xs = [_mm256_setzero_ps(); NV];
            // One chunk of 8 columns from `offset`, read with `$load` (a macro, not a closure:
            // the intrinsics must inline into this function).
            macro_rules! chunk {
                ($offset:expr, $load:ident $(, $mask:expr)?) => {
                    for (v, xv) in xs.iter_mut().enumerate() {
                        *xv = unsafe { $load(self.x.add((v0 + v) * k + $offset) $(, $mask)?) };
                    }
                    for r in 0..R {
                        let wv = unsafe { $load(self.w.add((j0 + r) * k + $offset) $(, $mask)?) };
                        for (v, &xv) in xs.iter().enumerate() {
                            acc[v * R + r] = _mm256_fmadd_ps(wv, xv, acc[v * R + r]);
                        }
                    }
                };
            }
            // SAFETY (every load): vector `v0 + v` and matrix row `j0 + r` each hold `k`
            // floats; chunk `c < full` lies inside them, and the masked chunk reads only
            // their last `rest`.
            for c in 0..full {
                chunk!(c * 8, _mm256_loadu_ps);
            }
            if rest > 0 {
                // Lanes `< rest` of the last chunk: all ones, the others zero.
                let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
                let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(rest as i32), lanes);
                chunk!(full * 8, _mm256_maskload_ps, mask);
            }
            let mut sums = [0f32; AVX2_ACCUMULATORS];
            // SAFETY: `sums` holds 8 floats.
            unsafe { _mm256_storeu_ps(sums.as_mut_ptr(), lane_sums(&acc)) };
            for v in 0..NV {
                for r in 0..R {
                    // SAFETY: output `(v0 + v, j0 + r)` lies in the `m × n` output.
                    unsafe { *self.out.add((v0 + v) * self.n + j0 + r) = sums[v * R + r] };
                }
            }
        }
    }

    /// Lane `i` of the result is `((a0+a1)+(a2+a3)) + ((a4+a5)+(a6+a7))` over the lanes of
    /// `acc[i]`: four horizontal adds, two lane swaps and one add for all eight.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn lane_sums(acc: &[__m256; AVX2_ACCUMULATORS]) -> __m256 {
        let (p0, p1) = (_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
        let (p2, p3) = (_mm256_hadd_ps(acc[4], acc[5]), _mm256_hadd_ps(acc[6], acc[7]));
        let (low, high) = (_mm256_hadd_ps(p0, p1), _mm256_hadd_ps(p2, p3));
        // `low` holds the half sums of `acc[0..4]` (lanes 0–3 the low halves', 4–7 the high
        // halves'), `high` those of `acc[4..8]`.
        _mm256_add_ps(_mm256_permute2f128_ps(low, high, 0x20), _mm256_permute2f128_ps(low, high, 0x31))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn avx2() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// `m` vectors through the AVX2 routine.
    #[cfg(target_arch = "x86_64")]
    fn rows_avx2(w: &[f32], x: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
        let mut out = vec![f32::NAN; m * n];
        // SAFETY: callers checked AVX2 and FMA; `w` is `n × k`, `x` is `m × k`, `out` `m × n`.
        unsafe { x86::gemv_rows_avx2(&mut out, w, x, k, n) };
        out
    }

    fn operands(m: usize, n: usize, k: usize) -> (Vec<f32>, Vec<f32>) {
        let w = (0..n * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
        let x = (0..m * k).map(|i| ((i * 13 % 29) as f32 - 14.0) / 7.0).collect();
        (w, x)
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn rows_with_avx2_are_the_bits_of_one_vector_at_a_time() {
        if !avx2() {
            return;
        }
        for (m, n, k) in [(1, 1, 1), (3, 5, 7), (4, 9, 16), (7, 450, 300), (5, 3, 17), (13, 150, 150)] {
            let (w, x) = operands(m, n, k);
            let want: Vec<f32> = x.chunks_exact(k).flat_map(|v| rows_avx2(&w, v, 1, n, k)).collect();
            assert_eq!(rows_avx2(&w, &x, m, n, k), want, "{m}x{n}x{k}");
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn rows_with_avx2_match_a_triple_loop_at_odd_sizes() {
        if !avx2() {
            return;
        }
        for m in 1..=20 {
            for (n, k) in [(1, 1), (3, 7), (9, 13), (17, 33), (23, 150), (45, 301)] {
                let (w, x) = operands(m, n, k);
                let got = rows_avx2(&w, &x, m, n, k);
                for (o, &g) in got.iter().enumerate() {
                    let (i, j) = (o / n, o % n);
                    let e: f64 = (0..k).map(|p| f64::from(x[i * k + p]) * f64::from(w[j * k + p])).sum();
                    assert!(
                        (f64::from(g) - e).abs() <= 1e-4 * e.abs().max(1.0),
                        "{m}x{n}x{k} [{i}, {j}]: {g} vs {e}"
                    );
                }
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
            if k > 0 && avx2() {
                assert!(close(&rows_avx2(&w, &x, 1, rows, k)), "avx2 {rows}x{k}");
            }
        }
    }
}
