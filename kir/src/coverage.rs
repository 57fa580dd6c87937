//! Which buffers a kernel writes whole before reading them: the fact that lets a caller hand
//! it memory that was not zeroed first (ARCHITECTURE.md §3, "Memory").
//!
//! kir promises zero-filled temps, and the VM gives kernels zeroed outputs. Almost every
//! kernel then stores every element of its output once, before anything reads it (a fused
//! epilogue, a `gemm`, a depthwise convolution's interior and border loops), so the zeroing is
//! wasted stores: a sixth of MobileNet-v2's run. [`written_before_read`] proves the cases
//! where it is: it walks the top-level statements that do not read the buffer, in order, and
//! marks, element by element, what their stores certainly write on every call — stores under
//! no `if`, at indices of constants and loop variables, in loops of extents known before the
//! call. The proof is conservative: a store it cannot place, a loop sized at run time, or a
//! buffer too large to mark leaves the answer "no", never a wrong "yes".
//!
//! The buffer-access walker ([`accesses`]) is here too: the analysis and the backends' own
//! ones (the JIT's temp refills and vector tails) read the same facts.

use crate::{BufferId, Expr, Extent, Index, IndexOp, Kernel, Stmt, VarId};
use std::collections::HashSet;

/// Buffers of more elements than this are not marked (a bitset of 8 MiB); they are reported
/// as not written whole.
const MAX_ELEMENTS: i64 = 1 << 26;

/// Work (index evaluations and elements marked) one buffer's proof may take before it gives
/// up, so a kernel of huge loop nests costs the compiler milliseconds, not seconds.
const MAX_STEPS: u64 = 1 << 26;

/// Whether every call of `kernel` writes every element of `buf` before it reads any of
/// them: then whatever the buffer held before the call cannot affect it, and the caller
/// need not zero it. `false` when `buf` is not a buffer of constant shape, or when the
/// proof fails (see the module documentation): unknown means "must zero".
pub fn written_before_read(kernel: &Kernel, buf: BufferId) -> bool {
    let Some(len) = elements(kernel, buf).filter(|&n| n <= MAX_ELEMENTS) else { return false };
    let mut marks = Marks { buf, len, bits: vec![0; (len as usize).div_ceil(64)], left: len, steps: 0 };
    let mut vars = vec![None; kernel.vars.len()];
    for s in &kernel.body {
        if marks.left == 0 {
            return true;
        }
        let (mut stored, mut read) = (HashSet::new(), HashSet::new());
        accesses(s, &mut stored, &mut read);
        if read.contains(&buf) {
            return false;
        }
        if stored.contains(&buf) && marks.statement(s, &mut vars).is_none() {
            return false;
        }
    }
    marks.left == 0
}

/// The elements of one buffer that the statements seen so far certainly write.
struct Marks {
    buf: BufferId,
    /// The buffer's element count.
    len: i64,
    /// One bit per element, set once written.
    bits: Vec<u64>,
    /// Elements not written yet.
    left: i64,
    /// Work done, against [`MAX_STEPS`].
    steps: u64,
}

impl Marks {
    /// Marks what `s` certainly writes to the buffer, with the enclosing loop variables'
    /// values in `vars`; `None` when the work runs over [`MAX_STEPS`].
    fn statement(&mut self, s: &Stmt, vars: &mut [Option<i64>]) -> Option<()> {
        match s {
            Stmt::Store { buf, index, .. } if *buf == self.buf => {
                if let Some((at, 0)) = affine(index, vars, None) {
                    self.mark(at, 0, 1)?;
                }
                Some(())
            }
            Stmt::Gemm { out, m, n, .. } if *out == self.buf => self.mark(0, 1, m.checked_mul(*n)?),
            Stmt::For { var, extent, body, .. } => {
                // A loop sized at run time writes what the data says: not counted.
                let Some((extent, 0)) = affine(extent, vars, None) else { return Some(()) };
                for s in body {
                    match s {
                        // A store right in the loop writes `base + step·var` for each `var`.
                        Stmt::Store { buf, index, .. } if *buf == self.buf => {
                            match affine(index, vars, Some(*var)) {
                                Some((base, step)) => self.mark(base, step, extent)?,
                                None => self.each(*var, extent, s, vars)?,
                            }
                        }
                        Stmt::For { .. } | Stmt::Gemm { .. } if stores_to(s, self.buf) => {
                            self.each(*var, extent, s, vars)?
                        }
                        // Under an `if`, the data decides; other statements do not store here.
                        _ => {}
                    }
                }
                Some(())
            }
            Stmt::Store { .. } | Stmt::Gemm { .. } | Stmt::Assign { .. } | Stmt::If { .. } => Some(()),
        }
    }

    /// Marks what `s` writes in each iteration `0..extent` of loop variable `var`.
    fn each(&mut self, var: VarId, extent: i64, s: &Stmt, vars: &mut [Option<i64>]) -> Option<()> {
        for v in 0..extent {
            self.step(1)?;
            *vars.get_mut(var.index())? = Some(v);
            self.statement(s, vars)?;
        }
        *vars.get_mut(var.index())? = None;
        Some(())
    }

    /// Marks elements `base + step·k` for `k` in `0..count`; indices outside the buffer
    /// (which the bounds proof rejects anyway) mark nothing.
    fn mark(&mut self, base: i64, step: i64, count: i64) -> Option<()> {
        self.step(u64::try_from(count).unwrap_or(0))?;
        for k in 0..count {
            let at = step.checked_mul(k)?.checked_add(base)?;
            if (0..self.len).contains(&at) {
                let (word, bit) = ((at / 64) as usize, at % 64);
                let w = self.bits.get_mut(word)?;
                if *w & (1 << bit) == 0 {
                    *w |= 1 << bit;
                    self.left -= 1;
                }
            }
        }
        Some(())
    }

    fn step(&mut self, n: u64) -> Option<()> {
        self.steps = self.steps.saturating_add(n);
        (self.steps <= MAX_STEPS).then_some(())
    }
}

/// `index` as `base + step·var` given the values of the other loop variables in `vars`
/// (`var` itself, when given, is left symbolic); `None` when it is not of that form: a
/// run-time size or value, a variable without a value, or `var` under a division, modulo,
/// `min`, `max` or product with itself. With no `var`, `step` is 0 and `base` the value.
fn affine(index: &Index, vars: &[Option<i64>], var: Option<VarId>) -> Option<(i64, i64)> {
    Some(match index {
        Index::Const(c) => (*c, 0),
        Index::Var(v) if Some(*v) == var => (0, 1),
        Index::Var(v) => ((*vars.get(v.index())?)?, 0),
        Index::Sym(_) | Index::Value(_) => return None,
        Index::Bin(op, a, b) => {
            let ((a0, a1), (b0, b1)) = (affine(a, vars, var)?, affine(b, vars, var)?);
            match op {
                IndexOp::Add => (a0.checked_add(b0)?, a1.checked_add(b1)?),
                IndexOp::Sub => (a0.checked_sub(b0)?, a1.checked_sub(b1)?),
                IndexOp::Mul if a1 == 0 => (a0.checked_mul(b0)?, a0.checked_mul(b1)?),
                IndexOp::Mul if b1 == 0 => (a0.checked_mul(b0)?, a1.checked_mul(b0)?),
                // Constants: the one index arithmetic, `Index::bin`'s folding.
                _ if a1 == 0 && b1 == 0 => {
                    (Index::bin(*op, Index::Const(a0), Index::Const(b0)).as_const()?, 0)
                }
                _ => return None,
            }
        }
    })
}

/// Whether `s` stores to `buf` (or a `gemm` in it writes it).
fn stores_to(s: &Stmt, buf: BufferId) -> bool {
    let (mut stored, mut read) = (HashSet::new(), HashSet::new());
    accesses(s, &mut stored, &mut read);
    stored.contains(&buf)
}

/// The element count of `buf`, if its shape is constant.
pub(crate) fn elements(kernel: &Kernel, buf: BufferId) -> Option<i64> {
    kernel.buffer(buf)?.shape.iter().try_fold(1i64, |n, e| match e {
        Extent::Const(c) => n.checked_mul(*c),
        Extent::Sym(_) => None,
    })
}

/// Adds the buffers `s` stores to (or a `gemm` writes) to `stored`, and those it reads to
/// `read` (loads in values, indices, conditions and loop extents; a `gemm`'s operands).
pub fn accesses(s: &Stmt, stored: &mut HashSet<BufferId>, read: &mut HashSet<BufferId>) {
    match s {
        Stmt::For { extent, body, .. } => {
            index_buffers(extent, read);
            body.iter().for_each(|s| accesses(s, stored, read));
        }
        Stmt::Store { buf, index, value } => {
            stored.insert(*buf);
            index_buffers(index, read);
            expr_buffers(value, read);
        }
        Stmt::Assign { value, .. } => expr_buffers(value, read),
        Stmt::If { cond, then, otherwise } => {
            expr_buffers(cond, read);
            then.iter().chain(otherwise).for_each(|s| accesses(s, stored, read));
        }
        Stmt::Gemm { out, a, b, .. } => {
            stored.insert(*out);
            read.extend([*a, *b]);
        }
    }
}

/// Adds every buffer `e` reads to `out`.
fn expr_buffers(e: &Expr, out: &mut HashSet<BufferId>) {
    e.visit(&mut note_loads(out));
}

/// Adds every buffer `i` reads (in `Value` indices) to `out`.
fn index_buffers(i: &Index, out: &mut HashSet<BufferId>) {
    i.visit_exprs(&mut note_loads(out));
}

/// An expression visitor that adds the buffer of each load it meets to `out`.
fn note_loads(out: &mut HashSet<BufferId>) -> impl FnMut(&Expr) + '_ {
    move |x| {
        if let Expr::Load { buf, .. } = x {
            out.insert(*buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KernelBuilder, LoopKind};
    use relay_devices::DType;

    /// The outputs and temps of `k` that the proof finds written whole, by name.
    fn whole(k: KernelBuilder) -> Vec<String> {
        let k = k.finish().unwrap();
        (0..k.buffers.len() as u32)
            .map(BufferId)
            .filter(|&b| written_before_read(&k, b))
            .map(|b| k.buffers[b.index()].name.clone())
            .collect()
    }

    #[test]
    fn a_row_major_store_of_every_element_writes_whole() {
        let mut k = KernelBuilder::new("t");
        let x = k.input("x", DType::F32, [2, 3]);
        let y = k.output("y", DType::F32, [2, 3]);
        k.for_(2, LoopKind::Serial, |k, i| {
            k.for_(3, LoopKind::Vectorize, |k, j| {
                let at = i.clone() * 3 + j;
                k.store(y, at.clone(), Expr::load(x, at))
            })
        });
        assert_eq!(whole(k), ["y"]);
    }

    #[test]
    fn disjoint_loops_and_a_transposed_store_write_whole() {
        // A depthwise convolution's border and interior loops, a concatenation's two halves,
        // a column-major store through a reduction's accumulator.
        let mut k = KernelBuilder::new("t");
        let x = k.input("x", DType::F32, [4]);
        let halves = k.output("halves", DType::F32, [2, 4]);
        let columns = k.output("columns", DType::F32, [3, 2]);
        let acc = k.local("acc", DType::F32);
        k.for_(2, LoopKind::Serial, |k, row| {
            k.for_(1, LoopKind::Serial, |k, j| k.store(halves, row.clone() * 4 + j, Expr::f32(0.0)));
            k.for_(3, LoopKind::Vectorize, |k, j| {
                k.store(halves, row.clone() * 4 + (j.clone() + 1), Expr::load(x, j))
            });
        });
        k.for_(2, LoopKind::Serial, |k, c| {
            k.for_(3, LoopKind::Serial, |k, r| {
                k.assign(acc, Expr::f32(0.0));
                k.for_(4, LoopKind::Serial, |k, p| {
                    let v = Expr::local(acc) + Expr::load(x, p);
                    k.assign(acc, v)
                });
                k.store(columns, r * 2 + c.clone(), Expr::local(acc))
            })
        });
        assert_eq!(whole(k), ["halves", "columns"]);
    }

    #[test]
    fn a_gemm_then_its_epilogue_writes_whole() {
        let mut k = KernelBuilder::new("t");
        let a = k.input("a", DType::F32, [2, 3]);
        let b = k.input("b", DType::F32, [4, 3]);
        let y = k.output("y", DType::F32, [2, 4]);
        k.gemm(y, a, b, 2, 4, 3, true);
        // The epilogue reads what the gemm wrote: the gemm came first, so the read is fine.
        k.for_(8, LoopKind::Vectorize, |k, i| {
            let v = Expr::load(y, i.clone()).max(Expr::f32(0.0));
            k.store(y, i, v)
        });
        assert_eq!(whole(k), ["y"]);
    }

    #[test]
    fn partial_conditional_data_dependent_or_read_first_stores_do_not() {
        let mut k = KernelBuilder::new("t");
        let x = k.input("x", DType::F32, [4]);
        let at = k.input("at", DType::I32, [4]);
        let partial = k.output("partial", DType::F32, [4]);
        let branched = k.output("branched", DType::F32, [4]);
        let gathered = k.output("gathered", DType::F32, [4]);
        let accumulated = k.output("accumulated", DType::F32, [4]);
        let strided = k.output("strided", DType::F32, [4]);
        k.for_(3, LoopKind::Serial, |k, i| k.store(partial, i.clone(), Expr::load(x, i)));
        k.for_(4, LoopKind::Serial, |k, i| {
            let cond = Expr::load(x, i.clone()).gt(Expr::f32(0.0));
            k.if_then(cond, |k| k.store(branched, i.clone(), Expr::f32(1.0)))
        });
        k.for_(4, LoopKind::Serial, |k, i| {
            let to = Index::value(Expr::load(at, i.clone())).clamp(0, 3);
            k.store(gathered, to, Expr::load(x, i))
        });
        k.for_(4, LoopKind::Serial, |k, i| {
            let v = Expr::load(accumulated, i.clone()) + Expr::load(x, i.clone());
            k.store(accumulated, i, v)
        });
        // Every other element, twice over.
        for _ in 0..2 {
            k.for_(2, LoopKind::Serial, |k, i| k.store(strided, i * 2, Expr::f32(1.0)));
        }
        assert!(whole(k).is_empty());
    }

    #[test]
    fn a_read_before_the_last_write_stops_the_proof() {
        let mut k = KernelBuilder::new("t");
        let x = k.input("x", DType::F32, [4]);
        let y = k.output("y", DType::F32, [4]);
        let t = k.temp("t", DType::F32, [4]);
        k.for_(2, LoopKind::Serial, |k, i| k.store(y, i.clone(), Expr::load(x, i)));
        // Reads element 3 before the next loop writes it.
        k.for_(4, LoopKind::Serial, |k, i| k.store(t, i.clone(), Expr::load(y, i)));
        k.for_(2, LoopKind::Serial, |k, i| k.store(y, i.clone() + 2, Expr::load(t, i)));
        assert_eq!(whole(k), ["t"]);
    }
}
