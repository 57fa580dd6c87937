//! The memory-safety proof of a call: interval arithmetic over loop ranges and sym values
//! showing that every access is inside its buffer and no index arithmetic overflows or
//! divides by a non-positive number.
//!
//! Backends rely on it to emit unchecked loads and stores: it runs before every call of a
//! kernel with syms, and once at compile time for a kernel without. It is conservative
//! (conditions are ignored, a loop variable ranges over `0..=max_extent - 1`), so some safe
//! kernels are rejected; compute rules clamp guarded indices to stay provable.

use super::{BufferId, Expr, Index, IndexOp, Kernel, Stmt, VarId};
use relay_devices::{DType, DTypeCode};

/// Why a call's accesses could not be proved safe.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BoundsError {
    /// An access whose index may leave the buffer.
    #[error("index of buffer `{buffer}` may range over {lo}..={hi}, outside 0..{len}")]
    OutOfBounds {
        /// The buffer.
        buffer: String,
        /// Smallest possible index.
        lo: i128,
        /// Largest possible index.
        hi: i128,
        /// Elements in the buffer.
        len: i64,
    },
    /// A floor division or modulo whose divisor may be `<= 0`.
    #[error("index divisor may be {0}, not positive")]
    Divisor(i128),
    /// Index arithmetic that may overflow `i64`.
    #[error("index arithmetic may overflow")]
    Overflow,
    /// Missing syms or an undeclared id: call [`super::check_args`] and verify first.
    #[error("kernel or syms are malformed (verify the kernel and check the arguments first)")]
    Malformed,
}

/// A closed interval `lo..=hi` of index values (`i128`, so products of `i64` bounds cannot
/// wrap). Shared with the index simplifier ([`super::simplify_indices`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Range {
    pub(super) lo: i128,
    pub(super) hi: i128,
}

impl Range {
    pub(super) fn point(v: i64) -> Range {
        Range { lo: v.into(), hi: v.into() }
    }

    fn checked(lo: i128, hi: i128) -> Result<Range, BoundsError> {
        let fits = |v: i128| v >= i128::from(i64::MIN) && v <= i128::from(i64::MAX);
        if fits(lo) && fits(hi) {
            Ok(Range { lo, hi })
        } else {
            Err(BoundsError::Overflow)
        }
    }

    fn from_corners(c: [i128; 4]) -> Result<Range, BoundsError> {
        let lo = c.iter().copied().min().unwrap_or(0);
        let hi = c.iter().copied().max().unwrap_or(0);
        Range::checked(lo, hi)
    }

    /// The range of `op(x, y)` for every `x` in `a` and `y` in `b`.
    ///
    /// # Errors
    /// [`BoundsError::Overflow`] when the result may leave `i64`, [`BoundsError::Divisor`]
    /// when a divisor may be `<= 0`.
    pub(super) fn bin(op: IndexOp, a: Range, b: Range) -> Result<Range, BoundsError> {
        match op {
            IndexOp::Add => Range::checked(a.lo + b.lo, a.hi + b.hi),
            IndexOp::Sub => Range::checked(a.lo - b.hi, a.hi - b.lo),
            IndexOp::Mul => Range::from_corners([a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]),
            IndexOp::FloorDiv => {
                positive(b)?;
                // Floor division by a positive divisor is monotone in each argument,
                // so the extremes are at the corners.
                let d = |x: i128, y: i128| x.div_euclid(y);
                Range::from_corners([d(a.lo, b.lo), d(a.lo, b.hi), d(a.hi, b.lo), d(a.hi, b.hi)])
            }
            IndexOp::FloorMod => {
                positive(b)?;
                if a.lo >= 0 && a.hi < b.lo {
                    Ok(a)
                } else {
                    Ok(Range { lo: 0, hi: b.hi - 1 })
                }
            }
            IndexOp::Min => Ok(Range { lo: a.lo.min(b.lo), hi: a.hi.min(b.hi) }),
            IndexOp::Max => Ok(Range { lo: a.lo.max(b.lo), hi: a.hi.max(b.hi) }),
        }
    }
}

/// Proves that running `kernel` with `syms` makes only in-bounds accesses and safe index
/// arithmetic. Call it after [`super::check_args`] (the syms must be the call's).
pub fn check_bounds(kernel: &Kernel, syms: &[i64]) -> Result<(), BoundsError> {
    let lens = (0..kernel.buffers.len())
        .map(|b| {
            let shape =
                super::buffer_shape(kernel, BufferId(b as u32), syms).ok_or(BoundsError::Malformed)?;
            Ok(shape.iter().product())
        })
        .collect::<Result<Vec<i64>, _>>()?;
    let mut p = Prover { kernel, syms, lens, vars: vec![None; kernel.vars.len()] };
    p.stmts(&kernel.body)
}

struct Prover<'k> {
    kernel: &'k Kernel,
    syms: &'k [i64],
    lens: Vec<i64>,
    vars: Vec<Option<Range>>,
}

impl Prover<'_> {
    fn stmts(&mut self, body: &[Stmt]) -> Result<(), BoundsError> {
        body.iter().try_for_each(|s| self.stmt(s))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), BoundsError> {
        match s {
            Stmt::For { var, extent, body, .. } => {
                let ext = self.index(extent)?;
                if ext.hi <= 0 {
                    // The body never runs, so nothing in it is accessed.
                    return Ok(());
                }
                self.bind(*var, Some(Range { lo: 0, hi: ext.hi - 1 }))?;
                self.stmts(body)?;
                self.bind(*var, None)
            }
            Stmt::Store { buf, index, value } => {
                self.access(*buf, index)?;
                self.expr(value)
            }
            Stmt::Assign { value, .. } => self.expr(value),
            Stmt::If { cond, then, otherwise } => {
                self.expr(cond)?;
                self.stmts(then)?;
                self.stmts(otherwise)
            }
            Stmt::Gemm { out, a, b, b_offset, b_rows, m, n, k, trans_b } => {
                let span = super::gemm_b_span(*n, *k, b_rows, *trans_b).ok_or(BoundsError::Overflow)?;
                let (m, n, k) = (i128::from(*m), i128::from(*n), i128::from(*k));
                if m > 0 && n > 0 {
                    self.range(*out, Range::checked(0, m * n - 1)?)?;
                    if k > 0 {
                        self.range(*a, Range::checked(0, m * k - 1)?)?;
                        let first = self.index(b_offset)?;
                        self.range(*b, Range::checked(first.lo, first.hi + i128::from(span) - 1)?)?;
                    }
                }
                Ok(())
            }
        }
    }

    fn bind(&mut self, var: VarId, range: Option<Range>) -> Result<(), BoundsError> {
        *self.vars.get_mut(var.index()).ok_or(BoundsError::Malformed)? = range;
        Ok(())
    }

    fn access(&mut self, buf: BufferId, index: &Index) -> Result<(), BoundsError> {
        let r = self.index(index)?;
        self.range(buf, r)
    }

    fn range(&mut self, buf: BufferId, r: Range) -> Result<(), BoundsError> {
        let len = *self.lens.get(buf.index()).ok_or(BoundsError::Malformed)?;
        if r.lo < 0 || r.hi >= i128::from(len) {
            let buffer = self.kernel.buffers[buf.index()].name.clone();
            return Err(BoundsError::OutOfBounds { buffer, lo: r.lo, hi: r.hi, len });
        }
        Ok(())
    }

    fn expr(&mut self, e: &Expr) -> Result<(), BoundsError> {
        match e {
            Expr::Const(_) | Expr::Local(_) => Ok(()),
            Expr::Load { buf, index } => self.access(*buf, index),
            Expr::Binary(_, a, b) => {
                self.expr(a)?;
                self.expr(b)
            }
            Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Reinterpret(_, a) => self.expr(a),
            Expr::Select(c, a, b) => {
                self.expr(c)?;
                self.expr(a)?;
                self.expr(b)
            }
            Expr::Index(i) => self.index(i).map(drop),
        }
    }

    fn index(&mut self, i: &Index) -> Result<Range, BoundsError> {
        match i {
            Index::Const(c) => Ok(Range::point(*c)),
            Index::Sym(s) => self.syms.get(s.index()).map(|v| Range::point(*v)).ok_or(BoundsError::Malformed),
            Index::Var(v) => self.vars.get(v.index()).copied().flatten().ok_or(BoundsError::Malformed),
            Index::Value(e) => {
                self.expr(e)?;
                let dtype = self.kernel.dtype_of(e).map_err(|_| BoundsError::Malformed)?;
                Ok(dtype_range(dtype))
            }
            Index::Bin(op, a, b) => {
                let (a, b) = (self.index(a)?, self.index(b)?);
                Range::bin(*op, a, b)
            }
        }
    }
}

fn positive(r: Range) -> Result<(), BoundsError> {
    if r.lo > 0 {
        Ok(())
    } else {
        Err(BoundsError::Divisor(r.lo))
    }
}

/// The values an integer or bool expression of `dtype` can take, as an `i64` index.
pub(super) fn dtype_range(dtype: DType) -> Range {
    let bits = u32::from(dtype.bits.clamp(1, 64));
    match dtype.code {
        DTypeCode::Bool => Range { lo: 0, hi: 1 },
        DTypeCode::UInt if bits < 64 => Range { lo: 0, hi: (1i128 << bits) - 1 },
        // A uint64 above i64::MAX becomes a negative index: the full i64 range.
        _ => Range { lo: -(1i128 << (bits - 1)), hi: (1i128 << (bits - 1)) - 1 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Expr, KernelBuilder, LoopKind};

    fn gather(clamp: bool) -> Kernel {
        let mut k = KernelBuilder::new("take");
        let n = k.sym("n");
        let data = k.input("data", DType::F32, [10]);
        let idx = k.input("idx", DType::I32, [n]);
        let out = k.output("out", DType::F32, [n]);
        k.for_(n, LoopKind::Serial, |k, i| {
            let mut at = Index::value(Expr::load(idx, i.clone()));
            if clamp {
                at = at.clamp(0, 9);
            }
            k.store(out, i, Expr::load(data, at));
        });
        k.finish().unwrap()
    }

    #[test]
    fn proves_clamped_gathers_and_rejects_raw_ones() {
        assert_eq!(check_bounds(&gather(true), &[5]), Ok(()));
        assert!(matches!(check_bounds(&gather(false), &[5]), Err(BoundsError::OutOfBounds { .. })));
        // With n = 0 the loop never runs: nothing to prove.
        assert_eq!(check_bounds(&gather(false), &[0]), Ok(()));
    }

    #[test]
    fn row_major_nests_are_exact() {
        let mut k = KernelBuilder::new("copy2d");
        let (h, w) = (k.sym("h"), k.sym("w"));
        let x = k.input("x", DType::F32, [h, w]);
        let y = k.output("y", DType::F32, [h, w]);
        k.for_(h, LoopKind::Serial, |k, i| {
            k.for_(w, LoopKind::Serial, |k, j| {
                let v = k.load(x, &[i.clone(), j.clone()]);
                k.store_at(y, &[i.clone(), j], v);
            })
        });
        let kernel = k.finish().unwrap();
        assert_eq!(check_bounds(&kernel, &[3, 4]), Ok(()));
        assert_eq!(check_bounds(&kernel, &[0, 4]), Ok(()));
    }

    #[test]
    fn divisors_must_be_positive() {
        let mut k = KernelBuilder::new("div");
        let d = k.sym("d");
        let y = k.output("y", DType::I64, [4]);
        k.for_(4, LoopKind::Serial, |k, i| k.store(y, i.clone(), Expr::index(i.floor_div(d))));
        let kernel = k.finish().unwrap();
        assert_eq!(check_bounds(&kernel, &[2]), Ok(()));
        assert_eq!(check_bounds(&kernel, &[0]), Err(BoundsError::Divisor(0)));
    }
}
