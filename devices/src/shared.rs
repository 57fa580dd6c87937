//! Immutable bytes shared by reference count (a memory-mapped weights file, an imported model's
//! weights), and the element buffer of a tensor that borrows them: such a tensor is bound
//! without copying its elements and copied on its first write ([`crate::Storage::Shared`]).
//!
//! The bytes are only ever reinterpreted as elements through `bytemuck`'s checked casts, and only
//! as element types for which every bit pattern is a value (not `bool`), so this stays free of
//! `unsafe`.

use crate::storage::Element;
use crate::DType;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// Immutable bytes shared by reference count: all or part of an owner such as a memory map or
/// a `Vec<u8>`. Cloning and [`SharedBytes::slice`] share the owner; it is freed with the last
/// clone (the last tensor bound to it).
#[derive(Clone)]
pub struct SharedBytes {
    owner: Arc<dyn AsRef<[u8]> + Send + Sync>,
    range: Range<usize>,
}

impl SharedBytes {
    /// All of `owner`'s bytes, shared.
    pub fn new(owner: impl AsRef<[u8]> + Send + Sync + 'static) -> SharedBytes {
        let len = owner.as_ref().len();
        SharedBytes { owner: Arc::new(owner), range: 0..len }
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        // The range was checked against the owner when it was made; an owner whose bytes
        // shrank since (a broken `AsRef`) reads as empty rather than panicking.
        (*self.owner).as_ref().get(self.range.clone()).unwrap_or_default()
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// Bytes `range` of these (relative to their start), sharing the owner; `None` when the
    /// range reaches past the end.
    pub fn slice(&self, range: Range<usize>) -> Option<SharedBytes> {
        let start = self.range.start.checked_add(range.start)?;
        let end = self.range.start.checked_add(range.end)?;
        (start <= end && end <= self.range.end)
            .then(|| SharedBytes { owner: self.owner.clone(), range: start..end })
    }
}

impl From<Vec<u8>> for SharedBytes {
    fn from(bytes: Vec<u8>) -> SharedBytes {
        SharedBytes::new(bytes)
    }
}

impl fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedBytes({} bytes)", self.len())
    }
}

/// The element types a [`SharedBuffer`] can hold: those whose every bit pattern is a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pod {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
}

// Evaluates `$body` with the type alias `$t` naming the element type of `$pod`, so that code
// over every shared element type is written once.
macro_rules! each_pod {
    ($pod:expr, $t:ident => $body:expr) => {
        each_pod!(@arms $pod, $t => $body;
            I8 i8, I16 i16, I32 i32, I64 i64, U8 u8, U16 u16, U32 u32, U64 u64, F16 half::f16,
            BF16 half::bf16, F32 f32, F64 f64)
    };
    (@arms $pod:expr, $t:ident => $body:expr; $($variant:ident $ty:ty),*) => {
        match $pod {
            $(Pod::$variant => {
                type $t = $ty;
                $body
            })*
        }
    };
}

impl Pod {
    const ALL: [Pod; 12] = [
        Pod::I8,
        Pod::I16,
        Pod::I32,
        Pod::I64,
        Pod::U8,
        Pod::U16,
        Pod::U32,
        Pod::U64,
        Pod::F16,
        Pod::BF16,
        Pod::F32,
        Pod::F64,
    ];

    pub(crate) fn dtype(self) -> DType {
        each_pod!(self, T => T::DTYPE)
    }

    pub(crate) fn of(dtype: DType) -> Option<Pod> {
        Pod::ALL.into_iter().find(|p| p.dtype() == dtype)
    }
}

/// A tensor's elements borrowed from [`SharedBytes`], in the host's byte order, without a copy.
/// Made only by [`SharedBuffer::new`], which checks the dtype, the alignment and the length,
/// so typed access never fails.
#[derive(Clone)]
pub struct SharedBuffer {
    bytes: SharedBytes,
    pod: Pod,
}

impl SharedBuffer {
    /// `bytes` as elements of `dtype`, without copying; `None` when the dtype has no storage
    /// or is `bool` (a byte other than 0 or 1 is no `bool`), or the bytes are not aligned for
    /// the element type or not a whole number of elements (the caller copies instead). The
    /// bytes must be in the host's byte order.
    pub fn new(dtype: DType, bytes: SharedBytes) -> Option<SharedBuffer> {
        let pod = Pod::of(dtype)?;
        let fits = each_pod!(pod, T => bytemuck::try_cast_slice::<u8, T>(bytes.as_bytes()).is_ok());
        fits.then_some(SharedBuffer { bytes, pod })
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.pod.dtype()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.dtype().size_bytes()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The bytes the elements are read from.
    pub fn bytes(&self) -> &SharedBytes {
        &self.bytes
    }

    pub(crate) fn pod(&self) -> Pod {
        self.pod
    }

    /// The elements, if they are `T`s.
    pub(crate) fn elements<T: Element>(&self) -> Option<&[T]> {
        (T::DTYPE == self.dtype()).then(|| T::cast_bytes(self.bytes.as_bytes())).flatten()
    }
}

impl fmt::Debug for SharedBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedBuffer({} x {})", self.len(), self.dtype())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_share_and_stay_in_range() {
        let bytes = SharedBytes::new((0u8..16).collect::<Vec<u8>>());
        let mid = bytes.slice(4..12).unwrap();
        assert_eq!(mid.as_bytes(), &[4, 5, 6, 7, 8, 9, 10, 11]);
        assert_eq!(mid.slice(2..4).unwrap().as_bytes(), &[6, 7]);
        assert!(mid.slice(4..9).is_none());
        assert!(bytes.slice(usize::MAX..usize::MAX).is_none());
    }

    /// Bytes that are 4-aligned because they are `u32`s.
    struct Words(Vec<u32>);
    impl AsRef<[u8]> for Words {
        fn as_ref(&self) -> &[u8] {
            bytemuck::cast_slice(&self.0)
        }
    }

    #[test]
    fn buffers_check_dtype_alignment_and_length() {
        let aligned = SharedBytes::new(Words(vec![0; 8]));
        let f = SharedBuffer::new(DType::F32, aligned.slice(0..16).unwrap()).unwrap();
        assert_eq!((f.len(), f.dtype()), (4, DType::F32));
        assert_eq!(f.elements::<f32>(), Some(&[0.0f32; 4][..]));
        assert_eq!(f.elements::<i32>(), None);
        assert!(SharedBuffer::new(DType::F32, aligned.slice(2..10).unwrap()).is_none());
        assert!(SharedBuffer::new(DType::F32, aligned.slice(0..6).unwrap()).is_none());
        assert!(SharedBuffer::new(DType::BOOL, aligned.clone()).is_none());
        let halves = SharedBuffer::new(DType::F16, aligned.slice(0..6).unwrap()).unwrap();
        assert_eq!((halves.len(), halves.elements::<half::f16>().map(<[_]>::len)), (3, Some(3)));
        assert!(SharedBuffer::new(DType::F16, aligned.slice(1..5).unwrap()).is_none());
        assert_eq!(SharedBuffer::new(DType::U8, aligned.slice(1..4).unwrap()).map(|b| b.len()), Some(3));
    }
}
