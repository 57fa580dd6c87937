//! The `einsum` rule (TVM `topi.einsum`, which TVM registers injective; reference kernel:
//! `crate::ops::einsum`): the output's loops, and inside them, where the equation sums over
//! labels, one serial loop per summed label accumulating the product of the operands'
//! elements. The loops are the reference kernel's ([`Loops`]) and so is the order: each
//! product multiplies the operands left to right and the sum runs over the summed labels in
//! row-major order, so results are the reference's up to FMA contraction (integers exactly:
//! both wrap).

use super::util::{lazy, lit, sizes};
use crate::attrs::EinsumAttrs;
use crate::ops::einsum::Loops;
use relay_compiler::kir::{Expr, Index, KernelBuilder, LoopKind};
use relay_compiler::op::{for_each_index, ComputeInput, LazyTensor, OutType, TensorDef};
use relay_devices::DType;
use std::ops::Mul;
use std::rc::Rc;

/// `einsum(data, equation)` over the tuple `data`: a lazy element function where nothing is
/// summed (transposes, diagonals, outer products), otherwise a loop nest.
pub(crate) fn einsum(inputs: &[ComputeInput], a: &EinsumAttrs, out: &OutType) -> Result<TensorDef, String> {
    let [ComputeInput::Tuple(xs)] = inputs else { return Err("einsum takes one tuple".into()) };
    let shapes: Vec<Vec<usize>> = xs.iter().map(|x| sizes(&x.shape)).collect();
    let views: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    let loops = Loops::new(&a.equation, &views).map_err(|e| e.to_string())?;
    let summed: Vec<i64> = loops.sizes[loops.out_axes..].iter().map(|&n| n as i64).collect();
    let product = Product { xs: xs.clone(), reads: loops.reads, dtype: out.dtype };
    if summed.is_empty() {
        return Ok(lazy(move |k, idx| product.at(k, idx)));
    }
    let (dtype, shape) = (out.dtype, out.shape.clone());
    Ok(TensorDef::Nest(Rc::new(move |k, sink| {
        let acc = k.local("acc", dtype);
        for_each_index(k, &shape, LoopKind::Serial, &mut |k, oi| {
            k.assign(acc, lit(dtype, 0.0));
            for_each_index(k, &summed, LoopKind::Serial, &mut |k, si| {
                let at: Vec<Index> = oi.iter().chain(si).cloned().collect();
                let next = Expr::local(acc) + product.at(k, &at);
                k.assign(acc, next);
            });
            sink(k, oi, Expr::local(acc));
        });
    })))
}

/// The product of the operands' elements at one point of the loops.
struct Product {
    xs: Vec<LazyTensor>,
    /// [`Loops::reads`].
    reads: Vec<Vec<Option<usize>>>,
    /// The operands' dtype.
    dtype: DType,
}

impl Product {
    /// The product at loop indices `at` (the output's, then the summed labels'), left to
    /// right as the reference kernel multiplies (its leading `1 *` is exact).
    fn at(&self, k: &KernelBuilder, at: &[Index]) -> Expr {
        let factors = self.xs.iter().zip(&self.reads).map(|(x, reads)| {
            let idx: Vec<Index> =
                reads.iter().map(|r| r.map_or(Index::Const(0), |l| at[l].clone())).collect();
            x.at(k, &idx)
        });
        factors.reduce(Mul::mul).unwrap_or_else(|| lit(self.dtype, 1.0))
    }
}
