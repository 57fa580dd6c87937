//! Kernel code generation for relay-vm: kir → Cranelift machine code for the host CPU.
//!
//! [`Jit::compile`] turns a [`relay_kir::Kernel`] into a [`CompiledKernel`], which
//! the VM calls in destination-passing style through [`CompiledKernel::run`]; a
//! [`KernelCache`] shares compilations between structurally equal kernels. See
//! [`cranelift`] for what the generated code does (SIMD, approximations, safety).
//! [`KernelBackend`] is the one interface the host binds kernels through: [`CpuBackend`]
//! (Cranelift) and [`OpenClBackend`] (OpenCL C on a device) implement it.

mod backend;
mod blas;
mod cache;
pub mod cranelift;
mod error;
pub mod opencl_c;

pub use backend::{CpuBackend, KernelBackend, OpenClBackend};
pub use blas::gemm::{intra_op_threads, set_intra_op_threads};
pub use cache::{KernelCache, Target};
pub use cranelift::{CompiledKernel, Jit};
pub use error::JitError;
pub use opencl_c::{opencl_source, OpenClKernel};
