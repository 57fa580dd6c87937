//! Operators that overwrite the elements at positions chosen by an index rule, keeping the
//! rest of the data: `sequence_mask` (past each sequence's length) and `matrix_set_diag`
//! (on chosen diagonals) (TVM `src/relay/op/tensor/transform.cc`, `topi/transform.h`).

use super::same_as_input;
use crate::attrs::{MatrixSetDiagAttrs, SequenceMaskAttrs};
use crate::compute::util::{lazy, lit, tensors};
use crate::error::KernelError;
use crate::kernels::util::{any_type, args, for_each_index, only_output};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use crate::ops::index::{index_values, may_equal, strides};
use relay_compiler::kir::{Expr, Index};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Element, Scalar, Tensor};

/// The `(time, batch)` axes of `sequence_mask`'s `axis` (0 or 1).
fn time_batch(axis: i64) -> Result<(usize, usize), KernelError> {
    match axis {
        0 => Ok((0, 1)),
        1 => Ok((1, 0)),
        _ => Err(KernelError::Attr(format!("`axis` must be 0 or 1, found {axis}"))),
    }
}

/// `sequence_mask(data, valid_length, mask_value, axis)`: `data` (rank ≥ 2, time along
/// `axis`, batch along the other of axes 0 and 1) with every element at time `t ≥
/// valid_length[b]` replaced by `mask_value` (converted to `data`'s dtype). `valid_length` is
/// an integer vector of the batch size. Numeric dtypes.
#[derive(Debug)]
pub struct SequenceMask;

impl Operator for SequenceMask {
    const NAME: &'static str = "sequence_mask";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "mask_value past each sequence's valid length";
    type Attrs = SequenceMaskAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<SequenceMaskAttrs>> = Some(|inputs, a, _| {
        let [x, len] = tensors(inputs)?;
        let (time, batch) = time_batch(a.axis).map_err(|e| e.to_string())?;
        let (x, len, mask) = (x.clone(), len.clone(), a.mask_value);
        Ok(lazy(move |k, idx| {
            let t = Expr::index(idx[time].clone());
            let valid = t.lt(len.at(k, &[idx[batch].clone()]).cast(DType::I64));
            Expr::select(valid, x.at(k, idx), lit(x.dtype, mask))
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &SequenceMaskAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, len] = args(inputs)?;
        let (_, batch) = time_batch(a.axis)?;
        if x.len() < 2 {
            return Err(KernelError::Shape(format!(
                "data must have rank at least 2, found {}",
                shape_text(x)
            )));
        }
        if len.len() != 1 || !may_equal(len[0], x[batch]) {
            return Err(KernelError::Shape(format!(
                "valid_length must have shape ({}) (the batch axis {batch} of data {}), found {}",
                shape_text(&x[batch..=batch]).trim_matches(['(', ')']),
                shape_text(x),
                shape_text(len)
            )));
        }
        Ok(vec![x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &SequenceMaskAttrs) -> Result<Vec<DType>, KernelError> {
        let [x, len] = args(inputs)?;
        DTypeSet::Ints.check(len)?;
        Ok(vec![Self::DTYPES.check(same_as_input(&[x])?[0])?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &SequenceMaskAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, len] = args(inputs)?;
        let (time, batch) = time_batch(a.axis)?;
        let lens = index_values(len)?;
        let out = only_output(outputs)?;
        any_type!(x.dtype(), T => {
            let src = x.as_slice::<T>()?;
            let dst = out.as_mut_slice::<T>()?;
            let mask = T::from_scalar(Scalar::Float(a.mask_value));
            let mut i = 0;
            for_each_index(x.shape(), |p| {
                dst[i] = if (p[time] as i64) < lens[p[batch]] { src[i] } else { mask };
                i += 1;
                Ok(())
            })
        })
    }
}

/// The diagonal layout of `matrix_set_diag` on `[..., m, n]` matrices: which of `diagonal`'s
/// rows and columns holds element `(i, j)`, if its diagonal `j - i` is one of `k1..=k2`.
struct Diagonals {
    m: i64,
    n: i64,
    k1: i64,
    k2: i64,
    /// The longest diagonal's length: `diagonal`'s last dimension.
    max_len: i64,
    super_right: bool,
    sub_right: bool,
}

impl Diagonals {
    fn new(m: usize, n: usize, a: &MatrixSetDiagAttrs) -> Result<Diagonals, KernelError> {
        let (m, n) = (m as i64, n as i64);
        if a.k1 > a.k2 {
            return Err(KernelError::Attr(format!("`k1` ({}) must not exceed `k2` ({})", a.k1, a.k2)));
        }
        // Every chosen diagonal must meet the matrix (TensorFlow's check).
        if (m > 0 || n > 0) && (a.k1 <= -m || a.k2 >= n) {
            return Err(KernelError::Attr(format!(
                "diagonals {}..={} do not all meet a {m}x{n} matrix",
                a.k1, a.k2
            )));
        }
        let max_len = (m + a.k2.min(0)).min(n - a.k1.max(0)).max(0);
        Ok(Diagonals {
            m,
            n,
            k1: a.k1,
            k2: a.k2,
            max_len,
            super_right: a.super_diag_right_align,
            sub_right: a.sub_diag_right_align,
        })
    }

    /// `(row, column)` of `diagonal` for element `(i, j)`, or `None` off the chosen diagonals.
    fn position(&self, i: i64, j: i64) -> Option<(i64, i64)> {
        let k = j - i;
        if k < self.k1 || k > self.k2 {
            return None;
        }
        let len = (self.m + k.min(0)).min(self.n - k.max(0));
        let right = if k >= 0 { self.super_right } else { self.sub_right };
        let offset = if right { self.max_len - len } else { 0 };
        Some((self.k2 - k, i.min(j) + offset))
    }

    /// The expected shape of `diagonal` for input `x` (`[..., m, n]`).
    fn diagonal_shape<D: ShapeDim>(&self, x: &[D]) -> Vec<D> {
        let mut s = x[..x.len() - 2].to_vec();
        if self.k1 != self.k2 {
            s.push(D::known((self.k2 - self.k1 + 1) as usize));
        }
        s.push(D::known(self.max_len as usize));
        s
    }
}

/// `matrix_set_diag(data, diagonal, k1, k2, super_diag_right_align, sub_diag_right_align)`:
/// `data` (`[..., m, n]`) with diagonals `k1..=k2` replaced from `diagonal` (`[..., max_len]`
/// for one diagonal, else `[..., k2 - k1 + 1, max_len]`, row 0 the diagonal `k2`; a shorter
/// diagonal is aligned left or right in its row by the align flags), as TensorFlow's
/// `MatrixSetDiagV3`. Every dtype.
#[derive(Debug)]
pub struct MatrixSetDiag;

impl Operator for MatrixSetDiag {
    const NAME: &'static str = "matrix_set_diag";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "diagonals k1..=k2 of the innermost matrices replaced";
    type Attrs = MatrixSetDiagAttrs;
    // `Diagonals::position` in index arithmetic: element `(i, j)` reads `diagonal` where
    // `k1 <= j - i <= k2`, else `data`; the diagonal's row and column are clamped so that the
    // read is in bounds where the select discards it.
    const COMPUTE: Option<crate::operator::ComputeRule<MatrixSetDiagAttrs>> = Some(|inputs, a, _| {
        let [x, diag] = tensors(inputs)?;
        let r = x.shape.len();
        let (m, n) = match x.shape.get(r.wrapping_sub(2)..) {
            Some(&[m, n]) => (usize::try_from(m), usize::try_from(n)),
            _ => return Err("matrix_set_diag needs matrices".into()),
        };
        let (Ok(m), Ok(n)) = (m, n) else { return Err("matrix_set_diag of unknown size".into()) };
        let d = Diagonals::new(m, n, a).map_err(|e| e.to_string())?;
        if d.max_len == 0 {
            return Err("matrix_set_diag of empty matrices runs in the reference kernel".into());
        }
        let (x, diag, several) = (x.clone(), diag.clone(), a.k1 != a.k2);
        Ok(lazy(move |k, idx| {
            let (lead, ij) = idx.split_at(r - 2);
            let (i, j) = (ij[0].clone(), ij[1].clone());
            let kk = j.clone() - i.clone();
            let len = (kk.clone().min(0) + d.m).min(d.n - kk.clone().max(0));
            let shift = |right: bool| if right { d.max_len - len.clone() } else { Index::from(0) };
            // 1 on and above the main diagonal (`kk >= 0`), 0 below.
            let upper = (kk.clone() + 1).clamp(0, 1);
            let offset = upper.clone() * shift(d.super_right) + (1 - upper) * shift(d.sub_right);
            let mut at = lead.to_vec();
            if several {
                at.push((d.k2 - kk.clone()).clamp(0, d.k2 - d.k1));
            }
            at.push((i.min(j) + offset).clamp(0, d.max_len - 1));
            let on = Expr::index(kk.clone()).ge(Expr::i64(d.k1)).and(Expr::index(kk).le(Expr::i64(d.k2)));
            Expr::select(on, diag.at(k, &at), x.at(k, idx))
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &MatrixSetDiagAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, diag] = args(inputs)?;
        if x.len() < 2 {
            return Err(KernelError::Shape(format!(
                "data must have rank at least 2, found {}",
                shape_text(x)
            )));
        }
        let (Some(m), Some(n)) = (x[x.len() - 2].value(), x[x.len() - 1].value()) else {
            return Ok(vec![x.to_vec()]);
        };
        let want = Diagonals::new(m, n, a)?.diagonal_shape(x);
        if want.len() != diag.len() || want.iter().zip(diag).any(|(&w, &d)| !may_equal(w, d)) {
            return Err(KernelError::Shape(format!(
                "diagonal must have shape {} for data {} and diagonals {}..={}, found {}",
                shape_text(&want),
                shape_text(x),
                a.k1,
                a.k2,
                shape_text(diag)
            )));
        }
        Ok(vec![x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &MatrixSetDiagAttrs) -> Result<Vec<DType>, KernelError> {
        let [x, d] = args(inputs)?;
        if x != d {
            return Err(KernelError::DType(format!("data is {x} but diagonal is {d}")));
        }
        same_as_input(&[x])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &MatrixSetDiagAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, diag] = args(inputs)?;
        let r = x.ndim();
        let d = Diagonals::new(x.shape()[r - 2], x.shape()[r - 1], a)?;
        let ds = strides(diag.shape());
        let several = a.k1 != a.k2;
        let out = only_output(outputs)?;
        any_type!(x.dtype(), T => {
            let (src, dv) = (x.as_slice::<T>()?, diag.as_slice::<T>()?);
            let dst = out.as_mut_slice::<T>()?;
            let mut at = 0;
            for_each_index(x.shape(), |p| {
                let (i, j) = (p[r - 2] as i64, p[r - 1] as i64);
                dst[at] = match d.position(i, j) {
                    None => src[at],
                    Some((row, col)) => {
                        let lead = p[..r - 2].iter().zip(&ds).map(|(q, s)| q * s).sum::<usize>();
                        let row = if several { row as usize * ds[r - 2] } else { 0 };
                        dv[lead + row + col as usize]
                    }
                };
                at += 1;
                Ok(())
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagonal_positions_follow_the_alignment() {
        let a =
            MatrixSetDiagAttrs { k1: -1, k2: 1, super_diag_right_align: false, sub_diag_right_align: true };
        let d = Diagonals::new(3, 3, &a).unwrap();
        assert_eq!(d.max_len, 3);
        assert_eq!(d.position(0, 1), Some((0, 0)));
        assert_eq!(d.position(1, 0), Some((2, 1)));
        assert_eq!(d.position(2, 0), None);
        assert_eq!(d.diagonal_shape::<usize>(&[2, 3, 3]), vec![2, 3, 3]);
        assert!(Diagonals::new(3, 3, &MatrixSetDiagAttrs { k1: 1, k2: 0, ..a.clone() }).is_err());
    }
}
