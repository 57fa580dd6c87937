//! Intrinsic statements as the loops they stand for.
//!
//! [`Stmt::Gemm`] is one statement so that a backend can call a native routine for it (wider
//! vectors than its own code generator has); everything else — the interpreter, the bounds
//! proof, the OpenCL backend — works on the equivalent loops, so the intrinsic adds no
//! semantics of its own.

use super::{Expr, Index, Kernel, LocalDecl, LocalId, LoopKind, Stmt, VarDecl, VarId};
use relay_devices::DType;

impl Kernel {
    /// Whether the body holds an intrinsic statement.
    pub fn has_intrinsics(&self) -> bool {
        fn any(body: &[Stmt]) -> bool {
            body.iter().any(|s| match s {
                Stmt::Gemm { .. } => true,
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
    body.into_iter()
        .map(|s| match s {
            Stmt::Gemm { out, a, b, b_offset, b_rows, m, n, k: depth, trans_b } => {
                gemm_loops(k, [out, a, b], (b_offset, &b_rows), [m, n, depth], trans_b)
            }
            Stmt::For { var, extent, kind, body } => Stmt::For { var, extent, kind, body: expand(k, body) },
            Stmt::If { cond, then, otherwise } => {
                Stmt::If { cond, then: expand(k, then), otherwise: expand(k, otherwise) }
            }
            other => other,
        })
        .collect()
}

/// `for o in 0..m*n { acc = 0; for p in 0..k { acc = acc + a[(o / n)*k + p] * b(o % n, p) };
/// out[o] = acc }`, with `b(j, p)` as [`Stmt::Gemm`] defines it: one flat loop over the
/// outputs, each iteration independent, so that a backend which runs a top-level loop's
/// iterations in parallel (OpenCL: one work-item each) spreads even a one-row product (a
/// batch-1 `nn.dense`) over its `n` outputs instead of running it in one work-item.
fn gemm_loops(
    kernel: &mut Kernel,
    [out, a, b]: [super::BufferId; 3],
    (b_offset, b_rows): (Index, &super::RowOffsets),
    [m, n, k]: [i64; 3],
    trans_b: bool,
) -> Stmt {
    let mut var = |name: &str| {
        kernel.vars.push(VarDecl { name: name.to_string() });
        VarId(kernel.vars.len() as u32 - 1)
    };
    let (ov, pv) = (var("gemm_o"), var("gemm_p"));
    kernel.locals.push(LocalDecl { name: "gemm_acc".to_string(), dtype: DType::F32 });
    let acc = LocalId(kernel.locals.len() as u32 - 1);
    let (o, p) = (Index::Var(ov), Index::Var(pv));
    let (i, j) = (o.clone().floor_div(n), o.clone().floor_mod(n));
    let b_at = b_offset + if trans_b { b_rows.offset(j) + p.clone() } else { b_rows.offset(p.clone()) + j };
    let product = Expr::load(a, i * k + p) * Expr::load(b, b_at);
    // The reduction is contiguous (vectorisable) in both operands only when `b` is `[n, k]`.
    let kind = if trans_b { LoopKind::Vectorize } else { LoopKind::Serial };
    Stmt::For {
        var: ov,
        extent: Index::Const(m * n),
        kind: LoopKind::Serial,
        body: vec![
            Stmt::Assign { local: acc, value: Expr::f32(0.0) },
            Stmt::For {
                var: pv,
                extent: Index::Const(k),
                kind,
                body: vec![Stmt::Assign { local: acc, value: Expr::local(acc) + product }],
            },
            Stmt::Store { buf: out, index: o, value: Expr::local(acc) },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::super::{check_bounds, interp, BoundsError, KernelBuilder, RowOffsets, VerifyError};
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

    /// `out = a · b[.., c0 + t·cols ..][..cols]` for each tile `t` of `cols` columns of the
    /// `[k, width]` matrix `b`, each tile's product written to its columns of `out` (as the
    /// tiled convolution reads its data): `b_offset` depends on the tile loop's variable.
    fn tiled(m: i64, k: i64, width: i64, cols: i64, c0: i64, tiles: i64) -> Kernel {
        let mut kb = KernelBuilder::new("tiled");
        let a = kb.input("a", DType::F32, [m, k]);
        let b = kb.input("b", DType::F32, [k, width]);
        let out = kb.output("out", DType::F32, [m, tiles * cols]);
        let t = kb.temp("t", DType::F32, [m * cols]);
        kb.for_(tiles, LoopKind::Serial, |kb, tile| {
            kb.gemm_block(t, a, (b, tile.clone() * cols + c0, RowOffsets::uniform(k, width)), m, cols, k);
            kb.for_(m, LoopKind::Serial, |kb, i| {
                kb.for_(cols, LoopKind::Vectorize, |kb, j| {
                    let v = kb.load(t, &[i.clone() * cols + j.clone()]);
                    kb.store(out, i.clone() * (tiles * cols) + tile.clone() * cols + j, v);
                });
            });
        });
        kb.finish().unwrap()
    }

    #[test]
    fn gemm_reads_a_block_of_b_like_its_loops() {
        let (m, k, width, cols, c0, tiles) = (3usize, 4usize, 11usize, 3usize, 1usize, 3usize);
        let kernel = tiled(m as i64, k as i64, width as i64, cols as i64, c0 as i64, tiles as i64);
        let av: Vec<f32> = (0..m * k).map(|i| 1.0 - i as f32 / 3.0).collect();
        let bv: Vec<f32> = (0..k * width).map(|i| i as f32 / 10.0 - 1.5).collect();
        let a = Tensor::from_vec(vec![m, k], av.clone()).unwrap();
        let b = Tensor::from_vec(vec![k, width], bv.clone()).unwrap();
        let n = tiles * cols;
        let want: Vec<f32> = (0..m * n)
            .map(|o| (0..k).map(|p| av[(o / n) * k + p] * bv[p * width + c0 + o % n]).sum())
            .collect();
        let close =
            |got: &[f32]| got.iter().zip(&want).all(|(g, e)| (g - e).abs() <= 1e-5 * e.abs().max(1.0));
        let run = |k: &Kernel| {
            let mut out = [Tensor::zeros(DType::F32, vec![m, n]).unwrap()];
            interp::run(k, &[&a, &b], &mut out, &[]).unwrap();
            let [out] = out;
            out.into_vec::<f32>().unwrap()
        };
        assert!(close(&run(&kernel)));
        assert!(close(&run(&kernel.expand_intrinsics())));
        assert_eq!(Kernel::from_bytes(&kernel.to_bytes()).unwrap(), kernel);
        let other = tiled(m as i64, k as i64, width as i64, cols as i64, 0, tiles as i64);
        assert_ne!(kernel.structural_key(), other.structural_key());
        assert!(kernel.to_string().contains("ldb=11"), "{kernel}");
        assert!(check_bounds(&kernel, &[]).is_ok());
        // One tile more reads past the last column of `b`'s last row: refused.
        let past = tiled(m as i64, k as i64, width as i64, cols as i64, c0 as i64, tiles as i64 + 1);
        assert!(matches!(check_bounds(&past, &[]), Err(BoundsError::OutOfBounds { .. })));
        // Fewer rows of `b` than the reduction's length: malformed.
        let mut short = kernel.clone();
        if let Some(Stmt::For { body, .. }) = short.body.first_mut() {
            if let Some(Stmt::Gemm { b_rows, .. }) = body.first_mut() {
                *b_rows = RowOffsets::uniform(k as i64 - 1, width as i64);
            }
        }
        assert!(matches!(short.verify(), Err(VerifyError::BadGemm(_))));
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

    /// A 3×3 stride-1 convolution of a `[c, hp, wp]` padded image read in place ("window"
    /// rows): `out[o, y·wp + x] = Σ w[o, (ic, ky, kx)] · img[ic, y + ky, x + kx]` over the
    /// `n = (oh − 1)·wp + ow` wide positions, starting `shift` elements into the image buffer.
    fn window(oc: i64, c: i64, [hp, wp]: [i64; 2], shift: i64, img_len: i64) -> Kernel {
        let (oh, ow) = (hp - 2, wp - 2);
        let n = (oh - 1) * wp + ow;
        let mut kb = KernelBuilder::new("window");
        let w = kb.input("w", DType::F32, [oc, c * 9]);
        let img = kb.input("img", DType::F32, [img_len]);
        let out = kb.output("out", DType::F32, [oc * n]);
        let rows = RowOffsets::new(vec![(c, hp * wp), (3, wp), (3, 1)]);
        kb.gemm_block(out, w, (img, Index::Const(shift), rows), oc, n, c * 9);
        kb.finish().unwrap()
    }

    #[test]
    fn window_gemm_reads_shifted_rows_like_its_loops() {
        let (oc, c, hp, wp, shift) = (3usize, 2usize, 5usize, 6usize, 1usize);
        let (oh, ow) = (hp - 2, wp - 2);
        let n = (oh - 1) * wp + ow;
        let len = shift + c * hp * wp;
        let kernel = window(oc as i64, c as i64, [hp as i64, wp as i64], shift as i64, len as i64);
        let wv: Vec<f32> = (0..oc * c * 9).map(|i| 1.0 - (i % 7) as f32 / 3.0).collect();
        let iv: Vec<f32> = (0..len).map(|i| (i % 11) as f32 / 10.0 - 0.5).collect();
        let want: Vec<f32> = (0..oc * n)
            .map(|e| {
                let (o, j) = (e / n, e % n);
                let (y, x) = (j / wp, j % wp);
                (0..c * 9)
                    .map(|p| {
                        let (ic, ky, kx) = (p / 9, p / 3 % 3, p % 3);
                        wv[o * c * 9 + p] * iv[shift + ic * hp * wp + (y + ky) * wp + x + kx]
                    })
                    .sum()
            })
            .collect();
        let close =
            |got: &[f32]| got.iter().zip(&want).all(|(g, e)| (g - e).abs() <= 1e-5 * e.abs().max(1.0));
        let w = Tensor::from_vec(vec![oc, c * 9], wv).unwrap();
        let img = Tensor::from_vec(vec![len], iv).unwrap();
        assert!(close(&run(&kernel, &w, &img, oc * n)));
        assert!(close(&run(&kernel.expand_intrinsics(), &w, &img, oc * n)));
        assert_eq!(Kernel::from_bytes(&kernel.to_bytes()).unwrap(), kernel);
        let shown = kernel.to_string();
        assert!(shown.contains("rows=[(2, 30), (3, 6), (3, 1)]"), "{shown}");
        assert!(check_bounds(&kernel, &[]).is_ok());
        // The same windows one element later read one past the image: refused.
        let past = window(oc as i64, c as i64, [hp as i64, wp as i64], shift as i64 + 1, len as i64);
        assert!(matches!(check_bounds(&past, &[]), Err(BoundsError::OutOfBounds { .. })));
        assert_ne!(past.structural_key(), kernel.structural_key());
        // Window rows are a `[k, n]` form: with `trans_b` they are malformed.
        let mut transposed = kernel.clone();
        if let Some(Stmt::Gemm { trans_b, .. }) = transposed.body.first_mut() {
            *trans_b = true;
        }
        assert!(matches!(transposed.verify(), Err(VerifyError::BadGemm(_))));
    }
}
