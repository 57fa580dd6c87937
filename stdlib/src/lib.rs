//! The Relay operator library and the prelude.

/// The text of `prelude.relay`: List, Option, Tree and their combinators, in scope for every
/// program.
pub const PRELUDE: &str = include_str!("../../prelude.relay");

pub mod attrs;
pub mod error;
pub mod kernels;
pub mod ops;
pub mod relations;

pub use error::KernelError;
pub use ops::{op_registry, register_all};
