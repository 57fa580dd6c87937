//! A kir kernel built for an OpenCL device, and its safe calling wrapper.

use super::emit::{generate, Generated};
use crate::{JitError, KernelCache, Target};
use relay_compiler::kir::{buffer_shape, check_args, check_bounds, BufferId, BufferRole, Kernel};
use relay_devices::opencl::{DeviceBuffer, KernelArg, OpenClDevice, Program};
use relay_devices::Tensor;
use std::sync::Arc;
use std::time::Duration;

/// Build options: IEEE-exact `/` and `sqrt` (OpenCL otherwise allows 2.5 ulp), as kir's
/// numerics contract asks.
const BUILD_OPTIONS: &str = "-cl-fp32-correctly-rounded-divide-sqrt";

/// A kir kernel compiled to an OpenCL program on one device. Call it with
/// [`OpenClKernel::run`]; it is `Send + Sync` (launches are serialised on the device's queue).
#[derive(Debug)]
pub struct OpenClKernel {
    kernel: Kernel,
    generated: Generated,
    device: Arc<OpenClDevice>,
    program: Arc<Program>,
}

impl OpenClKernel {
    /// Verifies `kernel`, generates its OpenCL C and builds it on `device` (the device caches
    /// programs by source). A kernel without syms must also pass the bounds proof now.
    pub fn compile(device: &Arc<OpenClDevice>, kernel: &Kernel) -> Result<OpenClKernel, JitError> {
        kernel.verify()?;
        if kernel.syms.is_empty() {
            check_bounds(kernel, &[])?;
        }
        let generated = generate(kernel)?;
        let program = device.program(&generated.source, BUILD_OPTIONS)?;
        Ok(OpenClKernel { kernel: kernel.clone(), generated, device: device.clone(), program })
    }

    /// The compiled kernel for `kernel` on `device` from `cache`, compiling it on a miss.
    pub fn compile_cached(
        cache: &KernelCache<OpenClKernel>,
        device: &Arc<OpenClDevice>,
        kernel: &Kernel,
    ) -> Result<Arc<OpenClKernel>, JitError> {
        let target = Target::new(format!("{} {}", device.info().id(), device.info().name));
        cache.get_or_compile(kernel, &target, |k| OpenClKernel::compile(device, k))
    }

    /// The kernel this program was generated from.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The OpenCL C source.
    pub fn source(&self) -> &str {
        &self.generated.source
    }

    /// How long the device's compiler took to build the program (first build of the source).
    pub fn build_time(&self) -> Duration {
        self.program.build_time()
    }

    /// How many phases (launches per call) the kernel has, and how many of them may run as
    /// many work-items.
    pub fn phases(&self) -> (usize, usize) {
        let ps = &self.generated.phases;
        (ps.len(), ps.iter().filter(|(_, p)| p.parallel.is_some()).count())
    }

    /// Runs the kernel: copies `inputs` and `outputs` to the device, launches each phase,
    /// and copies `outputs` back (destination-passing, like the CPU kernels).
    ///
    /// Errors, before anything runs, if the counts, dtypes or shapes (with `syms`
    /// substituted) do not match the declarations, a sym is negative, or the accesses cannot
    /// be proved in bounds for these syms; OpenCL failures are [`JitError::OpenCl`].
    pub fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor], syms: &[i64]) -> Result<(), JitError> {
        let k = &self.kernel;
        check_args(k, inputs, outputs, syms)?;
        check_bounds(k, syms)?;
        let dev = &self.device;
        let (mut ins, mut outs) = (inputs.iter(), outputs.iter());
        let mut buffers: Vec<DeviceBuffer> = Vec::with_capacity(k.buffers.len());
        let mut out_slots = Vec::new();
        for (b, decl) in k.buffers.iter().enumerate() {
            let tensor = match decl.role {
                BufferRole::Input => ins.next().copied(),
                BufferRole::Output => {
                    out_slots.push(b);
                    outs.next()
                }
                BufferRole::Temp => None,
            };
            let buf = match (decl.role, tensor) {
                (BufferRole::Temp, _) => dev.upload(&self.temp(BufferId(b as u32), syms)?),
                (_, Some(t)) => dev.upload(t),
                (_, None) => return Err(JitError::Internal("buffer table".into())),
            };
            buffers.push(buf?);
        }
        let args: Vec<KernelArg<'_>> =
            buffers.iter().map(KernelArg::Buffer).chain(syms.iter().map(|&s| KernelArg::Long(s))).collect();
        for (name, phase) in &self.generated.phases {
            let grid = phase.parallel.as_ref().map_or(1, |p| p.grid(syms));
            // SAFETY: the arguments are the generated functions' parameters in order (one
            // `__global` pointer per buffer, sized by `check_args` or `temp`, then one `long`
            // per sym); the kernel verified and `check_bounds` proved every access in bounds
            // for these syms; the generated loop over global id 0 stops at the loop's extent
            // whatever the grid.
            unsafe { dev.launch(&self.program, name, &args, &[grid]) }?;
        }
        for (&b, tensor) in out_slots.iter().zip(outputs.iter_mut()) {
            dev.read(&buffers[b], tensor)?;
        }
        Ok(())
    }

    fn temp(&self, buf: BufferId, syms: &[i64]) -> Result<Tensor, JitError> {
        let decl = &self.kernel.buffers[buf.index()];
        let bad = || JitError::Internal(format!("temp `{}` has no valid shape", decl.name));
        let shape = buffer_shape(&self.kernel, buf, syms).ok_or_else(bad)?;
        let shape =
            shape.into_iter().map(usize::try_from).collect::<Result<Vec<_>, _>>().map_err(|_| bad())?;
        Ok(Tensor::zeros(decl.dtype, shape)?)
    }
}

/// The OpenCL C program for `kernel` (verified first), as [`OpenClKernel::compile`] would build
/// it: for writing `.cl` files to compile offline (FPGA toolchains).
pub fn opencl_source(kernel: &Kernel) -> Result<String, JitError> {
    kernel.verify()?;
    Ok(generate(kernel)?.source)
}
