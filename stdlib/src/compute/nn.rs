//! Anchor rules, the `COMPUTE` of the nn items (reference kernels: `crate::ops::nn`): products as loop nests whose innermost
//! reduction is vectorised where the operands are contiguous (or native matrix products),
//! convolution as im2col and products over tiles (`super::im2col`; direct loops: `super::window`; pooling: `super::pool`), softmax
//! as three passes over the axis, and `nn.bias_add` as a broadcast.

use super::util::{lazy, lit, norm_axis, tensors};
use super::window::{direct_conv, pair, Geometry};
use crate::attrs::{
    BatchMatmulAttrs, BiasAddAttrs, Conv2dAttrs, DenseAttrs, LayerNormAttrs, MatmulAttrs, SoftmaxAttrs,
};
use relay_compiler::kir::{Expr, Index, KernelBuilder, LocalId, LoopKind};
use relay_compiler::op::{for_each_index, ComputeInput, LazyTensor, OutType, TensorDef};
use relay_devices::DType;
use std::rc::Rc;

/// `nn.dense`: the item's `COMPUTE`.
pub(crate) fn dense(inputs: &[ComputeInput], _: &DenseAttrs, out: &OutType) -> Result<TensorDef, String> {
    let [x, w] = tensors(inputs)?;
    product(x, w, out, true)
}

/// Outputs of a product computed together (see [`product`]).
const BLOCK: i64 = 8;

/// `acc = Σ_k a(k) * b(k)` in `dtype` over `0..n` (vectorised when `contiguous`), then the sink.
fn dot(
    k: &mut KernelBuilder,
    acc: LocalId,
    dtype: DType,
    n: i64,
    contiguous: bool,
    term: &dyn Fn(&KernelBuilder, Index) -> Expr,
) {
    k.assign(acc, lit(dtype, 0.0));
    let kind = if contiguous { LoopKind::Vectorize } else { LoopKind::Serial };
    k.for_(n, kind, |k, kk| {
        let t = term(k, kk);
        k.assign(acc, Expr::local(acc) + t);
    });
}

/// `out[.., j] = Σ_k a[.., k] * b[j, k]` (`b_transposed`) or `b[k, j]`; `a` may have any
/// number of leading dimensions.
fn product(a: &LazyTensor, b: &LazyTensor, out: &OutType, b_transposed: bool) -> Result<TensorDef, String> {
    let (Some(&kdim), &[b0, b1]) = (a.shape.last(), b.shape.as_slice()) else {
        return Err("a product needs a weight matrix".into());
    };
    let (units, bk) = if b_transposed { (b0, b1) } else { (b1, b0) };
    if bk != kdim {
        return Err("product reduction lengths differ".into());
    }
    let dtype = out.dtype;
    let (a, b, out_shape) = (a.clone(), b.clone(), out.shape.clone());
    let lead = out_shape[..out_shape.len().saturating_sub(1)].to_vec();
    if out_shape.last() != Some(&units) {
        return Err("product output shape mismatch".into());
    }
    let kind = if b_transposed { LoopKind::Vectorize } else { LoopKind::Serial };
    // Two float32 buffers: the native matrix product into a temp, then the epilogue over it.
    if let Some(def) = native_product(&a, &b, dtype, &lead, units, kdim, b_transposed) {
        return Ok(def);
    }
    Ok(TensorDef::Nest(Rc::new(move |k, sink| {
        let accs: Vec<LocalId> = (0..BLOCK).map(|_| k.local("acc", dtype)).collect();
        let full = units / BLOCK;
        for_each_index(k, &lead, LoopKind::Serial, &mut |k, li| {
            let term = |k: &KernelBuilder, j: Index, kk: Index| {
                let mut ai = li.to_vec();
                ai.push(kk.clone());
                let bi = if b_transposed { [j, kk] } else { [kk, j] };
                a.at(k, &ai).cast(dtype) * b.at(k, &bi).cast(dtype)
            };
            let at = |j: Index| {
                let mut oi = li.to_vec();
                oi.push(j);
                oi
            };
            // BLOCK outputs per pass over the reduction axis: independent accumulator chains
            // hide the add latency, and the row of `a` is read once per block.
            k.for_(full, LoopKind::Serial, |k, jb| {
                let js: Vec<Index> = (0..BLOCK).map(|u| jb.clone() * BLOCK + u).collect();
                for &acc in &accs {
                    k.assign(acc, lit(dtype, 0.0));
                }
                k.for_(kdim, kind, |k, kk| {
                    for (&acc, j) in accs.iter().zip(&js) {
                        let t = term(k, j.clone(), kk.clone());
                        k.assign(acc, Expr::local(acc) + t);
                    }
                });
                for (&acc, j) in accs.iter().zip(&js) {
                    sink(k, &at(j.clone()), Expr::local(acc));
                }
            });
            k.for_(units - full * BLOCK, LoopKind::Serial, |k, r| {
                let j = r + full * BLOCK;
                dot(k, accs[0], dtype, kdim, b_transposed, &|k, kk| term(k, j.clone(), kk));
                sink(k, &at(j), Expr::local(accs[0]));
            });
        });
    })))
}

/// `out[.., j]` from [`relay_compiler::kir::Stmt::Gemm`] when both operands are float32 and
/// `b` is a whole buffer (`a` as `[Π lead, kdim]`), the epilogue reading its result; `None`
/// for anything else, which gets loops. A computed `a` — operators FuseOps fused into the
/// anchor's data input, such as an embedding lookup — is first written to a temp, once.
/// `einsum`'s matrix-product contractions take it too (`super::einsum`).
pub(super) fn native_product(
    a: &LazyTensor,
    b: &LazyTensor,
    dtype: DType,
    lead: &[i64],
    units: i64,
    kdim: i64,
    b_transposed: bool,
) -> Option<TensorDef> {
    let floats = [a.dtype, b.dtype, dtype].iter().all(|&d| d == DType::F32);
    let (true, Some(bbuf)) = (floats, b.buffer()) else { return None };
    let rows: i64 = lead.iter().product();
    let (a, lead) = (a.clone(), lead.to_vec());
    Some(TensorDef::Nest(Rc::new(move |k, sink| {
        let abuf = match a.buffer() {
            Some(buf) => buf,
            None => {
                let data = k.temp("data", DType::F32, a.shape.iter().copied());
                for_each_index(k, &a.shape, LoopKind::Vectorize, &mut |k, idx| {
                    let v = a.at(k, idx);
                    k.store_at(data, idx, v);
                });
                data
            }
        };
        let t = k.temp("gemm", DType::F32, [rows * units]);
        k.gemm(t, abuf, bbuf, rows, units, kdim, b_transposed);
        let mut row_epilogue = |k: &mut KernelBuilder, li: &[Index]| {
            let row = li.iter().zip(&lead).fold(Index::Const(0), |acc, (i, &d)| acc * d + i.clone());
            k.for_(units, LoopKind::Vectorize, |k, j| {
                let v = k.load(t, &[row.clone() * units + j.clone()]);
                let mut at = li.to_vec();
                at.push(j);
                sink(k, &at, v);
            });
        };
        if rows == 1 {
            // One row (a layer on one vector): no loops of extent 1 around the epilogue.
            row_epilogue(k, &vec![Index::Const(0); lead.len()]);
        } else {
            for_each_index(k, &lead, LoopKind::Serial, &mut row_epilogue);
        }
    })))
}

/// `nn.matmul`: the item's `COMPUTE`.
pub(crate) fn matmul(inputs: &[ComputeInput], at: &MatmulAttrs, out: &OutType) -> Result<TensorDef, String> {
    let [a, b] = tensors(inputs)?;
    if at.transpose_a {
        return Err("transposed matmul data runs in the reference kernel".into());
    }
    product(a, b, out, at.transpose_b)
}

/// `nn.batch_matmul`: the item's `COMPUTE`.
pub(crate) fn batch_matmul(
    inputs: &[ComputeInput],
    at: &BatchMatmulAttrs,
    out: &OutType,
) -> Result<TensorDef, String> {
    let [x, y] = tensors(inputs)?;
    let (&[_, xm, xk], &[_, _, _], &[ob, om, on]) =
        (x.shape.as_slice(), y.shape.as_slice(), out.shape.as_slice())
    else {
        return Err("batch_matmul takes rank-3 tensors".into());
    };
    let kdim = if at.transpose_a { xm } else { xk };
    let (ta, tb, dtype) = (at.transpose_a, at.transpose_b, out.dtype);
    // Untransposed data against one matrix (a batch of one, or `y` broadcast over the batch):
    // all of `x`'s rows times that matrix, one product.
    if let (false, &[xb, _, _], [1, _, _]) = (ta, x.shape.as_slice(), y.shape.as_slice()) {
        if xb == ob {
            if let Some(def) = native_product(x, y, dtype, &[ob, om], on, kdim, tb) {
                return Ok(def);
            }
        }
    }
    let (x, y) = (x.clone(), y.clone());
    Ok(TensorDef::Nest(Rc::new(move |k, sink| {
        let acc = k.local("acc", dtype);
        k.for_(ob, LoopKind::Serial, |k, bi| {
            k.for_(om, LoopKind::Serial, |k, i| {
                k.for_(on, LoopKind::Serial, |k, j| {
                    dot(k, acc, dtype, kdim, !ta && tb, &|k, kk| {
                        let xi = if ta {
                            [bi.clone(), kk.clone(), i.clone()]
                        } else {
                            [bi.clone(), i.clone(), kk.clone()]
                        };
                        let yi = if tb { [bi.clone(), j.clone(), kk] } else { [bi.clone(), kk, j.clone()] };
                        x.at_broadcast(k, &xi).cast(dtype) * y.at_broadcast(k, &yi).cast(dtype)
                    });
                    sink(k, &[bi.clone(), i.clone(), j], Expr::local(acc));
                });
            });
        });
    })))
}

/// `nn.bias_add`: the item's `COMPUTE`.
pub(crate) fn bias_add(inputs: &[ComputeInput], a: &BiasAddAttrs, _: &OutType) -> Result<TensorDef, String> {
    let [x, b] = tensors(inputs)?;
    let axis = norm_axis(a.axis, x.shape.len())?;
    let (x, b) = (x.clone(), b.clone());
    Ok(lazy(move |k, idx| x.at(k, idx) + b.at(k, &[idx[axis].clone()])))
}

/// `nn.softmax` (`log`: `nn.log_softmax`; `exp` = `fast_exp`: `nn.fast_softmax`, TVM's
/// softmax with `fast_exp`) along `a.axis`, `exp(dtype, x)` the exponential: the items'
/// `COMPUTE`.
pub(crate) fn softmax(
    inputs: &[ComputeInput],
    a: &SoftmaxAttrs,
    _: &OutType,
    log: bool,
    exp: fn(DType, Expr) -> Expr,
) -> Result<TensorDef, String> {
    let [x] = tensors(inputs)?;
    let axis = norm_axis(a.axis, x.shape.len())?;
    let n = x.shape[axis];
    if n == 0 {
        return Err("softmax over an empty axis runs in the reference kernel".into());
    }
    let x = x.clone();
    let dtype = x.dtype;
    let mut outer = x.shape.clone();
    outer.remove(axis);
    let contiguous = axis + 1 == x.shape.len();
    Ok(TensorDef::Nest(Rc::new(move |k, sink| {
        let (mx, sum) = (k.local("max", dtype), k.local("sum", dtype));
        for_each_index(k, &outer, LoopKind::Serial, &mut |k, oi| {
            let at = |j: Index| {
                let mut v = oi.to_vec();
                v.insert(axis, j);
                v
            };
            let first = x.at(k, &at(Index::Const(0)));
            k.assign(mx, first);
            k.for_(n, LoopKind::Serial, |k, j| {
                let v = x.at(k, &at(j));
                k.assign(mx, Expr::select(v.clone().gt(Expr::local(mx)), v, Expr::local(mx)));
            });
            k.assign(sum, lit(dtype, 0.0));
            let kind = if contiguous { LoopKind::Vectorize } else { LoopKind::Serial };
            k.for_(n, kind, |k, j| {
                let e = exp(dtype, x.at(k, &at(j)) - Expr::local(mx));
                k.assign(sum, Expr::local(sum) + e);
            });
            k.for_(n, kind, |k, j| {
                let d = x.at(k, &at(j.clone())) - Expr::local(mx);
                let v = if log { d - Expr::local(sum).log() } else { exp(dtype, d) / Expr::local(sum) };
                sink(k, &at(j), v);
            });
        });
    })))
}

/// `[top, left]` padding from 1, 2 or 4 values.
pub(super) fn top_left(p: &[i64]) -> Result<(i64, i64), String> {
    match *p {
        [a] => Ok((a, a)),
        [a, b] | [a, b, _, _] => Ok((a, b)),
        _ => Err("padding takes 1, 2 or 4 values".into()),
    }
}

/// `nn.conv2d`: the item's `COMPUTE`.
pub(crate) fn conv2d(inputs: &[ComputeInput], a: &Conv2dAttrs, out: &OutType) -> Result<TensorDef, String> {
    let [x, w] = tensors(inputs)?;
    if a.data_layout != "NCHW"
        || a.kernel_layout != "OIHW"
        || !(a.out_layout.is_empty() || a.out_layout == "NCHW")
    {
        return Err("only NCHW/OIHW convolutions are fused".into());
    }
    let (&[_, c, h, wd], &[_, cpg, kh, kw], &[on, oc, oh, ow]) =
        (x.shape.as_slice(), w.shape.as_slice(), out.shape.as_slice())
    else {
        return Err("conv2d takes rank-4 tensors".into());
    };
    let (pt, pl) = top_left(&a.padding)?;
    let (sh, sw) = pair(&a.strides)?;
    let (dh, dw) = pair(&a.dilation)?;
    if h == 0 || wd == 0 || a.groups <= 0 || oc % a.groups != 0 || c != cpg * a.groups {
        return Err("this convolution runs in the reference kernel".into());
    }
    let geometry = Geometry { c, h, wd, kh, kw, oh, ow, pt, pl, sh, sw, dh, dw };
    if let (1, Some(def)) = (a.groups, super::im2col::im2col_product(x, w, out.dtype, [on, oc], geometry)) {
        return Ok(def);
    }
    direct_conv(x, w, out.dtype, [on, oc, a.groups], geometry)
}

/// `(x - mean) / sqrt(var + eps) * gamma + beta` over `axis`: a pass for the mean, one for
/// the (population) variance, one for the output.
pub(crate) fn layer_norm(
    inputs: &[ComputeInput],
    a: &LayerNormAttrs,
    _: &OutType,
) -> Result<TensorDef, String> {
    let [x, gamma, beta] = tensors(inputs)?;
    let axis = norm_axis(a.axis, x.shape.len())?;
    let n = x.shape[axis];
    if n == 0 {
        return Err("layer_norm over an empty axis runs in the reference kernel".into());
    }
    let (x, gamma, beta, dtype) = (x.clone(), gamma.clone(), beta.clone(), x.dtype);
    let a = a.clone();
    let mut outer = x.shape.clone();
    outer.remove(axis);
    let kind = if axis + 1 == x.shape.len() { LoopKind::Vectorize } else { LoopKind::Serial };
    Ok(TensorDef::Nest(Rc::new(move |k, sink| {
        let (mean, var) = (k.local("mean", dtype), k.local("var", dtype));
        for_each_index(k, &outer, LoopKind::Serial, &mut |k, oi| {
            let at = |j: Index| {
                let mut v = oi.to_vec();
                v.insert(axis, j);
                v
            };
            k.assign(mean, lit(dtype, 0.0));
            k.for_(n, kind, |k, j| {
                let v = x.at(k, &at(j));
                k.assign(mean, Expr::local(mean) + v);
            });
            k.assign(mean, Expr::local(mean) / lit(dtype, n as f64));
            k.assign(var, lit(dtype, 0.0));
            k.for_(n, kind, |k, j| {
                let d = x.at(k, &at(j)) - Expr::local(mean);
                k.assign(var, Expr::local(var) + d.clone() * d);
            });
            k.assign(var, Expr::local(var) / lit(dtype, n as f64));
            k.for_(n, kind, |k, j| {
                let mut y = (x.at(k, &at(j.clone())) - Expr::local(mean))
                    / (Expr::local(var) + lit(dtype, a.epsilon)).sqrt();
                if a.scale {
                    y = y * gamma.at(k, std::slice::from_ref(&j));
                }
                if a.center {
                    y = y + beta.at(k, std::slice::from_ref(&j));
                }
                sink(k, &at(j), y);
            });
        });
    })))
}
