//! The targets a kernel test runs on: the Cranelift JIT on the host CPU and, with the `opencl`
//! feature, every OpenCL device (POCL in CI). A test body is written once and loops over
//! [`Target::all`]; what differs between targets — how a kernel is planned: vectorised loops on
//! the CPU, parallel phases on an OpenCL device — is asserted through [`Compiled::expect_plan`].

use super::{args, assert_close, jit};
use relay_devices::Tensor;
use relay_jit::{CompiledKernel, JitError};
use relay_kir::{interp, Kernel};

#[cfg(feature = "opencl")]
use relay_devices::opencl::OpenClDevice;
#[cfg(feature = "opencl")]
use relay_jit::OpenClKernel;
#[cfg(feature = "opencl")]
use std::sync::{Arc, OnceLock};

/// Where a kernel is compiled and run.
pub enum Target {
    /// The host CPU, through the process's one [`relay_jit::Jit`].
    Cpu,
    /// One OpenCL device.
    #[cfg(feature = "opencl")]
    OpenCl(Arc<OpenClDevice>),
}

/// A kernel compiled for one [`Target`]. (Few exist at a time, so the size difference of the
/// variants does not matter.)
#[allow(clippy::large_enum_variant)]
pub enum Compiled {
    /// Cranelift machine code.
    Cpu(CompiledKernel),
    /// An OpenCL program.
    #[cfg(feature = "opencl")]
    OpenCl(OpenClKernel),
}

impl Target {
    /// The CPU, then every OpenCL device of every platform. Without an OpenCL runtime or
    /// device an `opencl` build says why and tests the CPU only, unless
    /// `RELAY_REQUIRE_OPENCL=1` (CI), when the test fails.
    pub fn all() -> Vec<Target> {
        #[allow(unused_mut)]
        let mut targets = vec![Target::Cpu];
        #[cfg(feature = "opencl")]
        targets.extend(opencl_devices().iter().cloned().map(Target::OpenCl));
        targets
    }

    /// The target's name, for assertion messages.
    pub fn name(&self) -> String {
        match self {
            Target::Cpu => "cpu".into(),
            #[cfg(feature = "opencl")]
            Target::OpenCl(dev) => dev.info().id(),
        }
    }

    /// Whether the target computes in float64 (every CPU; an OpenCL device with `cl_khr_fp64`).
    pub fn fp64(&self) -> bool {
        match self {
            Target::Cpu => true,
            #[cfg(feature = "opencl")]
            Target::OpenCl(dev) => dev.info().fp64,
        }
    }

    /// `kernel` compiled for this target.
    pub fn compile(&self, kernel: &Kernel) -> Result<Compiled, JitError> {
        match self {
            Target::Cpu => jit().compile(kernel).map(Compiled::Cpu),
            #[cfg(feature = "opencl")]
            Target::OpenCl(dev) => OpenClKernel::compile(dev, kernel).map(Compiled::OpenCl),
        }
    }
}

impl Compiled {
    /// Runs the kernel on host tensors (an OpenCL kernel copies them to its device and back).
    pub fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor], syms: &[i64]) -> Result<(), JitError> {
        match self {
            Compiled::Cpu(k) => k.run(inputs, outputs, syms),
            #[cfg(feature = "opencl")]
            Compiled::OpenCl(k) => k.run(inputs, outputs, syms),
        }
    }

    /// Asserts how the kernel was planned, on the targets an expectation is given for: on the
    /// CPU the number of vectorised loops, on OpenCL the (phases, parallel phases) pair.
    #[cfg_attr(not(feature = "opencl"), allow(unused_variables))]
    pub fn expect_plan(&self, vectorized_loops: Option<usize>, phases: Option<(usize, usize)>) {
        match self {
            Compiled::Cpu(k) => {
                if let Some(n) = vectorized_loops {
                    assert_eq!(k.stats().vectorized_loops, n, "vectorised loops on the CPU");
                }
            }
            #[cfg(feature = "opencl")]
            Compiled::OpenCl(k) => {
                if let Some(p) = phases {
                    assert_eq!(k.phases(), p, "phases on {}", k.device().info().id());
                }
            }
        }
    }
}

/// Every OpenCL device, opened once per process.
#[cfg(feature = "opencl")]
fn opencl_devices() -> &'static [Arc<OpenClDevice>] {
    static DEVICES: OnceLock<Vec<Arc<OpenClDevice>>> = OnceLock::new();
    DEVICES.get_or_init(|| {
        let optional = !relay_devices::opencl::device_required();
        let found = relay_devices::opencl::devices().and_then(|infos| {
            infos
                .iter()
                .map(|info| OpenClDevice::open(&info.id()).map(Arc::new))
                .collect::<Result<Vec<_>, _>>()
        });
        match found {
            Ok(devices) if !devices.is_empty() => devices,
            Ok(_) if optional => {
                eprintln!(
                    "testing the CPU only: no OpenCL device (set RELAY_REQUIRE_OPENCL=1 to fail instead)"
                );
                Vec::new()
            }
            Err(e) if optional => {
                eprintln!("testing the CPU only: {e} (set RELAY_REQUIRE_OPENCL=1 to fail instead)");
                Vec::new()
            }
            Ok(_) => panic!("no OpenCL device (RELAY_REQUIRE_OPENCL=1)"),
            Err(e) => panic!("no OpenCL device: {e} (RELAY_REQUIRE_OPENCL=1)"),
        }
    })
}

/// Outputs of the interpreter and of `target` for the same inputs, and the compiled kernel.
pub fn run_both_on(
    target: &Target,
    kernel: &Kernel,
    inputs: &[Tensor],
    outputs: &[Tensor],
    syms: &[i64],
) -> (Vec<Tensor>, Vec<Tensor>, Compiled) {
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let mut expected = outputs.to_vec();
    interp::run(kernel, &refs, &mut expected, syms).expect("interpreter");
    let compiled = target.compile(kernel).unwrap_or_else(|e| panic!("compile for {}: {e}", target.name()));
    let mut actual = outputs.to_vec();
    compiled.run(&refs, &mut actual, syms).unwrap_or_else(|e| panic!("run on {}: {e}", target.name()));
    (expected, actual, compiled)
}

/// Runs `kernel` on random inputs through the interpreter and `target`, compares within
/// `tol`, and returns the compiled kernel (for its plan).
pub fn check_on(target: &Target, kernel: &Kernel, syms: &[i64], tol: f64) -> Compiled {
    let (inputs, outputs) = args(kernel, syms, 0x5eed);
    let (expected, actual, compiled) = run_both_on(target, kernel, &inputs, &outputs, syms);
    assert_close(&expected, &actual, tol);
    compiled
}

/// [`run_both_on`] the CPU.
pub fn run_both(
    kernel: &Kernel,
    inputs: &[Tensor],
    outputs: &[Tensor],
    syms: &[i64],
) -> (Vec<Tensor>, Vec<Tensor>, CompiledKernel) {
    match run_both_on(&Target::Cpu, kernel, inputs, outputs, syms) {
        (expected, actual, Compiled::Cpu(k)) => (expected, actual, k),
        #[cfg(feature = "opencl")]
        _ => unreachable!("compiled for the CPU"),
    }
}

/// [`check_on`] the CPU.
pub fn check(kernel: &Kernel, syms: &[i64], tol: f64) -> CompiledKernel {
    match check_on(&Target::Cpu, kernel, syms, tol) {
        Compiled::Cpu(k) => k,
        #[cfg(feature = "opencl")]
        _ => unreachable!("compiled for the CPU"),
    }
}
