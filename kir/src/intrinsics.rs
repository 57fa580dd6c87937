//! Intrinsic statements as the loops they stand for.
//!
//! [`Stmt::Gemm`] and [`Stmt::DepthwiseConv2d`] are one statement each so that a backend can
//! call a native routine for them (wider vectors than its own code generator has); everything else — the interpreter, the bounds
//! proof, the OpenCL backend — works on the equivalent loops, so the intrinsic adds no
//! semantics of its own.

use super::{
    inside, DepthwiseWindow, Expr, Index, Kernel, LocalDecl, LocalId, LoopKind, Stmt, VarDecl, VarId,
};
use relay_devices::DType;

impl Kernel {
    /// Whether the body holds an intrinsic statement.
    pub fn has_intrinsics(&self) -> bool {
        fn any(body: &[Stmt]) -> bool {
            body.iter().any(|s| match s {
                Stmt::Gemm { .. } | Stmt::DepthwiseConv2d { .. } => true,
                Stmt::For { body, .. } => any(body),
                Stmt::If { then, otherwise, .. } => any(then) || any(otherwise),
                Stmt::Store { .. } | Stmt::Assign { .. } => false,
            })
        }
        any(&self.body)
    }

    /// The kernel with every intrinsic statement replaced by its loops (new loop variables and
    /// locals are appended to the tables). A kernel without intrinsics comes back unchanged.
    pub fn expand_intrinsics(&self) -> Kernel {
        let mut k = self.clone();
        if self.has_intrinsics() {
            let body = std::mem::take(&mut k.body);
            k.body = expand(&mut k, body);
        }
        k
    }
}

fn expand(k: &mut Kernel, body: Vec<Stmt>) -> Vec<Stmt> {
    let mut expanded = Vec::with_capacity(body.len());
    for s in body {
        match s {
            Stmt::Gemm { out, a, b, m, n, k: depth, trans_b } => {
                expanded.push(gemm_loops(k, [out, a, b], [m, n, depth], trans_b))
            }
            Stmt::DepthwiseConv2d { out, data, weight, window } => {
                expanded.extend(depthwise_loops(k, [out, data, weight], &window))
            }
            Stmt::For { var, extent, kind, body } => {
                expanded.push(Stmt::For { var, extent, kind, body: expand(k, body) })
            }
            Stmt::If { cond, then, otherwise } => {
                expanded.push(Stmt::If { cond, then: expand(k, then), otherwise: expand(k, otherwise) })
            }
            other => expanded.push(other),
        }
    }
    expanded
}

/// A new loop variable of `kernel`.
fn new_var(kernel: &mut Kernel, name: &str) -> VarId {
    kernel.vars.push(VarDecl { name: name.to_string() });
    VarId(kernel.vars.len() as u32 - 1)
}

/// `out = 0`, then one loop nest per window tap `(ky, kx)` adding `data · weight` to the
/// outputs whose input lies inside the image (ranges known now, as [`inside`] gives them),
/// over every plane: [`Stmt::DepthwiseConv2d`]'s sums, each in order of its taps.
fn depthwise_loops(
    kernel: &mut Kernel,
    [out, data, weight]: [super::BufferId; 3],
    g: &DepthwiseWindow,
) -> Vec<Stmt> {
    let ([h, w], [oh, ow], [kh, kw]) = (g.input, g.output, g.kernel);
    let ([sh, sw], [dh, dw], [pt, pl]) = (g.strides, g.dilation, g.padding);
    let planes = g.images * g.channels;
    let zero = new_var(kernel, "dw_i");
    let mut body = vec![Stmt::For {
        var: zero,
        extent: Index::Const(planes * oh * ow),
        kind: LoopKind::Vectorize,
        body: vec![Stmt::Store { buf: out, index: Index::Var(zero), value: Expr::f32(0.0) }],
    }];
    for ky in 0..kh {
        for kx in 0..kw {
            let (oy, ox) = (pt - ky * dh, pl - kx * dw);
            let ((y0, y1), (x0, x1)) = (inside(oh, sh, oy, h), inside(ow, sw, ox, w));
            if y0 >= y1 || x0 >= x1 {
                continue;
            }
            let [n, c, y, x] = ["dw_n", "dw_c", "dw_y", "dw_x"].map(|name| new_var(kernel, name));
            let plane = Index::Var(n) * g.channels + Index::Var(c);
            let (yy, xx) = (Index::Var(y) + y0, Index::Var(x) + x0);
            let at = (plane.clone() * oh + yy.clone()) * ow + xx.clone();
            let input = (plane * h + yy * sh - oy) * w + xx * sw - ox;
            let tap = (Index::Var(c) * kh + ky) * kw + kx;
            let sum = Expr::load(out, at.clone()) + Expr::load(data, input) * Expr::load(weight, tap);
            let mut nest = Stmt::For {
                var: x,
                extent: Index::Const(x1 - x0),
                kind: LoopKind::Vectorize,
                body: vec![Stmt::Store { buf: out, index: at, value: sum }],
            };
            for (var, extent) in [(y, y1 - y0), (c, g.channels), (n, g.images)] {
                nest =
                    Stmt::For { var, extent: Index::Const(extent), kind: LoopKind::Serial, body: vec![nest] };
            }
            body.push(nest);
        }
    }
    body
}

/// `for i in 0..m { for j in 0..n { acc = 0; for p in 0..k { acc = acc + a[i*k + p] * b(j, p) };
/// out[i*n + j] = acc } }`, with `b(j, p)` as [`Stmt::Gemm`] defines it.
fn gemm_loops(
    kernel: &mut Kernel,
    [out, a, b]: [super::BufferId; 3],
    [m, n, k]: [i64; 3],
    trans_b: bool,
) -> Stmt {
    let [iv, jv, pv] = ["gemm_i", "gemm_j", "gemm_p"].map(|name| new_var(kernel, name));
    kernel.locals.push(LocalDecl { name: "gemm_acc".to_string(), dtype: DType::F32 });
    let acc = LocalId(kernel.locals.len() as u32 - 1);
    let (i, j, p) = (Index::Var(iv), Index::Var(jv), Index::Var(pv));
    let b_at = if trans_b { j.clone() * k + p.clone() } else { p.clone() * n + j.clone() };
    let product = Expr::load(a, i.clone() * k + p) * Expr::load(b, b_at);
    // The reduction is contiguous (vectorisable) in both operands only when `b` is `[n, k]`.
    let kind = if trans_b { LoopKind::Vectorize } else { LoopKind::Serial };
    let row = Stmt::For {
        var: jv,
        extent: Index::Const(n),
        kind: LoopKind::Serial,
        body: vec![
            Stmt::Assign { local: acc, value: Expr::f32(0.0) },
            Stmt::For {
                var: pv,
                extent: Index::Const(k),
                kind,
                body: vec![Stmt::Assign { local: acc, value: Expr::local(acc) + product }],
            },
            Stmt::Store { buf: out, index: i * n + j, value: Expr::local(acc) },
        ],
    };
    Stmt::For { var: iv, extent: Index::Const(m), kind: LoopKind::Serial, body: vec![row] }
}

#[cfg(test)]
mod tests {
    use super::super::{check_bounds, interp, BoundsError, KernelBuilder, VerifyError};
    use super::*;
    use relay_devices::Tensor;

    /// `out = relu(a · b + 1)` through a temp, as the dense rule builds it; `b` has `b_len`
    /// elements (`n · k` when well formed).
    fn product(m: i64, n: i64, k: i64, trans_b: bool, b_len: i64) -> Kernel {
        let mut kb = KernelBuilder::new("dense");
        let a = kb.input("a", DType::F32, [m, k]);
        let b = kb.input("b", DType::F32, [b_len]);
        let out = kb.output("out", DType::F32, [m * n]);
        let t = kb.temp("t", DType::F32, [m * n]);
        kb.gemm(t, a, b, m, n, k, trans_b);
        kb.for_(m * n, LoopKind::Vectorize, |kb, i| {
            let v = kb.load(t, std::slice::from_ref(&i)) + Expr::f32(1.0);
            kb.store(out, i, v.max(Expr::f32(0.0)));
        });
        kb.finish().unwrap()
    }

    fn run(k: &Kernel, a: &Tensor, b: &Tensor, len: usize) -> Vec<f32> {
        let mut out = [Tensor::zeros(DType::F32, vec![len]).unwrap()];
        interp::run(k, &[a, b], &mut out, &[]).unwrap();
        let [out] = out;
        out.into_vec::<f32>().unwrap()
    }

    #[test]
    fn gemm_means_its_loops_and_survives_serialization() {
        for (m, n, k, trans_b) in
            [(1usize, 5usize, 7usize, true), (3, 4, 5, true), (3, 4, 5, false), (2, 3, 1, false)]
        {
            let kernel = product(m as i64, n as i64, k as i64, trans_b, (n * k) as i64);
            let av: Vec<f32> = (0..m * k).map(|i| 1.0 - i as f32 / 3.0).collect();
            let bv: Vec<f32> = (0..n * k).map(|i| i as f32 / 10.0 - 1.5).collect();
            let want: Vec<f32> = (0..m * n)
                .map(|o| {
                    let (i, j) = (o / n, o % n);
                    let dot: f32 = (0..k)
                        .map(|p| av[i * k + p] * if trans_b { bv[j * k + p] } else { bv[p * n + j] })
                        .sum();
                    (dot + 1.0).max(0.0)
                })
                .collect();
            let close =
                |got: &[f32]| got.iter().zip(&want).all(|(g, e)| (g - e).abs() <= 1e-5 * e.abs().max(1.0));
            let a = Tensor::from_vec(vec![m, k], av.clone()).unwrap();
            let b = Tensor::from_vec(vec![n * k], bv.clone()).unwrap();
            assert!(close(&run(&kernel, &a, &b, m * n)), "{m}x{n}x{k} {trans_b}");
            let expanded = kernel.expand_intrinsics();
            assert!(kernel.has_intrinsics() && !expanded.has_intrinsics());
            assert!(close(&run(&expanded, &a, &b, m * n)), "expanded {m}x{n}x{k} {trans_b}");
            let back = Kernel::from_bytes(&kernel.to_bytes()).unwrap();
            assert_eq!(back, kernel);
            assert_ne!(kernel.structural_key(), expanded.structural_key());
            let flipped = product(m as i64, n as i64, k as i64, !trans_b, (n * k) as i64);
            assert_ne!(kernel.structural_key(), flipped.structural_key());
        }
        let shown = product(3, 4, 5, true, 20).to_string();
        assert!(shown.contains("gemm(t, a, b, m=3, n=4, k=5, trans_b=true);"), "{shown}");
    }

    /// A depthwise convolution over `[images, channels, 9, 11]` images into `out` through
    /// the statement alone.
    fn depthwise(window: DepthwiseWindow) -> Kernel {
        let [out_len, data_len, weight_len] = window.lens().unwrap();
        let mut kb = KernelBuilder::new("depthwise");
        let data = kb.input("data", DType::F32, [data_len]);
        let weight = kb.input("weight", DType::F32, [weight_len]);
        let out = kb.output("out", DType::F32, [out_len]);
        kb.depthwise_conv2d(out, data, weight, window);
        kb.finish().unwrap()
    }

    #[test]
    fn depthwise_conv2d_means_its_loops_and_survives_serialization() {
        for (s, d, p) in [(1, 1, 1), (2, 1, 1), (1, 2, 0), (3, 1, 2)] {
            let ([h, w], k) = ([9i64, 11i64], 3);
            let size = |len: i64| (len + 2 * p - d * (k - 1) - 1) / s + 1;
            let window = DepthwiseWindow {
                images: 2,
                channels: 3,
                input: [h, w],
                output: [size(h), size(w)],
                kernel: [k, k],
                strides: [s, s],
                dilation: [d, d],
                padding: [p, p],
            };
            let [out_len, data_len, weight_len] = window.lens().unwrap().map(|v| v as usize);
            let dv: Vec<f32> = (0..data_len).map(|i| (i % 13) as f32 / 6.0 - 1.0).collect();
            let wv: Vec<f32> = (0..weight_len).map(|i| (i % 7) as f32 / 3.0 - 1.0).collect();
            // The definition, output by output.
            let mut want = vec![];
            for plane in 0..6 {
                for y in 0..size(h) {
                    for x in 0..size(w) {
                        let mut acc = 0f32;
                        for ky in 0..k {
                            for kx in 0..k {
                                let (iy, ix) = (y * s - p + ky * d, x * s - p + kx * d);
                                if (0..h).contains(&iy) && (0..w).contains(&ix) {
                                    acc += dv[((plane * h + iy) * w + ix) as usize]
                                        * wv[(((plane % 3) * k + ky) * k + kx) as usize];
                                }
                            }
                        }
                        want.push(acc);
                    }
                }
            }
            let close =
                |got: &[f32]| got.iter().zip(&want).all(|(g, e)| (g - e).abs() <= 1e-5 * e.abs().max(1.0));
            let kernel = depthwise(window);
            let a = Tensor::from_vec(vec![data_len], dv).unwrap();
            let b = Tensor::from_vec(vec![weight_len], wv).unwrap();
            assert!(close(&run(&kernel, &a, &b, out_len)), "{window:?}");
            let expanded = kernel.expand_intrinsics();
            assert!(kernel.has_intrinsics() && !expanded.has_intrinsics());
            check_bounds(&expanded, &[]).unwrap();
            assert!(close(&run(&expanded, &a, &b, out_len)), "expanded {window:?}");
            let back = Kernel::from_bytes(&kernel.to_bytes()).unwrap();
            assert_eq!(back, kernel);
            assert_ne!(kernel.structural_key(), expanded.structural_key());
            let wider = depthwise(DepthwiseWindow { padding: [p + 1, p + 1], ..window });
            assert_ne!(kernel.structural_key(), wider.structural_key());
        }
        let shown = depthwise(DepthwiseWindow {
            images: 1,
            channels: 1,
            input: [4, 4],
            output: [4, 4],
            kernel: [3, 3],
            strides: [1, 1],
            dilation: [1, 1],
            padding: [1, 1],
        })
        .to_string();
        assert!(shown.contains("depthwise_conv2d(out, data, weight, images=1, channels=1"), "{shown}");
    }

    #[test]
    fn depthwise_conv2d_is_checked_like_the_loops_it_stands_for() {
        let window = DepthwiseWindow {
            images: 1,
            channels: 2,
            input: [5, 5],
            output: [5, 5],
            kernel: [3, 3],
            strides: [1, 1],
            dilation: [1, 1],
            padding: [1, 1],
        };
        // A zero stride: refused by the verifier.
        let mut kb = KernelBuilder::new("bad");
        let data = kb.input("data", DType::F32, [50]);
        let weight = kb.input("weight", DType::F32, [18]);
        let out = kb.output("out", DType::F32, [50]);
        kb.depthwise_conv2d(out, data, weight, DepthwiseWindow { strides: [0, 1], ..window });
        assert!(matches!(kb.finish(), Err(VerifyError::BadDepthwise(_))));
        // Images one element short: refused by the bounds proof.
        let mut kb = KernelBuilder::new("short");
        let data = kb.input("data", DType::F32, [49]);
        let weight = kb.input("weight", DType::F32, [18]);
        let out = kb.output("out", DType::F32, [50]);
        kb.depthwise_conv2d(out, data, weight, window);
        let kernel = kb.finish().unwrap();
        assert!(matches!(check_bounds(&kernel, &[]), Err(BoundsError::OutOfBounds { .. })));
    }

    #[test]
    fn gemm_is_checked_like_the_loops_it_stands_for() {
        // A right operand with fewer elements than the product reads: the bounds proof
        // rejects it, in either layout.
        for trans_b in [true, false] {
            assert!(matches!(
                check_bounds(&product(2, 4, 3, trans_b, 11), &[]),
                Err(BoundsError::OutOfBounds { .. })
            ));
            assert!(check_bounds(&product(2, 4, 3, trans_b, 12), &[]).is_ok());
        }
        let mut bad = product(2, 4, 3, true, 12);
        if let Some(Stmt::Gemm { m, .. }) = bad.body.first_mut() {
            *m = -1;
        }
        assert!(matches!(bad.verify(), Err(VerifyError::BadGemm(_))));
        let mut aliased = product(2, 4, 3, true, 12);
        if let Some(Stmt::Gemm { out, a, .. }) = aliased.body.first_mut() {
            *out = *a;
        }
        assert!(aliased.verify().is_err());
    }
}
