//! Index arithmetic shared by the operators that read or write tensors at positions given as
//! data (`gather`, `scatter_*`, `one_hot`, `sort`): integer index tensors read as `i64`,
//! negative indices counted from the end, and row-major strides.

use crate::error::KernelError;
use crate::kernels::util::{any_type, for_each_index, ints};
use crate::operator::{shape_text, ShapeDim};
use relay_compiler::kir::Index;
use relay_devices::{Element, Scalar, Tensor};

/// The values of an integer tensor as `i64` (`uint64` values above `i64::MAX` saturate, so
/// they are out of range of any axis).
///
/// # Errors
/// [`KernelError::DType`] when `t` is not an integer tensor.
pub(crate) fn index_values(t: &Tensor) -> Result<Vec<i64>, KernelError> {
    ints!(t.dtype(), T => Ok(t
        .as_slice::<T>()?
        .iter()
        .map(|v| match v.to_scalar() {
            Scalar::Int(i) => i,
            Scalar::UInt(u) => i64::try_from(u).unwrap_or(i64::MAX),
            _ => i64::MAX,
        })
        .collect()))
}

/// Index `i` of an axis of size `n`, negative ones counted from the end (`-1` is `n - 1`).
///
/// # Errors
/// [`KernelError::IndexOutOfRange`] outside `-n..n`.
pub(crate) fn wrap_index(i: i64, n: usize) -> Result<usize, KernelError> {
    let size = i64::try_from(n).unwrap_or(i64::MAX);
    match i {
        _ if (0..size).contains(&i) => Ok(i as usize),
        _ if (-size..0).contains(&i) => Ok((i + size) as usize),
        _ => Err(KernelError::IndexOutOfRange { index: i, size: n }),
    }
}

/// Row-major strides of `shape`, in elements.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// A position along one axis as an injective operator's source mapping computes it: `usize`
/// in the reference kernel, kir's [`Index`] in the compute rule. A mapping written over
/// `Coordinate` is the operator's semantics once, for both (`layout_transform`,
/// `vision.yolo_reorg`).
pub(crate) trait Coordinate: Clone {
    /// The constant `v`.
    fn constant(v: usize) -> Self;
    /// `self + other`.
    fn plus(self, other: Self) -> Self;
    /// `self * f`.
    fn times(self, f: usize) -> Self;
    /// `self / f`, rounded down (`f > 0`; coordinates are never negative).
    fn over(self, f: usize) -> Self;
    /// `self % f` (`f > 0`).
    fn modulo(self, f: usize) -> Self;
}

impl Coordinate for usize {
    fn constant(v: usize) -> usize {
        v
    }
    fn plus(self, other: usize) -> usize {
        self + other
    }
    fn times(self, f: usize) -> usize {
        self * f
    }
    fn over(self, f: usize) -> usize {
        self / f
    }
    fn modulo(self, f: usize) -> usize {
        self % f
    }
}

/// Kernel sizes fit `i64`: the compiler builds kernels only for tensors whose element counts
/// do.
impl Coordinate for Index {
    fn constant(v: usize) -> Index {
        Index::Const(v as i64)
    }
    fn plus(self, other: Index) -> Index {
        self + other
    }
    fn times(self, f: usize) -> Index {
        self * f as i64
    }
    fn over(self, f: usize) -> Index {
        self.floor_div(f as i64)
    }
    fn modulo(self, f: usize) -> Index {
        self.floor_mod(f as i64)
    }
}

/// The row-major flat position of `idx` in `shape`.
pub(crate) fn flat_position<C: Coordinate>(shape: &[usize], idx: &[C]) -> C {
    shape.iter().zip(idx).fold(C::constant(0), |acc, (&d, i)| acc.times(d).plus(i.clone()))
}

/// Writes into `out` (one per axis of `shape`) the coordinates of the row-major flat position
/// `flat` (`flat < Π shape`).
pub(crate) fn coordinates<C: Coordinate>(shape: &[usize], flat: &C, out: &mut [C]) {
    for ((o, &stride), &d) in out.iter_mut().zip(&strides(shape)).zip(shape) {
        *o = if d == 1 { C::constant(0) } else { flat.clone().over(stride).modulo(d) };
    }
}

/// Whether two dimensions may be equal: both `?`-free and different is the only "no".
pub(crate) fn may_equal<D: ShapeDim>(a: D, b: D) -> bool {
    match (a.value(), b.value()) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// Errors unless `a` and `b` may be the same shape.
///
/// # Errors
/// [`KernelError::Shape`] naming both shapes as `what` says.
pub(crate) fn same_shape<D: ShapeDim>(a: &[D], b: &[D], what: &str) -> Result<(), KernelError> {
    if a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| may_equal(x, y)) {
        Ok(())
    } else {
        Err(KernelError::Shape(format!(
            "{what} must have the same shape, got {} and {}",
            shape_text(a),
            shape_text(b)
        )))
    }
}

/// Writes `data`'s elements at flat `offsets` to `out`, in order.
///
/// # Errors
/// [`KernelError::IndexOutOfRange`] for an offset past `data`'s end.
pub(crate) fn copy_from_offsets<T: Element>(
    data: &Tensor,
    offsets: &[usize],
    out: &mut Tensor,
) -> Result<(), KernelError> {
    let src = data.as_slice::<T>()?;
    for (d, &o) in out.as_mut_slice::<T>()?.iter_mut().zip(offsets) {
        *d = *src.get(o).ok_or(KernelError::IndexOutOfRange { index: o as i64, size: src.len() })?;
    }
    Ok(())
}

/// Writes `out[p] = data[source(p)]` for every index `p` of `out` (an injective transform's
/// reference kernel): `source` fills in the index into `data` (of `data`'s rank).
///
/// # Errors
/// Dtype mismatches of the buffers, or a source index outside `data`.
pub(crate) fn copy_from_source(
    data: &Tensor,
    out: &mut Tensor,
    source: impl Fn(&[usize], &mut [usize]),
) -> Result<(), KernelError> {
    let ds = strides(data.shape());
    let mut src = vec![0; data.ndim()];
    let mut offsets = Vec::with_capacity(out.len());
    for_each_index(out.shape(), |p| {
        source(p, &mut src);
        offsets.push(src.iter().zip(&ds).map(|(i, s)| i * s).sum());
        Ok(())
    })?;
    any_type!(data.dtype(), T => copy_from_offsets::<T>(data, &offsets, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_indices_count_from_the_end() {
        assert_eq!(wrap_index(-1, 3).unwrap(), 2);
        assert_eq!(wrap_index(2, 3).unwrap(), 2);
        assert!(wrap_index(3, 3).is_err() && wrap_index(-4, 3).is_err() && wrap_index(0, 0).is_err());
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
        let t = Tensor::from_vec(vec![2], vec![u64::MAX, 1]).unwrap();
        assert_eq!(index_values(&t).unwrap(), vec![i64::MAX, 1]);
        assert!(same_shape(&[2usize, 3], &[2, 4], "x and y").is_err());
    }
}
