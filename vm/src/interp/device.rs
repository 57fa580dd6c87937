//! Heterogeneous execution: `InvokePacked` of a kernel that runs on a device, and every
//! crossing of a tensor between host and devices (ARCHITECTURE.md, the devices section),
//! through the [`relay_devices::Device`] trait alone (no backend is named here).
//!
//! Residency lives in the values: a device kernel's outputs are [`Value::Device`] and stay
//! on the device while device kernels consume them. They cross to the host at the
//! `InvokePacked` of a host kernel (the register is replaced by its host copy, so later host
//! readers find it there), at `DeviceCopy` (which the device-planning pass inserts where
//! codegen knows statically that a device tensor reaches the host), when a device kernel
//! makes a 0-d result (the VM keeps scalars unboxed: control flow reads them), and at the
//! end of a run. A device tensor read by a kernel of another device is copied there through
//! the host (counted both ways). Host tensors go up when a device kernel reads them, once: an upload stays
//! cached while its host tensor lives on outside the cache (weights, constants), and a host
//! copy made for a host kernel stays paired with its device original.
//!
//! A VM that never meets a device kernel never touches any of this: the host path costs
//! one `None` check per kernel call.

use crate::memory::Pool;
use crate::operand::Reg;
use crate::packed_func::DevicePackedFunc;
use crate::value::{AdtValue, ClosureValue, Value};
use relay_devices::{Device, DeviceTensor, Tensor};
use smallvec::SmallVec;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

/// Host↔device copy statistics of one [`crate::Vm`] since it was made or its statistics were
/// reset ([`crate::Vm::reset_memory_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Tensors copied host → device.
    pub to_device: u64,
    /// Bytes copied host → device.
    pub to_device_bytes: u64,
    /// Tensors copied device → host.
    pub to_host: u64,
    /// Bytes copied device → host.
    pub to_host_bytes: u64,
    /// Device kernel launches (`InvokePacked` of a device kernel).
    pub device_calls: u64,
}

impl fmt::Display for CopyStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} device kernel call(s); host→device {} copies, {} bytes; device→host {} copies, {} bytes",
            self.device_calls, self.to_device, self.to_device_bytes, self.to_host, self.to_host_bytes
        )
    }
}

/// Cached uploads beyond which an upload first drops the entries nothing else refers to (a
/// long loop feeding host-made tensors to device kernels would otherwise pin them all).
const SWEEP_AT: usize = 1024;

/// The device side of one VM: statistics and the uploads of host tensors.
#[derive(Default)]
pub(super) struct DeviceState {
    pub stats: CopyStats,
    /// Whether a device kernel ran during the current run (then its result may hold
    /// device tensors).
    pub used: bool,
    /// Device copies of host tensors, keyed by the host tensor's address. The entry holds
    /// the host tensor, so the address cannot be reused while it is cached, and the tensor
    /// cannot change: the VM writes only into tensors it holds alone.
    uploads: HashMap<usize, (Arc<Tensor>, Arc<DeviceTensor>)>,
}

fn address(t: &Arc<Tensor>) -> usize {
    Arc::as_ptr(t) as usize
}

impl DeviceState {
    /// Ends a run: an upload stays cached while its host tensor lives on outside the cache
    /// (constants, weights the host passes to every run), the others are dropped.
    pub fn end_run(&mut self) {
        self.used = false;
        self.uploads.retain(|_, (host, _)| Arc::strong_count(host) > 1);
    }

    fn upload(&mut self, device: &Arc<dyn Device>, t: &Arc<Tensor>) -> Result<Arc<DeviceTensor>, String> {
        if let Some((_, d)) = self.uploads.get(&address(t)) {
            if d.is_on(device) {
                return Ok(d.clone());
            }
        }
        if self.uploads.len() >= SWEEP_AT {
            // Tensors only the cache still holds cannot be read again.
            self.uploads.retain(|_, (host, _)| Arc::strong_count(host) > 1);
        }
        let d = Arc::new(self.upload_owned(device, t)?);
        self.uploads.insert(address(t), (t.clone(), d.clone()));
        Ok(d)
    }

    fn upload_owned(&mut self, device: &Arc<dyn Device>, t: &Tensor) -> Result<DeviceTensor, String> {
        let d = DeviceTensor::upload(device, t).map_err(|e| e.to_string())?;
        self.stats.to_device += 1;
        self.stats.to_device_bytes += t.size_bytes() as u64;
        Ok(d)
    }

    /// A host copy of `d` (a 0-d tensor becomes an unboxed scalar).
    pub fn download(&mut self, d: &DeviceTensor) -> Result<Value, String> {
        let t = d.to_host().map_err(|e| e.to_string())?;
        self.stats.to_host += 1;
        self.stats.to_host_bytes += t.size_bytes() as u64;
        Ok(Value::from_tensor(t))
    }

    /// A host copy of `d` that stays paired with `d`: a device kernel reading the copy
    /// later gets `d` back instead of an upload.
    pub fn download_paired(&mut self, d: &Arc<DeviceTensor>) -> Result<Value, String> {
        let v = self.download(d)?;
        if let Value::Tensor(host) = &v {
            self.uploads.insert(address(host), (host.clone(), d.clone()));
        }
        Ok(v)
    }

    /// Replaces a device tensor in `slot` by its host copy (paired with it).
    pub fn bring_home(&mut self, slot: &mut Option<Value>) -> Result<(), String> {
        if let Some(Value::Device(d)) = slot {
            let v = self.download_paired(d)?;
            *slot = Some(v);
        }
        Ok(())
    }

    /// `v` with every device tensor in it (inside ADT values, closures and references too)
    /// replaced by its host copy; values without one are returned as they are.
    pub fn bring_value_home(&mut self, v: Value) -> Result<Value, String> {
        if !holds_device(&v) {
            return Ok(v);
        }
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.rebuild(v))
    }

    fn rebuild(&mut self, v: Value) -> Result<Value, String> {
        Ok(match v {
            Value::Device(d) => self.download(&d)?,
            Value::Adt(a) => {
                let fields =
                    a.fields.iter().map(|f| self.bring_value_home(f.clone())).collect::<Result<_, _>>()?;
                Value::Adt(Arc::new(AdtValue { tag: a.tag, fields }))
            }
            Value::Closure(c) => {
                let captured =
                    c.captured.iter().map(|f| self.bring_value_home(f.clone())).collect::<Result<_, _>>()?;
                Value::Closure(Arc::new(ClosureValue { func: c.func, captured }))
            }
            Value::Ref(r) => {
                let inner = r.lock().clone();
                *r.lock() = self.bring_value_home(inner)?;
                Value::Ref(r)
            }
            v @ (Value::Scalar(_) | Value::Tensor(_)) => v,
        })
    }
}

/// Whether `v` holds a device tensor anywhere (a walk with an explicit stack: results may be
/// long lists).
fn holds_device(v: &Value) -> bool {
    let mut seen: HashSet<usize> = HashSet::new();
    let mut stack: Vec<Value> = vec![v.clone()];
    while let Some(v) = stack.pop() {
        match v {
            Value::Device(_) => return true,
            Value::Adt(a) => {
                if seen.insert(Arc::as_ptr(&a) as usize) {
                    stack.extend(a.fields.iter().cloned());
                }
            }
            Value::Closure(c) => {
                if seen.insert(Arc::as_ptr(&c) as usize) {
                    stack.extend(c.captured.iter().cloned());
                }
            }
            Value::Ref(r) => {
                if seen.insert(Arc::as_ptr(&r) as usize) {
                    stack.push(r.lock().clone());
                }
            }
            Value::Scalar(_) | Value::Tensor(_) => {}
        }
    }
    false
}

/// Runs device kernel `k` on the values in `inputs`, leaving its outputs on the device in
/// `outputs` (a 0-d output comes down as a scalar). Whatever `outputs` held before (host
/// tensors `AllocTensor` preallocated) goes back to `pool`.
///
/// # Errors
/// A message for an input that is not a tensor, a kernel or device fault.
pub(super) fn invoke(
    k: &dyn DevicePackedFunc,
    inputs: &[Reg],
    outputs: &[Reg],
    window: &mut [Option<Value>],
    pool: &mut Pool,
    state: &mut DeviceState,
) -> Result<(), String> {
    let device = k.device();
    state.used = true;
    state.stats.device_calls += 1;
    let mut ins: SmallVec<[Arc<DeviceTensor>; 8]> = SmallVec::with_capacity(inputs.len());
    for &r in inputs {
        let d = match window.get(r.0 as usize) {
            Some(Some(Value::Device(d))) if d.is_on(device) => d.clone(),
            Some(Some(Value::Device(d))) => {
                // Another device's tensor: down, paired with it, then up to this one.
                let host = match state.download_paired(d)? {
                    Value::Tensor(t) => t,
                    v => return Err(format!("kernel input ${} is a {}, not a tensor", r.0, v.kind())),
                };
                state.upload(device, &host)?
            }
            Some(Some(Value::Tensor(t))) => state.upload(device, t)?,
            Some(Some(Value::Scalar(s))) => Arc::new(state.upload_owned(device, &s.to_tensor()?)?),
            Some(Some(other)) => {
                return Err(format!("kernel input ${} is a {}, not a tensor", r.0, other.kind()))
            }
            Some(None) => return Err(format!("read of empty register ${}", r.0)),
            None => return Err(format!("register ${} outside the frame", r.0)),
        };
        ins.push(d);
    }
    let refs: SmallVec<[&DeviceTensor; 8]> = ins.iter().map(|d| &**d).collect();
    let shapes: SmallVec<[&[usize]; 8]> = refs.iter().map(|d| d.shape()).collect();
    let types = k.output_types(&shapes)?;
    if types.len() != outputs.len() {
        return Err(format!("the kernel makes {} output(s), the call takes {}", types.len(), outputs.len()));
    }
    let outs = types
        .iter()
        .map(|(dtype, shape)| DeviceTensor::zeros(device, *dtype, shape))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    k.run(&refs, &outs)?;
    for (&r, d) in outputs.iter().zip(outs) {
        let v = if d.shape().is_empty() { state.download(&d)? } else { Value::Device(Arc::new(d)) };
        match window.get_mut(r.0 as usize) {
            Some(slot) => {
                if let Some(old) = slot.replace(v) {
                    pool.recycle_value(old);
                }
            }
            None => return Err(format!("register ${} outside the frame", r.0)),
        }
    }
    Ok(())
}
