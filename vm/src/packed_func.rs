//! The kernel table: what `InvokePacked` calls. The VM does not know how kernels are made
//! (reference Rust, Cranelift JIT, a device backend); the host hands it one [`PackedFunc`] per
//! entry of the executable's kernel list, and a kernel that runs on a device
//! ([`relay_devices::Device`]) exposes its [`DevicePackedFunc`] form.

use crate::cancel::CancelHandle;
use relay_devices::{DType, Device, DeviceTensor, Tensor};
use std::sync::Arc;

/// A compiled operator or fused group, called in destination-passing style: TVM's name for
/// what `InvokePacked` calls (the type named `Kernel` is kir's loop nest, which one of these
/// may have been compiled from).
pub trait PackedFunc: Send + Sync {
    /// The dtypes and shapes of the outputs for these inputs (used when an output was not
    /// preallocated, e.g. because its shape has `?` dimensions).
    ///
    /// # Errors
    /// A message when the inputs' shapes or dtypes are not ones the kernel accepts.
    fn output_types(&self, inputs: &[&Tensor]) -> Result<Vec<(DType, Vec<usize>)>, String>;

    /// Computes the outputs from the inputs, writing into `outputs` (already of the right
    /// dtypes and shapes).
    ///
    /// # Errors
    /// A message on a run-time fault (shape mismatch on a `?` dimension, index out of range).
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), String>;

    /// [`PackedFunc::run`], given also each input's shared handle where the VM has one
    /// (`handles[i]` is `inputs[i]`'s `Arc`; `None` for unboxed scalars) and the run's
    /// [`CancelHandle`]. A kernel may keep a clone or a `Weak` of a handle to cache something
    /// derived from that input — the JIT keeps dense weights repacked for its matrix-vector
    /// product — because the VM writes only into tensors it gets from `Arc::get_mut`, which
    /// refuses while either exists. A long kernel should poll `cancel` (the JIT's do between
    /// iterations of their outermost loops) and return an error once it is set; the VM checks
    /// it before every kernel call. The default ignores the handles and `cancel`.
    ///
    /// # Errors
    /// As [`PackedFunc::run`], and when stopped by `cancel`.
    fn run_shared(
        &self,
        inputs: &[&Tensor],
        handles: &[Option<&Arc<Tensor>>],
        outputs: &mut [Tensor],
        cancel: &CancelHandle,
    ) -> Result<(), String> {
        let _ = (handles, cancel);
        self.run(inputs, outputs)
    }

    /// The kernel's form on a device, when it runs there. `InvokePacked` then keeps
    /// its tensors on the device (see [`DevicePackedFunc`]); `None` (the default) runs it on the
    /// host, copying device-resident inputs down first.
    fn on_device(&self) -> Option<&dyn DevicePackedFunc> {
        None
    }
}

/// A kernel that runs on a device, on tensors resident there (whatever the backend: the VM
/// sees only the [`Device`] trait). The VM uploads host
/// inputs (each once: an upload stays cached while its host tensor lives), allocates the
/// outputs on the device (zeroed, from the device's pool) and leaves them there.
pub trait DevicePackedFunc: Send + Sync {
    /// The device the kernel was built for.
    fn device(&self) -> &Arc<dyn Device>;

    /// The dtypes and shapes of the outputs for inputs of these shapes.
    ///
    /// # Errors
    /// A message when the shapes are not ones the kernel accepts.
    fn output_types(&self, input_shapes: &[&[usize]]) -> Result<Vec<(DType, Vec<usize>)>, String>;

    /// Queues the kernel: reads `inputs`, writes `outputs` (of the dtypes and shapes
    /// [`DevicePackedFunc::output_types`] gave, zeroed).
    ///
    /// # Errors
    /// A message when the tensors do not fit the kernel or the device fails.
    fn run(&self, inputs: &[&DeviceTensor], outputs: &[DeviceTensor]) -> Result<(), String>;
}

/// The kernels of one executable, in the order of its kernel list.
pub type KernelTable = Vec<Arc<dyn PackedFunc>>;
