//! Errors of shape functions and reference kernels.

use relay_devices::{DType, TensorError};

/// Why a shape function or kernel rejected its inputs. Kernels never panic on bad input: every
/// shape, dtype, attribute and index problem is one of these.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum KernelError {
    /// Wrong number of inputs.
    #[error("expected {expected} inputs, got {actual}")]
    Arity {
        /// What the operator takes (`"2"`, `"at least 1"`).
        expected: String,
        /// Inputs given.
        actual: usize,
    },
    /// An input dtype the operator does not support, or mismatched input dtypes.
    #[error("dtype error: {0}")]
    DType(String),
    /// Input shapes the operator cannot combine.
    #[error("shape error: {0}")]
    Shape(String),
    /// An attribute value that is missing, malformed or inconsistent with the inputs.
    #[error("attribute error: {0}")]
    Attr(String),
    /// An index tensor element outside the indexed dimension.
    #[error("index {index} is out of range for a dimension of size {size}")]
    IndexOutOfRange {
        /// The offending index.
        index: i64,
        /// The dimension's size.
        size: usize,
    },
    /// A preallocated output whose shape or dtype is not the one the shape function gives.
    #[error("output {index} must be {expected_dtype}{expected_shape:?}, got {actual_dtype}{actual_shape:?}")]
    Output {
        /// Which output.
        index: usize,
        /// Shape from the shape function.
        expected_shape: Vec<usize>,
        /// Dtype from the dtype rule.
        expected_dtype: DType,
        /// The given output's shape.
        actual_shape: Vec<usize>,
        /// The given output's dtype.
        actual_dtype: DType,
    },
    /// Wrong number of preallocated outputs.
    #[error("expected {expected} outputs, got {actual}")]
    OutputCount {
        /// Outputs the operator produces.
        expected: usize,
        /// Outputs given.
        actual: usize,
    },
    /// Type-erased attributes of another operator's type.
    #[error("attributes for `{op}` must be {expected}")]
    AttrsType {
        /// The operator.
        op: &'static str,
        /// The attribute struct it takes.
        expected: &'static str,
    },
    /// A tensor access failed (a kernel bug if the inputs passed the shape function).
    #[error(transparent)]
    Tensor(#[from] TensorError),
}

impl KernelError {
    /// A [`KernelError::DType`] for `op` not supporting `dtype`.
    pub fn unsupported(dtype: DType) -> KernelError {
        KernelError::DType(format!("{dtype} is not supported here"))
    }
}
