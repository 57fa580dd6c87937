//! Intrinsic statements as the loops they stand for.
//!
//! [`Stmt::Gemv`] is one statement so that a backend can call a native routine for it (wider
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
                Stmt::Gemv { .. } => true,
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
            Stmt::Gemv { out, w, x, rows, k: cols } => gemv_loops(k, out, w, x, rows, cols),
            Stmt::For { var, extent, kind, body } => Stmt::For { var, extent, kind, body: expand(k, body) },
            Stmt::If { cond, then, otherwise } => {
                Stmt::If { cond, then: expand(k, then), otherwise: expand(k, otherwise) }
            }
            other => other,
        })
        .collect()
}

/// `for i in 0..rows { acc = 0; for j in 0..k { acc = acc + w[i*k + j] * x[j] }; out[i] = acc }`.
fn gemv_loops(
    k: &mut Kernel,
    out: super::BufferId,
    w: super::BufferId,
    x: super::BufferId,
    rows: i64,
    cols: i64,
) -> Stmt {
    let var = |k: &mut Kernel, name: &str| {
        k.vars.push(VarDecl { name: name.to_string() });
        VarId(k.vars.len() as u32 - 1)
    };
    let (i, j) = (var(k, "gemv_i"), var(k, "gemv_j"));
    k.locals.push(LocalDecl { name: "gemv_acc".to_string(), dtype: DType::F32 });
    let acc = LocalId(k.locals.len() as u32 - 1);
    let product = Expr::load(w, Index::Var(i) * cols + Index::Var(j)) * Expr::load(x, Index::Var(j));
    Stmt::For {
        var: i,
        extent: Index::Const(rows),
        kind: LoopKind::Serial,
        body: vec![
            Stmt::Assign { local: acc, value: Expr::f32(0.0) },
            Stmt::For {
                var: j,
                extent: Index::Const(cols),
                kind: LoopKind::Vectorize,
                body: vec![Stmt::Assign { local: acc, value: Expr::local(acc) + product }],
            },
            Stmt::Store { buf: out, index: Index::Var(i), value: Expr::local(acc) },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::super::{check_bounds, interp, BoundsError, KernelBuilder, VerifyError};
    use super::*;
    use relay_devices::Tensor;

    /// `out = relu(w · x + 1)` through a temp, as the dense rule builds it.
    fn dense(rows: i64, k: i64, w_rows: i64) -> Kernel {
        let mut b = KernelBuilder::new("dense");
        let w = b.input("w", DType::F32, [w_rows, k]);
        let x = b.input("x", DType::F32, [k]);
        let out = b.output("out", DType::F32, [rows]);
        let t = b.temp("t", DType::F32, [rows]);
        b.gemv(t, w, x, rows, k);
        b.for_(rows, LoopKind::Vectorize, |b, i| {
            let v = b.load(t, std::slice::from_ref(&i)) + Expr::f32(1.0);
            b.store(out, i, v.max(Expr::f32(0.0)));
        });
        b.finish().unwrap()
    }

    fn run(k: &Kernel, w: &Tensor, x: &Tensor, rows: usize) -> Vec<f32> {
        let mut out = [Tensor::zeros(DType::F32, vec![rows]).unwrap()];
        interp::run(k, &[w, x], &mut out, &[]).unwrap();
        let [out] = out;
        out.into_vec::<f32>().unwrap()
    }

    #[test]
    fn gemv_means_its_loops_and_survives_serialization() {
        let (rows, k) = (5usize, 7usize);
        let k_ = dense(rows as i64, k as i64, rows as i64);
        let w =
            Tensor::from_vec(vec![rows, k], (0..rows * k).map(|i| i as f32 / 10.0 - 1.5).collect()).unwrap();
        let x = Tensor::from_vec(vec![k], (0..k).map(|i| 1.0 - i as f32 / 3.0).collect()).unwrap();
        let want: Vec<f32> = (0..rows)
            .map(|i| {
                let dot: f32 =
                    (0..k).map(|j| (((i * k + j) as f32) / 10.0 - 1.5) * (1.0 - j as f32 / 3.0)).sum();
                (dot + 1.0).max(0.0)
            })
            .collect();
        let close =
            |got: &[f32]| got.iter().zip(&want).all(|(g, e)| (g - e).abs() <= 1e-5 * e.abs().max(1.0));
        assert!(close(&run(&k_, &w, &x, rows)));
        let expanded = k_.expand_intrinsics();
        assert!(k_.has_intrinsics() && !expanded.has_intrinsics());
        assert!(close(&run(&expanded, &w, &x, rows)));
        let back = Kernel::from_bytes(&k_.to_bytes()).unwrap();
        assert_eq!(back, k_);
        assert_ne!(k_.structural_key(), expanded.structural_key());
        assert!(k_.to_string().contains("gemv(t, w, x, rows=5, k=7);"), "{k_}");
    }

    #[test]
    fn gemv_is_checked_like_the_loops_it_stands_for() {
        // A matrix with fewer rows than the product reads: the bounds proof rejects it.
        assert!(matches!(check_bounds(&dense(4, 3, 3), &[]), Err(BoundsError::OutOfBounds { .. })));
        assert!(check_bounds(&dense(4, 3, 4), &[]).is_ok());
        let mut bad = dense(4, 3, 4);
        if let Some(Stmt::Gemv { rows, .. }) = bad.body.first_mut() {
            *rows = -1;
        }
        assert!(matches!(bad.verify(), Err(VerifyError::BadGemv(_))));
        let mut aliased = dense(4, 3, 4);
        if let Some(Stmt::Gemv { out, w, .. }) = aliased.body.first_mut() {
            *out = *w;
        }
        assert!(aliased.verify().is_err());
    }
}
