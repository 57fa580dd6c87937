//! The interpreter: one dispatch loop over register windows on a single value stack
//! (ARCHITECTURE.md §3, "VM"). A call pushes a window and a small frame record — no heap
//! allocation — and a tail call reuses the window, so Relay's tail-recursive loops run in
//! constant space and deep non-tail recursion uses heap memory, never the host stack.

use crate::executable::Executable;
use crate::isa::Instr;
use crate::kernel::Kernel;
use crate::operand::Reg;
use crate::scalar::{self, ScalarValue};
use crate::value::{ClosureValue, Value};
use relay_devices::{DType, Tensor};
use std::sync::{Arc, Mutex};

/// A run-time fault, returned to the host: which function, which instruction, what happened.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("trap in `{function}` at instruction {pc}: {message}")]
pub struct Trap {
    /// The function that was running.
    pub function: String,
    /// The index of the faulting instruction in that function.
    pub pc: usize,
    /// What went wrong.
    pub message: String,
}

/// Limits of one [`Vm`].
#[derive(Debug, Clone)]
pub struct VmConfig {
    /// The deepest non-tail call nesting allowed before a trap (tail calls do not count).
    pub max_call_depth: usize,
}

impl Default for VmConfig {
    fn default() -> Self {
        VmConfig { max_call_depth: 4_000_000 }
    }
}

/// Where a suspended caller resumes.
#[derive(Clone, Copy)]
struct Frame {
    func: u32,
    pc: u32,
    base: usize,
    /// The caller's register that receives the callee's result.
    ret_dst: u32,
}

/// A virtual machine running one executable; one per thread (the executable is shared).
pub struct Vm<'e> {
    exe: &'e Executable,
    kernels: &'e [Arc<dyn Kernel>],
    constants: Vec<Value>,
    regs: Vec<Option<Value>>,
    frames: Vec<Frame>,
    scratch: Vec<Value>,
    config: VmConfig,
}

impl<'e> Vm<'e> {
    /// A VM for `exe`, calling `kernels[i]` for the executable's kernel `i`.
    ///
    /// # Errors
    /// When the kernel table does not match the executable's kernel list in length.
    pub fn new(
        exe: &'e Executable,
        kernels: &'e [Arc<dyn Kernel>],
        config: VmConfig,
    ) -> Result<Vm<'e>, String> {
        if kernels.len() != exe.kernels.len() {
            return Err(format!(
                "{} kernels given for an executable of {}",
                kernels.len(),
                exe.kernels.len()
            ));
        }
        let constants = exe.constants.iter().map(|t| Value::from_tensor(t.clone())).collect();
        Ok(Vm { exe, kernels, constants, regs: vec![], frames: vec![], scratch: vec![], config })
    }

    /// Runs the function named `name` with `args`.
    ///
    /// # Errors
    /// A [`Trap`] for an unknown function, a wrong argument count, or any run-time fault.
    pub fn invoke(&mut self, name: &str, args: Vec<Value>) -> Result<Value, Trap> {
        let trap = |message: String| Trap { function: name.to_string(), pc: 0, message };
        let func = self.exe.function_index(name).ok_or_else(|| trap(format!("no function `{name}`")))?;
        let f = &self.exe.functions[func];
        if args.len() != f.num_params() as usize {
            return Err(trap(format!("`{name}` takes {} argument(s), {} given", f.num_params(), args.len())));
        }
        self.regs.clear();
        self.frames.clear();
        self.regs.extend(args.into_iter().map(Some));
        self.regs.resize(f.num_regs as usize, None);
        let result = self.run(Frame { func: func as u32, pc: 0, base: 0, ret_dst: 0 });
        self.regs.clear();
        self.frames.clear();
        result
    }

    fn run(&mut self, mut cur: Frame) -> Result<Value, Trap> {
        let exe = self.exe;
        let mut code: &[Instr] = &exe.functions[cur.func as usize].code;
        macro_rules! trap {
            ($($arg:tt)*) => {
                return Err(Trap {
                    function: exe.functions[cur.func as usize].name.clone(),
                    pc: cur.pc as usize - 1,
                    message: format!($($arg)*),
                })
            };
        }
        macro_rules! reg {
            ($r:expr) => {
                match self.regs.get(cur.base + $r.0 as usize) {
                    Some(Some(v)) => v,
                    _ => trap!("read of empty register ${}", $r.0),
                }
            };
        }
        macro_rules! set {
            ($r:expr, $v:expr) => {{
                let v = $v;
                match self.regs.get_mut(cur.base + $r.0 as usize) {
                    Some(slot) => *slot = Some(v),
                    None => trap!("write to register ${} outside the frame", $r.0),
                }
            }};
        }
        macro_rules! scalar {
            ($r:expr) => {
                match reg!($r) {
                    Value::Scalar(s) => *s,
                    other => trap!("expected a scalar in ${}, found a {}", $r.0, other.kind()),
                }
            };
        }
        macro_rules! enter {
            ($func:expr, $ret_dst:expr) => {{
                if self.frames.len() >= self.config.max_call_depth {
                    trap!("recursion deeper than {} calls", self.config.max_call_depth);
                }
                let callee = $func;
                let f = &exe.functions[callee as usize];
                let new_base = self.regs.len();
                self.regs.extend(self.scratch.drain(..).map(Some));
                self.regs.resize(new_base + f.num_regs as usize, None);
                self.frames.push(Frame { ret_dst: $ret_dst, ..cur });
                cur = Frame { func: callee, pc: 0, base: new_base, ret_dst: 0 };
                code = &f.code;
            }};
        }
        macro_rules! replace {
            ($func:expr) => {{
                let callee = $func;
                let f = &exe.functions[callee as usize];
                // Reuse the window in place: arguments to registers 0..n, every other
                // register cleared (a stale tensor must not pass for a preallocated output).
                self.regs.resize(cur.base + f.num_regs as usize, None);
                let window = &mut self.regs[cur.base..];
                let nargs = self.scratch.len();
                for (slot, v) in window.iter_mut().zip(self.scratch.drain(..)) {
                    *slot = Some(v);
                }
                for slot in &mut window[nargs..] {
                    *slot = None;
                }
                cur.func = callee;
                cur.pc = 0;
                code = &f.code;
            }};
        }
        macro_rules! gather {
            ($args:expr) => {{
                self.scratch.clear();
                for a in $args.iter() {
                    let v = reg!(a).clone();
                    self.scratch.push(v);
                }
            }};
        }
        macro_rules! gather_closure {
            ($closure:expr, $args:expr) => {{
                let c = match reg!($closure) {
                    Value::Closure(c) => c.clone(),
                    other => trap!("called a {} as a function", other.kind()),
                };
                let f = &exe.functions[c.func as usize];
                if c.captured.len() + $args.len() != f.num_params() as usize {
                    trap!("closure of `{}` called with {} argument(s)", f.name, $args.len());
                }
                self.scratch.clear();
                self.scratch.extend(c.captured.iter().cloned());
                for a in $args.iter() {
                    let v = reg!(a).clone();
                    self.scratch.push(v);
                }
                c.func
            }};
        }

        loop {
            let Some(ins) = code.get(cur.pc as usize) else {
                cur.pc += 1;
                trap!("control fell off the end of the function");
            };
            cur.pc += 1;
            match ins {
                Instr::Move { dst, src } => {
                    let v = reg!(src).clone();
                    set!(dst, v);
                }
                Instr::Ret { src } => {
                    let v = match self.regs.get_mut(cur.base + src.0 as usize).and_then(Option::take) {
                        Some(v) => v,
                        None => trap!("return of empty register ${}", src.0),
                    };
                    self.regs.truncate(cur.base);
                    match self.frames.pop() {
                        None => return Ok(v),
                        Some(caller) => {
                            cur = caller;
                            code = &exe.functions[cur.func as usize].code;
                            set!(Reg(cur.ret_dst), v);
                        }
                    }
                }
                Instr::Invoke { dst, func, args } => {
                    gather!(args);
                    enter!(func.0, dst.0);
                }
                Instr::TailCall { func, args } => {
                    gather!(args);
                    replace!(func.0);
                }
                Instr::InvokeClosure { dst, closure, args } => {
                    let func = gather_closure!(closure, args);
                    enter!(func, dst.0);
                }
                Instr::TailCallClosure { closure, args } => {
                    let func = gather_closure!(closure, args);
                    replace!(func);
                }
                Instr::InvokePacked { kernel, inputs, outputs } => {
                    let k = &self.kernels[kernel.0 as usize];
                    let mut owned: Vec<Tensor> = vec![];
                    let mut ins_t: Vec<Arc<Tensor>> = Vec::with_capacity(inputs.len());
                    for r in inputs.iter() {
                        match reg!(r) {
                            Value::Tensor(t) => ins_t.push(t.clone()),
                            Value::Scalar(s) => match s.to_tensor() {
                                Ok(t) => ins_t.push(Arc::new(t)),
                                Err(e) => trap!("{e}"),
                            },
                            other => trap!("kernel input ${} is a {}, not a tensor", r.0, other.kind()),
                        }
                    }
                    let in_refs: Vec<&Tensor> = ins_t.iter().map(|t| &**t).collect();
                    let mut missing = false;
                    for r in outputs.iter() {
                        match self.regs.get_mut(cur.base + r.0 as usize).and_then(Option::take) {
                            Some(Value::Tensor(t)) => {
                                owned.push(Arc::try_unwrap(t).unwrap_or_else(|t| (*t).clone()))
                            }
                            _ => {
                                missing = true;
                                break;
                            }
                        }
                    }
                    if missing {
                        owned.clear();
                        let types = match k.output_types(&in_refs) {
                            Ok(t) => t,
                            Err(e) => trap!("{}: {e}", exe.kernels[kernel.0 as usize].op),
                        };
                        for (dtype, shape) in types {
                            match Tensor::zeros(dtype, shape) {
                                Ok(t) => owned.push(t),
                                Err(e) => trap!("{e}"),
                            }
                        }
                    }
                    if let Err(e) = k.run(&in_refs, &mut owned) {
                        trap!("{}: {e}", exe.kernels[kernel.0 as usize].op);
                    }
                    drop(in_refs);
                    for (r, t) in outputs.iter().zip(owned) {
                        set!(r, Value::from_tensor(t));
                    }
                }
                Instr::AllocTensor { dst, dtype, shape } => {
                    let dims: Option<Vec<usize>> = shape.iter().map(|&d| usize::try_from(d).ok()).collect();
                    let Some(dims) = dims else { trap!("negative dimension in {shape:?}") };
                    match Tensor::zeros(*dtype, dims) {
                        Ok(t) => set!(dst, Value::Tensor(Arc::new(t))),
                        Err(e) => trap!("{e}"),
                    }
                }
                Instr::AllocADT { dst, tag, fields } => {
                    gather!(fields);
                    let v = Value::adt(tag.0, std::mem::take(&mut self.scratch));
                    set!(dst, v);
                }
                Instr::AllocClosure { dst, func, captured } => {
                    gather!(captured);
                    let v = Value::Closure(Arc::new(ClosureValue {
                        func: func.0,
                        captured: std::mem::take(&mut self.scratch),
                    }));
                    set!(dst, v);
                }
                Instr::GetField { dst, obj, index } => {
                    let v = match reg!(obj) {
                        Value::Adt(a) => match a.fields.get(index.0 as usize) {
                            Some(v) => v.clone(),
                            None => trap!("field {} of a value with {} fields", index.0, a.fields.len()),
                        },
                        other => trap!("field access on a {}", other.kind()),
                    };
                    set!(dst, v);
                }
                Instr::GetTag { dst, obj } => {
                    let tag = match reg!(obj) {
                        Value::Adt(a) => a.tag,
                        other => trap!("tag of a {}", other.kind()),
                    };
                    set!(dst, Value::Scalar(ScalarValue::int(DType::I32, i64::from(tag))));
                }
                Instr::SwitchTag { obj, targets } => {
                    let tag = match reg!(obj) {
                        Value::Adt(a) => a.tag,
                        other => trap!("match on a {}", other.kind()),
                    };
                    match targets.get(tag as usize) {
                        Some(t) => cur.pc = t.0,
                        None => trap!("constructor tag {tag} has no branch"),
                    }
                }
                Instr::If { cond, else_target } => {
                    if !scalar!(cond).is_true() {
                        cur.pc = else_target.0;
                    }
                }
                Instr::Goto { target } => cur.pc = target.0,
                Instr::LoadConst { dst, index } => {
                    let v = self.constants[index.0 as usize].clone();
                    set!(dst, v);
                }
                Instr::LoadImm { dst, value } => set!(dst, Value::Scalar(*value)),
                Instr::RefNew { dst, value } => {
                    let v = reg!(value).clone();
                    set!(dst, Value::Ref(Arc::new(Mutex::new(v))));
                }
                Instr::RefRead { dst, cell } => {
                    let v = match reg!(cell) {
                        Value::Ref(r) => match r.lock() {
                            Ok(g) => g.clone(),
                            Err(_) => trap!("reference poisoned by a panic elsewhere"),
                        },
                        other => trap!("ref_read of a {}", other.kind()),
                    };
                    set!(dst, v);
                }
                Instr::RefWrite { cell, value } => {
                    let v = reg!(value).clone();
                    match reg!(cell) {
                        Value::Ref(r) => match r.lock() {
                            Ok(mut g) => *g = v,
                            Err(_) => trap!("reference poisoned by a panic elsewhere"),
                        },
                        other => trap!("ref_write to a {}", other.kind()),
                    }
                }
                Instr::Fatal { message } => {
                    let m = exe.strings.get(message.0 as usize).map_or("fatal", String::as_str);
                    trap!("{m}");
                }
                Instr::Bin { op, dst, lhs, rhs } => {
                    let (a, b) = (scalar!(lhs), scalar!(rhs));
                    match scalar::binary_fast(*op, a, b).ok_or(()).or_else(|()| scalar::binary(*op, a, b)) {
                        Ok(v) => set!(dst, Value::Scalar(v)),
                        Err(e) => trap!("{e}"),
                    }
                }
                Instr::BinImm { op, dst, lhs, imm } => {
                    let a = scalar!(lhs);
                    match scalar::binary_fast(*op, a, *imm)
                        .ok_or(())
                        .or_else(|()| scalar::binary(*op, a, *imm))
                    {
                        Ok(v) => set!(dst, Value::Scalar(v)),
                        Err(e) => trap!("{e}"),
                    }
                }
                Instr::Un { op, dst, src } => match scalar::unary(*op, scalar!(src)) {
                    Ok(v) => set!(dst, Value::Scalar(v)),
                    Err(e) => trap!("{e}"),
                },
                Instr::Cast { dst, src, dtype } => {
                    let v = scalar!(src).cast(*dtype);
                    set!(dst, Value::Scalar(v));
                }
            }
        }
    }
}
