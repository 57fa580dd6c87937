//! `nn.dropout` in inference form (TVM `src/relay/op/nn/nn.cc`, `DropoutRel`).

use crate::attrs::DropoutAttrs;
use crate::error::KernelError;
use crate::kernels::util::{args, copy_elements, fill, floats};
use crate::kernels::{Checked, Kernel};
use relay_devices::{DType, Scalar, Tensor};

/// `nn.dropout`: at inference the identity. Two outputs, as TVM: the data and a mask of the
/// data's shape and dtype that is 1 wherever an element was kept (everywhere). Float dtypes.
#[derive(Debug)]
pub struct Dropout;

impl Kernel for Dropout {
    const NAME: &'static str = "nn.dropout";
    type Attrs = DropoutAttrs;

    fn shapes(inputs: &[&[usize]], _: &DropoutAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [x] = args(inputs)?;
        Ok(vec![x.to_vec(), x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &DropoutAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        floats!(d, T => Ok(vec![d, d]))
    }

    fn compute(
        inputs: &[&Tensor],
        _: &DropoutAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let [out, mask] = outputs else {
            return Err(KernelError::OutputCount { expected: 2, actual: outputs.len() });
        };
        copy_elements(x, out)?;
        fill(mask, Scalar::Int(1))
    }
}
