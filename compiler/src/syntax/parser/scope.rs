//! Lexically scoped name tables with O(1) lookup and cheap scope exit.

use rustc_hash::FxHashMap as HashMap;
use std::hash::Hash;

/// Names bound in nested scopes: `insert` shadows, `restore(mark)` forgets everything
/// inserted since `mark()`. A 100,000-deep `let` chain costs one vector entry per binding.
#[derive(Debug)]
pub(super) struct ScopedMap<K, V> {
    bindings: HashMap<K, Vec<V>>,
    log: Vec<K>,
}

impl<K: Copy + Eq + Hash, V: Copy> ScopedMap<K, V> {
    pub(super) fn new() -> Self {
        ScopedMap { bindings: HashMap::default(), log: Vec::new() }
    }

    /// Binds `key`, shadowing any earlier binding until the enclosing scope is restored.
    pub(super) fn insert(&mut self, key: K, value: V) {
        self.bindings.entry(key).or_default().push(value);
        self.log.push(key);
    }

    /// The innermost binding of `key`.
    pub(super) fn get(&self, key: &K) -> Option<V> {
        self.bindings.get(key).and_then(|vs| vs.last().copied())
    }

    /// A point to return to with [`ScopedMap::restore`].
    pub(super) fn mark(&self) -> usize {
        self.log.len()
    }

    /// Forgets every binding made since `mark`.
    pub(super) fn restore(&mut self, mark: usize) {
        while self.log.len() > mark {
            let Some(key) = self.log.pop() else { break };
            if let Some(vs) = self.bindings.get_mut(&key) {
                vs.pop();
                if vs.is_empty() {
                    self.bindings.remove(&key);
                }
            }
        }
    }

    /// Every name currently bound (for "did you mean" suggestions).
    pub(super) fn keys(&self) -> impl Iterator<Item = &K> {
        self.bindings.keys()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shadowing_and_restore() {
        let mut m = ScopedMap::new();
        m.insert("x", 1);
        let mark = m.mark();
        m.insert("x", 2);
        m.insert("y", 3);
        assert_eq!(m.get(&"x"), Some(2));
        m.restore(mark);
        assert_eq!(m.get(&"x"), Some(1));
        assert_eq!(m.get(&"y"), None);
        assert_eq!(m.keys().count(), 1);
    }
}
