//! Operators that rearrange or relabel elements without computing on them: `reshape`,
//! `squeeze`, `expand_dims`, `nn.batch_flatten`, `transpose`, `broadcast_to`, `shape_of`
//! (TVM `src/relay/op/tensor/transform.cc`).

use super::{dim_from_i64, init_shape, same_as_input};
use crate::attrs::{
    ExpandDimsAttrs, InitOpAttrs, NdarraySizeAttrs, NoAttrs, ReshapeAttrs, ShapeOfAttrs, SqueezeAttrs,
    TransposeAttrs,
};
use crate::compute::transform as rule;
use crate::compute::util::tensors;
use crate::error::KernelError;
use crate::kernels::util::{any_type, args, copy_elements, ints, normalize_axis, only_output, to_size};
use crate::kernels::Checked;
use crate::operator::{broadcast, shape_text, DTypeSet, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Element, Scalar, Tensor};

/// Declares an operator whose output has the input's elements in the input's row-major order
/// under a new shape: dtype unchanged, kernel a plain copy, kir rule `same_order`.
macro_rules! relabel {
    ($(#[$doc:meta])* $name:ident = $op:literal, $attrs:ty, $tvm_doc:literal,
     |$shape:ident, $a:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::Injective;
            const NUM_INPUTS: usize = 1;
            const DTYPES: DTypeSet = DTypeSet::Any;
            const DOC: &'static str = $tvm_doc;
            type Attrs = $attrs;
            const COMPUTE: Option<crate::operator::ComputeRule<$attrs>> = Some(rule::same_order);

            #[allow(unused_variables)]
            fn shapes<D: ShapeDim>(inputs: &[&[D]], $a: &$attrs) -> Result<Vec<Vec<D>>, KernelError> {
                let [$shape] = args(inputs)?;
                let out: Vec<D> = $body?;
                Ok(vec![out])
            }

            fn dtypes(inputs: &[DType], _: &$attrs) -> Result<Vec<DType>, KernelError> {
                same_as_input(inputs)
            }

            fn reference(inputs: &[&Tensor], _: &$attrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                let [x] = args(inputs)?;
                copy_elements(x, only_output(outputs)?)
            }
        }
    };
}

relabel! {
    /// `reshape`: the elements under `newshape`, with TVM's special values (see
    /// [`infer_reshape`]). Every dtype.
    Reshape = "reshape", ReshapeAttrs, "same elements, new shape (0 copies, -1 infers)",
    |x, a| infer_reshape(x, &a.newshape, a.allowzero)
}

relabel! {
    /// `squeeze`: the listed size-1 axes removed; without `axis`, every axis known to be 1 (a
    /// `?` axis is kept then; naming it removes it, checked at run time). Squeezing an axis of
    /// another size is an error. Every dtype.
    Squeeze = "squeeze", SqueezeAttrs, "remove size-1 dimensions", |x, a| squeezed(x, &a.axis)
}

relabel! {
    /// `expand_dims`: `num_newaxis` size-1 axes inserted at `axis` (`-rank-1..=rank`). Every
    /// dtype.
    ExpandDims = "expand_dims", ExpandDimsAttrs, "insert size-1 dimensions at axis", |x, a| {
        let at = normalize_axis(a.axis, x.len() + 1).map_err(|_| {
            KernelError::Attr(format!(
                "axis {} is out of range for inserting into a tensor of rank {}",
                a.axis,
                x.len()
            ))
        })?;
        let n = to_size(a.num_newaxis, "num_newaxis")?;
        let mut out = x.to_vec();
        out.splice(at..at, std::iter::repeat_n(D::known(1), n));
        Ok::<_, KernelError>(out)
    }
}

relabel! {
    /// `nn.batch_flatten`: `[n, d1, d2, ...]` to `[n, d1 * d2 * ...]`. Every dtype.
    BatchFlatten = "nn.batch_flatten", NoAttrs, "[n, ...] to [n, product of the rest]",
    |x, a| match x.split_first() {
        Some((&n, rest)) => Ok(vec![n, D::product(rest)?]),
        None => Err(KernelError::Shape("expects a tensor of rank at least 1, found a scalar".into())),
    }
}

/// The output shape of `reshape(data, newshape, allowzero)` (TVM `InferNewShape`). Special
/// values: `0` copies the input dimension at the same position (unless `allowzero`, when it is
/// a size 0), `-1` is inferred from the remaining size (`?` if that involves a `?`), `-2`
/// copies all remaining input dimensions, `-3` merges two input dimensions, `-4, a, b` splits
/// one input dimension into `a` and `b` (one of them may be -1).
///
/// # Errors
/// [`KernelError::Attr`] for a `newshape` that does not fit the input.
pub fn infer_reshape<D: ShapeDim>(
    ishape: &[D],
    newshape: &[i64],
    allowzero: bool,
) -> Result<Vec<D>, KernelError> {
    let rank = ishape.len();
    let bad = |msg: String| KernelError::Attr(msg);
    let mut out: Vec<D> = vec![];
    // Input dimensions copied verbatim and output dimensions made from them: neither takes
    // part in inferring a -1.
    let mut used_in = vec![false; rank];
    let mut copied_out: Vec<bool> = vec![];
    let mut infer_at: Option<usize> = None;
    let mut src = 0usize;
    let input = |src: usize, what: &str| {
        ishape.get(src).copied().ok_or_else(|| {
            bad(format!("{what} refers to input dimension {src}, but the input has rank {rank}"))
        })
    };
    let mut i = 0;
    while i < newshape.len() {
        let v = newshape[i];
        match v {
            1.. => {
                out.push(dim_from_i64(v)?);
                copied_out.push(false);
                src += 1;
            }
            0 if allowzero => {
                out.push(D::known(0));
                copied_out.push(false);
                src += 1;
            }
            0 => {
                out.push(input(src, "newshape value 0")?);
                copied_out.push(true);
                used_in[src] = true;
                src += 1;
            }
            -1 => {
                if infer_at.is_some() {
                    return Err(bad(format!("newshape {newshape:?} has more than one -1")));
                }
                infer_at = Some(out.len());
                out.push(D::known(1));
                copied_out.push(false);
                src += 1;
            }
            -2 => {
                while src < rank {
                    out.push(ishape[src]);
                    copied_out.push(true);
                    used_in[src] = true;
                    src += 1;
                }
            }
            -3 => {
                let d1 = input(src, "newshape value -3")?;
                let d2 = input(src + 1, "newshape value -3")?;
                used_in[src] = true;
                used_in[src + 1] = true;
                src += 2;
                out.push(D::product(&[d1, d2])?);
                copied_out.push(true);
            }
            -4 => {
                let (Some(&a), Some(&b)) = (newshape.get(i + 1), newshape.get(i + 2)) else {
                    return Err(bad(format!(
                        "newshape value -4 must be followed by two values: {newshape:?}"
                    )));
                };
                let d0 = input(src, "newshape value -4")?;
                used_in[src] = true;
                src += 1;
                i += 2;
                out.extend(split_dim(d0, a, b)?);
                copied_out.extend([true, true]);
            }
            _ => return Err(bad(format!("unsupported newshape value {v} in {newshape:?}"))),
        }
        i += 1;
    }
    if let Some(at) = infer_at {
        out[at] = infer_minus_one(ishape, &used_in, &out, &copied_out, at)?;
    }
    if let (Some(a), Some(b)) = (D::product(ishape)?.value(), D::product(&out)?.value()) {
        if a != b {
            return Err(bad(format!(
                "cannot reshape {} ({a} elements) to {} ({b} elements)",
                shape_text(ishape),
                shape_text(&out)
            )));
        }
    }
    Ok(out)
}

/// The two dimensions `-4, a, b` splits `d0` into.
fn split_dim<D: ShapeDim>(d0: D, a: i64, b: i64) -> Result<[D; 2], KernelError> {
    let bad = |x: i64| x == 0 || x < -1;
    if bad(a) || bad(b) || (a == -1 && b == -1) {
        return Err(KernelError::Attr(format!("cannot split a dimension into ({a}, {b})")));
    }
    let other = |known: i64| match d0.value() {
        Some(n) if n as i64 % known == 0 => dim_from_i64(n as i64 / known),
        Some(n) => Err(KernelError::Attr(format!("cannot split dimension {n} by {known}"))),
        None => Ok(d0),
    };
    match (a, b) {
        (-1, _) => Ok([other(b)?, dim_from_i64(b)?]),
        (_, -1) => Ok([dim_from_i64(a)?, other(a)?]),
        _ => Ok([dim_from_i64(a)?, dim_from_i64(b)?]),
    }
}

/// The value of the `-1` at `at`: the unused input size over the other free output sizes.
fn infer_minus_one<D: ShapeDim>(
    ishape: &[D],
    used_in: &[bool],
    out: &[D],
    copied_out: &[bool],
    at: usize,
) -> Result<D, KernelError> {
    let free_in: Vec<D> = ishape.iter().zip(used_in).filter(|(_, &u)| !u).map(|(&d, _)| d).collect();
    let free_out: Vec<D> = out
        .iter()
        .zip(copied_out)
        .enumerate()
        .filter(|&(i, (_, &c))| !c && i != at)
        .map(|(_, (&d, _))| d)
        .collect();
    let (total, divisor) = (D::product(&free_in)?, D::product(&free_out)?);
    match (total.value(), divisor.value()) {
        (Some(t), Some(q)) if q != 0 && t % q == 0 => Ok(D::known(t / q)),
        (Some(t), Some(q)) => {
            Err(KernelError::Attr(format!("cannot infer -1: {t} elements do not divide into parts of {q}")))
        }
        // Unknown: so is the -1.
        (None, _) => Ok(total),
        (_, None) => Ok(divisor),
    }
}

/// The shape with the requested size-1 axes removed.
fn squeezed<D: ShapeDim>(x: &[D], axis: &Option<Vec<i64>>) -> Result<Vec<D>, KernelError> {
    let mut drop = vec![false; x.len()];
    match axis {
        None => drop.iter_mut().zip(x).for_each(|(d, &n)| *d = n.value() == Some(1)),
        Some(list) => {
            for &a in list {
                let k = normalize_axis(a, x.len())?;
                if let Some(n @ (0 | 2..)) = x[k].value() {
                    return Err(KernelError::Shape(format!("cannot squeeze axis {a} of size {n}")));
                }
                drop[k] = true;
            }
        }
    }
    Ok(x.iter().zip(&drop).filter(|(_, &d)| !d).map(|(&n, _)| n).collect())
}

/// `axes` normalised to a permutation of `0..rank` (reversal when absent or empty).
pub(crate) fn permutation(rank: usize, axes: &Option<Vec<i64>>) -> Result<Vec<usize>, KernelError> {
    let list = match axes {
        Some(list) if !list.is_empty() => list,
        _ => return Ok((0..rank).rev().collect()),
    };
    if list.len() != rank {
        return Err(KernelError::Attr(format!("axes {list:?} must name each of the {rank} dimensions once")));
    }
    let mut seen = vec![false; rank];
    list.iter()
        .map(|&a| {
            let i = normalize_axis(a, rank)?;
            if std::mem::replace(&mut seen[i], true) {
                return Err(KernelError::Attr(format!("axis {a} appears twice in axes {list:?}")));
            }
            Ok(i)
        })
        .collect()
}

/// `transpose`: output axis `k` is input axis `axes[k]`; absent or empty `axes` reverses.
/// Every dtype.
#[derive(Debug)]
pub struct Transpose;

impl Operator for Transpose {
    const NAME: &'static str = "transpose";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "permute dimensions (default: reverse)";
    type Attrs = TransposeAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<TransposeAttrs>> = Some(rule::transpose);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &TransposeAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        Ok(vec![permutation(x.len(), &attrs.axes)?.iter().map(|&p| x[p]).collect()])
    }

    fn dtypes(inputs: &[DType], _: &TransposeAttrs) -> Result<Vec<DType>, KernelError> {
        same_as_input(inputs)
    }

    fn reference(
        inputs: &[&Tensor],
        attrs: &TransposeAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let perm = permutation(x.ndim(), &attrs.axes)?;
        let out = only_output(outputs)?;
        any_type!(x.dtype(), T => {
            let view = x.view::<T>()?.permute(&perm)?;
            out.view_mut::<T>()?.copy_from(&view)?;
            Ok(())
        })
    }
}

/// `broadcast_to`: the input repeated to `shape` under NumPy broadcasting. TVM's attributes
/// for it also carry a `dtype`, which it ignores, and so does this. Every dtype.
#[derive(Debug)]
pub struct BroadcastTo;

impl Operator for BroadcastTo {
    const NAME: &'static str = "broadcast_to";
    const PATTERN: OpPattern = OpPattern::Broadcast;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "broadcast to a given shape";
    type Attrs = InitOpAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<InitOpAttrs>> = Some(rule::broadcast_to);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &InitOpAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        Ok(vec![broadcast_target(x, &init_shape(Self::NAME, attrs)?)?])
    }

    fn dtypes(inputs: &[DType], _: &InitOpAttrs) -> Result<Vec<DType>, KernelError> {
        same_as_input(inputs)
    }

    fn reference(
        inputs: &[&Tensor],
        _: &InitOpAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        broadcast_into(x, only_output(outputs)?)
    }
}

/// `target`, checked to be a shape `x` broadcasts to (NumPy rules): `broadcast_to`'s and
/// `broadcast_to_like`'s output shape.
///
/// # Errors
/// [`KernelError::Shape`] naming both shapes when it is not.
pub(super) fn broadcast_target<D: ShapeDim>(x: &[D], target: &[D]) -> Result<Vec<D>, KernelError> {
    if broadcast(&[x, target]).ok().as_deref() != Some(target) {
        return Err(KernelError::Shape(format!(
            "cannot broadcast {} to shape {}",
            shape_text(x),
            shape_text(target)
        )));
    }
    Ok(target.to_vec())
}

/// Writes `x` broadcast to `out`'s shape into `out` (of `x`'s dtype).
///
/// # Errors
/// Shapes that do not broadcast, or mismatched dtypes.
pub(super) fn broadcast_into(x: &Tensor, out: &mut Tensor) -> Result<(), KernelError> {
    let shape = out.shape().to_vec();
    any_type!(x.dtype(), T => {
        let view = x.view::<T>()?.broadcast_to(&shape)?;
        out.view_mut::<T>()?.copy_from(&view)?;
        Ok(())
    })
}

/// `shape_of`: the input's shape as a 1-d tensor of `dtype` (an integer type, `int32` by
/// default). Any input dtype.
#[derive(Debug)]
pub struct ShapeOf;

impl Operator for ShapeOf {
    const NAME: &'static str = "shape_of";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "the shape as a 1-d integer tensor";
    type Attrs = ShapeOfAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &ShapeOfAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        Ok(vec![vec![D::known(x.len())]])
    }

    fn dtypes(inputs: &[DType], attrs: &ShapeOfAttrs) -> Result<Vec<DType>, KernelError> {
        let [_] = args(inputs)?;
        Ok(vec![int_dtype(attrs.dtype)?])
    }

    fn reference(
        inputs: &[&Tensor],
        attrs: &ShapeOfAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let out = only_output(outputs)?;
        ints!(attrs.dtype, T => {
            for (d, &n) in out.as_mut_slice::<T>()?.iter_mut().zip(x.shape()) {
                *d = T::from_scalar(Scalar::UInt(n as u64));
            }
            Ok(())
        })
    }
}

/// `dtype`, checked to be an integer type the kernels store (`shape_of`'s and `ndarray_size`'s
/// result dtype).
fn int_dtype(dtype: DType) -> Result<DType, KernelError> {
    if !dtype.is_int() {
        return Err(KernelError::DType(format!("dtype must be an integer type, found {dtype}")));
    }
    ints!(dtype, T => Ok(dtype))
}

/// `ndarray_size`: the input's element count as a 0-d tensor of `dtype` (an integer type,
/// `int32` by default; a count past its range wraps). Any input dtype.
#[derive(Debug)]
pub struct NdarraySize;

impl Operator for NdarraySize {
    const NAME: &'static str = "ndarray_size";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "the element count as a 0-d integer tensor";
    type Attrs = NdarraySizeAttrs;
    // The count is static (kir shapes are), so the kernel writes a constant.
    const COMPUTE: Option<crate::operator::ComputeRule<NdarraySizeAttrs>> = Some(|inputs, _, out| {
        let [x] = tensors(inputs)?;
        rule::fill_const(out, x.size() as f64)
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &NdarraySizeAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [_] = args(inputs)?;
        Ok(vec![vec![]])
    }

    fn dtypes(inputs: &[DType], attrs: &NdarraySizeAttrs) -> Result<Vec<DType>, KernelError> {
        let [_] = args(inputs)?;
        Ok(vec![int_dtype(attrs.dtype)?])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &NdarraySizeAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        crate::kernels::util::fill(only_output(outputs)?, Scalar::UInt(x.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::Dim::{self, Any, Known as K};

    fn k(v: &[i64]) -> Vec<Dim> {
        v.iter().map(|&d| K(d)).collect()
    }

    #[test]
    fn reshape_special_values() {
        // TVM's documented examples.
        let r = |x: &[i64], n: &[i64]| infer_reshape(&k(x), n, false).unwrap();
        assert_eq!(r(&[2, 3, 4], &[4, 0, 2]), k(&[4, 3, 2]));
        assert_eq!(r(&[2, 3, 4], &[2, 0, 0]), k(&[2, 3, 4]));
        assert_eq!(r(&[2, 3, 4], &[6, 1, -1]), k(&[6, 1, 4]));
        assert_eq!(r(&[2, 3, 4], &[3, -1, 8]), k(&[3, 1, 8]));
        assert_eq!(r(&[2, 3, 4], &[-1]), k(&[24]));
        assert_eq!(r(&[2, 3, 4], &[-2]), k(&[2, 3, 4]));
        assert_eq!(r(&[2, 3, 4], &[2, -2]), k(&[2, 3, 4]));
        assert_eq!(r(&[2, 3, 4], &[-2, 1, 1]), k(&[2, 3, 4, 1, 1]));
        assert_eq!(r(&[2, 3, 4], &[-3, 4]), k(&[6, 4]));
        assert_eq!(r(&[2, 3, 4, 5], &[-3, -3]), k(&[6, 20]));
        assert_eq!(r(&[2, 3, 4], &[0, -3]), k(&[2, 12]));
        assert_eq!(r(&[2, 3, 4], &[-3, -2]), k(&[6, 4]));
        assert_eq!(r(&[2, 3, 4], &[-4, 1, 2, -2]), k(&[1, 2, 3, 4]));
        assert_eq!(r(&[2, 3, 4], &[2, -4, -1, 3, -2]), k(&[2, 1, 3, 4]));
        assert_eq!(infer_reshape(&k(&[2, 0]), &[0, 0], true).unwrap(), k(&[0, 0]));
        // The same function on concrete sizes, as the reference kernel runs it.
        assert_eq!(infer_reshape::<usize>(&[0, 3], &[-1, 0], false).unwrap(), vec![0, 3]);
        assert_eq!(infer_reshape::<usize>(&[2, 3, 4], &[2, -4, -1, 3, 4], false).unwrap(), vec![2, 1, 3, 4]);
    }

    #[test]
    fn reshape_any_dims() {
        assert_eq!(infer_reshape(&[Any, K(4)], &[-1], false).unwrap(), vec![Any]);
        assert_eq!(infer_reshape(&[Any, K(4)], &[0, 2, 2], false).unwrap(), vec![Any, K(2), K(2)]);
        assert_eq!(infer_reshape(&[Any, K(4)], &[0, -1], false).unwrap(), vec![Any, K(4)]);
        assert_eq!(infer_reshape(&[K(8), Any], &[2, -1], false).unwrap(), vec![K(2), Any]);
        assert_eq!(infer_reshape(&[Any, K(6)], &[-4, 2, -1, -2], false).unwrap(), vec![K(2), Any, K(6)]);
    }

    #[test]
    fn reshape_errors() {
        let e = |x: &[i64], n: &[i64], z| infer_reshape(&k(x), n, z).unwrap_err().to_string();
        assert!(e(&[2, 3], &[4, 2], false).contains("6 elements"));
        assert!(e(&[2, 3], &[-1, -1], false).contains("more than one -1"));
        assert!(e(&[2, 3], &[4, -1], false).contains("cannot infer"));
        assert!(e(&[2, 3], &[0, 0, 0], false).contains("rank 2"));
        assert!(infer_reshape(&k(&[2, 3]), &[-5], false).is_err());
        assert!(infer_reshape(&k(&[6]), &[-4, 4, -1], false).is_err());
        assert!(infer_reshape(&k(&[6]), &[-4, -1, -1], false).is_err());
        assert!(infer_reshape(&k(&[6]), &[-4, 2], false).is_err());
        assert!(infer_reshape(&k(&[0]), &[-1, 0], true).is_err());
        assert!(infer_reshape::<usize>(&[2, 3, 4], &[0, 0, 0, 0], false).is_err());
    }

    #[test]
    fn permutations() {
        assert_eq!(permutation(3, &Some(vec![1, 0, 2])).unwrap(), vec![1, 0, 2]);
        assert_eq!(permutation(3, &Some(vec![-1, 0, 1])).unwrap(), vec![2, 0, 1]);
        assert_eq!(permutation(2, &Some(vec![])).unwrap(), vec![1, 0]);
        assert!(permutation(3, &Some(vec![0, 0, 1])).is_err());
        assert!(permutation(3, &Some(vec![0, 1])).is_err());
    }
}
