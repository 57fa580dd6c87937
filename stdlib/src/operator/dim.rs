//! Dimensions as shape functions see them: one shape function per operator serves the type
//! relation (symbolic [`Dim`]s, `?` allowed) and the reference kernel (concrete `usize`s).

use crate::error::KernelError;
use relay_compiler::ir::Dim;
use std::fmt::{Debug, Write};

/// A dimension a shape function can compute with: concrete (`usize`) or possibly unknown
/// ([`Dim`], where `?` is [`ShapeDim::value`] `None`).
pub trait ShapeDim: Copy + PartialEq + Debug {
    /// The dimension of known size `n`.
    fn known(n: usize) -> Self;
    /// The size, unless unknown until run time.
    fn value(self) -> Option<usize>;
    /// The number of elements of `shape` (a flattened length): unknown if any dimension is.
    ///
    /// # Errors
    /// [`KernelError::Shape`] when the count overflows.
    fn product(shape: &[Self]) -> Result<Self, KernelError>;
    /// The dimension of size `n`, where `None` is a size only the input *values* give
    /// (`argwhere`'s row count, a `dyn.*` operator's shape operand): `?` for the relation. A
    /// concrete shape has no `?`, so for `usize` `None` is an error; the operator's
    /// [`Operator::output_shapes`](crate::operator::Operator::output_shapes) passes the size
    /// it read from the values instead.
    ///
    /// # Errors
    /// [`KernelError::Shape`] for `None` as a `usize`.
    fn maybe(n: Option<usize>) -> Result<Self, KernelError>;
}

/// The element count of a concrete shape, or an overflow error naming it.
fn count(shape: &[usize]) -> Result<usize, KernelError> {
    let text = || KernelError::Shape(format!("the element count of {} overflows", shape_text(shape)));
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).ok_or_else(text)
}

impl ShapeDim for usize {
    fn known(n: usize) -> usize {
        n
    }
    fn value(self) -> Option<usize> {
        Some(self)
    }
    fn product(shape: &[usize]) -> Result<usize, KernelError> {
        count(shape)
    }
    fn maybe(n: Option<usize>) -> Result<usize, KernelError> {
        n.ok_or_else(|| KernelError::Shape("a size that depends on input values was not given".into()))
    }
}

impl ShapeDim for Dim {
    fn known(n: usize) -> Dim {
        Dim::Known(n as i64)
    }
    fn value(self) -> Option<usize> {
        match self {
            Dim::Known(n) => usize::try_from(n).ok(),
            Dim::Any => None,
        }
    }
    fn product(shape: &[Dim]) -> Result<Dim, KernelError> {
        match shape.iter().map(|d| d.value()).collect::<Option<Vec<usize>>>() {
            Some(sizes) => Ok(Dim::known(count(&sizes)?)),
            None => Ok(Dim::Any),
        }
    }
    fn maybe(n: Option<usize>) -> Result<Dim, KernelError> {
        Ok(n.map_or(Dim::Any, Dim::known))
    }
}

/// `shape` as Relay writes it: `(2, ?, 3)`.
pub fn shape_text<D: ShapeDim>(shape: &[D]) -> String {
    let mut s = String::from("(");
    for (i, d) in shape.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        match d.value() {
            Some(n) => {
                let _ = write!(s, "{n}");
            }
            None => s.push('?'),
        }
    }
    s.push(')');
    s
}

/// NumPy broadcasting of several shapes (TVM `BroadcastRel`): aligned at the right, each
/// dimension equal or 1. A `?` broadcast with a known `k > 1` is `k` (the run-time check
/// holds it to 1 or `k`); with 1 or `?` it stays `?`.
///
/// # Errors
/// [`KernelError::Shape`] naming the shapes when two known dimensions differ and neither is 1.
pub fn broadcast<D: ShapeDim>(shapes: &[&[D]]) -> Result<Vec<D>, KernelError> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![D::known(1); rank];
    for s in shapes {
        for (k, &d) in s.iter().enumerate() {
            let slot = &mut out[rank - s.len() + k];
            *slot = match (slot.value(), d.value()) {
                (Some(1), _) => d,
                (_, Some(1)) => *slot,
                (Some(p), Some(q)) if p == q => *slot,
                (None, Some(_)) => d,
                (_, None) => *slot,
                (Some(_), Some(_)) => {
                    let texts: Vec<String> = shapes.iter().map(|s| shape_text(s)).collect();
                    return Err(KernelError::Shape(format!(
                        "cannot broadcast shapes {}",
                        texts.join(" and ")
                    )));
                }
            };
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Dim::{Any, Known as K};

    #[test]
    fn numpy_rules_on_concrete_shapes() {
        assert_eq!(broadcast::<usize>(&[&[2, 1, 3], &[4, 1]]).unwrap(), vec![2, 4, 3]);
        assert_eq!(broadcast::<usize>(&[&[0], &[1]]).unwrap(), vec![0]);
        assert_eq!(broadcast::<usize>(&[&[], &[5]]).unwrap(), vec![5]);
        let err = broadcast::<usize>(&[&[2, 3], &[4]]).unwrap_err();
        assert_eq!(err.to_string(), "shape error: cannot broadcast shapes (2, 3) and (4)");
    }

    #[test]
    fn unknown_dims_take_the_known_size_unless_it_is_one() {
        assert_eq!(broadcast(&[&[Any][..], &[K(3)]]).unwrap(), vec![K(3)]);
        assert_eq!(broadcast(&[&[Any][..], &[K(1)]]).unwrap(), vec![Any]);
        assert_eq!(broadcast(&[&[K(3)][..], &[Any]]).unwrap(), vec![K(3)]);
        assert_eq!(broadcast(&[&[Any, K(2)][..], &[Any, K(2)]]).unwrap(), vec![Any, K(2)]);
        assert_eq!(shape_text(&[K(2), Any]), "(2, ?)");
        assert_eq!((Dim::maybe(None), Dim::maybe(Some(2))), (Ok(Any), Ok(K(2))));
        assert!(usize::maybe(None).is_err() && usize::maybe(Some(2)) == Ok(2));
    }
}
