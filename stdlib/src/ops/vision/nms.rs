//! `vision.non_max_suppression` (TVM `src/relay/op/vision/nms.cc` `NMSRel`,
//! `topi.vision.non_max_suppression`, the CPU hybrid script `hybrid_nms`): greedy non-maximum
//! suppression of the boxes `vision.get_valid_counts` prepared.

use super::boxes::{by_score, check_dtype, check_scalar, index32, scalar, Corners};
use super::valid_counts::{box_data, column};
use crate::attrs::NonMaximumSuppressionAttrs;
use crate::error::KernelError;
use crate::kernels::util::args;
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use crate::ops::image::sample::write_values;
use crate::ops::index::may_equal;
use crate::ops::nn::converted;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};
use std::cmp::Ordering;

/// `vision.non_max_suppression(data, valid_count, indices, max_output_size, iou_threshold,
/// force_suppress, top_k, coord_start, score_index, id_index, return_indices,
/// invalid_to_bottom)` (TVM v0.16: the first five are operands). `data [batch, n, k]` holds
/// boxes of `k` columns: a score (column `score_index`), a class id (`id_index`, `< 0`: none)
/// and four corner coordinates from `coord_start`, either corner first; per batch the first
/// `valid_count[b]` (`int32 [batch]`, clamped into `[0, n]`) rows take part, and `indices`
/// (`int32 [batch, n]`) maps them to positions in the original data.
///
/// With `iou_threshold > 0`, the taking-part boxes are ordered by score (highest first, ties
/// in position order, NaN last), only the `top_k` best kept when `0 < top_k`, and then each in
/// turn is dropped when it overlaps a kept box of score `> 0` (of its own class unless
/// `force_suppress`; class ids `< 0` suppress nothing) with an intersection over union `>=
/// iou_threshold`, or when `max_output_size` (`>= 0`; negative: no limit) boxes are kept
/// already; a box of score `<= 0` is neither counted nor dropped. Otherwise the boxes stay in
/// place. Dropped and non-taking-part rows are `-1`.
///
/// With `return_indices` (the default) the result is the tuple `(int32 [batch, n], int32
/// [batch, 1])`: the kept boxes' `indices` entries at the top, `-1` below, and their count
/// (TVM's `hybrid_rearrange_indices_out`, which also adds a `0` entry after an index outside
/// `[-n, n]`). Else the boxes `[batch, n, k]` in score order, with `invalid_to_bottom` the rows
/// whose column 0 is `>= 0` moved to the top (TVM's `hybrid_rearrange_box_out`). Float data.
#[derive(Debug)]
pub struct NonMaxSuppression;

/// The name, for messages.
const NAME: &str = "vision.non_max_suppression";

/// The columns of a box: score, class id (if any), first coordinate.
struct Columns {
    score: usize,
    id: Option<usize>,
    coords: usize,
}

/// The columns the attributes name, checked against rows of `k` columns.
fn columns<D: ShapeDim>(a: &NonMaximumSuppressionAttrs, k: D) -> Result<Columns, KernelError> {
    let coords = column(NAME, "coord_start", a.coord_start, k, false)?.unwrap_or(0);
    if let Some(k) = k.value().filter(|&k| coords + 4 > k) {
        return Err(KernelError::Attr(format!(
            "{NAME}: attribute `coord_start` = {coords} leaves no 4 coordinates in boxes with {k} columns"
        )));
    }
    Ok(Columns {
        score: column(NAME, "score_index", a.score_index, k, false)?.unwrap_or(0),
        id: column(NAME, "id_index", a.id_index, k, true)?,
        coords,
    })
}

/// One batch's suppression: the rows of `out` (`n x k`, all `-1` on entry) and `kept` (the
/// source row of each, `-1` on entry) for the `rows` that take part.
struct Batch<'a> {
    rows: &'a [f64],
    k: usize,
    out: &'a mut [f64],
    kept: &'a mut [i64],
}

impl Batch<'_> {
    fn row(&self, j: usize) -> &[f64] {
        &self.rows[j * self.k..(j + 1) * self.k]
    }

    fn out_row(&self, j: usize) -> &[f64] {
        &self.out[j * self.k..(j + 1) * self.k]
    }

    /// Output row `j` is a copy of source row `from`.
    fn place(&mut self, j: usize, from: usize) {
        let k = self.k;
        self.out[j * k..(j + 1) * k].copy_from_slice(&self.rows[from * k..(from + 1) * k]);
        self.kept[j] = from as i64;
    }

    /// Output row `j` is dropped.
    fn drop_row(&mut self, j: usize) {
        let k = self.k;
        self.out[j * k..(j + 1) * k].fill(-1.0);
        self.kept[j] = -1;
    }

    fn corners(&self, j: usize, c: &Columns) -> Corners {
        let r = self.out_row(j);
        Corners::new([r[c.coords], r[c.coords + 1], r[c.coords + 2], r[c.coords + 3]])
    }

    /// TVM's `hybrid_nms` for `valid` taking-part rows.
    fn suppress(&mut self, valid: usize, a: &NonMaximumSuppressionAttrs, c: &Columns, limit: i64, iou: f64) {
        let scores: Vec<f64> = (0..valid).map(|j| self.row(j)[c.score]).collect();
        let order = by_score(&scores);
        let keep = usize::try_from(a.top_k).ok().filter(|&t| t > 0 && t < valid).unwrap_or(valid);
        for (j, &from) in order.iter().take(keep).enumerate() {
            self.place(j, from);
        }
        let mut count = 0i64;
        for j in 0..valid {
            if count == limit {
                self.drop_row(j);
                continue;
            }
            let me = self.out_row(j);
            if me.get(c.score).is_none_or(|&s| s.partial_cmp(&0.0) != Some(Ordering::Greater)) {
                continue;
            }
            let my_class = c.id.map(|i| me[i]);
            let mine = self.corners(j, c);
            let suppressed = (0..j).any(|other| {
                let r = self.out_row(other);
                let class = c.id.map(|i| r[i]);
                let active = r[c.score] > 0.0 && class.is_none_or(|id| id >= 0.0);
                let compared = a.force_suppress || class == my_class;
                active && compared && mine.iou(self.corners(other, c)) >= iou
            });
            if suppressed {
                self.drop_row(j);
            } else {
                count += 1;
            }
        }
    }
}

/// TVM's `hybrid_rearrange_indices_out` on one batch's indices: the entries `>= 0` moved to the
/// top (an entry outside `[-n, n]` followed by a `0`), `-1` below; and their count.
fn rearranged_indices(kept: &[i64], out: &mut [i32]) -> Result<i32, KernelError> {
    let n = kept.len() as i64;
    let mut count = 0usize;
    let mut push = |v: i64, out: &mut [i32]| {
        if let Some(slot) = out.get_mut(count) {
            // An entry is an `int32` of `indices`, or a row position below `n`.
            *slot = v as i32;
        }
        count += 1;
    };
    for &d in kept {
        if d >= 0 {
            push(d, out);
        }
        if d > n || d < -n {
            push(0, out);
        }
    }
    index32(count)
}

impl Operator for NonMaxSuppression {
    const NAME: &'static str = NAME;
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 5;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "greedy non-maximum suppression of scored boxes";
    type Attrs = NonMaximumSuppressionAttrs;

    fn shapes<D: ShapeDim>(
        inputs: &[&[D]],
        a: &NonMaximumSuppressionAttrs,
    ) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, valid_count, indices, limit, iou] = args(inputs)?;
        let [b, n, k] = box_data(NAME, data)?;
        let fits = match (valid_count, indices) {
            (&[vb], &[ib, ik]) => may_equal(vb, b) && may_equal(ib, b) && may_equal(ik, n),
            _ => false,
        };
        if !fits {
            return Err(KernelError::Shape(format!(
                "{NAME}: data {} needs valid_count of shape ({b}) and indices of shape ({b}, {n}), found {} and {}",
                shape_text(data),
                shape_text(valid_count),
                shape_text(indices),
                b = shape_text(&[b]).trim_matches(['(', ')']),
                n = shape_text(&[n]).trim_matches(['(', ')']),
            )));
        }
        check_scalar(NAME, "max_output_size", limit)?;
        check_scalar(NAME, "iou_threshold", iou)?;
        columns(a, k)?;
        Ok(if a.return_indices { vec![vec![b, n], vec![b, D::known(1)]] } else { vec![vec![b, n, k]] })
    }

    fn dtypes(inputs: &[DType], a: &NonMaximumSuppressionAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, valid_count, indices, limit, iou] = args(inputs)?;
        check_dtype(NAME, "data", DTypeSet::Floats, d)?;
        for (what, t) in [("valid_count", valid_count), ("indices", indices)] {
            if t != DType::I32 {
                return Err(KernelError::DType(format!("{NAME}: `{what}` must be `int32`, found `{t}`")));
            }
        }
        check_dtype(NAME, "max_output_size", DTypeSet::Ints, limit)?;
        check_dtype(NAME, "iou_threshold", DTypeSet::Floats, iou)?;
        Ok(if a.return_indices { vec![DType::I32, DType::I32] } else { vec![d] })
    }

    fn reference(
        inputs: &[&Tensor],
        a: &NonMaximumSuppressionAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data, valid_count, indices, limit, iou] = args(inputs)?;
        let [batch, n, k] = box_data(NAME, data.shape())?;
        let c = columns(a, k)?;
        let (limit, iou): (i64, f64) = (scalar(limit, "max_output_size")?, scalar(iou, "iou_threshold")?);
        let x: Vec<f64> = converted(data)?;
        let (counts, sources) = (valid_count.as_slice::<i32>()?, indices.as_slice::<i32>()?);
        let mut out = vec![-1.0; x.len()];
        let mut kept = vec![-1i64; batch * n];
        for b in 0..batch {
            let valid = usize::try_from(counts[b]).unwrap_or(0).min(n);
            let mut one = Batch {
                rows: &x[b * n * k..(b + 1) * n * k],
                k,
                out: &mut out[b * n * k..(b + 1) * n * k],
                kept: &mut kept[b * n..(b + 1) * n],
            };
            if iou > 0.0 {
                one.suppress(valid, a, &c, limit, iou);
            } else {
                for j in 0..valid {
                    one.place(j, j);
                }
            }
            if a.return_indices {
                for slot in one.kept.iter_mut().take(valid).filter(|s| **s >= 0) {
                    *slot = i64::from(sources[b * n + *slot as usize]);
                }
            }
        }
        match outputs {
            [boxes] if a.invalid_to_bottom => {
                let mut moved = vec![-1.0; out.len()];
                for (from, to) in out.chunks(n * k).zip(moved.chunks_mut(n * k)) {
                    let rows = from.chunks(k).filter(|r| r.first().is_some_and(|&v| v >= 0.0));
                    for (r, dst) in rows.zip(to.chunks_mut(k)) {
                        dst.copy_from_slice(r);
                    }
                }
                write_values(boxes, moved)
            }
            [boxes] => write_values(boxes, out),
            [box_indices, count] => {
                let (box_indices, count) = (box_indices.as_mut_slice::<i32>()?, count.as_mut_slice::<i32>()?);
                box_indices.fill(-1);
                // With no boxes (`n = 0`) there are no chunks: each count is 0.
                count.fill(0);
                for ((from, to), c) in kept.chunks(n.max(1)).zip(box_indices.chunks_mut(n.max(1))).zip(count)
                {
                    *c = rearranged_indices(from, to)?;
                }
                Ok(())
            }
            _ => Err(KernelError::OutputCount { expected: 2, actual: outputs.len() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::eval;

    /// TVM's `test_non_max_suppression` boxes: `[class, score, x1, y1, x2, y2]`.
    fn tvm_boxes() -> Tensor {
        #[rustfmt::skip]
        let v = vec![
            0f32, 0.8, 1.0, 20.0, 25.0, 45.0,
            1.0, 0.7, 30.0, 60.0, 50.0, 80.0,
            0.0, 0.4, 4.0, 21.0, 19.0, 40.0,
            2.0, 0.9, 35.0, 61.0, 52.0, 79.0,
            1.0, 0.5, 100.0, 60.0, 70.0, 110.0,
        ];
        Tensor::from_vec(vec![1, 5, 6], v).unwrap()
    }

    fn run(a: &NonMaximumSuppressionAttrs, limit: i32, iou: f32) -> Vec<Tensor> {
        let data = tvm_boxes();
        let count = Tensor::from_vec(vec![1], vec![4i32]).unwrap();
        let indices = Tensor::from_vec(vec![1, 5], vec![0i32, 1, 2, 3, 4]).unwrap();
        eval::<NonMaxSuppression>(&[&data, &count, &indices, &Tensor::scalar(limit), &Tensor::scalar(iou)], a)
            .unwrap()
    }

    #[test]
    fn tvm_example() {
        let a = NonMaximumSuppressionAttrs { force_suppress: true, top_k: 2, ..Default::default() };
        let out = run(&a, -1, 0.5);
        assert_eq!(out[0].as_slice::<i32>().unwrap(), &[3, 0, -1, -1, -1]);
        assert_eq!(out[1].as_slice::<i32>().unwrap(), &[2]);
        let boxes = NonMaximumSuppressionAttrs { return_indices: false, ..a.clone() };
        let out = run(&boxes, -1, 0.5);
        #[rustfmt::skip]
        let expected = [
            2.0, 0.9, 35.0, 61.0, 52.0, 79.0,
            0.0, 0.8, 1.0, 20.0, 25.0, 45.0,
            -1.0, -1.0, -1.0, -1.0, -1.0, -1.0,
            -1.0, -1.0, -1.0, -1.0, -1.0, -1.0,
            -1.0, -1.0, -1.0, -1.0, -1.0, -1.0,
        ];
        assert_eq!(out[0].as_slice::<f32>().unwrap(), &expected);
        // One box at most; and with a limit of 0, none.
        assert_eq!(run(&a, 1, 0.5)[0].as_slice::<i32>().unwrap(), &[3, -1, -1, -1, -1]);
        assert_eq!(run(&a, 0, 0.5)[1].as_slice::<i32>().unwrap(), &[0]);
        // Without `top_k`: box 2 overlaps box 0 by 0.475 only.
        let all = NonMaximumSuppressionAttrs { top_k: -1, ..a.clone() };
        assert_eq!(run(&all, -1, 0.5)[0].as_slice::<i32>().unwrap(), &[3, 0, 2, -1, -1]);
        // Without a positive threshold nothing moves: the valid rows stay.
        assert_eq!(run(&a, -1, f32::NAN)[0].as_slice::<i32>().unwrap(), &[0, 1, 2, 3, -1]);
    }

    #[test]
    fn robust_to_hostile_values() {
        let a = NonMaximumSuppressionAttrs { top_k: i64::MAX, ..Default::default() };
        let nan = Tensor::from_vec(vec![1, 2, 6], vec![f32::NAN; 12]).unwrap();
        let count = Tensor::from_vec(vec![1], vec![i32::MAX]).unwrap();
        let indices = Tensor::from_vec(vec![1, 2], vec![i32::MIN, i32::MAX]).unwrap();
        let out = eval::<NonMaxSuppression>(
            &[&nan, &count, &indices, &Tensor::scalar(i64::MAX), &Tensor::scalar(0.5f32)],
            &a,
        )
        .unwrap();
        // NaN scores are neither kept nor dropped; TVM's rearrangement counts an index outside
        // [-n, n] with an extra 0 entry (three for two rows).
        assert_eq!(out[0].as_slice::<i32>().unwrap(), &[0, i32::MAX]);
        assert_eq!(out[1].as_slice::<i32>().unwrap(), &[3]);
        let empty = Tensor::from_vec(vec![1, 0, 6], Vec::<f32>::new()).unwrap();
        let none = Tensor::from_vec(vec![1, 0], Vec::<i32>::new()).unwrap();
        let out = eval::<NonMaxSuppression>(
            &[&empty, &count, &none, &Tensor::scalar(-5i32), &Tensor::scalar(0.5f32)],
            &a,
        )
        .unwrap();
        assert_eq!(out[1].as_slice::<i32>().unwrap(), &[0]);
    }

    #[test]
    fn shape_errors() {
        let a = NonMaximumSuppressionAttrs::default();
        let err = NonMaxSuppression::shapes::<usize>(&[&[1, 5, 6], &[2], &[1, 5], &[], &[]], &a).unwrap_err();
        assert!(err.to_string().contains("valid_count of shape (1)"), "{err}");
        let far = NonMaximumSuppressionAttrs { coord_start: 3, ..Default::default() };
        let err =
            NonMaxSuppression::shapes::<usize>(&[&[1, 5, 6], &[1], &[1, 5], &[], &[]], &far).unwrap_err();
        assert!(err.to_string().contains("no 4 coordinates"), "{err}");
    }
}
