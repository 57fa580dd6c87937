//! What the non-maximum suppression operators share: their scalar operands (thresholds and
//! box limits, TVM v0.16 passes them as tensors), the order of boxes by score and the
//! intersection over union of two boxes.

use crate::error::KernelError;
use crate::kernels::num::Num;
use crate::operator::{shape_text, DTypeSet, ShapeDim};
use crate::ops::nn::converted;
use relay_devices::{DType, Tensor};
use std::cmp::Ordering;

/// Errors unless `shape` is that of a scalar operand: 0-d, or one element `(1)` (what
/// ONNX graphs hold).
///
/// # Errors
/// [`KernelError::Shape`] naming the operand `what` of operator `op`.
pub(crate) fn check_scalar<D: ShapeDim>(op: &str, what: &str, shape: &[D]) -> Result<(), KernelError> {
    match shape {
        [] => Ok(()),
        [n] if n.value().is_none_or(|n| n == 1) => Ok(()),
        _ => Err(KernelError::Shape(format!(
            "{op}: `{what}` must be a scalar (shape () or (1)), found {}",
            shape_text(shape)
        ))),
    }
}

/// Errors unless operand `what` of `op` has a dtype of `set`.
///
/// # Errors
/// [`KernelError::DType`] naming the operand and what it must be.
pub(crate) fn check_dtype(op: &str, what: &str, set: DTypeSet, d: DType) -> Result<(), KernelError> {
    if set.contains(d) {
        Ok(())
    } else {
        Err(KernelError::DType(format!("{op}: `{what}` must be {}, found `{d}`", set.describe())))
    }
}

/// The value of a scalar operand (see [`check_scalar`]), converted to `T`.
///
/// # Errors
/// [`KernelError::Shape`] unless the tensor holds exactly one number.
pub(crate) fn scalar<T: Num>(t: &Tensor, what: &str) -> Result<T, KernelError> {
    match converted::<T>(t)?.as_slice() {
        [v] => Ok(*v),
        _ => Err(KernelError::Shape(format!(
            "`{what}` must hold one value, found shape {}",
            shape_text(t.shape())
        ))),
    }
}

/// A box position or count as the operators' `int32` results hold it.
///
/// # Errors
/// [`KernelError::Shape`] beyond `i32::MAX` boxes.
pub(crate) fn index32(i: usize) -> Result<i32, KernelError> {
    i32::try_from(i).map_err(|_| KernelError::Shape(format!("box {i} does not fit an int32 index")))
}

/// The positions of `scores` ordered by score, highest first, equal scores in position order
/// (a stable sort, as TVM's CPU `argsort` and onnxruntime order them); NaN scores last.
pub(crate) fn by_score(scores: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    // `total_cmp` is a total order (a NaN-aware comparison is needed: sorting by a partial
    // one may panic); NaN sorts after every number.
    let key = |i: usize| if scores[i].is_nan() { f64::NEG_INFINITY } else { scores[i] };
    order.sort_by(|&a, &b| match (scores[a].is_nan(), scores[b].is_nan()) {
        (false, true) => Ordering::Less,
        (true, false) => Ordering::Greater,
        _ => key(b).total_cmp(&key(a)),
    });
    order
}

/// A box by two opposite corners `(a0, b0, a1, b1)` in either order, as TVM and ONNX
/// (`center_point_box = 0`) accept them: the axis-aligned rectangle `[min, max]` per axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Corners {
    /// The low and high coordinate on the first axis.
    first: [f64; 2],
    /// The low and high coordinate on the second axis.
    second: [f64; 2],
}

impl Corners {
    /// The rectangle of four consecutive coordinates `(a0, b0, a1, b1)`.
    pub(crate) fn new([a0, b0, a1, b1]: [f64; 4]) -> Corners {
        Corners { first: [a0.min(a1), a0.max(a1)], second: [b0.min(b1), b0.max(b1)] }
    }

    /// The area; 0 for a degenerate (line or point) box.
    fn area(self) -> f64 {
        (self.first[1] - self.first[0]) * (self.second[1] - self.second[0])
    }

    /// The intersection over union with `other` (TVM's `calculate_overlap`): 0 for boxes that
    /// do not overlap and where the union has no area (two degenerate boxes: TVM's `0 / 0`
    /// case). A NaN coordinate never panics: it gives NaN, which passes no threshold, or is
    /// passed over by `min`/`max`.
    pub(crate) fn iou(self, other: Corners) -> f64 {
        let overlap = |a: [f64; 2], b: [f64; 2]| (a[1].min(b[1]) - a[0].max(b[0])).max(0.0);
        let inter = overlap(self.first, other.first) * overlap(self.second, other.second);
        let union = self.area() + other.area() - inter;
        if union > 0.0 {
            inter / union
        } else if union.is_nan() {
            f64::NAN
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::Dim;

    #[test]
    fn score_order_is_stable_and_puts_nan_last() {
        assert_eq!(by_score(&[0.5, f64::NAN, 0.9, 0.5, f64::NEG_INFINITY]), vec![2, 0, 3, 4, 1]);
        assert_eq!(by_score(&[]), Vec::<usize>::new());
    }

    #[test]
    fn iou_of_either_corner_order_and_degenerate_boxes() {
        let a = Corners::new([0.0, 0.0, 2.0, 2.0]);
        let b = Corners::new([3.0, 3.0, 1.0, 1.0]);
        assert!((a.iou(b) - 1.0 / 7.0).abs() < 1e-12);
        assert_eq!(a.iou(a), 1.0);
        let point = Corners::new([1.0, 1.0, 1.0, 1.0]);
        assert_eq!(point.iou(point), 0.0);
        assert_eq!(a.iou(point), 0.0);
        assert_eq!(a.iou(Corners::new([5.0, 5.0, 6.0, 6.0])), 0.0);
        let v = a.iou(Corners::new([f64::NAN, 0.0, 1.0, 1.0]));
        assert!(v.is_nan() || (0.0..=1.0).contains(&v), "{v}");
    }

    #[test]
    fn scalar_operands() {
        assert!(check_scalar::<usize>("op", "t", &[]).is_ok());
        assert!(check_scalar("op", "t", &[Dim::Any]).is_ok());
        let err = check_scalar::<usize>("op", "t", &[2]).unwrap_err();
        assert!(err.to_string().contains("`t` must be a scalar"), "{err}");
        assert_eq!(scalar::<f64>(&Tensor::scalar(0.5f32), "t").unwrap(), 0.5);
        assert!(scalar::<i64>(&Tensor::from_vec(vec![0], Vec::<i64>::new()).unwrap(), "t").is_err());
    }
}
