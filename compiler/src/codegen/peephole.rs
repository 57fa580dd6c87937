//! Peephole rewrites of a function's bytecode after emission: a comparison whose only use
//! is the `If` right after it becomes one `IfCmp`/`IfCmpImm`, and a scalar operation whose
//! only use is the `Ret` right after it becomes one `RetBin`/`RetBinImm` (one dispatch
//! instead of two, and no register write); then registers nothing uses any more are
//! numbered away. A fused instruction keeps the source position of the operation, which is
//! what can fault.

use relay_runtime::{Instr, Reg, SourcePos, Target};

/// Rewrites `code` in place, with `positions` (the source position of each instruction),
/// and returns the number of registers it still uses (at least `num_params`, whose
/// registers keep their numbers).
pub(crate) fn optimize(
    code: &mut Vec<Instr>,
    positions: &mut Vec<SourcePos>,
    num_params: u32,
    num_regs: u32,
) -> u32 {
    fuse_pairs(code, positions, num_regs);
    compact_registers(code, num_params, num_regs)
}

/// Fuses a `Bin`/`BinImm` into `r` with the `If r` (for a comparison) or `Ret r` right after
/// it, when nothing else reads `r` and no jump lands on the second instruction (so the first
/// always runs right before it).
fn fuse_pairs(code: &mut Vec<Instr>, positions: &mut Vec<SourcePos>, num_regs: u32) {
    let mut reads = vec![0u32; num_regs as usize];
    let mut jumped_to = vec![false; code.len() + 1];
    for ins in code.iter_mut() {
        for r in ins.uses() {
            if let Some(n) = reads.get_mut(r.0 as usize) {
                *n += 1;
            }
        }
        for t in ins.targets_mut() {
            if let Some(j) = jumped_to.get_mut(t.0 as usize) {
                *j = true;
            }
        }
    }
    let mut removed = vec![false; code.len()];
    for pc in 1..code.len() {
        let (r, fused) = match (&code[pc - 1], &code[pc]) {
            (&Instr::Bin { op, dst, lhs, rhs }, &Instr::If { cond, else_target })
                if dst == cond && op.is_comparison() =>
            {
                (cond, Instr::IfCmp { op, lhs, rhs, else_target })
            }
            (&Instr::BinImm { op, dst, lhs, imm }, &Instr::If { cond, else_target })
                if dst == cond && op.is_comparison() =>
            {
                (cond, Instr::IfCmpImm { op, lhs, imm, else_target })
            }
            (&Instr::Bin { op, dst, lhs, rhs }, &Instr::Ret { src }) if dst == src => {
                (src, Instr::RetBin { op, lhs, rhs })
            }
            (&Instr::BinImm { op, dst, lhs, imm }, &Instr::Ret { src }) if dst == src => {
                (src, Instr::RetBinImm { op, lhs, imm })
            }
            _ => continue,
        };
        if jumped_to[pc] || removed[pc - 1] || reads.get(r.0 as usize) != Some(&1) {
            continue;
        }
        code[pc] = fused;
        if let (Some(&op), Some(_)) = (positions.get(pc - 1), positions.get(pc)) {
            positions[pc] = op;
        }
        removed[pc - 1] = true;
    }
    remove(code, &removed);
    let mut kept = removed.iter().map(|gone| !gone);
    positions.retain(|_| kept.next().unwrap_or(true));
}

/// Deletes the instructions marked in `removed`, retargeting jumps. A jump to a removed
/// instruction goes to the next one kept (none of the removed ones is a jump target here,
/// but the mapping stays sound either way).
fn remove(code: &mut Vec<Instr>, removed: &[bool]) {
    if !removed.contains(&true) {
        return;
    }
    let mut new_index = Vec::with_capacity(code.len() + 1);
    let mut next = 0u32;
    for &gone in removed {
        new_index.push(next);
        if !gone {
            next += 1;
        }
    }
    new_index.push(next);
    let old = std::mem::take(code);
    for (ins, &gone) in old.into_iter().zip(removed) {
        if !gone {
            code.push(ins);
        }
    }
    for ins in code.iter_mut() {
        for t in ins.targets_mut() {
            *t = Target(new_index.get(t.0 as usize).copied().unwrap_or(next));
        }
    }
}

/// Renumbers the registers the code mentions densely after the parameters, returning the
/// new register count. Fewer registers make frames smaller and calls cheaper.
fn compact_registers(code: &mut [Instr], num_params: u32, num_regs: u32) -> u32 {
    let mut used = vec![false; num_regs as usize];
    for ins in code.iter_mut() {
        for r in ins.regs_mut() {
            if let Some(u) = used.get_mut(r.0 as usize) {
                *u = true;
            }
        }
    }
    let mut map = Vec::with_capacity(num_regs as usize);
    let mut next = num_params;
    for (i, &u) in used.iter().enumerate() {
        if (i as u32) < num_params {
            map.push(i as u32);
        } else if u {
            map.push(next);
            next += 1;
        } else {
            map.push(u32::MAX);
        }
    }
    for ins in code.iter_mut() {
        for r in ins.regs_mut() {
            if let Some(&m) = map.get(r.0 as usize) {
                *r = Reg(m);
            }
        }
    }
    next.max(num_params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_devices::DType;
    use relay_runtime::{BinOp, ScalarValue};

    /// [`optimize`] with unknown positions.
    fn optimize_all(code: &mut Vec<Instr>, num_params: u32, num_regs: u32) -> u32 {
        let mut positions = vec![SourcePos::UNKNOWN; code.len()];
        let regs = optimize(code, &mut positions, num_params, num_regs);
        assert_eq!(positions.len(), code.len());
        regs
    }

    #[test]
    fn a_fused_instruction_keeps_the_operation_s_position() {
        let pos = |line| SourcePos { line, col: 3 };
        let mut code = vec![
            Instr::Bin { op: BinOp::Div, dst: Reg(2), lhs: Reg(0), rhs: Reg(1) },
            Instr::Ret { src: Reg(2) },
        ];
        let mut positions = vec![pos(4), pos(5)];
        optimize(&mut code, &mut positions, 2, 3);
        assert_eq!(code, vec![Instr::RetBin { op: BinOp::Div, lhs: Reg(0), rhs: Reg(1) }]);
        assert_eq!(positions, vec![pos(4)]);
    }

    fn zero() -> ScalarValue {
        ScalarValue::int(DType::I32, 0)
    }

    #[test]
    fn a_comparison_feeding_only_an_if_is_fused() {
        // count(n, acc): if n == 0 { acc } else { count(n - 1, acc + 1) }
        let mut code = vec![
            Instr::BinImm { op: BinOp::Eq, dst: Reg(2), lhs: Reg(0), imm: zero() },
            Instr::If { cond: Reg(2), else_target: Target(3) },
            Instr::Ret { src: Reg(1) },
            Instr::BinImm { op: BinOp::Sub, dst: Reg(3), lhs: Reg(0), imm: zero() },
            Instr::Goto { target: Target(3) },
        ];
        let regs = optimize_all(&mut code, 2, 4);
        assert_eq!(regs, 3);
        assert_eq!(
            code,
            vec![
                Instr::IfCmpImm { op: BinOp::Eq, lhs: Reg(0), imm: zero(), else_target: Target(2) },
                Instr::Ret { src: Reg(1) },
                Instr::BinImm { op: BinOp::Sub, dst: Reg(2), lhs: Reg(0), imm: zero() },
                Instr::Goto { target: Target(2) },
            ]
        );
    }

    #[test]
    fn a_comparison_read_elsewhere_or_a_jumped_to_if_is_kept() {
        let read_twice = vec![
            Instr::Bin { op: BinOp::Lt, dst: Reg(2), lhs: Reg(0), rhs: Reg(1) },
            Instr::If { cond: Reg(2), else_target: Target(3) },
            Instr::Ret { src: Reg(0) },
            Instr::Ret { src: Reg(2) },
        ];
        let mut code = read_twice.clone();
        assert_eq!(optimize_all(&mut code, 2, 3), 3);
        assert_eq!(code, read_twice);

        let jumped = vec![
            Instr::Goto { target: Target(2) },
            Instr::Bin { op: BinOp::Lt, dst: Reg(2), lhs: Reg(0), rhs: Reg(1) },
            Instr::If { cond: Reg(2), else_target: Target(4) },
            Instr::Ret { src: Reg(0) },
            Instr::Ret { src: Reg(1) },
        ];
        let mut code = jumped.clone();
        optimize_all(&mut code, 2, 3);
        assert_eq!(code, jumped);

        let not_a_comparison = vec![
            Instr::Bin { op: BinOp::And, dst: Reg(2), lhs: Reg(0), rhs: Reg(1) },
            Instr::If { cond: Reg(2), else_target: Target(3) },
            Instr::Ret { src: Reg(0) },
            Instr::Ret { src: Reg(1) },
        ];
        let mut code = not_a_comparison.clone();
        optimize_all(&mut code, 2, 3);
        assert_eq!(code, not_a_comparison);
    }

    #[test]
    fn an_operation_feeding_only_a_return_is_fused() {
        let one = ScalarValue::int(DType::I32, 1);
        let mut code = vec![
            Instr::Invoke { dst: Reg(1), func: relay_runtime::FuncIdx(0), args: vec![Reg(0)].into() },
            Instr::BinImm { op: BinOp::Add, dst: Reg(2), lhs: Reg(1), imm: one },
            Instr::Ret { src: Reg(2) },
        ];
        assert_eq!(optimize_all(&mut code, 1, 3), 2);
        assert_eq!(code[1], Instr::RetBinImm { op: BinOp::Add, lhs: Reg(1), imm: one });
        assert_eq!(code.len(), 2);

        let mut code = vec![
            Instr::Bin { op: BinOp::Mul, dst: Reg(2), lhs: Reg(0), rhs: Reg(1) },
            Instr::Ret { src: Reg(2) },
        ];
        optimize_all(&mut code, 2, 3);
        assert_eq!(code, vec![Instr::RetBin { op: BinOp::Mul, lhs: Reg(0), rhs: Reg(1) }]);
    }

    #[test]
    fn parameters_keep_their_registers() {
        let mut code = vec![Instr::Ret { src: Reg(0) }];
        assert_eq!(optimize_all(&mut code, 3, 9), 3);
        assert_eq!(code, vec![Instr::Ret { src: Reg(0) }]);
    }
}
