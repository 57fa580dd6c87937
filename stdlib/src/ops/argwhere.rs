//! `argwhere` (TVM `src/relay/op/tensor/transform.cc`, `topi/argwhere.py`): the coordinates of
//! the non-zero elements, a result whose length only the input values give.

use crate::attrs::NoAttrs;
use crate::error::KernelError;
use crate::kernels::util::{any_type, args, for_each_index, only_output};
use crate::kernels::Checked;
use crate::operator::{DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// `argwhere` alone.
pub const ARGWHERE: &[OpEntry] = &[OpEntry::of::<Argwhere>()];

/// `argwhere(condition)`: an `int32` tensor of shape `(count, rank)`, one row per non-zero
/// element of `condition` (NaN counts as non-zero), the coordinates in row-major order of the
/// elements (NumPy `argwhere`). The count is `?` in the relation; any dtype.
#[derive(Debug)]
pub struct Argwhere;

/// `argwhere`'s result shape for a condition of shape `x` with `count` non-zero elements
/// (`None`: not known before run time).
fn argwhere_shape<D: ShapeDim>(x: &[D], count: Option<usize>) -> Result<Vec<Vec<D>>, KernelError> {
    Ok(vec![vec![D::maybe(count)?, D::known(x.len())]])
}

/// Whether each element of `x` is non-zero, in row-major order.
fn non_zero(x: &Tensor) -> Result<Vec<bool>, KernelError> {
    any_type!(x.dtype(), T => Ok(x.as_slice::<T>()?.iter().map(|&v| v != T::default()).collect()))
}

impl Operator for Argwhere {
    const NAME: &'static str = "argwhere";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "coordinates of the non-zero elements, one row each";
    type Attrs = NoAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &NoAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        argwhere_shape(x, None)
    }

    fn output_shapes(inputs: &[&Tensor], _: &NoAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [x] = args(inputs)?;
        argwhere_shape(x.shape(), Some(non_zero(x)?.iter().filter(|&&b| b).count()))
    }

    fn dtypes(inputs: &[DType], _: &NoAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        DTypeSet::Any.check(d)?;
        Ok(vec![DType::I32])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &NoAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let hits = non_zero(x)?;
        let mut rows = Vec::with_capacity(only_output(outputs)?.len());
        let mut flat = 0;
        for_each_index(x.shape(), |at| {
            if hits.get(flat).copied().unwrap_or(false) {
                for &i in at {
                    rows.push(i32::try_from(i).map_err(|_| {
                        KernelError::Shape(format!("coordinate {i} does not fit argwhere's int32 result"))
                    })?);
                }
            }
            flat += 1;
            Ok(())
        })?;
        let out = only_output(outputs)?.as_mut_slice::<i32>()?;
        if out.len() != rows.len() {
            return Err(KernelError::Shape(format!(
                "{} coordinates for {} output elements",
                rows.len(),
                out.len()
            )));
        }
        out.copy_from_slice(&rows);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::eval;
    use relay_compiler::ir::Dim;

    #[test]
    fn rows_of_coordinates_sized_by_the_values() {
        let x = Tensor::from_vec(vec![2, 3], vec![0f32, 1.0, 0.0, f32::NAN, 0.0, 2.0]).unwrap();
        let out = eval::<Argwhere>(&[&x], &NoAttrs::default()).unwrap();
        assert_eq!(out[0].shape(), &[3, 2]);
        assert_eq!(out[0].as_slice::<i32>().unwrap(), &[0, 1, 1, 0, 1, 2]);
        let relation = Argwhere::shapes(&[&[Dim::Known(2), Dim::Known(3)][..]], &NoAttrs::default()).unwrap();
        assert_eq!(relation, vec![vec![Dim::Any, Dim::Known(2)]]);
        // A scalar: one row of no coordinates when it is non-zero.
        let s = Tensor::scalar(true);
        assert_eq!(eval::<Argwhere>(&[&s], &NoAttrs::default()).unwrap()[0].shape(), &[1, 0]);
    }
}
