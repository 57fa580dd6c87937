//! Making a [`Vm`]: its frame layouts, last uses, pool and cancel handle, all checked against
//! its [`VmConfig`]; and reading its statistics.

use super::liveness::LastUses;
use super::{device, packed, CopyStats, Vm};
use crate::cancel::CancelHandle;
use crate::config::VmConfig;
use crate::executable::Executable;
use crate::memory::{Arena, FrameLayout, MemoryStats, Pool};
use crate::packed_func::PackedFunc;
use crate::value::Value;
use std::sync::Arc;

impl<'e> Vm<'e> {
    /// A VM for `exe`, calling `kernels[i]` for the executable's kernel `i`.
    ///
    /// # Errors
    /// When the kernel table does not match the executable's kernel list in length, or the
    /// deadline thread cannot start.
    pub fn new(
        exe: &'e Executable,
        kernels: &'e [Arc<dyn PackedFunc>],
        config: VmConfig,
    ) -> Result<Vm<'e>, String> {
        if kernels.len() != exe.kernels.len() {
            return Err(format!(
                "{} kernels given for an executable of {}",
                kernels.len(),
                exe.kernels.len()
            ));
        }
        let constants = exe.constants.iter().map(|t| Value::from_tensor(t.clone())).collect();
        let budget = config.budget();
        let layouts = exe.functions.iter().map(FrameLayout::of).collect();
        let last_uses = exe.functions.iter().map(LastUses::of).collect();
        let pool = Pool::new(config.reuse_memory, budget);
        let cancel = config.cancel.clone().unwrap_or_default();
        if let Some(deadline) = config.deadline {
            cancel.expire_at(deadline)?;
        }
        Ok(Vm {
            exe,
            kernels,
            constants,
            regs: vec![],
            frames: vec![],
            running: false,
            config,
            cancel,
            max_regs: budget.max_items::<Option<Value>>(),
            pool,
            arena: Arena::new(&budget),
            layouts,
            last_uses,
            scratch: packed::Scratch::default(),
            device: device::DeviceState::default(),
            nullary: vec![],
            closures: vec![None; exe.functions.len()],
            instr_profile: None,
            paused: None,
        })
    }

    /// The handle that cancels this VM's runs, from any thread ([`VmConfig::cancel`]).
    pub fn cancel_handle(&self) -> &CancelHandle {
        &self.cancel
    }

    /// Tensor allocation statistics since the VM was made or [`Vm::reset_memory_stats`].
    pub fn memory_stats(&self) -> MemoryStats {
        self.pool.stats
    }

    /// Tensor copies between host and devices since the VM was made or
    /// [`Vm::reset_memory_stats`] (all zero when no kernel runs on a device).
    pub fn copy_stats(&self) -> CopyStats {
        self.device.stats
    }

    /// Zeroes the allocation and copy statistics (the pool keeps its buffers).
    pub fn reset_memory_stats(&mut self) {
        self.pool.stats = MemoryStats::default();
        self.device.stats = CopyStats::default();
    }
}
