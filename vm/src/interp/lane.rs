//! Lane runs, for batching across requests (`relay-vm run --batch B`): a run that stops before
//! chosen kernel calls and hands them to its caller, which runs many lanes' calls of one
//! kernel as one batched call and resumes each lane with its share of the results.
//!
//! The paused state is the dispatch loop's own (`Resume`: function, pc, register window,
//! frame slots; callers stay on the frame stack), so a lane costs nothing between pauses
//! and a normal [`Vm::invoke`] never checks for pausing (its probe's `pauses_at` is the
//! constant `false`).

use super::probe::Probe;
use super::{Exit, Vm};
use crate::isa::Instr;
use crate::packed_func::PackedFunc;
use crate::value::Value;
use crate::Trap;
use relay_devices::Tensor;
use std::sync::Arc;

/// The probe of a lane run: pauses before calls of the kernels marked `true` (indexed by
/// kernel), does nothing else.
pub(super) struct LanePause<'a>(pub &'a [bool]);

impl Probe for LanePause<'_> {
    #[inline(always)]
    fn before(&mut self, _: &Instr) {}
    #[inline(always)]
    fn finish(&mut self) {}
    #[inline(always)]
    fn pauses_at(&self, kernel: u32) -> bool {
        self.0.get(kernel as usize).copied().unwrap_or(false)
    }
}

/// Where a lane run stands.
#[derive(Debug)]
pub enum Step {
    /// The entry function returned this value.
    Done(Value),
    /// Paused before a call of kernel `kernel` (an index into the kernel table): read its
    /// inputs with [`Vm::paused_inputs`], then continue with [`Vm::resume_lane`].
    Paused {
        /// The kernel the paused instruction calls.
        kernel: u32,
    },
}

impl<'e> Vm<'e> {
    /// Runs the function named `name` with `args` as [`Vm::invoke`] does, until it returns
    /// or reaches a call of a kernel `pause` marks.
    ///
    /// # Errors
    /// As [`Vm::invoke`].
    pub fn start_lane(&mut self, name: &str, args: Vec<Value>, pause: &[bool]) -> Result<Step, Trap> {
        self.paused = None;
        let start = self.begin(name, args)?;
        let exit = self.run(start, &mut LanePause(pause), None);
        self.step(name.to_string(), exit)
    }

    /// Continues the paused lane run: first the kernel call it paused at, run with `result`
    /// in place of the table's kernel (given the same inputs, `result` writes this lane's
    /// share of a batched call's outputs), then on to the next pause or the end.
    ///
    /// # Errors
    /// As [`Vm::invoke`]; a trap when no run is paused.
    pub fn resume_lane(&mut self, result: &dyn PackedFunc, pause: &[bool]) -> Result<Step, Trap> {
        let Some((at, name)) = self.paused.take() else {
            return Err(Trap::outside("no paused run"));
        };
        let exit = self.run(at, &mut LanePause(pause), Some(result));
        self.step(name, exit)
    }

    /// Into `inputs` (emptied first, its allocation kept from call to call), the inputs of
    /// the kernel call the lane run paused at, in order, as tensors (unboxed scalars as 0-d
    /// tensors). A weight is the very `Arc` every lane passes, so callers can tell shared
    /// inputs by [`Arc::ptr_eq`]. Callers empty `inputs` again before [`Vm::resume_lane`]:
    /// the resumed call frees the inputs it reads last into the VM's pool, which takes only
    /// buffers nothing else holds (a held one goes back to the system allocator instead).
    ///
    /// # Errors
    /// A message when no run is paused or an input is not a host tensor or scalar.
    pub fn paused_inputs(&self, inputs: &mut Vec<Arc<Tensor>>) -> Result<(), String> {
        inputs.clear();
        let (at, _) = self.paused.as_ref().ok_or("no paused run")?;
        let code = self.exe.functions.get(at.func as usize).map(|f| &f.code[..]).unwrap_or(&[]);
        let Some(Instr::InvokePacked { inputs: regs, .. }) = at.pc.checked_sub(1).and_then(|p| code.get(p))
        else {
            return Err("the paused instruction is not a kernel call".into());
        };
        for r in regs.iter() {
            inputs.push(match self.regs.get(at.base + r.0 as usize) {
                Some(Some(Value::Tensor(t))) => t.clone(),
                Some(Some(Value::Scalar(s))) => Arc::new(s.to_tensor()?),
                Some(Some(other)) => return Err(format!("kernel input ${} is a {}", r.0, other.kind())),
                _ => return Err(format!("read of empty register ${}", r.0)),
            });
        }
        Ok(())
    }

    /// Ends the run on its result, or records where it paused.
    fn step(&mut self, name: String, exit: Result<Exit, Trap>) -> Result<Step, Trap> {
        match exit {
            Ok(Exit::Paused(at)) => {
                let code = self.exe.functions.get(at.func as usize).map(|f| &f.code[..]).unwrap_or(&[]);
                let kernel = match at.pc.checked_sub(1).and_then(|p| code.get(p)) {
                    Some(Instr::InvokePacked { kernel, .. }) => kernel.0,
                    _ => u32::MAX,
                };
                self.paused = Some((at, name));
                Ok(Step::Paused { kernel })
            }
            Ok(Exit::Done(v)) => self.end(&name, Ok(v)).map(Step::Done),
            Err(t) => self.end(&name, Err(t)).map(Step::Done),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executable::{Executable, KernelDesc, ValueType, VmFunction};
    use crate::operand::{FuncIdx, Init, KernelIdx, Reg};
    use crate::VmConfig;
    use relay_devices::DType;
    use Instr::*;

    /// `out = factor · in` on float32 tensors of any shape.
    struct Scale(f32);

    impl PackedFunc for Scale {
        fn output_types(&self, inputs: &[&Tensor]) -> Result<Vec<(DType, Vec<usize>)>, String> {
            Ok(vec![(DType::F32, inputs[0].shape().to_vec())])
        }
        fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), String> {
            let x = inputs[0].as_slice::<f32>().map_err(|e| e.to_string())?;
            let y: Vec<f32> = x.iter().map(|v| v * self.0).collect();
            outputs[0] = Tensor::from_vec(inputs[0].shape().to_vec(), y).map_err(|e| e.to_string())?;
            Ok(())
        }
    }

    fn func(name: &str, num_regs: u32, code: Vec<Instr>) -> VmFunction {
        let ty = ValueType::Tensor { dtype: DType::F32, shape: vec![Some(2)] };
        VmFunction {
            name: name.into(),
            source: String::new(),
            param_names: vec!["x".into()],
            param_types: vec![ty.clone()],
            ret_type: ty,
            num_regs,
            code,
            spans: crate::SpanTable::default(),
        }
    }

    fn call(dst: u32, src: u32) -> [Instr; 2] {
        [
            AllocTensor { dst: Reg(dst), dtype: DType::F32, shape: vec![2].into(), init: Init::Zero },
            InvokePacked {
                kernel: KernelIdx(0),
                inputs: vec![Reg(src)].into(),
                outputs: vec![Reg(dst)].into(),
            },
        ]
    }

    #[test]
    fn a_lane_pauses_at_each_kernel_call_and_resumes_with_the_given_kernel() {
        // main(x) = g(k(x)); g(y) = k(y), with k = Scale(2) in the table.
        let mut main_code = call(1, 0).to_vec();
        main_code.extend([
            Invoke { dst: Reg(2), func: FuncIdx(1), args: vec![Reg(1)].into() },
            Ret { src: Reg(2) },
        ]);
        let mut g_code = call(1, 0).to_vec();
        g_code.push(Ret { src: Reg(1) });
        let desc =
            KernelDesc { op: "scale".into(), attrs: vec![], num_inputs: 1, num_outputs: 1, kernel: None };
        let exe = Executable {
            functions: vec![func("main", 3, main_code), func("g", 2, g_code)],
            kernels: vec![desc],
            ..Default::default()
        };
        crate::verify::verify(&exe).expect("verifies");
        let kernels: Vec<Arc<dyn PackedFunc>> = vec![Arc::new(Scale(2.0))];
        let mut vm = Vm::new(&exe, &kernels, VmConfig::default()).expect("vm");
        let x = Arc::new(Tensor::from_vec(vec![2], vec![1f32, -3.0]).unwrap());
        let plain = vm.invoke("main", vec![Value::Tensor(x.clone())]).expect("runs");
        let Value::Tensor(plain) = plain else { panic!("not a tensor") };
        assert_eq!(plain.as_slice::<f32>().unwrap(), &[4.0, -12.0]);

        let pause = [true];
        let mut step = vm.start_lane("main", vec![Value::Tensor(x.clone())], &pause).expect("runs");
        let mut pauses = 0;
        let result = loop {
            match step {
                Step::Paused { kernel } => {
                    assert_eq!(kernel, 0);
                    let mut inputs = vec![];
                    vm.paused_inputs(&mut inputs).expect("inputs");
                    if pauses == 0 {
                        assert!(Arc::ptr_eq(&inputs[0], &x), "the caller's very tensor");
                    }
                    pauses += 1;
                    step = vm.resume_lane(&Scale(3.0), &pause).expect("resumes");
                }
                Step::Done(v) => break v,
            }
        };
        assert_eq!(pauses, 2);
        let Value::Tensor(t) = result else { panic!("not a tensor") };
        assert_eq!(t.as_slice::<f32>().unwrap(), &[9.0, -27.0]);
        assert!(vm.resume_lane(&Scale(1.0), &pause).is_err(), "nothing is paused");
        // A lane that pauses nowhere is a plain run.
        match vm.start_lane("main", vec![Value::Tensor(x)], &[false]).expect("runs") {
            Step::Done(Value::Tensor(t)) => assert_eq!(t.as_slice::<f32>().unwrap(), &[4.0, -12.0]),
            other => panic!("{other:?}"),
        }
    }
}
