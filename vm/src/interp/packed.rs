//! `InvokePacked`: kernel calls in destination-passing style.

use crate::executable::Executable;
use crate::kernel::Kernel;
use crate::operand::Reg;
use crate::value::Value;
use relay_devices::Tensor;
use std::sync::Arc;

/// Runs kernel `kernel` on the tensors in `window`'s registers `inputs`, into the tensors
/// preallocated in `outputs` or, when any is missing, into tensors sized by the kernel's
/// shape function.
///
/// # Errors
/// A message for a missing kernel, an input that is not a tensor, or a kernel fault.
pub(super) fn invoke_packed(
    exe: &Executable,
    kernels: &[Arc<dyn Kernel>],
    kernel: u32,
    window: &mut [Option<Value>],
    inputs: &[Reg],
    outputs: &[Reg],
) -> Result<(), String> {
    let (Some(k), Some(desc)) = (kernels.get(kernel as usize), exe.kernels.get(kernel as usize)) else {
        return Err(format!("kernel #{kernel} does not exist"));
    };
    let out_of_frame = |r: Reg| format!("register ${} outside the frame", r.0);
    let mut ins_t: Vec<Arc<Tensor>> = Vec::with_capacity(inputs.len());
    for &r in inputs {
        match window.get(r.0 as usize) {
            Some(Some(Value::Tensor(t))) => ins_t.push(t.clone()),
            Some(Some(Value::Scalar(s))) => ins_t.push(Arc::new(s.to_tensor()?)),
            Some(Some(other)) => {
                return Err(format!("kernel input ${} is a {}, not a tensor", r.0, other.kind()))
            }
            Some(None) => return Err(format!("read of empty register ${}", r.0)),
            None => return Err(out_of_frame(r)),
        }
    }
    let in_refs: Vec<&Tensor> = ins_t.iter().map(|t| &**t).collect();
    let mut owned: Vec<Tensor> = Vec::with_capacity(outputs.len());
    for &r in outputs {
        match window.get_mut(r.0 as usize).map(Option::take) {
            Some(Some(Value::Tensor(t))) => owned.push(Arc::try_unwrap(t).unwrap_or_else(|t| (*t).clone())),
            Some(_) => break,
            None => return Err(out_of_frame(r)),
        }
    }
    if owned.len() < outputs.len() {
        owned.clear();
        let types = k.output_types(&in_refs).map_err(|e| format!("{}: {e}", desc.op))?;
        for (dtype, shape) in types {
            owned.push(Tensor::zeros(dtype, shape).map_err(|e| e.to_string())?);
        }
    }
    k.run(&in_refs, &mut owned).map_err(|e| format!("{}: {e}", desc.op))?;
    drop(in_refs);
    for (&r, t) in outputs.iter().zip(owned) {
        if let Some(slot) = window.get_mut(r.0 as usize) {
            *slot = Some(Value::from_tensor(t));
        }
    }
    Ok(())
}
