//! The Relay operator library and the prelude.
//!
//! [`attrs`] holds each operator's typed attributes (TVM names and defaults), [`kernels`] the
//! reference kernels (shape function, dtype rule, destination-passing kernel) and
//! [`reference_ops`] the table of them by operator name.

/// The text of `prelude.relay`: List, Option, Tree and their combinators, in scope for every
/// program.
pub const PRELUDE: &str = include_str!("../../prelude.relay");

pub mod attrs;
pub mod compute;
pub mod error;
pub mod kernels;
pub mod operator;
pub mod ops;
pub mod relations;

pub use error::KernelError;
pub use kernels::table::{reference_op, reference_ops, RefOp};
pub use ops::{op_registry, register_all};
