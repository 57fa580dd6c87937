//! Where the rows of a `gemm`'s right operand start.

use super::Index;
use smallvec::SmallVec;

/// The most `(extent, stride)` pairs a [`RowOffsets`] may have ([`RowOffsets::is_valid`]): a
/// convolution's `(channel, window row, window column)` and the stride-2 phase split's
/// `(row phase, column phase, window row, window column)`. The pairs are stored inline, so the
/// JIT's `gemm` call, made once per channel by a depthwise convolution, allocates nothing for
/// them.
pub const MAX_ROW_PAIRS: usize = 4;

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
pub struct RowOffsets(SmallVec<[(i64, i64); MAX_ROW_PAIRS]>);

impl FromIterator<(i64, i64)> for RowOffsets {
    /// The pairs, outer to inner (stored inline up to [`MAX_ROW_PAIRS`]).
    fn from_iter<I: IntoIterator<Item = (i64, i64)>>(pairs: I) -> RowOffsets {
        RowOffsets(pairs.into_iter().collect())
    }
}

impl RowOffsets {
    /// The rows of `(extent, stride)` pairs, outer to inner (see the type).
    pub fn new(dims: Vec<(i64, i64)>) -> RowOffsets {
        dims.into_iter().collect()
    }

    /// `rows` rows `ldb` elements apart: `[(rows, ldb)]`.
    pub fn uniform(rows: i64, ldb: i64) -> RowOffsets {
        [(rows, ldb)].into_iter().collect()
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

    /// Whether the list is well formed: 1 to [`MAX_ROW_PAIRS`] pairs, every extent and stride
    /// at least 0.
    pub fn is_valid(&self) -> bool {
        (1..=MAX_ROW_PAIRS).contains(&self.0.len()) && self.0.iter().all(|&(e, s)| e >= 0 && s >= 0)
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
    /// [`RowOffsets::last`] is `Some`, whose offsets then all fit), without allocating.
    pub fn offsets(&self) -> impl Iterator<Item = i64> + '_ {
        let rows = self.rows().unwrap_or(0);
        (0..rows).map(move |mut r| {
            let mut offset = 0;
            for &(e, s) in self.0.iter().rev() {
                offset += r % e * s;
                r /= e;
            }
            offset
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
    use super::{RowOffsets, MAX_ROW_PAIRS};

    #[test]
    fn offsets_are_the_mixed_radix_digits_sum() {
        let conv = RowOffsets::new(vec![(2, 100), (3, 10), (3, 1)]);
        let offsets: Vec<i64> = conv.offsets().collect();
        assert_eq!(offsets.len() as i64, conv.rows().unwrap());
        assert_eq!(&offsets[..4], &[0, 1, 2, 10]);
        assert_eq!(offsets[9], 100);
        assert_eq!(conv.last(), offsets.iter().copied().max());
        assert_eq!(conv.last(), Some(122));
        assert_eq!(RowOffsets::uniform(4, 7).offsets().collect::<Vec<_>>(), vec![0, 7, 14, 21]);
        assert_eq!(RowOffsets::uniform(0, 7).offsets().count(), 0);
        assert!(RowOffsets::new(vec![(1, 1); MAX_ROW_PAIRS]).is_valid());
        assert!(!RowOffsets::new(vec![(1, 1); MAX_ROW_PAIRS + 1]).is_valid(), "more pairs are refused");
        assert_eq!(RowOffsets::uniform(0, 7).last(), Some(0));
        assert_eq!(RowOffsets::new(vec![]).last(), None);
        assert_eq!(RowOffsets::new(vec![(2, -1)]).last(), None);
        assert_eq!(RowOffsets::new(vec![(2, i64::MAX), (2, 2)]).last(), None);
    }
}
