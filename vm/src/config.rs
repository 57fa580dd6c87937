//! The limits of one VM: call depth, memory and time.

use crate::cancel::CancelHandle;
use crate::memory::Budget;
use std::time::Instant;

/// The default memory budget and tensor size limit: 16 GiB. Fixed rather than a fraction of
/// the machine's memory, so that a program that runs on one machine is not refused on
/// another; far above any model we run (the largest weights are a few hundred MB), and below
/// what a crafted shape asks for (`zeros(shape=[100000, 100000])` is 40 GB). Where the system
/// has less, the allocator's refusal is a trap too.
pub const DEFAULT_MEMORY_BYTES: u64 = 16 << 30;

/// Limits of one [`crate::Vm`].
#[derive(Debug, Clone)]
pub struct VmConfig {
    /// The deepest non-tail call nesting allowed before a trap (tail calls do not count).
    pub max_call_depth: usize,
    /// Place planned tensors in frame arenas and recycle dead tensors' buffers (arena blocks
    /// and the size-class pool). Off, every tensor is a fresh system allocation, as with no
    /// memory planning at all.
    pub reuse_memory: bool,
    /// The most bytes one tensor the VM allocates may have; a larger one traps.
    pub max_tensor_bytes: usize,
    /// The most bytes of tensors a run may hold at once (counted by the VM's pool, which
    /// may count a buffer dropped outside it until the run ends: `vm/src/memory.rs`); the
    /// register stack and the frame arenas' blocks are each bounded by it too. Going over
    /// traps.
    pub max_memory_bytes: usize,
    /// When runs must stop: past it, the run in progress traps at its next check (a call,
    /// a kernel call, a JIT kernel's next outermost loop iteration), and later runs at once.
    /// The deadline is armed on [`VmConfig::cancel`], so VMs sharing a handle share it.
    pub deadline: Option<Instant>,
    /// The handle that cancels this VM's runs (for instance one shared by every VM a signal
    /// handler must stop); `None` gives the VM a handle of its own, which
    /// [`crate::Vm::cancel_handle`] returns.
    pub cancel: Option<CancelHandle>,
}

impl Default for VmConfig {
    fn default() -> Self {
        let memory = usize::try_from(DEFAULT_MEMORY_BYTES).unwrap_or(usize::MAX);
        VmConfig {
            max_call_depth: 4_000_000,
            reuse_memory: true,
            max_tensor_bytes: memory,
            max_memory_bytes: memory,
            deadline: None,
            cancel: None,
        }
    }
}

impl VmConfig {
    /// The memory limits, for the pool.
    pub(crate) fn budget(&self) -> Budget {
        Budget { max_tensor_bytes: self.max_tensor_bytes, max_memory_bytes: self.max_memory_bytes }
    }
}
