//! The losses TVM's frontends emit (TVM `src/relay/op/nn/nn.cc`, `topi.nn.loss`):
//! `nn.cross_entropy` over probabilities and `nn.nll_loss` over log-probabilities and class
//! targets. Opaque reductions to a scalar (or, for `nll_loss` without reduction, per target);
//! reference kernels only, sums in `float64`.

use super::check_dtype;
use crate::attrs::{LossReduction, NllLossAttrs, NoAttrs};
use crate::error::KernelError;
use crate::kernels::num::{cast, from_f64};
use crate::kernels::util::{args, floats, for_each_index, only_output, same_dtype};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use crate::ops::index::{index_values, may_equal, same_shape, strides};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The losses.
pub const LOSS: &[OpEntry] = &[OpEntry::of::<CrossEntropy>(), OpEntry::of::<NllLoss>()];

/// `nn.cross_entropy(predictions, targets)`: `-Σ log(predictions) * targets / N` over 2-d
/// `[N, C]` operands of the same shape and float dtype; a scalar of that dtype.
#[derive(Debug)]
pub struct CrossEntropy;

impl Operator for CrossEntropy {
    const NAME: &'static str = "nn.cross_entropy";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "-sum(log(predictions) * targets) / batch";
    type Attrs = NoAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &NoAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [p, t] = args(inputs)?;
        if p.len() != 2 {
            return Err(KernelError::Shape(format!(
                "{} needs 2-d predictions, got {}",
                Self::NAME,
                shape_text(p)
            )));
        }
        same_shape(p, t, "the targets")?;
        Ok(vec![Vec::new()])
    }

    fn dtypes(inputs: &[DType], _: &NoAttrs) -> Result<Vec<DType>, KernelError> {
        Ok(vec![check_dtype(Self::DTYPES, same_dtype(inputs)?)?])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &NoAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [p, t] = args(inputs)?;
        let batch = p.shape().first().copied().unwrap_or(1) as f64;
        let out = only_output(outputs)?;
        floats!(p.dtype(), T => {
            let (ps, ts) = (p.as_slice::<T>()?, t.as_slice::<T>()?);
            let sum: f64 = ps.iter().zip(ts).map(|(&a, &b)| cast::<T, f64>(a).ln() * cast::<T, f64>(b)).sum();
            if let Some(d) = out.as_mut_slice::<T>()?.first_mut() {
                *d = from_f64::<T>(-sum / batch);
            }
            Ok(())
        })
    }
}

/// `nn.nll_loss(predictions, targets, weights, reduction, ignore_index)`: predictions `[N, C,
/// d...]` (log-probabilities, float), integer targets `[N, d...]` naming a class each, weights
/// `[C]` of the predictions' dtype. Each target `t` not `ignore_index` loses
/// `-predictions[n, t, d...] * weights[t]`; `none` gives those (shape of the targets), `sum`
/// their sum, `mean` the sum over the sum of the weights taken (a scalar).
///
/// # Errors
/// A target outside `[0, C)` other than `ignore_index`, when run.
#[derive(Debug)]
pub struct NllLoss;

impl Operator for NllLoss {
    const NAME: &'static str = "nn.nll_loss";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 3;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "negative log-likelihood of class targets";
    type Attrs = NllLossAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &NllLossAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [p, t, w] = args(inputs)?;
        if p.len() < 2 {
            return Err(KernelError::Shape(format!(
                "{} needs predictions of rank 2 or more, got {}",
                Self::NAME,
                shape_text(p)
            )));
        }
        let expected: Vec<D> = p.iter().enumerate().filter(|&(i, _)| i != 1).map(|(_, &d)| d).collect();
        same_shape(t, &expected, "the targets (the predictions without the class axis)")?;
        if w.len() != 1 || !may_equal(w[0], p[1]) {
            return Err(KernelError::Shape(format!(
                "the weights must be 1-d, one per class of {}, got {}",
                shape_text(p),
                shape_text(w)
            )));
        }
        Ok(vec![if a.reduction == LossReduction::None { t.to_vec() } else { Vec::new() }])
    }

    fn dtypes(inputs: &[DType], _: &NllLossAttrs) -> Result<Vec<DType>, KernelError> {
        let [p, t, w] = args(inputs)?;
        if !t.is_int() {
            return Err(KernelError::DType(format!("the targets must be integers, found `{t}`")));
        }
        Ok(vec![check_dtype(Self::DTYPES, same_dtype(&[p, w])?)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &NllLossAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [p, t, w] = args(inputs)?;
        let (shape, classes) = (p.shape().to_vec(), p.shape()[1]);
        let p_strides = strides(&shape);
        let targets = index_values(t)?;
        let out = only_output(outputs)?;
        floats!(p.dtype(), T => {
            let (ps, ws) = (p.as_slice::<T>()?, w.as_slice::<T>()?);
            let (mut losses, mut weight_sum) = (Vec::with_capacity(targets.len()), 0.0f64);
            let mut next = targets.iter();
            for_each_index(t.shape(), |q| {
                let target = next.next().copied().unwrap_or(a.ignore_index);
                if target == a.ignore_index {
                    losses.push(0.0);
                    return Ok(());
                }
                let class = usize::try_from(target)
                    .ok()
                    .filter(|&c| c < classes)
                    .ok_or(KernelError::IndexOutOfRange { index: target, size: classes })?;
                // `q` is `[n, d...]`; the prediction sits at `[n, class, d...]`.
                let at = q.first().map_or(0, |n| n * p_strides[0])
                    + class * p_strides[1]
                    + q.iter().skip(1).zip(&p_strides[2..]).map(|(i, s)| i * s).sum::<usize>();
                let weight = ws.get(class).map_or(0.0, |&v| cast::<T, f64>(v));
                weight_sum += weight;
                losses.push(-ps.get(at).map_or(0.0, |&v| cast::<T, f64>(v)) * weight);
                Ok(())
            })?;
            let total: f64 = losses.iter().sum();
            let result = match a.reduction {
                LossReduction::None => losses,
                LossReduction::Sum => vec![total],
                LossReduction::Mean => vec![total / weight_sum],
            };
            for (d, v) in out.as_mut_slice::<T>()?.iter_mut().zip(result) {
                *d = from_f64::<T>(v);
            }
            Ok(())
        })
    }
}
