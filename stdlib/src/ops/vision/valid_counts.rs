//! `vision.get_valid_counts` (TVM `src/relay/op/vision/nms.cc` `GetValidCountRel`,
//! `topi.vision.get_valid_counts`): the boxes whose score passes a threshold, moved to the
//! top, as SSD and YOLO detectors prepare them for `vision.non_max_suppression`.

use super::boxes::{check_dtype, check_scalar, index32, scalar};
use crate::attrs::GetValidCountsAttrs;
use crate::error::KernelError;
use crate::kernels::util::args;
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use crate::ops::image::sample::write_values;
use crate::ops::nn::converted;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// `vision.get_valid_counts(data, score_threshold, id_index, score_index)`: data
/// `[batch, n, k]` holds `n` boxes of `k` columns; a box is valid when its score (column
/// `score_index`) is greater than `score_threshold` (a float scalar; a NaN score never is) and,
/// with `id_index >= 0`, its class id (column `id_index`) is not negative. The tuple
/// `(valid_count [batch] int32, out [batch, n, k], out_indices [batch, n] int32)`: per batch
/// the number of valid boxes, the valid boxes in their order at the top of `out` and their
/// positions in `data` at the top of `out_indices`; every other row of `out` is `-1`, every
/// other index `-1` (TVM's `hybrid_get_valid_counts`). Float data.
#[derive(Debug)]
pub struct GetValidCounts;

/// The name, for messages.
const NAME: &str = "vision.get_valid_counts";

/// A column attribute as an index into rows of `k` columns (`k` unknown: any `>= 0`); a
/// negative value is `None` when `optional` (no such column), else an error.
pub(crate) fn column<D: ShapeDim>(
    op: &str,
    name: &str,
    v: i64,
    k: D,
    optional: bool,
) -> Result<Option<usize>, KernelError> {
    match usize::try_from(v) {
        Err(_) if optional => Ok(None),
        Ok(c) if k.value().is_none_or(|k| c < k) => Ok(Some(c)),
        _ => Err(KernelError::Attr(format!(
            "{op}: attribute `{name}` = {v} is not a column of boxes with {} columns{}",
            k.value().map_or("?".to_string(), |k| k.to_string()),
            if optional { " (use -1 for none)" } else { "" }
        ))),
    }
}

/// `[batch, n, k]` of 3-d box data.
pub(crate) fn box_data<D: ShapeDim>(op: &str, data: &[D]) -> Result<[D; 3], KernelError> {
    match *data {
        [b, n, k] => Ok([b, n, k]),
        _ => Err(KernelError::Shape(format!(
            "{op} needs 3-d data [batch, boxes, columns], found {}",
            shape_text(data)
        ))),
    }
}

impl Operator for GetValidCounts {
    const NAME: &'static str = NAME;
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "boxes scoring above a threshold, moved to the top, and their count";
    type Attrs = GetValidCountsAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &GetValidCountsAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, threshold] = args(inputs)?;
        let [b, n, k] = box_data(NAME, data)?;
        check_scalar(NAME, "score_threshold", threshold)?;
        column(NAME, "score_index", a.score_index, k, false)?;
        column(NAME, "id_index", a.id_index, k, true)?;
        Ok(vec![vec![b], vec![b, n, k], vec![b, n]])
    }

    fn dtypes(inputs: &[DType], _: &GetValidCountsAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, threshold] = args(inputs)?;
        check_dtype(NAME, "data", DTypeSet::Floats, d)?;
        check_dtype(NAME, "score_threshold", DTypeSet::Floats, threshold)?;
        Ok(vec![DType::I32, d, DType::I32])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &GetValidCountsAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data, threshold] = args(inputs)?;
        let [batch, n, k] = box_data(NAME, data.shape())?;
        let threshold: f64 = scalar(threshold, "score_threshold")?;
        let score = column(NAME, "score_index", a.score_index, k, false)?.unwrap_or(0);
        let id = column(NAME, "id_index", a.id_index, k, true)?;
        let x: Vec<f64> = converted(data)?;
        let mut counts = vec![0i32; batch];
        let mut out = vec![-1.0; x.len()];
        let mut indices = vec![-1i32; batch * n];
        for (b, count) in counts.iter_mut().enumerate() {
            let mut valid = 0;
            for j in 0..n {
                let row = &x[(b * n + j) * k..(b * n + j + 1) * k];
                if row[score] > threshold && id.is_none_or(|c| row[c] >= 0.0) {
                    let to = b * n + valid;
                    out[to * k..(to + 1) * k].copy_from_slice(row);
                    indices[to] = index32(j)?;
                    valid += 1;
                }
            }
            *count = index32(valid)?;
        }
        let [valid_count, boxes, out_indices] = outputs else {
            return Err(KernelError::OutputCount { expected: 3, actual: outputs.len() });
        };
        valid_count.as_mut_slice::<i32>()?.copy_from_slice(&counts);
        write_values(boxes, out)?;
        out_indices.as_mut_slice::<i32>()?.copy_from_slice(&indices);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::eval;

    #[test]
    fn valid_boxes_move_to_the_top() {
        let data = Tensor::from_vec(
            vec![1, 4, 3],
            vec![0f32, 0.9, 1.0, -1.0, 0.8, 2.0, 1.0, f32::NAN, 3.0, 2.0, 0.6, 4.0],
        )
        .unwrap();
        let out = eval::<GetValidCounts>(&[&data, &Tensor::scalar(0.5f32)], &GetValidCountsAttrs::default())
            .unwrap();
        assert_eq!(out[0].as_slice::<i32>().unwrap(), &[2]);
        assert_eq!(
            out[1].as_slice::<f32>().unwrap(),
            &[0.0, 0.9, 1.0, 2.0, 0.6, 4.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0]
        );
        assert_eq!(out[2].as_slice::<i32>().unwrap(), &[0, 3, -1, -1]);
        let no_ids = GetValidCountsAttrs { id_index: -1, ..Default::default() };
        let out = eval::<GetValidCounts>(&[&data, &Tensor::scalar(0.5f32)], &no_ids).unwrap();
        assert_eq!(out[2].as_slice::<i32>().unwrap(), &[0, 1, 3, -1]);
    }

    #[test]
    fn empty_and_bad_columns() {
        let empty = Tensor::from_vec(vec![2, 0, 6], Vec::<f32>::new()).unwrap();
        let out = eval::<GetValidCounts>(&[&empty, &Tensor::scalar(0.0f32)], &GetValidCountsAttrs::default())
            .unwrap();
        assert_eq!(out[0].as_slice::<i32>().unwrap(), &[0, 0]);
        let a = GetValidCountsAttrs { score_index: 6, ..Default::default() };
        let err = GetValidCounts::shapes::<usize>(&[&[1, 2, 6], &[]], &a).unwrap_err();
        assert!(err.to_string().contains("`score_index` = 6 is not a column"), "{err}");
        let err = GetValidCounts::shapes::<usize>(&[&[1, 2, 6], &[2]], &GetValidCountsAttrs::default())
            .unwrap_err();
        assert!(err.to_string().contains("scalar"), "{err}");
    }
}
