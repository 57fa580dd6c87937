//! The host API: a compiled program (bytecode and the kernels it calls), VMs over it, and
//! helpers to build argument values.
//!
//! ```
//! let program = relay::Program::builder().source("sum.relay", "def @main(%xs: List[int32]) { @sum(%xs) }").build().unwrap();
//! let xs = program.constructor("Cons", vec![relay::scalar(40i32), program.constructor("Nil", vec![]).unwrap()]).unwrap();
//! let mut vm = program.vm();
//! let total = program.invoke(&mut vm, "main", vec![xs]).unwrap();
//! assert_eq!(relay::text::to_text(program.executable(), &program.function("main").unwrap().ret_type, &total).unwrap(), "40");
//! ```

use crate::typed;
use crate::Device;
use crate::{Error, ProgramBuilder};
use relay_devices::{Element, Tensor};
use relay_runtime::{Executable, KernelTable, Limits, Value, Vm, VmConfig, VmFunction};

/// A program ready to run: a verified [`Executable`] and one kernel per entry of its kernel
/// list (JIT-compiled fused kernels and the stdlib's reference kernels).
///
/// `Send + Sync`: share one program between threads and give each thread its own
/// [`Vm`] ([`Program::vm`]).
pub struct Program {
    executable: Executable,
    kernels: KernelTable,
    device: Device,
    /// The function [`Program::run`] calls (no `@`).
    pub(crate) entry: String,
    /// The weights bound to `entry`'s parameters ([`ProgramBuilder::params`]).
    pub(crate) weights: Option<BoundWeights>,
    /// How long building it took.
    pub(crate) build_times: BuildTimes,
}

/// Wall-clock time spent making a [`Program`], by stage.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BuildTimes {
    /// Parsing, type inference, the passes and bytecode emission (zero for an executable
    /// loaded from a file, which also counts its reading and verification here).
    pub compile: std::time::Duration,
    /// Binding the kernels: JIT-compiling the fused kernels with Cranelift (or building them
    /// for an OpenCL device) and looking up the reference kernels.
    pub kernels: std::time::Duration,
}

/// A weights file bound to the entry function: where it came from (for messages) and what
/// bound, in parameter order, and what did not.
#[derive(Clone, Debug)]
pub struct BoundWeights {
    /// The file named in messages.
    pub origin: String,
    /// The bound parameters, the tensors that bind none, and every tensor name.
    pub bound: crate::params::Bound,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("functions", &self.executable.functions.len())
            .field("kernels", &self.kernels.len())
            .field("entry", &self.entry)
            .field("weights", &self.weight_values().len())
            .finish()
    }
}

impl Program {
    /// A [`ProgramBuilder`]: the one way to compile Relay source or load an executable file,
    /// with weights, optimisation level, device and entry function.
    pub fn builder() -> ProgramBuilder {
        ProgramBuilder::default()
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

    /// Binds `executable`'s kernels on `device`, checking its kir kernels against `limits`
    /// ([`Limits::UNBOUNDED`] for an executable compiled in this process from the user's own
    /// source: its kernels are as large as its tensors, bounded at run time by the VM's caps,
    /// the deadline and the cancel handle).
    pub(crate) fn bind(executable: Executable, device: &Device, limits: &Limits) -> Result<Program, Error> {
        let opened = device.open()?;
        if let Device::OpenCl { binaries: Some(dir), .. } = device {
            for dev in &opened {
                crate::opencl_files::load_binaries(dev, dir)?;
            }
        }
        let started = std::time::Instant::now();
        let backends: Vec<relay_jit::OpenClBackend> =
            opened.into_iter().map(relay_jit::OpenClBackend::new).collect();
        let backends: Vec<&dyn relay_jit::KernelBackend> =
            backends.iter().map(|b| b as &dyn relay_jit::KernelBackend).collect();
        let kernels = crate::kernels::bind_kernels_on(&executable, &backends, limits)
            .map_err(|(index, message)| Error::Kernel { index, message })?;
        let build_times = BuildTimes { kernels: started.elapsed(), ..BuildTimes::default() };
        Ok(Program {
            executable,
            kernels,
            device: device.clone(),
            entry: "main".to_string(),
            weights: None,
            build_times,
        })
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

    /// The function [`Program::run`] calls (`main` unless [`ProgramBuilder::entry`] said
    /// otherwise), without `@`.
    pub fn entry(&self) -> &str {
        &self.entry
    }

    /// The names of the entry function's parameters that [`Program::run`] takes: those no
    /// weight is bound to, in parameter order.
    ///
    /// # Errors
    /// [`Error::Input`] when the program has no entry function.
    pub fn inputs(&self) -> Result<Vec<&str>, Error> {
        let f = self.function(&self.entry)?;
        Ok(self.free_params(f).map(|i| f.param_names[i].as_str()).collect())
    }

    /// The tensors of the weights file that bind no parameter of the entry function, by
    /// name, sorted (empty without weights). The builder ignores them unless
    /// [`ProgramBuilder::strict_params`] is set; a host may warn about them.
    pub fn unused_weights(&self) -> &[String] {
        self.weights.as_ref().map_or(&[], |w| &w.bound.unused)
    }

    /// How long building the program took, by stage (`relay-vm bench` prints it).
    pub fn build_times(&self) -> BuildTimes {
        self.build_times
    }

    /// The weights bound to the entry function, if any.
    pub fn bound_weights(&self) -> Option<&BoundWeights> {
        self.weights.as_ref()
    }

    /// `(parameter index, tensor)` of the entry's parameters bound to weights.
    fn weight_values(&self) -> &[(usize, Value)] {
        self.weights.as_ref().map_or(&[], |w| &w.bound.values)
    }

    /// Indices of `f`'s parameters without a bound weight.
    fn free_params<'f>(&'f self, f: &'f VmFunction) -> impl Iterator<Item = usize> + 'f {
        (0..f.param_types.len()).filter(|i| !self.weight_values().iter().any(|(w, _)| w == i))
    }

    /// Runs the entry function in `vm` on the bound weights and `inputs`, the values of its
    /// other parameters ([`Program::inputs`]): in order (`Vec<Value>`), or by name
    /// (`Vec<(name, Value)>`, a leading `%` ignored, any order). Arguments are checked as
    /// [`Program::invoke`] checks them.
    ///
    /// # Errors
    /// [`Error::Input`] for a missing entry function, a wrong input count, an unknown,
    /// repeated, missing or weight-bound name, or an input that does not fit its parameter;
    /// [`Error::Trap`] for a run-time fault.
    pub fn run(&self, vm: &mut Vm<'_>, inputs: impl Into<Inputs>) -> Result<Value, Error> {
        let f = self.function(&self.entry)?;
        let free: Vec<usize> = self.free_params(f).collect();
        let mut args: Vec<Option<Value>> = vec![None; f.param_types.len()];
        for (i, w) in self.weight_values() {
            args[*i] = Some(w.clone());
        }
        match inputs.into() {
            Inputs::Positional(values) => {
                if values.len() != free.len() {
                    let names: Vec<String> = free.iter().map(|&i| format!("%{}", f.param_names[i])).collect();
                    return Err(Error::Input(format!(
                        "`@{}` takes {} input(s) ({}), {} given",
                        f.name,
                        free.len(),
                        names.join(", "),
                        values.len()
                    )));
                }
                for (i, v) in free.iter().zip(values) {
                    args[*i] = Some(v);
                }
            }
            Inputs::Named(values) => {
                for (name, v) in values {
                    let key = name.strip_prefix('%').unwrap_or(&name);
                    let i =
                        f.param_names.iter().position(|p| p == key).ok_or_else(|| {
                            Error::Input(format!("`@{}` has no parameter `%{key}`", f.name))
                        })?;
                    if !free.contains(&i) {
                        return Err(Error::Input(format!("`%{key}` is bound to a weight")));
                    }
                    if args[i].replace(v).is_some() {
                        return Err(Error::Input(format!("`%{key}` is given twice")));
                    }
                }
                if let Some(&i) = free.iter().find(|&&i| args[i].is_none()) {
                    return Err(Error::Input(format!("`@{}` needs input `%{}`", f.name, f.param_names[i])));
                }
            }
        }
        // Every slot is filled: weights, then each free parameter exactly once.
        let args: Vec<Value> = args.into_iter().flatten().collect();
        typed::check_arguments(&self.executable, f, &args)?;
        Ok(vm.invoke(&f.name, args)?)
    }
}

/// The inputs of [`Program::run`]: the entry function's unbound parameters, in order or by
/// name.
#[derive(Clone, Debug)]
pub enum Inputs {
    /// One value per unbound parameter, in parameter order.
    Positional(Vec<Value>),
    /// `(parameter name, value)` pairs, in any order; names may start with `%`.
    Named(Vec<(String, Value)>),
}

impl From<Vec<Value>> for Inputs {
    fn from(values: Vec<Value>) -> Self {
        Inputs::Positional(values)
    }
}

impl From<Vec<(String, Value)>> for Inputs {
    fn from(values: Vec<(String, Value)>) -> Self {
        Inputs::Named(values)
    }
}

impl From<Vec<(&str, Value)>> for Inputs {
    fn from(values: Vec<(&str, Value)>) -> Self {
        Inputs::Named(values.into_iter().map(|(n, v)| (n.to_string(), v)).collect())
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
