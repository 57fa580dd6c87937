//! `nn.softmax` and `nn.log_softmax` along one axis (TVM `src/relay/op/nn/nn.cc`), computed
//! stably: the lane's maximum is subtracted before exponentiating.

use super::{lanes, map_lanes};
use crate::attrs::SoftmaxAttrs;
use crate::error::KernelError;
use crate::kernels::num::Float;
use crate::kernels::util::{args, floats, normalize_axis, only_output};
use crate::kernels::{Checked, Kernel};
use relay_devices::{DType, Tensor};

/// The lane's maximum and `Σ exp(v - max)`.
fn max_and_sum<T: Float>(lane: &[T]) -> (T, T) {
    let max = lane.iter().fold(T::LOWEST, |m, &v| if v > m { v } else { m });
    (max, lane.iter().fold(T::ZERO, |s, &v| s + (v - max).exp()))
}

/// Declares a softmax-like kernel: `|lane value, max, sum| result`. Float dtypes; the output
/// has the input's shape.
macro_rules! softmax_kernel {
    ($(#[$doc:meta])* $name:ident = $op:literal, |$v:ident, $max:ident, $sum:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Kernel for $name {
            const NAME: &'static str = $op;
            type Attrs = SoftmaxAttrs;

            fn shapes(inputs: &[&[usize]], attrs: &SoftmaxAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
                let [x] = args(inputs)?;
                normalize_axis(attrs.axis, x.len())?;
                Ok(vec![x.to_vec()])
            }

            fn dtypes(inputs: &[DType], _: &SoftmaxAttrs) -> Result<Vec<DType>, KernelError> {
                let [d] = args(inputs)?;
                floats!(d, T => Ok(vec![d]))
            }

            fn compute(inputs: &[&Tensor], attrs: &SoftmaxAttrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
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

softmax_kernel! {
    /// `nn.softmax`: `exp(x - max) / Σ exp(x - max)` along `axis`. Float dtypes.
    Softmax = "nn.softmax", |v, max, sum| (v - max).exp() / sum
}

softmax_kernel! {
    /// `nn.log_softmax`: `x - max - log Σ exp(x - max)` along `axis`. Float dtypes.
    LogSoftmax = "nn.log_softmax", |v, max, sum| v - max - sum.ln()
}
