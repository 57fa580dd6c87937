//! Tensors, data types and the device abstraction of relay-vm.
//!
//! This crate has no workspace dependency (ARCHITECTURE.md §2): the VM, the compiler and the
//! kernel generators all agree on [`DType`] and [`Tensor`] through it.

// Frame arenas: with `opencl`, the crate's only `unsafe` code (every block has a SAFETY comment).
mod arena;
pub mod arith;
mod device;
mod dtype;
pub mod opencl;
#[macro_use]
mod shared;
mod storage;
mod tensor;
mod view;

pub use arena::{ArenaBlock, ArenaRegion, ARENA_ALIGN};
pub use device::{Device, DeviceError, DeviceMemory, DeviceTensor};
pub use dtype::{DType, DTypeCode, ParseDTypeError};
pub use shared::{SharedBuffer, SharedBytes};
pub use storage::{Element, Scalar, Storage};
pub use tensor::{shape_size, Tensor, TensorError};
pub use view::{Layout, TensorView, TensorViewMut};
