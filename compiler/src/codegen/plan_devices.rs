//! Device planning on bytecode (TVM's PlanDevices idea, `src/relay/transforms/device_planner.cc`):
//! for an executable whose fused kernels run on an accelerator, makes explicit where their
//! outputs must come to the host, with a `DeviceCopy` at each such point.
//!
//! `codegen::compile` runs it after the memory plan, given which kernels run on a
//! device (those carrying kir, when the program is bound to devices; reference kernels stay
//! on the host). Which device each runs on does not matter here: a tensor going from one
//! device to another is copied by the VM at the kernel call. A register written by a device
//! kernel holds a device-resident tensor, so:
//! - before an `InvokePacked` of a host kernel, each such register among its inputs is
//!   copied to the host in place (later host readers then find the host copy);
//! - before a `Ret` of such a register from an entry function (one no instruction calls or
//!   captures), the result comes home in place. Other functions return to callers that may
//!   feed the tensor to the next device kernel, so their returns keep it on the device;
//! - the host buffers `AllocTensor`/`AllocFrame` preallocate for a device kernel's outputs
//!   (right before the call) are dropped: the VM allocates those outputs on the device.
//!
//! The analysis is flow-insensitive per function: a register is "device" if any device
//! kernel writes it. That is safe because `DeviceCopy` of a host value is a plain copy, and
//! the VM still copies whatever reaches the host by a path the pass cannot see (a tensor
//! inside an ADT value, a callee's result): the pass makes the common crossings visible in
//! the disassembly and moves them out of the kernel call, it is not needed for correctness.

use relay_runtime::{allocated_for, Executable, Instr, Reg, SourcePos, SpanTable, Target};
use rustc_hash::FxHashSet as HashSet;

/// Inserts the `DeviceCopy` instructions of every function of `exe`, where `on_device[k]`
/// says whether kernel `k` runs on a device; returns how many.
pub fn plan_executable(exe: &mut Executable, on_device: &[bool]) -> usize {
    let mut called = vec![false; exe.functions.len()];
    for f in &exe.functions {
        for ins in &f.code {
            let callee = match ins {
                Instr::Invoke { func, .. }
                | Instr::TailCall { func, .. }
                | Instr::AllocClosure { func, .. } => func.0,
                _ => continue,
            };
            if let Some(c) = called.get_mut(callee as usize) {
                *c = true;
            }
        }
    }
    let mut inserted = 0;
    for (f, called) in exe.functions.iter_mut().zip(called) {
        let mut positions = f.spans.positions(f.code.len());
        inserted += plan_code(&mut f.code, &mut positions, on_device, !called);
        f.spans = SpanTable::from_positions(&f.spans.file, &positions);
    }
    inserted
}

/// Plans one function's `code`, with `positions` (the source position of each instruction);
/// `on_device[k]` says whether kernel `k` runs on the device.
fn plan_code(
    code: &mut Vec<Instr>,
    positions: &mut Vec<SourcePos>,
    on_device: &[bool],
    entry: bool,
) -> usize {
    let device_kernel = |k: u32| on_device.get(k as usize).copied().unwrap_or(false);
    let device_regs: HashSet<Reg> = code
        .iter()
        .filter_map(|ins| match ins {
            Instr::InvokePacked { kernel, outputs, .. } if device_kernel(kernel.0) => {
                Some(outputs.iter().copied())
            }
            _ => None,
        })
        .flatten()
        .collect();
    if device_regs.is_empty() {
        return 0;
    }
    let copies_before = |ins: &Instr| -> Vec<Reg> {
        let mut regs: Vec<Reg> = match ins {
            Instr::InvokePacked { kernel, inputs, .. } if !device_kernel(kernel.0) => {
                inputs.iter().copied().filter(|r| device_regs.contains(r)).collect()
            }
            Instr::Ret { src } if entry && device_regs.contains(src) => vec![*src],
            _ => vec![],
        };
        regs.dedup();
        regs
    };
    let unneeded = host_buffers_for_device_outputs(code, &device_kernel);
    let old = std::mem::take(code);
    let old_positions = std::mem::take(positions);
    let mut new_index = Vec::with_capacity(old.len() + 1);
    let mut inserted = 0;
    for ((pc, ins), pos) in old.into_iter().enumerate().zip(old_positions) {
        // A jump to the instruction lands on its copies (or, for a dropped one, on what
        // follows it).
        new_index.push(code.len() as u32);
        if unneeded[pc] {
            continue;
        }
        // A copy belongs to the instruction it feeds.
        for r in copies_before(&ins) {
            code.push(Instr::DeviceCopy { dst: r, src: r });
            positions.push(pos);
            inserted += 1;
        }
        code.push(ins);
        positions.push(pos);
    }
    new_index.push(code.len() as u32);
    for ins in code.iter_mut() {
        for t in ins.targets_mut() {
            *t = Target(new_index.get(t.0 as usize).copied().unwrap_or(t.0));
        }
    }
    inserted
}

/// Per instruction: whether it allocates a host buffer only for a device kernel's output
/// ([`allocated_for`]: an output of the kernel call that follows, not also its input).
fn host_buffers_for_device_outputs(code: &[Instr], device_kernel: &dyn Fn(u32) -> bool) -> Vec<bool> {
    (0..code.len()).map(|pc| allocated_for(code, pc).is_some_and(|k| device_kernel(k.0))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_devices::DType;
    use relay_runtime::{FuncIdx, Init, KernelDesc, KernelIdx, ValueType, VmFunction};

    fn kernel(kir: bool) -> KernelDesc {
        KernelDesc {
            op: if kir { "fused_add".into() } else { "take".into() },
            attrs: vec![],
            num_inputs: 1,
            num_outputs: 1,
            kernel: kir.then(Vec::new),
        }
    }

    /// Kernels carrying kir on the device, as `codegen::compile` places them.
    fn on_device(exe: &Executable) -> Vec<bool> {
        exe.kernels.iter().map(|k| k.kernel.is_some()).collect()
    }

    fn func(name: &str, code: Vec<Instr>) -> VmFunction {
        let t = ValueType::Tensor { dtype: DType::F32, shape: vec![Some(2)] };
        VmFunction {
            name: name.into(),
            source: String::new(),
            param_names: vec!["x".into()],
            param_types: vec![t.clone()],
            ret_type: t,
            num_regs: 4,
            code,
            spans: relay_runtime::SpanTable::default(),
        }
    }

    fn packed(k: u32, input: u32, output: u32) -> Instr {
        Instr::InvokePacked {
            kernel: KernelIdx(k),
            inputs: vec![Reg(input)].into(),
            outputs: vec![Reg(output)].into(),
        }
    }

    #[test]
    fn device_outputs_come_home_before_host_kernels_and_entry_returns() {
        let code = vec![
            packed(0, 0, 1),
            Instr::If { cond: Reg(0), else_target: Target(3) },
            packed(1, 1, 2),
            packed(0, 1, 3),
            Instr::Ret { src: Reg(3) },
        ];
        let mut exe = Executable {
            functions: vec![func("main", code)],
            kernels: vec![kernel(true), kernel(false)],
            ..Default::default()
        };
        let placed = on_device(&exe);
        assert_eq!(plan_executable(&mut exe, &placed), 2);
        let code = &exe.functions[0].code;
        assert_eq!(code[2], Instr::DeviceCopy { dst: Reg(1), src: Reg(1) });
        assert!(matches!(code[3], Instr::InvokePacked { .. }));
        assert_eq!(code[5], Instr::DeviceCopy { dst: Reg(3), src: Reg(3) });
        // The jump to the device kernel still lands on it.
        assert_eq!(code[1], Instr::If { cond: Reg(0), else_target: Target(4) });
    }

    #[test]
    fn called_functions_return_device_tensors_as_they_are() {
        let main = vec![
            Instr::Invoke { dst: Reg(1), func: FuncIdx(1), args: vec![Reg(0)].into() },
            Instr::Ret { src: Reg(1) },
        ];
        let mut exe = Executable {
            functions: vec![
                func("main", main),
                func("cell", vec![packed(0, 0, 1), Instr::Ret { src: Reg(1) }]),
            ],
            kernels: vec![kernel(true)],
            ..Default::default()
        };
        let placed = on_device(&exe);
        assert_eq!(plan_executable(&mut exe, &placed), 0);
    }

    #[test]
    fn device_outputs_need_no_host_buffers() {
        let alloc = |r: u32| Instr::AllocTensor {
            dst: Reg(r),
            dtype: DType::F32,
            shape: vec![2].into(),
            init: Init::Zero,
        };
        let code = vec![
            Instr::Goto { target: Target(1) },
            alloc(1),
            packed(0, 0, 1),
            alloc(2),
            packed(1, 1, 2),
            Instr::Ret { src: Reg(2) },
        ];
        let mut exe = Executable {
            functions: vec![func("main", code)],
            kernels: vec![kernel(true), kernel(false)],
            ..Default::default()
        };
        let placed = on_device(&exe);
        plan_executable(&mut exe, &placed);
        let code = &exe.functions[0].code;
        // The device kernel's buffer is gone (the jump to it lands on the call); the host
        // kernel's stays, after the copy of its device input.
        assert_eq!(code[0], Instr::Goto { target: Target(1) });
        assert!(matches!(code[1], Instr::InvokePacked { .. }));
        assert_eq!(code[2], alloc(2));
        assert_eq!(code[3], Instr::DeviceCopy { dst: Reg(1), src: Reg(1) });
        assert_eq!(code.len(), 6);
    }
}
