//! Frame arenas (ARCHITECTURE.md §3, "Memory"): one aligned byte block per function
//! invocation, holding its planned tensors at the memory plan's offsets
//! ([`crate::Storage::Arena`]). This is the crate's only `unsafe` code.
//!
//! Soundness does not rest on the plan being right. A block records the byte ranges of its
//! live regions, and [`ArenaBlock::region`] refuses a region that overlaps one of them (the
//! VM then takes the tensor from its pool), so a wrong plan, or a tensor kept alive past its
//! planned interval, costs an allocation, never an alias. Dropping a region removes its range.
//! A region is not `Clone` (cloning a tensor copies its elements into a `Vec`), so `&mut`
//! access to its bytes through `&mut ArenaRegion` is exclusive, and `&` access only ever meets
//! other `&` access to the same bytes. Every region holds its block through an `Arc`: a
//! tensor that outlives its frame keeps the bytes alive (no use-after-free), and a VM reuses
//! a block only when `Arc::get_mut` proves that no region is left.
//!
//! Elements are read and written through `bytemuck`'s checked casts, as for
//! [`crate::SharedBuffer`], and only as element types for which every bit pattern is a value
//! (not `bool`: a byte other than 0 or 1 is no `bool`).

use crate::shared::Pod;
use crate::storage::Element;
use crate::{DType, TensorError};
use parking_lot::Mutex;
use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

/// Alignment of a block and of every region offset the memory plan assigns (a cache line,
/// more than any element type needs).
pub const ARENA_ALIGN: usize = 64;

/// An aligned block of bytes that [`ArenaRegion`]s are carved from at fixed offsets.
pub struct ArenaBlock {
    ptr: NonNull<u8>,
    /// The allocation's layout: `size` bytes, or one for an empty block.
    layout: Layout,
    size: usize,
    /// `start..end` byte ranges of the live regions, unordered (a frame has few live at once).
    live: Mutex<Vec<(usize, usize)>>,
}

// SAFETY: the block owns its allocation outright (nothing else has the pointer), its bytes are
// only reached through regions over disjoint ranges (each giving `&`/`&mut` access exactly as
// an owned `Vec<u8>` of its own would), and the list of live ranges is behind a mutex. So
// sending or sharing the block between threads is as safe as doing so with those `Vec`s.
unsafe impl Send for ArenaBlock {}
// SAFETY: as for `Send` above: `&ArenaBlock` only allows creating and dropping regions, which
// synchronise on the mutex.
unsafe impl Sync for ArenaBlock {}

impl ArenaBlock {
    /// A zeroed block of `size` bytes aligned to [`ARENA_ALIGN`].
    ///
    /// # Errors
    /// [`TensorError::AllocationFailed`] when the size is not a valid allocation size or the
    /// allocator refuses it (sizes come from programs, so this is an error, not an abort).
    pub fn new(size: usize) -> Result<ArenaBlock, TensorError> {
        let failed = || TensorError::AllocationFailed { bytes: size };
        // A zero-sized allocation is not allowed; an empty block still owns one line.
        let layout = Layout::from_size_align(size.max(1), ARENA_ALIGN).map_err(|_| failed())?;
        // SAFETY: the layout's size is non-zero; a null result is handled below.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or_else(failed)?;
        Ok(ArenaBlock { ptr, layout, size, live: Mutex::new(Vec::new()) })
    }

    /// Whether regions of `dtype` can be made: every dtype with storage but `bool`.
    pub fn holds(dtype: DType) -> bool {
        Pod::of(dtype).is_some()
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.size
    }

    /// Whether the block has no bytes.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// How many regions of this block are alive.
    pub fn live_regions(&self) -> usize {
        self.live.lock().len()
    }

    /// A region of `len` elements of `dtype` at byte `offset` of `block`, or `None` when the
    /// dtype has no byte-level storage here (`bool`, `float16`, vectors), the offset is not a
    /// multiple of the element size, the bytes reach past the block's end, or they overlap a
    /// live region. The region keeps the block alive. With `zero` its elements are zeros;
    /// without, they are whatever earlier regions over those bytes left (for a caller about
    /// to overwrite every element): always initialised values of a plain-old-data type, since
    /// the block was allocated zeroed and is only ever written through regions, so leaving
    /// them is safe, only not deterministic.
    pub fn region(
        block: &Arc<ArenaBlock>,
        offset: usize,
        dtype: DType,
        len: usize,
        zero: bool,
    ) -> Option<ArenaRegion> {
        let pod = Pod::of(dtype)?;
        let bytes = len.checked_mul(dtype.size_bytes())?;
        let end = offset.checked_add(bytes)?;
        if end > block.len() || !offset.is_multiple_of(dtype.size_bytes()) {
            return None;
        }
        {
            let mut live = block.live.lock();
            // Two empty regions never alias; an empty one is still recorded, to be removed.
            if live.iter().any(|&(s, e)| s < end && offset < e) {
                return None;
            }
            live.push((offset, end));
        }
        let mut region = ArenaRegion { block: block.clone(), offset, bytes, pod };
        if zero {
            region.as_bytes_mut().fill(0);
        }
        Some(region)
    }
}

impl Drop for ArenaBlock {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed` with this very layout and is freed once,
        // here; no region is left (each holds an `Arc` of the block).
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl fmt::Debug for ArenaBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ArenaBlock({} bytes, {} live region(s))", self.len(), self.live_regions())
    }
}

/// A tensor's elements at a fixed offset of an [`ArenaBlock`]: typed, exclusive over its byte
/// range while it lives, and not `Clone`. Made by [`ArenaBlock::region`].
pub struct ArenaRegion {
    block: Arc<ArenaBlock>,
    offset: usize,
    bytes: usize,
    pod: Pod,
}

impl ArenaRegion {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.pod.dtype()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.bytes / self.dtype().size_bytes()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Byte offset in the block.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The block the region lives in.
    pub fn block(&self) -> &Arc<ArenaBlock> {
        &self.block
    }

    pub(crate) fn pod(&self) -> Pod {
        self.pod
    }

    /// The elements, if they are `T`s.
    pub(crate) fn elements<T: Element>(&self) -> Option<&[T]> {
        (T::DTYPE == self.dtype()).then(|| T::cast_bytes(self.as_bytes())).flatten()
    }

    /// The elements, mutably, if they are `T`s.
    pub(crate) fn elements_mut<T: Element>(&mut self) -> Option<&mut [T]> {
        (T::DTYPE == self.dtype()).then(|| T::cast_bytes_mut(self.as_bytes_mut())).flatten()
    }

    fn as_bytes(&self) -> &[u8] {
        // SAFETY: `offset..offset + bytes` lies inside the block (checked by
        // `ArenaBlock::region`), whose allocation lives as long as this region's `Arc`, and
        // every byte is initialised: the block was allocated zeroed (`alloc_zeroed`) and is
        // only ever written through regions, with values of plain-old-data types (a region
        // made without zeroing sees what those writes left, never uninitialised memory). No live region
        // overlaps it (checked at creation, removed only on drop), and `&self` excludes the
        // only `&mut` path to these bytes (`as_bytes_mut`, which takes `&mut self`).
        unsafe { std::slice::from_raw_parts(self.block.ptr.as_ptr().add(self.offset), self.bytes) }
    }

    fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_bytes`; `&mut self` makes this the only reference to these bytes,
        // since the region is not `Clone` and no other live region overlaps them. The bytes
        // are initialised: the block was allocated zeroed and is only ever written through
        // regions with values of plain-old-data types.
        unsafe { std::slice::from_raw_parts_mut(self.block.ptr.as_ptr().add(self.offset), self.bytes) }
    }
}

impl Drop for ArenaRegion {
    fn drop(&mut self) {
        let mut live = self.block.live.lock();
        if let Some(i) = live.iter().position(|&r| r == (self.offset, self.offset + self.bytes)) {
            live.swap_remove(i);
        }
    }
}

impl fmt::Debug for ArenaRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ArenaRegion({} x {} at byte {})", self.len(), self.dtype(), self.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn regions_are_zeroed_on_request_typed_and_refused_when_they_overlap() {
        let block = Arc::new(ArenaBlock::new(256).unwrap());
        let mut a = ArenaBlock::region(&block, 0, DType::F32, 16, true).unwrap();
        a.elements_mut::<f32>().unwrap().fill(7.0);
        assert!(a.elements::<i32>().is_none());
        assert!(ArenaBlock::region(&block, 32, DType::F32, 4, true).is_none(), "overlaps a");
        assert!(ArenaBlock::region(&block, 192, DType::F64, 9, true).is_none(), "past the end");
        assert!(ArenaBlock::region(&block, 66, DType::F32, 1, true).is_none(), "misaligned");
        assert!(ArenaBlock::region(&block, 64, DType::BOOL, 1, true).is_none(), "no bool bytes");
        let b = ArenaBlock::region(&block, 64, DType::I32, 16, true).unwrap();
        assert_eq!((block.live_regions(), Arc::strong_count(&block)), (2, 3));
        drop(a);
        let kept = ArenaBlock::region(&block, 0, DType::F32, 16, false).unwrap();
        assert_eq!(kept.elements::<f32>(), Some(&[7.0f32; 16][..]), "not zeroed: what a left");
        drop(kept);
        let c = ArenaBlock::region(&block, 0, DType::U8, 64, true).unwrap();
        assert_eq!(c.elements::<u8>(), Some(&[0u8; 64][..]), "a new region starts zeroed");
        drop((b, c));
        assert_eq!((block.live_regions(), Arc::strong_count(&block)), (0, 1));
        assert!(ArenaBlock::new(usize::MAX).is_err());
    }

    /// One step of a random use of a block: make a region (offset, element count) or drop
    /// the live region at an index.
    #[derive(Clone, Debug)]
    enum Step {
        /// Offset, element count, whether to zero.
        Make(usize, usize, bool),
        Drop(usize),
    }

    fn steps() -> impl Strategy<Value = Vec<Step>> {
        let step = prop_oneof![
            (0usize..64, 0usize..24, any::<bool>()).prop_map(|(at, len, zero)| Step::Make(at * 4, len, zero)),
            (0usize..16).prop_map(Step::Drop),
        ];
        proptest::collection::vec(step, 0..64)
    }

    proptest! {
        /// Random sequences of region allocations and frees on one block never leave two live
        /// regions overlapping, and what is written through one region is never seen through
        /// another: each live region keeps reading back its own stamp.
        #[test]
        fn live_regions_never_overlap_or_see_each_others_writes(steps in steps()) {
            let block = Arc::new(ArenaBlock::new(256).unwrap());
            let mut live: Vec<(ArenaRegion, u32)> = vec![];
            for (stamp, step) in (1u32..).zip(steps) {
                match step {
                    Step::Make(at, len, zero) => {
                        if let Some(mut r) = ArenaBlock::region(&block, at, DType::U32, len, zero) {
                            prop_assert!(!zero || r.elements::<u32>().unwrap().iter().all(|&x| x == 0));
                            r.elements_mut::<u32>().unwrap().fill(stamp);
                            live.push((r, stamp));
                        } else {
                            // Refused only when it would overlap a live region or not fit.
                            let end = at + len * 4;
                            prop_assert!(
                                end > 256 || live.iter().any(|(r, _)| r.offset < end && at < r.offset + r.bytes)
                            );
                        }
                    }
                    Step::Drop(i) => {
                        if i < live.len() {
                            live.swap_remove(i);
                        }
                    }
                }
                for (i, (a, _)) in live.iter().enumerate() {
                    for (b, _) in &live[i + 1..] {
                        let disjoint = a.offset + a.bytes <= b.offset || b.offset + b.bytes <= a.offset;
                        prop_assert!(disjoint || a.is_empty() || b.is_empty());
                    }
                }
                for (r, stamp) in &live {
                    prop_assert!(r.elements::<u32>().unwrap().iter().all(|x| x == stamp));
                }
            }
            drop(live);
            prop_assert_eq!((block.live_regions(), Arc::strong_count(&block)), (0, 1));
        }
    }
}
