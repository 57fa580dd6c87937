//! A plain tree-walking interpreter of kir: the oracle JIT and OpenCL kernels are tested
//! against. It evaluates every operator with [`super::eval_binary`] and friends
//! (transcendentals in `f64`, rounded once), one element at a time, with no contraction or
//! reassociation.
//!
//! It accepts exactly the calls backends accept: the kernel must verify, the arguments must
//! pass [`check_args`] and the accesses [`check_bounds`]. It then still checks every access
//! and index operation, reporting [`InterpError::Internal`] if one escapes the proof, which
//! makes it a cross-check of the bounds prover too.

use super::{cast, eval_binary, eval_unary, half};
use super::{
    check_args, check_bounds, BoundsError, BufferId, BufferRole, CallError, Expr, Index, IndexOp, Kernel,
    Stmt, VerifyError,
};
use relay_devices::{DType, DTypeCode, Element, Scalar, Tensor, TensorError};

/// Why an interpreted call failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InterpError {
    /// The kernel is malformed.
    #[error(transparent)]
    Verify(#[from] VerifyError),
    /// The tensors or syms do not fit the kernel.
    #[error(transparent)]
    Call(#[from] CallError),
    /// The accesses could not be proved in bounds.
    #[error(transparent)]
    Bounds(#[from] BoundsError),
    /// Writing an output back failed.
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// An access or operation the verifier and the bounds proof should have excluded: a bug
    /// in them.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Runs `kernel` on `inputs`, writing `outputs` in place (destination-passing style), with
/// sym values `syms`. Shapes, dtypes and counts must match the declarations.
pub fn run(
    kernel: &Kernel,
    inputs: &[&Tensor],
    outputs: &mut [Tensor],
    syms: &[i64],
) -> Result<(), InterpError> {
    kernel.verify()?;
    check_args(kernel, inputs, outputs, syms)?;
    check_bounds(kernel, syms)?;
    let mut ins = inputs.iter().copied();
    let mut outs = outputs.iter();
    let mut buffers = Vec::with_capacity(kernel.buffers.len());
    for (b, decl) in kernel.buffers.iter().enumerate() {
        let tensor = match decl.role {
            BufferRole::Input => ins.next(),
            BufferRole::Output => outs.next(),
            BufferRole::Temp => None,
        };
        let data = match tensor {
            Some(t) => (0..t.len()).filter_map(|i| t.get(i)).collect(),
            None => {
                let len = super::buffer_shape(kernel, super::BufferId(b as u32), syms)
                    .map(|s| s.iter().product::<i64>())
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| InterpError::Internal(format!("temp `{}` has no size", decl.name)))?;
                vec![cast(Scalar::Int(0), decl.dtype); len]
            }
        };
        buffers.push(data);
    }
    let locals = kernel.locals.iter().map(|l| cast(Scalar::Int(0), l.dtype)).collect();
    let mut m = Machine { k: kernel, syms, buffers, locals, vars: vec![0; kernel.vars.len()] };
    m.stmts(&kernel.body)?;
    let outs = kernel.buffers_with_role(BufferRole::Output).zip(outputs.iter_mut());
    for (buf, tensor) in outs {
        let data = std::mem::take(&mut m.buffers[buf.index()]);
        *tensor = to_tensor(tensor.dtype(), tensor.shape().to_vec(), &data)?;
    }
    Ok(())
}

fn collect<T: Element>(shape: Vec<usize>, data: &[Scalar]) -> Result<Tensor, TensorError> {
    Tensor::from_vec(shape, data.iter().map(|&s| T::from_scalar(s)).collect())
}

fn to_tensor(dtype: DType, shape: Vec<usize>, data: &[Scalar]) -> Result<Tensor, TensorError> {
    match dtype {
        DType::BOOL => collect::<bool>(shape, data),
        DType::I8 => collect::<i8>(shape, data),
        DType::I16 => collect::<i16>(shape, data),
        DType::I32 => collect::<i32>(shape, data),
        DType::I64 => collect::<i64>(shape, data),
        DType::U8 => collect::<u8>(shape, data),
        DType::U16 => collect::<u16>(shape, data),
        DType::U32 => collect::<u32>(shape, data),
        DType::U64 => collect::<u64>(shape, data),
        DType::F32 => collect::<f32>(shape, data),
        DType::F64 => collect::<f64>(shape, data),
        // Exact: the values were rounded to the half float by the kernel's casts.
        DType::F16 => collect::<::half::f16>(shape, data),
        DType::BF16 => collect::<::half::bf16>(shape, data),
        other => Err(TensorError::UnsupportedDType(other)),
    }
}

struct Machine<'k> {
    k: &'k Kernel,
    syms: &'k [i64],
    buffers: Vec<Vec<Scalar>>,
    locals: Vec<Scalar>,
    vars: Vec<i64>,
}

fn internal(what: impl Into<String>) -> InterpError {
    InterpError::Internal(what.into())
}

impl Machine<'_> {
    fn stmts(&mut self, body: &[Stmt]) -> Result<(), InterpError> {
        body.iter().try_for_each(|s| self.stmt(s))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), InterpError> {
        match s {
            Stmt::For { var, extent, body, .. } => {
                let n = self.index(extent)?;
                for i in 0..n {
                    *self.vars.get_mut(var.index()).ok_or_else(|| internal("loop variable"))? = i;
                    self.stmts(body)?;
                }
            }
            Stmt::Store { buf, index, value } => {
                let i = self.index(index)?;
                let (v, _) = self.expr(value)?;
                let slot = usize::try_from(i)
                    .ok()
                    .and_then(|i| self.buffers.get_mut(buf.index())?.get_mut(i))
                    .ok_or_else(|| internal(format!("store out of bounds at {i}")))?;
                *slot = v;
            }
            Stmt::Assign { local, value } => {
                let (v, _) = self.expr(value)?;
                *self.locals.get_mut(local.index()).ok_or_else(|| internal("local"))? = v;
            }
            Stmt::If { cond, then, otherwise } => {
                let (c, _) = self.expr(cond)?;
                if c == Scalar::Bool(true) {
                    self.stmts(then)?;
                } else {
                    self.stmts(otherwise)?;
                }
            }
            Stmt::Gemm { out, a, b, b_offset, b_rows, m, n, k, trans_b } => {
                let b_offset = self.index(b_offset)?;
                self.gemm([*out, *a, *b], (b_offset, b_rows), [*m, *n, *k], *trans_b)?
            }
        }
        Ok(())
    }

    /// The loops of [`Stmt::Gemm`], each output summed in order in `f64` and rounded once.
    fn gemm(
        &mut self,
        [out, a, b]: [BufferId; 3],
        (b_offset, b_rows): (i64, &super::RowOffsets),
        [m, n, k]: [i64; 3],
        trans_b: bool,
    ) -> Result<(), InterpError> {
        let size = |d: i64| usize::try_from(d).unwrap_or(0);
        let (m, n, k) = (size(m), size(n), size(k));
        let b_offset = usize::try_from(b_offset).map_err(|_| internal("gemm offset"))?;
        b_rows.last().ok_or_else(|| internal("gemm rows"))?;
        let rows: Vec<usize> = b_rows.offsets().map(size).collect();
        let row = |r: usize| rows.get(r).copied().ok_or_else(|| internal("gemm rows"));
        let read = |buf: &Vec<Scalar>, i: usize| match buf.get(i) {
            Some(Scalar::Float(v)) => Ok(*v),
            _ => Err(internal("gemm reads outside its buffers or a non-float")),
        };
        let mut sums = Vec::with_capacity(m * n);
        {
            let (ab, bb) = (self.buffers.get(a.index()), self.buffers.get(b.index()));
            let (Some(ab), Some(bb)) = (ab, bb) else { return Err(internal("gemm buffer")) };
            for i in 0..m {
                for j in 0..n {
                    let mut acc = 0f64;
                    for p in 0..k {
                        let bi = b_offset + if trans_b { row(j)? + p } else { row(p)? + j };
                        acc += read(ab, i * k + p)? * read(bb, bi)?;
                    }
                    sums.push(Scalar::Float(f64::from(acc as f32)));
                }
            }
        }
        let ob = self.buffers.get_mut(out.index()).ok_or_else(|| internal("gemm buffer"))?;
        for (i, v) in sums.into_iter().enumerate() {
            *ob.get_mut(i).ok_or_else(|| internal("gemm writes outside its buffer"))? = v;
        }
        Ok(())
    }

    fn index(&mut self, i: &Index) -> Result<i64, InterpError> {
        let overflow = || internal("index arithmetic overflowed");
        Ok(match i {
            Index::Const(c) => *c,
            Index::Var(v) => *self.vars.get(v.index()).ok_or_else(|| internal("loop variable"))?,
            Index::Sym(s) => *self.syms.get(s.index()).ok_or_else(|| internal("sym"))?,
            Index::Value(e) => match self.expr(e)?.0 {
                Scalar::Bool(b) => i64::from(b),
                Scalar::Int(v) => v,
                Scalar::UInt(v) => v as i64,
                Scalar::Float(_) => return Err(internal("float index value")),
            },
            Index::Bin(op, a, b) => {
                let (a, b) = (self.index(a)?, self.index(b)?);
                match op {
                    IndexOp::Add => a.checked_add(b).ok_or_else(overflow)?,
                    IndexOp::Sub => a.checked_sub(b).ok_or_else(overflow)?,
                    IndexOp::Mul => a.checked_mul(b).ok_or_else(overflow)?,
                    IndexOp::FloorDiv | IndexOp::FloorMod if b <= 0 => {
                        return Err(internal("non-positive index divisor"))
                    }
                    IndexOp::FloorDiv => a.div_euclid(b),
                    IndexOp::FloorMod => a.rem_euclid(b),
                    IndexOp::Min => a.min(b),
                    IndexOp::Max => a.max(b),
                }
            }
        })
    }

    /// The value of `e` and its dtype.
    fn expr(&mut self, e: &Expr) -> Result<(Scalar, DType), InterpError> {
        let ill_typed = || internal("ill-typed expression");
        Ok(match e {
            Expr::Const(lit) => (lit.value(), lit.dtype()),
            Expr::Load { buf, index } => {
                let i = self.index(index)?;
                let dtype = self.k.buffer(*buf).ok_or_else(|| internal("buffer"))?.dtype;
                let v = usize::try_from(i)
                    .ok()
                    .and_then(|i| self.buffers.get(buf.index())?.get(i))
                    .ok_or_else(|| internal(format!("load out of bounds at {i}")))?;
                (*v, dtype)
            }
            Expr::Local(l) => {
                let v = *self.locals.get(l.index()).ok_or_else(|| internal("local"))?;
                (v, self.k.locals[l.index()].dtype)
            }
            Expr::Binary(op, a, b) => {
                let ((a, dt), (b, _)) = (self.expr(a)?, self.expr(b)?);
                let r = eval_binary(*op, dt, a, b).ok_or_else(ill_typed)?;
                (r, if op.is_comparison() { DType::BOOL } else { dt })
            }
            Expr::Unary(op, a) => {
                let (a, dt) = self.expr(a)?;
                (eval_unary(*op, dt, a).ok_or_else(ill_typed)?, dt)
            }
            Expr::Select(c, a, b) => {
                let (c, _) = self.expr(c)?;
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                if c == Scalar::Bool(true) {
                    a
                } else {
                    b
                }
            }
            Expr::Cast(to, a) => {
                let (v, from) = self.expr(a)?;
                let converted = match from.is_half_float() || to.is_half_float() {
                    true => half::cast(v, *to).ok_or_else(ill_typed)?,
                    false => cast(v, *to),
                };
                (converted, *to)
            }
            Expr::Reinterpret(to, a) => {
                let (v, from) = self.expr(a)?;
                (reinterpret(v, from, *to).ok_or_else(ill_typed)?, *to)
            }
            Expr::Index(i) => (Scalar::Int(self.index(i)?), DType::I64),
        })
    }
}

/// The bits of `v` (of dtype `from`) as a value of `to`, in `to`'s normal form; `None` for
/// `bool`s, half floats or different widths (which the verifier rejects). A signalling NaN
/// comes back quiet: the interpreter holds `float32` values as `f64`, which the JIT does not.
fn reinterpret(v: Scalar, from: DType, to: DType) -> Option<Scalar> {
    let plain = |d: DType| matches!(d.code, DTypeCode::Int | DTypeCode::UInt | DTypeCode::Float);
    if from.bits != to.bits || !plain(from) || !plain(to) || from.is_half_float() || to.is_half_float() {
        return None;
    }
    let width = u32::from(from.bits);
    let bits = match v {
        Scalar::Float(x) if width == 32 => u64::from((x as f32).to_bits()),
        Scalar::Float(x) => x.to_bits(),
        Scalar::Int(i) => i as u64,
        Scalar::UInt(u) => u,
        Scalar::Bool(_) => return None,
    };
    let bits = if width < 64 { bits & ((1u64 << width) - 1) } else { bits };
    Some(match to.code {
        DTypeCode::Float if width == 32 => Scalar::Float(f64::from(f32::from_bits(bits as u32))),
        DTypeCode::Float => Scalar::Float(f64::from_bits(bits)),
        // Sign-extends from the top bit of the width.
        DTypeCode::Int => Scalar::Int(((bits << (64 - width)) as i64) >> (64 - width)),
        _ => Scalar::UInt(bits),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Extent, KernelBuilder, LoopKind};

    #[test]
    fn runs_a_row_sum_with_an_accumulator() {
        let mut k = KernelBuilder::new("row_sum");
        let n = k.sym("n");
        let x = k.input("x", DType::I32, [Extent::Sym(n), Extent::Const(3)]);
        let y = k.output("y", DType::I32, [n]);
        let acc = k.local("acc", DType::I32);
        k.for_(n, LoopKind::Serial, |k, i| {
            k.assign(acc, Expr::i32(0));
            k.for_(3, LoopKind::Vectorize, |k, j| {
                let v = Expr::local(acc) + k.load(x, &[i.clone(), j]);
                k.assign(acc, v);
            });
            k.store(y, i, Expr::local(acc));
        });
        let kernel = k.finish().unwrap();
        let input = Tensor::from_vec(vec![2, 3], vec![1, 2, 3, 4, 5, 6i32]).unwrap();
        let mut out = [Tensor::zeros(DType::I32, vec![2]).unwrap()];
        run(&kernel, &[&input], &mut out, &[2]).unwrap();
        assert_eq!(out[0].as_slice::<i32>().unwrap(), &[6, 15]);
        assert!(matches!(run(&kernel, &[&input], &mut out, &[3]), Err(InterpError::Call(_))));
    }

    #[test]
    fn temps_start_at_zero_and_outputs_may_be_read() {
        let mut k = KernelBuilder::new("accumulate");
        let t = k.temp("t", DType::F32, [2]);
        let y = k.output("y", DType::F32, [2]);
        k.for_(2, LoopKind::Serial, |k, i| {
            k.store(t, i.clone(), Expr::load(t, i.clone()) + Expr::f32(1.0));
            k.store(y, i.clone(), Expr::load(y, i.clone()) + Expr::load(t, i));
        });
        let kernel = k.finish().unwrap();
        let mut out = [Tensor::from_vec(vec![2], vec![10f32, 20.0]).unwrap()];
        run(&kernel, &[], &mut out, &[]).unwrap();
        assert_eq!(out[0].as_slice::<f32>().unwrap(), &[11.0, 21.0]);
    }

    #[test]
    fn reinterpretation_reads_the_same_bits_and_the_verifier_checks_widths() {
        let bits = |v, from, to| reinterpret(v, from, to);
        assert_eq!(bits(Scalar::Float(1.0), DType::F32, DType::I32), Some(Scalar::Int(0x3f80_0000)));
        assert_eq!(bits(Scalar::Float(-0.0), DType::F32, DType::U32), Some(Scalar::UInt(0x8000_0000)));
        assert_eq!(bits(Scalar::Int(-1), DType::I8, DType::U8), Some(Scalar::UInt(255)));
        assert_eq!(
            bits(Scalar::UInt(0x8000_0000), DType::U32, DType::I32),
            Some(Scalar::Int(i32::MIN.into()))
        );
        assert!(matches!(bits(Scalar::Int(i64::MIN), DType::I64, DType::F64),
            Some(Scalar::Float(f)) if f.to_bits() == (-0.0f64).to_bits()));
        assert_eq!(bits(Scalar::Float(1.0), DType::F32, DType::I64), None);
        assert_eq!(bits(Scalar::Float(1.0), DType::F16, DType::I16), None);
        let mut k = KernelBuilder::new("narrowing");
        let x = k.input("x", DType::F32, [1]);
        let y = k.output("y", DType::I16, [1]);
        k.store(y, 0, Expr::load(x, 0).reinterpret(DType::I16));
        assert_eq!(k.finish().unwrap_err(), VerifyError::BadOperand { op: "reinterpret", dtype: DType::F32 });
    }
}
