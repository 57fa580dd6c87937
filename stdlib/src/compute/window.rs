//! Sliding windows without bounds checks — direct convolution (grouped and depthwise) over
//! NCHW data here, and the runs that pooling of every rank builds on (`super::pool`): the output is split into regions whose
//! windows read the same taps.
//!
//! Along one spatial axis, the output positions whose windows have the same taps inside the
//! input form a run (`Run`): the interior, where every tap is inside, is one run, and each edge
//! has a run per tap its windows lose to the padding. Every row run × column run is a loop
//! nest whose window reads only its taps, known when the kernel is built, so the body is
//! straight arithmetic without selects or clamps that the JIT vectorises along the output
//! width (contiguous loads at stride 1). Skipping a tap in the padding is what the general
//! form did with a select: a convolution adds 0, a max ignores it, an average does not count
//! it (or counts it, with `count_include_pad`: `Run::counted`).

use super::util::lit;
use relay_compiler::kir::{Expr, Index, KernelBuilder, LocalId, LoopKind};
use relay_compiler::op::{for_each_index, LazyTensor, TensorDef};
use relay_devices::DType;
use std::rc::Rc;

/// Windows of at most this many taps are unrolled; larger ones loop over their taps.
pub(super) const MAX_UNROLLED_TAPS: i64 = 25;

/// At most this many regions (row runs × column runs): more (windows far larger than their
/// padding) would emit too much code, and such a call runs in the reference kernel.
pub(super) const MAX_REGIONS: usize = 256;

/// Output positions along one axis per vector of the JIT (shorter runs loop serially).
pub(super) const LANES: i64 = 4;

/// The sizes of one image's convolution: input channels and extent, window, output extent,
/// top/left padding, strides and dilations.
#[derive(Clone, Copy)]
pub(super) struct Geometry {
    pub c: i64,
    pub h: i64,
    pub wd: i64,
    pub kh: i64,
    pub kw: i64,
    pub oh: i64,
    pub ow: i64,
    pub pt: i64,
    pub pl: i64,
    pub sh: i64,
    pub sw: i64,
    pub dh: i64,
    pub dw: i64,
}

/// One spatial axis of a sliding window.
#[derive(Clone, Copy)]
pub(super) struct Axis {
    /// Output extent.
    pub out: i64,
    /// Input extent.
    pub len: i64,
    /// Window taps.
    pub taps: i64,
    pub stride: i64,
    pub dilation: i64,
    /// Padding before the input (input position of output 0's first tap, negated).
    pub pad: i64,
    /// Padding after the input (only counted, by average pooling with `count_include_pad`).
    pub pad_after: i64,
}

/// Consecutive output positions along one axis whose windows read the same taps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Run {
    /// The first output position.
    pub start: i64,
    /// How many output positions.
    pub len: i64,
    /// The taps whose input lies inside the input, `first..end` (`0..0` when none).
    pub first: i64,
    pub end: i64,
    /// The taps whose input lies before the end of the padding after the input.
    pub counted: i64,
}

/// `ceil(a / b)` for `b > 0` and any `a`.
pub(super) fn ceil_div(a: i64, b: i64) -> i64 {
    -((-a).div_euclid(b))
}

impl Axis {
    /// The runs covering `0..out` in order.
    pub(super) fn runs(&self) -> Vec<Run> {
        let mut runs: Vec<Run> = vec![];
        for o in 0..self.out {
            // Tap `t` reads input position `o·stride - pad + t·dilation`.
            let at = o * self.stride - self.pad;
            let first = ceil_div(-at, self.dilation).clamp(0, self.taps);
            let end = ceil_div(self.len - at, self.dilation).clamp(0, self.taps);
            let (first, end) = if first < end { (first, end) } else { (0, 0) };
            let counted = ceil_div(self.len + self.pad_after - at, self.dilation).clamp(0, self.taps);
            match runs.last_mut() {
                Some(r) if (r.first, r.end, r.counted) == (first, end, counted) => r.len += 1,
                _ => runs.push(Run { start: o, len: 1, first, end, counted }),
            }
        }
        runs
    }
}

/// The row and column runs of a window, or an error when they make too many regions.
fn regions_of(rows: Axis, cols: Axis) -> Result<(Vec<Run>, Vec<Run>), String> {
    let (rows, cols) = (rows.runs(), cols.runs());
    if rows.len().saturating_mul(cols.len()) > MAX_REGIONS {
        return Err("a window this much larger than its input runs in the reference kernel".into());
    }
    Ok((rows, cols))
}

/// Emits the output positions of one image and channel, region by region: `body(k, y, x,
/// row run, column run)` at output row `y`, column `x`. Rows loop serially; columns are the
/// vectorised loop.
fn for_each_position(
    k: &mut KernelBuilder,
    rows: &[Run],
    cols: &[Run],
    body: &mut dyn FnMut(&mut KernelBuilder, &Index, &Index, &Run, &Run),
) {
    for r in rows {
        k.for_(r.len, LoopKind::Serial, |k, y| {
            let y = y + r.start;
            for c in cols {
                let kind = if c.len >= LANES { LoopKind::Vectorize } else { LoopKind::Serial };
                k.for_(c.len, kind, |k, x| body(k, &y, &(x + c.start), r, c));
            }
        });
    }
}

/// Calls `tap(k, ky, kx)` for each tap of the region `rows × cols` in window order: unrolled
/// (constant tap indices) when `unroll`, else as loops.
fn for_each_tap(
    k: &mut KernelBuilder,
    rows: &Run,
    cols: &Run,
    unroll: bool,
    tap: &mut dyn FnMut(&mut KernelBuilder, Index, Index),
) {
    if unroll {
        for ky in rows.first..rows.end {
            for kx in cols.first..cols.end {
                tap(k, Index::Const(ky), Index::Const(kx));
            }
        }
    } else {
        k.for_(rows.end - rows.first, LoopKind::Serial, |k, ky| {
            k.for_(cols.end - cols.first, LoopKind::Serial, |k, kx| tap(k, ky + rows.first, kx + cols.first));
        });
    }
}

/// Direct convolution of NCHW `x` by OIHW `w` (`[oc, c / groups, kh, kw]`) into
/// `[images, oc, oh, ow]` of `dtype`, for any group count: each output sums its group's input
/// channels over the window taps inside the image, in the reference kernel's order. A
/// depthwise convolution (one input channel per group) with an unrolled window reads its
/// weights into locals once per output channel, so its inner loop is loads of `x` and FMAs.
/// Float32 depthwise convolutions at stride 1 run as window products instead
/// (`depthwise.rs`). Errors when the window makes too many regions.
pub(super) fn direct_conv(
    x: &LazyTensor,
    w: &LazyTensor,
    dtype: DType,
    [images, oc, groups]: [i64; 3],
    g: Geometry,
) -> Result<TensorDef, String> {
    if let Some(def) = super::depthwise::depthwise_product(x, w, dtype, [images, oc, groups], g) {
        return Ok(def);
    }
    let (rows, cols) = regions_of(
        Axis { out: g.oh, len: g.h, taps: g.kh, stride: g.sh, dilation: g.dh, pad: g.pt, pad_after: 0 },
        Axis { out: g.ow, len: g.wd, taps: g.kw, stride: g.sw, dilation: g.dw, pad: g.pl, pad_after: 0 },
    )?;
    let (cpg, ocpg) = (g.c / groups, oc / groups);
    let unroll = g.kh * g.kw <= MAX_UNROLLED_TAPS;
    let (x, w) = (x.clone(), w.clone());
    Ok(TensorDef::Nest(Rc::new(move |k, sink| {
        let acc = k.local("acc", dtype);
        let hoisted: Vec<LocalId> =
            if cpg == 1 && unroll { (0..g.kh * g.kw).map(|_| k.local("w", dtype)).collect() } else { vec![] };
        for_each_index(k, &[images, oc], LoopKind::Serial, &mut |k, no| {
            let (n, o) = (no[0].clone(), no[1].clone());
            let group_channel = o.clone().floor_div(ocpg) * cpg;
            for (t, &l) in hoisted.iter().enumerate() {
                let (ky, kx) = (t as i64 / g.kw, t as i64 % g.kw);
                let v =
                    w.at(k, &[o.clone(), Index::Const(0), Index::Const(ky), Index::Const(kx)]).cast(dtype);
                k.assign(l, v);
            }
            for_each_position(k, &rows, &cols, &mut |k, y, xo, r, c| {
                k.assign(acc, lit(dtype, 0.0));
                let channel = |k: &mut KernelBuilder, ci: Index| {
                    let ch = group_channel.clone() + ci.clone();
                    for_each_tap(k, r, c, unroll, &mut |k, ky, kx| {
                        let iy = y.clone() * g.sh - g.pt + ky.clone() * g.dh;
                        let ix = xo.clone() * g.sw - g.pl + kx.clone() * g.dw;
                        let xv = x.at(k, &[n.clone(), ch.clone(), iy, ix]).cast(dtype);
                        let wv = match (hoisted.is_empty(), ky.as_const(), kx.as_const()) {
                            (false, Some(ky), Some(kx)) => Expr::local(hoisted[(ky * g.kw + kx) as usize]),
                            _ => w.at(k, &[o.clone(), ci.clone(), ky, kx]).cast(dtype),
                        };
                        k.assign(acc, Expr::local(acc) + xv * wv);
                    });
                };
                if cpg == 1 {
                    channel(k, Index::Const(0));
                } else {
                    k.for_(cpg, LoopKind::Serial, channel);
                }
                sink(k, &[n.clone(), o.clone(), y.clone(), xo.clone()], Expr::local(acc));
            });
        });
    })))
}

/// `(a, a)` or `(a, b)` from 1 or 2 values.
pub(super) fn pair(p: &[i64]) -> Result<(i64, i64), String> {
    match *p {
        [a] => Ok((a, a)),
        [a, b] => Ok((a, b)),
        _ => Err("expected 1 or 2 values".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::{Axis, Run};

    /// Each output position's taps, the brute-force way: `(first, end, counted)`.
    fn taps_of(a: &Axis, o: i64) -> (i64, i64, i64) {
        let input = |t: i64| o * a.stride - a.pad + t * a.dilation;
        let inside: Vec<i64> = (0..a.taps).filter(|&t| (0..a.len).contains(&input(t))).collect();
        let counted = (0..a.taps).filter(|&t| input(t) < a.len + a.pad_after).count() as i64;
        match (inside.first(), inside.last()) {
            (Some(&f), Some(&l)) => {
                assert_eq!(l - f + 1, inside.len() as i64, "taps inside are contiguous");
                (f, l + 1, counted)
            }
            _ => (0, 0, counted),
        }
    }

    #[test]
    fn runs_cover_the_output_with_each_positions_taps() {
        for out in 0..6 {
            for len in 1..7 {
                for taps in 1..5 {
                    for stride in 1..4 {
                        for dilation in 1..3 {
                            for pad in 0..4 {
                                for pad_after in 0..3 {
                                    let a = Axis { out, len, taps, stride, dilation, pad, pad_after };
                                    let runs = a.runs();
                                    let mut next = 0;
                                    for (i, r) in runs.iter().enumerate() {
                                        assert_eq!(r.start, next, "runs are in order and adjacent");
                                        assert!(r.len > 0);
                                        next += r.len;
                                        for o in r.start..r.start + r.len {
                                            assert_eq!(
                                                taps_of(&a, o),
                                                (r.first, r.end, r.counted),
                                                "{o} in {r:?}"
                                            );
                                        }
                                        let merged = |p: &Run| {
                                            (p.first, p.end, p.counted) == (r.first, r.end, r.counted)
                                        };
                                        assert!(i == 0 || !merged(&runs[i - 1]), "adjacent runs differ");
                                    }
                                    assert_eq!(next, out);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
