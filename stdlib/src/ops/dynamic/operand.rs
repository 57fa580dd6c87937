//! Reading the `dyn.*` operators' operands: their values at run time, their shapes in the
//! relation (where TVM needs a 1-d operand's length, because it is the result's rank).

use crate::error::KernelError;
use crate::operator::{shape_text, ShapeDim};
use crate::ops::index::index_values;
use relay_devices::{Scalar, Tensor};

/// The values of integer operand `t` (`what` names it in errors): a 1-d tensor, or a 0-d one
/// as a list of one.
///
/// # Errors
/// A tensor of higher rank, or not of integers.
pub(super) fn int_list(t: &Tensor, what: &str) -> Result<Vec<i64>, KernelError> {
    if t.ndim() > 1 {
        return Err(KernelError::Shape(format!("{what} must be 1-d, found shape {}", shape_text(t.shape()))));
    }
    index_values(t)
}

/// The one value of integer operand `t` (0-d, or 1-d of one element).
///
/// # Errors
/// Another element count, or not integers.
pub(super) fn int_scalar(t: &Tensor, what: &str) -> Result<i64, KernelError> {
    match int_list(t, what)?.as_slice() {
        [v] => Ok(*v),
        other => Err(KernelError::Shape(format!("{what} must hold one value, found {}", other.len()))),
    }
}

/// The values of numeric operand `t` as `f64` (0-d or 1-d).
///
/// # Errors
/// A tensor of higher rank.
pub(super) fn float_list(t: &Tensor, what: &str) -> Result<Vec<f64>, KernelError> {
    if t.ndim() > 1 {
        return Err(KernelError::Shape(format!("{what} must be 1-d, found shape {}", shape_text(t.shape()))));
    }
    Ok((0..t.len())
        .filter_map(|i| t.get(i))
        .map(|s| match s {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::Int(v) => v as f64,
            Scalar::UInt(v) => v as f64,
            Scalar::Float(v) => v,
        })
        .collect())
}

/// The one value of numeric operand `t` as `f64`.
///
/// # Errors
/// Another element count.
pub(super) fn float_scalar(t: &Tensor, what: &str) -> Result<f64, KernelError> {
    match float_list(t, what)?.as_slice() {
        [v] => Ok(*v),
        other => Err(KernelError::Shape(format!("{what} must hold one value, found {}", other.len()))),
    }
}

/// The length of 1-d operand shape `shape`, which must be known: it is the rank of the result
/// (TVM: "must have static rank").
///
/// # Errors
/// Another rank, or a `?` length.
pub(super) fn static_length<D: ShapeDim>(shape: &[D], what: &str) -> Result<usize, KernelError> {
    match shape {
        [n] => n.value().ok_or_else(|| {
            KernelError::Shape(format!(
                "{what} must have a static length (it is the result's rank), found shape (?)"
            ))
        }),
        _ => Err(KernelError::Shape(format!("{what} must be 1-d, found shape {}", shape_text(shape)))),
    }
}

/// Errors unless operand shape `shape` holds one value (0-d, or 1-d of length 1 or `?`).
///
/// # Errors
/// [`KernelError::Shape`] naming `what`.
pub(super) fn one_value<D: ShapeDim>(shape: &[D], what: &str) -> Result<(), KernelError> {
    match shape {
        [] => Ok(()),
        [n] if matches!(n.value(), None | Some(1)) => Ok(()),
        _ => Err(KernelError::Shape(format!("{what} must be a scalar, found shape {}", shape_text(shape)))),
    }
}

/// `rank` dimensions, each `?` (known only from the operands' values).
///
/// # Errors
/// None for [`Dim`](relay_compiler::ir::Dim)s (the relation's); as [`ShapeDim::maybe`] for
/// sizes.
pub(super) fn unknown<D: ShapeDim>(rank: usize) -> Result<Vec<D>, KernelError> {
    (0..rank).map(|_| D::maybe(None)).collect()
}
