//! Helpers shared by the kernel families: dtype dispatch, argument checks, axis arithmetic.

use crate::error::KernelError;
use relay_devices::{DType, Element, Scalar, Tensor};

/// Evaluates `$body` (a `Result`) with the type alias `$T` set to the element type of
/// `$dtype`, which must be one of the listed types; any other dtype is a
/// [`KernelError::DType`].
macro_rules! dispatch {
    ($dtype:expr, $T:ident => $body:expr; $($ty:ty),+) => {
        'dispatch: {
            let dtype: relay_devices::DType = $dtype;
            $(
                if dtype == <$ty as relay_devices::Element>::DTYPE {
                    #[allow(dead_code)]
                    type $T = $ty;
                    break 'dispatch ($body);
                }
            )+
            Err($crate::error::KernelError::unsupported(dtype))
        }
    };
}

/// [`dispatch!`] over `f32` and `f64`.
macro_rules! floats {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::kernels::util::dispatch!($dtype, $T => $body; f32, f64)
    };
}

/// [`dispatch!`] over every integer and float type.
macro_rules! nums {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::kernels::util::dispatch!($dtype, $T => $body; i8, i16, i32, i64, u8, u16, u32, u64, f32, f64)
    };
}

/// [`dispatch!`] over every integer type.
macro_rules! ints {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::kernels::util::dispatch!($dtype, $T => $body; i8, i16, i32, i64, u8, u16, u32, u64)
    };
}

/// [`dispatch!`] over every integer type and `bool`.
macro_rules! ints_bools {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::kernels::util::dispatch!($dtype, $T => $body; bool, i8, i16, i32, i64, u8, u16, u32, u64)
    };
}

/// [`dispatch!`] over `bool` alone.
macro_rules! bools {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::kernels::util::dispatch!($dtype, $T => $body; bool)
    };
}

/// [`dispatch!`] over every type a tensor can hold.
macro_rules! any_type {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::kernels::util::dispatch!($dtype, $T => $body; bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64)
    };
}

pub(crate) use {any_type, bools, dispatch, floats, ints, ints_bools, nums};

/// The `N` inputs as an array, or an arity error.
pub(crate) fn args<T: Copy, const N: usize>(inputs: &[T]) -> Result<[T; N], KernelError> {
    <[T; N]>::try_from(inputs)
        .map_err(|_| KernelError::Arity { expected: N.to_string(), actual: inputs.len() })
}

/// The common dtype of all inputs (at least one).
pub(crate) fn same_dtype(dtypes: &[DType]) -> Result<DType, KernelError> {
    let first = *dtypes.first().ok_or(KernelError::Arity { expected: "at least 1".into(), actual: 0 })?;
    match dtypes.iter().find(|&&d| d != first) {
        Some(other) => Err(KernelError::DType(format!("inputs must share a dtype, got {first} and {other}"))),
        None => Ok(first),
    }
}

/// `axis` (negative counts from the end) as an index below `rank`.
pub(crate) fn normalize_axis(axis: i64, rank: usize) -> Result<usize, KernelError> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(KernelError::Attr(format!("axis {axis} is out of range for a tensor of rank {rank}")));
    }
    Ok(if axis < 0 { (axis + r) as usize } else { axis as usize })
}

/// A non-negative attribute value as a size.
pub(crate) fn to_size(v: i64, what: &str) -> Result<usize, KernelError> {
    usize::try_from(v).map_err(|_| KernelError::Attr(format!("{what} must be non-negative, got {v}")))
}

/// A positive attribute value as a size.
pub(crate) fn to_positive(v: i64, what: &str) -> Result<usize, KernelError> {
    match usize::try_from(v) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(KernelError::Attr(format!("{what} must be positive, got {v}"))),
    }
}

/// The only output, mutably.
pub(crate) fn only_output(outputs: &mut [Tensor]) -> Result<&mut Tensor, KernelError> {
    match outputs {
        [out] => Ok(out),
        _ => Err(KernelError::OutputCount { expected: 1, actual: outputs.len() }),
    }
}

/// Writes `f(x[i])` to `out[i]` for every element.
pub(crate) fn map_into<A: Element, B: Element>(
    x: &Tensor,
    out: &mut Tensor,
    f: impl Fn(A) -> B,
) -> Result<(), KernelError> {
    let src = x.as_slice::<A>()?;
    let dst = out.as_mut_slice::<B>()?;
    same_len(src.len(), dst.len())?;
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = f(s);
    }
    Ok(())
}

/// Copies the elements of `x` into `out` (same dtype and element count).
pub(crate) fn copy_elements(x: &Tensor, out: &mut Tensor) -> Result<(), KernelError> {
    any_type!(x.dtype(), T => map_into::<T, T>(x, out, |v| v))
}

/// Writes `value`, converted to `out`'s dtype, to every element.
pub(crate) fn fill(out: &mut Tensor, value: Scalar) -> Result<(), KernelError> {
    any_type!(out.dtype(), T => {
        out.as_mut_slice::<T>()?.fill(T::from_scalar(value));
        Ok(())
    })
}

/// The value of a one-element tensor (a fill or pad value).
pub(crate) fn scalar_value(t: &Tensor) -> Result<Scalar, KernelError> {
    match (t.len(), t.get(0)) {
        (1, Some(v)) => Ok(v),
        _ => Err(KernelError::Shape(format!("expected a scalar, got shape {:?}", t.shape()))),
    }
}

/// Calls `f` with every index of `shape` in row-major order (once for a scalar, never for an
/// empty shape).
pub(crate) fn for_each_index(
    shape: &[usize],
    mut f: impl FnMut(&[usize]) -> Result<(), KernelError>,
) -> Result<(), KernelError> {
    if shape.contains(&0) {
        return Ok(());
    }
    let mut index = vec![0usize; shape.len()];
    loop {
        f(&index)?;
        let mut axis = shape.len();
        loop {
            if axis == 0 {
                return Ok(());
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}

/// Errors unless two element counts agree (a kernel called with inconsistent buffers).
pub(crate) fn same_len(a: usize, b: usize) -> Result<(), KernelError> {
    if a == b {
        Ok(())
    } else {
        Err(KernelError::Shape(format!("buffers of {a} and {b} elements")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes() {
        assert_eq!(normalize_axis(-1, 3).unwrap(), 2);
        assert!(normalize_axis(3, 3).is_err());
        assert!(normalize_axis(0, 0).is_err());
    }

    #[test]
    fn dispatch_rejects_other_dtypes() {
        let r: Result<usize, KernelError> = floats!(DType::I32, T => Ok(std::mem::size_of::<T>()));
        assert!(matches!(r, Err(KernelError::DType(_))));
        let r: Result<usize, KernelError> = floats!(DType::F64, T => Ok(std::mem::size_of::<T>()));
        assert_eq!(r, Ok(8));
        assert_eq!(args::<i32, 2>(&[1, 2]), Ok([1, 2]));
        assert!(args::<i32, 2>(&[1]).is_err());
    }
}
