//! `InvokePacked`: kernel calls in destination-passing style, without allocating when the
//! outputs were preallocated (the kernel writes into the very buffers `AllocTensor` or
//! `AllocFrame` produced, and the reference-counted boxes around them are kept). A kernel
//! with a device form runs on the device instead (`device.rs`); a host kernel first brings
//! device-resident inputs home.

use super::device::DeviceState;
use crate::cancel::CancelHandle;
use crate::executable::Executable;
use crate::memory::Pool;
use crate::operand::Init;
use crate::operand::Reg;
use crate::packed_func::PackedFunc;
use crate::scalar::ScalarValue;
use crate::value::Value;
use relay_devices::Tensor;
use smallvec::SmallVec;
use std::sync::Arc;

/// Buffers reused from one kernel call to the next.
#[derive(Default)]
pub(super) struct Scratch {
    /// The outputs' boxes while their tensors are lent to the kernel.
    boxes: Vec<Arc<Tensor>>,
    /// The outputs as the kernel sees them; between calls, empty placeholder tensors.
    outs: Vec<Tensor>,
    /// 0-d tensors that carry unboxed scalar inputs to kernels, rewritten on each call.
    scalars: Vec<Tensor>,
}

/// One `InvokePacked` instruction.
pub(super) struct Call<'a> {
    pub exe: &'a Executable,
    pub kernels: &'a [Arc<dyn PackedFunc>],
    pub kernel: u32,
    pub inputs: &'a [Reg],
    pub outputs: &'a [Reg],
    /// Passed to the kernel, which may stop early when it is set.
    pub cancel: &'a CancelHandle,
}

impl Call<'_> {
    /// Runs the kernel on the tensors in `window`'s registers `inputs`, into the tensors
    /// preallocated in `outputs` or, when any is missing, into tensors sized by the kernel's
    /// shape function (from `pool`).
    ///
    /// # Errors
    /// A message for a missing kernel, an input that is not a tensor, or a kernel fault.
    pub(super) fn run(
        &self,
        window: &mut [Option<Value>],
        pool: &mut Pool,
        scratch: &mut Scratch,
        device: &mut DeviceState,
    ) -> Result<(), String> {
        if let Some(dk) = self.kernels.get(self.kernel as usize).and_then(|k| k.on_device()) {
            let desc = self.exe.kernels.get(self.kernel as usize).map_or("kernel", |d| d.op.as_str());
            return super::device::invoke(dk, self.inputs, self.outputs, window, pool, device)
                .map_err(|e| format!("{desc}: {e}"));
        }
        let result = self.run_into(None, window, pool, scratch, device);
        // On a fault the outputs are dropped, as the trap ends the run.
        scratch.boxes.clear();
        result
    }

    /// [`Call::run`] on the host with kernel `k` in place of the table's (a lane's share of
    /// a batched call, `lane.rs`).
    ///
    /// # Errors
    /// As [`Call::run`].
    pub(super) fn run_with(
        &self,
        k: &dyn PackedFunc,
        window: &mut [Option<Value>],
        pool: &mut Pool,
        scratch: &mut Scratch,
        device: &mut DeviceState,
    ) -> Result<(), String> {
        let result = self.run_into(Some(k), window, pool, scratch, device);
        scratch.boxes.clear();
        result
    }

    fn run_into(
        &self,
        replace: Option<&dyn PackedFunc>,
        window: &mut [Option<Value>],
        pool: &mut Pool,
        scratch: &mut Scratch,
        device: &mut DeviceState,
    ) -> Result<(), String> {
        let (exe, kernels, kernel) = (self.exe, self.kernels, self.kernel);
        let (Some(table_k), Some(desc)) = (kernels.get(kernel as usize), exe.kernels.get(kernel as usize))
        else {
            return Err(format!("kernel #{kernel} does not exist"));
        };
        let k: &dyn PackedFunc = replace.unwrap_or(table_k.as_ref());
        let out_of_frame = |r: Reg| format!("register ${} outside the frame", r.0);
        let boxes = &mut scratch.boxes;
        boxes.clear();
        let mut preallocated = true;
        for &r in self.outputs {
            match window.get_mut(r.0 as usize).map(Option::take) {
                Some(Some(Value::Tensor(t))) if preallocated => {
                    // Shared (only in hand-written bytecode): the kernel writes a copy.
                    let t = if Arc::strong_count(&t) == 1 { t } else { Arc::new((*t).clone()) };
                    boxes.push(t);
                }
                Some(Some(v)) => pool.recycle_value(v),
                Some(None) => preallocated = false,
                None => return Err(out_of_frame(r)),
            }
        }
        // Scalar inputs are unboxed in registers; kernels take them as 0-d tensors, which are
        // kept from call to call and only rewritten.
        let scalars = &mut scratch.scalars;
        let mut used = 0;
        for &r in self.inputs {
            if let Some(slot @ Some(Value::Device(_))) = window.get_mut(r.0 as usize) {
                // A host kernel reads a device kernel's output: it comes home for good.
                device.bring_home(slot)?;
            }
            match window.get(r.0 as usize) {
                Some(Some(Value::Tensor(_))) => {}
                Some(Some(Value::Scalar(s))) => {
                    match scalars.get_mut(used) {
                        Some(t) => {
                            if t.dtype() != s.dtype || !t.set(0, s.to_scalar()) {
                                *t = s.to_tensor()?;
                            }
                        }
                        None => scalars.push(s.to_tensor()?),
                    }
                    used += 1;
                }
                Some(Some(other)) => {
                    return Err(format!("kernel input ${} is a {}, not a tensor", r.0, other.kind()))
                }
                Some(None) => return Err(format!("read of empty register ${}", r.0)),
                None => return Err(out_of_frame(r)),
            }
        }
        // Inline room for the inputs of a whole fused cell (a Tree-LSTM node's kernel has 10):
        // no allocation per call.
        let mut ins: SmallVec<[&Tensor; 16]> = SmallVec::with_capacity(self.inputs.len());
        let mut handles: SmallVec<[Option<&Arc<Tensor>>; 16]> = SmallVec::with_capacity(self.inputs.len());
        let mut next_scalar = scalars.iter();
        for &r in self.inputs {
            match window.get(r.0 as usize) {
                Some(Some(Value::Tensor(t))) => {
                    ins.push(t);
                    handles.push(Some(t));
                }
                // Checked above: the rest are the scalars, in order.
                _ => match next_scalar.next() {
                    Some(t) => {
                        ins.push(t);
                        handles.push(None);
                    }
                    None => return Err(format!("read of empty register ${}", r.0)),
                },
            }
        }
        if !preallocated || boxes.len() != self.outputs.len() {
            boxes.drain(..).for_each(|t| pool.recycle(t));
            let types = k.output_types(&ins).map_err(|e| format!("{}: {e}", desc.op))?;
            for (dtype, shape) in types {
                boxes.push(pool.alloc_dims(dtype, &shape, Init::Zero)?);
            }
        }
        let shared = || "internal: a kernel output is shared".to_string();
        let ran = if let [single] = &mut boxes[..] {
            // One output (most kernels): lent in place.
            let t = Arc::get_mut(single).ok_or_else(shared)?;
            k.run_shared(&ins, &handles, std::slice::from_mut(t), self.cancel)
        } else {
            // Several: each tensor trades places with a placeholder, and back (one
            // `Arc::get_mut`, an atomic operation, per output for both swaps).
            let outs = &mut scratch.outs;
            while outs.len() < boxes.len() {
                outs.push(placeholder());
            }
            let n = boxes.len();
            let mut lent: SmallVec<[&mut Tensor; 4]> = SmallVec::with_capacity(n);
            for (b, o) in boxes.iter_mut().zip(outs.iter_mut()) {
                let t = Arc::get_mut(b).ok_or_else(shared)?;
                std::mem::swap(t, o);
                lent.push(t);
            }
            let ran = k.run_shared(&ins, &handles, &mut outs[..n], self.cancel);
            for (t, o) in lent.into_iter().zip(outs.iter_mut()) {
                std::mem::swap(t, o);
            }
            ran
        };
        ran.map_err(|e| format!("{}: {e}", desc.op))?;
        drop((ins, handles));
        for (&r, t) in self.outputs.iter().zip(boxes.drain(..)) {
            let v = match ScalarValue::from_tensor(&t) {
                Some(s) => {
                    pool.recycle(t);
                    Value::Scalar(s)
                }
                None => Value::Tensor(t),
            };
            if let Some(slot) = window.get_mut(r.0 as usize) {
                *slot = Some(v);
            }
        }
        Ok(())
    }
}

/// A tensor that stands in for an output while the kernel holds it (any valid tensor does;
/// an empty one costs one small allocation, once per VM).
fn placeholder() -> Tensor {
    Tensor::scalar(0f32)
}
