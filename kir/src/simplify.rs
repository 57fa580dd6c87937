//! Index simplification by the ranges of loop variables ([`simplify_indices`]).

use super::bounds::{dtype_range, Range};
use super::{Expr, Index, IndexOp, Kernel, Stmt};

/// Simplifies every index of `kernel` (loads, stores, loop extents, `index(..)` values) using
/// the ranges of loop variables, so a backend sees contiguous accesses through the `%` and
/// `//` that compute rules leave in flat indices. The kernel means exactly what it meant
/// before.
///
/// A fused `expand_dims(take(e, w))` reads `e[clamp(w) * 300 + (i0 * 300 + i1) % 300]` with
/// `i0` in `0..1`; simplified, the read is `e[clamp(w) * 300 + i1]`, which the Cranelift
/// backend loads as whole vectors instead of lane by lane.
///
/// Every rewrite holds for all values the variables can take (index arithmetic is on
/// mathematical integers: [`super::check_bounds`] rejects kernels where it could leave
/// `i64`), and is made only when the interval facts it needs are proved:
/// - an index whose range is one value `v` is `v` (so a loop variable of a loop of extent 1
///   is `0`, and `x // c` is `k` when `x` lies in `k·c..(k+1)·c`);
/// - `x % c` is `x`, and `x // c` is `0`, when `x` lies in `0..c`;
/// - `(a·c + b) % c` is `b % c` and `(a·c + b) // c` is `a + b // c` for a constant `c > 0`
///   and any integer `a` (floor semantics: `floor((a·c + b) / c) = a + floor(b / c)`), where
///   `a·c` is a term of a sum or difference that is a multiple of `c` (a product by a
///   constant that `c` divides, or a constant);
/// - `min(x, y)` is `x` when `x <= y` for every value either can take (`max` likewise);
/// - then the folds of [`Index::bin`] (constants, `x + 0`, `x * 1`, `x * 0`).
///
/// Ranges are the bounds proof's interval arithmetic: constants, loop variables in
/// `0..extent` (the body of a loop whose extent is at most 0 never runs and is left alone),
/// syms in `0..=i64::MAX` (any size), an [`Index::Value`] in its dtype's range. An interval
/// that might overflow is unknown and blocks the rewrites that need it.
///
/// Run it on a verified kernel: an undeclared or out-of-scope loop variable is treated as
/// unknown (no panic), but the walk recurses, and the verifier is what bounds nesting
/// ([`super::MAX_DEPTH`]). [`super::KernelBuilder::finish`] runs it on every kernel it builds.
pub fn simplify_indices(kernel: &mut Kernel) {
    let mut body = std::mem::take(&mut kernel.body);
    let mut s = Simplifier { kernel, vars: vec![None; kernel.vars.len()] };
    s.stmts(&mut body);
    kernel.body = body;
}

struct Simplifier<'k> {
    kernel: &'k Kernel,
    /// The range of each loop variable inside its loop; `None` outside it or when unknown.
    vars: Vec<Option<Range>>,
}

/// The whole `i64` range a sym can take (syms are sizes, `>= 0`).
const SYM: Range = Range { lo: 0, hi: i64::MAX as i128 };

impl Simplifier<'_> {
    fn stmts(&mut self, body: &mut [Stmt]) {
        body.iter_mut().for_each(|s| self.stmt(s));
    }

    fn stmt(&mut self, s: &mut Stmt) {
        match s {
            Stmt::For { var, extent, body, .. } => {
                self.rewrite(extent);
                let range = match self.range(extent) {
                    Some(r) if r.hi >= 1 => Some(Range { lo: 0, hi: r.hi - 1 }),
                    // The body never runs: nothing in it needs simplifying.
                    Some(_) => return,
                    None => None,
                };
                // A verified kernel binds each variable once; restoring the previous binding
                // keeps a malformed one conservative rather than wrong.
                let Some(slot) = self.vars.get_mut(var.index()) else { return };
                let outer = std::mem::replace(slot, range);
                self.stmts(body);
                if let Some(slot) = self.vars.get_mut(var.index()) {
                    *slot = outer;
                }
            }
            Stmt::Store { index, value, .. } => {
                self.rewrite(index);
                self.expr(value);
            }
            Stmt::Assign { value, .. } => self.expr(value),
            Stmt::If { cond, then, otherwise } => {
                self.expr(cond);
                self.stmts(then);
                self.stmts(otherwise);
            }
            Stmt::Gemm { .. } => {}
        }
    }

    fn expr(&self, e: &mut Expr) {
        match e {
            Expr::Const(_) | Expr::Local(_) => {}
            Expr::Load { index, .. } | Expr::Index(index) => self.rewrite(index),
            Expr::Binary(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Reinterpret(_, a) => self.expr(a),
            Expr::Select(c, a, b) => {
                self.expr(c);
                self.expr(a);
                self.expr(b);
            }
        }
    }

    fn rewrite(&self, i: &mut Index) {
        let old = std::mem::replace(i, Index::Const(0));
        *i = self.simplify(old);
    }

    /// The range of `i`, if known.
    fn range(&self, i: &Index) -> Option<Range> {
        match i {
            Index::Const(c) => Some(Range::point(*c)),
            Index::Sym(_) => Some(SYM),
            Index::Var(v) => self.vars.get(v.index()).copied().flatten(),
            Index::Value(e) => self.kernel.dtype_of(e).ok().map(dtype_range),
            Index::Bin(op, a, b) => Range::bin(*op, self.range(a)?, self.range(b)?).ok(),
        }
    }

    fn simplify(&self, i: Index) -> Index {
        match i {
            Index::Bin(op, a, b) => {
                let (a, b) = (self.simplify(*a), self.simplify(*b));
                self.node(op, a, b)
            }
            Index::Value(mut e) => {
                self.expr(&mut e);
                Index::Value(e)
            }
            Index::Var(_) => self.fold_point(i),
            Index::Const(_) | Index::Sym(_) => i,
        }
    }

    /// `op(a, b)` with `a` and `b` already simplified.
    fn node(&self, op: IndexOp, a: Index, b: Index) -> Index {
        match (op, b.as_const()) {
            (IndexOp::FloorDiv | IndexOp::FloorMod, Some(c)) if c > 0 => return self.div_mod(op, a, c),
            (IndexOp::Min | IndexOp::Max, _) => {
                if let (Some(ra), Some(rb)) = (self.range(&a), self.range(&b)) {
                    // `a <= b` or `b <= a` for every value either can take.
                    match (op, ra.hi <= rb.lo, rb.hi <= ra.lo) {
                        (IndexOp::Min, true, _) | (IndexOp::Max, _, true) => return a,
                        (IndexOp::Min, _, true) | (IndexOp::Max, true, _) => return b,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        self.fold_point(Index::bin(op, a, b))
    }

    /// `x // c` or `x % c` (`op`) for a constant `c > 0`, `x` simplified.
    ///
    /// Not recursive: the rest `r` of a split has no term left to split but, at most, a
    /// constant, which [`Index::bin`] folds.
    fn div_mod(&self, op: IndexOp, x: Index, c: i64) -> Index {
        match split(&x, c) {
            Some((q, r)) if !self.below(&x, c) => {
                let rest = self.div_mod_by_range(op, r, c);
                if op == IndexOp::FloorMod {
                    rest
                } else {
                    self.fold_point(Index::bin(IndexOp::Add, q, rest))
                }
            }
            _ => self.div_mod_by_range(op, x, c),
        }
    }

    /// `x // c` or `x % c` knowing only the range of `x`.
    fn div_mod_by_range(&self, op: IndexOp, x: Index, c: i64) -> Index {
        if !self.below(&x, c) {
            return self.fold_point(Index::bin(op, x, Index::Const(c)));
        }
        if op == IndexOp::FloorMod {
            x
        } else {
            Index::Const(0)
        }
    }

    /// Whether `x` provably lies in `0..c`.
    fn below(&self, x: &Index, c: i64) -> bool {
        self.range(x).is_some_and(|r| r.lo >= 0 && r.hi < i128::from(c))
    }

    /// `i` as a constant if its range is a single value.
    fn fold_point(&self, i: Index) -> Index {
        match self.range(&i) {
            Some(r) if r.lo == r.hi => i64::try_from(r.lo).map_or(i, Index::Const),
            _ => i,
        }
    }
}

/// `x` as `q·c + r` (an identity on integers), when some term of `x` is a nonzero multiple of
/// `c`: `q` collects those terms divided by `c`, `r` the rest. `None` when there is none.
fn split(x: &Index, c: i64) -> Option<(Index, Index)> {
    match x {
        Index::Const(k) if k.div_euclid(c) != 0 => {
            Some((Index::Const(k.div_euclid(c)), Index::Const(k.rem_euclid(c))))
        }
        Index::Bin(IndexOp::Mul, a, b) => {
            let (a, m) = match (a.as_const(), b.as_const()) {
                (_, Some(m)) => (a, m),
                (Some(m), None) => (b, m),
                (None, None) => return None,
            };
            (m != 0 && m % c == 0).then(|| ((**a).clone() * (m / c), Index::Const(0)))
        }
        Index::Bin(op @ (IndexOp::Add | IndexOp::Sub), u, v) => {
            let (su, sv) = (split(u, c), split(v, c));
            if su.is_none() && sv.is_none() {
                return None;
            }
            let whole =
                |s: Option<(Index, Index)>, t: &Index| s.unwrap_or_else(|| (Index::Const(0), t.clone()));
            let ((qu, ru), (qv, rv)) = (whole(su, u), whole(sv, v));
            Some((Index::bin(*op, qu, qv), Index::bin(*op, ru, rv)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        interp, BufferDecl, BufferId, BufferRole, Extent, KernelBuilder, LoopKind, SymDecl, SymId, VarDecl,
        VarId,
    };
    use proptest::prelude::*;
    use relay_devices::{DType, Tensor};

    fn v(n: u32) -> Index {
        Index::Var(VarId(n))
    }

    /// `for v0 in 0..e0 { for v1 in 0..e1 { ... out[v0, v1, ...] = index(i) } }`, with one
    /// sym `n` that extents may use.
    fn kernel(extents: &[Extent], i: Index) -> Kernel {
        let vars: Vec<VarId> = (0..extents.len()).map(|n| VarId(n as u32)).collect();
        let flat = extents
            .iter()
            .zip(&vars)
            .fold(Index::Const(0), |acc, (&e, &var)| acc * Index::from(e) + Index::Var(var));
        let mut body = vec![Stmt::Store { buf: BufferId(0), index: flat, value: Expr::Index(i) }];
        for (&e, &var) in extents.iter().zip(&vars).rev() {
            body = vec![Stmt::For { var, extent: e.into(), kind: LoopKind::Serial, body }];
        }
        let out = BufferDecl {
            name: "out".into(),
            role: BufferRole::Output,
            dtype: DType::I64,
            shape: extents.to_vec(),
        };
        Kernel {
            name: "t".into(),
            buffers: vec![out],
            syms: vec![SymDecl { name: "n".into() }],
            locals: vec![],
            vars: vars.iter().map(|var| VarDecl { name: format!("v{}", var.0) }).collect(),
            body,
        }
    }

    /// The stored index of [`kernel`] after simplification.
    fn simplified(extents: &[Extent], i: Index) -> Index {
        let mut k = kernel(extents, i);
        simplify_indices(&mut k);
        let mut body = &k.body;
        loop {
            match body.first() {
                Some(Stmt::For { body: inner, .. }) => body = inner,
                Some(Stmt::Store { value: Expr::Index(i), .. }) => return i.clone(),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    /// Runs [`kernel`] before and after simplification with `n = sym`: the outputs must agree.
    fn assert_same_values(extents: &[Extent], sym: i64, i: Index) {
        let before = kernel(extents, i);
        let mut after = before.clone();
        simplify_indices(&mut after);
        let shape = extents.iter().map(|e| e.resolve(&[sym]).unwrap() as usize).collect::<Vec<_>>();
        let run = |k: &Kernel| {
            let mut out = [Tensor::zeros(DType::I64, shape.clone()).unwrap()];
            interp::run(k, &[], &mut out, &[sym]).unwrap();
            out[0].as_slice::<i64>().unwrap().to_vec()
        };
        assert_eq!(run(&before), run(&after), "{before}\n{after}");
    }

    fn c(n: i64) -> Extent {
        Extent::Const(n)
    }

    const N: Extent = Extent::Sym(SymId(0));

    #[test]
    fn a_loop_of_extent_one_binds_zero() {
        let i = (v(0) * 300 + v(1)).floor_mod(300);
        assert_eq!(simplified(&[c(1), c(300)], i.clone()), v(1));
        assert_same_values(&[c(1), c(300)], 0, i);
        assert_eq!(simplified(&[c(1), c(3)], v(0) + v(1) * 2), v(1) * 2);
    }

    #[test]
    fn multiples_of_the_divisor_leave_mod_and_div() {
        let x = v(0) * 300 + v(1);
        assert_eq!(simplified(&[c(4), c(300)], x.clone().floor_mod(300)), v(1));
        assert_eq!(simplified(&[c(4), c(300)], x.clone().floor_div(300)), v(0));
        // Row-major flattening nests the products: ((v0·3 + v1)·4 + v2) // 4 = v0·3 + v1.
        let x = (v(0) * 3 + v(1)) * 4 + v(2);
        assert_eq!(simplified(&[c(2), c(3), c(4)], x.clone().floor_div(4)), v(0) * 3 + v(1));
        assert_eq!(simplified(&[c(2), c(3), c(4)], x.floor_mod(4)), v(2));
        // A multiple of the divisor: (v0·600 + v1) // 300 = v0·2.
        assert_eq!(simplified(&[c(4), c(300)], (v(0) * 600 + v(1)).floor_div(300)), v(0) * 2);
        for e in [
            (v(0) * 300 + v(1)).floor_mod(300),
            (v(0) * 600 + v(1)).floor_div(300),
            (300 * v(0) - v(1)).floor_div(300),
            (300 * v(0) - v(1)).floor_mod(300),
        ] {
            assert_same_values(&[c(4), c(300)], 0, e);
        }
    }

    #[test]
    fn remainders_that_may_reach_the_divisor_keep_their_mod() {
        // v1 reaches 300: the multiple goes, the `%` and `//` of the rest stay.
        let x = v(0) * 300 + v(1);
        assert_eq!(simplified(&[c(4), c(301)], x.clone().floor_mod(300)), v(1).floor_mod(300));
        assert_eq!(simplified(&[c(4), c(301)], x.clone().floor_div(300)), v(0) + v(1).floor_div(300));
        assert_same_values(&[c(4), c(301)], 0, x.clone().floor_mod(300));
        assert_same_values(&[c(4), c(301)], 0, x.floor_div(300));
        // A constant term is split too: (v1 + 301) % 300 = (v1 + 1) % 300, which is v1 + 1
        // only while v1 + 1 < 300.
        let y = (v(1) + 301).floor_mod(300);
        assert_eq!(simplified(&[c(1), c(299)], y.clone()), v(1) + 1);
        assert_eq!(simplified(&[c(1), c(300)], y.clone()), (v(1) + 1).floor_mod(300));
        assert_same_values(&[c(1), c(300)], 0, y);
        // Not a multiple of the divisor: nothing to take out.
        let z = (v(0) * 301 + v(1)).floor_mod(300);
        assert_eq!(simplified(&[c(4), c(300)], z.clone()), z);
    }

    #[test]
    fn negative_ranges_are_not_taken_for_remainders() {
        // v0 - 3 lies in -3..=0: floor semantics, not truncation, and no rewrite to v0 - 3.
        let x = (v(0) - 3).floor_mod(4);
        assert_eq!(simplified(&[c(4)], x.clone()), x);
        assert_same_values(&[c(4)], 0, x);
        let d = (v(0) - 3).floor_div(4);
        assert_eq!(simplified(&[c(4)], d.clone()), d);
        // (4·v0 - 3) % 4 = (-3) % 4 = 1 and (4·v0 - 3) // 4 = v0 - 1, exactly.
        assert_eq!(simplified(&[c(4)], (v(0) * 4 - 3).floor_mod(4)), Index::Const(1));
        assert_eq!(simplified(&[c(4)], (v(0) * 4 - 3).floor_div(4)), v(0) + -1);
        assert_same_values(&[c(4)], 0, (v(0) * 4 - 3).floor_div(4));
        // -v0 over 0..3 is in -2..=0, so its quotient by 3 may be -1 or 0.
        assert_eq!(simplified(&[c(3)], (0 - v(0)).floor_div(3) + 0), (0 - v(0)).floor_div(3));
        // A divisor that is not a positive constant is left alone.
        assert_eq!(simplified(&[c(4)], (v(0) * 4).floor_mod(v(0))), (v(0) * 4).floor_mod(v(0)));
    }

    #[test]
    fn sym_extents_have_no_upper_bound() {
        // v0 in 0..n may reach any size: no `%` or `//` of it is dropped.
        assert_eq!(simplified(&[N], v(0).floor_mod(300)), v(0).floor_mod(300));
        assert_eq!(simplified(&[N], v(0).floor_div(300)), v(0).floor_div(300));
        assert_eq!(simplified(&[N], v(0).min(299)), v(0).min(299));
        // ... but its multiples still go, and a constant extent still bounds v1.
        assert_eq!(simplified(&[N, c(300)], (v(0) * 300 + v(1)).floor_mod(300)), v(1));
        assert_eq!(simplified(&[N], v(0).max(0)), v(0));
        assert_same_values(&[N, c(300)], 3, (v(0) * 300 + v(1)).floor_div(300));
        assert_same_values(&[N], 700, v(0).floor_mod(300));
        // Loops that never run are left as they are.
        assert_eq!(simplified(&[c(0)], v(0).floor_mod(1 + v(0))), v(0).floor_mod(1 + v(0)));
    }

    #[test]
    fn min_and_max_go_when_ordered() {
        let clamp = v(0).clamp(0, 299);
        assert_eq!(simplified(&[c(300)], clamp.clone()), v(0));
        assert_eq!(simplified(&[c(301)], clamp.clone()), v(0).min(299));
        // Intervals do not relate v0 to v0 + 1: only ranges are compared.
        assert_eq!(simplified(&[c(300)], v(0).min(v(0) + 1)), v(0).min(v(0) + 1));
        assert_eq!(simplified(&[c(300)], v(0).min(v(0) + 300)), v(0));
        assert_eq!(simplified(&[c(300)], (v(0) - 5).max(0)), (v(0) - 5).max(0));
        assert_same_values(&[c(301)], 0, clamp);
    }

    #[test]
    fn a_take_of_one_row_loads_it_contiguously() {
        // The kernel FuseOps makes of expand_dims(take(%embedding, %word, axis=0), axis=0).
        let mut k = KernelBuilder::new("fused_take_expand_dims");
        let table = k.input("in0", DType::F32, [8217, 300]);
        let word = k.input("in1", DType::I32, Vec::<i64>::new());
        let out = k.output("out", DType::F32, [1, 300]);
        k.for_(1, LoopKind::Serial, |k, i0| {
            k.for_(300, LoopKind::Vectorize, |k, i1| {
                let row = Index::value(Expr::load(word, 0).cast(DType::I64)).clamp(0, 8216);
                let value = Expr::load(table, row * 300 + (i0.clone() * 300 + i1.clone()).floor_mod(300));
                k.store_at(out, &[i0, i1], value);
            })
        });
        let kernel = k.finish().unwrap();
        let row = Index::value(Expr::load(word, 0).cast(DType::I64)).clamp(0, 8216);
        let Stmt::For { body, .. } = &kernel.body[0] else { panic!("{kernel}") };
        let Stmt::For { body, .. } = &body[0] else { panic!("{kernel}") };
        let Stmt::Store { index, value: Expr::Load { index: load, .. }, .. } = &body[0] else {
            panic!("{kernel}")
        };
        assert_eq!(*index, v(1));
        assert_eq!(*load, row * 300 + v(1));
        assert!(kernel.to_string().contains("in0[min(max(int64(in1[0]), 0), 8216) * 300 + i1]"), "{kernel}");
    }

    /// Index expressions over three loop variables with small ranges.
    fn arb_index() -> impl Strategy<Value = Index> {
        let leaf = prop_oneof![(0u32..3).prop_map(v), (-12i64..12).prop_map(Index::Const)];
        leaf.prop_recursive(4, 24, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| a + b),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| a - b),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| a * b),
                (inner.clone(), -6i64..7).prop_map(|(a, m)| a * m),
                (inner.clone(), 1i64..9).prop_map(|(a, d)| a.floor_div(d)),
                (inner.clone(), 1i64..9).prop_map(|(a, d)| a.floor_mod(d)),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| a.min(b)),
                (inner.clone(), inner).prop_map(|(a, b)| a.max(b)),
            ]
        })
    }

    proptest! {
        #[test]
        fn simplification_keeps_every_value(i in arb_index(), e0 in 0i64..4, e1 in 1i64..6, sym in 0i64..9) {
            let extents = [c(e0), N, c(e1)];
            // Products of products may overflow: such kernels are rejected, not simplified.
            prop_assume!(crate::check_bounds(&kernel(&extents, i.clone()), &[sym]).is_ok());
            assert_same_values(&extents, sym, i);
        }
    }
}
