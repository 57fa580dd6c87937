//! Which weights are read packed ([`PackedMatrix`]), and the one packed copy of each.
//!
//! Packing reads the whole matrix and writes a copy, the time of 10–20 products, so a tensor
//! is packed the [`PACK_AFTER`]th time calls pass it: weights, passed to every call of every
//! run, are packed within the first run, while a matrix computed during a run and used a few
//! times (CharRNN slices its weights once per name and uses the slices for each letter) never
//! is.
//!
//! **One copy per weight.** The count and the copy belong to the tensor, not to the kernel
//! that reads it: a weight read by several kernels (a leaf and an internal node of the
//! Tree-LSTM, and each batched form `run --batch` compiles of them, one per number of
//! requests) is counted over all their calls and packed once, into one copy that all of them
//! read. Before, each compiled kernel kept its own count and copy: `--batch 16` made five
//! copies of each Tree-LSTM weight (the table's kernel and the forms for 2, 4, 8 and 16
//! requests), each first read unpacked for 24 calls, and five copies of the 0.9 MB of weights
//! do not fit the 2 MB L2 cache together. The process-wide [`Store`] holds the copies; each
//! kernel operand's [`PackSlot`] remembers the copies it was given, so that its calls find
//! them without the shared lock.
//!
//! A packed copy is valid exactly while its tensor is alive and unchanged, and the cache
//! holds a `Weak` of the tensor's `Arc`, which keeps both true without keeping the weights
//! alive: while a `Weak` exists, `Arc::get_mut` refuses everyone (the VM writes only into
//! tensors it gets that way) and `Arc::make_mut` moves the tensor to a new allocation, so the
//! tensor at the cached address cannot change, and that address cannot be reused by another
//! tensor. Entries and candidates whose tensor died are dropped at the next lookup of a tensor
//! the store has not seen (a slot's at its next lookup).
//!
//! What the cache decides changes speed only, never results: a product whose weights are not
//! packed (yet, or any more) sums in the packed order (`packed::gemm_rows_in_order`), so calls
//! give the same bits whenever, and by whichever thread or kernel, the weights got packed.

use super::packed::PackedMatrix;
use parking_lot::Mutex;
use relay_devices::Tensor;
use std::sync::{Arc, Weak};

/// Packed copies a kernel operand remembers: a kernel shared by a few layers or models, each
/// with its weights.
const SLOT_ENTRIES: usize = 4;
/// Packed copies the process keeps: the dense weights of a few models.
const STORE_ENTRIES: usize = 64;
/// Tensors counted while they are not packed yet (the oldest is forgotten first).
const CANDIDATES: usize = 64;
/// Calls that pass a tensor before it is packed (measured on CharRNN, whose per-name weight
/// slices serve up to 20 letters: 2 packed them all and cost 60% of its time).
pub(crate) const PACK_AFTER: u32 = 24;

/// A tensor read as a `[n, k]` matrix: the key of a packed copy.
struct Entry<T> {
    tensor: Weak<Tensor>,
    n: usize,
    k: usize,
    value: T,
}

impl<T> Entry<T> {
    fn is(&self, t: &Arc<Tensor>, n: usize, k: usize) -> bool {
        std::ptr::eq(self.tensor.as_ptr(), Arc::as_ptr(t)) && (self.n, self.k) == (n, k)
    }

    fn alive(&self) -> bool {
        self.tensor.strong_count() > 0
    }
}

/// The process's packed copies and the counts of tensors not packed yet.
struct Store {
    /// Tensors seen unpacked, with how many calls passed each.
    candidates: Vec<Entry<u32>>,
    packed: Vec<Entry<Arc<PackedMatrix>>>,
}

static STORE: Mutex<Store> = Mutex::new(Store { candidates: Vec::new(), packed: Vec::new() });

/// Appends `entry` to `list`, first dropping dead entries and then, while the list is full,
/// the oldest.
fn push_bounded<T>(list: &mut Vec<Entry<T>>, entry: Entry<T>, bound: usize) {
    list.retain(Entry::alive);
    if list.len() >= bound {
        list.drain(..=list.len() - bound);
    }
    list.push(entry);
}

impl Store {
    /// The packed copy of `t` as a `[n, k]` matrix, counting this call (module docs).
    fn lookup(&mut self, t: &Arc<Tensor>, n: usize, k: usize) -> Option<Arc<PackedMatrix>> {
        if let Some(e) = self.packed.iter().find(|e| e.is(t, n, k)) {
            return Some(e.value.clone());
        }
        let Some(at) = self.candidates.iter().position(|e| e.is(t, n, k)) else {
            self.packed.retain(Entry::alive);
            let entry = Entry { tensor: Arc::downgrade(t), n, k, value: 1 };
            push_bounded(&mut self.candidates, entry, CANDIDATES);
            return None;
        };
        self.candidates[at].value += 1;
        if self.candidates[at].value < PACK_AFTER {
            return None;
        }
        self.candidates.remove(at);
        let packed = Arc::new(PackedMatrix::new(t.as_slice::<f32>().ok()?, n, k)?);
        let entry = Entry { tensor: Arc::downgrade(t), n, k, value: packed.clone() };
        push_bounded(&mut self.packed, entry, STORE_ENTRIES);
        Some(packed)
    }
}

/// The packed copies one `gemm` operand of one kernel has been given.
#[derive(Default)]
pub(crate) struct PackSlot {
    known: Mutex<Vec<Entry<Arc<PackedMatrix>>>>,
}

impl PackSlot {
    /// The packed form of `t` as a `[n, k]` float32 matrix, when it has one or this is the
    /// [`PACK_AFTER`]th call (of any kernel) to pass it (then it is packed now); `None`
    /// otherwise.
    pub(crate) fn lookup(&self, t: &Arc<Tensor>, n: usize, k: usize) -> Option<Arc<PackedMatrix>> {
        let mut known = self.known.lock();
        known.retain(Entry::alive);
        if let Some(e) = known.iter().find(|e| e.is(t, n, k)) {
            return Some(e.value.clone());
        }
        let packed = STORE.lock().lookup(t, n, k)?;
        if known.len() == SLOT_ENTRIES {
            known.remove(0);
        }
        known.push(Entry { tensor: Arc::downgrade(t), n, k, value: packed.clone() });
        Some(packed)
    }

    /// Bytes of the packed copies the slot reads (shared with the other kernels that read the
    /// same weights).
    pub(crate) fn bytes(&self) -> usize {
        self.known.lock().iter().map(|e| e.value.bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(v: f32) -> Arc<Tensor> {
        Arc::new(Tensor::from_vec(vec![20, 3], vec![v; 60]).unwrap())
    }

    /// Calls passing `t` until one returns a packed copy (at most `PACK_AFTER`).
    fn calls_until_packed(slot: &PackSlot, t: &Arc<Tensor>) -> Option<u32> {
        (1..=PACK_AFTER).find(|_| slot.lookup(t, 20, 3).is_some())
    }

    fn packs() -> bool {
        PackedMatrix::new(&[0.0], 1, 1).is_some()
    }

    #[test]
    fn a_tensor_is_packed_after_enough_calls_and_dropped_with_it() {
        if !packs() {
            return; // No AVX-512: nothing is ever packed.
        }
        let slot = PackSlot::default();
        let (w, other) = (weights(1.0), weights(2.0));
        // Calls passing another tensor in between do not start the count over.
        for _ in 0..PACK_AFTER - 1 {
            assert!(slot.lookup(&w, 20, 3).is_none());
            assert!(slot.lookup(&other, 20, 3).is_none());
        }
        let p = slot.lookup(&w, 20, 3).expect("packed at the PACK_AFTERth call");
        assert_eq!(p.shape(), (20, 3));
        assert_eq!(slot.bytes(), 2 * 3 * 64, "two 16-lane vectors per input");
        assert!(Arc::ptr_eq(&p, &slot.lookup(&w, 20, 3).unwrap()), "kept");
        // The cache does not keep the weights alive, but nobody can write into them while it
        // knows them: `get_mut` refuses, `make_mut` moves them to a new address.
        let mut w = w;
        assert_eq!(Arc::strong_count(&w), 1);
        assert!(Arc::get_mut(&mut w).is_none());
        Arc::make_mut(&mut w);
        assert!(slot.lookup(&w, 20, 3).is_none(), "a moved tensor is not the packed one");
        assert_eq!(slot.bytes(), 0, "the packed copy of the old address is dropped");
        assert_eq!(calls_until_packed(&slot, &w), Some(PACK_AFTER - 1), "the moved tensor counts afresh");
        drop(w);
        assert!(slot.lookup(&other, 20, 3).is_some(), "its count survived");
        drop(other);
        assert!(slot.lookup(&weights(3.0), 20, 3).is_none());
        assert_eq!(slot.bytes(), 0, "a dead tensor's packed copy is dropped");
    }

    #[test]
    fn kernels_passing_one_tensor_share_its_count_and_its_copy() {
        if !packs() {
            return;
        }
        // A kernel and its batched forms: each has its own slot for the same weights.
        let (table, batched) = (PackSlot::default(), PackSlot::default());
        let w = weights(4.0);
        for _ in 0..PACK_AFTER / 2 {
            assert!(table.lookup(&w, 20, 3).is_none());
        }
        for _ in 0..PACK_AFTER / 2 - 1 {
            assert!(batched.lookup(&w, 20, 3).is_none());
        }
        let p = batched.lookup(&w, 20, 3).expect("the calls of both kernels count");
        let q = table.lookup(&w, 20, 3).expect("packed for every kernel at once");
        assert!(Arc::ptr_eq(&p, &q), "one copy");
        // The same tensor read as another shape is another matrix.
        assert!(table.lookup(&w, 30, 2).is_none());
    }

    #[test]
    fn a_tensor_of_another_dtype_or_size_is_not_packed() {
        let slot = PackSlot::default();
        let ints = Arc::new(Tensor::from_vec(vec![2, 2], vec![1i32; 4]).unwrap());
        for _ in 0..PACK_AFTER + 1 {
            assert!(slot.lookup(&ints, 2, 2).is_none());
        }
        let w = weights(1.0);
        for _ in 0..PACK_AFTER + 1 {
            assert!(slot.lookup(&w, 7, 3).is_none());
        }
    }
}
