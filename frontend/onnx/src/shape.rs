//! Static shapes as the importer tracks them (`None` is a dimension known only at run time,
//! Relay's `?`), and how they print in Relay text.

use relay_devices::DType;

/// A tensor shape: one entry per axis, `None` where the size is dynamic.
pub type Dims = Vec<Option<i64>>;

/// NumPy (ONNX multidirectional) broadcasting of two shapes.
///
/// # Errors
/// Two known sizes that differ and are not 1.
pub fn broadcast(a: &[Option<i64>], b: &[Option<i64>]) -> Result<Dims, String> {
    let rank = a.len().max(b.len());
    let at = |s: &[Option<i64>], i: usize| if i + s.len() < rank { Some(1) } else { s[i + s.len() - rank] };
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (Some(1), d) | (d, Some(1)) => Ok(d),
            (Some(x), Some(y)) if x != y => Err(format!("shapes {a:?} and {b:?} do not broadcast")),
            (Some(x), _) | (_, Some(x)) => Ok(Some(x)),
            (None, None) => Ok(None),
        })
        .collect()
}

/// `axis` (negative counts from the end) as an index below `rank`.
///
/// # Errors
/// An axis outside `-rank..rank`.
pub fn normalize_axis(axis: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if (0..r).contains(&a) {
        Ok(a as usize)
    } else {
        Err(format!("axis {axis} is out of range for rank {rank}"))
    }
}

/// Every dimension, or an error naming `what` when one is dynamic.
pub fn known(dims: &[Option<i64>], what: &str) -> Result<Vec<i64>, String> {
    dims.iter().map(|d| d.ok_or_else(|| format!("{what} needs a static shape, got {}", show(dims)))).collect()
}

/// The product of `dims`, `None` if one is dynamic.
pub fn product(dims: &[Option<i64>]) -> Option<i64> {
    dims.iter().try_fold(1i64, |p, d| d.and_then(|d| p.checked_mul(d)))
}

/// One element of a shape tensor (the output of `Shape` and of the data-movement operators
/// applied to it) as the importer knows it.
#[derive(Clone, Debug, PartialEq)]
pub enum ShapeElement {
    /// A size known at import time.
    Known(i64),
    /// The size of axis `axis` of the tensor `of` (a Relay expression), known only at run time.
    Size { of: String, axis: usize },
}

impl ShapeElement {
    /// The size, if known at import time.
    pub fn known(&self) -> Option<i64> {
        match self {
            ShapeElement::Known(v) => Some(*v),
            ShapeElement::Size { .. } => None,
        }
    }
}

/// `(1, ?, 3)`: a shape as Relay's tensor types write it.
pub fn show(dims: &[Option<i64>]) -> String {
    let parts: Vec<String> = dims.iter().map(|d| d.map_or("?".to_string(), |d| d.to_string())).collect();
    format!("({})", parts.join(", "))
}

/// `Tensor[(1, ?, 3), float32]`.
pub fn tensor_type(dtype: DType, dims: &[Option<i64>]) -> String {
    format!("Tensor[{}, {dtype}]", show(dims))
}

/// `[1, 2, 3]`: an integer list attribute.
pub fn list(values: &[i64]) -> String {
    let parts: Vec<String> = values.iter().map(i64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast(&[Some(2), Some(1)], &[Some(3)]), Ok(vec![Some(2), Some(3)]));
        assert_eq!(broadcast(&[None, Some(4)], &[Some(1), Some(4)]), Ok(vec![None, Some(4)]));
        assert!(broadcast(&[Some(2)], &[Some(3)]).is_err());
        assert_eq!(tensor_type(DType::F32, &[Some(1), None]), "Tensor[(1, ?), float32]");
        assert_eq!(normalize_axis(-1, 3), Ok(2));
        assert!(normalize_axis(3, 3).is_err());
    }
}
