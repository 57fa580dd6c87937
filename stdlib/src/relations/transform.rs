//! Shape-changing transforms of one tensor (TVM `src/relay/op/tensor/transform.cc`):
//! `reshape`, `transpose`, `squeeze`, `expand_dims`, `nn.batch_flatten`, `broadcast_to`.

use super::attr_util::{mul_dims, required_ints, shape_attr, show_shape};
use super::{normalize_axis, tensor_arg};
use crate::known;
use relay_compiler::ir::Dim;
use relay_compiler::op::{AttrReader, RelType, RelationResult, TensorType};

/// The shape `reshape(data, newshape=...)` produces (TVM `InferNewShape`). Special values:
/// `0` copies the input dimension at the same position (unless `allowzero`, when it is a
/// size 0), `-1` is inferred from the remaining size (`?` if that involves a `?`), `-2` copies
/// all remaining input dimensions, `-3` merges two input dimensions, `-4, a, b` splits one
/// input dimension into `a` and `b` (one of them may be -1).
pub fn infer_reshape(ishape: &[Dim], newshape: &[i64], allowzero: bool) -> Result<Vec<Dim>, String> {
    let rank = ishape.len();
    let mut out: Vec<Dim> = vec![];
    // Input dimensions copied verbatim and output dimensions made from them: neither takes
    // part in inferring a -1.
    let mut used_in = vec![false; rank];
    let mut copied_out: Vec<bool> = vec![];
    let mut infer_at: Option<usize> = None;
    let mut src = 0usize;
    let input = |src: usize, what: &str| {
        ishape
            .get(src)
            .copied()
            .ok_or_else(|| format!("{what} refers to input dimension {src}, but the input has rank {rank}"))
    };
    let mut i = 0;
    while i < newshape.len() {
        let v = newshape[i];
        match v {
            1.. => {
                out.push(Dim::Known(v));
                copied_out.push(false);
                src += 1;
            }
            0 if allowzero => {
                out.push(Dim::Known(0));
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
                    return Err(format!("newshape {newshape:?} has more than one -1"));
                }
                infer_at = Some(out.len());
                out.push(Dim::Known(1));
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
                out.push(mul_dims(d1, d2)?);
                copied_out.push(true);
            }
            -4 => {
                let (Some(&a), Some(&b)) = (newshape.get(i + 1), newshape.get(i + 2)) else {
                    return Err(format!("newshape value -4 must be followed by two values: {newshape:?}"));
                };
                let d0 = input(src, "newshape value -4")?;
                used_in[src] = true;
                src += 1;
                i += 2;
                out.extend(split_dim(d0, a, b)?);
                copied_out.extend([true, true]);
            }
            _ => return Err(format!("unsupported newshape value {v} in {newshape:?}")),
        }
        i += 1;
    }
    if let Some(at) = infer_at {
        out[at] = infer_minus_one(ishape, &used_in, &out, &copied_out, at)?;
    }
    check_same_size(ishape, &out)?;
    Ok(out)
}

/// The two dimensions `-4, a, b` splits `d0` into.
fn split_dim(d0: Dim, a: i64, b: i64) -> Result<[Dim; 2], String> {
    let bad = |x: i64| x == 0 || x < -1;
    if bad(a) || bad(b) || (a == -1 && b == -1) {
        return Err(format!("cannot split a dimension into ({a}, {b})"));
    }
    let other = |known: i64| match d0 {
        Dim::Known(n) if n % known == 0 => Ok(Dim::Known(n / known)),
        Dim::Known(n) => Err(format!("cannot split dimension {n} by {known}")),
        Dim::Any => Ok(Dim::Any),
    };
    match (a, b) {
        (-1, _) => Ok([other(b)?, Dim::Known(b)]),
        (_, -1) => Ok([Dim::Known(a), other(a)?]),
        _ => Ok([Dim::Known(a), Dim::Known(b)]),
    }
}

/// The value of the `-1` at `at`: the unused input size over the other free output sizes.
fn infer_minus_one(
    ishape: &[Dim],
    used_in: &[bool],
    out: &[Dim],
    copied_out: &[bool],
    at: usize,
) -> Result<Dim, String> {
    let mut total = Dim::Known(1);
    for (&d, _) in ishape.iter().zip(used_in).filter(|(_, &u)| !u) {
        total = mul_dims(total, d)?;
    }
    let mut divisor = Dim::Known(1);
    for (i, (&d, _)) in out.iter().zip(copied_out).enumerate().filter(|(_, (_, &c))| !c) {
        if i != at {
            divisor = mul_dims(divisor, d)?;
        }
    }
    match (total, divisor) {
        (Dim::Known(t), Dim::Known(q)) if q != 0 && t % q == 0 => Ok(Dim::Known(t / q)),
        (Dim::Known(t), Dim::Known(q)) => {
            Err(format!("cannot infer -1: {t} elements do not divide into parts of {q}"))
        }
        _ => Ok(Dim::Any),
    }
}

fn check_same_size(ishape: &[Dim], out: &[Dim]) -> Result<(), String> {
    let size = |s: &[Dim]| s.iter().try_fold(Dim::Known(1), |acc, &d| mul_dims(acc, d));
    if let (Dim::Known(a), Dim::Known(b)) = (size(ishape)?, size(out)?) {
        if a != b {
            return Err(format!(
                "cannot reshape {} ({a} elements) to {} ({b} elements)",
                show_shape(ishape),
                show_shape(out)
            ));
        }
    }
    Ok(())
}

/// `reshape(data, newshape=[...], allowzero=False)`: the same elements in a new shape (see
/// [`infer_reshape`]).
pub fn reshape_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    let newshape = required_ints(attrs, "newshape")?;
    let allowzero = attrs.bool("allowzero", false)?;
    let shape = infer_reshape(&t.shape, &newshape, allowzero).map_err(|e| format!("{e}: `{t}`"))?;
    Ok(Some(RelType::tensor(shape, t.dtype)))
}

/// `axes` as a permutation of `0..rank` (negative axes count from the end).
fn permutation(axes: &[i64], rank: usize) -> Result<Vec<usize>, String> {
    if axes.len() != rank {
        return Err(format!("axes {axes:?} must name each of the {rank} dimensions once"));
    }
    let mut seen = vec![false; rank];
    axes.iter()
        .map(|&a| {
            let i = normalize_axis(a, rank)?;
            if std::mem::replace(&mut seen[i], true) {
                return Err(format!("axis {a} appears twice in axes {axes:?}"));
            }
            Ok(i)
        })
        .collect()
}

/// `transpose(data, axes=[...])`: output dimension `i` is input dimension `axes[i]`; absent or
/// empty `axes` reverses the dimensions.
pub fn transpose_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    let perm = match attrs.ints("axes")? {
        Some(axes) if !axes.is_empty() => permutation(&axes, t.rank()).map_err(|e| format!("{e}: `{t}`"))?,
        _ => (0..t.rank()).rev().collect(),
    };
    Ok(Some(RelType::tensor(perm.iter().map(|&i| t.shape[i]).collect(), t.dtype)))
}

/// `squeeze(data, axis=None)`: removes the listed size-1 dimensions, or every dimension known
/// to be 1 when `axis` is absent (a `?` dimension is kept then; naming it in `axis` removes
/// it, checked at run time). Naming a dimension of another size is an error.
pub fn squeeze_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    let shape = match attrs.ints("axis")? {
        None => t.shape.iter().copied().filter(|&d| d != Dim::Known(1)).collect(),
        Some(axes) => {
            let mut drop = vec![false; t.rank()];
            for a in axes {
                let i = normalize_axis(a, t.rank()).map_err(|e| format!("{e}: `{t}`"))?;
                if let Dim::Known(n @ 0 | n @ 2..) = t.shape[i] {
                    return Err(format!("cannot squeeze axis {a} of size {n}: `{t}`"));
                }
                drop[i] = true;
            }
            t.shape.iter().zip(&drop).filter(|(_, &d)| !d).map(|(&s, _)| s).collect()
        }
    };
    Ok(Some(RelType::tensor(shape, t.dtype)))
}

/// `expand_dims(data, axis, num_newaxis=1)`: inserts `num_newaxis` dimensions of size 1 at
/// `axis`, which may be `-rank-1..=rank`.
pub fn expand_dims_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    if attrs.get("axis").is_none() {
        return Err("attribute `axis` is required".to_string());
    }
    let axis = attrs.int("axis", 0)?;
    let count = attrs.int("num_newaxis", 1)?;
    let count =
        usize::try_from(count).map_err(|_| format!("num_newaxis must not be negative, found {count}"))?;
    let at = normalize_axis(axis, t.rank() + 1)
        .map_err(|_| format!("axis {axis} is out of range for inserting into `{t}` (rank {})", t.rank()))?;
    let mut shape = t.shape.clone();
    shape.splice(at..at, std::iter::repeat_n(Dim::Known(1), count));
    Ok(Some(RelType::tensor(shape, t.dtype)))
}

/// `nn.batch_flatten(data)`: `[d0, d1, ..., dn]` to `[d0, d1 * ... * dn]`.
pub fn batch_flatten_rel(args: &[RelType], _: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    let Some((&batch, rest)) = t.shape.split_first() else {
        return Err(format!("expects a tensor of rank at least 1, found `{t}`"));
    };
    let flat = rest.iter().try_fold(Dim::Known(1), |acc, &d| mul_dims(acc, d))?;
    Ok(Some(RelType::tensor(vec![batch, flat], t.dtype)))
}

/// `broadcast_to(data, shape=[...])`: `data` broadcast (NumPy rules) to exactly `shape`.
/// TVM's attributes for it also carry a `dtype`, which it ignores, and so does this.
pub fn broadcast_to_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    let target = shape_attr(attrs, "shape")?;
    if crate::operator::broadcast(&[&t.shape, &target]).ok().as_ref() != Some(&target) {
        return Err(format!("cannot broadcast `{t}` to shape {}", show_shape(&target)));
    }
    Ok(Some(RelType::Tensor(TensorType::new(target, t.dtype))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Dim::{Any, Known as K};

    fn k(v: &[i64]) -> Vec<Dim> {
        v.iter().map(|&d| K(d)).collect()
    }

    #[test]
    fn reshape_special_values() {
        // TVM's documented examples.
        assert_eq!(infer_reshape(&k(&[2, 3, 4]), &[4, 0, 2], false), Ok(k(&[4, 3, 2])));
        assert_eq!(infer_reshape(&k(&[2, 3, 4]), &[2, 0, 0], false), Ok(k(&[2, 3, 4])));
        assert_eq!(infer_reshape(&k(&[2, 3, 4]), &[6, 1, -1], false), Ok(k(&[6, 1, 4])));
        assert_eq!(infer_reshape(&k(&[2, 3, 4]), &[3, -1, 8], false), Ok(k(&[3, 1, 8])));
        assert_eq!(infer_reshape(&k(&[2, 3, 4]), &[-1], false), Ok(k(&[24])));
        assert_eq!(infer_reshape(&k(&[2, 3, 4]), &[-2], false), Ok(k(&[2, 3, 4])));
        assert_eq!(infer_reshape(&k(&[2, 3, 4]), &[2, -2], false), Ok(k(&[2, 3, 4])));
        assert_eq!(infer_reshape(&k(&[2, 3, 4]), &[-2, 1, 1], false), Ok(k(&[2, 3, 4, 1, 1])));
        assert_eq!(infer_reshape(&k(&[2, 3, 4]), &[-3, 4], false), Ok(k(&[6, 4])));
        assert_eq!(infer_reshape(&k(&[2, 3, 4, 5]), &[-3, -3], false), Ok(k(&[6, 20])));
        assert_eq!(infer_reshape(&k(&[2, 3, 4]), &[0, -3], false), Ok(k(&[2, 12])));
        assert_eq!(infer_reshape(&k(&[2, 3, 4]), &[-3, -2], false), Ok(k(&[6, 4])));
        assert_eq!(infer_reshape(&k(&[2, 3, 4]), &[-4, 1, 2, -2], false), Ok(k(&[1, 2, 3, 4])));
        assert_eq!(infer_reshape(&k(&[2, 3, 4]), &[2, -4, -1, 3, -2], false), Ok(k(&[2, 1, 3, 4])));
        assert_eq!(infer_reshape(&k(&[2, 0]), &[0, 0], true), Ok(k(&[0, 0])));
    }

    #[test]
    fn reshape_any_dims() {
        assert_eq!(infer_reshape(&[Any, K(4)], &[-1], false), Ok(vec![Any]));
        assert_eq!(infer_reshape(&[Any, K(4)], &[0, 2, 2], false), Ok(vec![Any, K(2), K(2)]));
        assert_eq!(infer_reshape(&[Any, K(4)], &[0, -1], false), Ok(vec![Any, K(4)]));
        assert_eq!(infer_reshape(&[K(8), Any], &[2, -1], false), Ok(vec![K(2), Any]));
        assert_eq!(infer_reshape(&[Any, K(6)], &[-4, 2, -1, -2], false), Ok(vec![K(2), Any, K(6)]));
    }

    #[test]
    fn reshape_errors() {
        assert!(infer_reshape(&k(&[2, 3]), &[4, 2], false).unwrap_err().contains("6 elements"));
        assert!(infer_reshape(&k(&[2, 3]), &[-1, -1], false).unwrap_err().contains("more than one -1"));
        assert!(infer_reshape(&k(&[2, 3]), &[4, -1], false).unwrap_err().contains("cannot infer"));
        assert!(infer_reshape(&k(&[2, 3]), &[0, 0, 0], false).unwrap_err().contains("rank 2"));
        assert!(infer_reshape(&k(&[2, 3]), &[-5], false).is_err());
        assert!(infer_reshape(&k(&[6]), &[-4, 4, -1], false).is_err());
        assert!(infer_reshape(&k(&[6]), &[-4, -1, -1], false).is_err());
        assert!(infer_reshape(&k(&[6]), &[-4, 2], false).is_err());
        assert!(infer_reshape(&k(&[0]), &[-1, 0], true).is_err());
    }

    #[test]
    fn permutations() {
        assert_eq!(permutation(&[1, 0, 2], 3), Ok(vec![1, 0, 2]));
        assert_eq!(permutation(&[-1, 0, 1], 3), Ok(vec![2, 0, 1]));
        assert!(permutation(&[0, 0, 1], 3).is_err());
        assert!(permutation(&[0, 1], 3).is_err());
    }
}
