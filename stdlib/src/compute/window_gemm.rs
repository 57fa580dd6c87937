//! Stride-1 convolutions as one matrix product over the zero-padded image read in place
//! ("window" rows), with no im2col copy.
//!
//! Over an image zero-padded to `[c, hp, wp]` (`hp = oh + kh − 1`, `wp = ow + kw − 1`), output
//! position `(y, x)` at "wide" column `j = y·wp + x` reads input element
//! `j + ic·hp·wp + ky·wp + kx` for reduction index `(ic, ky, kx)`: the `[c·kh·kw, ·]` matrix im2col would copy is the
//! padded image itself, its rows shifted by those offsets (`Stmt::Gemm`'s `b_rows`
//! `[(c, hp·wp), (kh, wp), (kw, 1)]`). Per image the data is copied once into a padded temp
//! (read in place when there is no padding), and per tile of output rows one product writes
//! the tile's wide rows — `wp` columns each, the last `kw − 1` of them garbage that the
//! epilogue skips — into a temp that the epilogue reads while it is in L2 (the tiling of
//! `im2col.rs`). The Cranelift backend runs the product in `jit/src/blas/window.rs`. The idea
//! is the "indirect convolution" family (Dukhan, "The Indirect Convolution Algorithm", 2019)
//! specialised to stride 1, where each row's pointer is a constant shift.

use super::im2col::{sink_rows, TILE_BYTES};
use super::util::for_images;
use super::window::Geometry;
use relay_compiler::kir::{BufferId, Index, KernelBuilder, LoopKind, RowOffsets};
use relay_compiler::op::{LazyTensor, TensorDef};
use relay_devices::DType;
use std::rc::Rc;

/// Float32 stride-1, dilation-1 convolutions of `images` NCHW images by the `[oc, c, kh, kw]`
/// weights in buffer `wbuf` as window products (see the module documentation); the caller
/// (`im2col_product`) checked the dtypes. `None` for other strides or dilations and for 1×1
/// windows over unpadded data, which `im2col.rs` already reads in place.
pub(super) fn window_product(
    x: &LazyTensor,
    wbuf: BufferId,
    [images, oc]: [i64; 2],
    g: Geometry,
) -> Option<TensorDef> {
    if (g.sh, g.sw, g.dh, g.dw) != (1, 1, 1, 1) {
        return None;
    }
    let (hp, wp) = (g.oh + g.kh - 1, g.ow + g.kw - 1);
    let unpadded = (g.pt, g.pl, hp, wp) == (0, 0, g.h, g.wd);
    if (unpadded && (g.kh, g.kw) == (1, 1)) || g.oh <= 0 || g.ow <= 0 || g.pt < 0 || g.pl < 0 {
        return None;
    }
    let plane = hp.checked_mul(wp)?;
    let depth = g.c.checked_mul(g.kh)?.checked_mul(g.kw)?;
    // Pairs of extent 1 add nothing: a 1×1 window is one pair, BLAS's `ldb`.
    let dims = [(g.c, plane), (g.kh, wp), (g.kw, 1)].into_iter().filter(|&(e, _)| e != 1).collect::<Vec<_>>();
    let b_rows = RowOffsets::new(if dims.is_empty() { vec![(1, 0)] } else { dims });
    let rows = (TILE_BYTES / oc.checked_mul(wp)?.checked_mul(4)?.max(1)).clamp(1, g.oh);
    let in_place = x.buffer().filter(|_| unpadded);
    let x = x.clone();
    Some(TensorDef::Nest(Rc::new(move |k, sink| {
        let product = k.temp("gemm", DType::F32, [oc * ((rows - 1) * wp + g.ow)]);
        let padded = match in_place {
            Some(data) => data,
            None => k.temp("padded", DType::F32, [g.c * plane]),
        };
        let image = |k: &mut KernelBuilder, n: &Index| {
            let base = match in_place {
                Some(_) => n.clone() * (g.c * plane),
                None => {
                    // Padded rows `y0..y1` and columns `x0..x1` hold the image; the padding is
                    // never written and keeps the temp's zeros (every call stores the same
                    // elements: `jit/src/cranelift/temps.rs`).
                    let (y0, y1) = (g.pt.min(hp), (g.pt + g.h).min(hp));
                    let (x0, x1) = (g.pl.min(wp), (g.pl + g.wd).min(wp));
                    k.for_(g.c, LoopKind::Serial, |k, ic| {
                        k.for_(y1 - y0, LoopKind::Serial, |k, yy| {
                            k.for_(x1 - x0, LoopKind::Vectorize, |k, xx| {
                                let at = ic.clone() * plane + (yy.clone() + y0) * wp + xx.clone() + x0;
                                let v = x.at(
                                    k,
                                    &[n.clone(), ic.clone(), yy.clone() + (y0 - g.pt), xx + (x0 - g.pl)],
                                );
                                k.store(padded, at, v);
                            });
                        });
                    });
                    Index::Const(0)
                }
            };
            let mut tile = |k: &mut KernelBuilder, row0: Index, count: i64| {
                let cols = (count - 1) * wp + g.ow;
                let b = (padded, base.clone() + row0.clone() * wp, b_rows.clone());
                k.gemm_block(product, wbuf, b, oc, cols, depth);
                sink_rows(k, &mut *sink, product, (n, &row0), [oc, count, cols, wp, g.ow]);
            };
            let (full, rest) = (g.oh / rows, g.oh % rows);
            if full == 1 {
                tile(k, Index::Const(0), rows);
            } else if full > 1 {
                k.for_(full, LoopKind::Serial, |k, t| tile(k, t * rows, rows));
            }
            if rest > 0 {
                tile(k, Index::Const(full * rows), rest);
            }
        };
        for_images(k, images, image);
    })))
}
