//! Normalisation in inference form (TVM `src/relay/op/nn/nn.cc`): `nn.batch_norm` with
//! stored statistics and `nn.layer_norm` over one axis.

use super::{lanes, map_lanes};
use crate::attrs::{BatchNormAttrs, LayerNormAttrs};
use crate::error::KernelError;
use crate::kernels::num::{from_f64, from_usize, Float};
use crate::kernels::util::{args, copy_elements, floats, normalize_axis, only_output, same_dtype};
use crate::kernels::{Checked, Kernel};
use relay_devices::{DType, Tensor};

/// Errors unless every parameter shape is `[channels]`.
fn check_params(params: &[&[usize]], channels: usize) -> Result<(), KernelError> {
    match params.iter().find(|p| **p != [channels]) {
        Some(p) => Err(KernelError::Shape(format!("parameter of shape {p:?} where [{channels}] is needed"))),
        None => Ok(()),
    }
}

/// `(x - mean) / sqrt(var + eps)`, times `gamma` and plus `beta` as the flags say.
fn normalise<T: Float>(x: T, mean: T, var: T, eps: T, gamma: Option<T>, beta: Option<T>) -> T {
    let y = (x - mean) / (var + eps).sqrt();
    let y = gamma.map_or(y, |g| y * g);
    beta.map_or(y, |b| y + b)
}

/// `nn.batch_norm(data, gamma, beta, moving_mean, moving_var)` for inference:
/// `(data - moving_mean) / sqrt(moving_var + epsilon) * gamma + beta` per channel of `axis`
/// (without `gamma` unless `scale`, without `beta` unless `center`). Three outputs, as TVM:
/// the result, `moving_mean` and `moving_var`. Float dtypes.
#[derive(Debug)]
pub struct BatchNorm;

impl Kernel for BatchNorm {
    const NAME: &'static str = "nn.batch_norm";
    type Attrs = BatchNormAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &BatchNormAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [x, g, b, m, v] = args(inputs)?;
        let c = x[normalize_axis(attrs.axis, x.len())?];
        check_params(&[g, b, m, v], c)?;
        Ok(vec![x.to_vec(), vec![c], vec![c]])
    }

    fn dtypes(inputs: &[DType], _: &BatchNormAttrs) -> Result<Vec<DType>, KernelError> {
        let d = same_dtype(&args::<_, 5>(inputs)?)?;
        floats!(d, T => Ok(vec![d; 3]))
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &BatchNormAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, g, b, m, v] = args(inputs)?;
        let (mean_in, var_in) = (m, v);
        let (_, channels, inner) = lanes(x.shape(), attrs.axis)?;
        let [out, mean_out, var_out] = outputs else {
            return Err(KernelError::OutputCount { expected: 3, actual: outputs.len() });
        };
        floats!(x.dtype(), T => {
            let (g, b, m, v) = (g.as_slice::<T>()?, b.as_slice::<T>()?, m.as_slice::<T>()?, v.as_slice::<T>()?);
            let eps = from_f64::<T>(attrs.epsilon);
            for (i, (o, &xv)) in out.as_mut_slice::<T>()?.iter_mut().zip(x.as_slice::<T>()?).enumerate() {
                let c = (i / inner.max(1)) % channels.max(1);
                let gamma = attrs.scale.then(|| g.get(c).copied()).flatten();
                let beta = attrs.center.then(|| b.get(c).copied()).flatten();
                let (Some(&mean), Some(&var)) = (m.get(c), v.get(c)) else { continue };
                *o = normalise(xv, mean, var, eps, gamma, beta);
            }
            copy_elements(mean_in, mean_out)?;
            copy_elements(var_in, var_out)
        })
    }
}

/// `nn.layer_norm(data, gamma, beta)`: each lane along `axis` normalised by its own mean and
/// (biased) variance, then scaled and shifted per position along `axis`. Float dtypes.
#[derive(Debug)]
pub struct LayerNorm;

impl Kernel for LayerNorm {
    const NAME: &'static str = "nn.layer_norm";
    type Attrs = LayerNormAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &LayerNormAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [x, g, b] = args(inputs)?;
        check_params(&[g, b], x[normalize_axis(attrs.axis, x.len())?])?;
        Ok(vec![x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &LayerNormAttrs) -> Result<Vec<DType>, KernelError> {
        let d = same_dtype(&args::<_, 3>(inputs)?)?;
        floats!(d, T => Ok(vec![d]))
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &LayerNormAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, g, b] = args(inputs)?;
        let geometry = lanes(x.shape(), attrs.axis)?;
        let out = only_output(outputs)?;
        floats!(x.dtype(), T => {
            let (g, b) = (g.as_slice::<T>()?, b.as_slice::<T>()?);
            let eps = from_f64::<T>(attrs.epsilon);
            map_lanes(x.as_slice::<T>()?, out.as_mut_slice::<T>()?, geometry, |lane, res| {
                let n = from_usize::<T>(lane.len());
                let mean = lane.iter().fold(0.0, |s, &v| s + v) / n;
                let var = lane.iter().fold(0.0, |s, &v| s + (v - mean) * (v - mean)) / n;
                for (c, (r, &v)) in res.iter_mut().zip(lane).enumerate() {
                    let gamma = attrs.scale.then(|| g.get(c).copied()).flatten();
                    let beta = attrs.center.then(|| b.get(c).copied()).flatten();
                    *r = normalise(v, mean, var, eps, gamma, beta);
                }
            })
        })
    }
}
