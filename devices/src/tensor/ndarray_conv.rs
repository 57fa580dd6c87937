//! [`Tensor`] ↔ `ndarray` arrays (the `ndarray` feature): a host that computes with `ndarray`
//! passes its arrays in and reads results out without going through `Vec`s and shapes.

use super::{Tensor, TensorError};
use crate::storage::Element;
use ndarray::{ArrayD, ArrayViewD, IxDyn};

/// An owned array of any rank as a tensor of its shape and element type; the buffer moves
/// without a copy when the array is in standard (row-major, unsliced) layout, and is gathered
/// in row-major order otherwise.
impl<T: Element> From<ArrayD<T>> for Tensor {
    fn from(a: ArrayD<T>) -> Tensor {
        let shape = a.shape().to_vec();
        let len = a.len();
        let data = if a.is_standard_layout() {
            // A sliced array's buffer may start before its first element and end after its last.
            match a.into_raw_vec_and_offset() {
                (mut v, None | Some(0)) => {
                    v.truncate(len);
                    v
                }
                (v, Some(offset)) => v[offset..offset + len].to_vec(),
            }
        } else {
            a.iter().copied().collect()
        };
        Tensor { shape, storage: T::into_storage(data) }
    }
}

/// A tensor as an owned array of its shape; its elements move without a copy.
///
/// # Errors
/// [`TensorError::DTypeMismatch`] when the tensor's dtype is not `T`'s.
impl<T: Element> TryFrom<Tensor> for ArrayD<T> {
    type Error = TensorError;

    fn try_from(t: Tensor) -> Result<ArrayD<T>, TensorError> {
        let shape = t.shape().to_vec();
        let data = t.into_vec::<T>()?;
        let actual = data.len();
        ArrayD::from_shape_vec(IxDyn(&shape), data).map_err(|_| TensorError::ElementCount {
            expected: actual,
            shape,
            actual,
        })
    }
}

/// A tensor as a read-only array view of its shape, borrowing its elements.
///
/// # Errors
/// [`TensorError::DTypeMismatch`] when the tensor's dtype is not `T`'s.
impl<'a, T: Element> TryFrom<&'a Tensor> for ArrayViewD<'a, T> {
    type Error = TensorError;

    fn try_from(t: &'a Tensor) -> Result<ArrayViewD<'a, T>, TensorError> {
        let data = t.as_slice::<T>()?;
        ArrayViewD::from_shape(IxDyn(t.shape()), data).map_err(|_| TensorError::ElementCount {
            shape: t.shape().to_vec(),
            expected: data.len(),
            actual: data.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use ndarray::{s, Array};

    /// `a` into a tensor and back, by value and by view, for element type `T`.
    fn round_trip<T: Element>(a: ArrayD<T>) {
        let t = Tensor::from(a.clone());
        assert_eq!((t.dtype(), t.shape()), (T::DTYPE, a.shape()));
        assert_eq!(ArrayViewD::<T>::try_from(&t).unwrap(), a.view());
        assert_eq!(ArrayD::<T>::try_from(t).unwrap(), a);
    }

    /// Six distinct-ish elements of `T` (the `as`-cast of 0..6).
    fn counting<T: Element>(shape: &[usize]) -> ArrayD<T> {
        let n = shape.iter().product::<usize>();
        let data = (0..n).map(|i| T::from_scalar(crate::Scalar::Int(i as i64 % 3))).collect();
        ArrayD::from_shape_vec(IxDyn(shape), data).unwrap()
    }

    #[test]
    fn every_dtype_round_trips_at_every_rank() {
        for shape in [&[][..], &[4], &[2, 3], &[2, 1, 3]] {
            round_trip(counting::<bool>(shape));
            round_trip(counting::<i8>(shape));
            round_trip(counting::<i16>(shape));
            round_trip(counting::<i32>(shape));
            round_trip(counting::<i64>(shape));
            round_trip(counting::<u8>(shape));
            round_trip(counting::<u16>(shape));
            round_trip(counting::<u32>(shape));
            round_trip(counting::<u64>(shape));
            round_trip(counting::<f32>(shape));
            round_trip(counting::<f64>(shape));
        }
    }

    #[test]
    fn sliced_and_transposed_arrays_are_read_in_row_major_order() {
        let a = Array::from_shape_vec((3, 4), (0..12).collect::<Vec<i32>>()).unwrap().into_dyn();
        for rows in [s![1.., ..], s![..2, ..], s![1..2, ..]] {
            let t = Tensor::from(a.clone().slice_move(rows).into_dyn());
            let want = a.slice(rows).to_owned();
            assert_eq!((t.shape(), t.as_slice::<i32>().unwrap()), (want.shape(), want.as_slice().unwrap()));
        }
        let unsliced = a.clone();
        let buffer = unsliced.as_ptr();
        assert_eq!(Tensor::from(unsliced).as_ptr().cast::<i32>(), buffer, "moved, not copied");
        let t = Tensor::from(a.clone().reversed_axes());
        assert_eq!(t.shape(), &[4, 3]);
        assert_eq!(t.as_slice::<i32>().unwrap()[..4], [0, 4, 8, 1]);
    }

    #[test]
    fn a_wrong_element_type_is_an_error() {
        let t = Tensor::from(counting::<f32>(&[2]));
        let want = TensorError::DTypeMismatch { expected: DType::I32, actual: DType::F32 };
        assert_eq!(ArrayViewD::<i32>::try_from(&t).unwrap_err(), want);
        assert_eq!(ArrayD::<i32>::try_from(t).unwrap_err(), want);
    }
}
