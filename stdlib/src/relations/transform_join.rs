//! Joining and splitting along an axis (TVM `src/relay/op/tensor/transform.cc`):
//! `concatenate`, `stack` (a tuple of tensors in, one tensor out) and `split` (one tensor in,
//! a tuple out).

use super::attr_util::{add_dims, dim_from_len, merge_dims, show_dim};
use super::{normalize_axis, tensor_arg};
use crate::known;
use relay_compiler::ir::{AttrValue, Dim};
use relay_compiler::op::{AttrReader, RelType, RelationResult, TensorType};

/// Input `i` as a non-empty tuple of tensors: `Ok(None)` while any field is unknown.
fn tensor_tuple_arg(args: &[RelType], i: usize) -> Result<Option<Vec<&TensorType>>, String> {
    let fields = match args.get(i) {
        Some(RelType::Tuple(fields)) => fields,
        Some(RelType::Unknown) => return Ok(None),
        Some(other) => return Err(format!("expects a tuple of tensors, found `{other}`")),
        None => return Err(format!("missing argument {}", i + 1)),
    };
    if fields.is_empty() {
        return Err("expects at least one tensor, found `()`".to_string());
    }
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        match f {
            RelType::Tensor(t) => out.push(t),
            RelType::Unknown => return Ok(None),
            other => return Err(format!("expects a tuple of tensors, found a field of type `{other}`")),
        }
    }
    Ok(Some(out))
}

/// Checks that every tensor has the first one's rank and dtype.
fn check_alike(ts: &[&TensorType]) -> Result<(), String> {
    let first = ts[0];
    for t in &ts[1..] {
        if t.dtype != first.dtype {
            return Err(format!("tensor dtypes differ: `{first}` and `{t}`"));
        }
        if t.rank() != first.rank() {
            return Err(format!("tensor ranks differ: `{first}` and `{t}`"));
        }
    }
    Ok(())
}

/// Dimension `i` shared by all of `ts`: the known size if any is known (all known sizes must
/// agree), else `?`.
fn common_dim(ts: &[&TensorType], i: usize) -> Result<Dim, String> {
    let mut d = Dim::Any;
    for t in ts {
        d = merge_dims(d, t.shape[i])
            .ok_or_else(|| format!("dimension {i} differs: `{}` and `{t}`", ts[0]))?;
    }
    Ok(d)
}

/// `concatenate((t1, t2, ...), axis=0)`: tensors of one dtype and rank that agree on every
/// dimension but `axis`, whose sizes add up (`?` if any is `?`).
pub fn concatenate_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let ts = known!(tensor_tuple_arg(args, 0));
    check_alike(&ts)?;
    let rank = ts[0].rank();
    if rank == 0 {
        return Err(format!("cannot concatenate scalars: `{}`", ts[0]));
    }
    let axis = normalize_axis(attrs.int("axis", 0)?, rank)?;
    let mut shape = Vec::with_capacity(rank);
    for i in 0..rank {
        shape.push(if i == axis {
            ts.iter().try_fold(Dim::Known(0), |acc, t| add_dims(acc, t.shape[axis]))?
        } else {
            common_dim(&ts, i)?
        });
    }
    Ok(Some(RelType::tensor(shape, ts[0].dtype)))
}

/// `stack((t1, ..., tn), axis=0)`: tensors of one type joined along a new dimension of size
/// `n` at `axis` (`-rank-1..=rank`).
pub fn stack_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let ts = known!(tensor_tuple_arg(args, 0));
    check_alike(&ts)?;
    let rank = ts[0].rank();
    let axis = attrs.int("axis", 0)?;
    let at = normalize_axis(axis, rank + 1)
        .map_err(|_| format!("axis {axis} is out of range for stacking tensors of rank {rank}"))?;
    let mut shape = (0..rank).map(|i| common_dim(&ts, i)).collect::<Result<Vec<_>, _>>()?;
    shape.insert(at, dim_from_len(ts.len())?);
    Ok(Some(RelType::tensor(shape, ts[0].dtype)))
}

/// The sizes of the parts `split` cuts a dimension of size `dim` into:
/// `indices_or_sections` is either a number of equal sections (which must divide `dim`) or
/// the ascending positive indices at which to cut (the last below `dim`).
pub fn split_sizes(dim: Dim, spec: &AttrValue) -> Result<Vec<Dim>, String> {
    match spec {
        AttrValue::Int(n) if *n > 0 => {
            let n_parts = usize::try_from(*n).map_err(|_| format!("too many sections: {n}"))?;
            let part = match dim {
                Dim::Known(d) if d % n == 0 => Dim::Known(d / n),
                Dim::Known(d) => return Err(format!("{n} sections do not divide dimension {d} evenly")),
                Dim::Any => Dim::Any,
            };
            Ok(vec![part; n_parts])
        }
        AttrValue::Int(n) => Err(format!("the number of sections must be positive, found {n}")),
        AttrValue::List(items) => {
            let mut sizes = Vec::with_capacity(items.len() + 1);
            let mut begin = 0;
            for item in items {
                let AttrValue::Int(at) = *item else {
                    return Err("indices_or_sections must be an integer or a list of integers".to_string());
                };
                if at <= begin {
                    return Err(format!(
                        "split indices must be ascending and positive, found {at} after {begin}"
                    ));
                }
                sizes.push(Dim::Known(at - begin));
                begin = at;
            }
            sizes.push(match dim {
                Dim::Known(d) if begin < d => Dim::Known(d - begin),
                Dim::Known(d) => {
                    return Err(format!("split index {begin} is not below the dimension's size {d}"))
                }
                Dim::Any => Dim::Any,
            });
            Ok(sizes)
        }
        _ => Err("indices_or_sections must be an integer or a list of integers".to_string()),
    }
}

/// `split(data, indices_or_sections, axis=0)`: a tuple of tensors that are `data` cut along
/// `axis` (see [`split_sizes`]).
pub fn split_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    let spec = attrs.get("indices_or_sections").ok_or("attribute `indices_or_sections` is required")?;
    if t.rank() == 0 {
        return Err(format!("cannot split a scalar: `{t}`"));
    }
    let axis = normalize_axis(attrs.int("axis", 0)?, t.rank())?;
    let sizes = split_sizes(t.shape[axis], spec)
        .map_err(|e| format!("{e} (axis {axis} of `{t}`, size {})", show_dim(t.shape[axis])))?;
    let parts = sizes
        .into_iter()
        .map(|d| {
            let mut shape = t.shape.clone();
            shape[axis] = d;
            RelType::tensor(shape, t.dtype)
        })
        .collect();
    Ok(Some(RelType::Tuple(parts)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Dim::{Any, Known as K};

    fn list(v: &[i64]) -> AttrValue {
        AttrValue::List(v.iter().map(|&i| AttrValue::Int(i)).collect())
    }

    #[test]
    fn split_sections() {
        assert_eq!(split_sizes(K(6), &AttrValue::Int(3)), Ok(vec![K(2); 3]));
        assert_eq!(split_sizes(Any, &AttrValue::Int(2)), Ok(vec![Any; 2]));
        assert!(split_sizes(K(7), &AttrValue::Int(3)).unwrap_err().contains("evenly"));
        assert!(split_sizes(K(6), &AttrValue::Int(0)).is_err());
    }

    #[test]
    fn split_indices() {
        assert_eq!(split_sizes(K(10), &list(&[2, 5])), Ok(vec![K(2), K(3), K(5)]));
        assert_eq!(split_sizes(K(10), &list(&[])), Ok(vec![K(10)]));
        assert_eq!(split_sizes(Any, &list(&[1, 4])), Ok(vec![K(1), K(3), Any]));
        assert!(split_sizes(K(10), &list(&[5, 2])).unwrap_err().contains("ascending"));
        assert!(split_sizes(K(10), &list(&[0, 2])).is_err());
        assert!(split_sizes(K(4), &list(&[2, 4])).unwrap_err().contains("not below"));
        assert!(split_sizes(K(4), &AttrValue::Str("x".into())).is_err());
    }

    #[test]
    fn common_dims() {
        let a = TensorType::new(vec![K(2), Any], relay_devices::DType::F32);
        let b = TensorType::new(vec![Any, K(3)], relay_devices::DType::F32);
        let c = TensorType::new(vec![K(4), K(3)], relay_devices::DType::F32);
        assert_eq!(common_dim(&[&a, &b], 0), Ok(K(2)));
        assert_eq!(common_dim(&[&a, &b], 1), Ok(K(3)));
        assert!(common_dim(&[&a, &c], 0).is_err());
    }
}
