//! The Relay operator library and the prelude.
//!
//! [`ops`] holds every operator as an [`operator::Operator`] item, listed once
//! ([`ops::operators`], found by name with [`ops::operator`]); [`attrs`] their typed
//! attributes (TVM names and defaults), [`compute`] their kir loop nests, [`kernels`] the
//! runner and helpers of the reference kernels, and [`reference_ops`] the table of those
//! behind type-erased entry points.

/// The text of `prelude.relay`: List, Option, Tree and their combinators, in scope for every
/// program.
pub const PRELUDE: &str = include_str!("../../prelude.relay");

pub mod attrs;
pub mod compute;
pub mod error;
pub mod kernels;
pub mod operator;
pub mod ops;

pub use error::KernelError;
pub use kernels::table::{reference_ops, RefOp};
pub use ops::{op_registry, register_all};
