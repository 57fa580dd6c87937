//! The native routines behind kir's intrinsics, `gemm` and `depthwise_conv2d`, which JIT code
//! calls rather than emits (Cranelift has 128-bit vectors only): the product's dispatch (`gemm.rs`: the
//! `gemm` crate, or for few rows the routines below), the GEMV at the CPU's widest vectors
//! (`gemv.rs`), dense weights repacked into aligned panels for products of a few rows
//! (`packed.rs`) and the per-kernel cache of those packed copies (`pack_cache.rs`); and
//! behind kir's `depthwise_conv2d`, the depthwise convolution over output rows
//! (`depthwise.rs`).
//! BLAS's names for BLAS's operations, Relay's for the convolution; no Cranelift in here.

pub(crate) mod depthwise;
pub(crate) mod gemm;
pub(crate) mod gemv;
pub(crate) mod pack_cache;
pub(crate) mod packed;
