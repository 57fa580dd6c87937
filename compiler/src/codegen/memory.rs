//! Memory planning (ARCHITECTURE.md §3, "Memory"): liveness and escape analysis over each
//! function's bytecode, frame-arena offsets for the tensors that do not outlive their frame,
//! and kills at last use.
//!
//! The analysis runs on the emitted register code rather than on the ANF it comes from: the
//! code is ANF with every `let` given a register, `if` and `match` as explicit branches, and
//! the peephole rewrites already applied, so the live intervals describe exactly the
//! instructions that run (and the positions `dump --memory` shows).
//!
//! - **Liveness**: the VM's bytecode liveness ([`Liveness`], which also finds the VM's last
//!   uses), backward data flow over the control-flow graph (branches of `if` and every arm of
//!   a `match` decision tree). A tensor's live interval is the hull of the positions where its
//!   register is live, so tensors with disjoint intervals are never live together.
//! - **Escape**: a tensor is planned only if it is not `bool` (which has no byte view in an
//!   arena) and its register is written by exactly one
//!   statically shaped allocation (and the kernels filling it) and read only by kernels
//!   (`InvokePacked`, which never retain their inputs). Being returned, moved, stored in an
//!   ADT, tuple, closure or reference, or passed to any call counts as escaping.
//! - **Offsets**: greedy by size over the interval graph: each tensor, largest first, goes to
//!   the lowest offset (a multiple of [`ARENA_ALIGN`]) not overlapping a placed tensor whose
//!   interval overlaps its own. The offsets are addresses: `AllocFrame` places the tensor at
//!   its offset of the invocation's arena block (`vm/src/memory.rs`), so tensors with
//!   disjoint intervals share bytes, whatever their sizes and dtypes.
//! - **Kills**: a `Kill` after the last use of every register that may hold a tensor (and at
//!   the start of a branch on which it is dead), so its bytes in the arena, or its buffer in
//!   the VM's pool, are free at once. Emptying a register that is dead is always safe, which is what makes
//!   the placement of kills at branch targets simple. None where it would be a dispatch that
//!   frees nothing: after a call, field load or ADT construction that moves the register out
//!   at its last read (`relay_runtime::empties_at_last_use`), nor on a straight way to the
//!   frame's end that allocates and calls nothing (a Tree-LSTM node's `AllocADT` + `Ret`).

use relay_devices::{ArenaBlock, DType, ARENA_ALIGN};
use relay_runtime::{
    empties_at_last_use, Executable, Imm, Instr, Liveness, Reg, SourcePos, SpanTable, Target, ValueType,
    VmFunction,
};

/// One tensor placed in a frame arena.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedTensor {
    /// The register holding it.
    pub reg: Reg,
    /// Element type.
    pub dtype: DType,
    /// Static shape.
    pub shape: Vec<i64>,
    /// Bytes it occupies (before alignment).
    pub bytes: usize,
    /// Byte offset in the frame arena.
    pub offset: usize,
    /// First and last instruction (inclusive) of its live interval, in the planned code.
    pub live: (usize, usize),
}

/// The memory plan of one function.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FramePlan {
    /// The function's name.
    pub function: String,
    /// Its arena tensors.
    pub tensors: Vec<PlannedTensor>,
    /// Size of its frame arena in bytes.
    pub arena_bytes: usize,
    /// `Kill` instructions inserted.
    pub kills: usize,
}

impl FramePlan {
    /// The bytes of its arena tensors together: what the arena would take without sharing
    /// (each rounded up to [`ARENA_ALIGN`]).
    pub fn tensor_bytes(&self) -> usize {
        self.tensors.iter().map(|t| t.bytes.div_ceil(ARENA_ALIGN) * ARENA_ALIGN).sum()
    }

    /// Checks the plan's invariant: tensors whose live intervals overlap do not overlap in
    /// the arena.
    ///
    /// # Errors
    /// A description of the first violating pair.
    pub fn check(&self) -> Result<(), String> {
        for (i, a) in self.tensors.iter().enumerate() {
            for b in &self.tensors[i + 1..] {
                let live = a.live.0 <= b.live.1 && b.live.0 <= a.live.1;
                let bytes = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
                if live && bytes {
                    return Err(format!(
                        "`{}`: ${} and ${} are live together and share memory",
                        self.function, a.reg.0, b.reg.0
                    ));
                }
            }
        }
        Ok(())
    }
}

impl std::fmt::Display for FramePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "@{}: arena {} bytes for {} tensor(s) of {} bytes, {} kill(s)",
            self.function,
            self.arena_bytes,
            self.tensors.len(),
            self.tensor_bytes(),
            self.kills
        )?;
        for t in &self.tensors {
            writeln!(
                f,
                "  ${:<4} {}{:?}  {} bytes at offset {}, live {}..={}",
                t.reg.0, t.dtype, t.shape, t.bytes, t.offset, t.live.0, t.live.1
            )?;
        }
        Ok(())
    }
}

/// Plans every function of `exe` in place; returns the plans.
pub fn plan_executable(exe: &mut Executable) -> Vec<FramePlan> {
    let rets: Vec<bool> = exe.functions.iter().map(|f| is_tensor(&f.ret_type)).collect();
    exe.functions.iter_mut().map(|f| plan_function(f, &rets)).collect()
}

/// The plans `plan_executable` would make, without changing `exe` (for an executable that
/// is already planned, the same plan again).
pub fn analyse_executable(exe: &Executable) -> Vec<FramePlan> {
    plan_executable(&mut exe.clone())
}

fn is_tensor(t: &ValueType) -> bool {
    matches!(t, ValueType::Tensor { shape, .. } if !shape.is_empty())
}

/// A statically shaped allocation whose tensor does not escape the frame.
struct Candidate {
    reg: Reg,
    dtype: DType,
    shape: Vec<i64>,
    bytes: usize,
    live: (usize, usize),
}

fn candidates(code: &[Instr], liveness: &Liveness, num_regs: usize, num_params: usize) -> Vec<Candidate> {
    // Per register: its allocation (if exactly one), and whether anything disqualifies it.
    let mut alloc: Vec<Option<usize>> = vec![None; num_regs];
    let mut bad = vec![false; num_regs];
    bad.iter_mut().take(num_params).for_each(|b| *b = true);
    for (pc, ins) in code.iter().enumerate() {
        match ins {
            Instr::AllocTensor { dst, .. } | Instr::AllocFrame { dst, .. } => {
                let r = dst.0 as usize;
                if alloc.get(r).is_some_and(Option::is_some) {
                    bad[r] = true;
                } else if let Some(a) = alloc.get_mut(r) {
                    *a = Some(pc);
                }
            }
            // Kernels read inputs and fill outputs in place; neither lets the tensor escape.
            Instr::InvokePacked { .. } | Instr::Kill { .. } => {}
            _ => {
                for r in ins.uses().into_iter().chain(ins.defs()) {
                    if let Some(b) = bad.get_mut(r.0 as usize) {
                        *b = true;
                    }
                }
            }
        }
    }
    // Each register's first and last instruction where it is live on entry or written: one
    // pass over the (sparse) live sets, so that planning stays linear in the code's size.
    let mut spans: Vec<Option<(usize, usize)>> = vec![None; num_regs];
    for (pc, ins) in code.iter().enumerate() {
        for r in liveness.live_in(pc).chain(ins.defs()) {
            if let Some(span) = spans.get_mut(r.0 as usize) {
                *span = Some(span.map_or((pc, pc), |(a, b)| (a.min(pc), b.max(pc))));
            }
        }
    }
    let mut out = vec![];
    for (r, a) in alloc.iter().enumerate() {
        let (Some(pc), false) = (*a, bad[r]) else { continue };
        let (dtype, shape) = match &code[pc] {
            Instr::AllocTensor { dtype, shape, .. } | Instr::AllocFrame { dtype, shape, .. } => {
                (*dtype, shape)
            }
            _ => continue,
        };
        // A `bool` tensor has no byte view in an arena block: it stays with the pool.
        if !ArenaBlock::holds(dtype) {
            continue;
        }
        let elems = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?));
        let Some(bytes) = elems.and_then(|n| n.checked_mul(dtype.size_bytes())).filter(|&b| b > 0) else {
            continue;
        };
        let live = spans[r].map_or((pc, pc), |(a, b)| (a.min(pc), b.max(pc)));
        out.push(Candidate { reg: Reg(r as u32), dtype, shape: shape.to_vec(), bytes, live });
    }
    out
}

/// Greedy-by-size offsets on the interval graph; returns `(offsets, arena size)`.
fn assign_offsets(cands: &[Candidate]) -> (Vec<usize>, usize) {
    let mut order: Vec<usize> = (0..cands.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(cands[i].bytes), cands[i].live.0));
    let mut offsets = vec![0usize; cands.len()];
    let mut placed: Vec<usize> = vec![];
    let mut arena = 0;
    for i in order {
        let c = &cands[i];
        let size = c.bytes.div_ceil(ARENA_ALIGN) * ARENA_ALIGN;
        let mut busy: Vec<(usize, usize)> = placed
            .iter()
            .filter(|&&j| cands[j].live.0 <= c.live.1 && c.live.0 <= cands[j].live.1)
            .map(|&j| (offsets[j], offsets[j] + cands[j].bytes.div_ceil(ARENA_ALIGN) * ARENA_ALIGN))
            .collect();
        busy.sort_unstable();
        let mut at = 0;
        for (start, end) in busy {
            if at + size <= start {
                break;
            }
            at = at.max(end);
        }
        offsets[i] = at;
        arena = arena.max(at + size);
        placed.push(i);
    }
    (offsets, arena)
}

/// Per instruction: whether control goes from it straight to leaving the frame (`Ret`, a
/// tail call) through instructions that allocate no tensor and call nothing (field loads,
/// ADT cells, scalar work), so that no buffer a kill there would free can be reused before
/// the frame's registers are emptied anyway.
fn quiet_until_exit(code: &[Instr]) -> Vec<bool> {
    let mut quiet = vec![false; code.len() + 1];
    for pc in (0..code.len()).rev() {
        quiet[pc] = match &code[pc] {
            i if i.leaves_frame() => true,
            Instr::Move { .. }
            | Instr::GetField { .. }
            | Instr::GetTag { .. }
            | Instr::AllocADT { .. }
            | Instr::LoadImm { .. }
            | Instr::LoadConst { .. }
            | Instr::Bin { .. }
            | Instr::BinImm { .. }
            | Instr::Un { .. }
            | Instr::Cast { .. } => quiet[pc + 1],
            _ => false,
        };
    }
    quiet
}

/// Plans one function in place: arena tensors become `AllocFrame`, kills are inserted.
/// `tensor_results[f]` says whether function `f` returns a (non-scalar) tensor.
pub fn plan_function(f: &mut VmFunction, tensor_results: &[bool]) -> FramePlan {
    // Kills from an earlier plan are dropped and placed again.
    let positions = f.spans.positions(f.code.len());
    let (kept, positions): (Vec<Instr>, Vec<SourcePos>) = std::mem::take(&mut f.code)
        .into_iter()
        .zip(positions)
        .filter(|(i, _)| !matches!(i, Instr::Kill { .. }))
        .unzip();
    f.code = kept;
    let num_regs = f.num_regs as usize;
    let code = &f.code;
    let liveness = Liveness::of(code, f.num_regs);
    let cands = candidates(code, &liveness, num_regs, f.param_types.len());
    let (offsets, arena_bytes) = assign_offsets(&cands);
    let mut tensors: Vec<PlannedTensor> = cands
        .iter()
        .zip(offsets)
        .map(|(c, offset)| PlannedTensor {
            reg: c.reg,
            dtype: c.dtype,
            shape: c.shape.clone(),
            bytes: c.bytes,
            offset,
            live: c.live,
        })
        .collect();
    // `AllocFrame` states its offset in 32 bits; a tensor beyond stays with the pool.
    tensors.retain(|t| u32::try_from(t.offset).is_ok());
    let arena_bytes = if tensors.len() == cands.len() {
        arena_bytes
    } else {
        tensors.iter().map(|t| t.offset + t.bytes.div_ceil(ARENA_ALIGN) * ARENA_ALIGN).max().unwrap_or(0)
    };

    // Registers that may hold a tensor: kills of anything else would only cost dispatches.
    let mut tensorish = vec![false; num_regs];
    let mut set = |r: Reg| {
        if let Some(t) = tensorish.get_mut(r.0 as usize) {
            *t = true;
        }
    };
    for (i, t) in f.param_types.iter().enumerate() {
        if is_tensor(t) {
            set(Reg(i as u32));
        }
    }
    for ins in code {
        match ins {
            Instr::AllocTensor { dst, .. } | Instr::AllocFrame { dst, .. } => set(*dst),
            Instr::InvokePacked { outputs, .. } => outputs.iter().for_each(|&r| set(r)),
            Instr::Invoke { dst, func, .. } if tensor_results.get(func.0 as usize) == Some(&true) => {
                set(*dst)
            }
            _ => {}
        }
    }
    let tensorish = |r: Reg| tensorish.get(r.0 as usize) == Some(&true);
    let quiet = quiet_until_exit(code);
    let mut before: Vec<Vec<Reg>> = vec![vec![]; code.len() + 1];
    for (pc, ins) in code.iter().enumerate() {
        let mut here: Vec<Reg> = ins.uses();
        here.extend(ins.defs());
        here.extend(liveness.live_in(pc));
        // A frame's registers are emptied when it returns or tail-calls anyway: a kill on
        // the way there frees nothing that anything could reuse first.
        for &s in liveness.successors(pc).iter().filter(|&&s| !quiet.get(s).copied().unwrap_or(false)) {
            for &r in &here {
                // A register the VM moves out at its last read is already empty.
                if tensorish(r)
                    && !liveness.is_live_in(s, r)
                    && !empties_at_last_use(ins, r)
                    && !before[s].contains(&r)
                {
                    before[s].push(r);
                }
            }
        }
    }
    let kills = before.iter().filter(|k| !k.is_empty()).count();
    let offset_of = |r: Reg| tensors.iter().find(|t| t.reg == r).map(|t| t.offset as u32);
    let old = std::mem::take(&mut f.code);
    let mut new_index = Vec::with_capacity(old.len() + 1);
    let mut code = Vec::with_capacity(old.len() + kills);
    let mut new_positions = Vec::with_capacity(old.len() + kills);
    for ((pc, ins), pos) in old.into_iter().enumerate().zip(positions) {
        new_index.push(code.len() as u32);
        if !before[pc].is_empty() {
            // A kill belongs to the instruction it precedes.
            code.push(Instr::Kill { regs: std::mem::take(&mut before[pc]).into() });
            new_positions.push(pos);
        }
        new_positions.push(pos);
        code.push(match ins {
            Instr::AllocTensor { dst, dtype, shape, init }
            | Instr::AllocFrame { dst, dtype, shape, init, .. } => match offset_of(dst) {
                Some(offset) => Instr::AllocFrame { dst, offset: Imm(offset), dtype, shape, init },
                None => Instr::AllocTensor { dst, dtype, shape, init },
            },
            other => other,
        });
    }
    new_index.push(code.len() as u32);
    for ins in code.iter_mut() {
        for t in ins.targets_mut() {
            *t = Target(new_index.get(t.0 as usize).copied().unwrap_or(t.0));
        }
    }
    // Intervals in the numbering of the planned code.
    for t in &mut tensors {
        let at = |p: usize| new_index.get(p).copied().unwrap_or(0) as usize;
        t.live = (at(t.live.0), at(t.live.1));
    }
    f.code = code;
    f.spans = SpanTable::from_positions(&f.spans.file, &new_positions);
    FramePlan { function: f.name.clone(), tensors, arena_bytes, kills }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_runtime::{FuncIdx, Init, KernelIdx};

    fn tensor() -> ValueType {
        ValueType::Tensor { dtype: DType::F32, shape: vec![Some(4)] }
    }

    fn function(params: usize, num_regs: u32, code: Vec<Instr>) -> VmFunction {
        VmFunction {
            name: "f".into(),
            source: String::new(),
            param_names: (0..params).map(|i| format!("p{i}")).collect(),
            param_types: vec![tensor(); params],
            ret_type: tensor(),
            num_regs,
            code,
            spans: SpanTable::default(),
        }
    }

    fn regs(rs: &[u32]) -> Box<[Reg]> {
        rs.iter().map(|&r| Reg(r)).collect()
    }

    fn kills(code: &[Instr]) -> Vec<(usize, Vec<Reg>)> {
        code.iter()
            .enumerate()
            .filter_map(|(pc, i)| match i {
                Instr::Kill { regs } => Some((pc, regs.to_vec())),
                _ => None,
            })
            .collect()
    }

    fn alloc(dst: u32) -> Instr {
        Instr::AllocTensor { dst: Reg(dst), dtype: DType::F32, shape: vec![4].into(), init: Init::Zero }
    }

    fn kernel(inputs: &[u32], out: u32) -> Instr {
        Instr::InvokePacked { kernel: KernelIdx(0), inputs: regs(inputs), outputs: regs(&[out]) }
    }

    #[test]
    fn kills_before_work_stay_and_kills_on_the_way_out_go() {
        // $0 dies at the first kernel, which later allocations could reuse: killed. $1 dies
        // at the second, and only a tuple and the return follow: nothing to kill it for.
        let mut f = function(
            2,
            6,
            vec![
                alloc(2),
                kernel(&[0], 2),
                alloc(3),
                kernel(&[1, 2], 3),
                Instr::AllocADT { dst: Reg(4), tag: Imm(0), fields: regs(&[2, 3]) },
                Instr::Ret { src: Reg(4) },
            ],
        );
        plan_function(&mut f, &[true]);
        assert_eq!(kills(&f.code), vec![(2, vec![Reg(0)])]);
    }

    #[test]
    fn a_register_moved_out_at_its_last_read_is_not_killed() {
        // The call moves $0 and $1 (their last reads); `AllocClosure` may leave its
        // captures where they are, so $2 is killed after it. ($4 dies just before the
        // return.)
        let mut f = function(
            3,
            6,
            vec![
                Instr::AllocClosure { dst: Reg(3), func: FuncIdx(0), captured: regs(&[2]) },
                Instr::Invoke { dst: Reg(4), func: FuncIdx(0), args: regs(&[0, 1, 3]) },
                alloc(5),
                kernel(&[4], 5),
                Instr::Ret { src: Reg(5) },
            ],
        );
        plan_function(&mut f, &[true]);
        assert_eq!(kills(&f.code), vec![(1, vec![Reg(2)])]);
    }
}
