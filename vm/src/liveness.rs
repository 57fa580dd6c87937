//! Register liveness over one function's bytecode: the backward data-flow analysis that
//! codegen's memory plan (live intervals, kills) and the VM's last-use moves both read, built
//! from the instruction set's facts ([`Instr::uses`], [`Instr::defs`], [`Instr::successors`]).
//!
//! A `Kill` reads nothing (it only empties registers that are dead anyway), and registers or
//! targets out of range are ignored, so the analysis runs on unverified code too.

use crate::isa::Instr;
use crate::operand::Reg;
use std::collections::BTreeSet;

/// Which registers are live on entry to each instruction of a function.
///
/// Sets are sparse (each instruction's live registers, sorted), so memory and time grow with
/// the number of registers actually live at each instruction, not with registers ×
/// instructions: a function of a million instructions and registers where few are live at
/// once (a long `let` chain, an `else if` chain) is analysed in linear time. The fixed point
/// runs over basic blocks; the per-instruction sets come from one backward walk per block.
#[derive(Clone, Debug)]
pub struct Liveness {
    /// Per instruction, the registers live on entry, ascending.
    live_in: Vec<Box<[Reg]>>,
    /// Per instruction, the successors inside the code.
    successors: Vec<Vec<usize>>,
}

/// A basic block: instructions `start..end`, entered only at `start`, left only after `end - 1`.
struct Block {
    start: usize,
    end: usize,
    /// Registers read in the block before any write in it (upward-exposed uses), ascending.
    gen: Vec<u32>,
    /// Registers written in the block, ascending.
    kill: Vec<u32>,
    /// The blocks control may reach after the block's last instruction.
    successors: Vec<usize>,
}

impl Liveness {
    /// Solves `live_in = uses ∪ (live_out ∖ defs)`, `live_out = ⋃ live_in(successors)` to a
    /// fixed point over `code`, whose registers are `0..num_regs` (others are ignored).
    pub fn of(code: &[Instr], num_regs: u32) -> Liveness {
        let n = code.len();
        let successors: Vec<Vec<usize>> = code
            .iter()
            .enumerate()
            .map(|(pc, ins)| ins.successors(pc).into_iter().filter(|&s| s < n).collect())
            .collect();
        let regs = |rs: Vec<Reg>| rs.into_iter().map(|r| r.0).filter(|&r| r < num_regs).collect::<Vec<u32>>();
        let uses: Vec<Vec<u32>> = code.iter().map(|i| regs(i.uses())).collect();
        let defs: Vec<Vec<u32>> = code.iter().map(|i| regs(i.defs())).collect();
        let blocks = basic_blocks(&successors, &uses, &defs);

        // The fixed point over blocks, latest first (most edges point forward).
        let mut block_in: Vec<Vec<u32>> = vec![vec![]; blocks.len()];
        let mut changed = true;
        while changed {
            changed = false;
            for b in (0..blocks.len()).rev() {
                let out = union_of(blocks[b].successors.iter().map(|&s| block_in[s].as_slice()));
                let new = union(&blocks[b].gen, &difference(&out, &blocks[b].kill));
                if new != block_in[b] {
                    block_in[b] = new;
                    changed = true;
                }
            }
        }

        // Each instruction's set, walking each block backward from its live-out set.
        let mut live_in: Vec<Box<[Reg]>> = vec![Box::default(); n];
        for block in &blocks {
            let out = union_of(block.successors.iter().map(|&s| block_in[s].as_slice()));
            let mut live: BTreeSet<u32> = out.into_iter().collect();
            for pc in (block.start..block.end).rev() {
                defs[pc].iter().for_each(|r| {
                    live.remove(r);
                });
                live.extend(&uses[pc]);
                live_in[pc] = live.iter().map(|&r| Reg(r)).collect();
            }
        }
        Liveness { live_in, successors }
    }

    /// The instructions control may reach right after instruction `pc` (targets outside the
    /// code left out: they trap).
    pub fn successors(&self, pc: usize) -> &[usize] {
        self.successors.get(pc).map_or(&[], Vec::as_slice)
    }

    /// Whether `r` is live on entry to instruction `pc`.
    pub fn is_live_in(&self, pc: usize, r: Reg) -> bool {
        self.live_in.get(pc).is_some_and(|set| set.binary_search(&r).is_ok())
    }

    /// Whether `r` is live right after instruction `pc` (on entry to one of its successors).
    pub fn is_live_out(&self, pc: usize, r: Reg) -> bool {
        self.successors(pc).iter().any(|&s| self.is_live_in(s, r))
    }

    /// The registers live on entry to instruction `pc`, in ascending order.
    pub fn live_in(&self, pc: usize) -> impl Iterator<Item = Reg> + '_ {
        self.live_in.get(pc).map_or(&[][..], |set| &set[..]).iter().copied()
    }
}

/// Splits the code into basic blocks: a block starts at instruction 0, at every branch
/// target, and after every instruction that does not simply fall through.
fn basic_blocks(successors: &[Vec<usize>], uses: &[Vec<u32>], defs: &[Vec<u32>]) -> Vec<Block> {
    let n = successors.len();
    let mut leader = vec![false; n + 1];
    leader[0] = true;
    leader[n] = true;
    for (pc, succ) in successors.iter().enumerate() {
        if succ.as_slice() != [pc + 1] {
            leader[pc + 1] = true;
            succ.iter().for_each(|&s| leader[s] = true);
        }
    }
    let starts: Vec<usize> = (0..n).filter(|&pc| leader[pc]).collect();
    let mut block_of = vec![0usize; n];
    let mut blocks: Vec<Block> = starts
        .iter()
        .enumerate()
        .map(|(b, &start)| {
            let end = (start + 1..=n).find(|&pc| leader[pc]).unwrap_or(n);
            block_of[start..end].iter_mut().for_each(|x| *x = b);
            let mut gen = BTreeSet::new();
            let mut kill = BTreeSet::new();
            for pc in (start..end).rev() {
                defs[pc].iter().for_each(|r| {
                    gen.remove(r);
                    kill.insert(*r);
                });
                gen.extend(&uses[pc]);
            }
            Block {
                start,
                end,
                gen: gen.into_iter().collect(),
                kill: kill.into_iter().collect(),
                successors: vec![],
            }
        })
        .collect();
    for block in &mut blocks {
        let mut succ: Vec<usize> = successors[block.end - 1].iter().map(|&s| block_of[s]).collect();
        succ.sort_unstable();
        succ.dedup();
        block.successors = succ;
    }
    blocks
}

/// The union of ascending sets, ascending.
fn union_of<'a>(sets: impl Iterator<Item = &'a [u32]>) -> Vec<u32> {
    sets.fold(vec![], |acc, s| union(&acc, s))
}

/// `a ∪ b` of ascending sets, ascending.
fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => (out.push(a[i]), i += 1),
            std::cmp::Ordering::Greater => (out.push(b[j]), j += 1),
            std::cmp::Ordering::Equal => (out.push(a[i]), (i, j) = (i + 1, j + 1)),
        };
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// `a ∖ b` of ascending sets, ascending.
fn difference(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len());
    let mut j = 0;
    for &x in a {
        while j < b.len() && b[j] < x {
            j += 1;
        }
        if b.get(j) != Some(&x) {
            out.push(x);
        }
    }
    out
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

    /// The per-instruction fixed point, solved naively, as the specification.
    fn naive(code: &[Instr], num_regs: u32) -> Vec<Vec<Reg>> {
        let n = code.len();
        let mut live: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n];
        let mut changed = true;
        while changed {
            changed = false;
            for pc in (0..n).rev() {
                let mut set: BTreeSet<u32> = code[pc]
                    .successors(pc)
                    .into_iter()
                    .filter(|&s| s < n)
                    .flat_map(|s| live[s].clone())
                    .collect();
                code[pc].defs().iter().for_each(|r| {
                    set.remove(&r.0);
                });
                set.extend(code[pc].uses().iter().map(|r| r.0).filter(|&r| r < num_regs));
                if set != live[pc] {
                    live[pc] = set;
                    changed = true;
                }
            }
        }
        live.into_iter().map(|s| s.into_iter().map(Reg).collect()).collect()
    }

    #[test]
    fn blocks_agree_with_the_per_instruction_fixed_point() {
        // Random code of moves, field reads, branches and jumps (forward and backward).
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m) as u32
        };
        for _ in 0..200 {
            let n = 1 + next(40) as usize;
            let regs = 1 + next(12);
            let code: Vec<Instr> = (0..n)
                .map(|_| match next(5) {
                    0 => Instr::If {
                        cond: Reg(next(u64::from(regs))),
                        else_target: Target(next(n as u64 + 1)),
                    },
                    1 => Instr::Goto { target: Target(next(n as u64 + 1)) },
                    2 => Instr::GetField {
                        dst: Reg(next(u64::from(regs))),
                        obj: Reg(next(u64::from(regs))),
                        index: Imm(0),
                    },
                    _ => Instr::Move { dst: Reg(next(u64::from(regs))), src: Reg(next(u64::from(regs) + 2)) },
                })
                .collect();
            let l = Liveness::of(&code, regs);
            let want = naive(&code, regs);
            for (pc, set) in want.iter().enumerate() {
                assert_eq!(&l.live_in(pc).collect::<Vec<_>>(), set, "pc {pc} of {code:?}");
            }
        }
    }
}
