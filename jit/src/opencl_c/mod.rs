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
//!   compiler; `/` and `sqrt` are correctly rounded (build option).
//! - **Safety.** As for the Cranelift backend: [`OpenClKernel::run`] checks the arguments and
//!   proves the accesses in bounds for the call's syms before launching.
//! - **Data movement.** Each call copies inputs and outputs to the device and outputs back
//!   (temps are zero-filled device buffers): simple and correct, not yet fast.

mod emit;
mod expr;
mod kernel;
mod plan;

pub use kernel::{opencl_source, OpenClKernel};
