//! Neural-network operators (TVM `src/relay/op/nn/nn.cc`, `convolution.cc`, `pooling.cc`):
//! products, convolution, pooling, normalisation, softmax and dropout, each an
//! [`Operator`](crate::operator::Operator) item whose `COMPUTE` points at its loop nest in
//! `crate::compute::nn`, one list per file (`DENSE`, `CONV`, `POOL`, `NORM`, `SOFTMAX`,
//! `DROPOUT`, `SPACE_BATCH`, `WINOGRAD`, chained in `super::operators`). This file holds what they share: dtype rules of products, window
//! attributes of every rank read as three spatial axes (`per_axis`, `padding`, `lift`: a 1-d
//! or 2-d convolution or pool is a 3-d one with leading spatial axes of size 1), the plain
//! layouts and the window arithmetic of convolution and pooling, and the lane walk of the
//! operators over one axis.

mod conv;
mod conv_transpose;
mod deformable;
mod dense;
mod dropout;
mod loss;
mod norm;
mod pool;
mod softmax;
mod space_batch;
mod upsampling;
mod winograd;

pub use conv::*;
pub use conv_transpose::*;
pub use deformable::*;
pub use dense::*;
pub use dropout::*;
pub use loss::*;
pub use norm::*;
pub use pool::*;
pub use softmax::*;
pub use space_batch::*;
pub use upsampling::*;
pub use winograd::*;

use super::index::may_equal;
use crate::error::KernelError;
use crate::kernels::num::{cast, Num};
use crate::kernels::util::{any_type, normalize_axis, nums};
use crate::operator::{shape_text, DTypeSet, ShapeDim};
use relay_devices::{shape_size, DType, Tensor};

/// The elements of `t` converted to `O` (the accumulation type of a matrix product or
/// convolution, e.g. `int32` for `int8` inputs).
pub(crate) fn converted<O: Num>(t: &Tensor) -> Result<Vec<O>, KernelError> {
    nums!(t.dtype(), T => Ok(t.as_slice::<T>()?.iter().map(|&v| cast::<T, O>(v)).collect()))
}

/// The nn dtype rule: `set`, widened to every float width at one lane, so that `float16`
/// models type-check as TVM's do; the reference kernels run `float32`/`float64` and refuse
/// other floats when called.
fn check_dtype(set: DTypeSet, d: DType) -> Result<DType, KernelError> {
    let any_float = d.is_float() && d.lanes == 1 && matches!(set, DTypeSet::Floats | DTypeSet::Nums);
    if any_float {
        Ok(d)
    } else {
        set.check(d)
    }
}

/// The output dtype of a product (TVM's): numeric operands of one dtype — integers may differ
/// in signedness and width (quantized `uint8 x int8` with `out_dtype="int32"`) — and
/// `out_dtype` when given, else the data's.
fn product_dtype(data: DType, weight: DType, out_dtype: Option<DType>) -> Result<DType, KernelError> {
    check_dtype(DTypeSet::Nums, data)?;
    check_dtype(DTypeSet::Nums, weight)?;
    if data != weight && !(data.is_int() && weight.is_int()) {
        return Err(KernelError::DType(format!("operand dtypes differ: `{data}` and `{weight}`")));
    }
    check_dtype(DTypeSet::Nums, out_dtype.unwrap_or(data))
}

/// The message for sizes beyond `usize`.
fn too_large() -> KernelError {
    KernelError::Shape("the resulting size is too large".to_string())
}

/// The spatial axes of the window machinery (`D`, `H`, `W`): convolution and pooling of
/// every rank run as 3-d, a lower rank with leading spatial axes of size 1 (see [`lift`]).
const SPATIAL: usize = 3;

/// One positive value per spatial axis of a rank-`rank` window attribute (`strides`,
/// `dilation`, `pool_size`, `kernel_size`): one value applies to every axis, else one per
/// axis; as [`SPATIAL`] values, led by 1s for a lower rank.
fn per_axis(v: &[i64], rank: usize, name: &str) -> Result<[usize; SPATIAL], KernelError> {
    if v.len() != 1 && v.len() != rank {
        let counts = if rank == 1 { "1 value".to_string() } else { format!("1 or {rank} values") };
        return Err(KernelError::Attr(format!("attribute `{name}` must have {counts}, found {}", v.len())));
    }
    let positive = |x: i64| usize::try_from(x).ok().filter(|&x| x > 0);
    let mut out = [1; SPATIAL];
    for (i, o) in out[SPATIAL - rank..].iter_mut().enumerate() {
        *o = positive(v[if v.len() == 1 { 0 } else { i }])
            .ok_or_else(|| KernelError::Attr(format!("attribute `{name}` must be positive, found {v:?}")))?;
    }
    Ok(out)
}

/// TVM's `padding` of a rank-`rank` window (`GetPaddingDepthHeightWidth` and its 1-d and
/// 2-d forms) as `[before, after]` per spatial axis, led by 0s for a lower rank: one value
/// pads every side, `rank` values both sides of each axis, `2 * rank` values are the
/// befores then the afters (`[top, left, bottom, right]`, `[front, top, left, back, bottom,
/// right]`).
fn padding(v: &[i64], rank: usize) -> Result<[[usize; SPATIAL]; 2], KernelError> {
    let side = |i: usize, after: bool| match v.len() {
        1 => v[0],
        n if n == rank => v[i],
        _ => v[i + usize::from(after) * rank],
    };
    if v.len() != 1 && v.len() != rank && v.len() != 2 * rank {
        let counts = if rank == 1 { "1 or 2".to_string() } else { format!("1, {rank} or {}", 2 * rank) };
        return Err(KernelError::Attr(format!(
            "attribute `padding` must have {counts} values, found {}",
            v.len()
        )));
    }
    let mut pad = [[0; SPATIAL]; 2];
    for (after, sides) in pad.iter_mut().enumerate() {
        for (i, p) in sides[SPATIAL - rank..].iter_mut().enumerate() {
            *p = usize::try_from(side(i, after == 1)).map_err(|_| {
                KernelError::Attr(format!("attribute `padding` must not be negative, found {v:?}"))
            })?;
        }
    }
    Ok(pad)
}

/// Canonical dimensions `[n, c, spatial..]` (or `[o, i, spatial..]`) of 1 to [`SPATIAL`]
/// spatial axes as those of a 3-d window, the missing leading spatial axes of size 1: the
/// row-major layout is unchanged, so a tensor of the lower rank is read as this shape.
fn lift<D: ShapeDim>(dims: &[D]) -> Result<[D; 2 + SPATIAL], KernelError> {
    match dims {
        [n, c, spatial @ ..] if (1..=SPATIAL).contains(&spatial.len()) => {
            let mut out = [D::known(1); 2 + SPATIAL];
            out[..2].copy_from_slice(&[*n, *c]);
            out[2 + SPATIAL - spatial.len()..].copy_from_slice(spatial);
            Ok(out)
        }
        _ => {
            Err(KernelError::Shape(format!("{} does not have 1 to {SPATIAL} spatial axes", shape_text(dims))))
        }
    }
}

/// The inverse of [`lift`] for a rank-`N` operand: `N - 2` spatial axes, the last ones.
fn lower<D: Copy, const N: usize>(dims: [D; 2 + SPATIAL]) -> [D; N] {
    std::array::from_fn(|i| if i < 2 { dims[i] } else { dims[2 + SPATIAL + i - N] })
}

/// The output size of a sliding window over `size` input elements padded by `pad` in all
/// (TVM's conv and pool formula): `(size + pad - ((window - 1) * dilation + 1)) / stride + 1`,
/// the division rounded up with `ceil_mode`. `?` stays `?`.
///
/// # Errors
/// A window larger than the padded input, or sizes that overflow.
fn window_out<D: ShapeDim>(
    size: D,
    window: usize,
    stride: usize,
    dilation: usize,
    pad: usize,
    ceil_mode: bool,
) -> Result<D, KernelError> {
    let Some(size) = size.value() else { return Ok(size) };
    let span = window.saturating_sub(1).checked_mul(dilation).and_then(|x| x.checked_add(1));
    let (Some(span), Some(padded)) = (span, size.checked_add(pad)) else { return Err(too_large()) };
    let Some(room) = padded.checked_sub(span) else {
        return Err(KernelError::Shape(format!(
            "the window spans {span} elements, more than the {padded} of the padded input"
        )));
    };
    let steps = room / stride + usize::from(ceil_mode && room % stride != 0);
    Ok(D::known(steps + 1))
}

/// A plain `N`-d layout: a permutation of the canonical order (`NCW`, `NCHW`, `OIHW`, ...).
/// Packed layouts such as `NCHW4c` are not supported: they fail [`Layout::parse`], so the
/// relation rejects them at `check`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Layout<const N: usize> {
    /// `pos[i]` is the axis where the `i`-th letter of the canonical order sits.
    pos: [usize; N],
}

impl<const N: usize> Layout<N> {
    /// Parses `layout` as a permutation of `canonical`'s `N` letters.
    fn parse(layout: &str, canonical: &str) -> Result<Layout<N>, KernelError> {
        let bad = || {
            KernelError::Attr(format!(
                "unsupported layout {layout:?}: expected a permutation of {canonical:?}"
            ))
        };
        let letters: Vec<char> = layout.chars().collect();
        if letters.len() != N {
            return Err(bad());
        }
        let mut pos = [0; N];
        for (p, c) in pos.iter_mut().zip(canonical.chars()) {
            let mut at = letters.iter().enumerate().filter(|&(_, &l)| l == c).map(|(i, _)| i);
            match (at.next(), at.next()) {
                (Some(i), None) => *p = i,
                _ => return Err(bad()),
            }
        }
        Ok(Layout { pos })
    }

    /// `shape` (in this layout, rank `N`) in canonical order; `what` names it in the error.
    fn to_canonical<D: ShapeDim>(self, shape: &[D], what: &str) -> Result<[D; N], KernelError> {
        if shape.len() != N {
            return Err(KernelError::Shape(format!(
                "{what} must have rank {N}, found {}",
                shape_text(shape)
            )));
        }
        Ok(self.pos.map(|p| shape[p]))
    }

    /// Canonical-order dimensions laid out in this layout.
    fn arrange<D: ShapeDim>(self, dims: [D; N]) -> Vec<D> {
        let mut out = dims.to_vec();
        for (d, p) in dims.into_iter().zip(self.pos) {
            out[p] = d;
        }
        out
    }
}

/// `t`, in the plain layout whose canonical letter `i` sits at axis `pos[i]`, copied into
/// canonical order (axis `i` of the result is axis `pos[i]` of `t`).
fn to_canonical_tensor(t: &Tensor, pos: &[usize]) -> Result<Tensor, KernelError> {
    let shape: Vec<usize> =
        pos.iter().map(|&p| t.shape().get(p).copied()).collect::<Option<_>>().ok_or_else(|| {
            KernelError::Shape(format!("{} does not have rank {}", shape_text(t.shape()), pos.len()))
        })?;
    let mut c = Tensor::zeros(t.dtype(), shape)?;
    any_type!(t.dtype(), T => {
        c.view_mut::<T>()?.copy_from(&t.view::<T>()?.permute(pos)?)?;
        Ok(c)
    })
}

/// Runs `kernel`, written for canonical layouts (`NCW`, `NCHW`, `NCDHW` data, `OIW`, `OIHW`,
/// `OIDHW` weights), on operands in other plain layouts: input `i` is copied into canonical
/// order through `orders[i]` (see [`Layout::pos`]), the kernel writes a canonical-order output,
/// which is copied back into `out` (in layout `out_order`). Operands already canonical pass
/// through uncopied. This is how the reference kernels run `NHWC`/`HWIO` and every other
/// permutation their relations accept.
fn in_canonical(
    inputs: &[&Tensor],
    orders: &[&[usize]],
    out: &mut Tensor,
    out_order: &[usize],
    kernel: impl FnOnce(&[&Tensor], &mut Tensor) -> Result<(), KernelError>,
) -> Result<(), KernelError> {
    let identity = |pos: &[usize]| pos.iter().enumerate().all(|(i, &p)| i == p);
    let copies: Vec<Option<Tensor>> = inputs
        .iter()
        .zip(orders)
        .map(|(t, pos)| (!identity(pos)).then(|| to_canonical_tensor(t, pos)).transpose())
        .collect::<Result<_, _>>()?;
    let canonical: Vec<&Tensor> = copies.iter().zip(inputs).map(|(c, &t)| c.as_ref().unwrap_or(t)).collect();
    if identity(out_order) {
        return kernel(&canonical, out);
    }
    let mut result = to_canonical_tensor(out, out_order)?;
    kernel(&canonical, &mut result)?;
    // Output axis `j` is canonical axis `k` where `out_order[k] == j`.
    let mut back = vec![0; out_order.len()];
    for (k, &j) in out_order.iter().enumerate() {
        back[j] = k;
    }
    any_type!(out.dtype(), T => {
        out.view_mut::<T>()?.copy_from(&result.view::<T>()?.permute(&back)?)?;
        Ok(())
    })
}

/// Checks that `v` is a vector as long as axis `axis` of `data` (`what` names it).
fn check_channel_vector<D: ShapeDim>(
    data: &[D],
    axis: usize,
    v: &[D],
    what: &str,
) -> Result<(), KernelError> {
    let c = data[axis];
    if v.len() != 1 || !may_equal(v[0], c) {
        return Err(KernelError::Shape(format!(
            "{what} must be a vector of {} (axis {axis} of {}), found {}",
            dim_text(c),
            shape_text(data),
            shape_text(v)
        )));
    }
    Ok(())
}

/// `axis` of `shape` (negative counts from the end) as an index; the error names the shape.
fn axis_in<D: ShapeDim>(axis: i64, shape: &[D]) -> Result<usize, KernelError> {
    normalize_axis(axis, shape.len())
        .map_err(|e| KernelError::Attr(format!("{}: {}", crate::operator::message(e), shape_text(shape))))
}

/// One dimension as Relay writes it: its size or `?`.
fn dim_text<D: ShapeDim>(d: D) -> String {
    d.value().map_or_else(|| "?".to_string(), |n| n.to_string())
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
    crate::kernels::util::same_len(x.len(), out.len())?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::Dim::{self, Any, Known as K};

    #[test]
    fn window_sizes() {
        assert_eq!(window_out(K(224), 7, 2, 1, 6, false).unwrap(), K(112));
        assert_eq!(window_out(5usize, 3, 1, 2, 0, false).unwrap(), 1);
        assert_eq!(window_out(6usize, 3, 2, 1, 0, false).unwrap(), 2);
        assert_eq!(window_out(6usize, 3, 2, 1, 0, true).unwrap(), 3);
        assert_eq!(window_out(7usize, 3, 2, 1, 0, true).unwrap(), 3);
        assert_eq!(window_out(Any, 3, 2, 1, 0, true).unwrap(), Any);
        assert!(window_out(2usize, 3, 1, 1, 0, false).unwrap_err().to_string().contains("spans 3"));
        assert!(window_out(2usize, usize::MAX, 1, 2, 0, false).is_err());
    }

    #[test]
    fn layouts() {
        let nhwc = Layout::<4>::parse("NHWC", "NCHW").unwrap();
        let shape = [K(1), K(8), K(9), K(3)];
        assert_eq!(nhwc.to_canonical(&shape, "data").unwrap(), [K(1), K(3), K(8), K(9)]);
        assert_eq!(nhwc.arrange([K(1), K(3), K(8), K(9)]), shape.to_vec());
        assert_eq!(nhwc.pos, [0, 3, 1, 2]);
        assert!(Layout::<4>::parse("NCHW4c", "NCHW").is_err());
        assert!(Layout::<4>::parse("NCCW", "NCHW").is_err());
        assert!(nhwc.to_canonical::<Dim>(&[K(1)], "data").is_err());
    }

    #[test]
    fn window_attributes() {
        assert_eq!(padding(&[1, 2], 2).unwrap(), [[0, 1, 2], [0, 1, 2]]);
        assert!(padding(&[1, 2, 3], 2).is_err() && padding(&[-1], 2).is_err());
        assert_eq!(per_axis(&[2], 3, "strides").unwrap(), [2, 2, 2]);
        assert_eq!(per_axis(&[3], 1, "strides").unwrap(), [1, 1, 3]);
        assert!(per_axis(&[1, 2], 3, "strides").unwrap_err().to_string().contains("must have 1 or 3 values"));
        assert!(per_axis(&[1, 2], 1, "strides").unwrap_err().to_string().contains("must have 1 value"));
        assert_eq!(padding(&[1, 2, 3], 3).unwrap(), [[1, 2, 3], [1, 2, 3]]);
        assert_eq!(padding(&[1, 2, 3, 4, 5, 6], 3).unwrap(), [[1, 2, 3], [4, 5, 6]]);
        assert_eq!(padding(&[1, 2], 1).unwrap(), [[0, 0, 1], [0, 0, 2]]);
        assert!(padding(&[1, 2, 3, 4], 3).unwrap_err().to_string().contains("1, 3 or 6 values"));
        assert!(padding(&[1, 2, 3], 1).unwrap_err().to_string().contains("1 or 2 values"));
    }

    #[test]
    fn lifted_shapes() {
        assert_eq!(lift(&[2usize, 3, 7]).unwrap(), [2, 3, 1, 1, 7]);
        assert_eq!(lift(&[2usize, 3, 5, 6, 7]).unwrap(), [2, 3, 5, 6, 7]);
        assert!(lift(&[2usize, 3]).is_err() && lift(&[1usize; 6]).is_err());
        assert_eq!(lower::<usize, 3>([2, 3, 1, 1, 7]), [2, 3, 7]);
        assert_eq!(lower::<usize, 4>([2, 3, 1, 6, 7]), [2, 3, 6, 7]);
    }

    #[test]
    fn product_dtypes() {
        assert_eq!(product_dtype(DType::U8, DType::I8, Some(DType::I32)).unwrap(), DType::I32);
        assert_eq!(product_dtype(DType::F32, DType::F32, None).unwrap(), DType::F32);
        assert!(product_dtype(DType::F32, DType::I8, None).is_err());
        assert!(product_dtype(DType::BOOL, DType::BOOL, None).is_err());
    }
}
