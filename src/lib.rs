//! relay-vm: a Relay compiler and JIT-compiling bytecode virtual machine.
//!
//! This root crate is the host-facing API and the `relay-vm` command-line tool. Programs are
//! written in TVM's Relay text format (`#[version = "0.0.5"]`); the prelude (List, Option,
//! Tree and their combinators) is in scope for every program.
//!
//! ```
//! let (module, _file) = relay::parse("example.relay", "def @main() { (1, 2f) }").unwrap();
//! assert!(module.function_by_name("main").is_some());
//! assert!(module.function_by_name("map").is_some()); // from the prelude
//! ```

pub use relay_compiler as compiler;
pub use relay_devices as devices;
pub use relay_onnx as onnx;
pub use relay_runtime as vm;
pub use relay_stdlib as stdlib;

pub mod autobatch;
pub mod batch;
mod builder;
pub mod device;
pub mod device_list;
pub mod interp;
pub mod json;
pub mod kernels;
pub mod opencl_files;
pub mod params;
pub mod profile;
mod program;
pub mod text;
pub mod typed;

pub use builder::{ProgramBuilder, DEFAULT_OPT_LEVEL};
pub use device::Device;
pub use program::{scalar, tensor, tuple, BoundWeights, BuildTimes, Inputs, Program};
/// Intra-op parallelism of large matrix products (convolutions' GEMMs), process-wide, 1 by
/// default: `relay-vm run/bench --threads N`.
pub use relay_jit::{intra_op_threads, set_intra_op_threads};

use relay_compiler::diagnostics::CompileError;
use relay_compiler::ir::{FileId, Module, SourceMap};
use relay_compiler::ty::TypeMap;
use std::fmt;

/// A program that failed to compile: its diagnostics and the sources they point into.
#[derive(Debug, Clone)]
pub struct CompileFailure {
    /// Every diagnostic, in source order.
    pub error: CompileError,
    /// The prelude and the user's file, for rendering.
    pub sources: SourceMap,
}

impl CompileFailure {
    /// Renders every diagnostic as `error: ...`, `--> file:line:col`, the source line and a
    /// caret; `color` adds ANSI colours.
    pub fn render(&self, color: bool) -> String {
        self.error.render(&self.sources, color)
    }
}

impl fmt::Display for CompileFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(false))
    }
}

impl std::error::Error for CompileFailure {}

/// Parses and resolves `text` (shown as `name` in diagnostics) together with the prelude.
///
/// Returns the module, which holds the prelude's definitions and the file's, and the id of the
/// user's file (the printer takes it to print only that file's definitions). The file's own
/// definitions shadow the prelude's ([`relay_compiler::syntax::shadowed_prelude`]).
///
/// # Errors
/// Every syntax and name-resolution error in the file, with the sources to render them.
///
/// A file whose text is the prelude's own (`relay-vm check prelude.relay`) is parsed once, as
/// the prelude.
pub fn parse(name: &str, text: &str) -> Result<(Module, FileId), CompileFailure> {
    parse_with(name, text, Prelude::InScope)
}

/// Whether the prelude is parsed before a program (`--no-prelude` leaves it out).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Prelude {
    /// The prelude's definitions are in scope, except those the program shadows.
    #[default]
    InScope,
    /// Only the program's own definitions exist (TVM's `relay.parse`).
    Off,
}

/// [`parse`], with the prelude in scope or not.
///
/// # Errors
/// As [`parse`].
pub fn parse_with(name: &str, text: &str, prelude: Prelude) -> Result<(Module, FileId), CompileFailure> {
    let mut module = Module::default();
    let user = if text == relay_stdlib::PRELUDE || prelude == Prelude::Off {
        module.sources.add(name, text)
    } else {
        let shadowed = relay_compiler::syntax::shadowed_prelude(relay_stdlib::PRELUDE, text);
        let prelude = module.sources.add("prelude.relay", shadowed);
        let user = module.sources.add(name, text);
        if let Err(error) = relay_compiler::syntax::parse_source(&mut module, prelude) {
            return Err(CompileFailure { error, sources: module.sources });
        }
        user
    };
    let result = relay_compiler::syntax::parse_source(&mut module, user);
    match result {
        Ok(()) => Ok((module, user)),
        Err(error) => Err(CompileFailure { error, sources: module.sources }),
    }
}

/// A program that parsed, resolved and type-checked.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The module: the prelude's definitions and the file's.
    pub module: Module,
    /// The user's file.
    pub file: FileId,
    /// The inferred type of every expression, variable and global.
    pub types: TypeMap,
}

/// Parses `text` with the prelude and infers its types against the operator library.
///
/// # Errors
/// Every syntax, name and type error, with the sources to render them. Type errors are only
/// looked for once the file parses and resolves.
pub fn check(name: &str, text: &str) -> Result<Checked, CompileFailure> {
    check_with(name, text, Prelude::InScope)
}

/// [`check`], with the prelude in scope or not.
///
/// # Errors
/// As [`check`].
pub fn check_with(name: &str, text: &str, prelude: Prelude) -> Result<Checked, CompileFailure> {
    let (mut module, file) = parse_with(name, text, prelude)?;
    let ops = relay_stdlib::op_registry();
    match relay_compiler::ty::infer_types(&mut module, &ops) {
        Ok(types) => Ok(Checked { module, file, types }),
        Err(error) => Err(CompileFailure { error, sources: module.sources }),
    }
}

/// Why compiling, loading or running a program failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source does not parse, resolve or type-check, or the lowering passes or the
    /// bytecode emitter rejected it.
    #[error("{0}")]
    Compile(CompileFailure),
    /// The bytes are not a valid executable (bad magic, version, checksum, or bytecode that
    /// fails verification).
    #[error(transparent)]
    Load(#[from] relay_runtime::LoadError),
    /// Kernel `index` of the executable cannot be bound (no reference kernel for its
    /// operator, or attributes the kernel rejects).
    #[error("cannot bind kernel #{index}: {message}")]
    Kernel {
        /// The kernel's index in the executable.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// The program stopped with a run-time fault.
    #[error(transparent)]
    Trap(#[from] relay_runtime::Trap),
    /// The reference interpreter stopped with a run-time fault.
    #[error(transparent)]
    Fault(#[from] interp::Fault),
    /// A file given to [`ProgramBuilder`] cannot be used: it cannot be read, is neither UTF-8
    /// Relay source nor a valid executable, or (weights) is not a safetensors file whose
    /// tensors fit the entry function's parameters.
    #[error("{message}")]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong, naming the file.
        message: String,
    },
    /// A host-supplied value or name is wrong: an unknown function or constructor, a wrong
    /// argument count, a value that does not have its parameter's type, malformed JSON.
    #[error("{0}")]
    Input(String),
    /// The OpenCL device cannot be used: support not compiled in, no runtime, no such
    /// device.
    #[error(transparent)]
    Device(#[from] relay_devices::opencl::OpenClError),
}

impl From<CompileFailure> for Error {
    fn from(f: CompileFailure) -> Self {
        Error::Compile(f)
    }
}
