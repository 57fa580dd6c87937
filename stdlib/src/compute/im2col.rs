//! Convolution as matrix products over tiles of output rows (im2col), each tile's epilogue
//! run while its product is still in cache.
//!
//! A convolution of `images` NCHW images by `[oc, c, kh, kw]` weights is, per image, the
//! product of the `[oc, c·kh·kw]` weights with the `[c·kh·kw, oh·ow]` matrix of its windows
//! (TVM's `conv2d_nchw` as GEMM; Chellapilla et al., "High Performance Convolutional Neural
//! Networks for Document Processing", 2006). Multiplying all output positions at once writes an
//! `[oc, oh·ow]` product temp (MobileNet-v2's first pointwise convolution: 4.8 MB) that the
//! epilogue (bias, residual add, activation, the fused consumers: the `sink`) then reads back
//! from memory. Here the output positions are split into tiles of whole output rows: per tile,
//! the windows of just those rows are copied into a `[c·kh·kw, rows·ow]` temp, `gemm`
//! multiplies the weights by it into an `[oc, rows·ow]` temp, and the epilogue reads that
//! while both temps are in L2 ([`TILE_BYTES`]). A 1×1 window at stride 1 without padding
//! needs no copy: the image's data already is the `[c, h·w]` matrix, and each tile's product
//! reads a block of its columns in place (`Stmt::Gemm`'s `b_offset` and one `b_rows` pair).
//! Other stride-1 convolutions read their padded image in place instead (`window_gemm.rs`):
//! im2col is for the strided and dilated ones.

use super::util::for_images;
use super::window::Geometry;
use relay_compiler::kir::{BufferId, Expr, Index, KernelBuilder, LoopKind, RowOffsets};
use relay_compiler::op::{LazyTensor, Sink, TensorDef};
use relay_devices::DType;
use std::rc::Rc;

/// Bytes a tile's two temps (its im2col block and its product) may take together, so that the
/// epilogue finds the product in L2 (2 MiB per core on the Xeon the figures of
/// `benches/vision.md` come from).
pub(super) const TILE_BYTES: i64 = 256 * 1024;

/// Float32 images convolved as matrix products over tiles of output rows (see the module
/// documentation), at stride 1 as window products (`window_gemm.rs`). `None` unless the
/// weights are a whole float32 buffer and all dtypes are float32.
///
/// A tile has at least as many columns as the weights have rows (`oc`), so that the weights,
/// which every tile's product reads again, are at most as much traffic as the tile's data
/// (ResNet-18's last layers: `[512, 4608]` weights over 49 positions stay one tile).
pub(super) fn im2col_product(
    x: &LazyTensor,
    w: &LazyTensor,
    dtype: DType,
    [images, oc]: [i64; 2],
    g: Geometry,
) -> Option<TensorDef> {
    let wbuf = float_weights(x, w, dtype)?;
    // Stride 1 reads the padded image in place; other strides copy windows.
    if let Some(def) = super::window_gemm::window_product(x, wbuf, [images, oc], g) {
        return Some(def);
    }
    let x = x.clone();
    let depth = g.c * g.kh * g.kw;
    let pointwise = (g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.oh, g.ow) == (1, 1, 1, 1, 0, 0, g.h, g.wd);
    let in_place = x.buffer().filter(|_| pointwise);
    let copied = if in_place.is_some() { 0 } else { depth };
    let row_bytes = (copied + oc).checked_mul(g.ow)?.checked_mul(4)?.max(1);
    let rows = (TILE_BYTES / row_bytes).max((oc + g.ow - 1) / g.ow.max(1)).clamp(1, g.oh.max(1));
    let plan = TilePlan::new(g, rows, in_place.is_none());
    Some(TensorDef::Nest(Rc::new(move |k, sink| {
        let product = k.temp("gemm", DType::F32, [oc * rows * g.ow]);
        let columns = match in_place {
            Some(data) => Columns::Data(data),
            None => Columns::Copied(k.temp("im2col", DType::F32, [depth * rows * g.ow])),
        };
        let mut tile = |k: &mut KernelBuilder, n: &Index, row0: Index, count: i64, fixed: bool| {
            let b = match columns {
                Columns::Data(data) => {
                    let offset = n.clone() * (g.c * g.h * g.wd) + row0.clone() * g.ow;
                    (data, offset, RowOffsets::uniform(depth, g.h * g.wd))
                }
                Columns::Copied(col) => {
                    im2col_tile(k, &x, col, (n, &row0), count, fixed, rows, g);
                    (col, Index::Const(0), RowOffsets::uniform(depth, rows * g.ow))
                }
            };
            let cols = count * g.ow;
            k.gemm_block(product, wbuf, b, oc, cols, depth);
            sink_rows(k, &mut *sink, product, (n, &row0), [oc, count, cols, g.ow, g.ow]);
        };
        let image = |k: &mut KernelBuilder, n: &Index| {
            for &row0 in &plan.before {
                tile(k, n, Index::Const(row0), rows.min(g.oh - row0), true);
            }
            let (first, count) = plan.clean;
            if count > 0 {
                k.for_(count, LoopKind::Serial, |k, t| tile(k, n, (t + first) * rows, rows, false));
            }
            for &row0 in &plan.after {
                tile(k, n, Index::Const(row0), rows.min(g.oh - row0), true);
            }
        };
        for_images(k, images, image);
    })))
}

/// The epilogue of a tile of `count` output rows from `row0` on of image `n`: hands the `ow`
/// valid positions of each row of the `[oc, cols]` product temp, row `r` starting at column
/// `r·stride` (`ow` for im2col's dense rows, the padded width for the window product's wide
/// ones), to `sink` at its output indices.
pub(super) fn sink_rows(
    k: &mut KernelBuilder,
    sink: Sink<'_>,
    product: BufferId,
    (n, row0): (&Index, &Index),
    [oc, count, cols, stride, ow]: [i64; 5],
) {
    k.for_(oc, LoopKind::Serial, |k, o| {
        k.for_(count, LoopKind::Serial, |k, r| {
            k.for_(ow, LoopKind::Vectorize, |k, xo| {
                let v = k.load(product, &[o.clone() * cols + r.clone() * stride + xo.clone()]);
                sink(k, &[n.clone(), o.clone(), row0.clone() + r, xo], v);
            });
        });
    });
}

/// The weights' buffer, when they are a whole buffer and the data, weights and output
/// (`dtype`) are all float32: what a convolution as `gemm` needs.
pub(super) fn float_weights(x: &LazyTensor, w: &LazyTensor, dtype: DType) -> Option<BufferId> {
    [x.dtype, w.dtype, dtype].iter().all(|&d| d == DType::F32).then(|| w.buffer()).flatten()
}

/// Where a tile's product reads its columns.
#[derive(Clone, Copy)]
enum Columns {
    /// In place: the `[c, h·w]` NCHW data of a pointwise convolution.
    Data(BufferId),
    /// A block of the im2col temp the tile copies its windows into ([`im2col_tile`]).
    Copied(BufferId),
}

/// Which tiles of `rows` output rows a convolution runs in one loop and which one by one.
///
/// The loop's tiles are *clean*: every row of theirs reads inside the image for every window
/// row `ky`, so the tile copies whole rows and no padding. The others — tiles whose rows'
/// windows reach into the top or bottom padding, and a last tile of fewer rows — are emitted
/// with their first row known, so that the rows they lose to padding are known when the kernel
/// is built.
struct TilePlan {
    /// First rows of the tiles before the loop.
    before: Vec<i64>,
    /// The loop: its first tile's index and how many tiles it runs.
    clean: (i64, i64),
    /// First rows of the tiles after the loop.
    after: Vec<i64>,
}

impl TilePlan {
    fn new(g: Geometry, rows: i64, windows: bool) -> TilePlan {
        let tiles = (g.oh + rows - 1) / rows;
        // The output rows that read inside the image for every window row (all rows when the
        // data is read in place, with no windows).
        let (lo, hi) = if windows {
            (0..g.kh)
                .map(|ky| inside(g.oh, g.sh, g.pt - ky * g.dh, g.h))
                .filter(|(y0, y1)| y0 < y1)
                .fold((0, g.oh), |(lo, hi), (y0, y1)| (lo.max(y0), hi.min(y1)))
        } else {
            (0, g.oh)
        };
        let first = (lo + rows - 1) / rows;
        let end = (hi / rows).max(first);
        let starts = |range: std::ops::Range<i64>| range.map(|t| t * rows).collect::<Vec<i64>>();
        TilePlan {
            before: starts(0..first.min(tiles)),
            clean: (first, end - first),
            after: starts(end..tiles),
        }
    }
}

/// Copies the windows of `count` output rows of image `n` from `row0` on into `col`, as the
/// `[c·kh·kw, rows·ow]` matrix whose columns are those rows' output positions (the first
/// `count·ow` columns when `count < rows`).
///
/// Window elements in the left and right padding are never written, the same columns in
/// every tile, so they keep the zeros the temp starts each call with. Rows in the top or
/// bottom padding are another tile's data rows in the reused temp: a `fixed` tile (its `row0` a
/// constant) writes them as zeros. A tile that is not `fixed` must be clean ([`TilePlan`]).
#[allow(clippy::too_many_arguments)]
fn im2col_tile(
    k: &mut KernelBuilder,
    x: &LazyTensor,
    col: BufferId,
    (n, row0): (&Index, &Index),
    count: i64,
    fixed: bool,
    rows: i64,
    g: Geometry,
) {
    let columns = rows * g.ow;
    for ky in 0..g.kh {
        for kx in 0..g.kw {
            let (y0, y1) = inside(g.oh, g.sh, g.pt - ky * g.dh, g.h);
            let (x0, x1) = inside(g.ow, g.sw, g.pl - kx * g.dw, g.wd);
            if y0 >= y1 || x0 >= x1 {
                // Every tile's rows read padding here: the zeros the temp starts with.
                continue;
            }
            // The tile's rows `r0..r1` read the image; the rest (fixed tiles only) padding.
            let (r0, r1) = match row0.as_const().filter(|_| fixed) {
                Some(first) => ((y0 - first).clamp(0, count), (y1 - first).clamp(0, count)),
                None => (0, count),
            };
            let store_rows = |k: &mut KernelBuilder, from: i64, to: i64, padding: bool| {
                if from >= to {
                    return;
                }
                k.for_(g.c, LoopKind::Serial, |k, ci| {
                    let row = (ci.clone() * g.kh + ky) * g.kw + kx;
                    k.for_(to - from, LoopKind::Serial, |k, rr| {
                        let r = rr + from;
                        let y = row0.clone() + r.clone();
                        let iy = y * g.sh - (g.pt - ky * g.dh);
                        let column = row.clone() * columns + r * g.ow;
                        // Vectorised at any stride: the stores are contiguous, and at stride
                        // > 1 the loads per-lane gathers (the 7×7 stride-2 stem of ResNet was
                        // a scalar copy of 1.8 M elements).
                        k.for_(x1 - x0, LoopKind::Vectorize, |k, xx| {
                            let xo = xx + x0;
                            let v = if padding {
                                Expr::f32(0.0)
                            } else {
                                let ix = xo.clone() * g.sw - (g.pl - kx * g.dw);
                                x.at(k, &[n.clone(), ci.clone(), iy.clone(), ix])
                            };
                            k.store(col, column.clone() + xo, v);
                        });
                    });
                });
            };
            store_rows(k, 0, r0, true);
            store_rows(k, r0, r1, false);
            store_rows(k, r1, count, true);
        }
    }
}

/// The output positions `o` in `0..out` whose input position `o·stride - offset` lies in
/// `0..len`, as a range `(first, end)` (empty when `first >= end`).
fn inside(out: i64, stride: i64, offset: i64, len: i64) -> (i64, i64) {
    // ceil(a / b) for b > 0 and any a.
    let ceil_div = |a: i64, b: i64| -((-a).div_euclid(b));
    (ceil_div(offset, stride).clamp(0, out), ceil_div(len + offset, stride).clamp(0, out))
}

#[cfg(test)]
mod tests {
    use super::{inside, Geometry, TilePlan};

    #[test]
    fn inside_is_the_range_of_outputs_reading_the_input() {
        for out in 0..7 {
            for stride in 1..4 {
                for offset in -5..6 {
                    for len in 0..8 {
                        let want: Vec<i64> =
                            (0..out).filter(|o| (0..len).contains(&(o * stride - offset))).collect();
                        let (first, end) = inside(out, stride, offset, len);
                        let got: Vec<i64> = (first..end).collect();
                        assert_eq!(got, want, "out {out} stride {stride} offset {offset} len {len}");
                    }
                }
            }
        }
    }

    #[test]
    fn tile_plan_covers_every_row_once_and_loops_only_clean_tiles() {
        for (h, pad, kh, stride) in [(9, 1, 3, 1), (8, 0, 3, 1), (7, 3, 7, 2), (3, 1, 3, 1), (12, 2, 5, 1)] {
            let oh = (h + 2 * pad - kh) / stride + 1;
            let g = Geometry {
                c: 1,
                h,
                wd: h,
                kh,
                kw: kh,
                oh,
                ow: oh,
                pt: pad,
                pl: pad,
                sh: stride,
                sw: stride,
                dh: 1,
                dw: 1,
            };
            for rows in 1..=oh {
                let plan = TilePlan::new(g, rows, true);
                let (first, count) = plan.clean;
                let looped: Vec<i64> = (first..first + count).map(|t| t * rows).collect();
                let starts: Vec<i64> =
                    plan.before.iter().chain(&looped).chain(&plan.after).copied().collect();
                let want: Vec<i64> = (0..oh).step_by(rows as usize).collect();
                assert_eq!(starts, want, "h {h} pad {pad} rows {rows}");
                for row0 in looped {
                    // A looped tile has `rows` rows, each reading inside the image for every
                    // window row that reads the image anywhere.
                    assert!(row0 + rows <= oh);
                    for ky in 0..kh {
                        let (y0, y1) = inside(oh, stride, pad - ky, h);
                        assert!(y0 >= y1 || (y0 <= row0 && row0 + rows <= y1), "h {h} rows {rows} ky {ky}");
                    }
                }
            }
        }
    }
}
