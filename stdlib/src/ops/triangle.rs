//! `trilu` (TVM `src/relay/op/tensor/transform.cc`): the upper or lower triangle of the last
//! two axes, the rest zeroed. Injective, with a kir rule.

use super::index::index_values;
use crate::attrs::TriluAttrs;
use crate::compute::util::{lazy, lit, tensors};
use crate::error::KernelError;
use crate::kernels::util::{any_type, args, for_each_index, only_output};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::kir::Expr;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The triangle operators.
pub const TRIANGLE: &[OpEntry] = &[OpEntry::of::<Trilu>()];

/// `trilu(data, k, upper)`: `data` where column minus row is at least `k` (`upper`) or at most
/// `k` (lower), zero elsewhere, over the last two axes. `data` of rank 2 or more, any dtype;
/// `k` a 0-d integer tensor. Same shape and dtype as `data`.
#[derive(Debug)]
pub struct Trilu;

/// Whether element `(row, col)` is kept.
fn kept(upper: bool, row: usize, col: usize, k: i64) -> bool {
    let diff = col as i128 - row as i128;
    if upper {
        diff >= i128::from(k)
    } else {
        diff <= i128::from(k)
    }
}

impl Operator for Trilu {
    const NAME: &'static str = "trilu";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "upper or lower triangle of the last two axes";
    type Attrs = TriluAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<TriluAttrs>> = Some(|inputs, a, _| {
        let [x, k] = tensors(inputs)?;
        let (x, kt, upper) = (x.clone(), k.clone(), a.upper);
        Ok(lazy(move |b, idx| {
            let r = idx.len();
            let diff = Expr::index(idx[r - 1].clone()) - Expr::index(idx[r - 2].clone());
            let k = kt.at(b, &[]).cast(DType::I64);
            let keep = if upper { diff.ge(k) } else { diff.le(k) };
            Expr::select(keep, x.at(b, idx), lit(x.dtype, 0.0))
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &TriluAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, k] = args(inputs)?;
        if x.len() < 2 {
            return Err(KernelError::Shape(format!("trilu needs rank 2 or more, got {}", shape_text(x))));
        }
        if !k.is_empty() {
            return Err(KernelError::Shape(format!("k must be a scalar, got shape {}", shape_text(k))));
        }
        Ok(vec![x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &TriluAttrs) -> Result<Vec<DType>, KernelError> {
        let [x, k] = args(inputs)?;
        DTypeSet::Ints.check(k)?;
        Ok(vec![Self::DTYPES.check(x)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &TriluAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, k] = args(inputs)?;
        let k = index_values(k)?.first().copied().unwrap_or(0);
        let out = only_output(outputs)?;
        let shape = out.shape().to_vec();
        let r = shape.len();
        any_type!(x.dtype(), T => {
            let src = x.as_slice::<T>()?;
            let dst = out.as_mut_slice::<T>()?;
            let mut cells = dst.iter_mut().zip(src);
            for_each_index(&shape, |p| {
                if let Some((d, &s)) = cells.next() {
                    *d = if kept(a.upper, p[r - 2], p[r - 1], k) { s } else { T::default() };
                }
                Ok(())
            })
        })
    }
}
