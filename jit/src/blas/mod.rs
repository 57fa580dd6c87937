//! The native matrix routines behind kir's one intrinsic, `gemm`, which JIT code calls rather
//! than emits (Cranelift has 128-bit vectors only): the product's dispatch (`gemm.rs`: the
//! `gemm` crate, or for few rows the routines below), the GEMV at the CPU's widest vectors
//! (`gemv.rs`), dense weights repacked into aligned panels for products of a few rows
//! (`packed.rs`), the per-kernel cache of those packed copies (`pack_cache.rs`) and the product
//! over a convolution's padded image read in place (`window.rs`); and the product's
//! epilogue (`epilogue.rs`: bias, residual, clamp into the output, at the same width).
//! BLAS's names for BLAS's operations; no Cranelift in here.

pub(crate) mod epilogue;
pub(crate) mod gemm;
pub(crate) mod gemv;
pub(crate) mod pack_cache;
pub(crate) mod packed;
pub(crate) mod window;
