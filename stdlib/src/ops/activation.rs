//! `nn.prelu` (TVM `src/relay/op/nn/nn.cc`): the leaky ReLU with a learned slope per channel.
//! Broadcast pattern, with a kir rule.

use super::index::may_equal;
use crate::attrs::PReluAttrs;
use crate::compute::util::{lazy, lit, norm_axis, tensors};
use crate::error::KernelError;
use crate::kernels::util::{args, floats, for_each_index, normalize_axis, only_output, same_dtype};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::kir::Expr;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The parametric activations.
pub const ACTIVATION: &[OpEntry] = &[OpEntry::of::<PRelu>()];

/// `nn.prelu(data, alpha, axis)`: `x` where positive, else `alpha[c] * x` with `c` the index
/// along `axis`. `alpha` is 1-D with `data.shape[axis]` elements; float dtypes, the same for
/// both. Same shape and dtype as `data`.
#[derive(Debug)]
pub struct PRelu;

impl Operator for PRelu {
    const NAME: &'static str = "nn.prelu";
    const PATTERN: OpPattern = OpPattern::Broadcast;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "x if x > 0 else alpha[channel] * x";
    type Attrs = PReluAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<PReluAttrs>> = Some(|inputs, a, _| {
        let [x, alpha] = tensors(inputs)?;
        let axis = norm_axis(a.axis, x.shape.len())?;
        let (x, alpha) = (x.clone(), alpha.clone());
        Ok(lazy(move |k, idx| {
            let v = x.at(k, idx);
            let zero = lit(x.dtype, 0.0);
            Expr::select(v.clone().gt(zero), v.clone(), v * alpha.at(k, &idx[axis..=axis]))
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &PReluAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, alpha] = args(inputs)?;
        let axis = normalize_axis(a.axis, x.len())?;
        if alpha.len() != 1 || !may_equal(alpha[0], x[axis]) {
            return Err(KernelError::Shape(format!(
                "alpha must be 1-D, as long as axis {axis} of {}, got {}",
                shape_text(x),
                shape_text(alpha)
            )));
        }
        Ok(vec![x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &PReluAttrs) -> Result<Vec<DType>, KernelError> {
        Ok(vec![Self::DTYPES.check(same_dtype(inputs)?)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &PReluAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, alpha] = args(inputs)?;
        let axis = normalize_axis(a.axis, x.ndim())?;
        let out = only_output(outputs)?;
        let shape = out.shape().to_vec();
        floats!(x.dtype(), T => {
            let slopes = alpha.as_slice::<T>()?;
            let mut cells = out.as_mut_slice::<T>()?.iter_mut().zip(x.as_slice::<T>()?);
            for_each_index(&shape, |p| {
                if let (Some((d, &v)), Some(&s)) = (cells.next(), slopes.get(p[axis])) {
                    *d = if v > 0.0 { v } else { s * v };
                }
                Ok(())
            })
        })
    }
}
