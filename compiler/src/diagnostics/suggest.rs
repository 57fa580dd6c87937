//! "Did you mean" suggestions: the one bounded edit-distance search every site uses (unknown
//! locals, globals, constructors, types, dtypes and operators).
//!
//! The cost of one suggestion is linear in the number of candidates whatever the names'
//! lengths: names longer than [`MAX_SUGGESTED_NAME`] characters get none, candidates whose
//! length differs by more than the allowed distance are skipped without comparing, and the
//! distance is computed over three rolling rows and abandoned once every cell of a row
//! exceeds the allowed distance.

/// The longest name (in characters) for which a suggestion is searched: longer ones are not
/// typos of a name someone wrote by hand.
pub const MAX_SUGGESTED_NAME: usize = 64;

/// The candidate closest to `name` by edit distance, if it is close enough to be a likely
/// typo: at most one edit per three characters of `name`, at least one. Ties go to the
/// first candidate; `name` itself is never suggested.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let a: Vec<char> = name.chars().collect();
    if a.len() > MAX_SUGGESTED_NAME {
        return None;
    }
    let limit = (a.len() / 3).max(1);
    let mut best: Option<(usize, &'a str)> = None;
    let mut b = Vec::with_capacity(MAX_SUGGESTED_NAME + limit);
    for c in candidates {
        // Cheap rejections first: a candidate this far off in length cannot be within `limit`.
        if c == name || c.len() > 4 * (a.len() + limit) {
            continue;
        }
        b.clear();
        b.extend(c.chars());
        if b.len().abs_diff(a.len()) > limit {
            continue;
        }
        let bound = best.map_or(limit, |(d, _)| d.saturating_sub(1));
        if let Some(d) = distance_within(&a, &b, bound) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// The edit distance between `a` and `b` where swapping two neighbours also counts as one
/// edit (optimal string alignment, so `mian` is one edit from `main`), if it is at most
/// `limit`.
fn distance_within(a: &[char], b: &[char], limit: usize) -> Option<usize> {
    // Rows i-2, i-1 and i of the table: row[j] = distance between a[..i] and b[..j].
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            cur[j] = d;
        }
        // Distances never shrink from one row to a later one along any alignment.
        if cur.iter().min().is_some_and(|&m| m > limit) {
            return None;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[b.len()]).filter(|&d| d <= limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn distance(a: &str, b: &str) -> Option<usize> {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        distance_within(&a, &b, usize::MAX / 2)
    }

    #[test]
    fn distances() {
        assert_eq!(distance("main", "mian"), Some(1));
        assert_eq!(distance("flaot32", "float32"), Some(1));
        assert_eq!(distance("kitten", "sitting"), Some(3));
        assert_eq!(distance("", "ab"), Some(2));
        assert_eq!(distance("Cons", "Cons"), Some(0));
        let (a, b): (Vec<char>, Vec<char>) = ("kitten".chars().collect(), "sitting".chars().collect());
        assert_eq!(distance_within(&a, &b, 2), None);
        assert_eq!(distance_within(&a, &b, 3), Some(3));
    }

    #[test]
    fn suggestions() {
        assert_eq!(closest("mian", ["main", "map"]), Some("main"));
        assert_eq!(closest("flaot32", ["float16", "float32", "int32"]), Some("float32"));
        assert_eq!(closest("xyz", ["main"]), None);
        assert_eq!(closest("x", ["y"]), Some("y"));
        assert_eq!(closest("x", ["x"]), None);
        assert_eq!(closest("nn.conv2", ["nn.conv1d", "nn.conv2d"]), Some("nn.conv2d"));
        // The first of equally close candidates.
        assert_eq!(closest("ab", ["ac", "ad"]), Some("ac"));
    }

    #[test]
    fn long_names_cost_nothing() {
        let long = "x".repeat(MAX_SUGGESTED_NAME + 1);
        assert_eq!(closest(&long, [long[1..].as_ref()]), None);
        let longest = "x".repeat(MAX_SUGGESTED_NAME);
        assert_eq!(closest(&longest, [long.as_str()]), Some(long.as_str()));
        // A candidate megabytes long is skipped by length alone.
        let huge = "y".repeat(1 << 20);
        assert_eq!(closest("yy", [huge.as_str()]), None);
    }
}
