//! Last uses of registers, found once per function when the VM is made, so that an
//! instruction reading a register for the last time can move its value instead of cloning
//! it. A clone of a boxed value is an atomic increment on its allocation (often a cache line
//! the instruction would not touch otherwise) and the register's later drop an atomic
//! decrement; a move is neither. Moving also lets values become uniquely owned early, so
//! dead list cells, tuples and tensors go back to the pool instead of waiting for the frame.
//!
//! The bytecode's `Kill`s only cover tensor registers (the compiler's memory plan), so this
//! reads the bytecode liveness analysis ([`crate::liveness`]) the memory plan is made from.
//! It needs no trust in the code: a register is "dead" after an instruction only if no path from
//! there reads it before writing it, and emptying such a register is unobservable. A wrong
//! target or register in unverified code traps at run time exactly as before.

use crate::executable::VmFunction;
use crate::isa::Instr;
use crate::liveness::Liveness;
use crate::operand::Reg;

/// How many of an instruction's operands can be moved: one bit each in a mask.
const MAX_MOVED: usize = 64;

/// Per instruction of one function, which of its movable operands are last uses: bit `i`
/// stands for operand `i` of [`movable`]'s list (operands past the [`MAX_MOVED`]th are always
/// cloned).
#[derive(Clone, Debug, Default)]
pub(crate) struct LastUses {
    masks: Vec<u64>,
}

impl LastUses {
    /// No last uses: every read clones.
    pub const EMPTY: LastUses = LastUses { masks: Vec::new() };

    /// The last uses in `f`'s code.
    pub fn of(f: &VmFunction) -> LastUses {
        let code = &f.code;
        if f.num_regs == 0 || code.iter().all(|i| movable(i).is_empty()) {
            return LastUses { masks: vec![] };
        }
        let liveness = Liveness::of(code, f.num_regs);
        let mut masks = vec![0u64; code.len()];
        for (pc, ins) in code.iter().enumerate() {
            let ops = movable(ins);
            for (i, r) in ops.iter().enumerate().take(MAX_MOVED) {
                // A register passed twice is moved at its last position only.
                let dead = !liveness.is_live_out(pc, *r) && !ops[i + 1..].contains(r);
                if dead {
                    masks[pc] |= 1 << i;
                }
            }
        }
        LastUses { masks }
    }

    /// The mask of instruction `pc` (0 for an instruction that moves nothing).
    #[inline(always)]
    pub fn at(&self, pc: usize) -> u64 {
        self.masks.get(pc).copied().unwrap_or(0)
    }
}

/// Whether `ins`, reading register `r` for the last time (`r` is dead after it), leaves `r`
/// empty: `r` is one of the operands it moves from at their last use and is not written by
/// it. The compiler's memory plan reads this to leave out a `Kill` of such a register.
/// `AllocClosure` does not count: when it hands out the closure it made last, it reads its
/// captures without taking them.
pub fn empties_at_last_use(ins: &Instr, r: Reg) -> bool {
    // A register passed twice is moved at its last position only.
    let moved = !matches!(ins, Instr::AllocClosure { .. })
        && movable(ins).iter().rposition(|&o| o == r).is_some_and(|i| i < MAX_MOVED);
    moved && !ins.defs().contains(&r)
}

/// The register operands an instruction can move from when they die there, in the order the
/// interpreter reads them. A closure register is not among them: calls read the values it
/// captured, not the closure itself.
pub(crate) fn movable(ins: &Instr) -> &[Reg] {
    match ins {
        Instr::Move { src, .. } => std::slice::from_ref(src),
        Instr::GetField { obj, .. } => std::slice::from_ref(obj),
        Instr::Invoke { args, .. } | Instr::InvokeClosure { args, .. } => args,
        Instr::AllocADT { fields, .. } => fields,
        Instr::AllocClosure { captured, .. } => captured,
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executable::{ValueType, VmFunction};
    use crate::operand::{FuncIdx, Imm, Target};

    fn function(num_regs: u32, code: Vec<Instr>) -> VmFunction {
        let ty = ValueType::Tensor { dtype: relay_devices::DType::I32, shape: vec![] };
        VmFunction {
            name: "f".into(),
            source: String::new(),
            param_names: vec![],
            param_types: vec![],
            ret_type: ty,
            num_regs,
            code,
            spans: crate::SpanTable::default(),
        }
    }

    #[test]
    fn last_reads_are_found_across_branches() {
        let regs = |rs: &[u32]| rs.iter().map(|&r| Reg(r)).collect::<Box<[Reg]>>();
        // map: $1 is read by both field loads, dies at the second; $0 lives until the call.
        let f = function(
            8,
            vec![
                Instr::SwitchTag { obj: Reg(1), targets: vec![Target(1), Target(7)].into() },
                Instr::GetField { dst: Reg(2), obj: Reg(1), index: Imm(0) },
                Instr::GetField { dst: Reg(3), obj: Reg(1), index: Imm(1) },
                Instr::InvokeClosure { dst: Reg(4), closure: Reg(0), args: regs(&[2]) },
                Instr::Invoke { dst: Reg(5), func: FuncIdx(0), args: regs(&[0, 3, 3]) },
                Instr::AllocADT { dst: Reg(6), tag: Imm(0), fields: regs(&[4, 5]) },
                Instr::Ret { src: Reg(6) },
                // Only the other arm reads $1 again: it is live out of the switch, not of
                // the field loads.
                Instr::Move { dst: Reg(7), src: Reg(1) },
                Instr::Ret { src: Reg(7) },
            ],
        );
        let lu = LastUses::of(&f);
        let masks: Vec<u64> = (0..f.code.len()).map(|pc| lu.at(pc)).collect();
        assert_eq!(masks, [0, 0, 1, 1, 0b101, 0b11, 0, 1, 0]);
    }

    #[test]
    fn only_true_moves_empty_a_register() {
        let regs = |rs: &[u32]| rs.iter().map(|&r| Reg(r)).collect::<Box<[Reg]>>();
        let call = Instr::Invoke { dst: Reg(5), func: FuncIdx(0), args: regs(&[1, 2, 1]) };
        assert!(empties_at_last_use(&call, Reg(1)) && empties_at_last_use(&call, Reg(2)));
        assert!(!empties_at_last_use(&call, Reg(3)), "not an operand");
        // Written back: the register holds the field afterwards.
        let load = Instr::GetField { dst: Reg(1), obj: Reg(1), index: Imm(0) };
        assert!(!empties_at_last_use(&load, Reg(1)));
        // `AllocClosure` may return its last closure and leave the captures in place.
        let closure = Instr::AllocClosure { dst: Reg(4), func: FuncIdx(0), captured: regs(&[1]) };
        assert!(!empties_at_last_use(&closure, Reg(1)));
        // Past the mask's last bit operands are cloned; a register passed there too stays.
        let mut many: Vec<u32> = (0..MAX_MOVED as u32).collect();
        many.push(7);
        let wide = Instr::Invoke { dst: Reg(99), func: FuncIdx(0), args: regs(&many) };
        assert!(empties_at_last_use(&wide, Reg(6)) && !empties_at_last_use(&wide, Reg(7)));
    }

    #[test]
    fn loops_keep_registers_alive() {
        // $0 is read at the top of a loop: the read before the back edge is not its last.
        let f = function(
            3,
            vec![
                Instr::Move { dst: Reg(1), src: Reg(0) },
                Instr::Move { dst: Reg(2), src: Reg(1) },
                Instr::Goto { target: Target(0) },
            ],
        );
        let lu = LastUses::of(&f);
        assert_eq!((lu.at(0), lu.at(1), lu.at(5)), (0, 1, 0));
    }
}
