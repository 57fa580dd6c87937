//! Operators that create a tensor from attributes or a scalar: `arange` and `full_like` (TVM
//! `src/relay/op/tensor/transform.cc`). Each output element depends on its index alone, so
//! both have kir rules.

use crate::attrs::{ArangeAttrs, NoAttrs};
use crate::compute::util::{lazy, lit, tensors};
use crate::error::KernelError;
use crate::kernels::num::from_f64;
use crate::kernels::util::{args, fill, nums, only_output, scalar_value};
use crate::kernels::Checked;
use crate::operator::{DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::kir::Expr;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Storage, Tensor};

/// The creating operators.
pub const CREATE: &[OpEntry] = &[OpEntry::of::<Arange>(), OpEntry::of::<FullLike>()];

/// `arange(start, stop, step, dtype)`: `start + i * step` for `i` in `0..ceil((stop - start) /
/// step)` (empty when that is not positive), computed in `float64` and converted to `dtype`.
/// Shape `(n,)`.
#[derive(Debug)]
pub struct Arange;

/// The number of values of `a`.
///
/// # Errors
/// A zero or non-finite step, non-finite bounds, or a length past `i64`.
fn arange_len(a: &ArangeAttrs) -> Result<usize, KernelError> {
    if a.step == 0.0 || !(a.start.is_finite() && a.stop.is_finite() && a.step.is_finite()) {
        return Err(KernelError::Attr(format!(
            "arange needs finite bounds and a non-zero step, got start={}, stop={}, step={}",
            a.start, a.stop, a.step
        )));
    }
    let n = ((a.stop - a.start) / a.step).ceil().max(0.0);
    if n > i64::MAX as f64 {
        return Err(KernelError::Attr(format!("arange of {n} values is too long")));
    }
    Ok(n as usize)
}

impl Operator for Arange {
    const NAME: &'static str = "arange";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 0;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "start + i * step below stop";
    type Attrs = ArangeAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<ArangeAttrs>> = Some(|_, a, out| {
        let (start, step, d) = (a.start, a.step, out.dtype);
        Ok(lazy(move |_, idx| {
            let i = Expr::index(idx[0].clone()).cast(DType::F64);
            (lit(DType::F64, start) + i * lit(DType::F64, step)).cast(d)
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &ArangeAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [] = args(inputs)?;
        Ok(vec![vec![D::known(arange_len(a)?)]])
    }

    fn dtypes(inputs: &[DType], a: &ArangeAttrs) -> Result<Vec<DType>, KernelError> {
        let [] = args(inputs)?;
        Ok(vec![Self::DTYPES.check(a.dtype)?])
    }

    fn reference(
        _: &[&Tensor],
        a: &ArangeAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let out = only_output(outputs)?;
        nums!(out.dtype(), T => {
            for (i, d) in out.as_mut_slice::<T>()?.iter_mut().enumerate() {
                *d = from_f64::<T>(a.start + i as f64 * a.step);
            }
            Ok(())
        })
    }
}

/// `full_like(data, fill_value)`: a tensor of `data`'s shape and dtype, every element the
/// scalar `fill_value` converted to that dtype.
#[derive(Debug)]
pub struct FullLike;

impl Operator for FullLike {
    const NAME: &'static str = "full_like";
    const PATTERN: OpPattern = OpPattern::ElemWise;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "data's shape and dtype, filled with a scalar";
    type Attrs = NoAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<NoAttrs>> = Some(|inputs, _, out| {
        let [_, v] = tensors(inputs)?;
        let (v, d) = (v.clone(), out.dtype);
        Ok(lazy(move |k, _| v.at(k, &[]).cast(d)))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &NoAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, v] = args(inputs)?;
        if !v.is_empty() {
            return Err(KernelError::Shape(format!(
                "the fill value must be a scalar, got shape {}",
                crate::operator::shape_text(v)
            )));
        }
        Ok(vec![x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &NoAttrs) -> Result<Vec<DType>, KernelError> {
        let [x, v] = args(inputs)?;
        Self::DTYPES.check(v)?;
        if !Storage::supports(x) {
            return Err(KernelError::unsupported(x));
        }
        Ok(vec![x])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &NoAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [_, v] = args(inputs)?;
        fill(only_output(outputs)?, scalar_value(v)?)
    }
}
