//! NumPy-broadcasting relations (TVM `BroadcastRel`, `BroadcastCompRel`).

use super::tensor_arg;
use crate::known;
use relay_compiler::ir::Dim;
use relay_compiler::op::{AttrReader, RelType, RelationResult, TensorType};
use relay_devices::{DType, DTypeCode};

/// The broadcast of two shapes, aligned at the right. A `?` dimension broadcast with a known
/// size `k > 1` is `k` (it must be 1 or `k`); with 1 or `?` it stays `?`.
pub fn broadcast_shapes(a: &[Dim], b: &[Dim]) -> Option<Vec<Dim>> {
    let n = a.len().max(b.len());
    let mut out = vec![Dim::Known(1); n];
    for (i, o) in out.iter_mut().enumerate() {
        let x = if i + a.len() >= n { a[i + a.len() - n] } else { Dim::Known(1) };
        let y = if i + b.len() >= n { b[i + b.len() - n] } else { Dim::Known(1) };
        *o = match (x, y) {
            (Dim::Known(p), Dim::Known(q)) if p == q => x,
            (Dim::Known(1), _) => y,
            (_, Dim::Known(1)) => x,
            (Dim::Any, Dim::Any) => Dim::Any,
            (Dim::Any, Dim::Known(_)) => y,
            (Dim::Known(_), Dim::Any) => x,
            (Dim::Known(_), Dim::Known(_)) => return None,
        };
    }
    Some(out)
}

fn broadcast_pair(args: &[RelType]) -> Result<Option<(TensorType, Vec<Dim>)>, String> {
    let a = known!(tensor_arg(args, 0));
    let b = known!(tensor_arg(args, 1));
    if a.dtype != b.dtype {
        return Err(format!("operand dtypes differ: `{a}` and `{b}`"));
    }
    match broadcast_shapes(&a.shape, &b.shape) {
        Some(shape) => Ok(Some((a.clone(), shape))),
        None => Err(format!("incompatible broadcast: {a} and {b}")),
    }
}

/// `add`, `subtract`, `multiply`, `divide`, `power`, `maximum`, `minimum`, `floor_divide`,
/// `floor_mod`: same dtype in and out, broadcast shape.
pub fn broadcast_rel(args: &[RelType], _: &AttrReader) -> RelationResult {
    let (a, shape) = known!(broadcast_pair(args));
    Ok(Some(RelType::tensor(shape, a.dtype)))
}

/// `equal`, `less`, ...: broadcast shape, `bool` result.
pub fn broadcast_bool_rel(args: &[RelType], _: &AttrReader) -> RelationResult {
    let (_, shape) = known!(broadcast_pair(args));
    Ok(Some(RelType::tensor(shape, DType::BOOL)))
}

/// `logical_and`, `logical_or`: bool operands, broadcast shape.
pub fn logical_rel(args: &[RelType], _: &AttrReader) -> RelationResult {
    let (a, shape) = known!(broadcast_pair(args));
    if a.dtype.code != DTypeCode::Bool {
        return Err(format!("expects bool operands, found `{a}`"));
    }
    Ok(Some(RelType::tensor(shape, DType::BOOL)))
}

/// `where(cond, x, y)`: bool condition; `x` and `y` of one dtype; all three broadcast.
pub fn where_rel(args: &[RelType], _: &AttrReader) -> RelationResult {
    let c = known!(tensor_arg(args, 0));
    let x = known!(tensor_arg(args, 1));
    let y = known!(tensor_arg(args, 2));
    if c.dtype.code != DTypeCode::Bool {
        return Err(format!("the condition must be a bool tensor, found `{c}`"));
    }
    if x.dtype != y.dtype {
        return Err(format!("branch dtypes differ: `{x}` and `{y}`"));
    }
    let xy =
        broadcast_shapes(&x.shape, &y.shape).ok_or_else(|| format!("incompatible broadcast: {x} and {y}"))?;
    let shape = broadcast_shapes(&c.shape, &xy)
        .ok_or_else(|| format!("incompatible broadcast: {c} and {}", TensorType::new(xy.clone(), x.dtype)))?;
    Ok(Some(RelType::tensor(shape, x.dtype)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Dim::{Any, Known as K};

    #[test]
    fn numpy_rules() {
        assert_eq!(broadcast_shapes(&[K(2), K(3)], &[K(3)]), Some(vec![K(2), K(3)]));
        assert_eq!(broadcast_shapes(&[K(2), K(1)], &[K(1), K(4)]), Some(vec![K(2), K(4)]));
        assert_eq!(broadcast_shapes(&[], &[K(5)]), Some(vec![K(5)]));
        assert_eq!(broadcast_shapes(&[K(0)], &[K(1)]), Some(vec![K(0)]));
        assert_eq!(broadcast_shapes(&[K(2), K(3)], &[K(4)]), None);
    }

    #[test]
    fn any_dims() {
        assert_eq!(broadcast_shapes(&[Any], &[K(3)]), Some(vec![K(3)]));
        assert_eq!(broadcast_shapes(&[Any], &[K(1)]), Some(vec![Any]));
        assert_eq!(broadcast_shapes(&[Any, K(2)], &[Any, K(2)]), Some(vec![Any, K(2)]));
    }
}
