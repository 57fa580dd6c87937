//! Register liveness over one function's bytecode: the backward data-flow analysis that
//! codegen's memory plan (live intervals, kills) and the VM's last-use moves both read, built
//! from the instruction set's facts ([`Instr::uses`], [`Instr::defs`], [`Instr::successors`]).
//!
//! A `Kill` reads nothing (it only empties registers that are dead anyway), and registers or
//! targets out of range are ignored, so the analysis runs on unverified code too.

use crate::isa::Instr;
use crate::operand::Reg;

/// Which registers are live on entry to each instruction of a function.
#[derive(Clone, Debug)]
pub struct Liveness {
    /// 64-bit words per instruction's set.
    words: usize,
    /// `words` words per instruction: bit `r` is register `r`.
    live_in: Vec<u64>,
    /// Per instruction, the successors inside the code.
    successors: Vec<Vec<usize>>,
}

impl Liveness {
    /// Solves `live_in = uses ∪ (live_out ∖ defs)`, `live_out = ⋃ live_in(successors)` to a
    /// fixed point over `code`, whose registers are `0..num_regs`.
    pub fn of(code: &[Instr], num_regs: u32) -> Liveness {
        let n = code.len();
        let words = (num_regs as usize).div_ceil(64);
        let successors: Vec<Vec<usize>> = code
            .iter()
            .enumerate()
            .map(|(pc, ins)| ins.successors(pc).into_iter().filter(|&s| s < n).collect())
            .collect();
        let uses: Vec<Vec<Reg>> = code.iter().map(Instr::uses).collect();
        let defs: Vec<Vec<Reg>> = code.iter().map(Instr::defs).collect();
        let mut live_in = vec![0u64; n * words];
        let mut set = vec![0u64; words];
        let mut changed = true;
        while changed {
            changed = false;
            for pc in (0..n).rev() {
                set.iter_mut().for_each(|w| *w = 0);
                for &s in &successors[pc] {
                    set.iter_mut().zip(&live_in[s * words..(s + 1) * words]).for_each(|(o, i)| *o |= i);
                }
                for r in &defs[pc] {
                    if let Some(w) = set.get_mut(r.0 as usize / 64) {
                        *w &= !(1 << (r.0 % 64));
                    }
                }
                for r in &uses[pc] {
                    if let Some(w) = set.get_mut(r.0 as usize / 64) {
                        *w |= 1 << (r.0 % 64);
                    }
                }
                let old = &mut live_in[pc * words..(pc + 1) * words];
                if old != set.as_slice() {
                    old.copy_from_slice(&set);
                    changed = true;
                }
            }
        }
        Liveness { words, live_in, successors }
    }

    /// The instructions control may reach right after instruction `pc` (targets outside the
    /// code left out: they trap).
    pub fn successors(&self, pc: usize) -> &[usize] {
        self.successors.get(pc).map_or(&[], Vec::as_slice)
    }

    /// Whether `r` is live on entry to instruction `pc`.
    pub fn is_live_in(&self, pc: usize, r: Reg) -> bool {
        let r = r.0 as usize;
        r / 64 < self.words
            && self.live_in.get(pc * self.words + r / 64).is_some_and(|w| w & (1 << (r % 64)) != 0)
    }

    /// Whether `r` is live right after instruction `pc` (on entry to one of its successors).
    pub fn is_live_out(&self, pc: usize, r: Reg) -> bool {
        self.successors(pc).iter().any(|&s| self.is_live_in(s, r))
    }

    /// The registers live on entry to instruction `pc`, in ascending order.
    pub fn live_in(&self, pc: usize) -> impl Iterator<Item = Reg> + '_ {
        let set = self.live_in.get(pc * self.words..(pc + 1) * self.words).unwrap_or(&[]);
        set.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64).filter(move |b| bits & (1u64 << b) != 0).map(move |b| Reg((w * 64 + b) as u32))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operand::{Imm, Target};

    #[test]
    fn loops_and_branches() {
        // $0 is read around a loop; $1 only on the branch's fall-through side.
        let code = vec![
            Instr::If { cond: Reg(0), else_target: Target(3) },
            Instr::Move { dst: Reg(2), src: Reg(1) },
            Instr::Kill { regs: vec![Reg(1)].into() },
            Instr::GetField { dst: Reg(3), obj: Reg(0), index: Imm(0) },
            Instr::Goto { target: Target(0) },
        ];
        let l = Liveness::of(&code, 4);
        let live = |pc| l.live_in(pc).collect::<Vec<_>>();
        assert_eq!(live(0), [Reg(0), Reg(1)]);
        assert_eq!(live(2), [Reg(0), Reg(1)], "a kill reads nothing, the loop reads $1 again");
        assert_eq!(live(3), [Reg(0), Reg(1)]);
        assert!(l.is_live_out(4, Reg(1)) && !l.is_live_in(1, Reg(2)) && !l.is_live_out(1, Reg(2)));
        assert_eq!(l.successors(0), [1, 3]);
        assert!(!l.is_live_in(0, Reg(99)) && l.live_in(99).next().is_none());
    }

    #[test]
    fn targets_out_of_range_are_ignored() {
        let code = vec![Instr::Goto { target: Target(7) }];
        let l = Liveness::of(&code, 0);
        assert!(l.successors(0).is_empty() && l.live_in(0).next().is_none());
    }
}
