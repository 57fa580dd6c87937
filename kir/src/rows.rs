//! Where the rows of a `gemm`'s right operand start.

use super::Index;

/// The element offsets, from `b_offset` on, at which the rows of [`super::Stmt::Gemm`]'s `b`
/// start (its `[n, k]` rows when `trans_b`, its `[k, n]` rows otherwise), as a mixed-radix list
/// of `(extent, stride)` pairs, outer to inner: row `r`, written as the digits `d_0 … d_t` in
/// the radices `extent_0 … extent_t`, starts at `Σ d_i · stride_i`. The extents multiply to the
/// number of rows.
///
/// One pair `[(rows, ldb)]` is BLAS's leading dimension: a whole matrix (`ldb` the row length)
/// or a block of a wider one. More pairs read a convolution's data in place ("window" rows):
/// over a zero-padded `[c, hp, wp]` image, the row of reduction index `(ic, ky, kx)` is the
/// image shifted by `ic·hp·wp + ky·wp + kx`, so a 3×3 stride-1 convolution's right operand is
/// `[(c, hp·wp), (3, wp), (3, 1)]` over the image with no im2col copy (rows overlap; `b` is only
/// read).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RowOffsets(Vec<(i64, i64)>);

impl RowOffsets {
    /// The rows of `(extent, stride)` pairs, outer to inner (see the type).
    pub fn new(dims: Vec<(i64, i64)>) -> RowOffsets {
        RowOffsets(dims)
    }

    /// `rows` rows `ldb` elements apart: `[(rows, ldb)]`.
    pub fn uniform(rows: i64, ldb: i64) -> RowOffsets {
        RowOffsets(vec![(rows, ldb)])
    }

    /// The `(extent, stride)` pairs, outer to inner.
    pub fn dims(&self) -> &[(i64, i64)] {
        &self.0
    }

    /// The stride when the rows are evenly spaced (a single pair): BLAS's `ldb`.
    pub fn ldb(&self) -> Option<i64> {
        match self.0[..] {
            [(_, ldb)] => Some(ldb),
            _ => None,
        }
    }

    /// The number of rows, the product of the extents; `None` on overflow.
    pub fn rows(&self) -> Option<i64> {
        self.0.iter().try_fold(1i64, |n, &(e, _)| n.checked_mul(e))
    }

    /// Whether the list is well formed: at least one pair, every extent and stride at least 0.
    pub fn is_valid(&self) -> bool {
        !self.0.is_empty() && self.0.iter().all(|&(e, s)| e >= 0 && s >= 0)
    }

    /// The largest row offset, `Σ (extent_i − 1)·stride_i` (0 without rows); `None` on overflow
    /// or a malformed list.
    pub fn last(&self) -> Option<i64> {
        if !self.is_valid() {
            return None;
        }
        if self.rows()? == 0 {
            return Some(0);
        }
        self.0.iter().try_fold(0i64, |sum, &(e, s)| sum.checked_add((e - 1).checked_mul(s)?))
    }

    /// Every row's offset, in row order (`rows()` of them; call only on a list whose
    /// [`RowOffsets::last`] is `Some`, whose offsets then all fit).
    pub fn offsets(&self) -> Vec<i64> {
        self.0.iter().fold(vec![0], |outer, &(e, s)| {
            outer.iter().flat_map(|&o| (0..e).map(move |d| o + d * s)).collect()
        })
    }

    /// The offset of row `row` (a loop variable, `0 ≤ row < rows()`) as an index expression:
    /// `row · stride` for one pair, else the digits' sum.
    pub fn offset(&self, row: Index) -> Index {
        let mut inner = 1;
        let mut sum: Option<Index> = None;
        for (i, &(e, s)) in self.0.iter().enumerate().rev() {
            let digit = if inner == 1 { row.clone() } else { row.clone().floor_div(inner) };
            // The outermost digit needs no `mod`: `row < rows`.
            let digit = if i == 0 { digit } else { digit.floor_mod(e) };
            let term = digit * s;
            sum = Some(match sum {
                Some(sum) => term + sum,
                None => term,
            });
            inner *= e;
        }
        sum.unwrap_or(Index::Const(0))
    }
}

#[cfg(test)]
mod tests {
    use super::RowOffsets;

    #[test]
    fn offsets_are_the_mixed_radix_digits_sum() {
        let conv = RowOffsets::new(vec![(2, 100), (3, 10), (3, 1)]);
        let offsets = conv.offsets();
        assert_eq!(offsets.len() as i64, conv.rows().unwrap());
        assert_eq!(&offsets[..4], &[0, 1, 2, 10]);
        assert_eq!(offsets[9], 100);
        assert_eq!(conv.last(), offsets.iter().copied().max());
        assert_eq!(conv.last(), Some(122));
        assert_eq!(RowOffsets::uniform(4, 7).offsets(), vec![0, 7, 14, 21]);
        assert_eq!(RowOffsets::uniform(0, 7).last(), Some(0));
        assert_eq!(RowOffsets::new(vec![]).last(), None);
        assert_eq!(RowOffsets::new(vec![(2, -1)]).last(), None);
        assert_eq!(RowOffsets::new(vec![(2, i64::MAX), (2, 2)]).last(), None);
    }
}
