//! Helpers shared by the relations.

use relay_compiler::op::{RelType, TensorType};

/// Input `i` as a tensor: `Ok(None)` while its type is unknown, an error if it is not a tensor.
pub fn tensor_arg(args: &[RelType], i: usize) -> Result<Option<&TensorType>, String> {
    match args.get(i) {
        Some(RelType::Tensor(t)) => Ok(Some(t)),
        Some(RelType::Unknown) => Ok(None),
        Some(other) => Err(format!("argument {} must be a tensor, found `{other}`", i + 1)),
        None => Err(format!("missing argument {}", i + 1)),
    }
}

/// `axis` (negative counts from the end, as in NumPy) as an index below `rank`.
pub fn normalize_axis(axis: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(format!("axis {axis} is out of range for a tensor of rank {rank}"));
    }
    Ok(if axis < 0 { (axis + r) as usize } else { axis as usize })
}

/// Unwraps `Ok(Some(x))` to `x`, returns `Ok(None)` (defer) for `Ok(None)`, and propagates
/// errors.
#[macro_export]
macro_rules! known {
    ($e:expr) => {
        match $e? {
            Some(x) => x,
            None => return Ok(None),
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes() {
        assert_eq!(normalize_axis(-1, 3), Ok(2));
        assert_eq!(normalize_axis(0, 3), Ok(0));
        assert!(normalize_axis(3, 3).is_err());
        assert!(normalize_axis(-4, 3).is_err());
    }
}
