//! Kernel builders shared by the Cranelift and OpenCL tests and the `elementwise` bench, so
//! both backends are checked on, and the bench measures, the same kernels.

#![allow(dead_code)] // each test binary and the bench use a different subset

use relay_devices::{DType, Tensor};
use relay_kir::{DepthwiseWindow, Expr, Extent, Kernel, KernelBuilder, LoopKind};

/// `y[i] = f(a[i], b[i], c[i])` over `n` elements.
pub fn elementwise(kind: LoopKind, f: impl Fn(Expr, Expr, Expr) -> Expr) -> Kernel {
    let mut k = KernelBuilder::new("elementwise");
    let n = k.sym("n");
    let [a, b, c] = ["a", "b", "c"].map(|name| k.input(name, DType::F32, [n]));
    let y = k.output("y", DType::F32, [n]);
    k.for_(n, kind, |k, i| {
        let [va, vb, vc] = [a, b, c].map(|buf| Expr::load(buf, i.clone()));
        k.store(y, i, f(va, vb, vc));
    });
    k.finish().unwrap()
}

/// Row softmax over `[n, cols]` (`n` a sym): three vectorised loops (max, exp-sum, scale).
pub fn softmax(cols: i64) -> Kernel {
    let mut k = KernelBuilder::new("softmax");
    let n = k.sym("n");
    let x = k.input("x", DType::F32, [Extent::Sym(n), Extent::Const(cols)]);
    let y = k.output("y", DType::F32, [Extent::Sym(n), Extent::Const(cols)]);
    let (m, s) = (k.local("m", DType::F32), k.local("s", DType::F32));
    k.for_(n, LoopKind::Parallel, |k, i| {
        k.assign(m, Expr::f32(f32::NEG_INFINITY));
        k.for_(cols, LoopKind::Vectorize, |k, j| {
            let v = Expr::local(m).max(k.load(x, &[i.clone(), j]));
            k.assign(m, v);
        });
        k.assign(s, Expr::f32(0.0));
        k.for_(cols, LoopKind::Vectorize, |k, j| {
            let e = (k.load(x, &[i.clone(), j.clone()]) - Expr::local(m)).exp();
            k.store_at(y, &[i.clone(), j], e.clone());
            k.assign(s, Expr::local(s) + e);
        });
        k.for_(cols, LoopKind::Vectorize, |k, j| {
            let idx = [i.clone(), j];
            let v = k.load(y, &idx) / Expr::local(s);
            k.store_at(y, &idx, v);
        });
    });
    k.finish().unwrap()
}

/// ReLU as compare+select (one `maxps` in vector code).
pub fn relu(x: Expr) -> Expr {
    x.max(Expr::f32(0.0))
}

/// A 1-d tensor of integer `dtype` holding `vals` (which must fit).
pub fn int_tensor(dtype: DType, vals: &[i64]) -> Tensor {
    let shape = vec![vals.len()];
    let t = match dtype {
        DType::I8 => Tensor::from_vec(shape, vals.iter().map(|&v| i8::try_from(v).unwrap()).collect()),
        DType::U8 => Tensor::from_vec(shape, vals.iter().map(|&v| u8::try_from(v).unwrap()).collect()),
        DType::I32 => Tensor::from_vec(shape, vals.iter().map(|&v| i32::try_from(v).unwrap()).collect()),
        _ => Tensor::from_vec(shape, vals.to_vec()),
    };
    t.unwrap()
}

/// `out = min(max(depthwise_conv2d(x, w) + b (+ residual), 0), 6)` over `window`: MobileNet's
/// depthwise layer, the native convolution into a temp and then the epilogue (bias, relu6,
/// and with `residual` the add of an input shaped like the output).
pub fn depthwise_layer(window: DepthwiseWindow, residual: bool) -> Kernel {
    let ([h, w], [oh, ow], [kh, kw]) = (window.input, window.output, window.kernel);
    let (n, c) = (window.images, window.channels);
    let mut kb = KernelBuilder::new("depthwise_layer");
    let x = kb.input("x", DType::F32, [n, c, h, w]);
    let wt = kb.input("w", DType::F32, [c, 1, kh, kw]);
    let b = kb.input("b", DType::F32, [c]);
    let skip = residual.then(|| kb.input("skip", DType::F32, [n * c * oh * ow]));
    let out = kb.output("out", DType::F32, [n * c * oh * ow]);
    let t = kb.temp("t", DType::F32, [n * c * oh * ow]);
    kb.depthwise_conv2d(t, x, wt, window);
    kb.for_(n * c, LoopKind::Serial, |kb, p| {
        kb.for_(oh * ow, LoopKind::Vectorize, |kb, i| {
            let flat = p.clone() * (oh * ow) + i.clone();
            let mut v = kb.load(t, std::slice::from_ref(&flat)) + kb.load(b, &[p.clone().floor_mod(c)]);
            if let Some(skip) = skip {
                v = v + kb.load(skip, std::slice::from_ref(&flat));
            }
            kb.store(out, flat, v.max(Expr::f32(0.0)).min(Expr::f32(6.0)));
        });
    });
    kb.finish().unwrap()
}

/// `out = activation(x · w + b)` for `x: [m, k_dim]`, `w: [units, k_dim]` (`trans_b`) or
/// `[k_dim, units]`: a `gemm` into a temp, then the epilogue.
pub fn dense_layer(m: i64, units: i64, k_dim: i64, trans_b: bool, activation: fn(Expr) -> Expr) -> Kernel {
    let mut kb = KernelBuilder::new("dense_layer");
    let x = kb.input("x", DType::F32, [m, k_dim]);
    let w_shape = if trans_b { [units, k_dim] } else { [k_dim, units] };
    let w = kb.input("w", DType::F32, w_shape);
    let b = kb.input("b", DType::F32, [units]);
    let out = kb.output("out", DType::F32, [m, units]);
    let t = kb.temp("t", DType::F32, [m * units]);
    kb.gemm(t, x, w, m, units, k_dim, trans_b);
    kb.for_(m, LoopKind::Serial, |kb, i| {
        kb.for_(units, LoopKind::Vectorize, |kb, j| {
            let flat = i.clone() * units + j.clone();
            let v =
                activation(kb.load(t, std::slice::from_ref(&flat)) + kb.load(b, std::slice::from_ref(&j)));
            kb.store(out, flat, v);
        });
    });
    kb.finish().unwrap()
}
