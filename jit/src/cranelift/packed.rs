//! Dense weights repacked for the matrix-vector product: the layout that lets a GEMV stream
//! its matrix at the cache's bandwidth.
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

use relay_compiler::kir::{BufferId, BufferRole, Kernel, Stmt};

/// Output vectors (of 16 lanes) per panel: 8 accumulators, a quarter of the vector registers.
const PANEL: usize = 8;
/// Lanes per vector.
const LANES: usize = 16;
/// Matrices larger than this (elements; 64 MB of float32) are not repacked: they stream from
/// memory, where line splits cost little, and a copy would double their footprint.
const MAX_ELEMENTS: usize = 1 << 24;

/// One aligned vector of lanes.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Lanes([f32; LANES]);

/// A `[n, k]` float32 matrix repacked for [`PackedMatrix::gemv`].
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

/// Vectors in the panel starting at output `start` of `n`.
fn panel_vectors(start: usize, n: usize) -> usize {
    (n - start).div_ceil(LANES).min(PANEL)
}

impl PackedMatrix {
    /// Repacks the row-major `[n, k]` matrix `w`, or `None` when the packed product would not
    /// be faster here: a CPU without AVX-512, an empty or oversized matrix, or `w` not of
    /// `n·k` elements.
    pub(crate) fn new(w: &[f32], n: usize, k: usize) -> Option<PackedMatrix> {
        if !avx512() || n == 0 || k == 0 || n.checked_mul(k)? != w.len() || w.len() > MAX_ELEMENTS {
            return None;
        }
        Some(PackedMatrix::pack(w, n, k))
    }

    fn pack(w: &[f32], n: usize, k: usize) -> PackedMatrix {
        let mut data = Vec::with_capacity(n.div_ceil(LANES) * k);
        let mut start = 0;
        while start < n {
            let nv = panel_vectors(start, n);
            for j in 0..k {
                for v in 0..nv {
                    let mut lanes = Lanes([0.0; LANES]);
                    for (l, lane) in lanes.0.iter_mut().enumerate() {
                        let row = start + v * LANES + l;
                        if row < n {
                            *lane = w[row * k + j];
                        }
                    }
                    data.push(lanes);
                }
            }
            start += nv * LANES;
        }
        PackedMatrix { data, n, k }
    }

    /// The matrix's shape `(n, k)`.
    pub(crate) fn shape(&self) -> (usize, usize) {
        (self.n, self.k)
    }

    /// Bytes the packed copy occupies.
    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of_val(self.data.as_slice())
    }

    /// `out[i] = Σ_{j < k} w[i·k + j] · x[j]` for `i < n`, summed in order of `j` (one fused
    /// multiply-add per term with AVX-512). Lengths that do not fit (`out.len() != n` or
    /// `x.len() != k`) give zeros, as [`super::gemv::gemv`] does.
    pub(crate) fn gemv(&self, out: &mut [f32], x: &[f32]) {
        if out.len() != self.n || x.len() != self.k {
            out.fill(0.0);
            return;
        }
        let mut start = 0;
        let mut panels = self.data.as_slice();
        while start < self.n {
            let nv = panel_vectors(start, self.n);
            let (panel, rest) = panels.split_at(nv * self.k);
            let end = (start + nv * LANES).min(self.n);
            let out = &mut out[start..end];
            #[cfg(target_arch = "x86_64")]
            if avx512() {
                // SAFETY: the CPU has AVX-512F; `panel` holds `k` groups of `nv` vectors and
                // `out` the panel's outputs (checked by `x86::panel`).
                unsafe { x86::panel(out, panel, x, nv) };
                start = end;
                panels = rest;
                continue;
            }
            panel_portable(out, panel, x, nv);
            start = end;
            panels = rest;
        }
    }
}

fn avx512() -> bool {
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
fn panel_portable(out: &mut [f32], panel: &[Lanes], x: &[f32], nv: usize) {
    let mut acc = [0f32; PANEL * LANES];
    for (group, &xj) in panel.chunks_exact(nv).zip(x) {
        for (v, lanes) in group.iter().enumerate() {
            for (a, &w) in acc[v * LANES..(v + 1) * LANES].iter_mut().zip(&lanes.0) {
                *a = w.mul_add(xj, *a);
            }
        }
    }
    out.copy_from_slice(&acc[..out.len()]);
}

/// The input buffers a kernel's `gemm` statements could read packed: the `[n, k]` weights
/// (`trans_b`) of a one-row product, as `(buffer, n, k)`, each once, in buffer order. The
/// JIT's buffer table has one extra entry per operand, after the kernel's buffers, holding
/// its [`PackedMatrix`] or null.
pub(crate) fn packable_operands(kernel: &Kernel) -> Vec<(BufferId, usize, usize)> {
    fn walk(k: &Kernel, body: &[Stmt], found: &mut Vec<(BufferId, usize, usize)>) {
        for s in body {
            match s {
                Stmt::Gemm { b, m: 1, n, k: depth, trans_b: true, .. } => {
                    let input = k.buffers.get(b.index()).is_some_and(|d| d.role == BufferRole::Input);
                    let (Ok(n), Ok(depth)) = (usize::try_from(*n), usize::try_from(*depth)) else { continue };
                    if input && !found.contains(&(*b, n, depth)) {
                        found.push((*b, n, depth));
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
    found.sort_by_key(|&(b, n, k)| (b.index(), n, k));
    found
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Lanes, LANES, PANEL};
    use std::arch::x86_64::*;

    /// One panel of `nv` output vectors.
    ///
    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn panel(out: &mut [f32], panel: &[Lanes], x: &[f32], nv: usize) {
        // One monomorphised loop per width keeps the accumulators in registers.
        match nv {
            1 => unsafe { panel_of::<1>(out, panel, x) },
            2 => unsafe { panel_of::<2>(out, panel, x) },
            3 => unsafe { panel_of::<3>(out, panel, x) },
            4 => unsafe { panel_of::<4>(out, panel, x) },
            5 => unsafe { panel_of::<5>(out, panel, x) },
            6 => unsafe { panel_of::<6>(out, panel, x) },
            7 => unsafe { panel_of::<7>(out, panel, x) },
            _ => unsafe { panel_of::<PANEL>(out, panel, x) },
        }
    }

    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    unsafe fn panel_of<const NV: usize>(out: &mut [f32], panel: &[Lanes], x: &[f32]) {
        if out.len() > NV * LANES || out.len() + LANES <= NV * LANES || panel.len() != NV * x.len() {
            out.fill(0.0);
            return;
        }
        let mut acc = [_mm512_setzero_ps(); NV];
        for (group, &xj) in panel.chunks_exact(NV).zip(x) {
            let xb = _mm512_set1_ps(xj);
            for (a, lanes) in acc.iter_mut().zip(group) {
                // SAFETY: `Lanes` is 16 floats aligned to 64 bytes.
                *a = _mm512_fmadd_ps(unsafe { _mm512_load_ps(lanes.0.as_ptr()) }, xb, *a);
            }
        }
        for (v, a) in acc.iter().enumerate() {
            let lanes = (out.len() - v * LANES).min(LANES);
            let mask: __mmask16 = ((1u32 << lanes) - 1) as __mmask16;
            // SAFETY: the masked store writes `lanes` floats from `v · 16`, inside `out`
            // (checked above: the last vector has 1..=16 valid lanes).
            unsafe { _mm512_mask_storeu_ps(out.as_mut_ptr().add(v * LANES), mask, *a) };
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
        // Panels of 1..=8 vectors, partial last vectors, one row, one column.
        for (n, k) in [(1, 1), (5, 3), (16, 7), (17, 33), (128, 9), (150, 150), (450, 300), (129, 1)] {
            let (w, x) = matrix(n, k);
            let want = definition(&w, &x, n, k);
            let close = |got: &[f32]| {
                got.iter().zip(&want).all(|(&g, &e)| (f64::from(g) - e).abs() <= 1e-4 * e.abs().max(1.0))
            };
            let packed = PackedMatrix::pack(&w, n, k);
            let mut out = vec![f32::NAN; n];
            packed.gemv(&mut out, &x);
            assert!(close(&out), "{n}x{k}");
            let mut portable = vec![f32::NAN; n];
            let mut start = 0;
            let mut panels = packed.data.as_slice();
            while start < n {
                let nv = panel_vectors(start, n);
                let (panel, rest) = panels.split_at(nv * k);
                let end = (start + nv * LANES).min(n);
                panel_portable(&mut portable[start..end], panel, &x, nv);
                (start, panels) = (end, rest);
            }
            assert!(close(&portable), "portable {n}x{k}");
            // Both sum each output in order of `j` with fused multiply-adds: the same bits.
            if avx512() {
                assert_eq!(out, portable, "{n}x{k}");
            }
        }
    }

    #[test]
    fn lengths_that_do_not_fit_give_zeros() {
        let (w, x) = matrix(20, 6);
        let packed = PackedMatrix::pack(&w, 20, 6);
        let mut out = vec![f32::NAN; 19];
        packed.gemv(&mut out, &x);
        assert!(out.iter().all(|&v| v == 0.0));
        let mut out = vec![f32::NAN; 20];
        packed.gemv(&mut out, &x[..5]);
        assert!(out.iter().all(|&v| v == 0.0));
    }

    #[test]
    fn only_matrices_worth_packing_are_packed() {
        assert!(PackedMatrix::new(&[], 0, 3).is_none());
        assert!(PackedMatrix::new(&[1.0; 6], 2, 4).is_none());
        assert_eq!(PackedMatrix::new(&[1.0; 6], 2, 3).map(|p| p.shape()), avx512().then_some((2, 3)));
    }
}
