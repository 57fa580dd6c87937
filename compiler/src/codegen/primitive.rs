//! Calls of `Primitive=1` functions: unboxed scalar instructions when every value is a 0-d
//! tensor and the operator has one, otherwise `AllocTensor` for each statically shaped output
//! followed by a destination-passing `InvokePacked`.

use super::emit::{literal_value, Dest, FnEmitter};
use crate::diagnostics::Diagnostic;
use crate::ir::{ExprId, ExprKind, Module, TypeId, TypeKind};
use crate::op::ScalarForm;
use relay_runtime::{Imm, Init, Instr, KernelIdx, Reg};

/// Emits a call of the primitive function `f` on `args` into `dest`.
pub(crate) fn call_primitive(
    em: &mut FnEmitter<'_, '_>,
    f: ExprId,
    args: &[ExprId],
    dest: Dest,
) -> Result<(), Diagnostic> {
    // Fused kernels (FuseOps groups, compute rules) are emitted by `fused.rs`.
    if super::fused::call_fused(em, f, args, dest)? {
        return Ok(());
    }
    let m = em.cx.m;
    let ExprKind::Function(func) = &m.expr(f).kind else {
        return Err(em.error(f, "internal: primitive call of a non-function"));
    };
    let ExprKind::Call { callee, args: inner_args, attrs } = &m.expr(func.body).kind else {
        return Err(em.error(f, "primitive functions of more than one operator need the fusion compiler"));
    };
    let ExprKind::Op(op) = m.expr(*callee).kind else {
        return Err(em.error(f, "internal: a primitive function that does not call an operator"));
    };
    // Each operator argument comes from a call argument (through its parameter) or is a
    // literal written inside the primitive function.
    let mut sources = Vec::with_capacity(inner_args.len());
    for &a in inner_args {
        match m.expr(a).kind {
            ExprKind::Var(v) => match func.params.iter().position(|&p| p == v).and_then(|i| args.get(i)) {
                Some(&outer) => sources.push(outer),
                None => return Err(em.error(a, "internal: primitive argument is not a parameter")),
            },
            _ => sources.push(a),
        }
    }
    let op_name = m.name(op);
    let in_types: Option<Vec<TypeId>> = inner_args.iter().map(|&a| em.cx.types.expr(a)).collect();
    let out_type = em.cx.types.expr(func.body);
    let (Some(in_types), Some(out_type)) = (in_types, out_type) else {
        return Err(em.error(f, "internal: untyped primitive function"));
    };

    if in_types.iter().chain([&out_type]).all(|&t| is_scalar(m, t)) {
        if scalar_with_immediate(em, op_name, &sources, dest)? {
            return Ok(());
        }
        let inputs = em.atoms(&sources)?;
        let dst = em.reg_for(dest);
        if let Some(ins) = scalar_instr(em, op_name, &inputs, out_type, dst) {
            let dst = ins.defs()[0];
            em.emit(ins);
            em.finish(dst, dest);
            return Ok(());
        }
    }
    let inputs = em.atoms(&sources)?;

    // Kernels take tensors only: a tuple argument (`concatenate`, `stack`) is passed as its
    // fields, in order.
    let mut flat = Vec::with_capacity(inputs.len());
    for (&r, &t) in inputs.iter().zip(&in_types) {
        match m.types.kind(t) {
            TypeKind::Tuple(fs) => {
                for i in 0..fs.len() as u32 {
                    let field = em.fresh();
                    em.emit(Instr::GetField { dst: field, obj: r, index: Imm(i) });
                    flat.push(field);
                }
            }
            _ => flat.push(r),
        }
    }
    let inputs = flat;

    let out_types: Vec<TypeId> = match m.types.kind(out_type) {
        TypeKind::Tuple(fs) => fs.clone(),
        _ => vec![out_type],
    };
    let mut outputs = Vec::with_capacity(out_types.len());
    // A single output is written straight into the destination: a `Move` would copy the
    // reference and make the tensor look escaping to the memory plan.
    let single_output = !matches!(m.types.kind(out_type), TypeKind::Tuple(_));
    for &t in &out_types {
        let r = if single_output { em.reg_for(dest) } else { em.fresh() };
        if let TypeKind::Tensor { shape, dtype } = m.types.kind(t) {
            let dims: Option<Vec<i64>> = shape
                .iter()
                .map(|d| if let crate::ir::Dim::Known(n) = d { Some(*n) } else { None })
                .collect();
            // A `?` dimension leaves the register empty: the VM sizes it from the kernel's
            // shape function at run time.
            if let Some(dims) = dims {
                // Reference kernels carry no proof that they write their outputs whole: zeroed.
                em.emit(Instr::AllocTensor { dst: r, dtype: *dtype, shape: dims.into(), init: Init::Zero });
            }
        }
        outputs.push(r);
    }
    let kernel = em.cx.kernel(op_name, attrs, inputs.len() as u32, outputs.len() as u32);
    em.emit(Instr::InvokePacked {
        kernel: KernelIdx(kernel),
        inputs: inputs.into(),
        outputs: outputs.clone().into(),
    });
    if let [single] = outputs[..] {
        if out_types.len() == 1 && !matches!(m.types.kind(out_type), TypeKind::Tuple(_)) {
            em.finish(single, dest);
            return Ok(());
        }
    }
    let r = em.reg_for(dest);
    em.emit(Instr::AllocADT { dst: r, tag: Imm(0), fields: outputs.into() });
    em.finish(r, dest);
    Ok(())
}

/// `x op literal` (or `literal op x` for a commutative `op`) as one `BinImm` instruction, so
/// loop counters and constants cost no register loads.
fn scalar_with_immediate(
    em: &mut FnEmitter<'_, '_>,
    op: &str,
    sources: &[ExprId],
    dest: Dest,
) -> Result<bool, Diagnostic> {
    let (Some(ScalarForm::Bin(bin)), [a, b]) = (scalar_form(em, op), sources) else { return Ok(false) };
    let m = em.cx.m;
    let literal = |e: ExprId| match &m.expr(e).kind {
        ExprKind::Literal(lit) => Some(literal_value(lit)),
        _ => None,
    };
    let (lhs, imm) = match (literal(*a), literal(*b)) {
        (_, Some(imm)) => (*a, imm),
        (Some(imm), None) if ScalarForm::is_commutative(bin) => (*b, imm),
        _ => return Ok(false),
    };
    let lhs = em.atom(lhs)?;
    let dst = em.reg_for(dest);
    em.emit(Instr::BinImm { op: bin, dst, lhs, imm });
    em.finish(dst, dest);
    Ok(true)
}

fn is_scalar(m: &Module, t: TypeId) -> bool {
    matches!(m.types.kind(t), TypeKind::Tensor { shape, dtype } if shape.is_empty() && dtype.lanes == 1)
}

/// The scalar form operator `op` declares in the registry.
fn scalar_form(em: &FnEmitter<'_, '_>, op: &str) -> Option<ScalarForm> {
    let ops = em.cx.ops;
    ops.lookup(op).and_then(|id| ops.get(id).scalar)
}

/// The unboxed instruction for a scalar operator call, if the operator has one.
fn scalar_instr(em: &FnEmitter<'_, '_>, op: &str, ins: &[Reg], out: TypeId, dst: Reg) -> Option<Instr> {
    match (scalar_form(em, op)?, ins) {
        (ScalarForm::Bin(op), [lhs, rhs]) => Some(Instr::Bin { op, dst, lhs: *lhs, rhs: *rhs }),
        (ScalarForm::Un(op), [src]) => Some(Instr::Un { op, dst, src: *src }),
        (ScalarForm::Move, [src]) => Some(Instr::Move { dst, src: *src }),
        (ScalarForm::Cast, [src]) => {
            let TypeKind::Tensor { dtype, .. } = em.cx.m.types.kind(out) else { return None };
            Some(Instr::Cast { dst, src: *src, dtype: *dtype })
        }
        _ => None,
    }
}
