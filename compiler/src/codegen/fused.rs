//! Calls of primitive functions compiled to kir (FuseOps groups, and single operators with a
//! compute rule when fused kernels are on): `AllocTensor` for each output (left unzeroed,
//! `init=kernel`, where the kernel provably writes it whole before reading it), then an
//! `InvokePacked` whose kernel descriptor carries the encoded kir kernel for the host to
//! JIT-compile. Everything else goes to the reference-kernel path in `primitive.rs`.
//!
//! A multi-output group (FuseOps binds it as `let %t = fused(..); let %c = %t.0; ..`) writes
//! one output register per field: [`fused_fields`] leaves them in registers and the emitter
//! resolves the projections to them, so no tuple is built or taken apart at run time.

use super::emit::{Dest, FnEmitter};
use crate::diagnostics::Diagnostic;
use crate::ir::{ExprId, ExprKind, Function, Module, TypeKind};
use crate::kir::coverage::written_before_read;
use crate::kir::BufferRole;
use relay_runtime::{Imm, Init, Instr, KernelIdx, Reg};

/// Emits the call of primitive `f` on `args` as a fused kernel, if fused kernels are on and
/// `f` lowers to kir; `Ok(false)` leaves the call to the reference path. Several outputs
/// are returned as a tuple.
///
/// # Errors
/// A primitive of several operators that does not lower (FuseOps only groups operators
/// whose compute rules lower, so this is a compiler bug).
pub(crate) fn call_fused(
    em: &mut FnEmitter<'_, '_>,
    f: ExprId,
    args: &[ExprId],
    dest: Dest,
) -> Result<bool, Diagnostic> {
    let Some(outs) = invoke(em, f, args, Some(dest))? else { return Ok(false) };
    match outs[..] {
        [out] => em.finish(out, dest),
        _ => {
            let r = em.reg_for(dest);
            em.emit(Instr::AllocADT { dst: r, tag: Imm(0), fields: outs.into() });
            em.finish(r, dest);
        }
    }
    Ok(true)
}

/// Emits the call of primitive `f` on `args`, whose body is a tuple (a multi-output FuseOps
/// group), as one kernel; returns the registers of the tuple's fields (its outputs).
///
/// # Errors
/// Fused kernels are off (FuseOps makes such groups only when they are on), or as
/// [`call_fused`].
pub(crate) fn fused_fields(
    em: &mut FnEmitter<'_, '_>,
    f: ExprId,
    args: &[ExprId],
) -> Result<Vec<Reg>, Diagnostic> {
    invoke(em, f, args, None)?
        .ok_or_else(|| em.error(f, "internal: a multi-output primitive function without fused kernels"))
}

/// Emits `AllocTensor` for each output of `f`'s kernel (a single one into `dest`'s register
/// when given) and the `InvokePacked`; returns the output registers, or `None` when `f` is
/// left to the reference path.
fn invoke(
    em: &mut FnEmitter<'_, '_>,
    f: ExprId,
    args: &[ExprId],
    dest: Option<Dest>,
) -> Result<Option<Vec<Reg>>, Diagnostic> {
    if !em.cx.fused {
        return Ok(None);
    }
    let ops = em.cx.ops;
    let m = em.cx.m;
    let ExprKind::Function(func) = &m.expr(f).kind else { return Ok(None) };
    let single = matches!(&m.expr(func.body).kind, ExprKind::Call { args, .. }
        if args.iter().all(|a| matches!(m.expr(*a).kind, ExprKind::Var(_) | ExprKind::Literal(_))));
    if single && all_scalar(em, func) {
        return Ok(None);
    }
    let kernel = match crate::lower_kir::primitive_kernel(m, em.cx.types, ops, func) {
        Ok(k) => k,
        Err(_) if single => return Ok(None),
        Err(why) => return Err(em.error(f, format!("internal: a fused group does not lower to kir: {why}"))),
    };
    let mut inputs = Vec::with_capacity(kernel.num_inputs());
    for (&arg, &p) in args.iter().zip(&func.params) {
        let fields = em.cx.types.var(p).map_or(0, |t| match m.types.kind(t) {
            TypeKind::Tuple(fs) => fs.len(),
            _ => 0,
        });
        // A tuple whose fields are in registers (`concatenate((%a, %b))`) is never built.
        if let Some(regs) = em.tuple_fields(arg).filter(|regs| fields > 0 && regs.len() == fields) {
            inputs.extend_from_slice(regs);
            continue;
        }
        let r = em.atom(arg)?;
        if fields == 0 {
            inputs.push(r);
        }
        for i in 0..fields as u32 {
            let field = em.fresh();
            em.emit(Instr::GetField { dst: field, obj: r, index: Imm(i) });
            inputs.push(field);
        }
    }
    let buffers: Vec<_> = kernel
        .buffers_with_role(BufferRole::Output)
        .filter_map(|b| Some((kernel.buffer(b)?, written_before_read(&kernel, b))))
        .collect();
    if buffers.is_empty() {
        return Err(em.error(f, "internal: a kernel without an output"));
    }
    let mut outs = Vec::with_capacity(buffers.len());
    for (b, written) in buffers {
        let out = match dest {
            Some(dest) if kernel.num_outputs() == 1 => em.reg_for(dest),
            _ => em.fresh(),
        };
        let shape: Vec<i64> = b.shape.iter().map(|e| e.resolve(&[]).unwrap_or(0)).collect();
        // The call right after writes every element of an output proven so before reading
        // it: zeroing it first would be wasted stores (a sixth of MobileNet-v2's run).
        let init = if written { Init::Kernel } else { Init::Zero };
        em.emit(Instr::AllocTensor { dst: out, dtype: b.dtype, shape: shape.into(), init });
        outs.push(out);
    }
    let index = em.cx.fused_kernel(&kernel);
    em.emit(Instr::InvokePacked {
        kernel: KernelIdx(index),
        inputs: inputs.into(),
        outputs: outs.clone().into(),
    });
    Ok(Some(outs))
}

/// Whether every parameter and the result of `func` are 0-d tensors (unboxed scalars).
fn all_scalar(em: &FnEmitter<'_, '_>, func: &Function) -> bool {
    let m: &Module = em.cx.m;
    let scalar = |t| matches!(m.types.kind(t), TypeKind::Tensor { shape, .. } if shape.is_empty());
    let params = func.params.iter().all(|&p| em.cx.types.var(p).is_some_and(scalar));
    params && em.cx.types.expr(func.body).is_some_and(scalar)
}
