//! The OpenCL device over `opencl3` (which loads `libOpenCL.so.1` when first used).

use super::{buffer_of, DeviceInfo, DeviceKind, DeviceSelector, KernelArg, OpenClError};
use crate::{DeviceError, DeviceMemory, Tensor};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{
    Device, CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU,
};
use opencl3::error_codes::{
    ClError, CL_BUILD_PROGRAM_FAILURE, CL_PLATFORM_NOT_FOUND_KHR, DLOPEN_RUNTIME_LOAD_FAILED,
};
use opencl3::kernel::Kernel as ClKernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_READ_WRITE};
use opencl3::platform::get_platforms;
use opencl3::program::Program as ClProgram;
use opencl3::types::{cl_device_id, cl_long, cl_mem, CL_BLOCKING};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ptr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The error for a failed OpenCL call; a runtime that could not be loaded is reported as
/// [`OpenClError::Unavailable`] whichever call first needed it.
fn api(call: &'static str) -> impl Fn(ClError) -> OpenClError {
    move |e| match e.0 {
        DLOPEN_RUNTIME_LOAD_FAILED => OpenClError::Unavailable("libOpenCL.so.1 could not be loaded".into()),
        code => OpenClError::Api { call, code, name: e.to_string() },
    }
}

/// Every OpenCL device present, in platform then device order. An installed runtime with no
/// platform (no ICD registered) gives an empty list; a missing runtime
/// [`OpenClError::Unavailable`].
pub fn devices() -> Result<Vec<DeviceInfo>, OpenClError> {
    Ok(enumerate()?.into_iter().map(|(info, _)| info).collect())
}

fn enumerate() -> Result<Vec<(DeviceInfo, cl_device_id)>, OpenClError> {
    // The ICD loader (ocl-icd) initialises itself on the first call without locking: threads
    // racing into it can see no platform at all. Discovery is rare, so it is serialised.
    static DISCOVERY: Mutex<()> = Mutex::new(());
    let _guard = DISCOVERY.lock();
    let platforms = match get_platforms() {
        Ok(p) => p,
        Err(e) if e.0 == CL_PLATFORM_NOT_FOUND_KHR => return Ok(Vec::new()),
        Err(e) => return Err(api("clGetPlatformIDs")(e)),
    };
    let mut out = Vec::new();
    for (p, platform) in platforms.iter().enumerate() {
        let platform_name = platform.name().map_err(api("clGetPlatformInfo"))?;
        let ids = platform.get_devices(CL_DEVICE_TYPE_ALL).map_err(api("clGetDeviceIDs"))?;
        for (d, &id) in ids.iter().enumerate() {
            let dev = Device::new(id);
            let info = api("clGetDeviceInfo");
            let ty = dev.dev_type().map_err(&info)?;
            let kind = if ty & CL_DEVICE_TYPE_GPU != 0 {
                DeviceKind::Gpu
            } else if ty & CL_DEVICE_TYPE_ACCELERATOR != 0 {
                DeviceKind::Accelerator
            } else if ty & CL_DEVICE_TYPE_CPU != 0 {
                DeviceKind::Cpu
            } else {
                DeviceKind::Other
            };
            let info = DeviceInfo {
                platform: p,
                device: d,
                platform_name: platform_name.clone(),
                name: dev.name().map_err(&info)?,
                kind,
                version: dev.version().map_err(&info)?,
                compute_units: dev.max_compute_units().map_err(&info)?,
                global_mem_bytes: dev.global_mem_size().map_err(&info)?,
                max_work_group_size: dev.max_work_group_size().map_err(&info)?,
                fp64: dev.extensions().map_err(&info)?.contains("cl_khr_fp64"),
            };
            out.push((info, id));
        }
    }
    Ok(out)
}

/// Device memory: a buffer of `len` bytes (at least one byte is allocated, since OpenCL has
/// no empty buffers, but a zero-length buffer is never read or written).
#[derive(Debug)]
pub struct DeviceBuffer {
    mem: Buffer<u8>,
    len: usize,
}

impl DeviceMemory for DeviceBuffer {
    fn len(&self) -> usize {
        self.len
    }
}

/// A built OpenCL program, with one kernel object per entry point created on first launch.
#[derive(Debug)]
pub struct Program {
    program: ClProgram,
    // `clSetKernelArg` mutates a kernel object, so setting arguments and enqueueing happen
    // under this lock; the arguments are captured at enqueue time.
    kernels: Mutex<HashMap<String, ClKernel>>,
    build_time: Duration,
}

impl Program {
    /// How long the OpenCL C compiler took (a cached program keeps its first build's time).
    pub fn build_time(&self) -> Duration {
        self.build_time
    }

    /// The names of the program's kernels.
    pub fn kernel_names(&self) -> Vec<String> {
        self.program.kernel_names().split(';').filter(|n| !n.is_empty()).map(str::to_string).collect()
    }

    /// The device binary the runtime built (`clGetProgramInfo(CL_PROGRAM_BINARIES)`), for
    /// [`OpenClDevice::load_binary`] on a device of the same kind later.
    pub fn binary(&self) -> Result<Vec<u8>, OpenClError> {
        let binaries = self.program.get_binaries().map_err(api("clGetProgramInfo"))?;
        binaries.into_iter().next().ok_or_else(|| OpenClError::Api {
            call: "clGetProgramInfo",
            code: -30,
            name: "no binary for the device".into(),
        })
    }
}

/// One OpenCL device with its context, an in-order command queue and a cache of built
/// programs keyed by source text and build options. `Send + Sync`: launches from several
/// threads are serialised on the queue.
#[derive(Debug)]
pub struct OpenClDevice {
    info: DeviceInfo,
    id: cl_device_id,
    // Declared before the context so they are released first.
    queue: CommandQueue,
    programs: Mutex<HashMap<(String, String), Arc<Program>>>,
    /// Set when programs must come from [`OpenClDevice::load_binary`]: a source not loaded
    /// so is then an error instead of a build.
    prebuilt_only: std::sync::atomic::AtomicBool,
    /// Held while a command is enqueued or waited for: POCL's `basic` device runs queued
    /// commands on whichever host thread flushes or waits, and with two threads doing so at
    /// once it returned zero-filled outputs and hung (`jit/tests/kernels.rs` with
    /// `POCL_DEVICES=basic` and default test threads); one command at a time per device fixes
    /// it, at no cost to a single-threaded VM.
    commands: Mutex<()>,
    /// Free buffers by byte size, refilled by [`crate::Device::free`] (when a
    /// [`crate::DeviceTensor`] dies).
    pool: Mutex<HashMap<usize, Vec<DeviceBuffer>>>,
    context: Context,
}

/// Free buffers kept per byte size: enough for the live tensors of a model's step, bounded so
/// that a program with many distinct sizes cannot hoard device memory.
const POOL_PER_SIZE: usize = 64;

// SAFETY: `cl_device_id` is an opaque handle that OpenCL allows every thread to use; the
// other fields are `Send + Sync` (opencl3 declares so for contexts and queues, whose OpenCL
// calls are thread-safe).
unsafe impl Send for OpenClDevice {}
// SAFETY: as above; no method mutates through `&self` except under the mutexes.
unsafe impl Sync for OpenClDevice {}

impl OpenClDevice {
    /// Opens the device `selector` names (see [`DeviceSelector`]).
    pub fn open(selector: &str) -> Result<OpenClDevice, OpenClError> {
        let sel: DeviceSelector = selector.parse()?;
        let all = enumerate()?;
        let infos: Vec<DeviceInfo> = all.iter().map(|(i, _)| i.clone()).collect();
        let info = sel.pick(selector, &infos)?.clone();
        let id =
            all.iter().find(|(i, _)| i.id() == info.id()).map(|&(_, id)| id).ok_or_else(|| {
                OpenClError::NoSuchDevice { selector: selector.into(), available: Vec::new() }
            })?;
        let context = Context::from_device(&Device::new(id)).map_err(api("clCreateContext"))?;
        // SAFETY: `id` is the context's only device.
        #[allow(deprecated)] // the OpenCL 2.0 replacement is missing on 1.2 runtimes (FPGA SDKs)
        let queue = unsafe { CommandQueue::create(&context, id, 0) }.map_err(api("clCreateCommandQueue"))?;
        Ok(OpenClDevice {
            info,
            id,
            queue,
            programs: Mutex::new(HashMap::new()),
            prebuilt_only: std::sync::atomic::AtomicBool::new(false),
            commands: Mutex::new(()),
            pool: Mutex::new(HashMap::new()),
            context,
        })
    }

    /// What the runtime says about this device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// An uninitialised buffer of `len` bytes.
    pub fn alloc(&self, len: usize) -> Result<DeviceBuffer, OpenClError> {
        // SAFETY: no host pointer is passed, so OpenCL allocates and owns the memory.
        let mem =
            unsafe { Buffer::<u8>::create(&self.context, CL_MEM_READ_WRITE, len.max(1), ptr::null_mut()) }
                .map_err(api("clCreateBuffer"))?;
        Ok(DeviceBuffer { mem, len })
    }

    /// Sets every byte of `buf` to 0 (queued; later commands on the queue see it done).
    pub fn zero(&self, buf: &mut DeviceBuffer) -> Result<(), OpenClError> {
        if buf.len == 0 {
            return Ok(());
        }
        let _one = self.commands.lock();
        // SAFETY: fills exactly the buffer's `len` bytes with a one-byte pattern.
        unsafe { self.queue.enqueue_fill_buffer(&mut buf.mem, &[0u8], 0, buf.len, &[]) }
            .map_err(api("clEnqueueFillBuffer"))?;
        Ok(())
    }

    /// Free buffers in the device's pool, and their total bytes.
    pub fn pooled(&self) -> (usize, usize) {
        let pool = self.pool.lock();
        pool.iter().fold((0, 0), |(n, bytes), (len, bs)| (n + bs.len(), bytes + len * bs.len()))
    }

    /// A new buffer holding a copy of `tensor`'s elements.
    pub fn upload(&self, tensor: &Tensor) -> Result<DeviceBuffer, OpenClError> {
        let mut buf = self.alloc(tensor.size_bytes())?;
        self.write(&mut buf, tensor)?;
        Ok(buf)
    }

    /// Copies `tensor`'s elements into `buf` (blocking), which must have the same byte size.
    pub fn write(&self, buf: &mut DeviceBuffer, tensor: &Tensor) -> Result<(), OpenClError> {
        let len = same_size(buf, tensor)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: a tensor's buffer is `size_bytes()` initialised, contiguous bytes (plain
        // integers, floats, and bools stored as 0/1 bytes).
        let bytes = unsafe { std::slice::from_raw_parts(tensor.as_ptr(), len) };
        let _one = self.commands.lock();
        // SAFETY: blocking write of exactly `len` bytes into a buffer of at least `len` bytes.
        unsafe { self.queue.enqueue_write_buffer(&mut buf.mem, CL_BLOCKING, 0, bytes, &[]) }
            .map_err(api("clEnqueueWriteBuffer"))?;
        Ok(())
    }

    /// Copies `buf` into `tensor`'s elements (blocking, after every launch queued before it),
    /// which must have the same byte size. A `bool` tensor reads any non-zero byte as `true`.
    pub fn read(&self, buf: &DeviceBuffer, tensor: &mut Tensor) -> Result<(), OpenClError> {
        let len = same_size(buf, tensor)?;
        if len == 0 {
            return Ok(());
        }
        if let Ok(slots) = tensor.as_mut_slice::<bool>() {
            // Staged: a byte other than 0 or 1 must never land in a `bool`.
            let mut bytes = vec![0u8; len];
            self.read_bytes(buf, &mut bytes)?;
            slots.iter_mut().zip(&bytes).for_each(|(s, &b)| *s = b != 0);
            return Ok(());
        }
        // SAFETY: the tensor owns `len` contiguous bytes of a numeric dtype, for which every
        // bit pattern is a valid value.
        let bytes = unsafe { std::slice::from_raw_parts_mut(tensor.as_mut_ptr(), len) };
        self.read_bytes(buf, bytes)
    }

    fn read_bytes(&self, buf: &DeviceBuffer, bytes: &mut [u8]) -> Result<(), OpenClError> {
        let _one = self.commands.lock();
        // SAFETY: blocking read of `bytes.len() <= buf.len` bytes into host memory we own.
        unsafe { self.queue.enqueue_read_buffer(&buf.mem, CL_BLOCKING, 0, bytes, &[]) }
            .map_err(api("clEnqueueReadBuffer"))?;
        Ok(())
    }

    /// The program built from `source` with build `options`, from this device's cache or
    /// compiled now. A compile error is [`OpenClError::Build`] carrying the build log.
    pub fn program(&self, source: &str, options: &str) -> Result<Arc<Program>, OpenClError> {
        let key = (source.to_string(), options.to_string());
        if let Some(hit) = self.programs.lock().get(&key) {
            return Ok(hit.clone());
        }
        if self.prebuilt_only.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(OpenClError::NotPrebuilt(
                source.lines().find(|l| l.starts_with("__kernel")).unwrap_or("").to_string(),
            ));
        }
        if options.contains('\0') {
            return Err(OpenClError::Api {
                call: "clBuildProgram",
                code: -43,
                name: "CL_INVALID_BUILD_OPTIONS".into(),
            });
        }
        let start = Instant::now();
        let program =
            ClProgram::create_from_source(&self.context, source).map_err(api("clCreateProgramWithSource"))?;
        let built = self.build(program, options, start)?;
        Ok(self.programs.lock().entry(key).or_insert(built).clone())
    }

    /// Creates the program of `source` from a device `binary` saved by [`Program::binary`]
    /// (`clCreateProgramWithBinary`, then `clBuildProgram` with `options`, which for a binary
    /// only links) and caches it as the program of `source` with `options`: later
    /// [`OpenClDevice::program`] calls for that source use it. A binary the device rejects
    /// is an error ([`OpenClError::Build`] with the log, or `CL_INVALID_BINARY`).
    pub fn load_binary(
        &self,
        source: &str,
        options: &str,
        binary: &[u8],
    ) -> Result<Arc<Program>, OpenClError> {
        let start = Instant::now();
        // SAFETY: one binary for the one device of the context; OpenCL reads exactly
        // `binary.len()` bytes and validates them.
        let program = unsafe { ClProgram::create_from_binary(&self.context, &[self.id], &[binary]) }
            .map_err(api("clCreateProgramWithBinary"))?;
        let built = self.build(program, options, start)?;
        self.programs.lock().insert((source.to_string(), options.to_string()), built.clone());
        Ok(built)
    }

    /// Builds (or, for a binary, links) `program` for this device with `options`; a failed
    /// build is [`OpenClError::Build`] with the device's log. `start` is when making the
    /// program began, for its build time.
    fn build(
        &self,
        mut program: ClProgram,
        options: &str,
        start: Instant,
    ) -> Result<Arc<Program>, OpenClError> {
        if let Err(e) = program.build(&[self.id], options) {
            if e.0 == CL_BUILD_PROGRAM_FAILURE {
                let log = program.get_build_log(self.id).unwrap_or_else(|e| format!("(no build log: {e})"));
                return Err(OpenClError::Build { device: self.info.id(), log });
            }
            return Err(api("clBuildProgram")(e));
        }
        Ok(Arc::new(Program { program, kernels: Mutex::new(HashMap::new()), build_time: start.elapsed() }))
    }

    /// From now on, [`OpenClDevice::program`] only returns programs already cached (loaded
    /// from binaries) and fails with [`OpenClError::NotPrebuilt`] for any other source.
    pub fn require_prebuilt(&self) {
        self.prebuilt_only.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Number of programs in the cache.
    pub fn cached_programs(&self) -> usize {
        self.programs.lock().len()
    }

    /// Queues kernel `name` of `program` over a grid of `global` work-items (1 to 3
    /// dimensions; nothing is queued when one is 0), with `args` in order.
    ///
    /// # Safety
    /// The caller guarantees what OpenCL cannot check: each argument has the type the kernel
    /// declares in its position (buffer ↔ pointer, `Long` ↔ `long`), and every access the
    /// kernel makes for this grid stays inside the buffer it addresses. On a CPU device an
    /// access outside a buffer corrupts host memory.
    pub unsafe fn launch(
        &self,
        program: &Program,
        name: &str,
        args: &[KernelArg<'_>],
        global: &[usize],
    ) -> Result<(), OpenClError> {
        if global.is_empty() || global.len() > 3 {
            return Err(OpenClError::WorkDims(global.len()));
        }
        if global.contains(&0) {
            return Ok(());
        }
        let mut kernels = program.kernels.lock();
        if !kernels.contains_key(name) {
            let k = ClKernel::create(&program.program, name).map_err(api("clCreateKernel"))?;
            kernels.insert(name.to_string(), k);
        }
        let kernel = kernels.get(name).ok_or_else(|| api("clCreateKernel")(ClError(-46)))?;
        for (i, arg) in args.iter().enumerate() {
            let i = i as u32;
            // SAFETY: the argument values live across the call, which copies them; their
            // types match the kernel's parameters (the caller's contract).
            let set = unsafe {
                match arg {
                    KernelArg::Buffer(b) => kernel.set_arg(i, &(b.mem.get() as cl_mem)),
                    KernelArg::Long(v) => kernel.set_arg(i, &(*v as cl_long)),
                }
            };
            set.map_err(api("clSetKernelArg"))?;
        }
        let _one = self.commands.lock();
        // SAFETY: all arguments are set (OpenCL reports a missing one as an error), and the
        // caller guarantees the accesses stay in bounds.
        unsafe {
            self.queue.enqueue_nd_range_kernel(
                kernel.get(),
                global.len() as u32,
                ptr::null(),
                global.as_ptr(),
                ptr::null(),
                &[],
            )
        }
        .map_err(api("clEnqueueNDRangeKernel"))?;
        Ok(())
    }

    /// Waits until everything queued has finished.
    pub fn finish(&self) -> Result<(), OpenClError> {
        let _one = self.commands.lock();
        self.queue.finish().map_err(api("clFinish"))
    }
}

fn same_size(buf: &DeviceBuffer, tensor: &Tensor) -> Result<usize, OpenClError> {
    if buf.len == tensor.size_bytes() {
        Ok(buf.len)
    } else {
        Err(OpenClError::SizeMismatch { buffer: buf.len, tensor: tensor.size_bytes() })
    }
}

impl crate::Device for OpenClDevice {
    fn id(&self) -> String {
        self.info.id()
    }

    fn name(&self) -> &str {
        &self.info.name
    }

    fn allocate(&self, bytes: usize) -> Result<Box<dyn DeviceMemory>, DeviceError> {
        let pooled = self.pool.lock().get_mut(&bytes).and_then(Vec::pop);
        let buffer = match pooled {
            Some(b) => b,
            None => self.alloc(bytes).map_err(|e| e.on(self.id()))?,
        };
        Ok(Box::new(buffer))
    }

    fn free(&self, memory: Box<dyn DeviceMemory>) {
        let Ok(buffer) = (memory as Box<dyn std::any::Any>).downcast::<DeviceBuffer>() else { return };
        let mut pool = self.pool.lock();
        let free = pool.entry(buffer.len).or_default();
        if free.len() < POOL_PER_SIZE {
            free.push(*buffer);
        }
    }

    fn zero(&self, memory: &mut dyn DeviceMemory) -> Result<(), DeviceError> {
        let buf = buffer_of_mut(memory)?;
        OpenClDevice::zero(self, buf).map_err(|e| e.on(self.id()))
    }

    fn copy_in(&self, memory: &mut dyn DeviceMemory, tensor: &Tensor) -> Result<(), DeviceError> {
        let buf = buffer_of_mut(memory)?;
        self.write(buf, tensor).map_err(|e| e.on(self.id()))
    }

    fn copy_out(&self, memory: &dyn DeviceMemory, tensor: &mut Tensor) -> Result<(), DeviceError> {
        self.read(buffer_of(memory)?, tensor).map_err(|e| e.on(self.id()))
    }

    fn synchronize(&self) -> Result<(), DeviceError> {
        self.finish().map_err(|e| e.on(self.id()))
    }
}

fn buffer_of_mut(memory: &mut dyn DeviceMemory) -> Result<&mut DeviceBuffer, DeviceError> {
    let any: &mut dyn std::any::Any = memory;
    any.downcast_mut::<DeviceBuffer>().ok_or_else(|| DeviceError::ForeignMemory("an OpenCL device".into()))
}
