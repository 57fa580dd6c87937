//! The device abstraction: memory on an accelerator behind one trait ([`Device`]), and the
//! tensors that live there ([`DeviceTensor`]). The VM moves tensors between the host and any
//! device through these alone, naming no backend; a backend (OpenCL, [`crate::opencl`])
//! implements [`Device`] and alone looks inside its [`DeviceMemory`].

use crate::{DType, Tensor};
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// Why a device operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// A tensor whose byte size overflows `usize`.
    #[error("a {dtype} tensor of shape {shape:?} is too large")]
    TooLarge {
        /// The element type.
        dtype: DType,
        /// The dimensions.
        shape: Vec<usize>,
    },
    /// A copy between memory and a tensor of different byte sizes.
    #[error("a buffer of {buffer} bytes cannot hold a tensor of {tensor} bytes")]
    SizeMismatch {
        /// Bytes in the device memory.
        buffer: usize,
        /// Bytes in the tensor.
        tensor: usize,
    },
    /// Memory handed to a device that did not allocate it (a tensor of another device).
    #[error("memory of another device passed to {0}")]
    ForeignMemory(String),
    /// The backend failed (an API error, a lost device); the message is the backend's.
    #[error("{device}: {message}")]
    Backend {
        /// The device's id.
        device: String,
        /// What the backend said.
        message: String,
    },
}

/// A block of device memory, opaque to all but the backend that allocated it (which
/// downcasts it to its own type, upcasting to `dyn Any`).
pub trait DeviceMemory: Any + Send + Sync + fmt::Debug {
    /// Size in bytes.
    fn len(&self) -> usize;

    /// Whether the block holds no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An accelerator's memory and queue, as the VM sees it: allocate and free memory (from a
/// pool the device keeps), copy tensors in and out, wait for queued work. Operations are
/// queued in order: a copy out sees every kernel queued before it. Compiling and launching
/// kernels is the code generator's half (`relay-jit`), which alone knows the backend's type.
pub trait Device: Send + Sync + fmt::Debug {
    /// The device's selector, e.g. `opencl:0:1`: unique among open devices.
    fn id(&self) -> String;

    /// The device's name as its runtime reports it.
    fn name(&self) -> &str;

    /// Memory of `bytes` bytes with unspecified contents, reused from the device's pool when
    /// a block of that size is free.
    ///
    /// # Errors
    /// [`DeviceError::Backend`] when the device is out of memory or fails.
    fn allocate(&self, bytes: usize) -> Result<Box<dyn DeviceMemory>, DeviceError>;

    /// Returns `memory` to the device's pool (or frees it when the pool is full). Work queued
    /// on it before keeps running: the device reuses it only after that work.
    fn free(&self, memory: Box<dyn DeviceMemory>);

    /// Sets every byte of `memory` to 0 (queued).
    ///
    /// # Errors
    /// [`DeviceError::ForeignMemory`] for memory of another device; backend failures.
    fn zero(&self, memory: &mut dyn DeviceMemory) -> Result<(), DeviceError>;

    /// Copies `tensor`'s elements into `memory` (of the same byte size).
    ///
    /// # Errors
    /// [`DeviceError::SizeMismatch`], [`DeviceError::ForeignMemory`]; backend failures.
    fn copy_in(&self, memory: &mut dyn DeviceMemory, tensor: &Tensor) -> Result<(), DeviceError>;

    /// Copies `memory` into `tensor`'s elements (of the same byte size), after every
    /// operation queued before; a `bool` tensor reads any non-zero byte as `true`.
    ///
    /// # Errors
    /// As [`Device::copy_in`].
    fn copy_out(&self, memory: &dyn DeviceMemory, tensor: &mut Tensor) -> Result<(), DeviceError>;

    /// Waits until everything queued on the device has finished.
    ///
    /// # Errors
    /// Backend failures.
    fn synchronize(&self) -> Result<(), DeviceError>;
}

/// A tensor resident in a device's memory: dtype, shape and memory of exactly the tensor's
/// bytes (row-major, as a host [`Tensor`] lays them out). When it dies its memory goes back
/// to its device ([`Device::free`]) for the next tensor of the same byte size.
#[derive(Debug)]
pub struct DeviceTensor {
    dtype: DType,
    shape: Vec<usize>,
    // Always `Some` until `drop` hands the memory back.
    memory: Option<Box<dyn DeviceMemory>>,
    device: Arc<dyn Device>,
}

impl DeviceTensor {
    /// A tensor of `dtype` and `shape` on `device` with unspecified contents.
    ///
    /// # Errors
    /// [`DeviceError::TooLarge`]; allocation failures.
    pub fn empty(
        device: &Arc<dyn Device>,
        dtype: DType,
        shape: &[usize],
    ) -> Result<DeviceTensor, DeviceError> {
        let bytes = crate::tensor::shape_size(shape)
            .and_then(|n| n.checked_mul(dtype.size_bytes()))
            .ok_or_else(|| DeviceError::TooLarge { dtype, shape: shape.to_vec() })?;
        let memory = device.allocate(bytes)?;
        Ok(DeviceTensor { dtype, shape: shape.to_vec(), memory: Some(memory), device: device.clone() })
    }

    /// A zero-filled tensor of `dtype` and `shape` on `device` (the fill is queued).
    ///
    /// # Errors
    /// As [`DeviceTensor::empty`].
    pub fn zeros(
        device: &Arc<dyn Device>,
        dtype: DType,
        shape: &[usize],
    ) -> Result<DeviceTensor, DeviceError> {
        let mut t = DeviceTensor::empty(device, dtype, shape)?;
        device.zero(t.memory_mut()?)?;
        Ok(t)
    }

    /// A copy of host `tensor` on `device`.
    ///
    /// # Errors
    /// As [`DeviceTensor::empty`] and [`Device::copy_in`].
    pub fn upload(device: &Arc<dyn Device>, tensor: &Tensor) -> Result<DeviceTensor, DeviceError> {
        let mut t = DeviceTensor::empty(device, tensor.dtype(), tensor.shape())?;
        device.copy_in(t.memory_mut()?, tensor)?;
        Ok(t)
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The dimensions.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Bytes of device memory the elements take.
    pub fn size_bytes(&self) -> usize {
        self.memory.as_ref().map_or(0, |m| m.len())
    }

    /// The device the tensor lives on.
    pub fn device(&self) -> &Arc<dyn Device> {
        &self.device
    }

    /// Whether the tensor lives on `device` (the same open device, not an equal one).
    pub fn is_on(&self, device: &Arc<dyn Device>) -> bool {
        Arc::ptr_eq(&self.device, device)
    }

    /// The device memory (for the backend to downcast).
    ///
    /// # Errors
    /// [`DeviceError::ForeignMemory`] only in an impossible state (memory already freed).
    pub fn memory(&self) -> Result<&dyn DeviceMemory, DeviceError> {
        self.memory.as_deref().ok_or_else(|| DeviceError::ForeignMemory(self.device.id()))
    }

    fn memory_mut(&mut self) -> Result<&mut dyn DeviceMemory, DeviceError> {
        match self.memory.as_deref_mut() {
            Some(m) => Ok(m),
            None => Err(DeviceError::ForeignMemory(self.device.id())),
        }
    }

    /// A host copy (after every operation queued on the device before it).
    ///
    /// # Errors
    /// As [`Device::copy_out`]; [`DeviceError::TooLarge`] when the host cannot hold it.
    pub fn to_host(&self) -> Result<Tensor, DeviceError> {
        let mut t = Tensor::zeros(self.dtype, self.shape.clone())
            .map_err(|_| DeviceError::TooLarge { dtype: self.dtype, shape: self.shape.clone() })?;
        self.device.copy_out(self.memory()?, &mut t)?;
        Ok(t)
    }
}

impl Drop for DeviceTensor {
    fn drop(&mut self) {
        if let Some(m) = self.memory.take() {
            self.device.free(m);
        }
    }
}
