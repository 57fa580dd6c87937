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
pub use relay_stdlib as stdlib;

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
/// user's file (the printer takes it to print only that file's definitions).
///
/// # Errors
/// Every syntax and name-resolution error in the file, with the sources to render them.
///
/// A file whose text is the prelude's own (`relay-vm check prelude.relay`) is parsed once, as
/// the prelude.
pub fn parse(name: &str, text: &str) -> Result<(Module, FileId), CompileFailure> {
    let mut module = Module::default();
    let user = if text == relay_stdlib::PRELUDE {
        module.sources.add(name, text)
    } else {
        let prelude = module.sources.add("prelude.relay", relay_stdlib::PRELUDE);
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
    let (mut module, file) = parse(name, text)?;
    let ops = relay_stdlib::op_registry();
    match relay_compiler::ty::infer_types(&mut module, &ops) {
        Ok(types) => Ok(Checked { module, file, types }),
        Err(error) => Err(CompileFailure { error, sources: module.sources }),
    }
}
