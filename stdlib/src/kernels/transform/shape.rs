//! Operators that rearrange or relabel elements without computing on them: `reshape`,
//! `squeeze`, `expand_dims`, `nn.batch_flatten`, `transpose`, `broadcast_to`, `shape_of`
//! (TVM `src/relay/op/tensor/transform.cc`).

use crate::attrs::{
    ExpandDimsAttrs, InitOpAttrs, NoAttrs, ReshapeAttrs, ShapeOfAttrs, SqueezeAttrs, TransposeAttrs,
};
use crate::error::KernelError;
use crate::kernels::util::{any_type, args, copy_elements, ints, normalize_axis, only_output, to_size};
use crate::kernels::{Checked, Kernel};
use relay_devices::{shape_size, DType, Element, Scalar, Tensor};

/// Declares the shape-function half of a kernel whose output has the input's elements in the
/// input's row-major order under a new shape: dtype unchanged, kernel a plain copy.
macro_rules! relabel {
    ($(#[$doc:meta])* $name:ident = $op:literal, $attrs:ty, |$shape:ident, $a:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Kernel for $name {
            const NAME: &'static str = $op;
            type Attrs = $attrs;

            #[allow(unused_variables)]
            fn shapes(inputs: &[&[usize]], $a: &$attrs) -> Result<Vec<Vec<usize>>, KernelError> {
                let [$shape] = args(inputs)?;
                let out: Vec<usize> = $body?;
                Ok(vec![out])
            }

            fn dtypes(inputs: &[DType], _: &$attrs) -> Result<Vec<DType>, KernelError> {
                let [d] = args(inputs)?;
                Ok(vec![d])
            }

            fn compute(inputs: &[&Tensor], _: &$attrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                let [x] = args(inputs)?;
                copy_elements(x, only_output(outputs)?)
            }
        }
    };
}

relabel! {
    /// `reshape`: the elements under `newshape`, with TVM's special values (see
    /// [`ReshapeAttrs`]). Every dtype.
    Reshape = "reshape", ReshapeAttrs, |x, a| reshape_target(x, &a.newshape, a.allowzero)
}

relabel! {
    /// `squeeze`: the listed size-1 axes removed (all size-1 axes when `axis` is `None`).
    /// Squeezing an axis that is not 1 is an error. Every dtype.
    Squeeze = "squeeze", SqueezeAttrs, |x, a| squeezed(x, &a.axis)
}

relabel! {
    /// `expand_dims`: `num_newaxis` size-1 axes inserted at `axis`. Every dtype.
    ExpandDims = "expand_dims", ExpandDimsAttrs, |x, a| {
        let rank = x.len() as i64;
        if a.axis < -rank - 1 || a.axis > rank {
            return Err(KernelError::Attr(format!("axis {} is out of range for rank {rank} + 1", a.axis)));
        }
        let at = if a.axis < 0 { a.axis + rank + 1 } else { a.axis } as usize;
        let n = to_size(a.num_newaxis, "num_newaxis")?;
        let mut out = x[..at].to_vec();
        out.extend(std::iter::repeat_n(1, n));
        out.extend_from_slice(&x[at..]);
        Ok::<_, KernelError>(out)
    }
}

relabel! {
    /// `nn.batch_flatten`: `[n, d1, d2, ...]` to `[n, d1 * d2 * ...]`. Every dtype.
    BatchFlatten = "nn.batch_flatten", NoAttrs, |x, a| match x.split_first() {
        Some((&n, rest)) => Ok(vec![n, size(rest)?]),
        None => Err(KernelError::Shape("nn.batch_flatten needs at least one dimension".into())),
    }
}

/// Element count of `shape`, or an error if it overflows.
fn size(shape: &[usize]) -> Result<usize, KernelError> {
    shape_size(shape).ok_or_else(|| KernelError::Shape(format!("shape {shape:?} is too large")))
}

/// The output shape of `reshape(x, newshape)` (TVM `ReshapeRel` / `InferNewShape`).
fn reshape_target(x: &[usize], newshape: &[i64], allowzero: bool) -> Result<Vec<usize>, KernelError> {
    let bad = |msg: String| KernelError::Attr(format!("reshape {x:?} to {newshape:?}: {msg}"));
    let input_dim = |src: usize| x.get(src).copied().ok_or_else(|| bad(format!("no input dimension {src}")));
    let mut out = Vec::new();
    let mut src = 0;
    let mut inferred = None;
    let mut i = 0;
    while i < newshape.len() {
        match newshape[i] {
            v if v > 0 => out.push(v as usize),
            0 if allowzero => out.push(0),
            0 => out.push(input_dim(src)?),
            -1 if inferred.is_some() => return Err(bad("more than one -1".into())),
            -1 => {
                inferred = Some(out.len());
                out.push(1);
            }
            -2 => {
                out.extend_from_slice(x.get(src..).unwrap_or_default());
                src = x.len();
            }
            -3 => {
                let merged = input_dim(src)?.checked_mul(input_dim(src + 1)?);
                out.push(merged.ok_or_else(|| bad("dimension overflows".into()))?);
                src += 1;
            }
            -4 => {
                let d = input_dim(src)?;
                let (a, b) = match newshape.get(i + 1..i + 3) {
                    Some(&[a, b]) => (a, b),
                    _ => return Err(bad("-4 needs two values after it".into())),
                };
                let part = |known: i64| match usize::try_from(known) {
                    Ok(k) if k > 0 && d.is_multiple_of(k) => Ok(d / k),
                    _ => Err(bad(format!("cannot split {d} by {known}"))),
                };
                let (a, b) = match (a, b) {
                    (-1, b) => (part(b)?, b as usize),
                    (a, -1) => (a as usize, part(a)?),
                    (a, b) if a > 0 && b > 0 && (a as usize).checked_mul(b as usize) == Some(d) => {
                        (a as usize, b as usize)
                    }
                    _ => return Err(bad(format!("cannot split {d} into {a} x {b}"))),
                };
                out.extend([a, b]);
                i += 2;
            }
            v => return Err(bad(format!("invalid value {v}"))),
        }
        src += 1;
        i += 1;
    }
    let total = size(x)?;
    if let Some(k) = inferred {
        let known = size(&out)?;
        if known == 0 || !total.is_multiple_of(known) {
            return Err(bad("cannot infer the -1 dimension".into()));
        }
        out[k] = total / known;
    }
    if size(&out)? != total {
        return Err(bad("element counts differ".into()));
    }
    Ok(out)
}

/// The shape with the requested size-1 axes removed.
fn squeezed(x: &[usize], axis: &Option<Vec<i64>>) -> Result<Vec<usize>, KernelError> {
    let mut drop = vec![false; x.len()];
    match axis {
        None => drop.iter_mut().zip(x).for_each(|(d, &n)| *d = n == 1),
        Some(list) => {
            for &a in list {
                let k = normalize_axis(a, x.len())?;
                if x[k] != 1 {
                    return Err(KernelError::Shape(format!("cannot squeeze axis {a} of size {}", x[k])));
                }
                drop[k] = true;
            }
        }
    }
    Ok(x.iter().zip(&drop).filter(|(_, &d)| !d).map(|(&n, _)| n).collect())
}

/// `axes` normalised to a permutation of `0..rank` (reversal when `None`).
fn permutation(rank: usize, axes: &Option<Vec<i64>>) -> Result<Vec<usize>, KernelError> {
    let perm: Vec<usize> = match axes {
        None => (0..rank).rev().collect(),
        Some(list) => list.iter().map(|&a| normalize_axis(a, rank)).collect::<Result<_, _>>()?,
    };
    let mut seen = vec![false; rank];
    for &p in &perm {
        seen[p] = true;
    }
    if perm.len() != rank || seen.contains(&false) {
        return Err(KernelError::Attr(format!("axes {axes:?} are not a permutation of rank {rank}")));
    }
    Ok(perm)
}

/// `transpose`: output axis `k` is input axis `axes[k]`; `None` reverses. Every dtype.
#[derive(Debug)]
pub struct Transpose;

impl Kernel for Transpose {
    const NAME: &'static str = "transpose";
    type Attrs = TransposeAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &TransposeAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [x] = args(inputs)?;
        Ok(vec![permutation(x.len(), &attrs.axes)?.iter().map(|&p| x[p]).collect()])
    }

    fn dtypes(inputs: &[DType], _: &TransposeAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![d])
    }

    fn compute(
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

/// `broadcast_to`: the input repeated to `shape` under NumPy broadcasting. Every dtype.
#[derive(Debug)]
pub struct BroadcastTo;

/// The required `shape` attribute of `zeros`, `ones`, `full`, `broadcast_to` as sizes.
pub(super) fn init_shape(op: &str, attrs: &InitOpAttrs) -> Result<Vec<usize>, KernelError> {
    let shape = attrs.shape.as_ref().ok_or_else(|| KernelError::Attr(format!("{op} needs `shape`")))?;
    let shape = shape.iter().map(|&d| to_size(d, "a shape dimension")).collect::<Result<Vec<_>, _>>()?;
    size(&shape)?;
    Ok(shape)
}

impl Kernel for BroadcastTo {
    const NAME: &'static str = "broadcast_to";
    type Attrs = InitOpAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &InitOpAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [x] = args(inputs)?;
        let target = init_shape(Self::NAME, attrs)?;
        relay_devices::Layout::contiguous(x).broadcast_to(&target)?;
        Ok(vec![target])
    }

    fn dtypes(inputs: &[DType], _: &InitOpAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![d])
    }

    fn compute(
        inputs: &[&Tensor],
        _: &InitOpAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let out = only_output(outputs)?;
        let shape = out.shape().to_vec();
        any_type!(x.dtype(), T => {
            let view = x.view::<T>()?.broadcast_to(&shape)?;
            out.view_mut::<T>()?.copy_from(&view)?;
            Ok(())
        })
    }
}

/// `shape_of`: the input's shape as a 1-d tensor of `dtype` (an integer type, `int32` by
/// default). Any input dtype.
#[derive(Debug)]
pub struct ShapeOf;

impl Kernel for ShapeOf {
    const NAME: &'static str = "shape_of";
    type Attrs = ShapeOfAttrs;

    fn shapes(inputs: &[&[usize]], _: &ShapeOfAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [x] = args(inputs)?;
        Ok(vec![vec![x.len()]])
    }

    fn dtypes(inputs: &[DType], attrs: &ShapeOfAttrs) -> Result<Vec<DType>, KernelError> {
        let [_] = args(inputs)?;
        ints!(attrs.dtype, T => Ok(vec![attrs.dtype]))
    }

    fn compute(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reshape_special_values() {
        let x = [2, 3, 4];
        assert_eq!(reshape_target(&x, &[0, -1], false).unwrap(), vec![2, 12]);
        assert_eq!(reshape_target(&x, &[-3, 4], false).unwrap(), vec![6, 4]);
        assert_eq!(reshape_target(&x, &[-2], false).unwrap(), vec![2, 3, 4]);
        assert_eq!(reshape_target(&x, &[2, -4, -1, 3, 4], false).unwrap(), vec![2, 1, 3, 4]);
        assert_eq!(reshape_target(&[0, 3], &[0, 3], true).unwrap(), vec![0, 3]);
        assert!(reshape_target(&x, &[-1, -1], false).is_err());
        assert!(reshape_target(&x, &[5, -1], false).is_err());
        assert!(reshape_target(&x, &[0, 0, 0, 0], false).is_err());
        assert_eq!(reshape_target(&[0, 3], &[-1, 0], false).unwrap(), vec![0, 3]);
        assert!(reshape_target(&[3, 0], &[-1, 0], false).is_err());
    }
}
