//! Interleaving the dependency chains of consecutive vectors of a loop body.
//!
//! An inline `sigmoid` or `tanh` (`math.rs`) is a chain of some twenty dependent
//! instructions of about four cycles each; a gate loop emitted one vector after another hands
//! the core long runs of such chains, and its scheduler, holding a few dozen waiting
//! instructions, then sees only two or three chains at once: the loop runs at about one
//! instruction per cycle. Emitting the instructions of four vectors in turn (`v`, `v + 4`,
//! `v + 8`, `v + 12`, then the next instruction) gives it four independent chains in every
//! window. Cranelift's e-graph pass would undo the order (it places pure instructions anew,
//! depth-first from their uses), so kernels with such loops are compiled without it
//! (`vector::has_chain_loop`, `Jit::compile`).

use cranelift_codegen::ir::{Block, Function, Inst, Value};
use std::collections::HashMap;

/// Replicates the instructions of `block` after `start` (all of them when `None`): after
/// each instruction, one clone per map of `copies`, its arguments renamed by the map (a value
/// it lacks stays) and its results added to it. Instructions whose arguments no map renames
/// (constants, loads from uniform addresses) are not cloned: every copy shares them.
///
/// The caller seeds each map with the copy's value for what distinguishes the copies (the
/// loop variable), and guarantees that the copies are independent: no copy reads what
/// another stores (vector loops whose iterations are independent: no reduction, no buffer
/// both stored and read), so reordering their loads and stores keeps every value. Each clone
/// computes what its original computes, so the results are bit for bit those of running the
/// copies one after another.
pub(super) fn replicate(
    func: &mut Function,
    block: Block,
    start: Option<Inst>,
    copies: &mut [HashMap<Value, Value>],
) {
    let mut insts = vec![];
    let mut next = match start {
        Some(s) => func.layout.next_inst(s),
        None => func.layout.first_inst(block),
    };
    while let Some(inst) = next {
        next = func.layout.next_inst(inst);
        insts.push(inst);
    }
    for &inst in &insts {
        func.layout.remove_inst(inst);
    }
    for &inst in &insts {
        func.layout.append_inst(inst, block);
        for copy in copies.iter_mut() {
            if !func.dfg.inst_values(inst).any(|a| copy.contains_key(&a)) {
                continue;
            }
            let clone = func.dfg.clone_inst(inst);
            func.dfg.map_inst_values(clone, |a| copy.get(&a).copied().unwrap_or(a));
            for (&old, &new) in func.dfg.inst_results(inst).iter().zip(func.dfg.inst_results(clone)) {
                copy.insert(old, new);
            }
            func.layout.append_inst(clone, block);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::vector::has_chain_loop;
    use crate::Jit;
    use relay_devices::{DType, Tensor};
    use relay_kir::{Expr, Kernel, KernelBuilder, LoopKind};

    /// Gate arithmetic over `n` elements: `l = sigmoid(a) * tanh(b)` (a lane local),
    /// `y = l + sigmoid(c) * b`, `z = sigmoid(a - c) * tanh(l)` (`sigmoid(a)` and `sigmoid(c)`
    /// again: common subexpressions), `l = sigmoid(c) - l`, `w = tanh(l)` (the same expression
    /// as before, of the new `l`), and after the loop `last = l` (the last element's value).
    fn gates(n: i64, kind: LoopKind) -> Kernel {
        let mut k = KernelBuilder::new("gates");
        let [a, b, c] = ["a", "b", "c"].map(|name| k.input(name, DType::F32, [n]));
        let [y, z, w] = ["y", "z", "w"].map(|name| k.output(name, DType::F32, [n]));
        let last = k.output("last", DType::F32, [1]);
        let l = k.local("l", DType::F32);
        k.for_(n, kind, |k, i| {
            let [a, b, c] = [a, b, c].map(|buf| Expr::load(buf, i.clone()));
            k.assign(l, a.clone().sigmoid() * b.clone().tanh());
            k.store(y, i.clone(), Expr::local(l) + c.clone().sigmoid() * b);
            let gate = a.clone().sigmoid() * (a - c.clone()).sigmoid();
            k.store(z, i.clone(), gate * Expr::local(l).tanh());
            k.assign(l, c.sigmoid() - Expr::local(l));
            k.store(w, i, Expr::local(l).tanh());
        });
        k.store(last, 0, Expr::local(l));
        k.finish().unwrap()
    }

    fn run(jit: &Jit, kernel: &Kernel, n: usize) -> Vec<Vec<u32>> {
        let input = |seed: u32| {
            let v = (0..n as u32).map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) >> 8) as f32 / 1e6 - 8.0);
            Tensor::from_vec(vec![n], v.collect()).unwrap()
        };
        let inputs = [input(1), input(2), input(3)];
        let compiled = jit.compile(kernel).unwrap();
        let mut out = [n, n, n, 1].map(|len| Tensor::zeros(DType::F32, vec![len]).unwrap());
        compiled.run(&inputs.iter().collect::<Vec<_>>(), &mut out, &[]).unwrap();
        out.into_iter().map(|t| t.into_vec::<f32>().unwrap().iter().map(|x| x.to_bits()).collect()).collect()
    }

    #[test]
    fn interleaved_vectors_give_the_bits_of_one_element_at_a_time() {
        let jit = Jit::new().unwrap();
        // Every tail after the groups of 16: none, whole vectors, an overlapping vector; and
        // extents below one group or one vector.
        for n in [1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 20, 31, 32, 33, 150, 151, 152, 160] {
            let interleaved = gates(n, LoopKind::Vectorize);
            // The builder drops a loop of one iteration.
            assert!(n == 1 || has_chain_loop(&interleaved), "extent {n}");
            let serial = gates(n, LoopKind::Serial);
            let n = n as usize;
            assert_eq!(run(&jit, &interleaved, n), run(&jit, &serial, n), "extent {n}");
        }
    }
}
