//! Products whose left operand is a convolution's weights, over those weights packed once.
//!
//! A convolution runs as `out[oc, pixels] = w[oc, c·kh·kw] · im2col[c·kh·kw, pixels]`
//! (`stdlib/src/compute/nn.rs`), the weights the same tensor call after call. The `gemm`
//! crate cannot take an operand packed in advance, so it packed them again on every call
//! (`benches/vision.md`: its packing was 14% of ResNet-18). Here the weights are packed once
//! into [`LhsPanels`] — panels of [`MR`] rows, for each input `p` the panel's `MR` weights of
//! `p` side by side, zero-padded past the last row — and kept per kernel while the tensor
//! lives ([`PanelSlot`]). The product is BLIS's loop nest with a register-blocked AVX-512
//! micro-kernel: per block of [`KC`] inputs and [`NR`] output columns, the block of the right
//! operand is copied into an aligned buffer that stays in the L1 cache while every panel
//! passes over it; a tile of `MR × NR` outputs is `MR · NV` vector accumulators, each step of
//! `p` `NV` loads of the right operand, `MR` broadcast weights and `MR · NV` fused
//! multiply-adds. Columns past the last one are masked lanes.
//!
//! Every output is one chain of fused multiply-adds over `p` in order from `+0.0`, whatever
//! the blocking, the thread or whether the weights were packed before the call (a call
//! without a packed copy packs into a temporary and runs the same code), so results depend
//! on the shape only. Without AVX-512, [`LhsPanels::new`] declines and the `gemm` crate
//! computes the product.

use super::gemm::intra_op_threads;
use super::packed::{avx512, Lanes, LANES};
use parking_lot::Mutex;
use rayon::prelude::*;
use relay_devices::Tensor;
use relay_kir::{BufferId, BufferRole, Kernel, Stmt};
use std::sync::{Arc, Weak};

/// Rows (output channels) per panel.
pub(crate) const MR: usize = 8;
/// Vectors of output columns per tile: `MR · NV` = 24 accumulators, `NV` loads and a
/// broadcast in the 32 vector registers.
const NV: usize = 3;
/// Output columns per tile.
const NR: usize = NV * LANES;
/// Inputs per pass: a `KC × NR` block of the right operand is 24 KiB, half the L1 cache, and
/// `m × KC` weights (every panel's block) stay in the L2 cache across the column blocks.
const KC: usize = 128;
/// Products of at least this many multiply-adds split their panels over
/// [`intra_op_threads`] threads (the `gemm` crate's threshold, 48·48·256).
const THREADING_THRESHOLD: usize = 48 * 48 * 256;
/// Packed weights kept per kernel: one kernel serves the convolutions of one shape and
/// epilogue, several per stage of a network (ResNet-18: 2, MobileNet-v2: up to 3).
const ENTRIES: usize = 8;

/// The `[m, k]` row-major left operand of products `a · b`, packed into panels of [`MR`] rows.
pub(crate) struct LhsPanels {
    /// Panel `i`, input `p`, row `r` at `(i·k + p)·MR + r`.
    data: Vec<f32>,
    m: usize,
    k: usize,
}

impl std::fmt::Debug for LhsPanels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LhsPanels").field("m", &self.m).field("k", &self.k).finish()
    }
}

/// Whether a product of `m` rows whose right operand is `[k, n]` (`!trans_b`) runs over
/// [`LhsPanels`] on a CPU with AVX-512: at least one full panel of rows, one vector of
/// columns (narrower products would leave most lanes of each tile empty), and no more columns
/// than rows. The product packs blocks of the right operand (`k·n` copied per call) where the
/// `gemm` crate packs the weights (`m·k`), and its micro-kernel is no faster than the crate's
/// (`benches/vision.md`): it gains only where the weights are the larger operand — the deep
/// layers of a network (ResNet-18's 14×14 and 7×7 stages, MobileNet-v2's from 14×14 on), not
/// its early ones. Products over `[n, k]` weights (dense layers, `trans_b`) never do.
pub(crate) fn takes_panels(m: i64, n: i64, trans_b: bool) -> bool {
    !trans_b && m >= MR as i64 && n >= LANES as i64 && m >= n
}

impl LhsPanels {
    /// Packs the row-major `[m, k]` matrix `a`, or `None` on a CPU without AVX-512, with
    /// fewer than one panel of rows, `k` 0 or `a` not of `m·k` elements.
    pub(crate) fn new(a: &[f32], m: usize, k: usize) -> Option<LhsPanels> {
        let fits = m.checked_mul(k) == Some(a.len()) && k > 0;
        if !(fits && avx512() && m >= MR) {
            return None;
        }
        let mut data = Vec::with_capacity(m.div_ceil(MR) * MR * k);
        for first in (0..m).step_by(MR) {
            for p in 0..k {
                data.extend((first..first + MR).map(|row| if row < m { a[row * k + p] } else { 0.0 }));
            }
        }
        Some(LhsPanels { data, m, k })
    }

    /// The packed matrix's shape `(m, k)`.
    pub(crate) fn shape(&self) -> (usize, usize) {
        (self.m, self.k)
    }

    /// Bytes the packed copy occupies.
    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of_val(self.data.as_slice())
    }

    /// `out[i·n + j] = Σ_{p < k} a[i·k + p] · b[p·n + j]` for `i < m`, `j < n`: `b` is `[k, n]`
    /// row-major, `out` `[m, n]`. Splits the panels over [`intra_op_threads`] threads when
    /// the product is large, with the same bits. Lengths that do not fit (`b.len() != k·n`,
    /// `out.len() != m·n`) give zeros, as the other routines of `blas/` do.
    pub(crate) fn gemm(&self, out: &mut [f32], b: &[f32], n: usize) {
        self.product(out, b, n, avx512());
    }

    /// [`LhsPanels::gemm`] with AVX-512 (`vector`) or the portable tile.
    fn product(&self, out: &mut [f32], b: &[f32], n: usize, vector: bool) {
        let (m, k) = (self.m, self.k);
        if n == 0 || b.len() != k * n || out.len() != m * n {
            out.fill(0.0);
            return;
        }
        let panels = m.div_ceil(MR);
        let threads = intra_op_threads().min(panels);
        if threads > 1 && m * n * k >= THREADING_THRESHOLD {
            // Each task a run of whole panels: the rows of `out` it writes are its own.
            let per_task = panels.div_ceil(threads);
            out.par_chunks_mut(per_task * MR * n)
                .enumerate()
                .for_each(|(t, chunk)| self.rows(chunk, b, n, t * per_task, vector));
            return;
        }
        self.rows(out, b, n, 0, vector);
    }

    /// The rows of panels `first_panel..` that `out` holds (whole rows of `n` columns; the
    /// last panel may be partial), over the whole of `b`.
    fn rows(&self, out: &mut [f32], b: &[f32], n: usize, first_panel: usize, vector: bool) {
        let k = self.k;
        let rows_here = out.len() / n;
        let mut block = [Lanes([0.0; LANES]); KC * NV];
        for pc in (0..k).step_by(KC) {
            let kc = KC.min(k - pc);
            for jc in (0..n).step_by(NR) {
                let cols = NR.min(n - jc);
                let (block, rows_of_b) = (&mut block[..kc * NV], &b[pc * n..(pc + kc) * n]);
                #[cfg(target_arch = "x86_64")]
                if vector {
                    // SAFETY: `vector` only when the CPU has AVX-512F.
                    unsafe { x86::pack_block(block, rows_of_b, n, jc, cols) };
                } else {
                    pack_block(block, rows_of_b, n, jc, cols);
                }
                #[cfg(not(target_arch = "x86_64"))]
                pack_block(block, rows_of_b, n, jc, cols);
                for (i, first_row) in (0..rows_here).step_by(MR).enumerate() {
                    let panel = (first_panel + i) * k * MR;
                    let tile = Tile {
                        a: &self.data[panel + pc * MR..panel + (pc + kc) * MR],
                        b: &block[..kc * NV],
                        out: &mut out[first_row * n + jc..],
                        n,
                        rows: MR.min(rows_here - first_row),
                        cols,
                        accumulate: pc > 0,
                    };
                    #[cfg(target_arch = "x86_64")]
                    if vector {
                        // SAFETY: `vector` only when the CPU has AVX-512F.
                        unsafe { x86::tile(tile) };
                        continue;
                    }
                    tile_portable(tile);
                }
            }
        }
    }
}

/// Copies columns `jc..jc + cols` of the `kc` rows of `b` (`n` columns each) into `block`,
/// [`NV`] vectors per row, zeros past `cols`.
fn pack_block(block: &mut [Lanes], b: &[f32], n: usize, jc: usize, cols: usize) {
    for (row, vectors) in b.chunks_exact(n).zip(block.chunks_exact_mut(NV)) {
        let src = &row[jc..jc + cols];
        for (v, lanes) in vectors.iter_mut().enumerate() {
            let from = (v * LANES).min(cols);
            let to = ((v + 1) * LANES).min(cols);
            lanes.0[..to - from].copy_from_slice(&src[from..to]);
            lanes.0[to - from..].fill(0.0);
        }
    }
}

/// One tile of outputs: `rows ≤ MR` rows and `cols ≤ NR` columns starting at `out[0]`, row
/// stride `n`, over one block of inputs (`a`: the panel's `kc · MR` weights, `b`: the block's
/// `kc · NV` vectors), added to the tile's current values when `accumulate`.
struct Tile<'a> {
    a: &'a [f32],
    b: &'a [Lanes],
    out: &'a mut [f32],
    n: usize,
    rows: usize,
    cols: usize,
    accumulate: bool,
}

impl Tile<'_> {
    /// Whether the slices hold what the tile reads and writes.
    fn fits(&self) -> bool {
        let kc = self.a.len() / MR;
        (1..=MR).contains(&self.rows)
            && (1..=NR).contains(&self.cols)
            && self.a.len() == kc * MR
            && self.b.len() == kc * NV
            && self.out.len() >= (self.rows - 1) * self.n + self.cols
    }
}

/// One tile without vector instructions: the definition the AVX-512 code follows, each
/// output one chain of fused multiply-adds.
fn tile_portable(t: Tile<'_>) {
    if !t.fits() {
        return;
    }
    for r in 0..t.rows {
        for j in 0..t.cols {
            let at = r * t.n + j;
            let mut acc = if t.accumulate { t.out[at] } else { 0.0 };
            for (a, b) in t.a.chunks_exact(MR).zip(t.b.chunks_exact(NV)) {
                acc = a[r].mul_add(b[j / LANES].0[j % LANES], acc);
            }
            t.out[at] = acc;
        }
    }
}

/// The packed copies of one kernel's left `gemm` operand, at most [`ENTRIES`], each kept
/// while its tensor lives. A tensor is packed at its first call: a convolution's weights
/// are passed to every call, and an operand computed during a run costs the packing its
/// product would do anyway. As with `pack_cache.rs`, the slot holds a `Weak` of the tensor,
/// so that nobody can write into it in place (`Arc::get_mut` refuses, `Arc::make_mut` moves
/// it) and its address is not reused while a copy is kept.
#[derive(Default)]
pub(crate) struct PanelSlot {
    packed: Mutex<Vec<(Weak<Tensor>, Arc<LhsPanels>)>>,
}

impl PanelSlot {
    /// The packed form of `t` as an `[m, k]` float32 matrix, packed now if the slot has none;
    /// `None` when it cannot be packed ([`LhsPanels::new`]).
    pub(crate) fn get(&self, t: &Arc<Tensor>, m: usize, k: usize) -> Option<Arc<LhsPanels>> {
        let mut packed = self.packed.lock();
        packed.retain(|(weak, _)| weak.strong_count() > 0);
        let known = packed.iter().find(|(weak, _)| std::ptr::eq(weak.as_ptr(), Arc::as_ptr(t)));
        if let Some((_, panels)) = known {
            return Some(panels.clone());
        }
        let panels = Arc::new(LhsPanels::new(t.as_slice::<f32>().ok()?, m, k)?);
        if packed.len() == ENTRIES {
            packed.remove(0);
        }
        packed.push((Arc::downgrade(t), panels.clone()));
        Some(panels)
    }

    /// Bytes of the packed copies the slot holds.
    pub(crate) fn bytes(&self) -> usize {
        self.packed.lock().iter().map(|(_, p)| p.bytes()).sum()
    }
}

/// A `gemm` left operand read as panels: the input buffer, as an `[m, k]` matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PanelOperand {
    pub buf: BufferId,
    pub m: usize,
    pub k: usize,
}

/// The input buffers that a kernel's `gemm` statements read as left operands taking panels
/// ([`takes_panels`]), each once, in buffer order. The JIT's buffer table has one extra entry
/// per operand, after the packed right operands (`packed::packable_operands`), holding its
/// [`LhsPanels`] or null.
pub(crate) fn panel_operands(kernel: &Kernel) -> Vec<PanelOperand> {
    let mut found = Vec::new();
    let mut pending: Vec<&[Stmt]> = vec![&kernel.body];
    while let Some(body) = pending.pop() {
        for s in body {
            match s {
                Stmt::Gemm { a, m, n, k, trans_b, .. } if takes_panels(*m, *n, *trans_b) => {
                    let input = kernel.buffers.get(a.index()).is_some_and(|d| d.role == BufferRole::Input);
                    if let (true, Ok(m), Ok(k)) = (input, usize::try_from(*m), usize::try_from(*k)) {
                        found.push(PanelOperand { buf: *a, m, k });
                    }
                }
                Stmt::For { body, .. } => pending.push(body),
                Stmt::If { then, otherwise, .. } => pending.extend([then.as_slice(), otherwise.as_slice()]),
                _ => {}
            }
        }
    }
    found.sort_by_key(|p| (p.buf.index(), p.m, p.k));
    found.dedup();
    found
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Lanes, Tile, LANES, MR, NV};
    use std::arch::x86_64::*;

    /// The lanes of vector `v` that hold one of `cols` columns.
    fn mask(cols: usize, v: usize) -> __mmask16 {
        let lanes = cols.saturating_sub(v * LANES).min(LANES);
        ((1u32 << lanes) - 1) as __mmask16
    }

    /// [`super::pack_block`] with AVX-512: one masked load and one aligned store per vector
    /// (copying each row's few vectors with `copy_from_slice` made a `memmove` call per
    /// vector, 18% of ResNet-18).
    ///
    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn pack_block(block: &mut [Lanes], b: &[f32], n: usize, jc: usize, cols: usize) {
        if cols > NV * LANES || jc + cols > n {
            return;
        }
        let masks: [__mmask16; NV] = std::array::from_fn(|v| mask(cols, v));
        for (row, vectors) in b.chunks_exact(n).zip(block.chunks_exact_mut(NV)) {
            let src = row[jc..jc + cols].as_ptr();
            for (v, lanes) in vectors.iter_mut().enumerate() {
                // SAFETY: the mask selects the lanes of columns below `cols`, inside `row`
                // (checked above); a vector past them loads nothing (`wrapping_add`: that
                // address is never read). `Lanes` is 16 floats aligned to 64 bytes.
                unsafe {
                    let x = _mm512_maskz_loadu_ps(masks[v], src.wrapping_add(v * LANES));
                    _mm512_store_ps(lanes.0.as_mut_ptr(), x);
                }
            }
        }
    }

    /// One tile with AVX-512: the columns past `cols` are masked lanes, the rows past
    /// `rows` computed and not stored.
    ///
    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile(t: Tile<'_>) {
        if !t.fits() {
            return;
        }
        // One monomorphised loop per vector count keeps the accumulators in registers.
        match t.cols.div_ceil(LANES) {
            1 => unsafe { tile_of::<1>(t) },
            2 => unsafe { tile_of::<2>(t) },
            _ => unsafe { tile_of::<NV>(t) },
        }
    }

    /// # Safety
    /// The CPU must have AVX-512F; `t` fits ([`Tile::fits`]) and has `V` vectors of columns
    /// (`cols` in `16·(V - 1) + 1 ..= 16·V`).
    #[target_feature(enable = "avx512f")]
    unsafe fn tile_of<const V: usize>(t: Tile<'_>) {
        let masks: [__mmask16; V] = std::array::from_fn(|v| mask(t.cols, v));
        let out = t.out.as_mut_ptr();
        let mut acc = [[_mm512_setzero_ps(); V]; MR];
        if t.accumulate {
            for (r, acc) in acc.iter_mut().enumerate().take(t.rows) {
                for (v, a) in acc.iter_mut().enumerate() {
                    // SAFETY: row `r < rows`, lanes `v·16..` under the mask: columns below
                    // `cols`, inside `out` (`fits`).
                    *a = unsafe { _mm512_maskz_loadu_ps(masks[v], out.add(r * t.n + v * LANES)) };
                }
            }
        }
        for (a, b) in t.a.chunks_exact(MR).zip(t.b.chunks_exact(NV)) {
            // SAFETY: `Lanes` is 16 floats aligned to 64 bytes, and `V ≤ NV`.
            let bv: [__m512; V] = std::array::from_fn(|v| unsafe { _mm512_load_ps(b[v].0.as_ptr()) });
            for (r, acc) in acc.iter_mut().enumerate() {
                let w = _mm512_set1_ps(a[r]);
                for (v, acc) in acc.iter_mut().enumerate() {
                    *acc = _mm512_fmadd_ps(w, bv[v], *acc);
                }
            }
        }
        for (r, acc) in acc.iter().enumerate().take(t.rows) {
            for (v, a) in acc.iter().enumerate() {
                // SAFETY: as for the loads above.
                unsafe { _mm512_mask_storeu_ps(out.add(r * t.n + v * LANES), masks[v], *a) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operands(m: usize, n: usize, k: usize) -> (Vec<f32>, Vec<f32>) {
        let a = (0..m * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
        let b = (0..k * n).map(|i| ((i * 13 % 29) as f32 - 14.0) / 7.0).collect();
        (a, b)
    }

    /// The triple loop in `f64`.
    fn definition(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
        (0..m * n)
            .map(|o| (0..k).map(|p| f64::from(a[o / n * k + p]) * f64::from(b[p * n + o % n])).sum())
            .collect()
    }

    #[test]
    fn the_product_over_panels_matches_the_definition_at_odd_sizes() {
        // Partial panels (m not a multiple of 8), partial and single-vector tiles (n mod 48),
        // several depth blocks (k > 128) and one input.
        let shapes = [(8, 1, 1), (9, 17, 3), (16, 48, 128), (17, 49, 129), (24, 97, 300), (40, 33, 257)];
        for (m, n, k) in shapes {
            let (a, b) = operands(m, n, k);
            let Some(panels) = LhsPanels::new(&a, m, k) else { return }; // no AVX-512
            let want = definition(&a, &b, m, n, k);
            let mut out = vec![f32::NAN; m * n];
            panels.gemm(&mut out, &b, n);
            let close =
                out.iter().zip(&want).all(|(&g, &e)| (f64::from(g) - e).abs() <= 1e-4 * e.abs().max(1.0));
            assert!(close, "{m}x{n}x{k}");
            let mut portable = vec![f32::NAN; m * n];
            panels.product(&mut portable, &b, n, false);
            assert_eq!(out, portable, "AVX-512 and portable: the same chains of FMAs, {m}x{n}x{k}");
        }
    }

    #[test]
    fn threads_give_the_same_bits_as_one() {
        let (m, n, k) = (72, 200, 300);
        let (a, b) = operands(m, n, k);
        let Some(panels) = LhsPanels::new(&a, m, k) else { return };
        let product = |threads: usize| {
            crate::set_intra_op_threads(threads);
            let mut out = vec![f32::NAN; m * n];
            panels.gemm(&mut out, &b, n);
            crate::set_intra_op_threads(1);
            out
        };
        let one = product(1);
        assert!(one.iter().all(|v| v.is_finite()));
        for threads in [2, 3, 16] {
            assert_eq!(product(threads), one, "{threads} threads");
        }
    }

    #[test]
    fn lengths_that_do_not_fit_give_zeros_and_small_products_take_no_panels() {
        let (a, b) = operands(8, 5, 3);
        let Some(panels) = LhsPanels::new(&a, 8, 3) else { return };
        let mut out = vec![f32::NAN; 40];
        panels.gemm(&mut out, &b[..14], 5);
        assert!(out.iter().all(|&v| v == 0.0));
        let mut short = vec![f32::NAN; 39];
        panels.gemm(&mut short, &b, 5);
        assert!(short.iter().all(|&v| v == 0.0));
        assert!(LhsPanels::new(&a[..21], 7, 3).is_none(), "under one panel of rows");
        assert!(LhsPanels::new(&a, 8, 4).is_none(), "not m·k elements");
        assert!(!takes_panels(64, 64, true), "dense layers' [n, k] weights");
        assert!(!takes_panels(64, 15, false) && !takes_panels(64, 65, false) && takes_panels(16, 16, false));
    }

    #[test]
    fn a_slot_packs_each_tensor_once_and_drops_it_with_the_tensor() {
        let slot = PanelSlot::default();
        let w = Arc::new(Tensor::from_vec(vec![8, 3], vec![1.0f32; 24]).unwrap());
        let Some(first) = slot.get(&w, 8, 3) else { return };
        assert!(Arc::ptr_eq(&first, &slot.get(&w, 8, 3).unwrap()), "kept");
        assert_eq!(slot.bytes(), 24 * 4);
        drop((w, first));
        let other = Arc::new(Tensor::from_vec(vec![8, 3], vec![2.0f32; 24]).unwrap());
        slot.get(&other, 8, 3).unwrap();
        assert_eq!(slot.bytes(), 24 * 4, "the dead tensor's copy is dropped");
        let ints = Arc::new(Tensor::from_vec(vec![8, 3], vec![1i32; 24]).unwrap());
        assert!(slot.get(&ints, 8, 3).is_none());
    }
}
