//! A compiled kernel and its safe calling wrapper.

use super::temps::needs_zero;
use crate::blas::pack_cache::PackSlot;
use crate::blas::packed::{packable_operands, Packable};
use crate::JitError;
use cranelift_jit::JITModule;
use parking_lot::Mutex;
use relay_devices::Tensor;
use relay_kir::{buffer_shape, check_args, check_bounds, BufferId, BufferRole, Kernel};
use smallvec::SmallVec;
use std::sync::atomic::AtomicU8;
use std::sync::Arc;
use std::time::Duration;

type EntryFn = unsafe extern "C" fn(*const *mut u8, *const i64, *const u8) -> i32;

/// The stop flag of calls that cannot be stopped: never set.
static NEVER_STOP: AtomicU8 = AtomicU8::new(0);

/// Facts about one compilation.
#[derive(Clone, Debug)]
pub struct KernelStats {
    /// Verification, bounds proof, code generation and linking.
    pub compile_time: Duration,
    /// Machine code size.
    pub code_bytes: usize,
    /// How many `vectorize` loops got SIMD code.
    pub vectorized_loops: usize,
}

/// Machine code for one kernel. Call it with [`CompiledKernel::run`]; it is `Send + Sync`
/// and may run on several threads at once (each call has its own temps).
pub struct CompiledKernel {
    kernel: Kernel,
    entry: EntryFn,
    // Owns the executable memory `entry` points into. Only touched again in `drop`; the
    // mutex makes the (otherwise `!Sync`) module shareable.
    module: Mutex<Option<JITModule>>,
    stats: KernelStats,
    /// Temps of finished calls, reused by the next (kernels without syms only: their temps
    /// always have the same shapes). A kernel runs on several threads at once, each taking
    /// its own set.
    spare_temps: Mutex<Vec<SmallVec<[Tensor; 1]>>>,
    /// The `gemm` weight operands the code can read packed (`packed.rs`), each with its
    /// position among the inputs and its cache of packed copies; in buffer-table order.
    packable: Vec<(Packable, usize, PackSlot)>,
    /// Whether calls reuse temps: the kernel has temps and no syms. Known at construction, so
    /// kernels without temps (most) never touch the mutex.
    reuse_temps: bool,
    /// For each temp, in order: whether a reused one is zeroed for the next call (`temps.rs`:
    /// not those the code writes whole before reading).
    zero_temps: Vec<bool>,
}

impl std::fmt::Debug for CompiledKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledKernel")
            .field("kernel", &self.kernel.name)
            .field("stats", &self.stats)
            .finish()
    }
}

impl CompiledKernel {
    /// # Safety
    /// `code` must be the finalised entry function of `kernel` (signature `(ptr, ptr, ptr)
    /// -> i32`, C calling convention), owned by `module`.
    pub(crate) unsafe fn new(kernel: Kernel, module: JITModule, code: *const u8, stats: KernelStats) -> Self {
        // SAFETY: the caller guarantees `code` is a function with this signature.
        let entry = unsafe { std::mem::transmute::<*const u8, EntryFn>(code) };
        let reuse_temps =
            kernel.syms.is_empty() && kernel.buffers_with_role(BufferRole::Temp).next().is_some();
        let packable = packable_operands(&kernel)
            .into_iter()
            .map(|operand| {
                let position =
                    kernel.buffers_with_role(BufferRole::Input).take_while(|&b| b != operand.buf).count();
                (operand, position, PackSlot::default())
            })
            .collect();
        let zero_temps = kernel
            .buffers
            .iter()
            .zip(needs_zero(&kernel))
            .filter(|(b, _)| b.role == BufferRole::Temp)
            .map(|(_, zero)| zero)
            .collect();
        CompiledKernel {
            zero_temps,
            packable,
            kernel,
            entry,
            module: Mutex::new(Some(module)),
            stats,
            spare_temps: Mutex::new(vec![]),
            reuse_temps,
        }
    }

    /// The kernel this code was compiled from.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// Compile time, code size, vectorised loops.
    pub fn stats(&self) -> &KernelStats {
        &self.stats
    }

    /// Bytes of the packed weight copies this kernel holds now ([`CompiledKernel::run_shared`]).
    pub fn packed_bytes(&self) -> usize {
        self.packable.iter().map(|(_, _, slot)| slot.bytes()).sum()
    }

    /// Runs the kernel: reads `inputs`, writes `outputs` in place, with sym values `syms`.
    ///
    /// Errors, before anything runs, if the counts, dtypes or shapes (with `syms`
    /// substituted) do not match the declarations, a sym is negative, or (for kernels with
    /// syms) the accesses cannot be proved in bounds for these syms.
    pub fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor], syms: &[i64]) -> Result<(), JitError> {
        self.run_shared(inputs, &[], outputs, syms, &NEVER_STOP)
    }

    /// [`CompiledKernel::run`], given also the shared handle of each input where the caller
    /// has one (`handles[i]` is `inputs[i]`'s `Arc`; missing or `None` entries are inputs
    /// without one). Dense weights passed by handle call after call are read from a packed
    /// copy (module docs, "Packed weights"), which keeps a `Weak` of the handle: `Arc` then
    /// lets nobody write into the tensor in place. The code polls `stop` between iterations
    /// of its outermost loops and returns early once it is non-zero (another thread sets it:
    /// `relay_runtime::CancelHandle`), leaving the outputs partly written.
    ///
    /// Errors: as [`CompiledKernel::run`], and [`JitError::Stopped`] when `stop` ended the
    /// call.
    pub fn run_shared(
        &self,
        inputs: &[&Tensor],
        handles: &[Option<&Arc<Tensor>>],
        outputs: &mut [Tensor],
        syms: &[i64],
        stop: &AtomicU8,
    ) -> Result<(), JitError> {
        let k = &self.kernel;
        check_args(k, inputs, outputs, syms)?;
        if !k.syms.is_empty() {
            check_bounds(k, syms)?;
        }
        // Kernels FuseOps makes have a handful of buffers and at most a reused temp: no
        // allocation here after the first call.
        let reuse = self.reuse_temps;
        let spare = if reuse { self.spare_temps.lock().pop() } else { None };
        let mut temps: SmallVec<[Tensor; 1]> = match spare {
            Some(t) => t,
            None => {
                let mut temps = SmallVec::new();
                for buf in k.buffers_with_role(BufferRole::Temp) {
                    temps.push(self.temp(buf, syms)?);
                }
                temps
            }
        };
        let (mut ins, mut outs, mut tmps) = (inputs.iter(), outputs.iter_mut(), temps.iter_mut());
        // Room for a fused cell's inputs, outputs, temps and packed weights without allocating.
        let mut table: SmallVec<[*mut u8; 32]> =
            SmallVec::with_capacity(k.buffers.len() + self.packable.len());
        for decl in &k.buffers {
            let ptr = match decl.role {
                // Never written: the verifier rejects stores to inputs.
                BufferRole::Input => ins.next().map(|t| t.as_ptr().cast_mut()),
                BufferRole::Output => outs.next().map(Tensor::as_mut_ptr),
                BufferRole::Temp => tmps.next().map(Tensor::as_mut_ptr),
            };
            table.push(ptr.ok_or_else(|| JitError::Internal("buffer table".into()))?);
        }
        // Held until the call returns: the table points into them.
        let mut packed: SmallVec<[Arc<_>; 2]> = SmallVec::new();
        for (operand, position, slot) in &self.packable {
            let handle = handles.get(*position).copied().flatten();
            // The packed copy must be of the very tensor the kernel reads.
            let same = |h: &&Arc<Tensor>| inputs.get(*position).is_some_and(|t| std::ptr::eq(&***h, *t));
            match handle.filter(same).and_then(|h| slot.lookup(h, operand.n, operand.k)) {
                Some(p) => {
                    table.push(Arc::as_ptr(&p).cast_mut().cast());
                    packed.push(p);
                }
                None => table.push(std::ptr::null_mut()),
            }
        }
        // SAFETY: the kernel verified (ids, types, no stores to inputs) and every tensor has
        // the dtype and shape its buffer declares for these syms, so each address points to
        // exactly the elements the code expects; `check_bounds` proved (at compile time or
        // just now) that every access stays inside its buffer and every index divisor is
        // positive; inputs are shared borrows that the code only reads, outputs and temps
        // are exclusive borrows that outlive the call, and no two entries alias; each packed
        // entry is null or a live copy of the very input tensor it stands for (checked above),
        // which cannot change while the cache holds a `Weak` of it. `stop` outlives the call,
        // and the code only reads it, with atomic loads.
        let status = unsafe { (self.entry)(table.as_ptr(), syms.as_ptr(), stop.as_ptr().cast_const()) };
        drop(packed);
        if reuse {
            // kir promises zero-filled temps at the start of every call; temps the code
            // writes whole before reading them cannot tell.
            for (t, _) in temps.iter_mut().zip(&self.zero_temps).filter(|(_, &zero)| zero) {
                t.fill_zero();
            }
            self.spare_temps.lock().push(temps);
        }
        if status != 0 {
            return Err(JitError::Stopped);
        }
        Ok(())
    }

    fn temp(&self, buf: BufferId, syms: &[i64]) -> Result<Tensor, JitError> {
        let decl = &self.kernel.buffers[buf.index()];
        let too_large = || JitError::Internal(format!("temp `{}` has no valid shape", decl.name));
        let shape = buffer_shape(&self.kernel, buf, syms).ok_or_else(too_large)?;
        let shape =
            shape.into_iter().map(usize::try_from).collect::<Result<Vec<_>, _>>().map_err(|_| too_large())?;
        Ok(Tensor::zeros(decl.dtype, shape)?)
    }
}

impl Drop for CompiledKernel {
    fn drop(&mut self) {
        let module = self.module.get_mut().take();
        if let Some(module) = module {
            // SAFETY: `entry` points into this module's memory and is unreachable once
            // `self` is being dropped (`run` borrows `self`).
            unsafe { module.free_memory() };
        }
    }
}
