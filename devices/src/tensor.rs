//! Owned n-d arrays: a shape, a dtype and a contiguous row-major buffer.

use crate::storage::{Element, Scalar, Storage};
use crate::view::{Layout, TensorView, TensorViewMut};
use crate::DType;

#[cfg(feature = "ndarray")]
mod ndarray_conv;

/// Errors from building or accessing a [`Tensor`] or a view of one.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TensorError {
    /// The buffer length does not match the shape.
    #[error("shape {shape:?} has {expected} elements but the buffer has {actual}")]
    ElementCount {
        /// The requested shape.
        shape: Vec<usize>,
        /// Elements the shape needs.
        expected: usize,
        /// Elements supplied.
        actual: usize,
    },
    /// Typed access with the wrong element type.
    #[error("tensor holds {actual}, not {expected}")]
    DTypeMismatch {
        /// The dtype asked for.
        expected: DType,
        /// The tensor's dtype.
        actual: DType,
    },
    /// A dtype without storage (`float16`, vector types).
    #[error("tensors of dtype {0} are not supported")]
    UnsupportedDType(DType),
    /// The element count (or byte size) of a shape overflows.
    #[error("shape {0:?} is too large")]
    TooLarge(Vec<usize>),
    /// The system allocator refused a tensor's buffer.
    #[error("cannot allocate a tensor of {bytes} bytes: out of memory")]
    AllocationFailed {
        /// The buffer's size.
        bytes: usize,
    },
    /// An index list of the wrong length.
    #[error("expected {expected} dimensions, got {actual}")]
    RankMismatch {
        /// Dimensions expected.
        expected: usize,
        /// Dimensions given.
        actual: usize,
    },
    /// An axis number past the rank.
    #[error("axis {axis} is out of range for rank {rank}")]
    AxisOutOfRange {
        /// The axis.
        axis: usize,
        /// The rank.
        rank: usize,
    },
    /// Axes that are not a permutation of `0..rank`.
    #[error("axes {0:?} are not a permutation")]
    NotAPermutation(Vec<usize>),
    /// Shapes that NumPy broadcasting cannot match.
    #[error("cannot broadcast shape {from:?} to {to:?}")]
    NotBroadcastable {
        /// The view's shape.
        from: Vec<usize>,
        /// The target shape.
        to: Vec<usize>,
    },
    /// A view or slice that would reach outside its buffer or dimension.
    #[error("out of bounds: {0}")]
    OutOfBounds(String),
}

/// Number of elements of `shape`, or `None` if the product overflows `usize`.
pub fn shape_size(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// An owned n-d array: shape `Vec<usize>` (outermost first, `[]` for a scalar), a [`DType`] and
/// a contiguous row-major buffer ([`Storage`]) of exactly `shape_size(shape)` elements.
///
/// The layout is deliberately plain so that JIT and OpenCL kernels can address the data
/// through [`Tensor::as_ptr`] with row-major strides; strided access in Rust goes through
/// [`TensorView`]. Every typed accessor checks the dtype and returns
/// [`TensorError::DTypeMismatch`] rather than reinterpreting.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    shape: Vec<usize>,
    storage: Storage,
}

impl Tensor {
    /// A tensor of `shape` over `data` (row-major). Errors if `data.len()` is not the shape's
    /// element count.
    pub fn from_vec<T: Element>(shape: Vec<usize>, data: Vec<T>) -> Result<Tensor, TensorError> {
        Tensor::from_storage(shape, T::into_storage(data))
    }

    /// A tensor of `shape` over an existing buffer. Errors if the lengths disagree.
    pub fn from_storage(shape: Vec<usize>, storage: Storage) -> Result<Tensor, TensorError> {
        let expected = shape_size(&shape).ok_or_else(|| TensorError::TooLarge(shape.clone()))?;
        if storage.len() != expected {
            return Err(TensorError::ElementCount { shape, expected, actual: storage.len() });
        }
        Ok(Tensor { shape, storage })
    }

    /// A tensor of zeros (`false` for `bool`).
    ///
    /// # Errors
    /// [`TensorError::UnsupportedDType`] for a dtype without storage,
    /// [`TensorError::TooLarge`] for a shape whose byte size overflows `isize`, and
    /// [`TensorError::AllocationFailed`] when the allocator refuses the buffer.
    pub fn zeros(dtype: DType, shape: Vec<usize>) -> Result<Tensor, TensorError> {
        if !Storage::supports(dtype) {
            return Err(TensorError::UnsupportedDType(dtype));
        }
        let len = shape_size(&shape)
            .filter(|n| n.checked_mul(dtype.size_bytes()).is_some_and(|b| b <= isize::MAX as usize))
            .ok_or_else(|| TensorError::TooLarge(shape.clone()))?;
        let storage = Storage::zeros(dtype, len)?;
        Ok(Tensor { shape, storage })
    }

    /// A 0-d tensor holding `value` (a Relay scalar such as `1f`).
    pub fn scalar<T: Element>(value: T) -> Tensor {
        Tensor { shape: Vec::new(), storage: T::into_storage(vec![value]) }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.storage.dtype()
    }

    /// The shape, outermost dimension first.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.storage.len()
    }

    /// Whether the tensor has no elements (some dimension is 0).
    pub fn is_empty(&self) -> bool {
        self.storage.is_empty()
    }

    /// Bytes the elements occupy.
    pub fn size_bytes(&self) -> usize {
        self.len() * self.dtype().size_bytes()
    }

    /// The buffer.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Takes the buffer out.
    pub fn into_storage(self) -> Storage {
        self.storage
    }

    /// The elements in row-major order, if the dtype is `T`'s.
    pub fn as_slice<T: Element>(&self) -> Result<&[T], TensorError> {
        let actual = self.dtype();
        T::slice(&self.storage).ok_or(TensorError::DTypeMismatch { expected: T::DTYPE, actual })
    }

    /// The elements in row-major order, mutably, if the dtype is `T`'s.
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T], TensorError> {
        let actual = self.dtype();
        T::slice_mut(&mut self.storage).ok_or(TensorError::DTypeMismatch { expected: T::DTYPE, actual })
    }

    /// The elements as a vector, if the dtype is `T`'s.
    pub fn into_vec<T: Element>(self) -> Result<Vec<T>, TensorError> {
        T::from_storage(self.storage)
            .map_err(|s| TensorError::DTypeMismatch { expected: T::DTYPE, actual: s.dtype() })
    }

    /// Element `i` (row-major) widened to a [`Scalar`], whatever the dtype.
    pub fn get(&self, i: usize) -> Option<Scalar> {
        self.storage.get(i)
    }

    /// Sets every element to zero (`false`), keeping the buffer and the shape.
    pub fn fill_zero(&mut self) {
        self.storage.fill_zero();
    }

    /// Sets element `i` (row-major) to `value`, converted to the tensor's dtype with
    /// `as`-cast semantics; `false` if `i` is out of range.
    pub fn set(&mut self, i: usize, value: Scalar) -> bool {
        self.storage.set(i, value)
    }

    /// The same elements under another shape with the same element count.
    pub fn reshaped(self, shape: Vec<usize>) -> Result<Tensor, TensorError> {
        Tensor::from_storage(shape, self.storage)
    }

    /// Turns the tensor, in place, into one of `shape` (same element count), reusing both its
    /// buffer and its shape vector, so that a VM can recycle a dead tensor's memory for a new
    /// one without calling the allocator. With `zero` the elements become zeros; without, they
    /// keep the dead tensor's values, for a caller about to overwrite every one of them (a
    /// kernel output proven written whole: zeroing it would be wasted stores).
    ///
    /// # Errors
    /// [`TensorError::ElementCount`] when `shape` has a different element count; the tensor is
    /// then unchanged.
    pub fn reset(&mut self, shape: &[usize], zero: bool) -> Result<(), TensorError> {
        let expected = shape_size(shape).ok_or_else(|| TensorError::TooLarge(shape.to_vec()))?;
        if expected != self.len() {
            return Err(TensorError::ElementCount { shape: shape.to_vec(), expected, actual: self.len() });
        }
        self.shape.clear();
        self.shape.extend_from_slice(shape);
        if zero {
            self.storage.fill_zero();
        }
        Ok(())
    }

    /// A contiguous view of the elements, if the dtype is `T`'s.
    pub fn view<T: Element>(&self) -> Result<TensorView<'_, T>, TensorError> {
        let layout = Layout::contiguous(&self.shape);
        TensorView::new(self.as_slice()?, layout)
    }

    /// A contiguous mutable view of the elements, if the dtype is `T`'s.
    pub fn view_mut<T: Element>(&mut self) -> Result<TensorViewMut<'_, T>, TensorError> {
        let layout = Layout::contiguous(&self.shape);
        TensorViewMut::new(self.as_mut_slice()?, layout)
    }

    /// Address of the first element (row-major, contiguous), for JIT and OpenCL code.
    pub fn as_ptr(&self) -> *const u8 {
        self.storage.as_ptr()
    }

    /// Mutable address of the first element. Writers must store valid values of the dtype
    /// (only 0 or 1 for `bool`).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.storage.as_mut_ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn construction_checks_length_and_dtype() {
        let t = Tensor::from_vec(vec![2, 3], vec![0f32; 6]).unwrap();
        assert_eq!((t.shape(), t.dtype(), t.len(), t.size_bytes()), (&[2, 3][..], DType::F32, 6, 24));
        assert!(matches!(
            Tensor::from_vec(vec![2, 3], vec![0f32; 5]),
            Err(TensorError::ElementCount { expected: 6, actual: 5, .. })
        ));
        assert_eq!(
            t.as_slice::<i32>(),
            Err(TensorError::DTypeMismatch { expected: DType::I32, actual: DType::F32 })
        );
        let vector = DType { lanes: 4, ..DType::F32 };
        assert_eq!(Tensor::zeros(vector, vec![1]), Err(TensorError::UnsupportedDType(vector)));
        assert!(matches!(Tensor::zeros(DType::F32, vec![usize::MAX, 2]), Err(TensorError::TooLarge(_))));
        assert!(matches!(Tensor::zeros(DType::F64, vec![usize::MAX / 4]), Err(TensorError::TooLarge(_))));
    }

    #[test]
    fn scalars_and_empty_tensors() {
        let s = Tensor::scalar(7i64);
        assert_eq!((s.ndim(), s.len(), s.get(0)), (0, 1, Some(Scalar::Int(7))));
        let e = Tensor::zeros(DType::BOOL, vec![3, 0]).unwrap();
        assert!(e.is_empty());
        assert_eq!(e.reshaped(vec![0]).unwrap().shape(), &[0]);
    }

    #[test]
    fn reset_reuses_the_buffer_zeroed_or_as_it_was() {
        let mut t = Tensor::from_vec(vec![2, 3], vec![1i32; 6]).unwrap();
        let p = t.as_ptr();
        t.reset(&[6], false).unwrap();
        assert_eq!((t.shape(), t.as_ptr()), (&[6][..], p));
        assert_eq!(t.as_slice::<i32>().unwrap(), &[1; 6]);
        t.reset(&[3, 2], true).unwrap();
        assert_eq!((t.shape(), t.as_ptr()), (&[3, 2][..], p));
        assert_eq!(t.as_slice::<i32>().unwrap(), &[0; 6]);
        assert!(matches!(t.reset(&[7], true), Err(TensorError::ElementCount { expected: 7, .. })));
        assert_eq!(t.shape(), &[3, 2]);
    }

    #[test]
    fn mutation_through_slices_and_pointers_agree() {
        let mut t = Tensor::zeros(DType::I32, vec![2]).unwrap();
        t.as_mut_slice::<i32>().unwrap()[1] = 5;
        assert_eq!(t.as_ptr(), t.as_slice::<i32>().unwrap().as_ptr().cast::<u8>());
        assert_eq!(t.into_vec::<i32>().unwrap(), vec![0, 5]);
    }
}
