//! Element types a tensor can hold, and the typed buffer that holds them.
//!
//! A tensor's buffer is a [`Storage`]: one `Vec` per element type, elements borrowed from
//! shared bytes ([`Storage::Shared`], a memory-mapped weights file), or a region of a frame
//! arena ([`Storage::Arena`]). Only the arena's block of bytes needs `unsafe`, confined to
//! [`crate::ArenaBlock`]; here every owned buffer is aligned for its element type because it *is* a `Vec` of
//! that type, a `bool` buffer can only hold `false`/`true`, and typed access is a `match`; the
//! shared bytes are reinterpreted only through `bytemuck`'s checked casts ([`crate::shared`]),
//! and written only after being copied into a `Vec` (copy-on-write). JIT and OpenCL code still get one plain pointer to
//! contiguous row-major data ([`Storage::as_ptr`]). `float16` elements are `half::f16`
//! (IEEE binary16), `bfloat16` ones `half::bf16`; vector dtypes (`float32x4`) have no storage: they are rejected with an
//! error when a tensor of them is created.

use crate::arena::ArenaRegion;
use crate::shared::{Pod, SharedBuffer};
use crate::{DType, TensorError};
use std::fmt::Debug;

/// One element value, widened so that converting between any two element types through it
/// is exact and follows Rust's (and C's, and TVM's) `as` casts: integers wrap, floats
/// truncate toward zero and saturate when converted to integers, `NaN` becomes 0, and
/// anything non-zero becomes `true`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A `bool` element.
    Bool(bool),
    /// A signed integer element.
    Int(i64),
    /// An unsigned integer element.
    UInt(u64),
    /// A floating-point element.
    Float(f64),
}

/// The typed buffer of a tensor: contiguous elements in row-major order.
///
/// Two storages are equal when they hold the same elements of the same dtype, whether owned,
/// shared or in an arena. Cloning an arena region copies its elements into a `Vec` (a region
/// is exclusive over its bytes).
#[derive(Debug)]
pub enum Storage {
    /// `bool` elements, one byte each.
    Bool(Vec<bool>),
    /// `int8` elements.
    I8(Vec<i8>),
    /// `int16` elements.
    I16(Vec<i16>),
    /// `int32` elements.
    I32(Vec<i32>),
    /// `int64` elements.
    I64(Vec<i64>),
    /// `uint8` elements.
    U8(Vec<u8>),
    /// `uint16` elements.
    U16(Vec<u16>),
    /// `uint32` elements.
    U32(Vec<u32>),
    /// `uint64` elements.
    U64(Vec<u64>),
    /// `float16` elements (IEEE binary16).
    F16(Vec<half::f16>),
    /// `bfloat16` elements (the top half of an IEEE binary32).
    BF16(Vec<half::bf16>),
    /// `float32` elements.
    F32(Vec<f32>),
    /// `float64` elements.
    F64(Vec<f64>),
    /// Elements of any dtype but `bool`, borrowed from shared immutable bytes without a copy;
    /// every mutable access first replaces them with an owned copy (copy-on-write).
    Shared(SharedBuffer),
    /// Elements of any dtype but `bool` at a planned offset of a function invocation's arena
    /// block (ARCHITECTURE.md §3, "Memory"); read and written in place.
    Arena(ArenaRegion),
}

/// A Rust type that is the element type of some [`DType`]. Implemented for `bool`, `i8`, `i16`,
/// `i32`, `i64`, `u8`, `u16`, `u32`, `u64`, `half::f16`, `half::bf16`, `f32` and `f64`; sealed.
pub trait Element:
    Copy + Default + PartialEq + PartialOrd + Debug + Send + Sync + 'static + sealed::Sealed
{
    /// The dtype of this element type.
    const DTYPE: DType;
    /// Converts with `as`-cast semantics (see [`Scalar`]).
    fn from_scalar(s: Scalar) -> Self;
    /// Widens to a [`Scalar`] without loss.
    fn to_scalar(self) -> Scalar;
    /// Wraps a vector of this type as storage.
    fn into_storage(v: Vec<Self>) -> Storage;
    /// The elements, if the storage holds this type.
    fn slice(s: &Storage) -> Option<&[Self]>;
    /// The elements, mutably, if the storage holds this type.
    fn slice_mut(s: &mut Storage) -> Option<&mut [Self]>;
    /// The vector, if the storage holds this type; the storage back otherwise.
    fn from_storage(s: Storage) -> Result<Vec<Self>, Storage>;
}

pub(crate) mod sealed {
    /// What only this crate may implement or call.
    pub trait Sealed: Sized {
        /// `bytes` as elements without copying, when they are aligned, a whole number of
        /// elements, and every bit pattern is a value of the type (never for `bool`).
        fn cast_bytes(bytes: &[u8]) -> Option<&[Self]>;
        /// [`Sealed::cast_bytes`], mutably.
        fn cast_bytes_mut(bytes: &mut [u8]) -> Option<&mut [Self]>;
    }
}

// Every bit pattern of `$t` is a value: its elements may be cast from shared bytes.
macro_rules! pod_sealed {
    ($t:ty) => {
        impl sealed::Sealed for $t {
            fn cast_bytes(bytes: &[u8]) -> Option<&[Self]> {
                bytemuck::try_cast_slice(bytes).ok()
            }
            fn cast_bytes_mut(bytes: &mut [u8]) -> Option<&mut [Self]> {
                bytemuck::try_cast_slice_mut(bytes).ok()
            }
        }
    };
}

// `$kind` picks how the type widens to a `Scalar`; `from_scalar` is an `as` cast for every
// numeric type, which is exactly the cast semantics documented on `Scalar`.
macro_rules! numeric_element {
    ($($variant:ident $t:ty, $dtype:ident, $kind:ident as $wide:ty;)*) => {$(
        pod_sealed!($t);
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            fn from_scalar(s: Scalar) -> Self {
                match s {
                    Scalar::Bool(b) => u8::from(b) as $t,
                    Scalar::Int(v) => v as $t,
                    Scalar::UInt(v) => v as $t,
                    Scalar::Float(v) => v as $t,
                }
            }
            fn to_scalar(self) -> Scalar {
                Scalar::$kind(self as $wide)
            }
            element_storage!($variant $t);
        }
    )*};
}

macro_rules! element_storage {
    ($variant:ident $t:ty) => {
        fn into_storage(v: Vec<Self>) -> Storage {
            Storage::$variant(v)
        }
        fn slice(s: &Storage) -> Option<&[Self]> {
            match s {
                Storage::$variant(v) => Some(v),
                Storage::Shared(b) => b.elements(),
                Storage::Arena(r) => r.elements(),
                _ => None,
            }
        }
        fn slice_mut(s: &mut Storage) -> Option<&mut [Self]> {
            if s.dtype() == Self::DTYPE {
                s.unshare();
            }
            match s {
                Storage::$variant(v) => Some(v),
                Storage::Arena(r) => r.elements_mut(),
                _ => None,
            }
        }
        fn from_storage(s: Storage) -> Result<Vec<Self>, Storage> {
            match s {
                Storage::$variant(v) => Ok(v),
                Storage::Shared(b) if b.dtype() == Self::DTYPE => {
                    Ok(b.elements().unwrap_or_default().to_vec())
                }
                Storage::Arena(r) if r.dtype() == Self::DTYPE => {
                    Ok(r.elements().unwrap_or_default().to_vec())
                }
                other => Err(other),
            }
        }
    };
}

numeric_element! {
    I8 i8, I8, Int as i64;
    I16 i16, I16, Int as i64;
    I32 i32, I32, Int as i64;
    I64 i64, I64, Int as i64;
    U8 u8, U8, UInt as u64;
    U16 u16, U16, UInt as u64;
    U32 u32, U32, UInt as u64;
    U64 u64, U64, UInt as u64;
    F32 f32, F32, Float as f64;
    F64 f64, F64, Float as f64;
}

// The half floats have no `as` cast: values go through `f64` and round to nearest even once
// (an integer beyond 2^53 rounds twice, which no 16-bit float can tell apart), and
// out-of-range values become infinities, as an `f64 as f32` cast does.
macro_rules! half_float_element {
    ($($variant:ident $t:ty, $from_f64:path;)*) => {$(
        pod_sealed!($t);
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            fn from_scalar(s: Scalar) -> Self {
                $from_f64(f64::from_scalar(s))
            }
            fn to_scalar(self) -> Scalar {
                Scalar::Float(self.to_f64())
            }
            element_storage!($variant $t);
        }
    )*};
}

half_float_element! {
    F16 half::f16, half::f16::from_f64;
    BF16 half::bf16, bf16_from_f64;
}

/// `x` rounded once to the nearest `bfloat16`, ties to even. `half::bf16::from_f64` rounds
/// some values wrongly (`1 + 2^-8 + 2^-23` to 1.0: it decides the tie without the low bits),
/// and `x as f32` first would round twice (`1 + 2^-8 + 2^-40` to 1.0 through the tie
/// `1 + 2^-8`). Rounding to `float32` *to odd* (toward zero, then the last bit set when
/// inexact) keeps what the second rounding needs: `float32` has 16 more significand bits than
/// `bfloat16` and the same exponent range, so ties and the sticky bit survive.
fn bf16_from_f64(x: f64) -> half::bf16 {
    let nearest = x as f32;
    if nearest.is_nan() || f64::from(nearest) == x {
        return half::bf16::from_f32(nearest);
    }
    // `nearest` rounded away from zero: step back one unit in the last place toward it
    // (an infinity steps back to the largest finite float).
    let toward_zero = match f64::from(nearest).abs() > x.abs() {
        true => f32::from_bits(nearest.to_bits() - 1),
        false => nearest,
    };
    half::bf16::from_f32(f32::from_bits(toward_zero.to_bits() | 1))
}

impl sealed::Sealed for bool {
    fn cast_bytes(_: &[u8]) -> Option<&[Self]> {
        None
    }
    fn cast_bytes_mut(_: &mut [u8]) -> Option<&mut [Self]> {
        None
    }
}
impl Element for bool {
    const DTYPE: DType = DType::BOOL;
    fn from_scalar(s: Scalar) -> Self {
        match s {
            Scalar::Bool(b) => b,
            Scalar::Int(v) => v != 0,
            Scalar::UInt(v) => v != 0,
            Scalar::Float(v) => v != 0.0,
        }
    }
    fn to_scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
    element_storage!(Bool bool);
}

// Evaluates `$body` with `$v` bound to the elements (a `Vec` or a slice) of whichever element
// type the storage holds, so that code reading any of them is written once.
macro_rules! each_slice {
    ($s:expr, $v:ident => $body:expr) => {
        match $s {
            Storage::Bool($v) => $body,
            Storage::I8($v) => $body,
            Storage::I16($v) => $body,
            Storage::I32($v) => $body,
            Storage::I64($v) => $body,
            Storage::U8($v) => $body,
            Storage::U16($v) => $body,
            Storage::U32($v) => $body,
            Storage::U64($v) => $body,
            Storage::F16($v) => $body,
            Storage::BF16($v) => $body,
            Storage::F32($v) => $body,
            Storage::F64($v) => $body,
            Storage::Shared(b) => each_pod!(b.pod(), T => {
                let $v: &[T] = b.elements().unwrap_or_default();
                $body
            }),
            Storage::Arena(r) => each_pod!(r.pod(), T => {
                let $v: &[T] = r.elements().unwrap_or_default();
                $body
            }),
        }
    };
}

// Evaluates `$body` with `$v` bound to the owned `Vec` of the storage, which a shared storage
// first becomes (copy-on-write), or to an arena region's elements (used as a mutable slice),
// so that code writing any element type is written once.
macro_rules! each_vec_mut {
    ($s:expr, $v:ident => $body:expr) => {
        loop {
            match $s {
                Storage::Shared(_) => $s.unshare(),
                Storage::Arena(r) => break each_pod!(r.pod(), T => {
                    let $v: &mut [T] = r.elements_mut().unwrap_or_default();
                    $body
                }),
                Storage::Bool($v) => break $body,
                Storage::I8($v) => break $body,
                Storage::I16($v) => break $body,
                Storage::I32($v) => break $body,
                Storage::I64($v) => break $body,
                Storage::U8($v) => break $body,
                Storage::U16($v) => break $body,
                Storage::U32($v) => break $body,
                Storage::U64($v) => break $body,
                Storage::F16($v) => break $body,
                Storage::BF16($v) => break $body,
                Storage::F32($v) => break $body,
                Storage::F64($v) => break $body,
            }
        }
    };
}

impl Storage {
    /// `len` zero elements of `dtype` (`false` for `bool`).
    ///
    /// # Errors
    /// [`TensorError::UnsupportedDType`] for a dtype without storage (vector dtypes); [`TensorError::AllocationFailed`] when the allocator cannot provide the
    /// buffer (the size comes from programs and inputs, so this is an error, not an abort).
    pub fn zeros(dtype: DType, len: usize) -> Result<Storage, TensorError> {
        match dtype {
            DType::BOOL => zeroed::<bool>(len),
            DType::I8 => zeroed::<i8>(len),
            DType::I16 => zeroed::<i16>(len),
            DType::I32 => zeroed::<i32>(len),
            DType::I64 => zeroed::<i64>(len),
            DType::U8 => zeroed::<u8>(len),
            DType::U16 => zeroed::<u16>(len),
            DType::U32 => zeroed::<u32>(len),
            DType::U64 => zeroed::<u64>(len),
            DType::F16 => zeroed::<half::f16>(len),
            DType::BF16 => zeroed::<half::bf16>(len),
            DType::F32 => zeroed::<f32>(len),
            DType::F64 => zeroed::<f64>(len),
            _ => Err(TensorError::UnsupportedDType(dtype)),
        }
    }

    /// Whether `dtype` has a storage variant.
    pub fn supports(dtype: DType) -> bool {
        matches!(
            dtype,
            DType::BOOL
                | DType::I8
                | DType::I16
                | DType::I32
                | DType::I64
                | DType::U8
                | DType::U16
                | DType::U32
                | DType::U64
                | DType::F16
                | DType::BF16
                | DType::F32
                | DType::F64
        )
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Storage::Bool(_) => DType::BOOL,
            Storage::I8(_) => DType::I8,
            Storage::I16(_) => DType::I16,
            Storage::I32(_) => DType::I32,
            Storage::I64(_) => DType::I64,
            Storage::U8(_) => DType::U8,
            Storage::U16(_) => DType::U16,
            Storage::U32(_) => DType::U32,
            Storage::U64(_) => DType::U64,
            Storage::F16(_) => DType::F16,
            Storage::BF16(_) => DType::BF16,
            Storage::F32(_) => DType::F32,
            Storage::F64(_) => DType::F64,
            Storage::Shared(b) => b.dtype(),
            Storage::Arena(r) => r.dtype(),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        each_slice!(self, v => v.len())
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` widened to a [`Scalar`], or `None` past the end.
    pub fn get(&self, i: usize) -> Option<Scalar> {
        each_slice!(self, v => v.get(i).map(|x| x.to_scalar()))
    }

    /// Sets element `i` to `value` converted with `as`-cast semantics (see [`Scalar`]);
    /// `false` if `i` is out of range.
    pub fn set(&mut self, i: usize, value: Scalar) -> bool {
        each_vec_mut!(self, v => match v.get_mut(i) {
            Some(x) => {
                *x = Element::from_scalar(value);
                true
            }
            None => false,
        })
    }

    /// Sets every element to zero (`false`), keeping the buffer: a recycled buffer starts as
    /// a fresh one would.
    pub fn fill_zero(&mut self) {
        each_vec_mut!(self, v => v.fill(Default::default()))
    }

    /// Address of the first element, for JIT and OpenCL code that reads the buffer as
    /// contiguous row-major bytes (`bool` is one byte, 0 or 1).
    pub fn as_ptr(&self) -> *const u8 {
        each_slice!(self, v => v.as_ptr().cast::<u8>())
    }

    /// Mutable address of the first element, of an owned copy if the elements were shared.
    /// Writers must store valid values of the element type (only 0 or 1 in a `bool` buffer).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        each_vec_mut!(self, v => v.as_mut_ptr().cast::<u8>())
    }

    /// Whether the elements are borrowed from shared bytes ([`Storage::Shared`]).
    pub fn is_shared(&self) -> bool {
        matches!(self, Storage::Shared(_))
    }

    /// Whether the elements live in a frame arena ([`Storage::Arena`]).
    pub fn is_arena(&self) -> bool {
        matches!(self, Storage::Arena(_))
    }

    /// Replaces shared elements with an owned copy of them (the copy of copy-on-write).
    fn unshare(&mut self) {
        if let Storage::Shared(b) = self {
            *self = each_pod!(b.pod(), T => T::into_storage(b.elements::<T>().unwrap_or_default().to_vec()));
        }
    }
}

impl Clone for Storage {
    fn clone(&self) -> Storage {
        match self {
            Storage::Shared(b) => Storage::Shared(b.clone()),
            // Owned elements are copied, and so are an arena region's (it is exclusive).
            other => each_slice!(other, v => Element::into_storage(v.to_vec())),
        }
    }
}

impl PartialEq for Storage {
    fn eq(&self, other: &Storage) -> bool {
        // `v` coerces to a slice whichever variant it comes from.
        fn holds<T: Element>(other: &Storage, v: &[T]) -> bool {
            T::slice(other) == Some(v)
        }
        self.dtype() == other.dtype() && each_slice!(self, v => holds(other, v))
    }
}

/// `len` zero elements of `T` as storage, allocated with `try_reserve_exact` so that an
/// allocation the system refuses is [`TensorError::AllocationFailed`].
fn zeroed<T: Element>(len: usize) -> Result<Storage, TensorError> {
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| TensorError::AllocationFailed { bytes: len.saturating_mul(std::mem::size_of::<T>()) })?;
    v.resize(len, T::default());
    Ok(T::into_storage(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfloat16_from_f64_rounds_once_to_nearest_even() {
        let bf = |x: f64| bf16_from_f64(x).to_f64();
        // Above the tie in bits that float32 keeps, and in bits only float64 has.
        assert_eq!(bf(1.0 + 2f64.powi(-8) + 2f64.powi(-23)), 1.0078125);
        assert_eq!(bf(1.0 + 2f64.powi(-8) + 2f64.powi(-40)), 1.0078125);
        assert_eq!(bf(-(1.0 + 2f64.powi(-8) + 2f64.powi(-40))), -1.0078125);
        // Exact ties go to even; just below a tie goes down.
        assert_eq!(bf(1.0 + 2f64.powi(-8)), 1.0);
        assert_eq!(bf(1.0 + 3.0 * 2f64.powi(-8)), 1.015625);
        assert_eq!(bf(1.0 + 2f64.powi(-8) - 2f64.powi(-40)), 1.0);
        // Overflow, underflow, signed zero, NaN.
        assert_eq!(bf(1e39), f64::INFINITY);
        assert_eq!(bf(-1e300), f64::NEG_INFINITY);
        assert_eq!(bf(1e-300), 0.0);
        assert!(bf(-1e-300).is_sign_negative());
        assert!(bf(f64::NAN).is_nan());
        // Every value float32 holds rounds as from float32.
        for bits in (0..u32::MAX).step_by(4099) {
            let x = f32::from_bits(bits);
            if !x.is_nan() {
                assert_eq!(bf16_from_f64(f64::from(x)).to_bits(), half::bf16::from_f32(x).to_bits(), "{x:e}");
            }
        }
    }

    #[test]
    fn casts_follow_as_semantics() {
        assert_eq!(i8::from_scalar(Scalar::Int(300)), 44);
        assert_eq!(i32::from_scalar(Scalar::Float(-2.7)), -2);
        assert_eq!(u8::from_scalar(Scalar::Float(-1.0)), 0);
        assert_eq!(i32::from_scalar(Scalar::Float(f64::NAN)), 0);
        assert!(bool::from_scalar(Scalar::Float(0.5)));
        assert_eq!(f32::from_scalar(Scalar::Bool(true)), 1.0);
        assert_eq!(i64::from_scalar(u64::MAX.to_scalar()), -1);
    }

    #[test]
    fn float16_rounds_once_to_nearest_even() {
        let h = |v: f64| half::f16::from_scalar(Scalar::Float(v)).to_scalar();
        // 2049 lies halfway between the float16 neighbours 2048 and 2050: ties go to even.
        assert_eq!(h(2049.0), Scalar::Float(2048.0));
        assert_eq!(h(0.1), Scalar::Float(0.0999755859375));
        assert_eq!(h(1e6), Scalar::Float(f64::INFINITY));
        assert_eq!(half::f16::from_scalar(Scalar::Int(-3)).to_scalar(), Scalar::Float(-3.0));
        assert_eq!(i32::from_scalar(h(-2.75)), -2);
        let mut s = Storage::zeros(DType::F16, 2).unwrap();
        assert!(s.set(1, Scalar::Float(1.5)));
        assert_eq!((s.dtype(), s.get(1)), (DType::F16, Some(Scalar::Float(1.5))));
    }

    #[test]
    fn bfloat16_rounds_once_to_nearest_even() {
        let h = |v: f64| half::bf16::from_scalar(Scalar::Float(v)).to_scalar();
        // 257 lies halfway between the bfloat16 neighbours 256 and 258: ties go to even.
        assert_eq!(h(257.0), Scalar::Float(256.0));
        // float32's range: 1e38 stays finite, 1e39 is beyond it.
        assert!(matches!(h(1e38), Scalar::Float(v) if v.is_finite() && (v - 1e38).abs() < 1e36));
        assert_eq!(h(1e39), Scalar::Float(f64::INFINITY));
        assert_eq!(half::bf16::from_scalar(Scalar::Int(-3)).to_scalar(), Scalar::Float(-3.0));
        let mut s = Storage::zeros(DType::BF16, 2).unwrap();
        assert!(s.set(1, Scalar::Float(1.5)));
        assert_eq!((s.dtype(), s.get(1)), (DType::BF16, Some(Scalar::Float(1.5))));
    }

    #[test]
    fn typed_access_checks_the_variant() {
        let mut s = f32::into_storage(vec![1.0, 2.0]);
        assert_eq!(s.dtype(), DType::F32);
        assert!(i32::slice(&s).is_none());
        assert_eq!(f32::slice_mut(&mut s).map(|v| v.len()), Some(2));
        assert_eq!(s.get(1), Some(Scalar::Float(2.0)));
        let vector = DType { lanes: 4, ..DType::F32 };
        assert_eq!(Storage::zeros(vector, 3), Err(TensorError::UnsupportedDType(vector)));
        assert_eq!(Storage::zeros(DType::BOOL, 3), Ok(Storage::Bool(vec![false; 3])));
        // More than any machine has: refused by the allocator, reported, not aborted.
        let huge = isize::MAX as usize / 2;
        assert_eq!(Storage::zeros(DType::U8, huge), Err(TensorError::AllocationFailed { bytes: huge }));
    }

    #[test]
    fn shared_elements_are_read_in_place_and_copied_on_write() {
        let bytes = crate::SharedBytes::new(vec![1u8, 2, 3]);
        let shared = Storage::Shared(SharedBuffer::new(DType::U8, bytes.clone()).unwrap());
        assert_eq!(shared, u8::into_storage(vec![1, 2, 3]));
        assert_ne!(shared, i8::into_storage(vec![1, 2, 3]));
        assert_eq!(
            (shared.len(), shared.get(2), shared.as_ptr()),
            (3, Some(Scalar::UInt(3)), bytes.as_bytes().as_ptr())
        );
        assert_eq!(u8::slice(&shared), Some(&[1u8, 2, 3][..]));
        let mut written = shared.clone();
        assert!(written.set(0, Scalar::UInt(9)));
        assert!(!written.is_shared() && shared.is_shared());
        assert_eq!(u8::slice(&written), Some(&[9u8, 2, 3][..]));
        assert_eq!(bytes.as_bytes(), &[1, 2, 3]);
        let mut zeroed = shared.clone();
        zeroed.fill_zero();
        assert_eq!(zeroed, u8::into_storage(vec![0; 3]));
        let mut other = shared.clone();
        assert!(i32::slice_mut(&mut other).is_none() && other.is_shared());
        assert_eq!(u8::slice_mut(&mut other).map(|v| v.len()), Some(3));
        assert!(!other.is_shared());
        assert_eq!(u8::from_storage(shared), Ok(vec![1, 2, 3]));
    }
}
