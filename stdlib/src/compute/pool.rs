//! Pooling of every rank, one rule (the `COMPUTE` of `nn.max_pool{1,2,3}d`,
//! `nn.avg_pool{1,2,3}d`, `nn.global_{avg,max}_pool2d` and `nn.adaptive_{avg,max}_pool{1,2,3}d`;
//! reference kernels: `crate::ops::nn::pool`) over any permutation of the canonical layout
//! (`NCW`, `NCHW`, `NCDHW`, ... `NHWC`, `NDHWC`).
//!
//! Along each spatial axis the output positions are split into [`Span`]s, consecutive
//! positions whose windows read the same taps at a constant input step: a sliding window's
//! runs (`super::window`, the interior one span and a span per tap each edge loses to the
//! padding) or an adaptive window's positions (TVM's `[floor(o·L/O), ceil((o+1)·L/O))`,
//! merged where the window length and step repeat). Every product of spans is a loop nest whose
//! body reads only its taps, known when the kernel is built: no bounds checks, no selects.
//! The vectorised loop is the last spatial axis (the output width, contiguous at stride 1), or
//! the channel when the layout puts it last (`NHWC`, `NDHWC`), or, for one output position
//! per span (global and most adaptive pools), the last axis's taps.

use super::util::{lit, tensors};
use super::window::{Axis, LANES, MAX_REGIONS, MAX_UNROLLED_TAPS};
use crate::ops::adaptive_window;
use relay_compiler::kir::{Expr, Index, KernelBuilder, LoopKind};
use relay_compiler::op::{for_each_index, ComputeInput, OutType, TensorDef};
use relay_devices::DType;
use std::rc::Rc;

/// How a window's elements become one output.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reduce {
    /// The maximum; padding never wins, a window of padding only gives the dtype's lowest value.
    Max,
    /// The mean over the real elements or, with `count_include_pad`, over the window's
    /// positions up to the end of the explicit padding; a window of padding only gives 0.
    Avg { count_include_pad: bool },
}

/// One spatial axis of a sliding window (TVM's pool attributes, per axis).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlidingAxis {
    pub taps: i64,
    pub stride: i64,
    pub dilation: i64,
    /// Explicit padding before and after the input.
    pub pad: [i64; 2],
}

/// The windows of a pooling call.
#[derive(Clone, Debug)]
pub(crate) enum Windows {
    /// A sliding window per spatial axis, in canonical order (`D`, `H`, `W`).
    Sliding(Vec<SlidingAxis>),
    /// TVM's adaptive windows, sized by the input and output extents (global pooling is the
    /// output extent 1).
    Adaptive,
}

/// Consecutive output positions `start..start + len` along one spatial axis whose windows read
/// taps `first..end` (input `origin + i·stride + t·dilation` for position `start + i`, tap `t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: i64,
    len: i64,
    origin: i64,
    stride: i64,
    dilation: i64,
    first: i64,
    end: i64,
    /// The taps counted by `count_include_pad`.
    counted: i64,
}

/// One spatial axis of an output position: the loop index within its span, and the span.
type AxisAt = (Index, Span);

impl Span {
    /// The taps read (`end - first`).
    fn taps(&self) -> i64 {
        self.end - self.first
    }
}

/// The spans of a sliding window along an axis of `len` inputs and `out` outputs.
fn sliding_spans(a: SlidingAxis, len: i64, out: i64) -> Vec<Span> {
    let axis = Axis {
        out,
        len,
        taps: a.taps,
        stride: a.stride,
        dilation: a.dilation,
        pad: a.pad[0],
        pad_after: a.pad[1],
    };
    let span = |r: super::window::Run| Span {
        start: r.start,
        len: r.len,
        origin: r.start * a.stride - a.pad[0],
        stride: a.stride,
        dilation: a.dilation,
        first: r.first,
        end: r.end,
        counted: r.counted,
    };
    axis.runs().into_iter().map(span).collect()
}

/// The spans of TVM's adaptive windows along an axis of `len` inputs and `out` outputs: one
/// per position, merged while the window length and the step between starts repeat.
fn adaptive_spans(len: i64, out: i64) -> Vec<Span> {
    let mut spans: Vec<Span> = vec![];
    for o in 0..out {
        let w = adaptive_window(o as usize, out as usize, len as usize);
        let (origin, taps) = (w.start as i64, w.len() as i64);
        if let Some(s) = spans.last_mut() {
            let step = origin - (s.origin + (s.len - 1) * s.stride);
            if s.end == taps && (s.len == 1 || step == s.stride) {
                s.stride = step;
                s.len += 1;
                continue;
            }
        }
        spans.push(Span {
            start: o,
            len: 1,
            origin,
            stride: 0,
            dilation: 1,
            first: 0,
            end: taps,
            counted: taps,
        });
    }
    spans
}

/// Pooling of `inputs`' one tensor, whose layout puts canonical axis `i` (`N`, `C`, then the
/// spatial axes) at axis `pos[i]`, into `out` (the same layout). Errors (the call then runs in
/// the reference kernel) for bool data, averages of integers, an empty spatial axis, and
/// windows making more than `MAX_REGIONS` loop nests.
pub(crate) fn pool(
    inputs: &[ComputeInput],
    out: &OutType,
    pos: &[usize],
    windows: &Windows,
    reduce: Reduce,
) -> Result<TensorDef, String> {
    let [x] = tensors(inputs)?;
    let rank = pos.len();
    if rank < 3 || x.shape.len() != rank || out.shape.len() != rank {
        return Err("pooling data must have 1 to 3 spatial axes".into());
    }
    let canonical = |shape: &[i64]| pos.iter().map(|&p| shape[p]).collect::<Vec<i64>>();
    let (data, dims) = (canonical(&x.shape), canonical(&out.shape));
    let avg = matches!(reduce, Reduce::Avg { .. });
    if data[2..].contains(&0) || x.dtype == DType::BOOL || (avg && !x.dtype.is_float()) {
        return Err("this pooling runs in the reference kernel".into());
    }
    let spans: Vec<Vec<Span>> = match windows {
        Windows::Sliding(axes) if axes.len() == rank - 2 => {
            axes.iter().enumerate().map(|(i, &a)| sliding_spans(a, data[2 + i], dims[2 + i])).collect()
        }
        Windows::Sliding(_) => return Err("one window per spatial axis".into()),
        Windows::Adaptive => (2..rank).map(|i| adaptive_spans(data[i], dims[i])).collect(),
    };
    let regions = spans.iter().try_fold(1usize, |n, s| n.checked_mul(s.len()));
    if regions.is_none_or(|n| n > MAX_REGIONS) {
        return Err("a window this much larger than its input runs in the reference kernel".into());
    }
    let channel_last = pos[1] == rank - 1;
    let (x, dtype, pos) = (x.clone(), x.dtype, pos.to_vec());
    let in_layout = move |canonical: Vec<Index>| {
        let mut v = canonical.clone();
        for (c, &p) in canonical.into_iter().zip(&pos) {
            v[p] = c;
        }
        v
    };
    Ok(TensorDef::Nest(Rc::new(move |k, sink| {
        let acc = k.local("acc", dtype);
        // One output position of `spans` (each with its loop index) at image `n`, channel `c`.
        let mut body = |k: &mut KernelBuilder, n: &Index, c: &Index, at: &[AxisAt]| {
            // From -inf (max; NaN never wins) or 0 (average), in window order.
            k.assign(acc, lit(dtype, if avg { 0.0 } else { f64::NEG_INFINITY }));
            let taps: i64 = at.iter().map(|(_, s)| s.taps()).product();
            let unroll = taps <= MAX_UNROLLED_TAPS;
            // The last axis's taps are the vector loop when no output loop is.
            let vector_taps = !unroll && !channel_last && at.last().is_some_and(|(_, s)| s.len < LANES);
            let spans: Vec<Span> = at.iter().map(|(_, s)| *s).collect();
            for_each_tap(k, &spans, unroll, vector_taps, &mut vec![], &mut |k, ts| {
                let mut idx = vec![n.clone(), c.clone()];
                for ((i, s), t) in at.iter().zip(ts) {
                    idx.push(i.clone() * s.stride + s.origin + t.clone() * s.dilation);
                }
                let v = x.at(k, &in_layout(idx));
                let next = if avg { Expr::local(acc) + v } else { v.max(Expr::local(acc)) };
                k.assign(acc, next);
            });
            let value = match reduce {
                Reduce::Max => Expr::local(acc),
                Reduce::Avg { count_include_pad } => {
                    let count: i64 = at
                        .iter()
                        .map(|(_, s)| if count_include_pad { s.counted } else { s.taps() })
                        .product();
                    Expr::local(acc) / lit(dtype, count.max(1) as f64)
                }
            };
            let mut o = vec![n.clone(), c.clone()];
            o.extend(at.iter().map(|(i, s)| i.clone() + s.start));
            sink(k, &in_layout(o), value);
        };
        if channel_last {
            k.for_(dims[0], LoopKind::Serial, |k, n| {
                for_each_span(k, &spans, false, &mut vec![], &mut |k, at| {
                    k.for_(dims[1], LoopKind::Vectorize, |k, c| body(k, &n, &c, at));
                });
            });
        } else {
            for_each_index(k, &dims[..2], LoopKind::Serial, &mut |k, nc| {
                for_each_span(k, &spans, true, &mut vec![], &mut |k, at| body(k, &nc[0], &nc[1], at));
            });
        }
    })))
}

/// Calls `body(k, at)` for each output position of every product of the spatial axes' spans:
/// `at` holds, per axis, the loop index within the span and the span. The spans' loops are
/// serial but for the last axis's when `vector_last` and the span is long enough.
fn for_each_span(
    k: &mut KernelBuilder,
    spans: &[Vec<Span>],
    vector_last: bool,
    at: &mut Vec<AxisAt>,
    body: &mut dyn FnMut(&mut KernelBuilder, &[AxisAt]),
) {
    let axis = at.len();
    let Some(axis_spans) = spans.get(axis) else { return body(k, at) };
    for &s in axis_spans {
        if s.len == 1 {
            // One position (global pooling, a border run): no loop of extent 1.
            at.push((Index::Const(0), s));
            for_each_span(k, spans, vector_last, at, body);
            at.pop();
            continue;
        }
        let vector = vector_last && axis + 1 == spans.len() && s.len >= LANES;
        let kind = if vector { LoopKind::Vectorize } else { LoopKind::Serial };
        k.for_(s.len, kind, |k, i| {
            at.push((i, s));
            for_each_span(k, spans, vector_last, at, body);
            at.pop();
        });
    }
}

/// Calls `tap(k, taps)` for each tap of the window product of `spans`, in window order:
/// unrolled (constant tap indices) when `unroll`, else as loops, the last vectorised when
/// `vector_last`.
fn for_each_tap(
    k: &mut KernelBuilder,
    spans: &[Span],
    unroll: bool,
    vector_last: bool,
    taps: &mut Vec<Index>,
    tap: &mut dyn FnMut(&mut KernelBuilder, &[Index]),
) {
    let Some(s) = spans.get(taps.len()) else { return tap(k, taps) };
    if unroll {
        for t in s.first..s.end {
            taps.push(Index::Const(t));
            for_each_tap(k, spans, unroll, vector_last, taps, tap);
            taps.pop();
        }
    } else {
        let last = taps.len() + 1 == spans.len();
        let kind = if vector_last && last { LoopKind::Vectorize } else { LoopKind::Serial };
        k.for_(s.taps(), kind, |k, t| {
            taps.push(t + s.first);
            for_each_tap(k, spans, unroll, vector_last, taps, tap);
            taps.pop();
        });
    }
}

#[cfg(test)]
mod tests {
    use super::adaptive_spans;
    use crate::ops::adaptive_window;

    #[test]
    fn adaptive_spans_cover_each_positions_window() {
        for len in 1..12 {
            for out in 1..12 {
                let spans = adaptive_spans(len, out);
                let mut next = 0;
                for s in &spans {
                    assert_eq!(s.start, next, "spans are in order and adjacent");
                    next += s.len;
                    for i in 0..s.len {
                        let w = adaptive_window((s.start + i) as usize, out as usize, len as usize);
                        let origin = s.origin + i * s.stride;
                        assert_eq!(
                            (origin, s.end - s.first),
                            (w.start as i64, w.len() as i64),
                            "{len} {out} {s:?}"
                        );
                    }
                }
                assert_eq!(next, out);
                if len % out == 0 {
                    assert_eq!(spans.len(), 1, "uniform windows are one span");
                }
            }
        }
    }
}
