//! Which weights a kernel reads packed ([`PackedMatrix`]), and keeping their packed copies.
//!
//! Packing reads the whole matrix and writes a copy, the time of 10–20 products, so an
//! operand is packed the [`PACK_AFTER`]th time calls pass the same tensor: weights, passed to
//! every call of every run, are packed within the first run, while a matrix computed during a
//! run and used a few times (CharRNN slices its weights once per name and uses the slices for
//! each letter) never is. A packed copy is valid exactly while its tensor is alive and
//! unchanged, and the cache holds a `Weak` of the tensor's `Arc`, which keeps both true
//! without keeping the weights alive: while a `Weak` exists, `Arc::get_mut` refuses everyone
//! (the VM writes only into tensors it gets that way) and `Arc::make_mut` moves the tensor to
//! a new allocation, so the tensor at the cached address cannot change, and that address
//! cannot be reused by another tensor. Entries and candidates whose tensor died are dropped at
//! the slot's next lookup.
//!
//! What the cache decides changes speed only, never results: a product whose weights are not
//! packed (yet, or any more) sums in the packed order (`packed::gemm_rows_in_order`), so calls
//! give the same bits whenever, and by whichever thread, the weights got packed.

use super::packed::PackedMatrix;
use parking_lot::Mutex;
use relay_devices::Tensor;
use std::sync::{Arc, Weak};

/// Packed copies kept per operand: a kernel shared by a few layers or models, each with its
/// weights.
const ENTRIES: usize = 4;
/// Tensors counted per operand while they are not packed yet.
const CANDIDATES: usize = 8;
/// Calls that pass a tensor before it is packed (measured on CharRNN, whose per-name weight
/// slices serve up to 20 letters: 2 packed them all and cost 60% of its time).
pub(crate) const PACK_AFTER: u32 = 24;

/// The packed copies of one `gemm` operand of one kernel.
#[derive(Default)]
pub(crate) struct PackSlot {
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    /// Tensors seen unpacked, with how many calls passed each.
    candidates: Vec<(Weak<Tensor>, u32)>,
    packed: Vec<(Weak<Tensor>, Arc<PackedMatrix>)>,
}

fn is(seen: &Weak<Tensor>, t: &Arc<Tensor>) -> bool {
    std::ptr::eq(seen.as_ptr(), Arc::as_ptr(t))
}

impl PackSlot {
    /// The packed form of `t` as a `[n, k]` float32 matrix, when it has one or this is the
    /// [`PACK_AFTER`]th call to pass it (then it is packed now); `None` otherwise.
    pub(crate) fn lookup(&self, t: &Arc<Tensor>, n: usize, k: usize) -> Option<Arc<PackedMatrix>> {
        let mut state = self.state.lock();
        state.packed.retain(|(seen, _)| seen.strong_count() > 0);
        if let Some((_, p)) = state.packed.iter().find(|(seen, _)| is(seen, t)) {
            return Some(p.clone());
        }
        state.candidates.retain(|(seen, _)| seen.strong_count() > 0);
        let Some(at) = state.candidates.iter().position(|(seen, _)| is(seen, t)) else {
            if state.candidates.len() == CANDIDATES {
                state.candidates.remove(0);
            }
            state.candidates.push((Arc::downgrade(t), 1));
            return None;
        };
        state.candidates[at].1 += 1;
        if state.candidates[at].1 < PACK_AFTER {
            return None;
        }
        state.candidates.remove(at);
        let packed = Arc::new(PackedMatrix::new(t.as_slice::<f32>().ok()?, n, k)?);
        if state.packed.len() == ENTRIES {
            state.packed.remove(0);
        }
        state.packed.push((Arc::downgrade(t), packed.clone()));
        Some(packed)
    }

    /// Bytes of the packed copies the slot holds.
    pub(crate) fn bytes(&self) -> usize {
        self.state.lock().packed.iter().map(|(_, p)| p.bytes()).sum()
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

    #[test]
    fn a_tensor_is_packed_after_enough_calls_and_dropped_with_it() {
        if PackedMatrix::new(&[0.0], 1, 1).is_none() {
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
