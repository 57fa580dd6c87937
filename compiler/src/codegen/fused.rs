//! Calls of primitive functions compiled to kir (FuseOps groups, and single operators with a
//! compute rule when fused kernels are on): `AllocTensor` for the output, then an
//! `InvokePacked` whose kernel descriptor carries the encoded kir kernel for the host to
//! JIT-compile. Everything else goes to the reference-kernel path in `primitive.rs`.

use super::emit::{Dest, FnEmitter};
use crate::diagnostics::Diagnostic;
use crate::ir::{ExprId, ExprKind, Function, Module, TypeKind};
use crate::kir::BufferRole;
use relay_vm::{Imm, Instr, KernelIdx};

/// Emits the call of primitive `f` on `args` as a fused kernel, if fused kernels are on and
/// `f` lowers to kir; `Ok(false)` leaves the call to the reference path.
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
    let Some(ops) = em.cx.kir_ops else { return Ok(false) };
    let m = em.cx.m;
    let ExprKind::Function(func) = &m.expr(f).kind else { return Ok(false) };
    let single = matches!(&m.expr(func.body).kind, ExprKind::Call { args, .. }
        if args.iter().all(|a| matches!(m.expr(*a).kind, ExprKind::Var(_) | ExprKind::Literal(_))));
    if single && all_scalar(em, func) {
        return Ok(false);
    }
    let kernel = match crate::lower_kir::lower_primitive(m, em.cx.types, ops, func) {
        Ok(k) => k,
        Err(_) if single => return Ok(false),
        Err(why) => return Err(em.error(f, format!("internal: a fused group does not lower to kir: {why}"))),
    };
    let regs = em.atoms(args)?;
    let mut inputs = Vec::with_capacity(kernel.num_inputs());
    for (&r, &p) in regs.iter().zip(&func.params) {
        let fields = em.cx.types.var(p).map_or(0, |t| match m.types.kind(t) {
            TypeKind::Tuple(fs) => fs.len(),
            _ => 0,
        });
        if fields == 0 {
            inputs.push(r);
        }
        for i in 0..fields as u32 {
            let field = em.fresh();
            em.emit(Instr::GetField { dst: field, obj: r, index: Imm(i) });
            inputs.push(field);
        }
    }
    let out = em.reg_for(dest);
    let shape: Vec<i64> = kernel
        .buffers_with_role(BufferRole::Output)
        .filter_map(|b| kernel.buffer(b))
        .flat_map(|b| b.shape.iter().map(|e| e.resolve(&[]).unwrap_or(0)))
        .collect();
    let dtype =
        kernel.buffers_with_role(BufferRole::Output).filter_map(|b| kernel.buffer(b)).map(|b| b.dtype).next();
    let Some(dtype) = dtype else { return Err(em.error(f, "internal: a kernel without an output")) };
    em.emit(Instr::AllocTensor { dst: out, dtype, shape: shape.into() });
    let index = em.cx.fused_kernel(&kernel);
    em.emit(Instr::InvokePacked {
        kernel: KernelIdx(index),
        inputs: inputs.into(),
        outputs: vec![out].into(),
    });
    em.finish(out, dest);
    Ok(true)
}

/// Whether every parameter and the result of `func` are 0-d tensors (unboxed scalars).
fn all_scalar(em: &FnEmitter<'_, '_>, func: &Function) -> bool {
    let m: &Module = em.cx.m;
    let scalar = |t| matches!(m.types.kind(t), TypeKind::Tensor { shape, .. } if shape.is_empty());
    let params = func.params.iter().all(|&p| em.cx.types.var(p).is_some_and(scalar));
    params && em.cx.types.expr(func.body).is_some_and(scalar)
}
