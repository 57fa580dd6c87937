//! How full the agenda's batched calls are: a histogram of the number of lanes per call,
//! which `bench --batch B` prints (DyNet reports the same to judge its agenda).

use std::fmt;

/// Calls of batchable kernels by the number of lanes that ran together (index 1: a call run
/// alone, on the table's kernel).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupSizes(Vec<u64>);

impl GroupSizes {
    /// Counts one call of `lanes` lanes.
    pub fn record(&mut self, lanes: usize) {
        if self.0.len() <= lanes {
            self.0.resize(lanes + 1, 0);
        }
        self.0[lanes] += 1;
    }

    /// Adds `other`'s counts (another thread's).
    pub fn add(&mut self, other: &GroupSizes) {
        for (lanes, &calls) in other.counts() {
            if self.0.len() <= lanes {
                self.0.resize(lanes + 1, 0);
            }
            self.0[lanes] += calls;
        }
    }

    /// `(lanes, calls)` for each number of lanes that some call had, smallest first.
    pub fn counts(&self) -> impl Iterator<Item = (usize, &u64)> {
        self.0.iter().enumerate().filter(|(_, &calls)| calls > 0)
    }

    /// Calls in all.
    pub fn calls(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Kernel calls of single lanes in all (each batched call counts its lanes): what running
    /// each input alone would have made.
    pub fn lane_calls(&self) -> u64 {
        self.counts().map(|(lanes, &calls)| lanes as u64 * calls).sum()
    }
}

/// `1×9, 4×4082, 8×3254 (mean 6.1 lanes per call)`.
impl fmt::Display for GroupSizes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.counts().map(|(lanes, calls)| format!("{lanes}×{calls}")).collect();
        let mean = self.lane_calls() as f64 / self.calls().max(1) as f64;
        write!(f, "{} (mean {mean:.1} lanes per call)", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up() {
        let mut a = GroupSizes::default();
        [8, 8, 1, 4].into_iter().for_each(|n| a.record(n));
        let mut b = GroupSizes::default();
        b.record(2);
        b.add(&a);
        assert_eq!(b.counts().map(|(n, &c)| (n, c)).collect::<Vec<_>>(), [(1, 1), (2, 1), (4, 1), (8, 2)]);
        assert_eq!((b.calls(), b.lane_calls()), (5, 23));
        assert_eq!(b.to_string(), "1×1, 2×1, 4×1, 8×2 (mean 4.6 lanes per call)");
    }
}
