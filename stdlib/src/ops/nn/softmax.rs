//! `nn.softmax` and `nn.log_softmax` along one axis (TVM `src/relay/op/nn/nn.cc`), computed
//! stably: the lane's maximum is subtracted before exponentiating.

use super::{axis_in, check_dtype, lanes, map_lanes};
use crate::attrs::SoftmaxAttrs;
use crate::compute;
use crate::error::KernelError;
use crate::kernels::num::Float;
use crate::kernels::util::{args, floats, only_output};
use crate::kernels::Checked;
use crate::operator::{ComputeRule, DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// Softmax and its log.
pub const SOFTMAX: &[OpEntry] = &[OpEntry::of::<Softmax>(), OpEntry::of::<LogSoftmax>()];

/// The lane's maximum and `Σ exp(v - max)`.
fn max_and_sum<T: Float>(lane: &[T]) -> (T, T) {
    let max = lane.iter().fold(T::LOWEST, |m, &v| if v > m { v } else { m });
    (max, lane.iter().fold(T::ZERO, |s, &v| s + (v - max).exp()))
}

/// Declares a softmax-like operator: its one-line doc, whether its kir rule takes the log,
/// and `|lane value, max, sum| result`. Float dtypes; the output has the input's shape.
macro_rules! softmax_op {
    ($(#[$doc:meta])* $name:ident = $op:literal, $line:literal, log: $log:literal,
     |$v:ident, $max:ident, $sum:ident| $body:expr) => {
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
            const COMPUTE: Option<ComputeRule<SoftmaxAttrs>> = Some(|i, a, o| compute::nn::softmax(i, a, o, $log));

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
                    let ($max, $sum) = max_and_sum(lane);
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
    Softmax = "nn.softmax", "softmax over axis", log: false, |v, max, sum| (v - max).exp() / sum
}

softmax_op! {
    /// `nn.log_softmax`: `x - max - log Σ exp(x - max)` along `axis`. Float dtypes.
    LogSoftmax = "nn.log_softmax", "log of softmax over axis", log: true, |v, max, sum| v - max - sum.ln()
}
