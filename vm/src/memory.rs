//! Tensor memory at run time (ARCHITECTURE.md §3, "Memory"): per-frame arenas of planned
//! slots and a size-class pool, both recycling whole buffers.
//!
//! The compiler's memory plan gives each statically shaped tensor that does not outlive its
//! frame a slot of the frame arena; tensors with disjoint live intervals share a slot. A
//! slot holds a buffer (`Arc<Tensor>`) while it is free: `AllocFrame` takes it out, zeroes
//! it and hands it to the register, and the `Kill` at the tensor's last use puts it back.
//! Reuse is checked at run time as well — a buffer is only recycled when this VM holds the
//! only reference to it (`Arc::get_mut`), so a wrong plan costs an allocation, never an alias.
//! Arenas are carved from one stack of slots (the frame records where its slots begin), so
//! recursion gets fresh slots per activation, and a frame's slots are released on return.
//!
//! Everything else (escaping tensors, `?`-shaped kernel outputs, released arena buffers)
//! goes through the [`Pool`]: free lists keyed by dtype and element count, reused across
//! calls and runs, bounded by [`POOL_LIMIT_BYTES`].
//!
//! Storage stays a typed `Vec` (no `unsafe`, no byte arena): the plan decides *which* tensors
//! may share a buffer, the VM shares it by handing the same `Vec` on.
//!
//! Every buffer whose size comes from a program or an input is checked against a
//! [`Budget`] before it is allocated, and allocated fallibly: one tensor may not exceed
//! `max_tensor_bytes`, and the bytes the pool has handed out in the current run and not seen
//! die, plus its free lists, may not exceed `max_memory_bytes`. A buffer dies unseen when a
//! value holding it is dropped outside the pool (rare: overwritten registers, a cell shared
//! when recycled), so the count errs on the high side within a run; it restarts from the
//! free lists at every run, as results belong to the host once returned.

use crate::value::{AdtValue, ClosureValue, Fields, Value};
use relay_devices::{shape_size, DType, Tensor};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// The most bytes of free buffers the pool keeps; beyond it, dead buffers are freed.
pub const POOL_LIMIT_BYTES: usize = 256 << 20;

/// Allocation statistics of one [`crate::Vm`] since it was made or its statistics were
/// reset ([`crate::Vm::reset_memory_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Tensors served by a frame arena slot (a dead tensor's buffer reused in place).
    pub arena_allocs: u64,
    /// Tensors served by the pool's free lists.
    pub pool_allocs: u64,
    /// Tensors whose buffer came from the system allocator.
    pub system_allocs: u64,
    /// Bytes of those system-allocated buffers.
    pub system_bytes: u64,
    /// Most bytes held at once by the slots of live frames (occupied or free).
    pub peak_arena_bytes: usize,
    /// Most bytes held at once outside frame arenas in buffers the VM owns: the pool's free
    /// lists (buffers in use by values are the program's, not the VM's).
    pub peak_heap_bytes: usize,
}

impl std::fmt::Display for MemoryStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tensor allocations: {} arena, {} pool, {} system ({} bytes); peak arena {} bytes, peak pool {} bytes",
            self.arena_allocs,
            self.pool_allocs,
            self.system_allocs,
            self.system_bytes,
            self.peak_arena_bytes,
            self.peak_heap_bytes
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
    /// The most bytes of tensors (and, separately, of registers or arena slots) a run holds.
    pub max_memory_bytes: usize,
}

impl Budget {
    /// No limit but the allocator's (tests of the pool alone).
    #[cfg(test)]
    pub const UNLIMITED: Budget = Budget { max_tensor_bytes: usize::MAX, max_memory_bytes: usize::MAX };

    /// How many items of `T` fit in the budget (register files, arena slot tables).
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

    /// A zeroed tensor of `dtype` and `shape`, from the free lists or the system.
    ///
    /// # Errors
    /// A negative dimension, a shape or dtype a tensor cannot have, a tensor over the
    /// budget's `max_tensor_bytes`, a run over its `max_memory_bytes`, or an allocation the
    /// system refuses.
    pub fn alloc(&mut self, dtype: DType, shape: &[i64]) -> Result<Arc<Tensor>, String> {
        let mut dims = std::mem::take(&mut self.dims);
        dims.clear();
        for &d in shape {
            match usize::try_from(d) {
                Ok(d) => dims.push(d),
                Err(_) => return Err(format!("negative dimension in {shape:?}")),
            }
        }
        let t = self.alloc_dims(dtype, &dims);
        self.dims = dims;
        t
    }

    /// [`Pool::alloc`] for a shape already in `usize`.
    pub fn alloc_dims(&mut self, dtype: DType, dims: &[usize]) -> Result<Arc<Tensor>, String> {
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
                if inner.reset_zeroed(dims).is_ok() {
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

    /// Takes back a dead tensor's buffer if nothing else references it and there is room.
    pub fn recycle(&mut self, mut t: Arc<Tensor>) {
        let Some(inner) = unique(&mut t) else { return };
        let size = inner.size_bytes();
        if !self.enabled || size == 0 || self.bytes + size > POOL_LIMIT_BYTES {
            // Freed here.
            self.live = self.live.saturating_sub(size);
            return;
        }
        self.free.entry((inner.dtype(), inner.len())).or_default().push(t);
        self.bytes += size;
        self.stats.peak_heap_bytes = self.stats.peak_heap_bytes.max(self.bytes);
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

/// Where each function's frame-arena tensors live: how many slots its frame has, and which
/// slot each register allocated by `AllocFrame` belongs to (so that `Kill` can put the
/// buffer back).
#[derive(Clone, Debug, Default)]
pub(crate) struct FrameLayout {
    pub num_slots: u32,
    /// Per register up to the last one `AllocFrame` writes: its slot, or `u32::MAX` for none.
    pub reg_slot: Vec<u32>,
}

impl FrameLayout {
    /// The layout implied by a function's `AllocFrame` instructions.
    ///
    /// # Errors
    /// When the table of registers would not fit in `budget` (a crafted register number).
    pub fn of(f: &crate::VmFunction, budget: &Budget) -> Result<FrameLayout, String> {
        let frame_allocs = f.code.iter().filter_map(|ins| match ins {
            crate::Instr::AllocFrame { dst, slot, .. } if dst.0 < f.num_regs => {
                Some((dst.0 as usize, slot.0))
            }
            _ => None,
        });
        let len = frame_allocs.clone().map(|(r, _)| r + 1).max().unwrap_or(0);
        let mut layout = FrameLayout { num_slots: 0, reg_slot: Vec::new() };
        if len > budget.max_items::<u32>() || layout.reg_slot.try_reserve_exact(len).is_err() {
            return Err(format!("`{}`: a frame layout of {len} registers exceeds the memory budget", f.name));
        }
        layout.reg_slot.resize(len, u32::MAX);
        for (r, slot) in frame_allocs {
            layout.num_slots = layout.num_slots.max(slot.saturating_add(1));
            layout.reg_slot[r] = slot;
        }
        Ok(layout)
    }

    /// The slot register `r` was allocated in, if any.
    #[inline]
    pub fn slot_of(&self, r: u32) -> Option<u32> {
        self.reg_slot.get(r as usize).copied().filter(|&s| s != u32::MAX)
    }
}

/// The stack of frame-arena slots of every active call.
#[derive(Default)]
pub(crate) struct Arena {
    /// The most slots the stack may have (from the memory budget).
    max_slots: usize,
    /// Free buffers (a slot whose tensor is alive holds `None`).
    slots: Vec<Option<Arc<Tensor>>>,
    /// Bytes of the buffer each slot owns, whether free or in use.
    slot_bytes: Vec<usize>,
    bytes: usize,
}

impl Arena {
    /// An empty stack of at most as many slots as `budget` has room for.
    pub fn new(budget: &Budget) -> Arena {
        Arena { max_slots: budget.max_items::<(Option<Arc<Tensor>>, usize)>(), ..Arena::default() }
    }

    /// Makes room for slots up to `top` (new slots are empty).
    ///
    /// # Errors
    /// When `top` slots exceed the memory budget or the system refuses them.
    #[inline]
    pub fn reserve(&mut self, top: usize) -> Result<(), String> {
        if self.slots.len() < top {
            self.grow(top)?;
        }
        Ok(())
    }

    #[cold]
    fn grow(&mut self, top: usize) -> Result<(), String> {
        let more = top - self.slots.len();
        if top > self.max_slots
            || self.slots.try_reserve(more).is_err()
            || self.slot_bytes.try_reserve(more).is_err()
        {
            return Err(format!("{top} frame-arena slots exceed the memory budget"));
        }
        self.slots.resize_with(top, || None);
        self.slot_bytes.resize(top, 0);
        Ok(())
    }

    /// A zeroed tensor for slot `index`: its free buffer when it fits, else one from `pool`.
    ///
    /// # Errors
    /// As [`Pool::alloc`].
    pub fn alloc(
        &mut self,
        index: usize,
        dtype: DType,
        shape: &[i64],
        pool: &mut Pool,
    ) -> Result<Arc<Tensor>, String> {
        self.reserve(index.saturating_add(1))?;
        if let Some(mut t) = self.slots[index].take() {
            let fits = t.dtype() == dtype
                && shape.iter().map(|&d| usize::try_from(d).ok()).try_fold(1usize, |n, d| n.checked_mul(d?))
                    == Some(t.len());
            if fits {
                if let Some(inner) = Arc::get_mut(&mut t) {
                    pool.dims.clear();
                    pool.dims.extend(shape.iter().map(|&d| d as usize));
                    if inner.reset_zeroed(&pool.dims).is_ok() {
                        pool.stats.arena_allocs += 1;
                        return Ok(t);
                    }
                }
            }
            pool.recycle(t);
        }
        let t = pool.alloc(dtype, shape)?;
        self.bytes = self.bytes - self.slot_bytes[index] + t.size_bytes();
        self.slot_bytes[index] = t.size_bytes();
        pool.stats.peak_arena_bytes = pool.stats.peak_arena_bytes.max(self.bytes);
        Ok(t)
    }

    /// Puts a dead tensor's buffer back into slot `index`; anything it cannot keep goes to
    /// `pool`.
    pub fn give_back(&mut self, index: usize, t: Arc<Tensor>, pool: &mut Pool) {
        match self.slots.get_mut(index) {
            Some(slot @ None) if pool.enabled && Arc::strong_count(&t) == 1 => *slot = Some(t),
            _ => pool.recycle(t),
        }
    }

    /// Releases the slots `from..to` of a returning frame to `pool`.
    pub fn release(&mut self, from: usize, to: usize, pool: &mut Pool) {
        let to = to.min(self.slots.len());
        for i in from..to {
            self.bytes -= std::mem::take(&mut self.slot_bytes[i]);
            if let Some(t) = self.slots[i].take() {
                pool.recycle(t);
            }
        }
    }

    /// Empties every slot (after a trap).
    pub fn clear(&mut self) {
        self.slots.clear();
        self.slot_bytes.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_reuses_dead_buffers_by_size_class() {
        let mut pool = Pool::default();
        let a = pool.alloc(DType::F32, &[2, 3]).unwrap();
        let p = a.as_ptr();
        pool.recycle(a);
        let b = pool.alloc(DType::F32, &[6]).unwrap();
        assert_eq!((b.as_ptr(), b.shape()), (p, &[6][..]));
        let held = b.clone();
        pool.recycle(b);
        assert_eq!(pool.bytes, 0, "a shared buffer is never pooled");
        assert!(pool.alloc(DType::I32, &[6]).unwrap().as_ptr() != held.as_ptr());
        assert!(pool.alloc(DType::F32, &[-1]).is_err());
        assert_eq!((pool.stats.pool_allocs, pool.stats.system_allocs), (1, 2));
    }

    #[test]
    fn dead_adt_cells_and_closures_are_refilled() {
        let mut pool = Pool::default();
        let leaf = pool.alloc(DType::F32, &[3]).unwrap();
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

    #[test]
    fn arena_slots_reuse_their_buffer_and_zero_it() {
        let (mut pool, mut arena) = (Pool::default(), Arena::new(&Budget::UNLIMITED));
        let mut t = arena.alloc(1, DType::F32, &[4], &mut pool).unwrap();
        Arc::get_mut(&mut t).unwrap().as_mut_slice::<f32>().unwrap()[0] = 5.0;
        let p = t.as_ptr();
        arena.give_back(1, t, &mut pool);
        let t = arena.alloc(1, DType::F32, &[2, 2], &mut pool).unwrap();
        assert_eq!((t.as_ptr(), t.as_slice::<f32>().unwrap()), (p, &[0.0; 4][..]));
        // Still referenced elsewhere: the slot does not keep it, the next alloc is fresh.
        let other = t.clone();
        arena.give_back(1, t, &mut pool);
        assert!(arena.alloc(1, DType::F32, &[4], &mut pool).unwrap().as_ptr() != other.as_ptr());
        assert_eq!(pool.stats.arena_allocs, 1);
        assert_eq!(pool.stats.peak_arena_bytes, 16);
        arena.release(0, 2, &mut pool);
        assert_eq!(arena.bytes, 0);
    }
}
