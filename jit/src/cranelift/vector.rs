//! Which `vectorize` loops run in SIMD lanes, and how.
//!
//! A loop over `v` runs 4 iterations at a time (`v, v+1, v+2, v+3` in the lanes of one
//! 128-bit vector), then a scalar tail. Every value in its body is *uniform* (the same in
//! all lanes: computed once as a scalar) or *varying*. Varying values must be `float32`,
//! `int32` or `bool` (a lane mask), and use an operator the vector emitter has. The plan is
//! made before any code is emitted; when it fails, the loop runs serially.
//!
//! Memory order is preserved by construction: a buffer the loop stores to is accessed, by
//! every load and store in the loop, at one and the same index `v + c` with `c` uniform and
//! independent of inner loops, so iterations touch disjoint elements. Locals assigned in the
//! loop are either *private* (written before any read in each iteration; the last lane's
//! value survives the loop) or *reductions* (only updated as `l = l op e` with `op` one of
//! `+ max min`; lanes accumulate separately and are combined after the loop, which
//! reassociates float sums).

use super::buffers::reads_what_it_writes;
use relay_devices::DType;
pub(crate) use relay_kir::affine::{affine, Affine};
use relay_kir::{BinOp, BufferId, Expr, Index, IndexOp, Kernel, LocalId, LoopKind, Stmt, UnOp, VarId};
use std::collections::{HashMap, HashSet};

/// Lanes per vector (128-bit registers of 32-bit elements).
pub(crate) const LANES: i64 = 4;

/// How a vectorised loop treats a local it assigns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LocalMode {
    /// Written before read in every iteration: one value per lane.
    Private,
    /// Accumulated with this operator across iterations.
    Reduction(BinOp),
}

/// The result of planning a `vectorize` loop.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Locals assigned in the loop and how each is vectorised.
    pub locals: HashMap<LocalId, LocalMode>,
    /// Contiguous and strided accesses `buf[s·v + c]` whose offset `c` is the same in every
    /// iteration: `(buf, the index as written, c)`. The emitter computes the variable part of `c` once
    /// before the loop and folds the constant part into the access, so each access in the loop
    /// is one addressing mode. (Cranelift does not hoist `c` itself: it rematerialises
    /// add-immediates inside the loop, dragging whatever depends on them along — a GEMV's
    /// eight row addresses cost eight multiplies per iteration.)
    pub bases: Vec<(BufferId, Index, Affine)>,
}

/// How an index varies with the vectorised variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// The same in all lanes.
    Uniform,
    /// `v + c`: the lanes read consecutive elements.
    Contiguous,
    /// `s·v + c` with `s` in [`STRIDES`]: the lanes read every `s`-th element, which two
    /// contiguous vector loads inside the lanes' own span and a lane shuffle pick (a
    /// stride-2 window: a strided convolution's taps, pooling, im2col).
    Strided(i64),
    /// Anything else: one scalar access per lane.
    Gather,
}

/// Plans the loop `for var in ..: body`, or says it must run serially.
pub(crate) fn plan(kernel: &Kernel, var: VarId, body: &[Stmt]) -> Option<Plan> {
    let mut p = Planner { kernel, var, inner: HashSet::new(), stores: HashMap::new(), plan: Plan::default() };
    p.scan(body)?;
    p.classify_locals(body)?;
    p.stmts(body)?;
    p.collect_bases(body);
    Some(p.plan)
}

/// `i` in affine form, with `var` taken as 0; `None` on overflow.
fn affine_at_zero(i: &Index, var: VarId) -> Option<Affine> {
    let mut a = affine(i)?;
    a.terms.retain(|(t, _)| *t != Index::Var(var));
    Some(a)
}

/// Whether `i` has the same value in every iteration of the vectorised loop: it reads no
/// memory or local (a `Value` index) and no variable of a loop inside it.
fn loop_invariant(i: &Index, inner: &HashSet<VarId>) -> bool {
    match i {
        Index::Const(_) | Index::Sym(_) => true,
        Index::Var(v) => !inner.contains(v),
        Index::Value(_) => false,
        Index::Bin(_, a, b) => loop_invariant(a, inner) && loop_invariant(b, inner),
    }
}

/// The strides of [`Access::Strided`]: four lanes `s` apart span `3s + 1` elements, which two
/// 4-element loads cover without reading past the last lane's element only for `s <= 3`.
pub(crate) const STRIDES: [i64; 2] = [2, 3];

/// Classifies `index` with respect to `var`; `None` if it depends on a varying value other
/// than `var` itself (which the emitter cannot address).
pub(crate) fn classify(index: &Index, var: VarId, varying: &dyn Fn(&Expr) -> bool) -> Option<Access> {
    Some(match stride(index, var, varying)? {
        Stride::Const(0) => Access::Uniform,
        Stride::Const(1) => Access::Contiguous,
        Stride::Const(s) if STRIDES.contains(&s) => Access::Strided(s),
        _ => Access::Gather,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stride {
    Const(i64),
    NonAffine,
}

fn stride(i: &Index, var: VarId, varying: &dyn Fn(&Expr) -> bool) -> Option<Stride> {
    Some(match i {
        Index::Const(_) | Index::Sym(_) => Stride::Const(0),
        Index::Var(v) => Stride::Const(i64::from(*v == var)),
        Index::Value(e) if varying(e) => return None,
        Index::Value(_) => Stride::Const(0),
        Index::Bin(op, a, b) => {
            let (sa, sb) = (stride(a, var, varying)?, stride(b, var, varying)?);
            match (op, sa, sb) {
                (_, Stride::Const(0), Stride::Const(0)) => Stride::Const(0),
                (IndexOp::Add, Stride::Const(x), Stride::Const(y)) => {
                    x.checked_add(y).map_or(Stride::NonAffine, Stride::Const)
                }
                (IndexOp::Sub, Stride::Const(x), Stride::Const(y)) => {
                    x.checked_sub(y).map_or(Stride::NonAffine, Stride::Const)
                }
                (IndexOp::Mul, Stride::Const(s), Stride::Const(0)) => scale(s, b),
                (IndexOp::Mul, Stride::Const(0), Stride::Const(s)) => scale(s, a),
                _ => Stride::NonAffine,
            }
        }
    })
}

fn scale(s: i64, by: &Index) -> Stride {
    by.as_const().and_then(|c| c.checked_mul(s)).map_or(Stride::NonAffine, Stride::Const)
}

/// Whether `e` differs between the lanes of the loop over `var` whose vectorised locals
/// are `locals`.
pub(crate) fn varying_expr(e: &Expr, var: VarId, locals: &HashMap<LocalId, LocalMode>) -> bool {
    match e {
        Expr::Const(_) => false,
        Expr::Local(l) => locals.contains_key(l),
        Expr::Load { index, .. } | Expr::Index(index) => varying_index(index, var, locals),
        Expr::Binary(_, a, b) => varying_expr(a, var, locals) || varying_expr(b, var, locals),
        Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Reinterpret(_, a) => varying_expr(a, var, locals),
        Expr::Select(c, a, b) => {
            varying_expr(c, var, locals) || varying_expr(a, var, locals) || varying_expr(b, var, locals)
        }
    }
}

/// Whether index `i` differs between lanes (see [`varying_expr`]).
pub(crate) fn varying_index(i: &Index, var: VarId, locals: &HashMap<LocalId, LocalMode>) -> bool {
    match i {
        Index::Var(v) => *v == var,
        Index::Const(_) | Index::Sym(_) => false,
        Index::Bin(_, a, b) => varying_index(a, var, locals) || varying_index(b, var, locals),
        Index::Value(e) => varying_expr(e, var, locals),
    }
}

/// The dtypes that have a 4-lane vector form.
pub(crate) fn vector_dtype(dt: DType) -> bool {
    dt == DType::F32 || dt == DType::I32 || dt == DType::BOOL
}

fn binary_ok(op: BinOp, dt: DType) -> bool {
    use BinOp::*;
    match dt {
        DType::F32 => {
            matches!(op, Add | Sub | Mul | Div | FloorDiv | FloorMod | Max | Min) || op.is_comparison()
        }
        DType::I32 => matches!(op, Add | Sub | Mul | Max | Min | And | Or | Xor) || op.is_comparison(),
        DType::BOOL => matches!(op, And | Or | Xor),
        _ => false,
    }
}

fn unary_ok(op: UnOp, dt: DType) -> bool {
    match dt {
        DType::F32 => op != UnOp::Not,
        DType::I32 => matches!(op, UnOp::Neg | UnOp::Abs | UnOp::Not | UnOp::Sign),
        DType::BOOL => op == UnOp::Not,
        _ => false,
    }
}

pub(crate) fn mentions_local(e: &Expr, l: LocalId) -> bool {
    match e {
        Expr::Const(_) => false,
        Expr::Local(x) => *x == l,
        Expr::Load { index, .. } | Expr::Index(index) => index_mentions_local(index, l),
        Expr::Binary(_, a, b) => mentions_local(a, l) || mentions_local(b, l),
        Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Reinterpret(_, a) => mentions_local(a, l),
        Expr::Select(c, a, b) => mentions_local(c, l) || mentions_local(a, l) || mentions_local(b, l),
    }
}

pub(crate) fn index_mentions_local(i: &Index, l: LocalId) -> bool {
    match i {
        Index::Const(_) | Index::Var(_) | Index::Sym(_) => false,
        Index::Bin(_, a, b) => index_mentions_local(a, l) || index_mentions_local(b, l),
        Index::Value(e) => mentions_local(e, l),
    }
}

fn stmt_mentions_local(s: &Stmt, l: LocalId) -> bool {
    match s {
        Stmt::For { extent, body, .. } => {
            index_mentions_local(extent, l) || body.iter().any(|s| stmt_mentions_local(s, l))
        }
        Stmt::Store { index, value, .. } => index_mentions_local(index, l) || mentions_local(value, l),
        Stmt::Assign { local, value } => *local == l || mentions_local(value, l),
        Stmt::If { cond, then, otherwise } => {
            mentions_local(cond, l) || then.iter().chain(otherwise).any(|s| stmt_mentions_local(s, l))
        }
        Stmt::Gemm { .. } => false,
    }
}

pub(crate) fn index_mentions_var(i: &Index, vars: &HashSet<VarId>) -> bool {
    match i {
        Index::Var(v) => vars.contains(v),
        Index::Const(_) | Index::Sym(_) | Index::Value(_) => false,
        Index::Bin(_, a, b) => index_mentions_var(a, vars) || index_mentions_var(b, vars),
    }
}

struct Planner<'k> {
    kernel: &'k Kernel,
    var: VarId,
    inner: HashSet<VarId>,
    stores: HashMap<BufferId, Index>,
    plan: Plan,
}

impl Planner<'_> {
    /// Collects inner loop variables and the one index each stored buffer is stored at.
    fn scan(&mut self, body: &[Stmt]) -> Option<()> {
        for s in body {
            match s {
                Stmt::For { var, body, .. } => {
                    self.inner.insert(*var);
                    self.scan(body)?;
                }
                Stmt::Store { buf, index, .. } => match self.stores.get(buf) {
                    Some(prev) if prev != index => return None,
                    _ => {
                        self.stores.insert(*buf, index.clone());
                    }
                },
                Stmt::Assign { local, .. } => {
                    self.plan.locals.insert(*local, LocalMode::Private);
                }
                Stmt::If { then, otherwise, .. } => {
                    self.scan(then)?;
                    self.scan(otherwise)?;
                }
                // A native call: never inside vector lanes.
                Stmt::Gemm { .. } => return None,
            }
        }
        Some(())
    }

    fn classify_locals(&mut self, body: &[Stmt]) -> Option<()> {
        let assigned: Vec<LocalId> = self.plan.locals.keys().copied().collect();
        for l in assigned {
            let dtype = self.kernel.locals.get(l.index())?.dtype;
            let first = body.iter().find(|s| stmt_mentions_local(s, l));
            let private = matches!(
                first,
                Some(Stmt::Assign { local, value }) if *local == l && !mentions_local(value, l)
            );
            let mode =
                if private { LocalMode::Private } else { LocalMode::Reduction(reduction_op(body, l)?) };
            if !vector_dtype(dtype) || matches!(mode, LocalMode::Reduction(_)) && dtype == DType::BOOL {
                return None;
            }
            self.plan.locals.insert(l, mode);
        }
        Some(())
    }

    fn varying_expr(&self, e: &Expr) -> bool {
        varying_expr(e, self.var, &self.plan.locals)
    }

    /// Fills [`Plan::bases`] from the loop's contiguous loads and stores.
    fn collect_bases(&mut self, body: &[Stmt]) {
        for s in body {
            match s {
                Stmt::For { body, .. } => self.collect_bases(body),
                Stmt::If { cond, then, otherwise } => {
                    self.expr_bases(cond);
                    self.collect_bases(then);
                    self.collect_bases(otherwise);
                }
                Stmt::Assign { value, .. } => self.expr_bases(value),
                Stmt::Store { buf, index, value } => {
                    self.access_base(*buf, index);
                    self.expr_bases(value);
                }
                Stmt::Gemm { .. } => {}
            }
        }
    }

    fn expr_bases(&mut self, e: &Expr) {
        match e {
            Expr::Const(_) | Expr::Local(_) | Expr::Index(_) => {}
            Expr::Load { buf, index } => self.access_base(*buf, index),
            Expr::Binary(_, a, b) => {
                self.expr_bases(a);
                self.expr_bases(b);
            }
            Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Reinterpret(_, a) => self.expr_bases(a),
            Expr::Select(c, a, b) => {
                self.expr_bases(c);
                self.expr_bases(a);
                self.expr_bases(b);
            }
        }
    }

    fn access_base(&mut self, buf: BufferId, index: &Index) {
        let known = self.plan.bases.iter().any(|(b, i, _)| *b == buf && i == index);
        let addressed = matches!(self.access(index), Some(Access::Contiguous | Access::Strided(_)));
        if !known && addressed && loop_invariant(index, &self.inner) {
            if let Some(offset) = affine_at_zero(index, self.var) {
                self.plan.bases.push((buf, index.clone(), offset));
            }
        }
    }

    fn varying_index(&self, i: &Index) -> bool {
        varying_index(i, self.var, &self.plan.locals)
    }

    fn access(&self, index: &Index) -> Option<Access> {
        classify(index, self.var, &|e| self.varying_expr(e))
    }

    fn stmts(&self, body: &[Stmt]) -> Option<()> {
        body.iter().try_for_each(|s| self.stmt(s))
    }

    fn stmt(&self, s: &Stmt) -> Option<()> {
        match s {
            Stmt::For { extent, body, .. } => {
                if self.varying_index(extent) {
                    return None;
                }
                self.stmts(body)
            }
            Stmt::If { cond, then, otherwise } => {
                if self.varying_expr(cond) {
                    return None;
                }
                self.expr(cond)?;
                self.stmts(then)?;
                self.stmts(otherwise)
            }
            Stmt::Assign { value, .. } => self.expr(value).map(drop),
            Stmt::Store { buf, index, value } => {
                let dtype = self.kernel.buffer(*buf)?.dtype;
                let contiguous = self.access(index)? == Access::Contiguous;
                if !contiguous
                    || index_mentions_var(index, &self.inner)
                    || dtype == DType::BOOL
                    || !vector_dtype(dtype)
                {
                    return None;
                }
                self.index_loads_ok(index)?;
                self.expr(value).map(drop)
            }
            Stmt::Gemm { .. } => None,
        }
    }

    /// Checks `e` and returns its dtype and whether it varies.
    fn expr(&self, e: &Expr) -> Option<(DType, bool)> {
        let varying = self.varying_expr(e);
        let dtype = self.kernel.dtype_of(e).ok()?;
        if !varying {
            // Computed once as a scalar; only the loads in it need checking.
            self.loads_ok(e)?;
            return Some((dtype, false));
        }
        let ok = vector_dtype(dtype)
            && match e {
                Expr::Const(_) | Expr::Local(_) => true,
                Expr::Load { buf, index } => {
                    self.load_ok(*buf, index)?;
                    dtype != DType::BOOL
                }
                Expr::Index(_) => false,
                Expr::Binary(op, a, b) => {
                    let (da, _) = self.expr(a)?;
                    self.expr(b)?;
                    binary_ok(*op, da)
                }
                Expr::Unary(op, a) => {
                    self.expr(a)?;
                    unary_ok(*op, dtype)
                }
                Expr::Select(c, a, b) => {
                    self.expr(c)?;
                    self.expr(a)?;
                    self.expr(b)?;
                    dtype != DType::BOOL
                }
                Expr::Cast(to, a) => {
                    let (from, _) = self.expr(a)?;
                    from == *to || matches!((from, *to), (DType::F32, DType::I32) | (DType::I32, DType::F32))
                }
                // Both are 32-bit lanes (`vector_dtype` holds for the result; the verifier
                // checked the widths): `bool` masks never reach a reinterpretation.
                Expr::Reinterpret(_, a) => {
                    let (from, _) = self.expr(a)?;
                    from != DType::BOOL
                }
            };
        ok.then_some((dtype, true))
    }

    fn load_ok(&self, buf: BufferId, index: &Index) -> Option<()> {
        match self.stores.get(&buf) {
            Some(stored) if stored != index => None,
            _ => {
                self.access(index)?;
                self.index_loads_ok(index)
            }
        }
    }

    /// Loads inside a uniform expression: a stored buffer may not be read at another index.
    fn loads_ok(&self, e: &Expr) -> Option<()> {
        match e {
            Expr::Const(_) | Expr::Local(_) => Some(()),
            Expr::Load { buf, index } => {
                self.load_ok(*buf, index)?;
                self.index_loads_ok(index)
            }
            Expr::Index(index) => self.index_loads_ok(index),
            Expr::Binary(_, a, b) => {
                self.loads_ok(a)?;
                self.loads_ok(b)
            }
            Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Reinterpret(_, a) => self.loads_ok(a),
            Expr::Select(c, a, b) => {
                self.loads_ok(c)?;
                self.loads_ok(a)?;
                self.loads_ok(b)
            }
        }
    }

    fn index_loads_ok(&self, i: &Index) -> Option<()> {
        match i {
            Index::Const(_) | Index::Var(_) | Index::Sym(_) => Some(()),
            Index::Bin(_, a, b) => {
                self.index_loads_ok(a)?;
                self.index_loads_ok(b)
            }
            Index::Value(e) => self.loads_ok(e),
        }
    }
}

/// Whether `op` is emitted inline as a long chain of dependent instructions (range
/// reduction, polynomial, selects, a division: `math.rs`, `trig.rs`).
fn is_chain(op: UnOp) -> bool {
    use UnOp::*;
    matches!(op, Exp | Log | Tanh | Sigmoid | Erf | Sin | Cos | Tan | Asin | Acos | Atan | Sinh | Cosh)
}

/// Whether `body` is straight-line: stores and assignments only.
fn straight(body: &[Stmt]) -> bool {
    body.iter().all(|s| matches!(s, Stmt::Store { .. } | Stmt::Assign { .. }))
}

/// Whether the vector loop planned as `plan` may run several vectors at once with their
/// instructions interleaved (`interleave.rs`): a straight-line body whose iterations are
/// independent (no reduction, no buffer both stored and read).
pub(crate) fn interleavable(plan: &Plan, body: &[Stmt]) -> bool {
    straight(body) && plan.locals.values().all(|m| *m == LocalMode::Private) && !reads_what_it_writes(body)
}

/// Whether `kernel` is compiled for interleaving (`interleave.rs`): some vector loop is
/// [`interleavable`] and evaluates a chain operator (`is_chain`), and every innermost loop is
/// a vector loop — without the e-graph pass, index arithmetic stays where it is written,
/// which only vector loops (whose addresses `emit.rs` hoists itself) can afford.
pub(crate) fn has_chain_loop(kernel: &Kernel) -> bool {
    let mut chains = false;
    innermost_vectorised(kernel, &kernel.body, &mut chains) && chains
}

/// Whether every innermost loop of `stmts` is a vector loop the plan accepts; sets `chains`
/// when one of them is [`interleavable`] and evaluates a chain operator (`is_chain`).
fn innermost_vectorised(kernel: &Kernel, stmts: &[Stmt], chains: &mut bool) -> bool {
    stmts.iter().all(|s| match s {
        Stmt::For { body, .. } if body.iter().any(|s| matches!(s, Stmt::For { .. } | Stmt::If { .. })) => {
            innermost_vectorised(kernel, body, chains)
        }
        Stmt::For { var, kind: LoopKind::Vectorize, body, .. } => match plan(kernel, *var, body) {
            Some(p) => {
                *chains |= interleavable(&p, body) && evaluates_chain(body);
                true
            }
            None => false,
        },
        Stmt::For { .. } => false,
        Stmt::If { then, otherwise, .. } => {
            innermost_vectorised(kernel, then, chains) && innermost_vectorised(kernel, otherwise, chains)
        }
        Stmt::Store { .. } | Stmt::Assign { .. } | Stmt::Gemm { .. } => true,
    })
}

/// Whether a statement of `body` evaluates a chain operator (`is_chain`).
fn evaluates_chain(body: &[Stmt]) -> bool {
    let mut chain = false;
    for s in body {
        if let Stmt::Store { value, .. } | Stmt::Assign { value, .. } = s {
            value.visit(&mut |e| chain |= matches!(e, Expr::Unary(op, _) if is_chain(*op)));
        }
    }
    chain
}

/// The operator of a reduction local: every statement mentioning `l` (anywhere in the loop)
/// must be `l = l op e` or `l = e op l` with the same `op` and `e` not mentioning `l`.
fn reduction_op(body: &[Stmt], l: LocalId) -> Option<BinOp> {
    let mut op = None;
    for s in body {
        collect_reduction(s, l, &mut op)?;
    }
    op
}

fn collect_reduction(s: &Stmt, l: LocalId, op: &mut Option<BinOp>) -> Option<()> {
    match s {
        Stmt::Assign { local, value } if *local == l => {
            let Expr::Binary(this, a, b) = value else { return None };
            let other = match (a.as_ref(), b.as_ref()) {
                (Expr::Local(x), other) | (other, Expr::Local(x)) if *x == l => other,
                _ => return None,
            };
            if !matches!(this, BinOp::Add | BinOp::Max | BinOp::Min) || mentions_local(other, l) {
                return None;
            }
            match op {
                Some(prev) if prev != this => None,
                _ => {
                    *op = Some(*this);
                    Some(())
                }
            }
        }
        Stmt::For { extent, body, .. } => {
            if index_mentions_local(extent, l) {
                return None;
            }
            body.iter().try_for_each(|s| collect_reduction(s, l, op))
        }
        Stmt::If { cond, then, otherwise } => {
            if mentions_local(cond, l) {
                return None;
            }
            then.iter().chain(otherwise).try_for_each(|s| collect_reduction(s, l, op))
        }
        other if stmt_mentions_local(other, l) => None,
        _ => Some(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_kir::{KernelBuilder, SymId};

    fn access(index: Index, var: VarId) -> Option<Access> {
        classify(&index, var, &|_| false)
    }

    #[test]
    fn strides_two_and_three_are_strided_others_gather() {
        let (v, w, n) = (VarId(0), VarId(1), Index::Sym(SymId(0)));
        let at = |s: i64| Index::Var(v) * s + Index::Var(w) * 3 - 1;
        assert_eq!(access(Index::Var(v) + n.clone(), v), Some(Access::Contiguous));
        assert_eq!(access(at(2), v), Some(Access::Strided(2)));
        assert_eq!(access(2 * (Index::Var(v) + 1) + n.clone(), v), Some(Access::Strided(2)));
        assert_eq!(access(at(3), v), Some(Access::Strided(3)));
        for s in [4, -1, -2, 7] {
            assert_eq!(access(at(s), v), Some(Access::Gather), "stride {s}");
        }
        assert_eq!(access(Index::Var(v) * n.clone(), v), Some(Access::Gather));
        assert_eq!(access(Index::Var(w) * 2 + n, v), Some(Access::Uniform));
    }

    #[test]
    fn strided_loads_get_a_hoisted_base_and_stores_stay_contiguous() {
        let mut k = KernelBuilder::new("t");
        let x = k.input("x", DType::F32, [4, 64]);
        let y = k.output("y", DType::F32, [4, 16]);
        k.for_(4, LoopKind::Serial, |k, r| {
            k.for_(16, LoopKind::Vectorize, |k, c| {
                let strided = Expr::load(x, r.clone() * 64 + c.clone() * 2 + 1);
                k.store(y, r.clone() * 16 + c, strided);
            })
        });
        let kernel = k.finish().unwrap();
        let Stmt::For { body: rows, .. } = &kernel.body[0] else { panic!("row loop") };
        let Stmt::For { var, body, .. } = &rows[0] else { panic!("column loop") };
        let planned = plan(&kernel, *var, body).expect("vectorised");
        let offsets: Vec<i64> = planned.bases.iter().map(|(_, _, a)| a.constant).collect();
        assert_eq!(offsets, [0, 1], "the store's and the strided load's bases");

        // A strided store is not vectorised (lanes would need a scatter).
        let mut k = KernelBuilder::new("t");
        let x = k.input("x", DType::F32, [16]);
        let y = k.output("y", DType::F32, [32]);
        k.for_(16, LoopKind::Vectorize, |k, c| k.store(y, c.clone() * 2, Expr::load(x, c)));
        let kernel = k.finish().unwrap();
        let Stmt::For { var, body, .. } = &kernel.body[0] else { panic!("loop") };
        assert!(plan(&kernel, *var, body).is_none());
    }
}
