//! How a [`Program`] is made: [`ProgramBuilder`], the one way to compile Relay source or load
//! an executable file, with its weights, optimisation level, memory plan, device and entry
//! function.
//!
//! ```
//! let program = relay::Program::builder()
//!     .source("add.relay", "def @main(%w: Tensor[(2), float32], %x: Tensor[(2), float32]) { add(%w, %x) }")
//!     .opt_level(2)
//!     .build()
//!     .unwrap();
//! let w = relay::tensor(vec![2], vec![1f32, 2.0]).unwrap();
//! let x = relay::tensor(vec![2], vec![10f32, 20.0]).unwrap();
//! let sum = program.run(&mut program.vm(), vec![w, x]).unwrap();
//! assert_eq!(sum.to_tensor().unwrap().as_slice::<f32>().unwrap(), [11.0, 22.0]);
//! ```

use crate::program::BoundWeights;
use crate::{CompileFailure, Device, Error, Prelude, Program};
use relay_compiler::ir::Module;
use relay_compiler::pass::BoundParam;
use relay_devices::{DType, SharedBuffer, SharedBytes, Storage, Tensor};
use relay_runtime::{Executable, Limits};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The optimisation level a [`ProgramBuilder`] starts with (the CLI's default): fused,
/// JIT-compiled kernels.
pub const DEFAULT_OPT_LEVEL: u8 = 2;

/// Where the program comes from.
#[derive(Clone, Debug)]
enum Source {
    /// A `.relay` file or an executable file, told apart by the executable's magic number.
    File(PathBuf),
    /// Relay text, shown as `name` in diagnostics.
    Text { name: String, text: String },
}

/// Where the weights come from.
#[derive(Clone, Debug)]
enum Weights {
    /// A safetensors file.
    File(PathBuf),
    /// Safetensors bytes in memory (an imported ONNX model's, or a mapped file), named
    /// `origin` in messages.
    Bytes { origin: PathBuf, bytes: SharedBytes },
}

/// Compiles a Relay program (or loads an executable) into a [`Program`]; made by
/// [`Program::builder`].
///
/// Defaults: [`DEFAULT_OPT_LEVEL`], the memory plan on, [`Device::Cpu`], entry function
/// `main`, no weights.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ProgramBuilder {
    source: Option<Source>,
    params: Option<Weights>,
    opt_level: u8,
    memory_plan: bool,
    device: Device,
    entry: String,
    prelude: Prelude,
    strict_params: bool,
    bind_params: bool,
}

impl Default for ProgramBuilder {
    fn default() -> Self {
        ProgramBuilder {
            source: None,
            params: None,
            opt_level: DEFAULT_OPT_LEVEL,
            memory_plan: true,
            device: Device::Cpu,
            entry: "main".to_string(),
            prelude: Prelude::InScope,
            strict_params: false,
            bind_params: false,
        }
    }
}

impl ProgramBuilder {
    /// The program is the file at `path`: Relay source (UTF-8 text, with the prelude in
    /// scope) or an executable written by [`Program::save`] / `relay-vm compile`.
    pub fn file(mut self, path: impl Into<PathBuf>) -> Self {
        self.source = Some(Source::File(path.into()));
        self
    }

    /// The program is Relay source `text`, shown as `name` in diagnostics.
    pub fn source(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.source = Some(Source::Text { name: name.into(), text: text.into() });
        self
    }

    /// Weights: every tensor of the safetensors file at `path` is bound to the entry
    /// function's parameter of its name ([`crate::params`]), so [`Program::run`] takes only
    /// the other parameters. From opt-level 1 their shapes also replace `?` dimensions in the
    /// parameters' annotations, so operators reading them get static shapes and fuse
    /// ([`relay_compiler::pass::specialize_params`]) — the program `relay-vm run --params`
    /// runs. The file is memory-mapped and its tensors are bound without copying where their
    /// dtype and alignment allow ([`crate::params::map_file`]); it must not change while the
    /// program lives.
    pub fn params(mut self, path: impl Into<PathBuf>) -> Self {
        self.params = Some(Weights::File(path.into()));
        self
    }

    /// [`ProgramBuilder::params`] from safetensors `bytes` already in memory (the weights of
    /// an imported ONNX model, a `Vec<u8>`, or a mapped file), called `origin` in messages.
    /// Tensors borrow `bytes` as [`ProgramBuilder::params`] describes.
    pub fn params_bytes(mut self, origin: impl Into<PathBuf>, bytes: impl Into<SharedBytes>) -> Self {
        self.params = Some(Weights::Bytes { origin: origin.into(), bytes: bytes.into() });
        self
    }

    /// 0 runs every operator on its reference kernel (the oracle); 1 and above fuse operators
    /// (FuseOps) into kernels JIT-compiled with Cranelift.
    pub fn opt_level(mut self, level: u8) -> Self {
        self.opt_level = level;
        self
    }

    /// The compile-time memory plan (frame arenas, kills at last use); off, every tensor
    /// comes from the VM's pool and dies with its register or frame. Results are the same
    /// either way.
    pub fn memory_plan(mut self, on: bool) -> Self {
        self.memory_plan = on;
        self
    }

    /// Where fused kernels run: with an OpenCL device they run there as OpenCL C and their
    /// tensors stay on the device between kernels (the device-planning pass,
    /// `compiler/src/codegen/plan_devices.rs`, marks where they must come to the host).
    pub fn device(mut self, device: Device) -> Self {
        self.device = device;
        self
    }

    /// Whether a weight that binds no parameter of the entry function is an error (`true`,
    /// as `--strict-params`) or ignored (`false`, the default: a PyTorch `state_dict` often
    /// carries tensors such as `num_batches_tracked` that no parameter takes).
    pub fn strict_params(mut self, strict: bool) -> Self {
        self.strict_params = strict;
        self
    }

    /// Whether weights given with [`ProgramBuilder::params`] become constants of the compiled
    /// program at opt-level 2 and above (TVM's `bind_params_by_name`, which
    /// `relay.build(mod, params=...)` runs), so that the compiler computes what depends on them
    /// alone: `FoldConstant`, and `HoistTake`'s tables (the Tree-LSTM's leaves become lookups,
    /// `benches/pytorch/results.md`). The CLI's `run`, `bench`, `profile` and `dump` turn it on
    /// with `--bind-params`. Off by default, there for its cost (the Tree-LSTM's tables take
    /// 1.5 s to compute and its peak RSS goes 36 → 168 MB) and here also because a bound program differs for a
    /// host: the bound parameters leave the entry's signature (naming one is "no parameter",
    /// not "bound to a weight") and [`Program::save`] writes the weights (and tables) into the
    /// executable, which then takes no other weights. Levels 0 and 1 never bind (level 0 is
    /// the oracle a bound program is compared against). Binding copies the weights (see
    /// [`relay_compiler::pass::bind_params`]); parameters without a weight stay parameters.
    pub fn bind_params(mut self, on: bool) -> Self {
        self.bind_params = on;
        self
    }

    /// Whether the prelude is in scope for Relay source ([`Prelude::InScope`], where the
    /// program's own definitions shadow the prelude's) or left out (`--no-prelude`).
    pub fn prelude(mut self, prelude: Prelude) -> Self {
        self.prelude = prelude;
        self
    }

    /// The function [`Program::run`] calls and the weights bind to (`main`; a leading `@` is
    /// ignored).
    pub fn entry(mut self, name: impl Into<String>) -> Self {
        self.entry = name.into();
        self
    }

    /// Compiles (parse, type inference, the VM lowering passes, bytecode emission) or loads
    /// the program, binds its kernels and its weights.
    ///
    /// # Errors
    /// [`Error::File`] for a file that cannot be read, is neither UTF-8 source nor a valid
    /// executable, or holds weights that do not fit the entry function; [`Error::Compile`] with
    /// every diagnostic; [`Error::Kernel`] for a kernel that cannot be bound; [`Error::Device`] when the device
    /// cannot be opened; [`Error::Input`] when no source was given, or weights were given and
    /// there is no entry function.
    pub fn build(mut self) -> Result<Program, Error> {
        // Moved out, not copied: a weights file is megabytes.
        let weights = match self.params.take() {
            Some(Weights::File(path)) => {
                let bytes = crate::params::map_file(&path).map_err(|e| Error::File {
                    path: path.clone(),
                    message: format!("cannot read {}: {e}", path.display()),
                })?;
                Some((path, bytes))
            }
            Some(Weights::Bytes { origin, bytes }) => Some((origin, bytes)),
            None => None,
        };
        let source = self
            .source
            .take()
            .ok_or_else(|| Error::Input("no program: give the builder a `file` or a `source`".to_string()))?;
        let (mut program, unused) = match source {
            Source::Text { name, text } => self.compile(&name, &text, weights.as_ref())?,
            Source::File(path) => {
                let bytes = read(&path)?;
                if bytes.starts_with(relay_runtime::MAGIC) {
                    let exe = Executable::load(&bytes).map_err(|e| file_error(&path, &e))?;
                    (Program::from_executable_on(exe, &self.device)?, None)
                } else {
                    let text = String::from_utf8(bytes).map_err(|_| Error::File {
                        path: path.clone(),
                        message: format!(
                            "{} is neither UTF-8 Relay source nor an executable",
                            path.display()
                        ),
                    })?;
                    self.compile(&path.display().to_string(), &text, weights.as_ref())?
                }
            }
        };
        program.entry = self.entry.strip_prefix('@').unwrap_or(&self.entry).to_string();
        if let Some((path, bytes)) = weights {
            let main = program.function(&program.entry)?;
            let mut bound =
                crate::params::bind_shared_params(main, &bytes).map_err(|e| file_error(&path, &e))?;
            if let Some(unused) = unused {
                // Weights bound as constants no longer bind a parameter of the compiled
                // function: what binds nothing is what bound nothing before compiling.
                bound.unused = unused;
            }
            if self.strict_params && !bound.unused.is_empty() {
                let message = format!(
                    "{} tensor(s) bind no parameter of `@{}`: {}",
                    bound.unused.len(),
                    main.name,
                    bound.unused.join(", ")
                );
                return Err(file_error(&path, &message));
            }
            program.weights = Some(BoundWeights { origin: path.display().to_string(), bound });
        }
        Ok(program)
    }

    /// Compiles `text`, specialising the entry's parameters to the shapes of `weights` and,
    /// where [`ProgramBuilder::bind_params`] applies, binding them as constants. Returns the
    /// program and, when weights were bound as constants, the tensors that bound nothing.
    fn compile(
        &self,
        name: &str,
        text: &str,
        weights: Option<&(PathBuf, SharedBytes)>,
    ) -> Result<(Program, Option<Vec<String>>), Error> {
        let bound: Vec<BoundParam> = match weights {
            Some((path, bytes)) => {
                crate::params::bound_shapes(bytes.as_bytes()).map_err(|e| file_error(path, &e))?
            }
            None => vec![],
        };
        let started = std::time::Instant::now();
        let (mut module, _file) = crate::parse_with(name, text, self.prelude)?;
        let ops = relay_stdlib::op_registry();
        if self.opt_level >= 1 && !bound.is_empty() {
            // A missing entry function is reported when the weights are bound or the program
            // is run.
            let _ = relay_compiler::pass::specialize_params(&mut module, &self.entry, &bound);
        }
        let unused = match weights {
            Some((path, bytes)) if self.bind_params && self.opt_level >= 2 => {
                self.bind_constants(&mut module, bytes).map_err(|e| file_error(path, &e))?
            }
            _ => None,
        };
        let lower = relay_compiler::pass::LowerOptions::at_level(self.opt_level);
        let lowered = relay_compiler::pass::lower_for_vm(&mut module, &ops, &lower).and_then(|types| {
            let options = relay_compiler::codegen::CodegenOptions {
                fused: self.opt_level >= 1,
                memory_plan: self.memory_plan,
                kir_on_device: self.device.is_opencl(),
            };
            relay_compiler::codegen::compile(&module, &types, &ops, &options)
        });
        match lowered {
            Ok(mut exe) => {
                if unused.is_some() {
                    share_constants(&mut exe);
                }
                let compile = started.elapsed();
                let mut program = Program::bind(exe, &self.device, &Limits::UNBOUNDED)?;
                program.build_times.compile = compile;
                Ok((program, unused))
            }
            Err(error) => Err(Error::Compile(CompileFailure { error, sources: module.sources })),
        }
    }

    /// Binds the safetensors `bytes` to the entry function of `module` as constants
    /// ([`relay_compiler::pass::bind_params`]), checked as run-time binding checks them (the
    /// same errors). Returns the tensors that bind no parameter, or `None` when nothing was
    /// bound: there is no entry function, or a parameter has no type annotation (the
    /// weights are then bound at run time, against the inferred types).
    fn bind_constants(
        &self,
        module: &mut Module,
        bytes: &SharedBytes,
    ) -> Result<Option<Vec<String>>, String> {
        let entry = self.entry.strip_prefix('@').unwrap_or(&self.entry);
        let Some(f) = module.function_by_name(entry) else { return Ok(None) };
        let mut names = vec![];
        let mut types = vec![];
        for &p in &f.func.params {
            let Some(ty) = module.var(p).ty else { return Ok(None) };
            names.push(module.name(module.var(p).name).to_string());
            types.push(relay_compiler::codegen::value_type(module, ty));
        }
        let bound = crate::params::bind_by_name(&names, &types, bytes)?;
        let tensors: Vec<(String, Arc<Tensor>)> =
            bound.values.iter().filter_map(|(i, v)| Some((names.get(*i)?.clone(), v.to_tensor()?))).collect();
        let values: Vec<(String, &Tensor)> = tensors.iter().map(|(n, t)| (n.clone(), &**t)).collect();
        relay_compiler::pass::bind_params(module, entry, &values)?;
        Ok(Some(bound.unused))
    }
}

/// Makes the large float32 constants of `exe` shared buffers ([`Storage::Shared`]), so that
/// each VM's copy of the constants (one per `-j` thread and per `--batch` lane) shares their
/// elements instead of copying them: with weights bound as constants they are the weights
/// and HoistTake's tables (megabytes; measured, `--batch 16` held 412 MB without this).
fn share_constants(exe: &mut Executable) {
    const MIN_SHARED_BYTES: usize = 64 << 10;
    for t in &mut exe.constants {
        let Ok(elements) = t.as_slice::<f32>() else { continue };
        if std::mem::size_of_val(elements) < MIN_SHARED_BYTES {
            continue;
        }
        let bytes = SharedBytes::new(elements.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>());
        let shared = SharedBuffer::new(DType::F32, bytes)
            .and_then(|b| Tensor::from_storage(t.shape().to_vec(), Storage::Shared(b)).ok());
        if let Some(shared) = shared {
            *t = shared;
        }
    }
}

/// The bytes of the file at `path`.
fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::File {
        path: path.to_path_buf(),
        message: format!("cannot read {}: {e}", path.display()),
    })
}

/// What is wrong with the contents of the file at `path`.
fn file_error(path: &Path, e: &dyn std::fmt::Display) -> Error {
    Error::File { path: path.to_path_buf(), message: format!("{}: {e}", path.display()) }
}
