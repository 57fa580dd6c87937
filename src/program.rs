//! The host API: a compiled program (bytecode and the kernels it calls), VMs over it, and
//! helpers to build argument values.
//!
//! ```
//! let program = relay::Program::compile("sum.relay", "def @main(%xs: List[int32]) { @sum(%xs) }").unwrap();
//! let xs = program.constructor("Cons", vec![relay::scalar(40i32), program.constructor("Nil", vec![]).unwrap()]).unwrap();
//! let mut vm = program.vm();
//! let total = program.invoke(&mut vm, "main", vec![xs]).unwrap();
//! assert_eq!(relay::text::to_text(program.executable(), &program.function("main").unwrap().ret_type, &total).unwrap(), "40");
//! ```

use crate::typed;
use crate::Device;
use crate::{CompileFailure, Error};
use relay_compiler::pass::BoundParam;
use relay_devices::{Element, Tensor};
use relay_vm::{Executable, KernelTable, Limits, Value, Vm, VmConfig, VmFunction};

/// The optimisation level of [`Program::compile`] and the CLI: fused, JIT-compiled kernels.
pub const DEFAULT_OPT_LEVEL: u8 = 2;

/// How [`Program::compile_options`] compiles a program.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// 0 runs every operator on its reference kernel (the oracle); 1 and above fuse operators
    /// into JIT-compiled kernels ([`DEFAULT_OPT_LEVEL`]).
    pub opt_level: u8,
    /// The compile-time memory plan (frame arenas, kills at last use); off, every tensor comes
    /// from the VM's pool. Results are the same either way.
    pub memory_plan: bool,
    /// Where fused kernels run.
    pub device: Device,
    /// The function whose parameters [`CompileOptions::bound`] describes (`main`).
    pub entry: String,
    /// Tensors the host will bind to parameters of `entry` (weights from `--params`): from
    /// opt-level 1, their shapes replace `?` dimensions in the parameters' annotations, so
    /// operators reading them get static shapes and fuse
    /// ([`relay_compiler::pass::specialize_params`]). The program then only accepts tensors
    /// of those shapes for those parameters.
    pub bound: Vec<BoundParam>,
    /// Whether the prelude is in scope (`--no-prelude` leaves it out).
    pub prelude: crate::Prelude,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            opt_level: DEFAULT_OPT_LEVEL,
            memory_plan: true,
            device: Device::Cpu,
            entry: "main".to_string(),
            bound: vec![],
            prelude: crate::Prelude::InScope,
        }
    }
}

/// A program ready to run: a verified [`Executable`] and one kernel per entry of its kernel
/// list (JIT-compiled fused kernels and the stdlib's reference kernels).
///
/// `Send + Sync`: share one program between threads and give each thread its own
/// [`Vm`] ([`Program::vm`]).
pub struct Program {
    executable: Executable,
    kernels: KernelTable,
    device: Device,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("functions", &self.executable.functions.len())
            .field("kernels", &self.kernels.len())
            .finish()
    }
}

impl Program {
    /// Compiles Relay source `source` (shown as `name` in diagnostics) with the prelude:
    /// parse, type inference and the VM lowering passes, bytecode emission, kernel binding.
    ///
    /// # Errors
    /// [`Error::Compile`] with every diagnostic; [`Error::Kernel`] for an operator without a
    /// reference kernel.
    pub fn compile(name: &str, source: &str) -> Result<Program, Error> {
        Program::compile_with(name, source, DEFAULT_OPT_LEVEL)
    }

    /// [`Program::compile`] at optimisation level `opt_level`: 0 runs every operator on its
    /// reference kernel (the oracle); 1 and above fuse operators (FuseOps) into kernels that
    /// are JIT-compiled with Cranelift.
    ///
    /// # Errors
    /// As [`Program::compile`], and [`Error::Kernel`] for a kernel the JIT rejects.
    pub fn compile_with(name: &str, source: &str, opt_level: u8) -> Result<Program, Error> {
        Program::compile_planned(name, source, opt_level, true)
    }

    /// [`Program::compile_with`], with the compile-time memory plan (frame arenas, kills at
    /// last use) on or off; off, every tensor comes from the VM's pool and dies with its
    /// register or frame. Results are the same either way.
    ///
    /// # Errors
    /// As [`Program::compile_with`].
    pub fn compile_planned(
        name: &str,
        source: &str,
        opt_level: u8,
        memory_plan: bool,
    ) -> Result<Program, Error> {
        Program::compile_on(name, source, opt_level, memory_plan, &Device::Cpu)
    }

    /// [`Program::compile_planned`] for `device`: with an OpenCL device, fused kernels run
    /// there as OpenCL C and their tensors stay on the device between kernels; the
    /// device-planning pass (`compiler/src/codegen/plan_devices.rs`) marks with `DeviceCopy`
    /// where they must come to the host. Operators without kir stay on the host.
    ///
    /// # Errors
    /// As [`Program::compile_planned`]; [`Error::Device`] when the device cannot be opened.
    pub fn compile_on(
        name: &str,
        source: &str,
        opt_level: u8,
        memory_plan: bool,
        device: &Device,
    ) -> Result<Program, Error> {
        let options =
            CompileOptions { opt_level, memory_plan, device: device.clone(), ..CompileOptions::default() };
        Program::compile_options(name, source, &options)
    }

    /// Compiles Relay source `source` (shown as `name` in diagnostics) as `options` say.
    ///
    /// # Errors
    /// As [`Program::compile_on`].
    pub fn compile_options(name: &str, source: &str, options: &CompileOptions) -> Result<Program, Error> {
        let (mut module, _file) = crate::parse_with(name, source, options.prelude)?;
        let ops = relay_stdlib::op_registry();
        if options.opt_level >= 1 && !options.bound.is_empty() {
            // A missing entry function is reported when the program is run.
            let _ = relay_compiler::pass::specialize_params(&mut module, &options.entry, &options.bound);
        }
        let lower = relay_compiler::pass::LowerOptions::at_level(options.opt_level);
        let lowered = relay_compiler::pass::lower_for_vm(&mut module, &ops, &lower).and_then(|types| {
            let mut exe = relay_compiler::codegen::compile_planned(
                &module,
                &types,
                &ops,
                options.opt_level >= 1,
                options.memory_plan,
            )?;
            if options.device.is_opencl() {
                relay_compiler::codegen::plan_devices::plan_executable(&mut exe);
            }
            Ok(exe)
        });
        match lowered {
            // Compiled here from the user's own source: its kernels are as large as the
            // program's tensors, bounded at run time by the VM's caps and deadline.
            Ok(exe) => Program::bind(exe, &options.device, &Limits::UNBOUNDED),
            Err(error) => Err(Error::Compile(CompileFailure { error, sources: module.sources })),
        }
    }

    /// Binds the kernels of an executable (JIT-compiling its kir kernels).
    ///
    /// # Errors
    /// [`Error::Kernel`] for an operator without a reference kernel or with attributes it
    /// rejects, or a kir kernel that does not decode or compile.
    pub fn from_executable(executable: Executable) -> Result<Program, Error> {
        Program::from_executable_on(executable, &Device::Cpu)
    }

    /// [`Program::from_executable`] with the kir kernels bound to `device`. Each kir kernel's
    /// resources are checked against the default [`Limits`], as for a file, since the
    /// executable may come from anywhere.
    ///
    /// # Errors
    /// As [`Program::from_executable`]; [`Error::Device`] when the device cannot be opened.
    pub fn from_executable_on(executable: Executable, device: &Device) -> Result<Program, Error> {
        Program::bind(executable, device, &Limits::default())
    }

    /// Binds `executable`'s kernels on `device`, checking its kir kernels against `limits`.
    fn bind(executable: Executable, device: &Device, limits: &Limits) -> Result<Program, Error> {
        let opened = device.open()?;
        if let (Some(dev), Device::OpenCl { binaries: Some(dir), .. }) = (&opened, device) {
            crate::opencl_files::load_binaries(dev, dir)?;
        }
        let kernels = crate::kernels::bind_kernels_on(&executable, opened.as_ref(), limits)
            .map_err(|(index, message)| Error::Kernel { index, message })?;
        Ok(Program { executable, kernels, device: device.clone() })
    }

    /// Where the program's fused kernels run.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Reads, verifies and binds an executable written by [`Program::save`].
    ///
    /// # Errors
    /// [`Error::Load`] for a file that is not a valid executable; [`Error::Kernel`] as for
    /// [`Program::from_executable`].
    pub fn load(bytes: &[u8]) -> Result<Program, Error> {
        Program::from_executable(Executable::load(bytes)?)
    }

    /// [`Program::load`] with the kir kernels bound to `device`.
    ///
    /// # Errors
    /// As [`Program::load`] and [`Program::from_executable_on`].
    pub fn load_on(bytes: &[u8], device: &Device) -> Result<Program, Error> {
        Program::from_executable_on(Executable::load(bytes)?, device)
    }

    /// The executable file (`relay-vm compile` output).
    pub fn save(&self) -> Vec<u8> {
        self.executable.save()
    }

    /// The bytecode, constants, kernel descriptors and types.
    pub fn executable(&self) -> &Executable {
        &self.executable
    }

    /// A VM with the default limits.
    pub fn vm(&self) -> Vm<'_> {
        self.vm_with(VmConfig::default())
    }

    /// A VM with the given limits.
    pub fn vm_with(&self, config: VmConfig) -> Vm<'_> {
        match Vm::new(&self.executable, &self.kernels, config) {
            Ok(vm) => vm,
            // `from_executable` binds exactly one kernel per descriptor and neither list
            // changes afterwards, so the VM cannot reject the table.
            Err(e) => unreachable!("kernel table out of step with the executable: {e}"),
        }
    }

    /// The function named `name` (a leading `@` is ignored).
    ///
    /// # Errors
    /// [`Error::Input`] when there is none.
    pub fn function(&self, name: &str) -> Result<&VmFunction, Error> {
        typed::function(&self.executable.functions, name)
    }

    /// The value of constructor `name` (`Cons`, `Some`, a user type's) applied to `fields`.
    ///
    /// # Errors
    /// [`Error::Input`] for an unknown constructor or a wrong number of fields.
    pub fn constructor(&self, name: &str, fields: Vec<Value>) -> Result<Value, Error> {
        let found = self.executable.adts.iter().find_map(|a| {
            a.constructors.iter().position(|c| c.name == name).map(|tag| (tag, &a.constructors[tag]))
        });
        let (tag, con) =
            found.ok_or_else(|| Error::Input(format!("the program has no constructor `{name}`")))?;
        if con.fields.len() != fields.len() {
            return Err(Error::Input(format!(
                "`{name}` takes {} field(s), {} given",
                con.fields.len(),
                fields.len()
            )));
        }
        Ok(Value::adt(tag as u32, fields))
    }

    /// Runs function `name` on `args` in `vm`, after checking the argument count and each
    /// argument's outer shape against the parameter types (kind, dtype and shape of tensors,
    /// constructor tag and field count of ADT values; nested values are checked by the VM as
    /// it uses them).
    ///
    /// # Errors
    /// [`Error::Input`] for an unknown function or an argument that does not fit;
    /// [`Error::Trap`] for a run-time fault.
    pub fn invoke(&self, vm: &mut Vm<'_>, name: &str, args: Vec<Value>) -> Result<Value, Error> {
        let f = self.function(name)?;
        typed::check_arguments(&self.executable, f, &args)?;
        Ok(vm.invoke(&f.name, args)?)
    }

    /// The bound kernels, one per entry of the executable's kernel list.
    pub(crate) fn kernel_table(&self) -> &KernelTable {
        &self.kernels
    }
}

/// A tensor value of `shape` over row-major `data`; a 0-d tensor becomes a scalar, as the VM
/// keeps them.
///
/// # Errors
/// [`Error::Input`] when `data.len()` is not the shape's element count.
pub fn tensor<T: Element>(shape: Vec<usize>, data: Vec<T>) -> Result<Value, Error> {
    Tensor::from_vec(shape, data).map(Value::from_tensor).map_err(|e| Error::Input(e.to_string()))
}

/// A scalar (0-d tensor) value: `scalar(1.5f32)` is Relay's `1.5f`, `scalar(3i32)` its `3`.
pub fn scalar<T: Element>(value: T) -> Value {
    Value::from_tensor(Tensor::scalar(value))
}

/// A tuple value.
pub fn tuple(fields: Vec<Value>) -> Value {
    Value::tuple(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Program>();
    }
}
