//! `nn.*` operators: dense layers and matrix products, convolution, pooling, normalisation,
//! softmax and dropout (TVM `src/relay/op/nn/`). Data layouts are TVM's defaults (`NCHW`
//! data, `OIHW` weights); other layouts are rejected.

mod conv;
mod dense;
mod dropout;
mod norm;
mod pool;
mod softmax;

pub use conv::Conv2d;
pub use dense::{BatchMatmul, BiasAdd, Dense, Matmul};
pub use dropout::Dropout;
pub use norm::{BatchNorm, LayerNorm};
pub use pool::{AvgPool2d, GlobalAvgPool2d, MaxPool2d};
pub use softmax::{LogSoftmax, Softmax};

use super::num::{cast, Num};
use super::util::{normalize_axis, nums, to_positive, to_size};
use crate::error::KernelError;
use relay_devices::{shape_size, DType, Tensor};

/// The elements of `t` converted to `O` (the accumulation type of a matrix product or
/// convolution, e.g. `int32` for `int8` inputs).
fn converted<O: Num>(t: &Tensor) -> Result<Vec<O>, KernelError> {
    nums!(t.dtype(), T => Ok(t.as_slice::<T>()?.iter().map(|&v| cast::<T, O>(v)).collect()))
}

/// The output dtype of a product with `out_dtype`: given, else the data's; numeric inputs.
fn product_dtype(data: DType, weight: DType, out_dtype: Option<DType>) -> Result<DType, KernelError> {
    nums!(data, T => Ok(()))?;
    nums!(weight, T => Ok(()))?;
    let out = out_dtype.unwrap_or(data);
    nums!(out, T => Ok(out))
}

/// `[h, w]` from one or two positive values (`strides`, `dilation`, `pool_size`).
fn pair(v: &[i64], what: &str) -> Result<[usize; 2], KernelError> {
    match *v {
        [a] => Ok([to_positive(a, what)?; 2]),
        [a, b] => Ok([to_positive(a, what)?, to_positive(b, what)?]),
        _ => Err(KernelError::Attr(format!("{what} must have 1 or 2 values, got {v:?}"))),
    }
}

/// `[top, left, bottom, right]` from TVM's 1-, 2- or 4-value 2-d padding.
fn padding4(v: &[i64]) -> Result<[usize; 4], KernelError> {
    let p = |x: i64| to_size(x, "padding");
    match *v {
        [a] => Ok([p(a)?; 4]),
        [a, b] => Ok([p(a)?, p(b)?, p(a)?, p(b)?]),
        [t, l, b, r] => Ok([p(t)?, p(l)?, p(b)?, p(r)?]),
        _ => Err(KernelError::Attr(format!("padding must have 1, 2 or 4 values, got {v:?}"))),
    }
}

/// Errors unless the data layout is `NCHW` and the output layout is unset or `NCHW`.
fn check_nchw(layout: &str, out_layout: &str) -> Result<(), KernelError> {
    if layout != "NCHW" || !(out_layout.is_empty() || out_layout == "NCHW") {
        return Err(KernelError::Attr(format!("layout {layout}/{out_layout:?} is not supported; use NCHW")));
    }
    Ok(())
}

/// A 4-d shape as `[n, c, h, w]`.
fn nchw(shape: &[usize]) -> Result<[usize; 4], KernelError> {
    <[usize; 4]>::try_from(shape)
        .map_err(|_| KernelError::Shape(format!("expected a 4-d NCHW tensor, got {shape:?}")))
}

/// The tensor seen as `[outer, len, inner]` around `axis`: element `(o, c, i)` of the lane
/// through axis `axis` sits at `(o * len + c) * inner + i`.
fn lanes(shape: &[usize], axis: i64) -> Result<(usize, usize, usize), KernelError> {
    let axis = normalize_axis(axis, shape.len())?;
    let size =
        |s: &[usize]| shape_size(s).ok_or_else(|| KernelError::Shape(format!("shape {s:?} is too large")));
    Ok((size(&shape[..axis])?, shape[axis], size(&shape[axis + 1..])?))
}

/// Calls `f(lane_in, lane_out)` for every lane of `x` along the middle axis of
/// `(outer, len, inner)`, writing each lane's results back in place in `out`.
fn map_lanes<T: Copy + Default>(
    x: &[T],
    out: &mut [T],
    (outer, len, inner): (usize, usize, usize),
    mut f: impl FnMut(&[T], &mut [T]),
) -> Result<(), KernelError> {
    super::util::same_len(x.len(), out.len())?;
    let (mut lane, mut res) = (vec![T::default(); len], vec![T::default(); len]);
    for o in 0..outer {
        for i in 0..inner {
            let at = |c: usize| (o * len + c) * inner + i;
            for (c, v) in lane.iter_mut().enumerate() {
                *v = x[at(c)];
            }
            f(&lane, &mut res);
            for (c, &v) in res.iter().enumerate() {
                out[at(c)] = v;
            }
        }
    }
    Ok(())
}
