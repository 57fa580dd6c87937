//! Type relations (paper §3.2; TVM `TypeRelation`): an operator's output type as a function of
//! its input types and attributes.
//!
//! Relations see types through [`RelType`], a snapshot in which anything inference has not
//! determined yet is [`RelType::Unknown`]. A relation returns `Ok(None)` to wait until more is
//! known (the solver retries it when other constraints make progress), `Ok(Some(t))` with the
//! output type, or `Err(message)` naming the offending types, which becomes a diagnostic at
//! the call.

use super::AttrReader;
use crate::ir::Dim;
use relay_devices::DType;
use std::fmt;

/// A tensor type: shape and element type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// Dimensions, outermost first; `Dim::Any` for `?`.
    pub shape: Vec<Dim>,
    /// Element type.
    pub dtype: DType,
}

impl TensorType {
    /// A tensor type of the given shape and dtype.
    pub fn new(shape: Vec<Dim>, dtype: DType) -> TensorType {
        TensorType { shape, dtype }
    }

    /// A 0-d tensor (a Relay scalar).
    pub fn scalar(dtype: DType) -> TensorType {
        TensorType { shape: vec![], dtype }
    }

    /// Rank (number of dimensions).
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
}

/// A type as a relation sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum RelType {
    /// Not known yet.
    Unknown,
    /// A tensor.
    Tensor(TensorType),
    /// A tuple of (possibly partly unknown) types.
    Tuple(Vec<RelType>),
    /// Any other type (function, ADT, reference), printed for error messages.
    Other(String),
}

impl RelType {
    /// Shorthand for a tensor type.
    pub fn tensor(shape: Vec<Dim>, dtype: DType) -> RelType {
        RelType::Tensor(TensorType::new(shape, dtype))
    }

    /// Whether nothing in the type is unknown.
    pub fn is_known(&self) -> bool {
        match self {
            RelType::Unknown => false,
            RelType::Tuple(fields) => fields.iter().all(RelType::is_known),
            _ => true,
        }
    }
}

/// What a relation returns: `Ok(None)` to defer, `Ok(Some(output))`, or an error message.
pub type RelationResult = Result<Option<RelType>, String>;

/// A type relation: `(input types, attributes) -> output type`.
pub type Relation = fn(&[RelType], &AttrReader) -> RelationResult;

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.shape.is_empty() {
            return write!(f, "{}", self.dtype);
        }
        f.write_str("Tensor[(")?;
        for (i, d) in self.shape.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match d {
                Dim::Known(n) => write!(f, "{n}")?,
                Dim::Any => f.write_str("?")?,
            }
        }
        write!(f, "), {}]", self.dtype)
    }
}

impl fmt::Display for RelType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RelType::Unknown => f.write_str("_"),
            RelType::Tensor(t) => t.fmt(f),
            RelType::Tuple(fields) => {
                f.write_str("(")?;
                for (i, t) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    t.fmt(f)?;
                }
                if fields.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
            RelType::Other(s) => f.write_str(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_the_text_format() {
        let t = RelType::tensor(vec![Dim::Known(2), Dim::Any], DType::F32);
        assert_eq!(t.to_string(), "Tensor[(2, ?), float32]");
        assert_eq!(RelType::tensor(vec![], DType::BOOL).to_string(), "bool");
        assert_eq!(RelType::Tuple(vec![t.clone()]).to_string(), "(Tensor[(2, ?), float32],)");
        assert!(!RelType::Tuple(vec![t, RelType::Unknown]).is_known());
    }
}
