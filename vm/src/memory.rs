//! Tensor memory at run time (ARCHITECTURE.md §3, "Memory"): per-invocation frame arenas at
//! the memory plan's offsets, and a size-class pool for everything else.
//!
//! The compiler's memory plan gives each statically shaped tensor that does not outlive its
//! frame a byte offset in the frame's arena (`AllocFrame`); tensors whose live intervals are
//! disjoint may overlap in bytes. Each invocation of a function with such tensors takes one
//! block ([`ArenaBlock`]) of the function's arena size at its first `AllocFrame`, from a cache
//! of free blocks (LIFO, so recursion and repeated calls allocate nothing after warm-up), and
//! gives it back on return. The tensor is a region of the block ([`relay_devices::Storage::Arena`])
//! which the block refuses when its bytes are still held by a live region — a wrong plan, or
//! a tensor kept past its planned interval, then costs a pool allocation, never an alias. A
//! block goes back to the cache only when no region of it is left (`Arc::get_mut`); one that
//! a surviving tensor still holds is freed with it. `AllocFrame` only ever writes registers
//! that kernels read (the plan's escape analysis), so no arena tensor reaches an ADT, a
//! call or a run's result.
//!
//! Everything else (escaping tensors, `?`-shaped kernel outputs, `bool` tensors, whose bytes
//! cannot be viewed as `bool`s) goes through the [`Pool`]: free lists keyed by dtype and
//! element count, reused across calls and runs, bounded by [`POOL_LIMIT_BYTES`].
//!
//! Every buffer whose size comes from a program or an input is checked against a
//! [`Budget`] before it is allocated, and allocated fallibly: one tensor may not exceed
//! `max_tensor_bytes`, and the bytes the pool has handed out in the current run and not seen
//! die, plus its free lists, may not exceed `max_memory_bytes` (arena blocks have their own
//! count under the same limit). A buffer dies unseen when a
//! value holding it is dropped outside the pool (rare: overwritten registers, a cell shared
//! when recycled), so the count errs on the high side within a run; it restarts from the
//! free lists at every run, as results belong to the host once returned.

use crate::operand::Init;
use crate::value::{AdtValue, ClosureValue, Fields, Value};
use relay_devices::{shape_size, ArenaBlock, DType, Storage, Tensor};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// The most bytes of free buffers the pool keeps, and (separately) of free arena blocks;
/// beyond it, dead buffers are freed.
pub const POOL_LIMIT_BYTES: usize = 256 << 20;

/// The most free arena blocks kept (a block is looked for among them at each call).
const MAX_FREE_BLOCKS: usize = 64;

/// Allocation statistics of one [`crate::Vm`] since it was made or its statistics were
/// reset ([`crate::Vm::reset_memory_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Tensors placed in a frame arena block at their planned offset.
    pub arena_allocs: u64,
    /// Planned tensors (`AllocFrame`) served by the pool instead: their bytes were still held
    /// by a live tensor, their dtype is `bool`, reuse is off, or no block could be had.
    pub arena_fallbacks: u64,
    /// Arena blocks taken from the system (not from the VM's cache of free blocks).
    pub arena_blocks: u64,
    /// Tensors served by the pool's free lists.
    pub pool_allocs: u64,
    /// Tensors whose buffer came from the system allocator.
    pub system_allocs: u64,
    /// Bytes of those system-allocated buffers.
    pub system_bytes: u64,
    /// Most bytes held at once in arena blocks: those of live frames and the free ones kept.
    pub peak_arena_bytes: usize,
    /// Most bytes held at once in pool buffers: handed out in the run and not seen die (an
    /// upper bound, see the module docs), plus the free lists.
    pub peak_pool_bytes: usize,
}

impl std::fmt::Display for MemoryStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tensor allocations: {} arena ({} planned ones from the pool, {} blocks), {} pool, {} system ({} bytes); peak arena {} bytes, peak pool {} bytes",
            self.arena_allocs,
            self.arena_fallbacks,
            self.arena_blocks,
            self.pool_allocs,
            self.system_allocs,
            self.system_bytes,
            self.peak_arena_bytes,
            self.peak_pool_bytes
        )
    }
}

/// The most dead ADT cells (and, separately, closures) kept for reuse.
const MAX_FREE_CELLS: usize = 4096;

/// The memory limits of one VM (`VmConfig::max_tensor_bytes`, `VmConfig::max_memory_bytes`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    /// The most bytes one tensor may have.
    pub max_tensor_bytes: usize,
    /// The most bytes of pool tensors (and, separately, of registers or arena blocks) a run
    /// holds.
    pub max_memory_bytes: usize,
}

impl Budget {
    /// No limit but the allocator's (tests of the pool alone).
    #[cfg(test)]
    pub const UNLIMITED: Budget = Budget { max_tensor_bytes: usize::MAX, max_memory_bytes: usize::MAX };

    /// How many items of `T` fit in the budget (register files, the table of frame arenas).
    pub fn max_items<T>(&self) -> usize {
        self.max_memory_bytes / std::mem::size_of::<T>().max(1)
    }
}

/// Free tensor buffers by dtype and element count, and the VM's allocation statistics.
pub(crate) struct Pool {
    // Looked up on every kernel output: a fast hash of two small integers, not SipHash.
    free: FxHashMap<(DType, usize), Vec<Arc<Tensor>>>,
    bytes: usize,
    /// The values still to visit in [`Pool::recycle_value`] (kept to avoid an allocation per
    /// dead list or tree).
    work: Vec<Value>,
    /// Dead ADT cells and closures, emptied, for `AllocADT`/`AllocClosure` to refill: list
    /// cells and tuples die as fast as tensors in a recursive model.
    adts: Vec<Arc<AdtValue>>,
    closures: Vec<Arc<ClosureValue>>,
    /// Dimensions of the shape being allocated (kept to avoid an allocation per tensor).
    dims: Vec<usize>,
    /// Whether dead buffers are kept for reuse at all.
    enabled: bool,
    budget: Budget,
    /// Bytes of the buffers handed out in this run and not seen die, and of the free lists
    /// (module docs).
    live: usize,
    pub stats: MemoryStats,
}

#[cfg(test)]
impl Default for Pool {
    fn default() -> Pool {
        Pool::new(true, Budget::UNLIMITED)
    }
}

impl Pool {
    /// A pool within `budget` that keeps dead buffers for reuse, or (`enabled` off) frees
    /// them.
    pub fn new(enabled: bool, budget: Budget) -> Pool {
        Pool {
            free: FxHashMap::default(),
            bytes: 0,
            work: vec![],
            adts: vec![],
            closures: vec![],
            dims: vec![],
            enabled,
            budget,
            live: 0,
            stats: MemoryStats::default(),
        }
    }

    /// Starts a run's count of live bytes: the buffers earlier runs returned are the host's.
    pub fn start_run(&mut self) {
        self.live = self.bytes;
    }

    /// A tensor of `dtype` and `shape`, from the free lists or the system: zeroed, or with
    /// [`Init::Kernel`] a reused buffer keeps the dead tensor's values (a new one is zeroed
    /// by the system anyway).
    ///
    /// # Errors
    /// A negative dimension, a shape or dtype a tensor cannot have, a tensor over the
    /// budget's `max_tensor_bytes`, a run over its `max_memory_bytes`, or an allocation the
    /// system refuses.
    pub fn alloc(&mut self, dtype: DType, shape: &[i64], init: Init) -> Result<Arc<Tensor>, String> {
        let mut dims = std::mem::take(&mut self.dims);
        dims.clear();
        for &d in shape {
            match usize::try_from(d) {
                Ok(d) => dims.push(d),
                Err(_) => return Err(format!("negative dimension in {shape:?}")),
            }
        }
        let t = self.alloc_dims(dtype, &dims, init);
        self.dims = dims;
        t
    }

    /// [`Pool::alloc`] for a shape already in `usize`.
    pub fn alloc_dims(&mut self, dtype: DType, dims: &[usize], init: Init) -> Result<Arc<Tensor>, String> {
        let too_large = || format!("shape {dims:?} is too large");
        let len = shape_size(dims).ok_or_else(too_large)?;
        let bytes = len.checked_mul(dtype.size_bytes()).ok_or_else(too_large)?;
        if bytes > self.budget.max_tensor_bytes {
            return Err(format!(
                "a {dtype} tensor of shape {dims:?} needs {bytes} bytes, over the limit of {} bytes per tensor",
                self.budget.max_tensor_bytes
            ));
        }
        if let Some(mut t) = self.free.get_mut(&(dtype, len)).and_then(Vec::pop) {
            self.bytes -= len * dtype.size_bytes();
            // Buffers enter the free lists only when uniquely owned, and nothing else can
            // reach them there, so both steps succeed; a failure just falls through.
            if let Some(inner) = Arc::get_mut(&mut t) {
                if inner.reset(dims, init == Init::Zero).is_ok() {
                    self.stats.pool_allocs += 1;
                    return Ok(t);
                }
            }
        }
        self.charge(bytes)?;
        let t = Tensor::zeros(dtype, dims.to_vec()).map_err(|e| {
            self.live -= bytes;
            e.to_string()
        })?;
        self.stats.system_allocs += 1;
        self.stats.system_bytes += t.size_bytes() as u64;
        Ok(Arc::new(t))
    }

    /// Counts `bytes` about to be allocated against the memory budget, first freeing the free
    /// lists if that makes them fit.
    ///
    /// # Errors
    /// When they do not fit.
    fn charge(&mut self, bytes: usize) -> Result<(), String> {
        let max = self.budget.max_memory_bytes;
        if self.live.saturating_add(bytes) > max && self.bytes > 0 {
            self.live = self.live.saturating_sub(self.bytes);
            self.bytes = 0;
            self.free.clear();
        }
        if self.live.saturating_add(bytes) > max {
            return Err(format!(
                "allocating {bytes} bytes would exceed the memory budget of {max} bytes ({} bytes in use)",
                self.live
            ));
        }
        self.live += bytes;
        self.stats.peak_pool_bytes = self.stats.peak_pool_bytes.max(self.live);
        Ok(())
    }

    /// An ADT value with `tag` and `fields`, in a dead cell when there is one.
    pub fn adt(&mut self, tag: u32, fields: Fields) -> Value {
        if let Some(mut cell) = self.adts.pop() {
            // Cells enter the free list only when uniquely owned, emptied.
            if let Some(inner) = Arc::get_mut(&mut cell) {
                inner.tag = tag;
                inner.fields = fields;
                return Value::Adt(cell);
            }
        }
        Value::Adt(Arc::new(AdtValue { tag, fields }))
    }

    /// A closure of function `func` over `captured`, in a dead cell when there is one.
    pub fn closure(&mut self, func: u32, captured: Fields) -> Arc<ClosureValue> {
        if let Some(mut cell) = self.closures.pop() {
            if let Some(inner) = Arc::get_mut(&mut cell) {
                inner.func = func;
                inner.captured = captured;
                return cell;
            }
        }
        Arc::new(ClosureValue { func, captured })
    }

    /// Takes back a dead tensor's buffer if nothing else references it and there is room;
    /// an arena tensor is dropped, which frees its bytes in the block.
    pub fn recycle(&mut self, mut t: Arc<Tensor>) {
        let Some(inner) = unique(&mut t) else { return };
        if inner.storage().is_arena() {
            return;
        }
        let size = inner.size_bytes();
        if !self.enabled || size == 0 || self.bytes + size > POOL_LIMIT_BYTES {
            // Freed here.
            self.live = self.live.saturating_sub(size);
            return;
        }
        self.free.entry((inner.dtype(), inner.len())).or_default().push(t);
        self.bytes += size;
    }

    /// Field `index` of a dead ADT value. When nothing else references the cell, the field
    /// is moved out (no reference count touched) and the cell and its other fields are
    /// recycled; otherwise the field is cloned and the cell dropped.
    ///
    /// # Errors
    /// The number of fields when `index` is out of range.
    pub fn take_field(&mut self, mut cell: Arc<AdtValue>, index: usize) -> Result<Value, usize> {
        let Some(inner) = unique(&mut cell) else {
            return cell.fields.get(index).cloned().ok_or(cell.fields.len());
        };
        if index >= inner.fields.len() {
            return Err(inner.fields.len());
        }
        let v = inner.fields.swap_remove(index);
        if self.enabled {
            for rest in inner.fields.drain(..) {
                self.recycle_value(rest);
            }
            if self.adts.len() < MAX_FREE_CELLS {
                self.adts.push(cell);
            }
        }
        Ok(v)
    }

    /// Recycles the tensor buffers of a dead value, including those inside ADT values and
    /// closures that nothing else references (tree states die inside tuples and lists). With
    /// reuse off this only counts the buffers freed.
    pub fn recycle_value(&mut self, v: Value) {
        match &v {
            Value::Tensor(_) => {
                if let Value::Tensor(t) = v {
                    self.recycle(t);
                }
                return;
            }
            // Still referenced elsewhere: dropping it is all there is to do.
            Value::Adt(a) if Arc::strong_count(a) != 1 => return,
            Value::Closure(c) if Arc::strong_count(c) != 1 => return,
            Value::Scalar(_) | Value::Ref(_) | Value::Device(_) => return,
            Value::Adt(_) | Value::Closure(_) => {}
        }
        let mut pending = std::mem::take(&mut self.work);
        pending.push(v);
        while let Some(v) = pending.pop() {
            match v {
                Value::Tensor(t) => self.recycle(t),
                Value::Adt(mut a) => {
                    if let Some(inner) = unique(&mut a) {
                        pending.extend(inner.fields.drain(..));
                        if self.enabled && self.adts.len() < MAX_FREE_CELLS {
                            self.adts.push(a);
                        }
                    }
                }
                Value::Closure(mut c) => {
                    if let Some(inner) = unique(&mut c) {
                        pending.extend(inner.captured.drain(..));
                        if self.enabled && self.closures.len() < MAX_FREE_CELLS {
                            self.closures.push(c);
                        }
                    }
                }
                Value::Scalar(_) | Value::Ref(_) | Value::Device(_) => {}
            }
        }
        self.work = pending;
    }
}

/// The value behind `a` if nothing else references it. A plain load first: most dead values
/// are still shared (weights, captured values, the host's input), and `Arc::get_mut` costs an
/// atomic read-modify-write even when it fails.
fn unique<T>(a: &mut Arc<T>) -> Option<&mut T> {
    if Arc::strong_count(a) == 1 {
        Arc::get_mut(a)
    } else {
        None
    }
}

/// A function's frame arena: the bytes its `AllocFrame` tensors need at their offsets.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FrameLayout {
    /// Size of the arena block an invocation takes (0: the function has no arena).
    pub arena_bytes: usize,
}

impl FrameLayout {
    /// The layout implied by a function's `AllocFrame` instructions: the end of the furthest
    /// one (the verifier bounds it by the sum of their sizes).
    pub fn of(f: &crate::VmFunction) -> FrameLayout {
        let ends = f.code.iter().filter_map(|ins| match ins {
            crate::Instr::AllocFrame { offset, dtype, shape, .. } => {
                let elems = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?));
                elems?.checked_mul(dtype.size_bytes())?.checked_add(offset.0 as usize)
            }
            _ => None,
        });
        FrameLayout { arena_bytes: ends.max().unwrap_or(0) }
    }

    /// How many entries of the VM's stack of frame arenas an invocation uses (0 or 1).
    #[inline]
    pub fn frames(&self) -> usize {
        usize::from(self.arena_bytes > 0)
    }
}

/// The arena blocks of every active call that has one, and the free blocks kept for later
/// calls.
#[derive(Default)]
pub(crate) struct Arena {
    /// The most bytes of blocks held at once, and the most entries of `frames` (from the
    /// memory budget).
    max_bytes: usize,
    max_frames: usize,
    /// Per active call with a frame arena: its block once its first `AllocFrame` ran.
    frames: Vec<Option<Arc<ArenaBlock>>>,
    /// Free blocks, the most recently released last.
    free: Vec<Arc<ArenaBlock>>,
    /// Bytes of the blocks in `frames` and `free`, and of those in `free` alone.
    bytes: usize,
    free_bytes: usize,
}

/// A tensor the memory plan placed in a frame arena: what `AllocFrame` says of it.
#[derive(Clone, Copy, Debug)]
pub struct Planned<'a> {
    /// Byte offset in the frame's block.
    pub offset: usize,
    /// Element type.
    pub dtype: DType,
    /// Static shape.
    pub shape: &'a [i64],
    /// Zeroed, or left as earlier tensors there left it.
    pub init: Init,
}

impl Arena {
    /// An empty stack within `budget`.
    pub fn new(budget: &Budget) -> Arena {
        Arena {
            max_bytes: budget.max_memory_bytes,
            max_frames: budget.max_items::<Option<Arc<ArenaBlock>>>(),
            ..Arena::default()
        }
    }

    /// Makes room for frame arenas up to `top` (new ones have no block yet).
    ///
    /// # Errors
    /// When `top` entries exceed the memory budget or the system refuses them.
    #[inline]
    pub fn reserve(&mut self, top: usize) -> Result<(), String> {
        if self.frames.len() < top {
            self.grow(top)?;
        }
        Ok(())
    }

    #[cold]
    fn grow(&mut self, top: usize) -> Result<(), String> {
        if top > self.max_frames || self.frames.try_reserve(top - self.frames.len()).is_err() {
            return Err(format!("{top} frame arenas exceed the memory budget"));
        }
        self.frames.resize_with(top, || None);
        Ok(())
    }

    /// A tensor at byte `offset` of the block of frame arena `index`, zeroed unless `init` is
    /// [`Init::Kernel`] (it then holds what earlier tensors there left), whose function
    /// needs `size` bytes (the block is taken now if the frame has none yet); from `pool`
    /// when the bytes are held by a live tensor, the dtype is `bool`, reuse is off, or no
    /// block fits the budget.
    ///
    /// # Errors
    /// As [`Pool::alloc`].
    pub fn alloc(
        &mut self,
        index: usize,
        size: usize,
        planned: Planned<'_>,
        pool: &mut Pool,
    ) -> Result<Arc<Tensor>, String> {
        let Planned { offset, dtype, shape, init } = planned;
        self.reserve(index.saturating_add(1))?;
        let elems = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?));
        let region = match elems {
            Some(len) if pool.enabled => {
                if self.frames[index].is_none() {
                    self.frames[index] = self.take_block(size, pool);
                }
                let zero = init == Init::Zero;
                self.frames[index].as_ref().and_then(|b| ArenaBlock::region(b, offset, dtype, len, zero))
            }
            _ => None,
        };
        let Some(region) = region else {
            pool.stats.arena_fallbacks += 1;
            return pool.alloc(dtype, shape, init);
        };
        let dims = shape.iter().map(|&d| d as usize).collect();
        let t = Tensor::from_storage(dims, Storage::Arena(region)).map_err(|e| e.to_string())?;
        pool.stats.arena_allocs += 1;
        Ok(Arc::new(t))
    }

    /// A block of at least `size` bytes: the most recently freed one that is not more than
    /// twice as large, else a new one; `None` past the budget or when the system refuses.
    fn take_block(&mut self, size: usize, pool: &mut Pool) -> Option<Arc<ArenaBlock>> {
        let fits = |b: &Arc<ArenaBlock>| b.len() >= size && b.len() / 2 <= size;
        if let Some(i) = self.free.iter().rposition(fits) {
            let b = self.free.swap_remove(i);
            self.free_bytes -= b.len();
            return Some(b);
        }
        if self.bytes.saturating_add(size) > self.max_bytes {
            return None;
        }
        let b = Arc::new(ArenaBlock::new(size).ok()?);
        self.bytes += b.len();
        pool.stats.arena_blocks += 1;
        pool.stats.peak_arena_bytes = pool.stats.peak_arena_bytes.max(self.bytes);
        Some(b)
    }

    /// Releases the blocks of the returning frame arenas `from..to`: kept for later calls
    /// when no tensor still holds them and there is room, otherwise dropped (a tensor that
    /// still holds one frees it with its last region).
    pub fn release(&mut self, from: usize, to: usize) {
        let to = to.min(self.frames.len());
        for i in from..to {
            let Some(mut b) = self.frames[i].take() else { continue };
            let size = b.len();
            if Arc::get_mut(&mut b).is_some()
                && self.free.len() < MAX_FREE_BLOCKS
                && self.free_bytes + size <= POOL_LIMIT_BYTES
            {
                self.free.push(b);
                self.free_bytes += size;
            } else {
                self.bytes -= size;
            }
        }
    }

    /// Drops the blocks of every frame (after a trap); free blocks are kept.
    pub fn clear(&mut self) {
        self.frames.clear();
        self.bytes = self.free_bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_reuses_dead_buffers_by_size_class() {
        let mut pool = Pool::default();
        let a = pool.alloc(DType::F32, &[2, 3], Init::Zero).unwrap();
        let p = a.as_ptr();
        pool.recycle(a);
        let b = pool.alloc(DType::F32, &[6], Init::Zero).unwrap();
        assert_eq!((b.as_ptr(), b.shape()), (p, &[6][..]));
        let held = b.clone();
        pool.recycle(b);
        assert_eq!(pool.bytes, 0, "a shared buffer is never pooled");
        assert!(pool.alloc(DType::I32, &[6], Init::Zero).unwrap().as_ptr() != held.as_ptr());
        assert!(pool.alloc(DType::F32, &[-1], Init::Zero).is_err());
        assert_eq!((pool.stats.pool_allocs, pool.stats.system_allocs), (1, 2));
    }

    #[test]
    fn dead_adt_cells_and_closures_are_refilled() {
        let mut pool = Pool::default();
        let leaf = pool.alloc(DType::F32, &[3], Init::Zero).unwrap();
        let nil = pool.adt(1, Fields::new());
        let Value::Adt(nil_cell) = &nil else { panic!("not an ADT") };
        let nil_addr = Arc::as_ptr(nil_cell);
        let list = pool.adt(0, [Value::Tensor(leaf), nil].into_iter().collect());
        pool.recycle_value(list);
        // Both cells and the tensor are back; the last cell freed (`Nil`) is refilled first.
        assert_eq!((pool.adts.len(), pool.bytes), (2, 12));
        let again = pool.adt(7, [Value::Scalar(crate::ScalarValue::bool(true))].into_iter().collect());
        let Value::Adt(cell) = &again else { panic!("not an ADT") };
        assert_eq!((cell.tag, cell.fields.len(), pool.adts.len()), (7, 1, 1));
        assert!(std::ptr::eq(Arc::as_ptr(cell), nil_addr));
        let c = pool.closure(3, Fields::new());
        let c_addr = Arc::as_ptr(&c);
        let held = Value::Closure(c.clone());
        pool.recycle_value(Value::Closure(c));
        assert!(pool.closures.is_empty(), "a shared closure is not taken");
        pool.recycle_value(held);
        assert!(std::ptr::eq(Arc::as_ptr(&pool.closure(4, Fields::new())), c_addr));
        // With reuse off nothing is kept.
        let mut off = Pool::new(false, Budget::UNLIMITED);
        let v = off.adt(0, Fields::new());
        off.recycle_value(v);
        assert!(off.adts.is_empty());
    }

    /// A zeroed tensor at byte `offset`, as `AllocFrame` asks for it.
    fn at(offset: usize, dtype: DType, shape: &[i64]) -> Planned<'_> {
        Planned { offset, dtype, shape, init: Init::Zero }
    }

    #[test]
    fn kernel_initialised_tensors_keep_the_dead_ones_values_and_others_are_zeroed() {
        let (mut pool, mut arena) = (Pool::default(), Arena::new(&Budget::UNLIMITED));
        let mut dead = pool.alloc(DType::F32, &[4], Init::Zero).unwrap();
        Arc::get_mut(&mut dead).unwrap().as_mut_slice::<f32>().unwrap().fill(3.0);
        pool.recycle(dead);
        let kept = pool.alloc(DType::F32, &[2, 2], Init::Kernel).unwrap();
        assert_eq!(kept.as_slice::<f32>().unwrap(), &[3.0; 4], "not filled");
        pool.recycle(kept);
        assert_eq!(pool.alloc(DType::F32, &[4], Init::Zero).unwrap().as_slice::<f32>().unwrap(), &[0.0; 4]);
        let planned = |init| Planned { offset: 0, dtype: DType::F32, shape: &[4], init };
        let mut first = arena.alloc(0, 64, planned(Init::Zero), &mut pool).unwrap();
        Arc::get_mut(&mut first).unwrap().as_mut_slice::<f32>().unwrap().fill(5.0);
        drop(first);
        let kept = arena.alloc(0, 64, planned(Init::Kernel), &mut pool).unwrap();
        assert!(kept.storage().is_arena());
        assert_eq!(kept.as_slice::<f32>().unwrap(), &[5.0; 4], "not filled");
        drop(kept);
        let zeroed = arena.alloc(0, 64, planned(Init::Zero), &mut pool).unwrap();
        assert_eq!(zeroed.as_slice::<f32>().unwrap(), &[0.0; 4]);
    }

    #[test]
    fn frame_arenas_place_tensors_at_offsets_and_reuse_their_blocks() {
        let (mut pool, mut arena) = (Pool::default(), Arena::new(&Budget::UNLIMITED));
        let mut a = arena.alloc(0, 128, at(0, DType::F32, &[4]), &mut pool).unwrap();
        Arc::get_mut(&mut a).unwrap().as_mut_slice::<f32>().unwrap()[0] = 5.0;
        let base = a.as_ptr();
        let b = arena.alloc(0, 128, at(64, DType::I32, &[2, 2]), &mut pool).unwrap();
        assert_eq!(b.as_ptr() as usize - base as usize, 64);
        // Bytes still held by `a`: served by the pool, never aliased.
        let c = arena.alloc(0, 128, at(0, DType::F32, &[4]), &mut pool).unwrap();
        assert!(!c.storage().is_arena());
        // `bool` has no byte view: pool too.
        assert!(!arena.alloc(0, 128, at(0, DType::BOOL, &[4]), &mut pool).unwrap().storage().is_arena());
        pool.recycle(a);
        let d = arena.alloc(0, 128, at(0, DType::F32, &[2, 2]), &mut pool).unwrap();
        assert_eq!((d.as_ptr(), d.as_slice::<f32>().unwrap()), (base, &[0.0; 4][..]));
        // A tensor that outlives its frame keeps the block from the cache.
        arena.release(0, 1);
        let e = arena.alloc(0, 128, at(0, DType::F32, &[4]), &mut pool).unwrap();
        let second = e.as_ptr();
        assert!(second != base && e.storage().is_arena());
        drop((b, d, e));
        arena.release(0, 1);
        let f = arena.alloc(0, 128, at(0, DType::F32, &[4]), &mut pool).unwrap();
        assert_eq!(f.as_ptr(), second, "the second call's block, recycled");
        let s = pool.stats;
        assert_eq!((s.arena_allocs, s.arena_fallbacks, s.arena_blocks, s.peak_arena_bytes), (5, 2, 2, 128));
    }
}
