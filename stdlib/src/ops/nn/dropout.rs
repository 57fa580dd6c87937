//! `nn.dropout` in inference form (TVM `src/relay/op/nn/nn.cc`, `DropoutRel`).

use super::check_dtype;
use crate::attrs::DropoutAttrs;
use crate::error::KernelError;
use crate::kernels::util::{args, copy_elements, fill};
use crate::kernels::Checked;
use crate::operator::{DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Scalar, Tensor};

/// Dropout.
pub const DROPOUT: &[OpEntry] = &[OpEntry::of::<Dropout>()];

/// `nn.dropout`: at inference the identity. Two outputs, as TVM: the data and a mask of the
/// data's shape and dtype that is 1 wherever an element was kept (everywhere). Float dtypes.
#[derive(Debug)]
pub struct Dropout;

impl Operator for Dropout {
    const NAME: &'static str = "nn.dropout";
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "dropout: (out, mask); identity at inference";
    type Attrs = DropoutAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &DropoutAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        if !(0.0..1.0).contains(&a.rate) {
            return Err(KernelError::Attr(format!("rate must be in [0, 1), found {}", a.rate)));
        }
        Ok(vec![x.to_vec(), x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &DropoutAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![check_dtype(Self::DTYPES, d)?; 2])
    }

    fn reference(
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
