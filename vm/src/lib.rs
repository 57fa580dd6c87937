//! The Relay bytecode virtual machine (paper §4): instruction set, executable format and
//! interpreter. Built in the VM issue; this crate depends only on `relay-devices`.
