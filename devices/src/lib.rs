//! Tensors, data types and the device abstraction of relay-vm.
//!
//! This crate has no workspace dependency (ARCHITECTURE.md §2): the VM, the compiler and the
//! kernel generators all agree on [`DType`] through it.

mod dtype;

pub use dtype::{DType, DTypeCode, ParseDTypeError};
