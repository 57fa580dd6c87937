//! Maps and sets keyed by arena ids ([`ExprId`](super::ExprId) and its kin), for the
//! per-walk bookkeeping of passes (visited nodes, rewritten nodes, atoms).
//!
//! Why not a hash map: a pass over a 10 MB program makes millions of inserts, and hashing
//! them was a fifth of compile time (`benches/scaling.md`). Why not a `Vec` indexed by id:
//! a walk covers one function, whose nodes are a few runs of the module's arena (the parsed
//! nodes, then those each earlier pass appended), and a vector as long as the arena per walk
//! would make a module of many small functions quadratic. So the ids are split into pages of
//! [`PAGE`] consecutive ids, stored densely and found through a hash map of pages, with the
//! last page used cached: consecutive ids, the common case, cost an index and a compare.

use rustc_hash::FxHashMap;
use std::cell::Cell;
use std::marker::PhantomData;

/// Ids per page.
const PAGE: usize = 64;

/// A typed arena index usable as an [`IdMap`]/[`IdSet`] key.
pub trait ArenaId: Copy {
    /// The arena index this id stands for.
    fn index(self) -> usize;
}

/// The page of `index` and the slot within it.
fn split(index: usize) -> (usize, usize) {
    (index / PAGE, index % PAGE)
}

/// Where each page lives in a dense vector, with the last page looked up cached.
#[derive(Default)]
struct Pages {
    of: FxHashMap<usize, usize>,
    /// `(page, position)` of the last page found; `usize::MAX` when none yet.
    last: Cell<(usize, usize)>,
}

impl Pages {
    fn new() -> Pages {
        Pages { of: FxHashMap::default(), last: Cell::new((usize::MAX, 0)) }
    }

    /// The position of `page`, if it has one.
    fn find(&self, page: usize) -> Option<usize> {
        let (last, at) = self.last.get();
        if last == page {
            return Some(at);
        }
        let at = *self.of.get(&page)?;
        self.last.set((page, at));
        Some(at)
    }

    /// The position of `page`, made the next free one (`len`) if it has none; the flag
    /// says whether it is new.
    fn find_or_add(&mut self, page: usize, len: usize) -> (usize, bool) {
        if let Some(at) = self.find(page) {
            return (at, false);
        }
        self.of.insert(page, len);
        self.last.set((page, len));
        (len, true)
    }
}

/// A map from ids `K` to values `V`, paged (see the module docs).
pub struct IdMap<K, V> {
    pages: Pages,
    slots: Vec<[Option<V>; PAGE]>,
    len: usize,
    key: PhantomData<K>,
}

impl<K: ArenaId, V> Default for IdMap<K, V> {
    fn default() -> Self {
        IdMap { pages: Pages::new(), slots: Vec::new(), len: 0, key: PhantomData }
    }
}

impl<K: ArenaId, V> IdMap<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `k`, if it has one.
    pub fn get(&self, k: K) -> Option<&V> {
        let (page, slot) = split(k.index());
        self.slots[self.pages.find(page)?][slot].as_ref()
    }

    /// The value of `k`, mutably, if it has one.
    pub fn get_mut(&mut self, k: K) -> Option<&mut V> {
        let (page, slot) = split(k.index());
        let at = self.pages.find(page)?;
        self.slots[at][slot].as_mut()
    }

    /// Whether `k` has a value.
    pub fn contains_key(&self, k: K) -> bool {
        self.get(k).is_some()
    }

    /// Sets the value of `k`, returning the one it had.
    pub fn insert(&mut self, k: K, v: V) -> Option<V> {
        let (at, slot) = self.place(k);
        let old = self.slots[at][slot].replace(v);
        self.len += usize::from(old.is_none());
        old
    }

    /// The value of `k`, set to `make()` first if it has none (`entry(k).or_insert_with`).
    pub fn get_or_insert_with(&mut self, k: K, make: impl FnOnce() -> V) -> &mut V {
        let (at, slot) = self.place(k);
        let value = &mut self.slots[at][slot];
        self.len += usize::from(value.is_none());
        value.get_or_insert_with(make)
    }

    /// The page position and slot of `k`, its page made if it has none.
    fn place(&mut self, k: K) -> (usize, usize) {
        let (page, slot) = split(k.index());
        let (at, new) = self.pages.find_or_add(page, self.slots.len());
        if new {
            self.slots.push(std::array::from_fn(|_| None));
        }
        (at, slot)
    }

    /// The number of ids with a value.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no id has a value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<K: ArenaId, V> FromIterator<(K, V)> for IdMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut map = IdMap::new();
        for (k, v) in iter {
            map.insert(k, v);
        }
        map
    }
}

/// A set of ids `K`, paged (see the module docs): one bit per id.
pub struct IdSet<K> {
    pages: Pages,
    bits: Vec<u64>,
    len: usize,
    key: PhantomData<K>,
}

impl<K: ArenaId> Default for IdSet<K> {
    fn default() -> Self {
        IdSet { pages: Pages::new(), bits: Vec::new(), len: 0, key: PhantomData }
    }
}

impl<K: ArenaId> IdSet<K> {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `k` is in the set.
    pub fn contains(&self, k: K) -> bool {
        let (page, slot) = split(k.index());
        self.pages.find(page).is_some_and(|at| self.bits[at] & (1 << slot) != 0)
    }

    /// Adds `k`; `false` if it was in the set already.
    pub fn insert(&mut self, k: K) -> bool {
        let (page, slot) = split(k.index());
        let (at, new) = self.pages.find_or_add(page, self.bits.len());
        if new {
            self.bits.push(0);
        }
        let fresh = self.bits[at] & (1 << slot) == 0;
        self.bits[at] |= 1 << slot;
        self.len += usize::from(fresh);
        fresh
    }

    /// The number of ids in the set.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<K: ArenaId> Extend<K> for IdSet<K> {
    fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
        for k in iter {
            self.insert(k);
        }
    }
}

impl<K: ArenaId> FromIterator<K> for IdSet<K> {
    fn from_iter<I: IntoIterator<Item = K>>(iter: I) -> Self {
        let mut set = IdSet::new();
        set.extend(iter);
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::ExprId;
    use std::collections::{BTreeMap, BTreeSet};

    /// Ids in runs far apart, as a function's nodes are after a few passes, and revisits.
    fn ids() -> Vec<u32> {
        let mut ids: Vec<u32> = (0..200).chain(1_000_000..1_000_130).chain(63..70).collect();
        ids.extend((0..500u32).map(|i| i.wrapping_mul(2_654_435_761) % 3_000_000));
        ids
    }

    #[test]
    fn the_set_agrees_with_a_btree_set() {
        let (mut set, mut reference) = (IdSet::new(), BTreeSet::new());
        for id in ids() {
            assert_eq!(set.insert(ExprId(id)), reference.insert(id), "insert {id}");
        }
        assert_eq!(set.len(), reference.len());
        for id in 0..1_100_000 {
            assert_eq!(set.contains(ExprId(id)), reference.contains(&id), "contains {id}");
        }
    }

    #[test]
    fn the_map_agrees_with_a_btree_map() {
        let (mut map, mut reference) = (IdMap::new(), BTreeMap::new());
        for (n, id) in ids().into_iter().enumerate() {
            assert_eq!(map.insert(ExprId(id), n), reference.insert(id, n), "insert {id}");
        }
        assert_eq!(map.len(), reference.len());
        for id in 0..1_100_000 {
            assert_eq!(map.get(ExprId(id)), reference.get(&id), "get {id}");
        }
        *map.get_mut(ExprId(5)).unwrap() = 7;
        *map.get_or_insert_with(ExprId(2_500_000), || 0) += 2;
        *map.get_or_insert_with(ExprId(2_500_000), || 0) += 3;
        assert_eq!(map.get(ExprId(2_500_000)), Some(&5));
        assert_eq!(map.len(), reference.len() + usize::from(!reference.contains_key(&2_500_000)));
        assert_eq!(map.get(ExprId(5)), Some(&7));
        for id in [6, 999_999, 2_000_000] {
            assert_eq!(map.get_mut(ExprId(id)).is_some(), reference.contains_key(&id), "get_mut {id}");
        }
    }
}
