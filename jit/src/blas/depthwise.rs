//! The native routine behind kir's `depthwise_conv2d` statement (MobileNet's 3×3 depthwise
//! layers; TVM's `nn.conv2d` with `groups` = channels, NCHW): each output row is computed
//! in 16-lane AVX-512 vectors, four at a time, with every tap's input row read by
//! contiguous (stride 1) or de-interleaved (stride 2) masked loads — no bounds checks and
//! no padding selects, because only the row's *interior* columns (those whose every tap
//! falls inside the image) go through the vector code; the few border columns, and every
//! column on CPUs without AVX-512 or at other strides, take a portable loop that skips the
//! taps landing in the padding. Cranelift's own code for the same loops runs at 4 lanes
//! (`stdlib/src/compute/window.rs`'s regions); figures in ARCHITECTURE.md.

use relay_kir::{inside, DepthwiseWindow};

/// Outputs of one row computed together: four AVX-512 vectors, so that four independent FMA
/// chains hide the FMA latency.
const BLOCK: usize = 64;

/// [`DepthwiseWindow`] in `usize`, with the row's interior columns `x0..x1`.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    channels: usize,
    planes: usize,
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
    kh: usize,
    kw: usize,
    sh: usize,
    sw: usize,
    dh: usize,
    dw: usize,
    pt: usize,
    pl: usize,
    /// Output columns whose every tap reads inside the row: `x0..x1` (empty: `x0 == x1`).
    x0: usize,
    x1: usize,
}

impl Geometry {
    /// The geometry, or `None` when [`DepthwiseWindow::lens`] refuses it.
    fn new(g: &DepthwiseWindow) -> Option<Geometry> {
        g.lens()?;
        let u = |v: i64| usize::try_from(v).ok();
        let [h, w] = g.input;
        let [oh, ow] = g.output;
        let [kh, kw] = g.kernel;
        let [sh, sw] = g.strides;
        let [dh, dw] = g.dilation;
        let [pt, pl] = g.padding;
        // Columns inside for every tap: the intersection of each tap's range.
        let (mut x0, mut x1) = (0, ow);
        for kx in 0..kw {
            let (a, b) = inside(ow, sw, pl - kx * dw, w);
            (x0, x1) = (x0.max(a), x1.min(b));
        }
        let x1 = x1.max(x0);
        Some(Geometry {
            channels: u(g.channels)?,
            planes: u(g.images.checked_mul(g.channels)?)?,
            h: u(h)?,
            w: u(w)?,
            oh: u(oh)?,
            ow: u(ow)?,
            kh: u(kh)?,
            kw: u(kw)?,
            sh: u(sh)?,
            sw: u(sw)?,
            dh: u(dh)?,
            dw: u(dw)?,
            pt: u(pt)?,
            pl: u(pl)?,
            x0: u(x0)?,
            x1: u(x1)?,
        })
    }

    /// The taps `ky0..ky1` whose input row `y·sh + ky·dh − pt` lies inside the image, for
    /// output row `y`.
    fn rows(&self, y: usize) -> (usize, usize) {
        let offset = self.pt as i64 - (y * self.sh) as i64;
        let (a, b) = inside(self.kh as i64, self.dh as i64, offset, self.h as i64);
        (a as usize, b as usize)
    }
}

/// kir's `Stmt::DepthwiseConv2d`, called by JIT code: the window's 14 fields in
/// [`DepthwiseWindow::to_array`]'s order follow the three buffers. A window that
/// [`DepthwiseWindow::lens`] refuses writes nothing (the verifier refuses such kernels).
///
/// # Safety
/// `out`, `data` and `weight` must be valid for the element counts `lens` gives (writes of
/// `out`, reads of the others, all `f32`), and `out` must not overlap `data` or `weight`.
/// The JIT calls it only for a verified kernel whose bounds proof covers exactly these
/// ranges.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn relay_jit_depthwise_conv2d(
    out: *mut f32,
    data: *const f32,
    weight: *const f32,
    images: i64,
    channels: i64,
    h: i64,
    w: i64,
    oh: i64,
    ow: i64,
    kh: i64,
    kw: i64,
    sh: i64,
    sw: i64,
    dh: i64,
    dw: i64,
    pt: i64,
    pl: i64,
) {
    let window =
        DepthwiseWindow::from_array([images, channels, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl]);
    let Some([out_len, data_len, weight_len]) = window.lens() else { return };
    let size = |v: i64| usize::try_from(v).ok();
    let (Some(out_len), Some(data_len), Some(weight_len)) = (size(out_len), size(data_len), size(weight_len))
    else {
        return;
    };
    if out_len == 0 || data_len == 0 || weight_len == 0 {
        // No output, or every output an empty sum (no channels' inputs or no taps).
        if out_len > 0 {
            // SAFETY: the caller guarantees `out_len` writes.
            unsafe { std::slice::from_raw_parts_mut(out, out_len) }.fill(0.0);
        }
        return;
    }
    // SAFETY: the caller guarantees these ranges (see above).
    let (out, data, weight) = unsafe {
        (
            std::slice::from_raw_parts_mut(out, out_len),
            std::slice::from_raw_parts(data, data_len),
            std::slice::from_raw_parts(weight, weight_len),
        )
    };
    depthwise_conv2d(out, data, weight, &window);
}

/// `out = depthwise_conv2d(data, weight)` as kir's `Stmt::DepthwiseConv2d` defines it for
/// `window`: `out` holds `images·channels·oh·ow` floats, `data` `images·channels·h·w` and
/// `weight` `channels·kh·kw`. Returns `false`, writing nothing, when the slices are shorter
/// than that or the window is one [`DepthwiseWindow::lens`] refuses.
pub(crate) fn depthwise_conv2d(
    out: &mut [f32],
    data: &[f32],
    weight: &[f32],
    window: &DepthwiseWindow,
) -> bool {
    let (Some(g), Some([out_len, data_len, weight_len])) = (Geometry::new(window), window.lens()) else {
        return false;
    };
    let fits = |len: usize, want: i64| usize::try_from(want).is_ok_and(|want| len >= want);
    if !(fits(out.len(), out_len) && fits(data.len(), data_len) && fits(weight.len(), weight_len)) {
        return false;
    }
    let (plane_in, plane_out, taps) = (g.h * g.w, g.oh * g.ow, g.kh * g.kw);
    if plane_out == 0 {
        return true;
    }
    for (p, dst) in out.chunks_exact_mut(plane_out).take(g.planes).enumerate() {
        let src = &data[p * plane_in..(p + 1) * plane_in];
        let c = p % g.channels;
        let wts = &weight[c * taps..(c + 1) * taps];
        for (y, row) in dst.chunks_exact_mut(g.ow).enumerate() {
            plane_row(row, src, wts, &g, y);
        }
    }
    true
}

/// Output row `y` of one plane: `row` is `ow` floats, `src` the plane's `h·w` inputs, `wts`
/// its `kh·kw` taps.
fn plane_row(row: &mut [f32], src: &[f32], wts: &[f32], g: &Geometry, y: usize) {
    let (ky0, ky1) = g.rows(y);
    // The input row of tap `ky0` (inside the image when `ky0 < ky1`).
    let iy0 = (y * g.sh + ky0 * g.dh).wrapping_sub(g.pt);
    let interior = &mut row[g.x0..g.x1];
    #[cfg(target_arch = "x86_64")]
    let vector = (g.sw == 1 || g.sw == 2) && ky0 < ky1 && g.kw > 0 && !interior.is_empty();
    if vector && std::arch::is_x86_feature_detected!("avx512f") {
        // The vector code reads, for tap row `ky` and column tap `kx`, inputs
        // `(iy0 + (ky − ky0)·dh)·w + x·sw − pl + kx·dw` for `x` in `x0..x1`: check that the
        // extremes lie inside `src` (they do by construction of `x0..x1` and `ky0..ky1`).
        let last_row = iy0 + (ky1 - 1 - ky0) * g.dh;
        let last_col = (g.x1 - 1) * g.sw + (g.kw - 1) * g.dw;
        let inside_row = g.x0 * g.sw >= g.pl && last_col >= g.pl && last_col - g.pl < g.w;
        if inside_row && last_row < g.h && src.len() == g.h * g.w && wts.len() >= ky1 * g.kw {
            let first = g.x0 * g.sw - g.pl;
            let rows = TapRows { src, iy0, count: ky1 - ky0, first, wts: &wts[ky0 * g.kw..ky1 * g.kw] };
            // SAFETY: the CPU has AVX-512F, and every input the routine reads lies inside
            // `src` (checked just above); it writes `interior` only.
            unsafe {
                if g.sw == 1 {
                    x86::row_avx512::<1>(interior, &rows, g);
                } else {
                    x86::row_avx512::<2>(interior, &rows, g);
                }
            }
            border(row, src, wts, g, y, (ky0, ky1), (0..g.x0).chain(g.x1..g.ow));
            return;
        }
    }
    border(row, src, wts, g, y, (ky0, ky1), 0..g.ow);
}

/// The tap rows of one output row, for the vector code: input row `iy0 + r·dh` for
/// `r < count`, whose taps are `wts[r·kw..(r + 1)·kw]`; `first` is the input column of the
/// first interior output's first tap.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct TapRows<'a> {
    src: &'a [f32],
    iy0: usize,
    count: usize,
    first: usize,
    wts: &'a [f32],
}

/// The outputs `cols` of row `y` by the definition: each output's taps in order, skipping
/// those in the padding (taps `ky0..ky1` are the rows inside the image).
fn border(
    row: &mut [f32],
    src: &[f32],
    wts: &[f32],
    g: &Geometry,
    y: usize,
    (ky0, ky1): (usize, usize),
    cols: impl Iterator<Item = usize>,
) {
    for x in cols {
        let mut acc = 0f32;
        for ky in ky0..ky1 {
            let iy = y * g.sh + ky * g.dh - g.pt;
            for kx in 0..g.kw {
                let ix = (x * g.sw + kx * g.dw).wrapping_sub(g.pl);
                if ix < g.w {
                    acc += src[iy * g.w + ix] * wts[ky * g.kw + kx];
                }
            }
        }
        row[x] = acc;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Geometry, TapRows, BLOCK};
    use std::arch::x86_64::*;

    /// The interior outputs of one row (`out`, columns `x0..x1`) at stride `S` (1 or 2):
    /// blocks of four 16-lane vectors, each output's taps in order (`ky`, then `kx`) by
    /// fused multiply-adds, the last block's lanes masked.
    ///
    /// # Safety
    /// The CPU must have AVX-512F, and for `r < rows.count`, `x < out.len()`, `kx < kw`
    /// the input `(rows.iy0 + r·dh)·w + rows.first + x·S + kx·dw` must lie inside
    /// `rows.src`; `rows.wts` must hold `rows.count·kw` taps.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn row_avx512<const S: usize>(out: &mut [f32], rows: &TapRows<'_>, g: &Geometry) {
        // Even lanes of two vectors: the stride-2 inputs of 16 outputs from 32 floats.
        let evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let lanes_mask = |lanes: usize| -> u16 { ((1u32 << lanes.min(16)) - 1) as u16 };
        let mut x = 0;
        while x < out.len() {
            let block = (out.len() - x).min(BLOCK);
            let mut masks = [0u16; 4];
            for (v, m) in masks.iter_mut().enumerate() {
                *m = lanes_mask(block.saturating_sub(16 * v));
            }
            let mut acc = [_mm512_setzero_ps(); 4];
            for r in 0..rows.count {
                let base = (rows.iy0 + r * g.dh) * g.w + rows.first + x * S;
                for kx in 0..g.kw {
                    let tap = _mm512_set1_ps(*rows.wts.get_unchecked(r * g.kw + kx));
                    // SAFETY (for the loads): every lane a mask keeps reads an input of an
                    // output `< out.len()`, inside `rows.src` by the caller's guarantee.
                    let p = rows.src.as_ptr().add(base + kx * g.dw);
                    for v in 0..4 {
                        let m = masks[v];
                        if m == 0 {
                            break;
                        }
                        let input = if S == 1 {
                            _mm512_maskz_loadu_ps(m, p.add(16 * v))
                        } else {
                            // Output lane `i` reads float `2i`: `2·lanes − 1` floats.
                            let lanes = m.count_ones() as usize;
                            let lo = _mm512_maskz_loadu_ps(lanes_mask(2 * lanes - 1), p.add(32 * v));
                            let hi = _mm512_maskz_loadu_ps(
                                lanes_mask((2 * lanes - 1).saturating_sub(16)),
                                p.add(32 * v + 16),
                            );
                            _mm512_permutex2var_ps(lo, evens, hi)
                        };
                        acc[v] = _mm512_fmadd_ps(input, tap, acc[v]);
                    }
                }
            }
            for v in 0..4 {
                if masks[v] != 0 {
                    _mm512_mask_storeu_ps(out.as_mut_ptr().add(x + 16 * v), masks[v], acc[v]);
                }
            }
            x += block;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_devices::{DType, Tensor};

    /// The definition: kir's interpreter running the statement (each output's taps in order in
    /// `f64`).
    fn reference(data: &[f32], weight: &[f32], g: &DepthwiseWindow) -> Vec<f32> {
        let [out_len, data_len, weight_len] = g.lens().unwrap().map(|v| v as usize);
        let mut kb = relay_kir::KernelBuilder::new("depthwise");
        let d = kb.input("data", DType::F32, [data_len as i64]);
        let w = kb.input("weight", DType::F32, [weight_len as i64]);
        let out = kb.output("out", DType::F32, [out_len as i64]);
        kb.depthwise_conv2d(out, d, w, *g);
        let kernel = kb.finish().unwrap();
        let inputs = [
            Tensor::from_vec(vec![data_len], data.to_vec()).unwrap(),
            Tensor::from_vec(vec![weight_len], weight.to_vec()).unwrap(),
        ];
        let mut outs = [Tensor::zeros(DType::F32, vec![out_len]).unwrap()];
        relay_kir::interp::run(&kernel, &[&inputs[0], &inputs[1]], &mut outs, &[]).unwrap();
        let [out] = outs;
        out.into_vec::<f32>().unwrap()
    }

    /// A window over `images × channels × h × w` with output sizes from the usual formula.
    fn window(
        images: i64,
        channels: i64,
        [h, w]: [i64; 2],
        kernel: [i64; 2],
        s: i64,
        d: i64,
        p: i64,
    ) -> DepthwiseWindow {
        let out = |len: i64, k: i64| (len + 2 * p - d * (k - 1) - 1) / s + 1;
        DepthwiseWindow {
            images,
            channels,
            input: [h, w],
            output: [out(h, kernel[0]), out(w, kernel[1])],
            kernel,
            strides: [s, s],
            dilation: [d, d],
            padding: [p, p],
        }
    }

    /// Deterministic values in about `[-1, 1]`.
    fn values(n: i64, seed: u32) -> Vec<f32> {
        (0..n as u32)
            .map(|i| ((i.wrapping_mul(2654435761).wrapping_add(seed) >> 8) % 2001) as f32 / 1000.0 - 1.0)
            .collect()
    }

    fn check(g: DepthwiseWindow) {
        let [out_len, data_len, weight_len] = g.lens().unwrap();
        let (data, weight) = (values(data_len, 1), values(weight_len, 7));
        let mut out = vec![f32::NAN; out_len as usize];
        assert!(depthwise_conv2d(&mut out, &data, &weight, &g));
        let want = reference(&data, &weight, &g);
        for (i, (a, b)) in out.iter().zip(&want).enumerate() {
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{g:?} at {i}: {a} vs {b}");
        }
    }

    #[test]
    fn matches_the_definition_at_odd_sizes_strides_padding_and_dilation() {
        for (hw, s, d, p) in [
            ([7, 7], 1, 1, 1),
            ([112, 112], 1, 1, 1),
            ([113, 37], 2, 1, 1),
            ([56, 56], 2, 1, 1),
            ([15, 70], 1, 1, 0),
            ([15, 70], 2, 1, 0),
            ([33, 81], 1, 2, 2),
            ([33, 81], 2, 2, 1),
            ([9, 9], 3, 1, 1),
            ([2, 3], 1, 1, 1),
            ([1, 1], 1, 1, 1),
        ] {
            check(window(1, 3, hw, [3, 3], s, d, p));
        }
        // Several images (planes past the first image reuse the channels' windows), a 5×5
        // and a 1×3 window.
        check(window(2, 5, [19, 21], [3, 3], 1, 1, 1));
        check(window(1, 2, [20, 40], [5, 5], 1, 1, 2));
        check(window(1, 2, [20, 40], [1, 3], 2, 1, 1));
    }

    #[test]
    fn refuses_short_buffers_and_bad_windows() {
        let g = window(1, 2, [8, 8], [3, 3], 1, 1, 1);
        let [out_len, data_len, weight_len] = g.lens().unwrap().map(|v| v as usize);
        let (data, weight) = (vec![1.0; data_len], vec![1.0; weight_len]);
        let mut out = vec![0.0; out_len];
        assert!(!depthwise_conv2d(&mut out, &data[1..], &weight, &g));
        assert!(!depthwise_conv2d(&mut out[1..], &data, &weight, &g));
        assert!(!depthwise_conv2d(&mut out, &data, &weight, &DepthwiseWindow { strides: [0, 1], ..g }));
        assert!(out.iter().all(|&v| v == 0.0));
    }
}
