//! Winograd convolutions in kir (the `COMPUTE` of `crate::ops::nn::winograd`'s items): the
//! weight transform, and the convolution from transformed weights as input transform,
//! `α²` matrix products and output transform with the fused epilogue.
//!
//! Per image, the data is copied once into a zero-padded channels-last temp `[hp, wp, c]`
//! covering every tile, so that the transforms read whole vectors of channels. The output
//! tiles are taken a block of tile rows at a time (the block's temps stay in L2,
//! [`BLOCK_BYTES`]): for each tile, `V = Bᵀ d B` of all channels at vector width, one temp per
//! `(ξ, ν)` holding the block's `[tiles, c]` matrix; per `(ξ, ν)` one `gemm` of that matrix by
//! the `[c, o]` slice of the weight (kir's right operand takes the offset) into a `[tiles, o]`
//! temp; then `Y = Aᵀ M A` in two passes over the output channels at vector width (the
//! vector emitter stores each buffer at one index per loop, hence a loop per element of the
//! `m×α` half product and of the `m×m` tile), written channels-last, which the epilogue
//! (`sink`: bias, residual add, activation) reads back into NCHW order.

use super::nn::top_left;
use super::util::{for_images, lit, tensors};
use crate::attrs::{Conv2dWinogradAttrs, ConvWinogradWeightTransformAttrs};
use crate::ops::Transforms;
use relay_compiler::kir::{BufferId, Expr, Index, KernelBuilder, LocalId, LoopKind, RowOffsets};
use relay_compiler::op::{ComputeInput, OutType, TensorDef};
use relay_devices::DType;
use std::rc::Rc;

/// Bytes a block's temps (its `V` and `M` matrices and its output rows) may take together.
const BLOCK_BYTES: i64 = 1 << 20;

/// `Σ coefficient · term` over the nonzero coefficients (`±1` without a multiply), float32.
fn combination(terms: impl IntoIterator<Item = (f64, Expr)>) -> Expr {
    let mut sum: Option<Expr> = None;
    for (c, e) in terms.into_iter().filter(|(c, _)| *c != 0.0) {
        let scaled = if c == 1.0 || c == -1.0 { e } else { lit(DType::F32, c.abs()) * e };
        sum = Some(match (sum, c < 0.0) {
            (None, false) => scaled,
            (None, true) => -scaled,
            (Some(s), false) => s + scaled,
            (Some(s), true) => s - scaled,
        });
    }
    sum.unwrap_or_else(|| lit(DType::F32, 0.0))
}

/// The transforms of a `tile_size` attribute, as a rule's error.
fn transforms(tile_size: i64) -> Result<Transforms, String> {
    Transforms::new(tile_size).map_err(|e| e.to_string())
}

/// `nn.contrib_conv2d_winograd_weight_transform`: per `(ξ, ν)`, a loop over the weights
/// summing `G[ξ, a] · g[o, i, a, b] · G[ν, b]` (float32).
pub(crate) fn weight_transform(
    inputs: &[ComputeInput],
    a: &ConvWinogradWeightTransformAttrs,
    out: &OutType,
) -> Result<TensorDef, String> {
    let [w] = tensors(inputs)?;
    let (&[o, i, 3, 3], DType::F32, DType::F32) = (w.shape.as_slice(), w.dtype, out.dtype) else {
        return Err("the weight transform is computed for float32 [o, i, 3, 3] weights".into());
    };
    let t = transforms(a.tile_size)?;
    let w = w.clone();
    Ok(TensorDef::Nest(Rc::new(move |k, sink| {
        for xi in 0..t.alpha {
            for nu in 0..t.alpha {
                k.for_(o, LoopKind::Serial, |k, oc| {
                    k.for_(i, LoopKind::Vectorize, |k, ic| {
                        let taps = (0..3).flat_map(|p| (0..3).map(move |q| (p, q)));
                        let v = combination(taps.map(|(p, q)| {
                            let at = [oc.clone(), ic.clone(), Index::Const(p), Index::Const(q)];
                            (t.g[xi][p as usize] * t.g[nu][q as usize], w.at(k, &at))
                        }));
                        sink(k, &[Index::Const(xi as i64), Index::Const(nu as i64), oc.clone(), ic], v);
                    });
                });
            }
        }
    })))
}

/// The sizes of one call: `[n, c, h, w]` data, `o` output channels of `[oh, ow]`, the top and
/// left padding, and the tiling.
#[derive(Clone, Copy)]
struct Shape {
    n: i64,
    c: i64,
    h: i64,
    w: i64,
    o: i64,
    oh: i64,
    ow: i64,
    pt: i64,
    pl: i64,
    /// Tile rows and columns.
    th: i64,
    tw: i64,
    /// The padded temp's rows and columns, `t·m + 2`.
    hp: i64,
    wp: i64,
    /// Tile rows per block.
    rows: i64,
}

/// `nn.contrib_conv2d_winograd_without_weight_transform`: the item's `COMPUTE` (see the module
/// documentation), for float32 operands and a weight that is a whole buffer.
pub(crate) fn conv2d_winograd(
    inputs: &[ComputeInput],
    a: &Conv2dWinogradAttrs,
    out: &OutType,
) -> Result<TensorDef, String> {
    let [x, u] = tensors(inputs)?;
    let floats = [x.dtype, u.dtype, out.dtype].iter().all(|&d| d == DType::F32);
    let (true, Some(ubuf)) = (floats, u.buffer()) else {
        return Err("a Winograd convolution is computed for float32 operands with whole weights".into());
    };
    let t = transforms(a.tile_size)?;
    let (&[n, c, h, w], &[_, o, oh, ow]) = (x.shape.as_slice(), out.shape.as_slice()) else {
        return Err("a Winograd convolution takes rank-4 tensors".into());
    };
    let (pt, pl) = top_left(&a.padding)?;
    let (m, alpha) = (t.m as i64, t.alpha as i64);
    let (th, tw) = ((oh + m - 1) / m, (ow + m - 1) / m);
    if [n, c, o, oh, ow, pt, pl].iter().any(|&v| v < 0) || th == 0 || tw == 0 {
        return Err("this Winograd convolution runs in the reference kernel".into());
    }
    let row_bytes = (alpha * alpha * tw * (c + o) + m * tw * m * o) * 4;
    let rows = (BLOCK_BYTES / row_bytes.max(1)).clamp(1, th);
    let s = Shape { n, c, h, w, o, oh, ow, pt, pl, th, tw, hp: th * m + 2, wp: tw * m + 2, rows };
    let x = x.clone();
    Ok(TensorDef::Nest(Rc::new(move |k, sink| {
        let a2 = t.alpha * t.alpha;
        let padded = k.temp("padded", DType::F32, [s.hp * s.wp * s.c]);
        let v: Vec<BufferId> = (0..a2).map(|_| k.temp("v", DType::F32, [s.rows * s.tw * s.c])).collect();
        let prods: Vec<BufferId> = (0..a2).map(|_| k.temp("m", DType::F32, [s.rows * s.tw * s.o])).collect();
        let half = k.temp("half", DType::F32, [m * alpha * s.o]);
        let y = k.temp("y", DType::F32, [s.rows * m * s.tw * m * s.o]);
        let d: Vec<LocalId> = (0..a2).map(|_| k.local("d", DType::F32)).collect();
        let bd: Vec<LocalId> = (0..a2).map(|_| k.local("bd", DType::F32)).collect();
        let image = |k: &mut KernelBuilder, img: &Index| {
            copy_padded(k, &x, padded, img, s);
            let mut block = |k: &mut KernelBuilder, ty0: Index, count: i64| {
                let tiles = count * s.tw;
                let tile_loop = |k: &mut KernelBuilder, f: &mut dyn FnMut(&mut KernelBuilder, [Index; 2])| {
                    k.for_(count, LoopKind::Serial, |k, r| {
                        k.for_(s.tw, LoopKind::Serial, |k, tx| f(k, [r.clone(), tx]))
                    });
                };
                tile_loop(k, &mut |k, rc| input_tile(k, &t, padded, &v, (&d, &bd), (&ty0, rc), s));
                for (e, (&vb, &mb)) in v.iter().zip(&prods).enumerate() {
                    let weights = (ubuf, Index::Const(e as i64 * s.c * s.o), RowOffsets::uniform(s.c, s.o));
                    k.gemm_block(mb, vb, weights, tiles, s.o, s.c);
                }
                tile_loop(k, &mut |k, rc| output_tile(k, &t, &prods, half, y, rc, s));
                // The block's output rows inside the output, channels-last in `y`, to NCHW.
                let first = ty0.clone() * m;
                let valid = match ty0.as_const() {
                    Some(r0) => (count * m).min(s.oh - r0 * m),
                    None => count * m,
                };
                k.for_(s.o, LoopKind::Serial, |k, oc| {
                    k.for_(valid, LoopKind::Serial, |k, r| {
                        k.for_(s.ow, LoopKind::Vectorize, |k, ox| {
                            let at = (r.clone() * (s.tw * m) + ox.clone()) * s.o + oc.clone();
                            let val = k.load(y, &[at]);
                            sink(k, &[img.clone(), oc.clone(), first.clone() + r, ox], val);
                        });
                    });
                });
            };
            // Full blocks in a loop (their rows all inside the output), then the rest: at most
            // `rows` tile rows, since `th − full·rows = ⌈rem / m⌉` for `rem < rows·m`.
            let full = s.oh / (s.rows * m);
            if full == 1 {
                block(k, Index::Const(0), s.rows);
            } else if full > 1 {
                k.for_(full, LoopKind::Serial, |k, b| block(k, b * s.rows, s.rows));
            }
            let r0 = full * s.rows;
            if r0 < s.th {
                block(k, Index::Const(r0), s.th - r0);
            }
        };
        for_images(k, s.n, image);
    })))
}

/// Copies image `img` of `x` into the channels-last `padded` temp at row `pt`, column `pl`;
/// the rest of the temp is never written and keeps its zeros.
fn copy_padded(
    k: &mut KernelBuilder,
    x: &relay_compiler::op::LazyTensor,
    padded: BufferId,
    img: &Index,
    s: Shape,
) {
    let (y0, y1) = (s.pt.min(s.hp), (s.pt + s.h).min(s.hp));
    let (x0, x1) = (s.pl.min(s.wp), (s.pl + s.w).min(s.wp));
    k.for_(y1 - y0, LoopKind::Serial, |k, yy| {
        k.for_(x1 - x0, LoopKind::Serial, |k, xx| {
            k.for_(s.c, LoopKind::Vectorize, |k, ic| {
                let at = ((yy.clone() + y0) * s.wp + xx.clone() + x0) * s.c + ic.clone();
                let val = x.at(k, &[img.clone(), ic, yy.clone() + (y0 - s.pt), xx.clone() + (x0 - s.pl)]);
                k.store(padded, at, val);
            });
        });
    });
}

/// `V = Bᵀ d B` of the tile in row `r` and column `tx` of the block starting at tile row `ty0`, all channels at vector
/// width: `d` and `Bᵀ d` in private locals, element `(ξ, ν)` stored to `v[ξ·α + ν]`.
fn input_tile(
    k: &mut KernelBuilder,
    t: &Transforms,
    padded: BufferId,
    v: &[BufferId],
    (d, bd): (&[LocalId], &[LocalId]),
    (ty0, [r, tx]): (&Index, [Index; 2]),
    s: Shape,
) {
    let (m, alpha) = (t.m as i64, t.alpha);
    // The tile's index in the block and its top-left corner in the padded temp.
    let p = r.clone() * s.tw + tx.clone();
    let (row, col) = ((ty0.clone() + r) * m, tx * m);
    k.for_(s.c, LoopKind::Vectorize, |k, ic| {
        for i in 0..alpha {
            for j in 0..alpha {
                let at = ((row.clone() + i as i64) * s.wp + col.clone() + j as i64) * s.c + ic.clone();
                let val = k.load(padded, &[at]);
                k.assign(d[i * alpha + j], val);
            }
        }
        for xi in 0..alpha {
            for j in 0..alpha {
                let sum = combination((0..alpha).map(|i| (t.bt[xi][i], Expr::local(d[i * alpha + j]))));
                k.assign(bd[xi * alpha + j], sum);
            }
        }
        for xi in 0..alpha {
            for nu in 0..alpha {
                let sum = combination((0..alpha).map(|j| (t.bt[nu][j], Expr::local(bd[xi * alpha + j]))));
                k.store(v[xi * alpha + nu], p.clone() * s.c + ic.clone(), sum);
            }
        }
    });
}

/// `Y = Aᵀ M A` of the tile in row `r` and column `tx` of the block, all output channels at vector width: `Aᵀ M` into
/// `half` (`[m, α, o]`), then each output position into `y` (`[rows·m, tw·m, o]`).
fn output_tile(
    k: &mut KernelBuilder,
    t: &Transforms,
    prods: &[BufferId],
    half: BufferId,
    y: BufferId,
    [tile_row, tile_col]: [Index; 2],
    s: Shape,
) {
    let (m, alpha) = (t.m, t.alpha);
    let p = tile_row.clone() * s.tw + tile_col.clone();
    for r in 0..m {
        for nu in 0..alpha {
            k.for_(s.o, LoopKind::Vectorize, |k, oc| {
                let terms = (0..alpha).map(|xi| {
                    let at = p.clone() * s.o + oc.clone();
                    (t.at[r][xi], k.load(prods[xi * alpha + nu], &[at]))
                });
                let sum = combination(terms.collect::<Vec<_>>());
                k.store(half, ((r * alpha + nu) as i64) * s.o + oc.clone(), sum);
            });
        }
    }
    let m = m as i64;
    for r in 0..m {
        for q in 0..m {
            k.for_(s.o, LoopKind::Vectorize, |k, oc| {
                let terms = (0..alpha).map(|nu| {
                    let at = (r * alpha as i64 + nu as i64) * s.o + oc.clone();
                    (t.at[q as usize][nu], k.load(half, &[at]))
                });
                let sum = combination(terms.collect::<Vec<_>>());
                let at =
                    ((tile_row.clone() * m + r) * (s.tw * m) + tile_col.clone() * m + q) * s.o + oc.clone();
                k.store(y, at, sum);
            });
        }
    }
}
