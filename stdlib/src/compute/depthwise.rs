//! Float32 depthwise convolutions (one input channel per group, multiplier 1) at stride 1
//! ([`MAX_STRIDE`]) as one window product per channel (`Stmt::Gemm` with `m = 1`), which the Cranelift backend
//! runs at AVX-512 width (`jit/src/blas/window.rs`) rather than as JIT loops at its 4 lanes.
//!
//! Per channel the input plane is copied once into a zero-padded temp, split into its
//! `s × s` phases at stride `s`: phase `(a, b)` holds `P[s·y' + a, s·x' + b]` of the padded
//! plane `P` as an `[hq, wq]` plane (`hq = oh + ⌈kh/s⌉ − 1`, `wq = ow + ⌈kw/s⌉ − 1`). Tap
//! `(ky, kx) = (s·dy + a, s·dx + b)` of output `(y, x)` then reads phase `(a, b)` at
//! `(y + dy, x + dx)`, so with "wide" output column `j = y·wq + x` every tap is a fixed shift of
//! `j`: the product's rows are `[(s, s·hq·wq), (s, hq·wq), (⌈kh/s⌉, wq), (⌈kw/s⌉, 1)]`, the
//! `(a, b, dy, dx)` taps, with weight 0 where `s·dy + a ≥ kh` or `s·dx + b ≥ kw` (a 3×3
//! window at stride 2 runs 16 taps, 9 of them real). At stride 1 there is one phase and the
//! rows are `window_gemm.rs`'s. The product writes the channel's wide rows into a temp whose
//! valid `ow` columns per row the epilogue (bias, clip, residual add: the `sink`) reads while
//! they are in L1/L2. A channel's weights are copied into their `(a, b, dy, dx)` order first
//! (`Stmt::Gemm`'s left operand is a whole buffer).
//!
//! The padding, the phases' rows and columns outside the image and the zero taps are never
//! written, so they keep the temps' zeros (every call stores the same elements:
//! `jit/src/cranelift/temps.rs`). TVM's x86 schedule (`depthwise_conv2d_NCHWc`) vectorises the
//! same loop, along the channel block instead of the output row.

use super::util::for_images;
use super::window::{ceil_div, Geometry, MAX_UNROLLED_TAPS};
use relay_compiler::kir::{BufferId, Index, KernelBuilder, LoopKind, RowOffsets};
use relay_compiler::op::{LazyTensor, TensorDef};
use relay_devices::DType;
use std::rc::Rc;

/// The strides this rule takes. The phase split works for stride 2 (4 pairs of rows, within
/// `relay_compiler::kir::MAX_ROW_PAIRS`; with 2 here MobileNet-v2 matched onnxruntime at
/// 1e-4), but it
/// measured slower than `window.rs`'s loops on MobileNet-v2's four stride-2 layers
/// (`relay-vm profile`, same session, load 5 on 2 cores: 96 channels 112² → 56², 1.45 →
/// 2.07 ms; 576 channels 14² → 7², 0.26 → 0.50 ms): the copy into four phases is a stride-2
/// gather at Cranelift's 4 lanes for every input element, and a 3×3 window runs 16 taps.
const MAX_STRIDE: i64 = 1;

/// The depthwise convolution of `images` float32 NCHW images by `[oc, 1, kh, kw]` weights
/// (`oc` = the input channels = `groups`) as per-channel window products (see the module
/// documentation). `None` — the convolution then runs as `window.rs`'s direct loops — for other
/// dtypes, channel multipliers, dilations, unequal strides or strides past [`MAX_STRIDE`],
/// windows of more than [`MAX_UNROLLED_TAPS`] taps, and empty outputs.
pub(super) fn depthwise_product(
    x: &LazyTensor,
    w: &LazyTensor,
    dtype: DType,
    [images, oc, groups]: [i64; 3],
    g: Geometry,
) -> Option<TensorDef> {
    let s = g.sh;
    let float = [x.dtype, w.dtype, dtype].iter().all(|&d| d == DType::F32);
    let depthwise = groups == g.c && oc == g.c;
    let window = g.kh > 0 && g.kw > 0 && g.kh.checked_mul(g.kw)? <= MAX_UNROLLED_TAPS;
    let shape = g.sw == s && (1..=MAX_STRIDE).contains(&s) && (g.dh, g.dw) == (1, 1);
    if !(float && depthwise && window && shape) || g.oh <= 0 || g.ow <= 0 || g.pt < 0 || g.pl < 0 {
        return None;
    }
    let (th, tw) = (ceil_div(g.kh, s), ceil_div(g.kw, s));
    let (hq, wq) = (g.oh + th - 1, g.ow + tw - 1);
    let plane = hq.checked_mul(wq)?;
    let depth = s * s * th * tw;
    // Pairs of extent 1 add nothing (stride 1 has one phase).
    let dims = [(s, s * plane), (s, plane), (th, wq), (tw, 1)].into_iter().filter(|&(e, _)| e != 1);
    let dims: Vec<(i64, i64)> = dims.collect();
    let b_rows = RowOffsets::new(if dims.is_empty() { vec![(1, 0)] } else { dims });
    let cols = (g.oh - 1) * wq + g.ow;
    let (x, w) = (x.clone(), w.clone());
    Some(TensorDef::Nest(Rc::new(move |k, sink| {
        let taps = k.temp("taps", DType::F32, [depth]);
        let padded = k.temp("phases", DType::F32, [s * s * plane]);
        let product = k.temp("gemm", DType::F32, [cols]);
        let image = |k: &mut KernelBuilder, n: &Index| {
            k.for_(oc, LoopKind::Serial, |k, c| {
                copy_taps(k, &w, taps, &c, g, [th, tw]);
                copy_phases(k, &x, padded, (n, &c), g, [hq, wq]);
                k.gemm_block(product, taps, (padded, Index::Const(0), b_rows.clone()), 1, cols, depth);
                k.for_(g.oh, LoopKind::Serial, |k, y| {
                    k.for_(g.ow, LoopKind::Vectorize, |k, xo| {
                        let v = k.load(product, &[y.clone() * wq + xo.clone()]);
                        sink(k, &[n.clone(), c.clone(), y.clone(), xo], v);
                    });
                });
            });
        };
        for_images(k, images, image);
    })))
}

/// Stores channel `c`'s window weights `w[c, 0, s·dy + a, s·dx + b]` at `taps[((a·s + b)·th + dy)·tw
/// + dx]`, unrolled; the taps past the window are left at zero.
fn copy_taps(
    k: &mut KernelBuilder,
    w: &LazyTensor,
    taps: BufferId,
    c: &Index,
    g: Geometry,
    [th, tw]: [i64; 2],
) {
    let s = g.sh;
    for ky in 0..g.kh {
        for kx in 0..g.kw {
            let (a, dy, b, dx) = (ky % s, ky / s, kx % s, kx / s);
            let v = w.at(k, &[c.clone(), Index::Const(0), Index::Const(ky), Index::Const(kx)]);
            k.store(taps, Index::Const(((a * s + b) * th + dy) * tw + dx), v);
        }
    }
}

/// Copies channel `c` of image `n` into its `s × s` zero-padded `[hq, wq]` phases (see the
/// module documentation): each phase's rows and columns that lie inside the image, the
/// columns as one vectorised loop.
fn copy_phases(
    k: &mut KernelBuilder,
    x: &LazyTensor,
    padded: BufferId,
    (n, c): (&Index, &Index),
    g: Geometry,
    [hq, wq]: [i64; 2],
) {
    let s = g.sh;
    // Phase positions `q` whose input `s·q + phase − pad` lies in `0..len`, within `0..extent`.
    let inside = |phase: i64, pad: i64, len: i64, extent: i64| {
        (ceil_div(pad - phase, s).clamp(0, extent), ceil_div(len + pad - phase, s).clamp(0, extent))
    };
    for a in 0..s {
        let (y0, y1) = inside(a, g.pt, g.h, hq);
        for b in 0..s {
            let (x0, x1) = inside(b, g.pl, g.wd, wq);
            if y0 >= y1 || x0 >= x1 {
                continue;
            }
            let base = (a * s + b) * hq * wq;
            k.for_(y1 - y0, LoopKind::Serial, |k, yy| {
                k.for_(x1 - x0, LoopKind::Vectorize, |k, xx| {
                    let (yq, xq) = (yy + y0, xx + x0);
                    let at = yq.clone() * wq + xq.clone() + base;
                    let iy = yq * s + (a - g.pt);
                    let ix = xq * s + (b - g.pl);
                    let v = x.at(k, &[n.clone(), c.clone(), iy, ix]);
                    k.store(padded, at, v);
                });
            });
        }
    }
}
