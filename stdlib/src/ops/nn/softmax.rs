//! `nn.softmax`, `nn.log_softmax` and `nn.fast_softmax` along one axis (TVM
//! `src/relay/op/nn/nn.cc`), computed stably: the lane's maximum is subtracted before
//! exponentiating. `nn.fast_softmax` exponentiates with `fast_exp`'s approximation.

use super::{axis_in, check_dtype, lanes, map_lanes};
use crate::attrs::SoftmaxAttrs;
use crate::compute;
use crate::error::KernelError;
use crate::kernels::num::Float;
use crate::kernels::util::{args, floats, only_output};
use crate::kernels::Checked;
use crate::operator::{ComputeRule, DTypeSet, OpEntry, Operator, ShapeDim};
use crate::ops::fast_math;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// Softmax and its log.
pub const SOFTMAX: &[OpEntry] =
    &[OpEntry::of::<Softmax>(), OpEntry::of::<LogSoftmax>(), OpEntry::of::<FastSoftmax>()];

/// The lane's maximum and `Σ exp(v - max)`, with `exp` the exponential used.
fn max_and_sum<T: Float>(lane: &[T], exp: fn(T) -> T) -> (T, T) {
    let max = lane.iter().fold(T::LOWEST, |m, &v| if v > m { v } else { m });
    (max, lane.iter().fold(T::ZERO, |s, &v| s + exp(v - max)))
}

/// Declares a softmax-like operator: its one-line doc, its exponential, its kir rule (if
/// any), and `|lane value, max, sum| result`. Float dtypes; the output has the input's shape.
macro_rules! softmax_op {
    ($(#[$doc:meta])* $name:ident = $op:literal, $line:literal, exp: $exp:path,
     compute: $compute:expr, |$v:ident, $max:ident, $sum:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
            const NUM_INPUTS: usize = 1;
            const DTYPES: DTypeSet = DTypeSet::Floats;
            const DOC: &'static str = $line;
            type Attrs = SoftmaxAttrs;
            const COMPUTE: Option<ComputeRule<SoftmaxAttrs>> = $compute;

            fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &SoftmaxAttrs) -> Result<Vec<Vec<D>>, KernelError> {
                let [x] = args(inputs)?;
                axis_in(attrs.axis, x)?;
                Ok(vec![x.to_vec()])
            }

            fn dtypes(inputs: &[DType], _: &SoftmaxAttrs) -> Result<Vec<DType>, KernelError> {
                let [d] = args(inputs)?;
                Ok(vec![check_dtype(Self::DTYPES, d)?])
            }

            fn reference(inputs: &[&Tensor], attrs: &SoftmaxAttrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                let [x] = args(inputs)?;
                let geometry = lanes(x.shape(), attrs.axis)?;
                let out = only_output(outputs)?;
                floats!(x.dtype(), T => map_lanes(x.as_slice::<T>()?, out.as_mut_slice::<T>()?, geometry, |lane, res| {
                    let ($max, $sum) = max_and_sum(lane, $exp);
                    for (r, &$v) in res.iter_mut().zip(lane) {
                        *r = $body;
                    }
                }))
            }
        }
    };
}

softmax_op! {
    /// `nn.softmax`: `exp(x - max) / Σ exp(x - max)` along `axis`. Float dtypes.
    Softmax = "nn.softmax", "softmax over axis", exp: Float::exp,
    compute: Some(|i, a, o| compute::nn::softmax(i, a, o, false, |_, x| x.exp())), |v, max, sum| (v - max).exp() / sum
}

softmax_op! {
    /// `nn.log_softmax`: `x - max - log Σ exp(x - max)` along `axis`. Float dtypes.
    LogSoftmax = "nn.log_softmax", "log of softmax over axis", exp: Float::exp,
    compute: Some(|i, a, o| compute::nn::softmax(i, a, o, true, |_, x| x.exp())), |v, max, sum| v - max - sum.ln()
}

softmax_op! {
    /// `nn.fast_softmax`: `nn.softmax` with `fast_exp`'s approximation of `exp` (relative error
    /// within `fast_exp`'s bound). Float dtypes.
    FastSoftmax = "nn.fast_softmax", "softmax over axis with fast_exp", exp: fast_math::exp,
    compute: Some(|i, a, o| compute::nn::softmax(i, a, o, false, fast_math::exp_kir)), |v, max, sum| fast_math::exp(v - max) / sum
}
