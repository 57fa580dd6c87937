//! Where a program's time goes, kernel by kernel (`relay-vm profile`): every kernel of the
//! program is wrapped in a counter of its calls and the time spent in them, and a VM runs
//! over the wrapped table. Time outside kernels (control flow, allocation, ADTs, calls) is
//! the run's time minus the kernels'; the VM's own split of it by instruction class is
//! [`relay_runtime::InstrProfile`].
//!
//! The wrapper costs two clock reads per kernel call and nothing per bytecode instruction,
//! so the figures are those of the unprofiled program plus about 50 ns per call. Kernels that
//! run on an OpenCL device are timed by their host-side launch only.

use crate::Program;
use relay_devices::Tensor;
use relay_runtime::{CancelHandle, DevicePackedFunc, KernelTable, PackedFunc, Vm, VmConfig};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A program's kernels wrapped in counters, and VMs that run through them.
pub struct KernelProfile {
    table: KernelTable,
    counters: Vec<Arc<Counter>>,
    names: Vec<String>,
    fused: Vec<bool>,
}

/// One kernel's calls and time, summed over every VM of a [`KernelProfile`].
#[derive(Clone, Debug, PartialEq)]
pub struct KernelRow {
    /// The kernel's index in the executable (`kernel#N` in `disasm`).
    pub index: usize,
    /// The operator, or the fused kernel's name (`fused_nn_dense_add_tanh`).
    pub name: String,
    /// Whether it is a fused (JIT or OpenCL) kernel rather than an operator's reference kernel.
    pub fused: bool,
    /// Calls.
    pub calls: u64,
    /// Time inside the kernel, over all calls.
    pub time: Duration,
}

impl KernelProfile {
    /// Counters around every kernel of `program`, all at zero.
    pub fn new(program: &Program) -> KernelProfile {
        let exe = program.executable();
        let counters: Vec<Arc<Counter>> = exe.kernels.iter().map(|_| Arc::default()).collect();
        let table = program
            .kernel_table()
            .iter()
            .zip(&counters)
            .map(|(inner, counter)| {
                Arc::new(Profiled { inner: inner.clone(), counter: counter.clone() }) as Arc<dyn PackedFunc>
            })
            .collect();
        KernelProfile {
            table,
            counters,
            names: exe.kernels.iter().map(|k| k.op.clone()).collect(),
            fused: exe.kernels.iter().map(|k| k.kernel.is_some()).collect(),
        }
    }

    /// A VM for `program` (the one this profile was made from) whose kernel calls are counted.
    ///
    /// # Errors
    /// A message when `program` is not the program the profile was made from.
    pub fn vm<'a>(&'a self, program: &'a Program, config: VmConfig) -> Result<Vm<'a>, String> {
        Vm::new(program.executable(), &self.table, config).map_err(|e| e.to_string())
    }

    /// Every kernel that was called, most time first.
    pub fn rows(&self) -> Vec<KernelRow> {
        let mut rows: Vec<KernelRow> = self
            .counters
            .iter()
            .enumerate()
            .map(|(index, c)| KernelRow {
                index,
                name: self.names[index].clone(),
                fused: self.fused[index],
                calls: c.calls.load(Ordering::Relaxed),
                time: Duration::from_nanos(c.nanos.load(Ordering::Relaxed)),
            })
            .filter(|r| r.calls > 0)
            .collect();
        rows.sort_by(|a, b| b.time.cmp(&a.time).then(a.index.cmp(&b.index)));
        rows
    }

    /// Sets every count back to zero (after warm-up runs).
    pub fn reset(&self) {
        for c in &self.counters {
            c.calls.store(0, Ordering::Relaxed);
            c.nanos.store(0, Ordering::Relaxed);
        }
    }
}

/// Calls and nanoseconds of one kernel.
#[derive(Default)]
struct Counter {
    calls: AtomicU64,
    nanos: AtomicU64,
}

/// A kernel that counts its calls and their time.
struct Profiled {
    inner: Arc<dyn PackedFunc>,
    counter: Arc<Counter>,
}

impl Profiled {
    fn timed<T>(&self, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.counter.calls.fetch_add(1, Ordering::Relaxed);
        self.counter.nanos.fetch_add(nanos, Ordering::Relaxed);
        out
    }
}

impl PackedFunc for Profiled {
    fn output_types(&self, inputs: &[&Tensor]) -> Result<Vec<(relay_devices::DType, Vec<usize>)>, String> {
        self.inner.output_types(inputs)
    }

    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), String> {
        self.timed(|| self.inner.run(inputs, outputs))
    }

    fn run_shared(
        &self,
        inputs: &[&Tensor],
        handles: &[Option<&Arc<Tensor>>],
        outputs: &mut [Tensor],
        cancel: &CancelHandle,
    ) -> Result<(), String> {
        self.timed(|| self.inner.run_shared(inputs, handles, outputs, cancel))
    }

    fn on_device(&self) -> Option<&dyn DevicePackedFunc> {
        self.inner.on_device()
    }
}
