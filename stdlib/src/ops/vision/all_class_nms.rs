//! `vision.all_class_non_max_suppression` (TVM `src/relay/op/vision/nms.cc`
//! `AllClassNMSRel`, `topi.vision.all_class_non_max_suppression`): non-maximum suppression
//! per batch and class, as ONNX `NonMaxSuppression` defines it.

use super::boxes::{by_score, check_dtype, check_scalar, scalar, Corners};
use crate::attrs::AllClassNonMaximumSuppressionAttrs;
use crate::error::KernelError;
use crate::kernels::util::args;
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use crate::ops::index::may_equal;
use crate::ops::nn::converted;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};
use std::cmp::Ordering;

/// `vision.all_class_non_max_suppression(boxes, scores, max_output_boxes_per_class,
/// iou_threshold, score_threshold, output_format="onnx")`: `boxes [batch, n, 4]` (two opposite
/// corners, either first: ONNX's `center_point_box = 0` form `(y1, x1, y2, x2)`), `scores
/// [batch, classes, n]`, and three scalar operands (an integer limit, two float thresholds).
/// Per batch and class, the boxes scoring above `score_threshold` (NaN never does) are taken
/// by score, highest first (ties in box order, as onnxruntime takes them), each kept unless
/// its intersection over union with a box already kept is greater than `iou_threshold`, until
/// `max_output_boxes_per_class` are kept (`<= 0`: no limit, as in TVM).
///
/// The tuple `(selected_indices int64 [batch * classes * n, 3], num_total_detections int64
/// [1])`, TVM's static shapes: the first `num_total_detections` rows are the kept boxes'
/// `(batch, class, box)`, by batch, then class, then the order kept; the rows below are 0.
/// ONNX's `[num_selected, 3]` is their slice. As in onnxruntime, and unlike TVM v0.16's CPU
/// kernel (`>=`, and negative scores never kept), a box is suppressed only above the
/// threshold and any score above `score_threshold` counts. Float boxes and scores of one
/// dtype.
#[derive(Debug)]
pub struct AllClassNonMaxSuppression;

/// The name, for messages.
const NAME: &str = "vision.all_class_non_max_suppression";

/// The boxes kept for one batch and class, in the order kept.
fn kept(corners: &[Corners], scores: &[f64], limit: Option<usize>, iou: f64, threshold: f64) -> Vec<usize> {
    let mut kept: Vec<usize> = Vec::new();
    for j in by_score(scores) {
        // NaN is incomparable: it neither passes the score threshold nor suppresses.
        if limit.is_some_and(|l| kept.len() >= l)
            || scores[j].partial_cmp(&threshold) != Some(Ordering::Greater)
        {
            // Ordered by score: no later box passes the threshold either.
            break;
        }
        if kept
            .iter()
            .all(|&other| corners[j].iou(corners[other]).partial_cmp(&iou) != Some(Ordering::Greater))
        {
            kept.push(j);
        }
    }
    kept
}

impl Operator for AllClassNonMaxSuppression {
    const NAME: &'static str = NAME;
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 5;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "non-maximum suppression per batch and class (ONNX NonMaxSuppression)";
    type Attrs = AllClassNonMaximumSuppressionAttrs;

    fn shapes<D: ShapeDim>(
        inputs: &[&[D]],
        _: &AllClassNonMaximumSuppressionAttrs,
    ) -> Result<Vec<Vec<D>>, KernelError> {
        let [boxes, scores, limit, iou, threshold] = args(inputs)?;
        let (b, c, n) = match (boxes, scores) {
            (&[b, n, four], &[sb, c, sn])
                if may_equal(four, D::known(4)) && may_equal(sb, b) && may_equal(sn, n) =>
            {
                (b, c, n)
            }
            _ => {
                return Err(KernelError::Shape(format!(
                    "{NAME} needs boxes (batch, n, 4) and scores (batch, classes, n), found {} and {}",
                    shape_text(boxes),
                    shape_text(scores)
                )))
            }
        };
        check_scalar(NAME, "max_output_boxes_per_class", limit)?;
        check_scalar(NAME, "iou_threshold", iou)?;
        check_scalar(NAME, "score_threshold", threshold)?;
        Ok(vec![vec![D::product(&[b, c, n])?, D::known(3)], vec![D::known(1)]])
    }

    fn dtypes(inputs: &[DType], _: &AllClassNonMaximumSuppressionAttrs) -> Result<Vec<DType>, KernelError> {
        let [boxes, scores, limit, iou, threshold] = args(inputs)?;
        check_dtype(NAME, "boxes", DTypeSet::Floats, boxes)?;
        if scores != boxes {
            return Err(KernelError::DType(format!(
                "{NAME}: `scores` must have the boxes' dtype `{boxes}`, found `{scores}`"
            )));
        }
        check_dtype(NAME, "max_output_boxes_per_class", DTypeSet::Ints, limit)?;
        check_dtype(NAME, "iou_threshold", DTypeSet::Floats, iou)?;
        check_dtype(NAME, "score_threshold", DTypeSet::Floats, threshold)?;
        Ok(vec![DType::I64, DType::I64])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &AllClassNonMaximumSuppressionAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [boxes, scores, limit, iou, threshold] = args(inputs)?;
        let &[batch, classes, n] = scores.shape() else {
            return Err(KernelError::Shape(format!("{NAME}: scores are not 3-d")));
        };
        let limit =
            usize::try_from(scalar::<i64>(limit, "max_output_boxes_per_class")?).ok().filter(|&l| l > 0);
        let (iou, threshold): (f64, f64) =
            (scalar(iou, "iou_threshold")?, scalar(threshold, "score_threshold")?);
        let coords: Vec<f64> = converted(boxes)?;
        let corners: Vec<Corners> =
            coords.chunks_exact(4).map(|c| Corners::new([c[0], c[1], c[2], c[3]])).collect();
        let scores: Vec<f64> = converted(scores)?;
        let [selected, total] = outputs else {
            return Err(KernelError::OutputCount { expected: 2, actual: outputs.len() });
        };
        let rows = selected.as_mut_slice::<i64>()?;
        rows.fill(0);
        let mut count = 0usize;
        for b in 0..batch {
            for c in 0..classes {
                let at = (b * classes + c) * n;
                for j in kept(&corners[b * n..(b + 1) * n], &scores[at..at + n], limit, iou, threshold) {
                    // Each of the `batch * classes * n` rows is written at most once.
                    if let Some(row) = rows.get_mut(count * 3..count * 3 + 3) {
                        row.copy_from_slice(&[b as i64, c as i64, j as i64]);
                    }
                    count += 1;
                }
            }
        }
        total.as_mut_slice::<i64>()?.fill(count as i64);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::eval;

    /// ONNX's `nonmaxsuppression_suppress_by_IOU` case, with `(y1, x1, y2, x2)` boxes.
    fn onnx_boxes() -> Tensor {
        #[rustfmt::skip]
        let v = vec![
            0f32, 0.0, 1.0, 1.0,
            0.0, 0.1, 1.0, 1.1,
            0.0, -0.1, 1.0, 0.9,
            0.0, 10.0, 1.0, 11.0,
            0.0, 10.1, 1.0, 11.1,
            0.0, 100.0, 1.0, 101.0,
        ];
        Tensor::from_vec(vec![1, 6, 4], v).unwrap()
    }

    fn run(scores: Vec<f32>, classes: usize, limit: i64, iou: f32, threshold: f32) -> (Vec<i64>, i64) {
        let scores = Tensor::from_vec(vec![1, classes, 6], scores).unwrap();
        let out = eval::<AllClassNonMaxSuppression>(
            &[
                &onnx_boxes(),
                &scores,
                &Tensor::scalar(limit),
                &Tensor::scalar(iou),
                &Tensor::scalar(threshold),
            ],
            &AllClassNonMaximumSuppressionAttrs::default(),
        )
        .unwrap();
        let total = out[1].as_slice::<i64>().unwrap()[0];
        (out[0].as_slice::<i64>().unwrap()[..total as usize * 3].to_vec(), total)
    }

    #[test]
    fn onnx_examples() {
        let scores = vec![0.9, 0.75, 0.6, 0.95, 0.5, 0.3];
        assert_eq!(run(scores.clone(), 1, 3, 0.5, 0.0), (vec![0, 0, 3, 0, 0, 0, 0, 0, 5], 3));
        assert_eq!(run(scores.clone(), 1, 2, 0.5, 0.0).1, 2);
        assert_eq!(run(scores.clone(), 1, 3, 0.5, 0.4), (vec![0, 0, 3, 0, 0, 0], 2));
        // No limit (TVM's <= 0), and a second class.
        let two: Vec<f32> = scores.iter().chain(scores.iter().rev()).copied().collect();
        assert_eq!(run(two, 2, 0, 0.5, 0.0).1, 6);
    }

    #[test]
    fn ties_nan_and_degenerate_boxes() {
        // Equal scores: box order. NaN: never selected.
        let (rows, total) = run(vec![0.5, f32::NAN, 0.5, 0.5, 0.5, 0.5], 1, 10, 0.5, f32::NEG_INFINITY);
        assert_eq!(total, 3);
        assert_eq!(rows, vec![0, 0, 0, 0, 0, 3, 0, 0, 5]);
        let points = Tensor::from_vec(vec![1, 2, 4], vec![1f32; 8]).unwrap();
        let scores = Tensor::from_vec(vec![1, 1, 2], vec![0.9f32, 0.8]).unwrap();
        let out = eval::<AllClassNonMaxSuppression>(
            &[&points, &scores, &Tensor::scalar(5i64), &Tensor::scalar(0.0f32), &Tensor::scalar(0.0f32)],
            &AllClassNonMaximumSuppressionAttrs::default(),
        )
        .unwrap();
        assert_eq!(out[1].as_slice::<i64>().unwrap(), &[2]);
        let empty = Tensor::from_vec(vec![2, 0, 4], Vec::<f32>::new()).unwrap();
        let none = Tensor::from_vec(vec![2, 3, 0], Vec::<f32>::new()).unwrap();
        let out = eval::<AllClassNonMaxSuppression>(
            &[&empty, &none, &Tensor::scalar(i64::MIN), &Tensor::scalar(0.5f32), &Tensor::scalar(0.0f32)],
            &AllClassNonMaximumSuppressionAttrs::default(),
        )
        .unwrap();
        assert_eq!(out[0].shape(), &[0, 3]);
        assert_eq!(out[1].as_slice::<i64>().unwrap(), &[0]);
    }

    #[test]
    fn shape_errors() {
        let a = AllClassNonMaximumSuppressionAttrs::default();
        let err = AllClassNonMaxSuppression::shapes::<usize>(&[&[1, 6, 4], &[1, 2, 5], &[], &[], &[]], &a)
            .unwrap_err();
        assert!(err.to_string().contains("scores (batch, classes, n)"), "{err}");
        let err = AllClassNonMaxSuppression::shapes::<usize>(&[&[1, 6, 4], &[1, 2, 6], &[3], &[], &[]], &a)
            .unwrap_err();
        assert!(err.to_string().contains("`max_output_boxes_per_class` must be a scalar"), "{err}");
    }
}
