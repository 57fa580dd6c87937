//! kir → OpenCL C, run on an [`relay_devices::opencl::OpenClDevice`] (GPUs, FPGAs, POCL).
//!
//! - **Mapping.** Each top-level statement group becomes one `__kernel` function ("phase"),
//!   launched in order on the device's in-order queue. A top-level loop whose iterations are
//!   provably independent maps its variable to global id 0 (one work-item per iteration);
//!   inner loops, reductions included, run serially inside each work-item (one accumulator
//!   per output); everything else runs in a single work-item. See `plan.rs` for the rules.
//! - **Semantics.** Integers and bools match the interpreter exactly: wrapping arithmetic in
//!   unsigned types, helpers for division by 0 and `MIN / -1`, `convert_T_sat_rtz` for
//!   float→int casts, bools as `uchar` 0/1. Floats use OpenCL's builtins (`exp log tanh erf
//!   pow`, within the OpenCL spec's ulp bounds) and may be contracted to FMA by the
//!   compiler; `/` and `sqrt` are correctly rounded (build option). Half floats are
//!   `float` values rounded per cast (`half.rs`).
//! - **Safety.** As for the Cranelift backend: [`OpenClKernel::run`] checks the arguments and
//!   proves the accesses in bounds for the call's syms before launching.
//! - **Data movement.** [`OpenClKernel::run_device`] works on device-resident tensors and
//!   copies nothing (the VM decides when tensors cross, see `vm/src/interp/device.rs`);
//!   [`OpenClKernel::run`] takes host tensors and copies them up and the outputs back. Temps
//!   are zero-filled buffers from the device's pool.

mod emit;
mod expr;
mod half;
mod kernel;
mod plan;

pub use kernel::{opencl_launches, opencl_source, OpenClKernel, BUILD_OPTIONS};
