//! Indices in affine form: `Σ coefficient · term + constant`, the one decomposition the kir
//! passes (copy elimination) and the JIT's vector planning and epilogue recogniser share.

use crate::{Index, IndexOp};

/// An index as `Σ coefficient · term + constant`, each term a loop variable, a sym or a
/// sub-index that is not affine (a division, say).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Affine {
    /// The terms and their coefficients.
    pub terms: Vec<(Index, i64)>,
    /// The constant part.
    pub constant: i64,
}

impl Affine {
    fn term(i: &Index) -> Affine {
        Affine { terms: vec![(i.clone(), 1)], constant: 0 }
    }

    /// `self + k · other`; `None` on overflow.
    fn add_scaled(mut self, other: Affine, k: i64) -> Option<Affine> {
        self.constant = self.constant.checked_add(other.constant.checked_mul(k)?)?;
        for (t, c) in other.terms {
            let c = c.checked_mul(k)?;
            match self.terms.iter_mut().find(|(u, _)| *u == t) {
                Some((_, d)) => *d = d.checked_add(c)?,
                None => self.terms.push((t, c)),
            }
        }
        self.terms.retain(|(_, c)| *c != 0);
        Some(self)
    }

    fn scale(self, k: i64) -> Option<Affine> {
        Affine::default().add_scaled(self, k)
    }
}

/// `i` in affine form: sums, differences and products by constants expanded, every loop
/// variable, sym and other sub-index a term; `None` on overflow.
pub fn affine(i: &Index) -> Option<Affine> {
    Some(match i {
        Index::Const(c) => Affine { terms: vec![], constant: *c },
        Index::Bin(IndexOp::Add, a, b) => affine(a)?.add_scaled(affine(b)?, 1)?,
        Index::Bin(IndexOp::Sub, a, b) => affine(a)?.add_scaled(affine(b)?, -1)?,
        Index::Bin(IndexOp::Mul, a, b) => match (a.as_const(), b.as_const()) {
            (Some(k), _) => affine(b)?.scale(k)?,
            (_, Some(k)) => affine(a)?.scale(k)?,
            _ => Affine::term(i),
        },
        _ => Affine::term(i),
    })
}
