//! Which loops run as parallel work-items.
//!
//! The kernel's top-level statements are split into phases, each one OpenCL kernel launched in
//! order on an in-order queue (so each sees the previous one's writes). A top-level `for`
//! becomes a *parallel* phase, its variable mapped to global id 0, when its iterations cannot
//! observe each other:
//! - its extent depends on syms only;
//! - every local it mentions is assigned (from a value not reading it) by a top-level
//!   statement of the loop body before any other mention, and is mentioned nowhere else in
//!   the kernel (so each work-item keeps a private copy);
//! - every access to a buffer the loop writes has the index form `stride * var + rest`, one
//!   `stride` per buffer, free of loop variables, and `rest` free of `var`.
//!
//! Whether the iterations' windows `[stride * var + min rest, stride * var + max rest]` are
//! disjoint depends on the syms, so it is decided per call ([`Parallel::grid`]): when it
//! cannot be shown, the phase runs as one work-item. The generated loop is grid-strided, so
//! the same code is correct with either grid. Other statements run in serial phases of one
//! work-item each; if a local is mentioned by more than one phase, the whole kernel is one
//! serial phase.

use relay_kir::{BufferId, Expr, Index, IndexOp, Kernel, LocalId, Stmt, VarId};
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// A phase: a run of top-level statements, launched as one OpenCL kernel.
#[derive(Clone, Debug)]
pub(super) struct Phase {
    /// The top-level statements (indices into the kernel body).
    pub stmts: Range<usize>,
    /// Set when the phase is one parallelisable loop.
    pub parallel: Option<Parallel>,
}

/// A top-level loop whose iterations may run as separate work-items.
#[derive(Clone, Debug)]
pub(super) struct Parallel {
    /// The loop variable (global id 0).
    pub var: VarId,
    /// Its extent (syms and constants only).
    pub extent: Index,
    /// The accesses to buffers the loop writes.
    accesses: Vec<Access>,
}

#[derive(Clone, Debug)]
struct Access {
    buf: BufferId,
    stride: Index,
    rest: Index,
    /// Loops inside the phase loop enclosing the access, outermost first.
    loops: Vec<(VarId, Index)>,
}

type Interval = (i128, i128);

impl Parallel {
    /// The work-items to launch for `syms`: the extent when the iterations' windows are
    /// disjoint, else 1 (the loop then runs serially in one work-item); 0 for an empty loop.
    pub fn grid(&self, syms: &[i64]) -> usize {
        let Some((_, hi)) = range(&self.extent, syms, &HashMap::new()) else { return 1 };
        let extent = usize::try_from(hi.max(0)).unwrap_or(1);
        if extent <= 1 || self.disjoint(syms, hi).is_some_and(|ok| ok) {
            extent
        } else {
            1
        }
    }

    fn disjoint(&self, syms: &[i64], extent: i128) -> Option<bool> {
        let mut windows: HashMap<BufferId, (i128, i128, i128)> = HashMap::new();
        for a in &self.accesses {
            let mut env = HashMap::from([(self.var, (0, extent - 1))]);
            let mut runs = true;
            for (v, e) in &a.loops {
                let (_, hi) = range(e, syms, &env)?;
                runs &= hi > 0;
                env.insert(*v, (0, hi - 1));
            }
            if !runs {
                continue;
            }
            let (stride, _) = range(&a.stride, syms, &env)?;
            let (lo, hi) = range(&a.rest, syms, &env)?;
            let w = windows.entry(a.buf).or_insert((stride, lo, hi));
            if w.0 != stride {
                return Some(false);
            }
            *w = (stride, w.1.min(lo), w.2.max(hi));
        }
        Some(windows.values().all(|&(stride, lo, hi)| stride != 0 && hi - lo < stride.abs()))
    }
}

/// The phases of `k`.
pub(super) fn phases(k: &Kernel) -> Vec<Phase> {
    let mut out: Vec<Phase> = Vec::new();
    for (i, s) in k.body.iter().enumerate() {
        let parallel = parallel_loop(k, i, s);
        match out.last_mut() {
            Some(last) if parallel.is_none() && last.parallel.is_none() => last.stmts.end = i + 1,
            _ => out.push(Phase { stmts: i..i + 1, parallel }),
        }
    }
    let mut owner: HashMap<LocalId, usize> = HashMap::new();
    for (p, phase) in out.iter().enumerate() {
        let mut locals = HashSet::new();
        k.body[phase.stmts.clone()].iter().for_each(|s| stmt_locals(s, &mut locals));
        for l in locals {
            if *owner.entry(l).or_insert(p) != p {
                return vec![Phase { stmts: 0..k.body.len(), parallel: None }];
            }
        }
    }
    out
}

fn parallel_loop(k: &Kernel, at: usize, s: &Stmt) -> Option<Parallel> {
    let Stmt::For { var, extent, body, .. } = s else { return None };
    if !index_free_of_vars(extent) {
        return None;
    }
    let mut mentioned = HashSet::new();
    body.iter().for_each(|s| stmt_locals(s, &mut mentioned));
    let mut elsewhere = HashSet::new();
    k.body.iter().enumerate().filter(|(i, _)| *i != at).for_each(|(_, s)| stmt_locals(s, &mut elsewhere));
    if mentioned.iter().any(|l| elsewhere.contains(l) || !private(body, *l)) {
        return None;
    }
    let mut raw = Vec::new();
    body.iter().for_each(|s| stmt_accesses(s, &mut Vec::new(), &mut raw));
    let written: HashSet<BufferId> = raw.iter().filter(|r| r.store).map(|r| r.buf).collect();
    let mut accesses = Vec::new();
    for r in raw.into_iter().filter(|r| written.contains(&r.buf)) {
        let (stride, rest) = split(&r.index, *var)?;
        if !index_free_of_vars(&stride) {
            return None;
        }
        accesses.push(Access { buf: r.buf, stride, rest, loops: r.loops });
    }
    Some(Parallel { var: *var, extent: extent.clone(), accesses })
}

/// Whether the first statement of `body` mentioning `l` assigns it from a value not reading it.
fn private(body: &[Stmt], l: LocalId) -> bool {
    for s in body {
        let mut m = HashSet::new();
        stmt_locals(s, &mut m);
        if m.contains(&l) {
            return match s {
                Stmt::Assign { local, value } if *local == l => {
                    let mut read = HashSet::new();
                    expr_locals(value, &mut read);
                    !read.contains(&l)
                }
                _ => false,
            };
        }
    }
    true
}

/// `i` as `stride * var + rest` with `rest` free of `var`.
fn split(i: &Index, var: VarId) -> Option<(Index, Index)> {
    if !index_mentions(i, var) {
        return Some((Index::Const(0), i.clone()));
    }
    match i {
        Index::Var(v) if *v == var => Some((Index::Const(1), Index::Const(0))),
        Index::Bin(op @ (IndexOp::Add | IndexOp::Sub), a, b) => {
            let ((sa, ra), (sb, rb)) = (split(a, var)?, split(b, var)?);
            Some((Index::bin(*op, sa, sb), Index::bin(*op, ra, rb)))
        }
        Index::Bin(IndexOp::Mul, a, b) if !index_mentions(a, var) => {
            let (s, r) = split(b, var)?;
            Some(((**a).clone() * s, (**a).clone() * r))
        }
        Index::Bin(IndexOp::Mul, a, b) if !index_mentions(b, var) => {
            let (s, r) = split(a, var)?;
            Some((s * (**b).clone(), r * (**b).clone()))
        }
        _ => None,
    }
}

/// The interval of `i` given sym values and loop-variable intervals; `None` when it
/// involves a gathered value, an unknown variable or a possibly non-positive divisor.
fn range(i: &Index, syms: &[i64], env: &HashMap<VarId, Interval>) -> Option<Interval> {
    Some(match i {
        Index::Const(c) => (i128::from(*c), i128::from(*c)),
        Index::Sym(s) => {
            let v = i128::from(*syms.get(s.index())?);
            (v, v)
        }
        Index::Var(v) => *env.get(v)?,
        Index::Value(_) => return None,
        Index::Bin(op, a, b) => {
            let ((alo, ahi), (blo, bhi)) = (range(a, syms, env)?, range(b, syms, env)?);
            let corners = |f: fn(i128, i128) -> i128| {
                let c = [f(alo, blo), f(alo, bhi), f(ahi, blo), f(ahi, bhi)];
                (c.iter().copied().min().unwrap_or(0), c.iter().copied().max().unwrap_or(0))
            };
            match op {
                IndexOp::Add => (alo + blo, ahi + bhi),
                IndexOp::Sub => (alo - bhi, ahi - blo),
                IndexOp::Mul => corners(|x, y| x.saturating_mul(y)),
                IndexOp::Min => (alo.min(blo), ahi.min(bhi)),
                IndexOp::Max => (alo.max(blo), ahi.max(bhi)),
                IndexOp::FloorDiv if blo > 0 => corners(i128::div_euclid),
                IndexOp::FloorMod if blo > 0 => (0, bhi - 1),
                IndexOp::FloorDiv | IndexOp::FloorMod => return None,
            }
        }
    })
}

fn index_free_of_vars(i: &Index) -> bool {
    match i {
        Index::Const(_) | Index::Sym(_) => true,
        Index::Var(_) | Index::Value(_) => false,
        Index::Bin(_, a, b) => index_free_of_vars(a) && index_free_of_vars(b),
    }
}

fn index_mentions(i: &Index, var: VarId) -> bool {
    match i {
        Index::Const(_) | Index::Sym(_) => false,
        Index::Var(v) => *v == var,
        Index::Value(e) => expr_mentions(e, var),
        Index::Bin(_, a, b) => index_mentions(a, var) || index_mentions(b, var),
    }
}

fn expr_mentions(e: &Expr, var: VarId) -> bool {
    match e {
        Expr::Const(_) | Expr::Local(_) => false,
        Expr::Load { index, .. } | Expr::Index(index) => index_mentions(index, var),
        Expr::Binary(_, a, b) => expr_mentions(a, var) || expr_mentions(b, var),
        Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Reinterpret(_, a) => expr_mentions(a, var),
        Expr::Select(c, a, b) => expr_mentions(c, var) || expr_mentions(a, var) || expr_mentions(b, var),
    }
}

pub(super) fn stmt_locals(s: &Stmt, out: &mut HashSet<LocalId>) {
    match s {
        Stmt::For { extent, body, .. } => {
            index_locals(extent, out);
            body.iter().for_each(|s| stmt_locals(s, out));
        }
        Stmt::Store { index, value, .. } => {
            index_locals(index, out);
            expr_locals(value, out);
        }
        Stmt::Assign { local, value } => {
            out.insert(*local);
            expr_locals(value, out);
        }
        Stmt::If { cond, then, otherwise } => {
            expr_locals(cond, out);
            then.iter().chain(otherwise).for_each(|s| stmt_locals(s, out));
        }
        // Plans are made for kernels whose intrinsics are expanded (`generate`).
        Stmt::Gemm { .. } => {}
    }
}

fn index_locals(i: &Index, out: &mut HashSet<LocalId>) {
    i.visit_exprs(&mut |x| {
        if let Expr::Local(l) = x {
            out.insert(*l);
        }
    });
}

fn expr_locals(e: &Expr, out: &mut HashSet<LocalId>) {
    e.visit(&mut |x| {
        if let Expr::Local(l) = x {
            out.insert(*l);
        }
    });
}

struct RawAccess {
    buf: BufferId,
    index: Index,
    store: bool,
    loops: Vec<(VarId, Index)>,
}

fn stmt_accesses(s: &Stmt, loops: &mut Vec<(VarId, Index)>, out: &mut Vec<RawAccess>) {
    match s {
        Stmt::For { var, extent, body, .. } => {
            index_accesses(extent, loops, out);
            loops.push((*var, extent.clone()));
            body.iter().for_each(|s| stmt_accesses(s, loops, out));
            loops.pop();
        }
        Stmt::Store { buf, index, value } => {
            index_accesses(index, loops, out);
            expr_accesses(value, loops, out);
            out.push(RawAccess { buf: *buf, index: index.clone(), store: true, loops: loops.clone() });
        }
        Stmt::Assign { value, .. } => expr_accesses(value, loops, out),
        Stmt::If { cond, then, otherwise } => {
            expr_accesses(cond, loops, out);
            then.iter().chain(otherwise).for_each(|s| stmt_accesses(s, loops, out));
        }
        Stmt::Gemm { .. } => {}
    }
}

fn index_accesses(i: &Index, loops: &[(VarId, Index)], out: &mut Vec<RawAccess>) {
    match i {
        Index::Value(e) => expr_accesses(e, loops, out),
        Index::Bin(_, a, b) => {
            index_accesses(a, loops, out);
            index_accesses(b, loops, out);
        }
        _ => {}
    }
}

fn expr_accesses(e: &Expr, loops: &[(VarId, Index)], out: &mut Vec<RawAccess>) {
    match e {
        Expr::Const(_) | Expr::Local(_) => {}
        Expr::Load { buf, index } => {
            index_accesses(index, loops, out);
            out.push(RawAccess { buf: *buf, index: index.clone(), store: false, loops: loops.to_vec() });
        }
        Expr::Index(i) => index_accesses(i, loops, out),
        Expr::Binary(_, a, b) => {
            expr_accesses(a, loops, out);
            expr_accesses(b, loops, out);
        }
        Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Reinterpret(_, a) => expr_accesses(a, loops, out),
        Expr::Select(c, a, b) => {
            expr_accesses(c, loops, out);
            expr_accesses(a, loops, out);
            expr_accesses(b, loops, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_devices::DType;
    use relay_kir::{KernelBuilder, LoopKind};

    #[test]
    fn grids_follow_the_windows_of_each_call() {
        let mut k = KernelBuilder::new("plan");
        let (n, m) = (k.sym("n"), k.sym("m"));
        let x = k.input("x", DType::F32, [n, m]);
        let y = k.output("y", DType::F32, [n, m]);
        let p = k.output("p", DType::F32, [n]);
        // Rows: stride m, rest 0..m-1: disjoint whenever m > 0.
        k.for_(n, LoopKind::Serial, |k, i| {
            k.for_(m, LoopKind::Serial, |k, j| {
                let v = k.load(x, &[i.clone(), j.clone()]);
                k.store_at(y, &[i.clone(), j], v);
            })
        });
        // Reads the element the previous iteration wrote.
        k.for_(Index::from(n) - 1, LoopKind::Serial, |k, i| {
            k.store(p, i.clone() + 1, Expr::load(p, i));
        });
        let kernel = k.finish().unwrap();
        let ps = phases(&kernel);
        assert_eq!(ps.len(), 2);
        let (rows, chain) = (ps[0].parallel.as_ref().unwrap(), ps[1].parallel.as_ref().unwrap());
        assert_eq!(rows.grid(&[7, 3]), 7);
        assert_eq!(rows.grid(&[7, 0]), 7, "no access runs");
        assert_eq!(rows.grid(&[0, 3]), 0);
        assert_eq!(chain.grid(&[9, 1]), 1);
        assert_eq!(chain.grid(&[2, 1]), 1, "one iteration");
    }

    #[test]
    fn accumulating_locals_keep_a_loop_serial() {
        let mut k = KernelBuilder::new("acc");
        let x = k.input("x", DType::F32, [4]);
        let y = k.output("y", DType::F32, [4]);
        let acc = k.local("acc", DType::F32);
        k.for_(4, LoopKind::Serial, |k, i| {
            k.assign(acc, Expr::local(acc) + Expr::load(x, i.clone()));
            k.store(y, i, Expr::local(acc));
        });
        let kernel = k.finish().unwrap();
        assert!(phases(&kernel)[0].parallel.is_none());
    }
}
