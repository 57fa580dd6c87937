//! Normalisations over windows of a tensor that TVM's frontends emit as operators:
//! `nn.instance_norm`, `nn.group_norm`, `nn.lrn` and `nn.l2_normalize` (TVM `src/relay/op/nn/nn.cc`). Opaque: reference kernels
//! only (sums in `float64`); at `-O2` the compiler's SimplifyInference decomposes all but
//! `nn.lrn` into reductions and arithmetic that fuse, as TVM lowers them before fusion.

use super::index::{may_equal, strides};
use crate::attrs::{GroupNormAttrs, InstanceNormAttrs, L2NormalizeAttrs, LrnAttrs};
use crate::error::KernelError;
use crate::kernels::num::{cast, from_f64};
use crate::kernels::util::{
    args, floats, for_each_index, normalize_axis, only_output, same_dtype, to_positive,
};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The normalisation operators.
pub const NORMALIZATION: &[OpEntry] = &[
    OpEntry::of::<InstanceNorm>(),
    OpEntry::of::<GroupNorm>(),
    OpEntry::of::<Lrn>(),
    OpEntry::of::<L2Normalize>(),
];

/// The shape of `data` after checking the inputs `(data, gamma, beta)` of a grouped
/// normalisation `op` with channel axis `axis`: `data` of rank `min_rank` or more, `axis` not
/// the batch axis 0, `gamma` and `beta` 1-D along it.
fn check_grouped<D: ShapeDim>(
    inputs: &[&[D]],
    axis: i64,
    op: &str,
    min_rank: usize,
) -> Result<Vec<D>, KernelError> {
    let [x, gamma, beta] = args(inputs)?;
    if x.len() < min_rank {
        return Err(KernelError::Shape(format!("{op} needs rank {min_rank} or more, got {}", shape_text(x))));
    }
    let axis = normalize_axis(axis, x.len())?;
    if axis == 0 {
        return Err(KernelError::Attr(format!("{op}'s channel axis cannot be the batch axis 0")));
    }
    for (what, p) in [("gamma", gamma), ("beta", beta)] {
        if p.len() != 1 || !may_equal(p[0], x[axis]) {
            return Err(KernelError::Shape(format!(
                "{what} must be 1-D, as long as axis {axis} of {}, got {}",
                shape_text(x),
                shape_text(p)
            )));
        }
    }
    Ok(x.to_vec())
}

/// Normalises `(data, gamma, beta)` into the one output: the channels of `axis` form `groups`
/// equal runs per item (`groups_per_item`), and each `(n, group)` slice (`n` along axis 0) is brought to zero mean and unit
/// variance over its channels and the other axes, then `* gamma[c] + beta[c]` as `scale` and
/// `center` say. Sums in `float64`. `groups_per_item` divides the channel count (checked by
/// callers).
fn group_normalise(
    inputs: &[&Tensor],
    axis: i64,
    groups_per_item: usize,
    epsilon: f64,
    center: bool,
    scale: bool,
    outputs: &mut [Tensor],
) -> Result<(), KernelError> {
    let [x, gamma, beta] = args(inputs)?;
    let shape = x.shape().to_vec();
    let axis = normalize_axis(axis, shape.len())?;
    let per_group = (shape[axis] / groups_per_item.max(1)).max(1);
    let group = |p: &[usize]| p[0] * groups_per_item + p[axis] / per_group;
    let groups = shape[0] * groups_per_item;
    let count = (x.len() / groups.max(1)).max(1) as f64;
    let out = only_output(outputs)?;
    floats!(x.dtype(), T => {
        let data = x.as_slice::<T>()?;
        let (g, b) = (gamma.as_slice::<T>()?, beta.as_slice::<T>()?);
        let (mut sum, mut sq) = (vec![0.0f64; groups], vec![0.0f64; groups]);
        let mut values = data.iter();
        for_each_index(&shape, |p| {
            if let (Some(&v), Some(s)) = (values.next(), sum.get_mut(group(p))) {
                *s += cast::<T, f64>(v);
            }
            Ok(())
        })?;
        let mean: Vec<f64> = sum.iter().map(|s| s / count).collect();
        let mut values = data.iter();
        for_each_index(&shape, |p| {
            if let (Some(&v), Some(s)) = (values.next(), sq.get_mut(group(p))) {
                *s += (cast::<T, f64>(v) - mean[group(p)]).powi(2);
            }
            Ok(())
        })?;
        let mut cells = out.as_mut_slice::<T>()?.iter_mut().zip(data);
        for_each_index(&shape, |p| {
            let (k, c) = (group(p), p[axis]);
            if let (Some((d, &v)), Some(&gc), Some(&bc)) = (cells.next(), g.get(c), b.get(c)) {
                let mut y = (cast::<T, f64>(v) - mean[k]) / (sq[k] / count + epsilon).sqrt();
                if scale {
                    y *= cast::<T, f64>(gc);
                }
                if center {
                    y += cast::<T, f64>(bc);
                }
                *d = from_f64::<T>(y);
            }
            Ok(())
        })
    })
}

/// `nn.group_norm(data, gamma, beta, num_groups, axis, epsilon, center, scale)`: the channels
/// of `axis` split into `num_groups` equal runs; each `(n, group)` slice normalised to zero
/// mean and unit variance over its channels and every axis but 0 and `axis`, then
/// `* gamma[c] + beta[c]`. `data` of rank 2 or more; `num_groups` positive and dividing
/// `data.shape[axis]`; `gamma`, `beta` 1-D of `data.shape[axis]`; float dtypes, all the same.
/// Same shape and dtype as `data`.
#[derive(Debug)]
pub struct GroupNorm;

/// `num_groups` of a `nn.group_norm` call on `channels` channels (when known), checked.
fn num_groups(a: &GroupNormAttrs, channels: Option<usize>) -> Result<usize, KernelError> {
    let g = to_positive(a.num_groups, "num_groups")?;
    match channels {
        Some(c) if c % g != 0 => {
            Err(KernelError::Attr(format!("num_groups {g} does not divide the {c} channels")))
        }
        _ => Ok(g),
    }
}

impl Operator for GroupNorm {
    const NAME: &'static str = "nn.group_norm";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 3;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "per-instance, per-channel-group normalisation";
    type Attrs = GroupNormAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &GroupNormAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let x = check_grouped(inputs, a.axis, "group_norm", 2)?;
        num_groups(a, x[normalize_axis(a.axis, x.len())?].value())?;
        Ok(vec![x])
    }

    fn dtypes(inputs: &[DType], _: &GroupNormAttrs) -> Result<Vec<DType>, KernelError> {
        Ok(vec![Self::DTYPES.check(same_dtype(inputs)?)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &GroupNormAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, _, _] = args(inputs)?;
        let channels = x.shape()[normalize_axis(a.axis, x.ndim())?];
        let groups = num_groups(a, Some(channels))?;
        group_normalise(inputs, a.axis, groups, a.epsilon, a.center, a.scale, outputs)
    }
}

/// `nn.instance_norm(data, gamma, beta, axis, epsilon, center, scale)`: each `(n, c)` slice
/// (`n` along axis 0, `c` along `axis`) normalised to zero mean and unit variance over the
/// other axes, then `* gamma[c] + beta[c]`. `data` of rank 3 or more; `gamma`, `beta` 1-D of
/// `data.shape[axis]`; float dtypes, all the same. Same shape and dtype as `data`.
#[derive(Debug)]
pub struct InstanceNorm;

impl Operator for InstanceNorm {
    const NAME: &'static str = "nn.instance_norm";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 3;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "per-instance, per-channel normalisation";
    type Attrs = InstanceNormAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &InstanceNormAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        check_grouped(inputs, a.axis, "instance_norm", 3).map(|x| vec![x])
    }

    fn dtypes(inputs: &[DType], _: &InstanceNormAttrs) -> Result<Vec<DType>, KernelError> {
        Ok(vec![Self::DTYPES.check(same_dtype(inputs)?)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &InstanceNormAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, _, _] = args(inputs)?;
        let axis = normalize_axis(a.axis, x.ndim())?;
        let channels = x.shape()[axis];
        group_normalise(inputs, a.axis, channels, a.epsilon, a.center, a.scale, outputs)
    }
}

/// `nn.lrn(data, size, axis, bias, alpha, beta)`: local response normalisation across
/// channels, `x / (bias + alpha / size * s)^beta` with `s` the sum of squares over channels
/// `c - size / 2 ..= c - size / 2 + size - 1` along `axis` (those that exist). Float dtypes;
/// same shape and dtype.
#[derive(Debug)]
pub struct Lrn;

impl Operator for Lrn {
    const NAME: &'static str = "nn.lrn";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "local response normalisation across channels";
    type Attrs = LrnAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &LrnAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        normalize_axis(a.axis, x.len())?;
        to_positive(a.size, "size")?;
        Ok(vec![x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &LrnAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![Self::DTYPES.check(d)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &LrnAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let shape = x.shape().to_vec();
        let axis = normalize_axis(a.axis, shape.len())?;
        let size = to_positive(a.size, "size")?;
        let (n, stride) = (shape[axis], strides(&shape)[axis]);
        let out = only_output(outputs)?;
        floats!(x.dtype(), T => {
            let data = x.as_slice::<T>()?;
            let dst = out.as_mut_slice::<T>()?;
            let mut flat = 0;
            for_each_index(&shape, |p| {
                let c = p[axis];
                let first = c.saturating_sub(size / 2);
                let last = (c + size - size / 2).min(n);
                let base = flat - c * stride;
                let s: f64 = (first..last)
                    .filter_map(|j| data.get(base + j * stride))
                    .map(|&v| cast::<T, f64>(v).powi(2))
                    .sum();
                if let (Some(d), Some(&v)) = (dst.get_mut(flat), data.get(flat)) {
                    *d = from_f64::<T>(cast::<T, f64>(v) / (a.bias + a.alpha / size as f64 * s).powf(a.beta));
                }
                flat += 1;
                Ok(())
            })
        })
    }
}

/// The axes `nn.l2_normalize` sums over, as a mask over the `rank` axes of its data; `None`
/// gives all of them. Repeated axes are refused.
fn l2_axes(axis: &Option<Vec<i64>>, rank: usize) -> Result<Vec<bool>, KernelError> {
    let Some(axes) = axis else {
        return Ok(vec![true; rank]);
    };
    let mut mask = vec![false; rank];
    for &a in axes {
        let i = normalize_axis(a, rank)?;
        if std::mem::replace(&mut mask[i], true) {
            return Err(KernelError::Attr(format!("axis {a} is repeated in {axes:?}")));
        }
    }
    Ok(mask)
}

/// `nn.l2_normalize(data, eps, axis)`: `data / sqrt(max(s, eps))` with `s` the sum of
/// `data^2` over `axis` (all axes when `None`) at each position of the other axes. Float
/// dtypes; same shape and dtype. `eps` must not be negative.
#[derive(Debug)]
pub struct L2Normalize;

impl Operator for L2Normalize {
    const NAME: &'static str = "nn.l2_normalize";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "divide by the L2 norm over axes";
    type Attrs = L2NormalizeAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &L2NormalizeAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        l2_axes(&a.axis, x.len())?;
        if a.eps.is_nan() || a.eps < 0.0 {
            return Err(KernelError::Attr(format!("eps must not be negative, found {}", a.eps)));
        }
        Ok(vec![x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &L2NormalizeAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![Self::DTYPES.check(d)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &L2NormalizeAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let shape = x.shape().to_vec();
        let summed = l2_axes(&a.axis, shape.len())?;
        // Each position's sum lives at its index with the summed axes set to 0.
        let kept: Vec<usize> = shape.iter().zip(&summed).map(|(&d, &s)| if s { 1 } else { d }).collect();
        let kept_strides = strides(&kept);
        let slot = |p: &[usize]| -> usize {
            p.iter().zip(&summed).zip(&kept_strides).map(|((&i, &s), &st)| if s { 0 } else { i * st }).sum()
        };
        let out = only_output(outputs)?;
        floats!(x.dtype(), T => {
            let data = x.as_slice::<T>()?;
            let mut sums = vec![0.0f64; kept.iter().product()];
            let mut values = data.iter();
            for_each_index(&shape, |p| {
                if let (Some(&v), Some(s)) = (values.next(), sums.get_mut(slot(p))) {
                    *s += cast::<T, f64>(v).powi(2);
                }
                Ok(())
            })?;
            let mut cells = out.as_mut_slice::<T>()?.iter_mut().zip(data);
            for_each_index(&shape, |p| {
                if let (Some((d, &v)), Some(&s)) = (cells.next(), sums.get(slot(p))) {
                    *d = from_f64::<T>(cast::<T, f64>(v) / s.max(a.eps).sqrt());
                }
                Ok(())
            })
        })
    }
}
