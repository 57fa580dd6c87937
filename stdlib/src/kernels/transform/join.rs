//! Joining and splitting along an axis: `concatenate`, `stack`, `split` (TVM
//! `src/relay/op/tensor/transform.cc`). Relay passes `concatenate`/`stack` one tuple; here its
//! fields are the inputs.

use crate::attrs::{ConcatenateAttrs, IndicesOrSections, SplitAttrs, StackAttrs};
use crate::error::KernelError;
use crate::kernels::util::{any_type, args, normalize_axis, only_output, same_dtype, to_positive};
use crate::kernels::{Checked, Kernel};
use relay_devices::{DType, Tensor};

/// The first input's shape; an error if there are no inputs.
fn first<'a>(inputs: &[&'a [usize]]) -> Result<&'a [usize], KernelError> {
    inputs.first().copied().ok_or(KernelError::Arity { expected: "at least 1".into(), actual: 0 })
}

/// `concatenate`: the inputs joined along `axis`; they must agree on every other dimension
/// and on dtype (any).
#[derive(Debug)]
pub struct Concatenate;

impl Kernel for Concatenate {
    const NAME: &'static str = "concatenate";
    type Attrs = ConcatenateAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &ConcatenateAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let mut out = first(inputs)?.to_vec();
        let axis = normalize_axis(attrs.axis, out.len())?;
        out[axis] = 0;
        for s in inputs {
            let mismatch =
                s.len() != out.len() || s.iter().zip(&out).enumerate().any(|(k, (a, b))| k != axis && a != b);
            if mismatch {
                return Err(KernelError::Shape(format!(
                    "cannot concatenate shapes {inputs:?} on axis {axis}"
                )));
            }
            out[axis] += s[axis];
        }
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &ConcatenateAttrs) -> Result<Vec<DType>, KernelError> {
        Ok(vec![same_dtype(inputs)?])
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &ConcatenateAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let out = only_output(outputs)?;
        let axis = normalize_axis(attrs.axis, out.ndim())?;
        let mut start = 0;
        for x in inputs {
            let len = x.shape().get(axis).copied().unwrap_or(0);
            any_type!(x.dtype(), T => {
                let mut block = out.view_mut::<T>()?.slice_axis(axis, start, 1, len)?;
                block.copy_from(&x.view::<T>()?)?;
                Ok(())
            })?;
            start += len;
        }
        Ok(())
    }
}

/// `stack`: the inputs (all of one shape and dtype) joined along a new axis at `axis`.
#[derive(Debug)]
pub struct Stack;

/// `axis` for a new axis of a rank-`rank` input, in `[-rank - 1, rank]`.
fn new_axis(axis: i64, rank: usize) -> Result<usize, KernelError> {
    normalize_axis(axis, rank + 1)
}

impl Kernel for Stack {
    const NAME: &'static str = "stack";
    type Attrs = StackAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &StackAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let shape = first(inputs)?;
        if inputs.iter().any(|s| *s != shape) {
            return Err(KernelError::Shape(format!("cannot stack shapes {inputs:?}")));
        }
        let axis = new_axis(attrs.axis, shape.len())?;
        let mut out = shape.to_vec();
        out.insert(axis, inputs.len());
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &StackAttrs) -> Result<Vec<DType>, KernelError> {
        Ok(vec![same_dtype(inputs)?])
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &StackAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let out = only_output(outputs)?;
        let axis = new_axis(attrs.axis, out.ndim().saturating_sub(1))?;
        for (i, x) in inputs.iter().enumerate() {
            any_type!(x.dtype(), T => {
                let mut block = out.view_mut::<T>()?.slice_axis(axis, i, 1, 1)?;
                block.copy_from(&x.view::<T>()?)?;
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// `split`: the input cut along `axis` into equal sections or before each index (TVM
/// requires indices to be strictly increasing, positive and below the dimension). Any dtype.
#[derive(Debug)]
pub struct Split;

/// `(start, len)` of each piece.
fn pieces(dim: usize, how: &IndicesOrSections) -> Result<Vec<(usize, usize)>, KernelError> {
    match how {
        IndicesOrSections::Sections(n) => {
            let n = to_positive(*n, "indices_or_sections")?;
            if !dim.is_multiple_of(n) {
                return Err(KernelError::Shape(format!(
                    "cannot split a dimension of {dim} into {n} equal sections"
                )));
            }
            Ok((0..n).map(|i| (i * (dim / n), dim / n)).collect())
        }
        IndicesOrSections::Indices(indices) => {
            let mut out = Vec::with_capacity(indices.len() + 1);
            let mut begin = 0usize;
            for &i in indices {
                match usize::try_from(i) {
                    Ok(i) if i > begin && i < dim => {
                        out.push((begin, i - begin));
                        begin = i;
                    }
                    _ => {
                        return Err(KernelError::Attr(format!(
                            "split indices {indices:?} must increase strictly within a dimension of {dim}"
                        )))
                    }
                }
            }
            out.push((begin, dim - begin));
            Ok(out)
        }
    }
}

impl Kernel for Split {
    const NAME: &'static str = "split";
    type Attrs = SplitAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &SplitAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [x] = args(inputs)?;
        let axis = normalize_axis(attrs.axis, x.len())?;
        Ok(pieces(x[axis], &attrs.indices_or_sections)?
            .into_iter()
            .map(|(_, len)| {
                let mut s = x.to_vec();
                s[axis] = len;
                s
            })
            .collect())
    }

    fn dtypes(inputs: &[DType], attrs: &SplitAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        let n = match &attrs.indices_or_sections {
            IndicesOrSections::Sections(n) => to_positive(*n, "indices_or_sections")?,
            IndicesOrSections::Indices(list) => list.len() + 1,
        };
        Ok(vec![d; n])
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &SplitAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let axis = normalize_axis(attrs.axis, x.ndim())?;
        let parts = pieces(x.shape()[axis], &attrs.indices_or_sections)?;
        for ((start, len), out) in parts.into_iter().zip(outputs.iter_mut()) {
            any_type!(x.dtype(), T => {
                let piece = x.view::<T>()?.slice_axis(axis, start, 1, len)?;
                out.view_mut::<T>()?.copy_from(&piece)?;
                Ok(())
            })?;
        }
        Ok(())
    }
}
