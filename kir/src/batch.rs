//! Batching a kernel across requests (`relay-vm run --batch B`, DyNet's autobatching): the
//! variant of a kernel that runs `n` independent calls at once, its per-request buffers
//! stacked.
//!
//! A kernel FuseOps makes reads each request's data as whole buffers (a row `[1, 150]`, a
//! word id `int32[]`) next to buffers every request shares (weights). Stacking `n` requests'
//! buffers end to end, the batched kernel is the original body run once per request with
//! every access to a per-request buffer (and every temp, and every output) shifted to that
//! request's block — a loop around the body, so every kernel has a batched form without a
//! rule per operator. The one statement whose cost changes with batching is `gemm`: `n`
//! products of `m` rows by the same shared matrix are one product of `n · m` rows, because
//! the stacked left operands and results are contiguous. So each `gemm` runs once over all
//! requests (the packed weights are read once for all rows) and each run of other
//! statements between two `gemm`s becomes one loop over the requests.

use super::{BufferId, BufferRole, Expr, Extent, Index, IndexOp, Kernel, LocalId, Stmt, VarDecl, VarId};
use relay_devices::Scalar;

/// Why a kernel has no batched variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// The kernel has runtime size parameters (its buffer sizes are not known when batching).
    #[error("a kernel with `?` dimensions")]
    Symbolic,
    /// `n` is below 1.
    #[error("a batch of {0} requests")]
    Size(i64),
    /// A `gemm` whose right operand is per-request, or whose left operand is shared while its
    /// result is not: no single product covers every request.
    #[error("a `gemm` over per-request right operands")]
    Gemm,
    /// A local carries a value from one statement to a later one across a `gemm`, which the
    /// batched kernel runs between the two for all requests at once.
    #[error("local {0} lives across a `gemm`")]
    LocalAcrossGemm(u32),
    /// The batched kernel does not verify (a bug of this module).
    #[error("the batched kernel does not verify: {0}")]
    Verify(String),
}

/// Which inputs of `kernel` are per request (in input order): those of shape `[]` or whose
/// first dimension is 1 — one request's data. The others (weights) are shared by every
/// request of a batch, and a caller batches only calls that pass the very same tensors for
/// them.
pub fn per_request_inputs(kernel: &Kernel) -> Vec<bool> {
    kernel
        .buffers
        .iter()
        .filter(|b| b.role == BufferRole::Input)
        .map(|b| matches!(b.shape.first(), None | Some(Extent::Const(1))))
        .collect()
}

/// The variant of `kernel` that runs `n` calls at once. Its inputs and outputs are the
/// original ones in the same order; each per-request input ([`per_request_inputs`]) and each
/// output holds the `n` requests' buffers end to end, with shape `[n, rest...]` for an
/// original `[1, rest...]` and `[n, shape...]` otherwise; shared inputs are unchanged. Block
/// `i` of the results equals the original kernel's results on block `i` of the inputs (to
/// the bit, where the backend's `gemm` computes a row independently of the others, as the
/// JIT's does).
///
/// # Errors
/// [`BatchError`] when the kernel has syms, `n < 1`, a `gemm` cannot cover every request in
/// one product, or a local lives across a `gemm`.
pub fn batched(kernel: &Kernel, n: i64) -> Result<Kernel, BatchError> {
    if !kernel.syms.is_empty() {
        return Err(BatchError::Symbolic);
    }
    if n < 1 {
        return Err(BatchError::Size(n));
    }
    let shared = per_request_inputs(kernel);
    let mut inputs = shared.iter();
    // Per buffer: the elements of one request's block, or `None` for a shared buffer.
    let block: Vec<Option<i64>> = kernel
        .buffers
        .iter()
        .map(|b| {
            let per_request = b.role != BufferRole::Input || inputs.next().copied().unwrap_or(false);
            let len = b.shape.iter().map(|e| if let Extent::Const(c) = e { *c } else { 0 }).product::<i64>();
            per_request.then_some(len)
        })
        .collect();
    let mut out = kernel.clone();
    out.name = format!("{}_batched", kernel.name);
    for (decl, b) in out.buffers.iter_mut().zip(&block) {
        if b.is_some() {
            let rest = match decl.shape.first() {
                Some(Extent::Const(1)) => &decl.shape[1..],
                _ => &decl.shape[..],
            };
            decl.shape = std::iter::once(Extent::Const(n)).chain(rest.iter().copied()).collect();
        }
    }
    let mut body = vec![];
    let mut segment: Vec<Stmt> = vec![];
    let mut owner: Vec<Option<usize>> = vec![None; kernel.locals.len()];
    let mut segments = 0;
    for s in &kernel.body {
        match s {
            Stmt::Gemm { out: o, a, b, b_offset, b_rows, m, n: cols, k, trans_b } => {
                if block[b.index()].is_some() || block[a.index()].is_none() || block[o.index()].is_none() {
                    return Err(BatchError::Gemm);
                }
                close_segment(&mut out, &mut body, &mut segment, &block, n, &mut owner, &mut segments)?;
                // `b` is shared by the requests (not blocked), so its block stays where it is.
                body.push(Stmt::Gemm {
                    out: *o,
                    a: *a,
                    b: *b,
                    b_offset: b_offset.clone(),
                    b_rows: b_rows.clone(),
                    m: m * n,
                    n: *cols,
                    k: *k,
                    trans_b: *trans_b,
                });
            }
            s => segment.push(s.clone()),
        }
    }
    close_segment(&mut out, &mut body, &mut segment, &block, n, &mut owner, &mut segments)?;
    out.body = body;
    out.verify().map_err(|e| BatchError::Verify(e.to_string()))?;
    super::simplify_indices(&mut out);
    Ok(out)
}

/// Appends `segment` to `body` as one loop over the requests, each iteration starting its
/// locals from zero (as a kernel call does) and reading and writing its own blocks.
fn close_segment(
    kernel: &mut Kernel,
    body: &mut Vec<Stmt>,
    segment: &mut Vec<Stmt>,
    block: &[Option<i64>],
    n: i64,
    owner: &mut [Option<usize>],
    segments: &mut usize,
) -> Result<(), BatchError> {
    if segment.is_empty() {
        return Ok(());
    }
    let this = *segments;
    *segments += 1;
    let mut locals = vec![];
    for s in segment.iter() {
        locals_of(s, &mut locals);
    }
    locals.sort_unstable();
    locals.dedup();
    for &l in &locals {
        match owner[l.index()] {
            Some(other) if other != this => return Err(BatchError::LocalAcrossGemm(l.0)),
            _ => owner[l.index()] = Some(this),
        }
    }
    let var = VarId(kernel.vars.len() as u32);
    kernel.vars.push(VarDecl { name: "request".into() });
    let offset = |buf: BufferId, index: Index| match block[buf.index()] {
        Some(len) => {
            Index::bin(IndexOp::Add, Index::bin(IndexOp::Mul, Index::Var(var), Index::Const(len)), index)
        }
        None => index,
    };
    let mut iteration: Vec<Stmt> = locals
        .iter()
        .map(|&l| Stmt::Assign { local: l, value: Expr::lit(kernel.locals[l.index()].dtype, Scalar::Int(0)) })
        .collect();
    iteration.extend(segment.drain(..).map(|s| shift_stmt(s, &offset)));
    body.push(Stmt::For { var, extent: Index::Const(n), kind: super::LoopKind::Serial, body: iteration });
    Ok(())
}

/// Every local `s` reads or writes.
fn locals_of(s: &Stmt, out: &mut Vec<LocalId>) {
    match s {
        Stmt::For { extent, body, .. } => {
            extent.visit_exprs(&mut |e| read_locals(e, out));
            body.iter().for_each(|s| locals_of(s, out));
        }
        Stmt::Store { index, value, .. } => {
            index.visit_exprs(&mut |e| read_locals(e, out));
            value.visit(&mut |e| read_locals(e, out));
        }
        Stmt::Assign { local, value } => {
            out.push(*local);
            value.visit(&mut |e| read_locals(e, out));
        }
        Stmt::If { cond, then, otherwise } => {
            cond.visit(&mut |e| read_locals(e, out));
            then.iter().chain(otherwise).for_each(|s| locals_of(s, out));
        }
        Stmt::Gemm { .. } => {}
    }
}

/// The local `e` is, if it is one (called on every node by [`Expr::visit`]).
fn read_locals(e: &Expr, out: &mut Vec<LocalId>) {
    if let Expr::Local(l) = e {
        out.push(*l);
    }
}

fn shift_stmt(s: Stmt, offset: &dyn Fn(BufferId, Index) -> Index) -> Stmt {
    let stmts = |b: Vec<Stmt>| b.into_iter().map(|s| shift_stmt(s, offset)).collect();
    match s {
        Stmt::For { var, extent, kind, body } => {
            Stmt::For { var, extent: shift_index(extent, offset), kind, body: stmts(body) }
        }
        Stmt::Store { buf, index, value } => Stmt::Store {
            buf,
            index: offset(buf, shift_index(index, offset)),
            value: shift_expr(value, offset),
        },
        Stmt::Assign { local, value } => Stmt::Assign { local, value: shift_expr(value, offset) },
        Stmt::If { cond, then, otherwise } => {
            Stmt::If { cond: shift_expr(cond, offset), then: stmts(then), otherwise: stmts(otherwise) }
        }
        g @ Stmt::Gemm { .. } => g,
    }
}

fn shift_expr(e: Expr, offset: &dyn Fn(BufferId, Index) -> Index) -> Expr {
    let boxed = |e: Box<Expr>| Box::new(shift_expr(*e, offset));
    match e {
        Expr::Load { buf, index } => Expr::Load { buf, index: offset(buf, shift_index(index, offset)) },
        Expr::Binary(op, a, b) => Expr::Binary(op, boxed(a), boxed(b)),
        Expr::Unary(op, a) => Expr::Unary(op, boxed(a)),
        Expr::Select(c, a, b) => Expr::Select(boxed(c), boxed(a), boxed(b)),
        Expr::Cast(d, a) => Expr::Cast(d, boxed(a)),
        Expr::Reinterpret(d, a) => Expr::Reinterpret(d, boxed(a)),
        Expr::Index(i) => Expr::Index(shift_index(i, offset)),
        e @ (Expr::Const(_) | Expr::Local(_)) => e,
    }
}

fn shift_index(i: Index, offset: &dyn Fn(BufferId, Index) -> Index) -> Index {
    match i {
        Index::Bin(op, a, b) => {
            Index::Bin(op, Box::new(shift_index(*a, offset)), Box::new(shift_index(*b, offset)))
        }
        Index::Value(e) => Index::Value(Box::new(shift_expr(*e, offset))),
        i @ (Index::Const(_) | Index::Var(_) | Index::Sym(_)) => i,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{interp, KernelBuilder};
    use relay_devices::{DType, Tensor};

    /// A Tree-LSTM leaf cell's shape: a gather of a word's embedding, a product with shared
    /// weights, and an elementwise tail reading a per-request input and a local.
    fn leaf_cell() -> Kernel {
        let mut k = KernelBuilder::new("leaf");
        let emb = k.input("emb", DType::F32, [7, 4]);
        let word = k.input("word", DType::I32, Vec::<Extent>::new());
        let w = k.input("w", DType::F32, [6, 4]);
        let c = k.input("c", DType::F32, [1, 6]);
        let out = k.output("out", DType::F32, [1, 6]);
        let data = k.temp("data", DType::F32, [1, 4]);
        let prod = k.temp("prod", DType::F32, [6]);
        let acc = k.local("acc", DType::F32);
        k.for_(4, crate::LoopKind::Vectorize, |k, i| {
            let row = Index::Value(Box::new(Expr::load(word, 0).cast(DType::I64)));
            let row =
                Index::bin(IndexOp::Max, Index::bin(IndexOp::Min, row, Index::Const(6)), Index::Const(0));
            k.store(data, i.clone(), Expr::load(emb, row * 4 + i));
        });
        k.gemm(prod, data, w, 1, 6, 4, true);
        k.for_(6, crate::LoopKind::Serial, |k, j| {
            k.assign(acc, Expr::local(acc) + Expr::load(prod, j.clone()));
            k.store(out, j.clone(), Expr::local(acc) * Expr::load(c, j));
        });
        k.finish().unwrap()
    }

    fn tensor(shape: Vec<usize>, seed: usize) -> Tensor {
        let len = shape.iter().product::<usize>();
        let data = (0..len).map(|i| ((i * 7 + seed * 13) % 17) as f32 / 8.0 - 1.0).collect();
        Tensor::from_vec(shape, data).unwrap()
    }

    #[test]
    fn a_batched_call_equals_separate_calls() {
        let k = leaf_cell();
        assert_eq!(per_request_inputs(&k), vec![false, true, false, true]);
        let (emb, w) = (tensor(vec![7, 4], 1), tensor(vec![6, 4], 2));
        let n = 3;
        let words: Vec<i32> = vec![5, 0, 2];
        let cs: Vec<Tensor> = (0..n).map(|r| tensor(vec![1, 6], 3 + r)).collect();
        let mut want = vec![];
        for r in 0..n {
            let word = Tensor::from_vec(vec![], vec![words[r]]).unwrap();
            let mut out = vec![Tensor::zeros(DType::F32, vec![1, 6]).unwrap()];
            interp::run(&k, &[&emb, &word, &w, &cs[r]], &mut out, &[]).unwrap();
            want.extend_from_slice(out[0].as_slice::<f32>().unwrap());
        }
        let b = batched(&k, n as i64).unwrap();
        let word = Tensor::from_vec(vec![n], words).unwrap();
        let c: Vec<f32> = cs.iter().flat_map(|t| t.as_slice::<f32>().unwrap().to_vec()).collect();
        let c = Tensor::from_vec(vec![n, 6], c).unwrap();
        let mut out = vec![Tensor::zeros(DType::F32, vec![n, 6]).unwrap()];
        interp::run(&b, &[&emb, &word, &w, &c], &mut out, &[]).unwrap();
        assert_eq!(out[0].as_slice::<f32>().unwrap(), &want[..]);
    }

    #[test]
    fn unbatchable_kernels_are_errors() {
        let k = leaf_cell();
        assert_eq!(batched(&k, 0).unwrap_err(), BatchError::Size(0));
        let mut k2 = KernelBuilder::new("weights_per_request");
        let a = k2.input("a", DType::F32, [2, 3]);
        let b = k2.input("b", DType::F32, [1, 3]);
        let o = k2.output("o", DType::F32, [2]);
        k2.gemm(o, a, b, 2, 1, 3, true);
        assert_eq!(batched(&k2.finish().unwrap(), 2).unwrap_err(), BatchError::Gemm);
    }
}
