//! The `einsum` rule (TVM `topi.einsum`, which TVM registers injective; reference kernel:
//! `crate::ops::einsum`): the output's loops, and inside them, where the equation sums over
//! labels, one serial loop per summed label accumulating the product of the operands'
//! elements. The loops are the reference kernel's ([`Loops`]) and so is the order: each
//! product multiplies the operands left to right and the sum runs over the summed labels in
//! row-major order, so results are the reference's up to FMA contraction (integers exactly:
//! both wrap). A float32 contraction that is a matrix product — `a`'s axes the leading output
//! axes then every summed label, `b`'s the summed labels and the last output axis (or that axis
//! first: `b` transposed), no diagonal, no broadcast `...` — is kir's `gemm` instead, as
//! `nn.dense` is (`super::nn::native_product`): the same sums in the same order, with FMA.

use super::nn::native_product;
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
    if let Some(def) = as_matrix_product(xs, &loops, out) {
        return Ok(def);
    }
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

/// The contraction as one matrix product `[Π lead, k] · [k, n]` (or `[n, k]` transposed), when
/// [`Loops`] has that form (module doc) and [`native_product`] takes the operands; `None`
/// otherwise.
fn as_matrix_product(xs: &[LazyTensor], loops: &Loops, out: &OutType) -> Option<TensorDef> {
    let ([a, b], [ra, rb]) = (xs, loops.reads.as_slice()) else { return None };
    let (outs, all) = (loops.out_axes, loops.sizes.len());
    let reads = |r: &[Option<usize>]| r.iter().copied().collect::<Option<Vec<usize>>>();
    let (ra, rb) = (reads(ra)?, reads(rb)?);
    // `a` reads the output's leading axes, then every summed axis, in order; `b` the one
    // output axis left, before or after the summed axes.
    let lead = outs.checked_sub(1)?;
    let summed: Vec<usize> = (outs..all).collect();
    let a_fits =
        ra.len() == lead + summed.len() && ra[..lead].iter().copied().eq(0..lead) && ra[lead..] == summed[..];
    let transposed = match rb.split_first() {
        Some((&first, rest)) if first == lead && rest == summed.as_slice() => true,
        _ if rb.split_last() == Some((&lead, summed.as_slice())) => false,
        _ => return None,
    };
    if !a_fits || summed.is_empty() {
        return None;
    }
    let sizes: Vec<i64> = loops.sizes.iter().map(|&n| n as i64).collect();
    let kdim = sizes[outs..].iter().product();
    native_product(a, b, out.dtype, &sizes[..lead], sizes[lead], kdim, transposed)
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
