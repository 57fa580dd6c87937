//! Shape functions shared by the elementwise and broadcast families.

use crate::error::KernelError;
use crate::kernels::util::args;
use crate::operator::{broadcast, ShapeDim};

/// One input; the output has its shape.
pub(crate) fn elementwise_shape<D: ShapeDim>(inputs: &[&[D]]) -> Result<Vec<Vec<D>>, KernelError> {
    let [x] = args(inputs)?;
    Ok(vec![x.to_vec()])
}

/// `N` inputs; the output has their NumPy broadcast shape.
pub(crate) fn broadcast_shape<D: ShapeDim, const N: usize>(
    inputs: &[&[D]],
) -> Result<Vec<Vec<D>>, KernelError> {
    let shapes: [&[D]; N] = args(inputs)?;
    Ok(vec![broadcast(&shapes)?])
}
