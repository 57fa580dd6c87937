//! The resource bound of a kernel: what one call may allocate (its temps) and how many
//! statements it may execute, checked against [`relay_runtime::Limits`] before a kernel read
//! from an executable is compiled. Unlike the bounds proof ([`super::check_bounds`]), which
//! knows the call's syms, this runs once per kernel with syms unknown: a temp or a loop
//! whose size depends on a sym or on loaded data has no static bound and is rejected (the
//! compiler emits only statically shaped kernels).

use super::bounds::Range;
use super::{BufferRole, Extent, Index, Kernel, Stmt, VarDecl, VerifyError};
use relay_runtime::Limits;

impl Kernel {
    /// Checks that the kernel stays within `limits`: every buffer of constant shape and the
    /// temps together fit [`Limits::max_tensor_bytes`], no temp has a sym dimension, and
    /// the statements a call executes (loop extents multiplied along each nest, `gemm` as
    /// `m·n·k`) stay within [`Limits::max_kernel_work`]. Call it on a verified kernel.
    ///
    /// # Errors
    /// [`VerifyError::Resources`], naming the buffer or loop, the figure and the limit.
    pub fn check_resources(&self, limits: &Limits) -> Result<(), VerifyError> {
        let mut temp_bytes: u64 = 0;
        for b in &self.buffers {
            let fail = |message: String| VerifyError::Resources(format!("buffer `{}`: {message}", b.name));
            let dims: Option<Vec<i64>> =
                b.shape.iter().map(|e| if let Extent::Const(c) = e { Some(*c) } else { None }).collect();
            match (dims, b.role) {
                (Some(dims), role) => {
                    let bytes = limits.check_tensor(b.dtype, &dims).map_err(fail)?;
                    if role == BufferRole::Temp {
                        temp_bytes = temp_bytes.saturating_add(bytes);
                    }
                }
                (None, BufferRole::Temp) => return Err(fail("a temp whose size depends on a sym".into())),
                // The caller allocates parameters, under its own caps.
                (None, _) => {}
            }
        }
        if temp_bytes > limits.max_tensor_bytes {
            return Err(VerifyError::Resources(format!(
                "temps take {temp_bytes} bytes together, over the limit of {}",
                limits.max_tensor_bytes
            )));
        }
        let work = Work { vars: &self.vars, ranges: vec![None; self.vars.len()] }.block(&self.body)?;
        if work > u128::from(limits.max_kernel_work) {
            return Err(VerifyError::Resources(format!(
                "a call may execute {work} statements, over the limit of {}",
                limits.max_kernel_work
            )));
        }
        Ok(())
    }
}

/// Counts an upper bound of the statements a call executes, knowing each enclosing loop
/// variable's range.
struct Work<'k> {
    vars: &'k [VarDecl],
    ranges: Vec<Option<Range>>,
}

impl Work<'_> {
    fn block(&mut self, body: &[Stmt]) -> Result<u128, VerifyError> {
        body.iter().try_fold(0u128, |n, s| Ok(n.saturating_add(self.stmt(s)?)))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<u128, VerifyError> {
        Ok(match s {
            Stmt::For { var, extent, body, .. } => {
                let name = || self.vars.get(var.index()).map_or("?", |v| v.name.as_str()).to_string();
                let hi = self.upper(extent).ok_or_else(|| {
                    VerifyError::Resources(format!(
                        "loop `{}` has an extent with no static bound (a sym or a loaded value)",
                        name()
                    ))
                })?;
                if hi <= 0 {
                    // The body never runs.
                    return Ok(1);
                }
                let slot = self
                    .ranges
                    .get_mut(var.index())
                    .ok_or(VerifyError::Undeclared { what: "loop variable", id: var.0 })?;
                *slot = Some(Range { lo: 0, hi: hi - 1 });
                let inner = self.block(body)?.max(1);
                self.ranges[var.index()] = None;
                (hi as u128).saturating_mul(inner)
            }
            Stmt::Store { .. } | Stmt::Assign { .. } => 1,
            Stmt::If { then, otherwise, .. } => {
                1u128.saturating_add(self.block(then)?).saturating_add(self.block(otherwise)?)
            }
            Stmt::Gemm { m, n, k, .. } => {
                let dim = |d: i64| u128::try_from(d).unwrap_or(0);
                dim(*m).saturating_mul(dim(*n)).saturating_mul(dim(*k)).max(1)
            }
            Stmt::DepthwiseConv2d { window, .. } => {
                let [out, ..] = window.lens().unwrap_or([0; 3]);
                let taps = window.kernel[0].saturating_mul(window.kernel[1]);
                u128::try_from(out).unwrap_or(0).saturating_mul(u128::try_from(taps).unwrap_or(0)).max(1)
            }
        })
    }

    /// The largest value `i` can take, if it has a static bound.
    fn upper(&self, i: &Index) -> Option<i128> {
        self.range(i).map(|r| r.hi)
    }

    fn range(&self, i: &Index) -> Option<Range> {
        match i {
            Index::Const(c) => Some(Range::point(*c)),
            Index::Var(v) => self.ranges.get(v.index()).copied().flatten(),
            Index::Bin(op, a, b) => Range::bin(*op, self.range(a)?, self.range(b)?).ok(),
            Index::Sym(_) | Index::Value(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Expr, KernelBuilder, LoopKind};
    use relay_devices::DType;

    fn limits(max_tensor_bytes: u64, max_kernel_work: u64) -> Limits {
        Limits { max_tensor_bytes, max_kernel_work, ..Limits::default() }
    }

    fn message(k: &Kernel, limits: &Limits) -> String {
        k.check_resources(limits).unwrap_err().to_string()
    }

    /// `y[i] = 1` over `rows × 4` elements, the rows in an outer loop.
    fn fill(rows: i64) -> Kernel {
        let mut k = KernelBuilder::new("fill");
        let y = k.output("y", DType::F32, [rows, 4]);
        k.for_(rows, LoopKind::Serial, |k, i| {
            k.for_(4, LoopKind::Serial, |k, j| k.store_at(y, &[i.clone(), j], Expr::f32(1.0)))
        });
        k.finish().unwrap()
    }

    #[test]
    fn work_is_the_product_of_extents_at_the_limit_and_past_it() {
        assert_eq!(fill(8).check_resources(&limits(1 << 20, 32)), Ok(()));
        let m = message(&fill(8), &limits(1 << 20, 31));
        assert_eq!(m, "a call may execute 32 statements, over the limit of 31");
    }

    #[test]
    fn an_inner_extent_bounded_by_an_outer_variable_counts_its_largest_value() {
        // for i in 0..10 { for j in 0..i + 1 { store } }: at most 10 · 10 statements.
        let mut k = KernelBuilder::new("triangle");
        let y = k.output("y", DType::F32, [10]);
        k.for_(10, LoopKind::Serial, |k, i| {
            k.for_(i.clone() + 1, LoopKind::Serial, |k, _| k.store(y, i.clone(), Expr::f32(0.0)))
        });
        let k = k.finish().unwrap();
        assert_eq!(k.check_resources(&limits(1 << 20, 100)), Ok(()));
        assert!(k.check_resources(&limits(1 << 20, 99)).is_err());
    }

    #[test]
    fn gemm_counts_its_products() {
        let mut k = KernelBuilder::new("mm");
        let a = k.input("a", DType::F32, [2, 3]);
        let b = k.input("b", DType::F32, [3, 4]);
        let y = k.output("y", DType::F32, [2, 4]);
        k.gemm(y, a, b, 2, 4, 3, false);
        let k = k.finish().unwrap();
        assert_eq!(k.check_resources(&limits(1 << 20, 24)), Ok(()));
        assert!(message(&k, &limits(1 << 20, 23)).contains("24 statements"));
    }

    #[test]
    fn temps_are_bounded_one_by_one_and_together() {
        let mut k = KernelBuilder::new("scratch");
        let t = k.temp("t", DType::F32, [1i64 << 40]);
        let y = k.output("y", DType::F32, [1]);
        k.store(y, 0, Expr::load(t, 0));
        let m = message(&k.finish().unwrap(), &Limits::default());
        assert!(
            m.starts_with("buffer `t`: a float32 tensor of 1 dimension(s) takes 4398046511104 bytes"),
            "{m}"
        );

        let mut k = KernelBuilder::new("two");
        let (t, u) = (k.temp("t", DType::F32, [4]), k.temp("u", DType::F32, [4]));
        let y = k.output("y", DType::F32, [1]);
        k.store(y, 0, Expr::load(t, 0) + Expr::load(u, 0));
        let k = k.finish().unwrap();
        assert_eq!(k.check_resources(&limits(32, 10)), Ok(()));
        assert_eq!(message(&k, &limits(31, 10)), "temps take 32 bytes together, over the limit of 31");
    }

    #[test]
    fn a_temp_over_a_sym_has_no_static_bound() {
        let mut k = KernelBuilder::new("dyn");
        let n = k.sym("n");
        let x = k.input("x", DType::F32, [Extent::Sym(n)]);
        let t = k.temp("t", DType::F32, [Extent::Sym(n)]);
        let y = k.output("y", DType::F32, [1]);
        k.store(y, 0, Expr::load(t, 0) + Expr::load(x, 0));
        let m = message(&k.finish().unwrap(), &Limits::default());
        assert_eq!(m, "buffer `t`: a temp whose size depends on a sym");
    }
}
