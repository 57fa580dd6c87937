//! Normalisation in inference form (TVM `src/relay/op/nn/nn.cc` `BatchNormRel`,
//! `LayerNormRel`): `nn.batch_norm` with stored statistics and `nn.layer_norm` over one axis.

use super::{axis_in, check_channel_vector, check_dtype, lanes, map_lanes};
use crate::attrs::{BatchNormAttrs, LayerNormAttrs};
use crate::compute;
use crate::error::KernelError;
use crate::kernels::num::{from_f64, from_usize, Float};
use crate::kernels::util::{args, copy_elements, floats, only_output, same_dtype};
use crate::kernels::Checked;
use crate::operator::{ComputeRule, DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The normalisations in inference form.
pub const NORM: &[OpEntry] = &[OpEntry::of::<BatchNorm>(), OpEntry::of::<LayerNorm>()];

/// The channel axis of `data` after checking `epsilon` and that each named parameter is a
/// vector along it.
fn check_params<D: ShapeDim>(
    data: &[D],
    axis: i64,
    epsilon: f64,
    params: &[(&[D], &str)],
) -> Result<usize, KernelError> {
    let axis = axis_in(axis, data)?;
    if epsilon.is_nan() || epsilon < 0.0 {
        return Err(KernelError::Attr(format!("epsilon must not be negative, found {epsilon}")));
    }
    for (p, what) in params {
        check_channel_vector(data, axis, p, what)?;
    }
    Ok(axis)
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

impl Operator for BatchNorm {
    const NAME: &'static str = "nn.batch_norm";
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 5;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "batch normalisation: (out, mean, var)";
    type Attrs = BatchNormAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &BatchNormAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, g, b, m, v] = args(inputs)?;
        let params = [(g, "gamma"), (b, "beta"), (m, "moving_mean"), (v, "moving_var")];
        let axis = check_params(x, a.axis, a.epsilon, &params)?;
        Ok(vec![x.to_vec(), vec![x[axis]], vec![x[axis]]])
    }

    fn dtypes(inputs: &[DType], _: &BatchNormAttrs) -> Result<Vec<DType>, KernelError> {
        let d = check_dtype(Self::DTYPES, same_dtype(&args::<_, 5>(inputs)?)?)?;
        Ok(vec![d; 3])
    }

    fn reference(
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

impl Operator for LayerNorm {
    const NAME: &'static str = "nn.layer_norm";
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 3;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "layer normalisation over axis";
    type Attrs = LayerNormAttrs;
    const COMPUTE: Option<ComputeRule<LayerNormAttrs>> = Some(compute::nn::layer_norm);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &LayerNormAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, g, b] = args(inputs)?;
        check_params(x, a.axis, a.epsilon, &[(g, "gamma"), (b, "beta")])?;
        Ok(vec![x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &LayerNormAttrs) -> Result<Vec<DType>, KernelError> {
        Ok(vec![check_dtype(Self::DTYPES, same_dtype(&args::<_, 3>(inputs)?)?)?])
    }

    fn reference(
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

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::Dim::Known as K;

    #[test]
    fn batch_norm_gives_the_data_and_two_channel_vectors() {
        let (d, v) = ([K(2), K(3), K(4), K(4)], [K(3)]);
        let out = BatchNorm::shapes(&[&d[..], &v, &v, &v, &v], &BatchNormAttrs::default()).unwrap();
        assert_eq!(out, vec![d.to_vec(), v.to_vec(), v.to_vec()]);
        let err = BatchNorm::shapes(&[&d[..], &v, &v, &[K(4)], &v], &BatchNormAttrs::default()).unwrap_err();
        assert!(err.to_string().contains("moving_mean must be a vector of 3"), "{err}");
        let negative = LayerNormAttrs { epsilon: -1.0, ..Default::default() };
        assert!(LayerNorm::shapes::<usize>(&[&[2, 3], &[3], &[3]], &negative).is_err());
    }
}
