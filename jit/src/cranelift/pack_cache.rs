//! Which weights a kernel reads packed ([`PackedMatrix`]), and keeping their packed copies.
//!
//! Packing costs a few products' worth of time, so an operand is packed the second time a
//! call passes the same tensor — weights, passed to every call — and a one-off matrix never
//! is. A packed copy is valid exactly while its tensor is alive and unchanged, and the cache
//! holds a `Weak` of the tensor's `Arc`, which keeps both true without keeping the weights
//! alive: while a `Weak` exists, `Arc::get_mut` refuses everyone (the VM writes only into
//! tensors it gets that way) and `Arc::make_mut` moves the tensor to a new allocation, so the
//! tensor at the cached address cannot change, and that address cannot be reused by another
//! tensor. An entry whose tensor died is dropped at the slot's next lookup.

use super::packed::PackedMatrix;
use relay_devices::Tensor;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// Packed copies kept per operand: a kernel shared by a few models, each with its weights.
const ENTRIES: usize = 4;

/// The packed copies of one `gemm` operand of one kernel.
#[derive(Default)]
pub(crate) struct PackSlot {
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    /// The last tensor seen unpacked: packed if it comes again.
    candidate: Weak<Tensor>,
    packed: Vec<(Weak<Tensor>, Arc<PackedMatrix>)>,
}

impl PackSlot {
    /// The packed form of `t` as a `[n, k]` float32 matrix, when it has one or this is the
    /// second call in a row to pass it (then it is packed now); `None` otherwise.
    pub(crate) fn lookup(&self, t: &Arc<Tensor>, n: usize, k: usize) -> Option<Arc<PackedMatrix>> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.packed.retain(|(seen, _)| seen.strong_count() > 0);
        if let Some((_, p)) =
            state.packed.iter().find(|(seen, _)| std::ptr::eq(seen.as_ptr(), Arc::as_ptr(t)))
        {
            return Some(p.clone());
        }
        if !std::ptr::eq(state.candidate.as_ptr(), Arc::as_ptr(t)) || state.candidate.strong_count() == 0 {
            state.candidate = Arc::downgrade(t);
            return None;
        }
        let packed = Arc::new(PackedMatrix::new(t.as_slice::<f32>().ok()?, n, k)?);
        if state.packed.len() == ENTRIES {
            state.packed.remove(0);
        }
        state.packed.push((Arc::downgrade(t), packed.clone()));
        state.candidate = Weak::new();
        Some(packed)
    }

    /// Bytes of the packed copies the slot holds.
    pub(crate) fn bytes(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).packed.iter().map(|(_, p)| p.bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(v: f32) -> Arc<Tensor> {
        Arc::new(Tensor::from_vec(vec![20, 3], vec![v; 60]).unwrap())
    }

    #[test]
    fn a_tensor_is_packed_when_it_comes_twice_and_dropped_with_it() {
        if PackedMatrix::new(&[0.0], 1, 1).is_none() {
            return; // No AVX-512: nothing is ever packed.
        }
        let slot = PackSlot::default();
        let (w, other) = (weights(1.0), weights(2.0));
        assert!(slot.lookup(&w, 20, 3).is_none());
        assert!(slot.lookup(&other, 20, 3).is_none(), "a different tensor starts over");
        assert!(slot.lookup(&w, 20, 3).is_none());
        let p = slot.lookup(&w, 20, 3).expect("second call in a row");
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
        assert!(slot.lookup(&w, 20, 3).is_some(), "the moved tensor is packed on its second call");
        drop(w);
        assert!(slot.lookup(&other, 20, 3).is_none());
        assert_eq!(slot.bytes(), 0, "a dead tensor's packed copy is dropped");
    }

    #[test]
    fn a_tensor_of_another_dtype_or_size_is_not_packed() {
        let slot = PackSlot::default();
        let ints = Arc::new(Tensor::from_vec(vec![2, 2], vec![1i32; 4]).unwrap());
        for _ in 0..3 {
            assert!(slot.lookup(&ints, 2, 2).is_none());
        }
        let w = weights(1.0);
        for _ in 0..3 {
            assert!(slot.lookup(&w, 7, 3).is_none());
        }
    }
}
