//! Reference kernels: plain, obviously correct Rust over strided buffers, used as the oracle
//! for JIT and OpenCL code and to run `-O0` programs (ARCHITECTURE.md §3, "Kernels").
//!
//! Every operator is a zero-sized type implementing [`ReferenceKernel`]: a shape function, a dtype
//! rule and a destination-passing kernel that writes preallocated outputs. [`run`] checks the
//! outputs against the shape function before computing, so kernels can trust them;
//! [`table::reference_ops`] lists every operator by TVM name with type-erased entry points.

pub(crate) mod half_float;
pub(crate) mod num;
pub mod table;
pub(crate) mod util;

pub use num::{Float, Num};

use crate::attrs::OpAttrs;
use crate::error::KernelError;
use relay_devices::{DType, Tensor};

/// Proof that [`run`] validated a call: inputs passed the shape function and dtype rule and the
/// outputs have the shapes and dtypes they give. Only [`run`] can make one.
#[derive(Debug)]
pub struct Checked {
    _private: (),
}

/// One operator's reference implementation.
pub trait ReferenceKernel {
    /// TVM's operator name (`add`, `nn.conv2d`).
    const NAME: &'static str;
    /// The attribute struct.
    type Attrs: OpAttrs;

    /// Output shapes of a call on these inputs (from their shapes, or for a data-dependent
    /// operator also their values); also validates input ranks, dimensions and attribute
    /// values. The runtime uses it to size outputs with `?` dimensions.
    fn shapes(inputs: &[&Tensor], attrs: &Self::Attrs) -> Result<Vec<Vec<usize>>, KernelError>;

    /// Whether [`run`] hands the kernel `float32` copies of half-float operands and rounds its
    /// `float32` results back (see `half_float.rs`); `false` for a kernel that reads their
    /// bits (`reinterpret`) and takes `float16`/`bfloat16` tensors as they are.
    const WIDENS_HALF_FLOATS: bool = true;

    /// Output dtypes from input dtypes; rejects unsupported or mismatched dtypes.
    fn dtypes(inputs: &[DType], attrs: &Self::Attrs) -> Result<Vec<DType>, KernelError>;

    /// Writes the outputs. Called through [`run`], which validates first.
    fn compute(
        inputs: &[&Tensor],
        attrs: &Self::Attrs,
        outputs: &mut [Tensor],
        checked: Checked,
    ) -> Result<(), KernelError>;
}

/// Output shapes and dtypes of `K` for these inputs.
pub fn output_types<K: ReferenceKernel>(
    inputs: &[&Tensor],
    attrs: &K::Attrs,
) -> Result<Vec<(Vec<usize>, DType)>, KernelError> {
    let dtypes: Vec<DType> = inputs.iter().map(|t| t.dtype()).collect();
    let out_shapes = K::shapes(inputs, attrs)?;
    let out_dtypes = K::dtypes(&dtypes, attrs)?;
    if out_shapes.len() != out_dtypes.len() {
        return Err(KernelError::OutputCount { expected: out_dtypes.len(), actual: out_shapes.len() });
    }
    Ok(out_shapes.into_iter().zip(out_dtypes).collect())
}

/// Runs `K` on `inputs`, writing `outputs`, which must already have the shapes and dtypes that
/// [`ReferenceKernel::shapes`] and [`ReferenceKernel::dtypes`] give (destination passing).
pub fn run<K: ReferenceKernel>(
    inputs: &[&Tensor],
    attrs: &K::Attrs,
    outputs: &mut [Tensor],
) -> Result<(), KernelError> {
    let expected = output_types::<K>(inputs, attrs)?;
    if expected.len() != outputs.len() {
        return Err(KernelError::OutputCount { expected: expected.len(), actual: outputs.len() });
    }
    for (index, ((shape, dtype), out)) in expected.into_iter().zip(outputs.iter()).enumerate() {
        if out.shape() != shape.as_slice() || out.dtype() != dtype {
            return Err(KernelError::Output {
                index,
                expected_shape: shape,
                expected_dtype: dtype,
                actual_shape: out.shape().to_vec(),
                actual_dtype: out.dtype(),
            });
        }
    }
    let compute = |inputs: &[&Tensor], outputs: &mut [Tensor]| {
        K::compute(inputs, attrs, outputs, Checked { _private: () })
    };
    if K::WIDENS_HALF_FLOATS && half_float::involved(inputs, outputs) {
        half_float::in_float32(inputs, outputs, compute)
    } else {
        compute(inputs, outputs)
    }
}

/// Allocates `K`'s outputs and runs it: the convenient form for tests and constant folding.
pub fn eval<K: ReferenceKernel>(inputs: &[&Tensor], attrs: &K::Attrs) -> Result<Vec<Tensor>, KernelError> {
    let mut outputs = output_types::<K>(inputs, attrs)?
        .into_iter()
        .map(|(shape, dtype)| Tensor::zeros(dtype, shape))
        .collect::<Result<Vec<_>, _>>()?;
    run::<K>(inputs, attrs, &mut outputs)?;
    Ok(outputs)
}
