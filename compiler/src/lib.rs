//! The relay-vm compiler: Relay text → typed IR → passes → VM bytecode.
//!
//! See ARCHITECTURE.md §1 for the path of a program. This crate owns the syntax (lexer,
//! parser, printer), diagnostics and the arena IR.

pub mod codegen;
pub mod diagnostics;
pub mod dot;
pub mod ir;
/// kir, the kernel IR, lives in its own crate (`relay-kir`) so the JIT and executable loading
/// do not link the Relay front end; re-exported so `relay_compiler::kir` paths keep working.
pub use relay_kir as kir;
pub mod lower_kir;
pub mod op;
pub mod pass;
pub mod stack;
pub mod syntax;
pub mod ty;
