//! A kir kernel built for an OpenCL device, and its safe calling wrapper.

use super::emit::{generate, Generated};
use crate::{JitError, KernelCache, Target};
use relay_devices::opencl::{buffer_of, DeviceBuffer, KernelArg, OpenClDevice, Program};
use relay_devices::{DType, Device, DeviceTensor, Tensor};
use relay_kir::{
    buffer_shape, check_args, check_bounds, infer_syms, BufferId, BufferRole, CallError, Kernel,
};
use std::sync::Arc;
use std::time::Duration;

/// Build options of every kernel program: IEEE-exact `/` and `sqrt` (OpenCL otherwise
/// allows 2.5 ulp), as kir's numerics contract asks.
pub const BUILD_OPTIONS: &str = "-cl-fp32-correctly-rounded-divide-sqrt";

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

    /// The device the program was built for.
    pub fn device(&self) -> &Arc<OpenClDevice> {
        &self.device
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

    /// The built program (its device binary is what `relay-vm compile --emit-opencl
    /// --binaries` saves).
    pub fn program(&self) -> &Arc<Program> {
        &self.program
    }

    /// How many phases (launches per call) the kernel has, and how many of them may run as
    /// many work-items.
    pub fn phases(&self) -> (usize, usize) {
        let ps = &self.generated.phases;
        (ps.len(), ps.iter().filter(|(_, p)| p.parallel.is_some()).count())
    }

    /// The dtypes and shapes of the outputs for inputs of `input_shapes` (syms read off the
    /// shapes).
    ///
    /// # Errors
    /// [`JitError::Call`] when the shapes bind no consistent syms, or an output shape is not
    /// valid for them.
    pub fn output_types(&self, input_shapes: &[&[usize]]) -> Result<Vec<(DType, Vec<usize>)>, JitError> {
        let k = &self.kernel;
        let syms = if k.syms.is_empty() { Vec::new() } else { infer_syms(k, input_shapes, &[])? };
        k.buffers_with_role(BufferRole::Output)
            .map(|b| {
                let decl = &k.buffers[b.index()];
                Ok((decl.dtype, self.shape_of(b, &syms)?))
            })
            .collect()
    }

    /// Runs the kernel on device-resident tensors: reads `inputs`, writes `outputs` (already
    /// of the output dtypes and shapes, and zeroed as kir's destinations are), with the syms read off their shapes. Temps come from
    /// the device's pool, zero-filled. Nothing is copied to or from the host; launches are
    /// queued in order and later reads on the queue see their results.
    ///
    /// # Errors
    /// As [`OpenClKernel::run`]; tensors on another device are [`JitError::Internal`].
    pub fn run_device(&self, inputs: &[&DeviceTensor], outputs: &[DeviceTensor]) -> Result<(), JitError> {
        let k = &self.kernel;
        let syms = if k.syms.is_empty() {
            Vec::new()
        } else {
            let ins: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
            let outs: Vec<&[usize]> = outputs.iter().map(|t| t.shape()).collect();
            infer_syms(k, &ins, &outs)?
        };
        let ins = inputs.iter().map(|t| self.param(t)).collect::<Result<Vec<_>, _>>()?;
        let outs = outputs.iter().map(|t| self.param(t)).collect::<Result<Vec<_>, _>>()?;
        self.launch_all(&ins, &outs, &syms)
    }

    /// Runs the kernel on host tensors: copies `inputs` to the device, launches each phase,
    /// and copies the outputs back into `outputs` (destination-passing, like the CPU kernels).
    ///
    /// Errors, before anything runs, if the counts, dtypes or shapes (with `syms`
    /// substituted) do not match the declarations, a sym is negative, or the accesses cannot
    /// be proved in bounds for these syms; OpenCL failures are [`JitError::OpenCl`].
    pub fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor], syms: &[i64]) -> Result<(), JitError> {
        check_args(&self.kernel, inputs, outputs, syms)?;
        let dev: Arc<dyn Device> = self.device.clone();
        let ins = inputs.iter().map(|t| DeviceTensor::upload(&dev, t)).collect::<Result<Vec<_>, _>>()?;
        // Kernels may read their outputs before writing them (accumulators), so the
        // destinations go up with their contents.
        let outs = outputs.iter().map(|t| DeviceTensor::upload(&dev, t)).collect::<Result<Vec<_>, _>>()?;
        let iv = ins.iter().map(|t| self.param(t)).collect::<Result<Vec<_>, _>>()?;
        let ov = outs.iter().map(|t| self.param(t)).collect::<Result<Vec<_>, _>>()?;
        self.launch_all(&iv, &ov, syms)?;
        for (t, host) in outs.iter().zip(outputs.iter_mut()) {
            dev.copy_out(t.memory()?, host)?;
        }
        Ok(())
    }

    /// A launch parameter: the tensor's dtype, shape and buffer, if it lives on this device.
    fn param<'t>(&self, t: &'t DeviceTensor) -> Result<(DType, &'t [usize], &'t DeviceBuffer), JitError> {
        if !std::ptr::addr_eq(Arc::as_ptr(t.device()), Arc::as_ptr(&self.device)) {
            return Err(JitError::Internal(format!(
                "a tensor of another device passed to `{}`",
                self.kernel.name
            )));
        }
        Ok((t.dtype(), t.shape(), buffer_of(t.memory()?)?))
    }

    fn shape_of(&self, buf: BufferId, syms: &[i64]) -> Result<Vec<usize>, JitError> {
        let decl = &self.kernel.buffers[buf.index()];
        let bad = || JitError::Internal(format!("buffer `{}` has no valid shape", decl.name));
        let shape = buffer_shape(&self.kernel, buf, syms).ok_or_else(bad)?;
        shape.into_iter().map(|d| usize::try_from(d).map_err(|_| bad())).collect()
    }

    /// Checks `(dtype, shape, buffer)` of every parameter against the declarations and the
    /// bounds proof for `syms`, then queues every phase.
    fn launch_all(
        &self,
        inputs: &[(DType, &[usize], &DeviceBuffer)],
        outputs: &[(DType, &[usize], &DeviceBuffer)],
        syms: &[i64],
    ) -> Result<(), JitError> {
        let k = &self.kernel;
        let count = |what, expected: usize, actual: usize| {
            if expected == actual {
                Ok(())
            } else {
                Err(CallError::Count { kernel: k.name.clone(), what, expected, actual })
            }
        };
        count("syms", k.syms.len(), syms.len())?;
        if let Some((s, &value)) = syms.iter().enumerate().find(|(_, v)| **v < 0) {
            return Err(CallError::BadSym { sym: k.syms[s].name.clone(), value }.into());
        }
        count("inputs", k.num_inputs(), inputs.len())?;
        count("outputs", k.num_outputs(), outputs.len())?;
        // A kernel without syms was proved in bounds when it was compiled.
        if !k.syms.is_empty() {
            check_bounds(k, syms)?;
        }
        let dev: Arc<dyn Device> = self.device.clone();
        let (mut ins, mut outs) = (inputs.iter(), outputs.iter());
        let mut temps = Vec::new();
        let mut params: Vec<Option<&DeviceBuffer>> = Vec::with_capacity(k.buffers.len());
        for (b, decl) in k.buffers.iter().enumerate() {
            let arg = match decl.role {
                BufferRole::Input => ins.next(),
                BufferRole::Output => outs.next(),
                BufferRole::Temp => {
                    let t = DeviceTensor::zeros(&dev, decl.dtype, &self.shape_of(BufferId(b as u32), syms)?)?;
                    temps.push((b, t));
                    params.push(None);
                    continue;
                }
            };
            let Some(&(dtype, shape, buf)) = arg else {
                return Err(JitError::Internal("buffer table".into()));
            };
            if dtype != decl.dtype {
                return Err(CallError::DType {
                    buffer: decl.name.clone(),
                    expected: decl.dtype,
                    actual: dtype,
                }
                .into());
            }
            let expected = self.shape_of(BufferId(b as u32), syms)?;
            if expected != shape {
                return Err(CallError::Shape {
                    buffer: decl.name.clone(),
                    expected: expected.iter().map(|&d| d as i64).collect(),
                    actual: shape.to_vec(),
                }
                .into());
            }
            params.push(Some(buf));
        }
        for (b, t) in &temps {
            params[*b] = Some(buffer_of(t.memory()?)?);
        }
        let mut args: Vec<KernelArg<'_>> = Vec::with_capacity(params.len() + syms.len());
        for p in params {
            args.push(KernelArg::Buffer(p.ok_or_else(|| JitError::Internal("buffer table".into()))?));
        }
        args.extend(syms.iter().map(|&s| KernelArg::Long(s)));
        for (name, phase) in &self.generated.phases {
            let grid = phase.parallel.as_ref().map_or(1, |p| p.grid(syms));
            // SAFETY: the arguments are the generated functions' parameters in order (one
            // `__global` pointer per buffer, each checked above to have the declared dtype
            // and shape for these syms, so its byte size; then one `long` per sym); the
            // kernel verified and `check_bounds` proved every access in bounds for these
            // syms; the generated loop over global id 0 stops at the loop's extent whatever
            // the grid.
            unsafe { self.device.launch(&self.program, name, &args, &[grid]) }?;
        }
        Ok(())
    }
}

/// The OpenCL C program for `kernel` (verified first), as [`OpenClKernel::compile`] would build
/// it: for writing `.cl` files to compile offline (FPGA toolchains).
pub fn opencl_source(kernel: &Kernel) -> Result<String, JitError> {
    kernel.verify()?;
    Ok(generate(kernel)?.source)
}

/// Each launch of a call of `kernel` (verified first) with `syms`, in order: the `__kernel`
/// function's name in [`opencl_source`]'s program and its global work size (1 for a phase
/// that runs in one work-item). For manifests of offline-compiled programs.
pub fn opencl_launches(kernel: &Kernel, syms: &[i64]) -> Result<Vec<(String, usize)>, JitError> {
    kernel.verify()?;
    let phases = generate(kernel)?.phases;
    Ok(phases
        .iter()
        .map(|(name, p)| (name.clone(), p.parallel.as_ref().map_or(1, |p| p.grid(syms))))
        .collect())
}
