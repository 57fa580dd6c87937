//! The bytecode verifier: run on every loaded executable so that a corrupt or hostile file
//! is rejected up front instead of misbehaving in the interpreter. Besides structure
//! (registers, jump targets, indices, arities) it bounds the resources the file can make
//! the VM claim before a single instruction runs: registers, frame-arena slots, statically
//! shaped tensors and element types ([`Limits`]).

use crate::executable::{Executable, ValueType, VmFunction};
use crate::isa::Instr;
use crate::operand::VerifyCtx;
use relay_devices::{DType, Storage};

/// Why an executable was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid bytecode in `{function}` at {pc}: {message}")]
pub struct VerifyError {
    /// The function's name.
    pub function: String,
    /// The instruction's index.
    pub pc: usize,
    /// What is wrong.
    pub message: String,
}

/// The resources an executable may claim; a file that states more is rejected by
/// [`verify_with`]. The defaults ([`Limits::default`]) never bother a program this project
/// compiles and keep a hostile file's claims to a few hundred megabytes of tables and
/// seconds of kernel time; the VM's own run-time caps still apply to every allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Registers of all functions together (default 2^22). Making a VM builds a table with an
    /// entry per register of every function, called or not, and each call's frame holds its
    /// function's registers.
    pub max_registers: u64,
    /// Bytes of one tensor whose shape the file states (default 2^32, 4 GiB):
    /// `AllocTensor`/`AllocFrame` shapes and the constant-shaped buffers of a kir kernel, and
    /// the temps of one kir kernel call together.
    pub max_tensor_bytes: u64,
    /// Statements one call of a kir kernel may execute, bounded from its loop extents
    /// multiplied along each loop nest, a `gemm` counting `m·n·k` (default 2^31: a few
    /// seconds of compiled code). Kernels whose loop extents have no static bound (syms,
    /// loaded values) are rejected.
    pub max_kernel_work: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_registers: 1 << 22, max_tensor_bytes: 1 << 32, max_kernel_work: 1 << 31 }
    }
}

impl Limits {
    /// The bytes of a tensor of `dtype` and `shape`, checked against
    /// [`Limits::max_tensor_bytes`].
    ///
    /// # Errors
    /// A message naming the problem: a dtype with no tensor storage ([`check_dtype`]), a
    /// negative dimension, or the size and the limit it exceeds.
    pub fn check_tensor(&self, dtype: DType, shape: &[i64]) -> Result<u64, String> {
        check_dtype(dtype)?;
        let mut bytes = dtype.size_bytes() as u128;
        for &d in shape {
            let d = u128::try_from(d).map_err(|_| format!("a {dtype} tensor with negative dimension {d}"))?;
            bytes = bytes.saturating_mul(d);
        }
        match u64::try_from(bytes) {
            Ok(b) if b <= self.max_tensor_bytes => Ok(b),
            _ => Err(format!(
                "a {dtype} tensor of {} dimension(s) takes {bytes} bytes, over the limit of {}",
                shape.len(),
                self.max_tensor_bytes
            )),
        }
    }
}

/// Checks that `dtype` is an element type tensors and scalars can hold: `bool`, `int` and
/// `uint` of 8 to 64 bits, `float32`/`float64`, one lane (so `int0`, odd widths and vector
/// types are rejected).
///
/// # Errors
/// A message naming the dtype.
pub fn check_dtype(dtype: DType) -> Result<(), String> {
    if Storage::supports(dtype) {
        Ok(())
    } else {
        Err(format!(
            "dtype {dtype} ({:?}, {} bits, {} lanes) is not a tensor element type",
            dtype.code, dtype.bits, dtype.lanes
        ))
    }
}

/// [`verify_with`] under the default [`Limits`].
///
/// # Errors
/// The first problem found.
pub fn verify(exe: &Executable) -> Result<(), VerifyError> {
    verify_with(exe, &Limits::default())
}

/// Checks register bounds, jump targets, function/kernel/constant/string indices, call
/// arities, and that control cannot fall off the end of a function; and that the executable
/// stays within `limits`: its registers, every frame-arena slot (below the function's count
/// of `AllocFrame` instructions, as the memory plan numbers them), every static tensor
/// shape, and every dtype of an instruction or a value type.
///
/// # Errors
/// The first problem found, naming the function, the instruction, the value and the limit.
pub fn verify_with(exe: &Executable, limits: &Limits) -> Result<(), VerifyError> {
    let mut registers: u64 = 0;
    for f in &exe.functions {
        let err = |pc: usize, message: String| VerifyError { function: f.name.clone(), pc, message };
        registers = registers.saturating_add(u64::from(f.num_regs));
        if registers > limits.max_registers {
            return Err(err(
                0,
                format!(
                    "{} register(s) bring the executable's total to {registers}, over the limit of {}",
                    f.num_regs, limits.max_registers
                ),
            ));
        }
        if f.num_params() > f.num_regs {
            return Err(err(0, format!("{} parameters but only {} registers", f.num_params(), f.num_regs)));
        }
        if f.param_types.len() != f.param_names.len() {
            return Err(err(0, "parameter names and types differ in number".into()));
        }
        f.param_types.iter().chain([&f.ret_type]).try_for_each(check_type).map_err(|m| err(0, m))?;
        let ctx = VerifyCtx {
            num_regs: f.num_regs,
            code_len: f.code.len() as u32,
            num_funcs: exe.functions.len() as u32,
            num_kernels: exe.kernels.len() as u32,
            num_consts: exe.constants.len() as u32,
            num_strings: exe.strings.len() as u32,
        };
        match f.code.last() {
            None => return Err(err(0, "empty function".into())),
            Some(last) if !is_terminator(last) => {
                return Err(err(f.code.len() - 1, "control falls off the end of the function".into()))
            }
            Some(_) => {}
        }
        let frame_allocs = frame_allocs(f);
        for (pc, ins) in f.code.iter().enumerate() {
            ins.verify_operands(&ctx).map_err(|m| err(pc, m))?;
            check_arity(exe, ins).map_err(|m| err(pc, m))?;
            check_resources(ins, frame_allocs, limits).map_err(|m| err(pc, m))?;
        }
    }
    for adt in &exe.adts {
        for c in &adt.constructors {
            c.fields.iter().try_for_each(check_type).map_err(|m| VerifyError {
                function: adt.name.clone(),
                pc: 0,
                message: format!("constructor `{}`: {m}", c.name),
            })?;
        }
    }
    Ok(())
}

/// Whether execution never continues to the next instruction.
fn is_terminator(ins: &Instr) -> bool {
    matches!(
        ins,
        Instr::Ret { .. }
            | Instr::RetBin { .. }
            | Instr::RetBinImm { .. }
            | Instr::TailCall { .. }
            | Instr::TailCallClosure { .. }
            | Instr::Goto { .. }
            | Instr::Fatal { .. }
            | Instr::SwitchTag { .. }
    )
}

fn check_arity(exe: &Executable, ins: &Instr) -> Result<(), String> {
    // Operands were verified first, so the indices are in range.
    let params = |f: u32| exe.functions.get(f as usize).map_or(0, |f| f.num_params() as usize);
    match ins {
        Instr::Invoke { func, args, .. } | Instr::TailCall { func, args } if args.len() != params(func.0) => {
            Err(format!("passes {} argument(s) to a function of {}", args.len(), params(func.0)))
        }
        Instr::AllocClosure { func, captured, .. } if captured.len() > params(func.0) => Err(format!(
            "captures {} value(s) for a function of {} parameter(s)",
            captured.len(),
            params(func.0)
        )),
        Instr::InvokePacked { kernel, inputs, outputs } => {
            let k = exe.kernels.get(kernel.0 as usize).ok_or("kernel index")?;
            if inputs.len() != k.num_inputs as usize || outputs.len() != k.num_outputs as usize {
                return Err(format!(
                    "calls kernel `{}` with {} input(s) and {} output(s); it has {} and {}",
                    k.op,
                    inputs.len(),
                    outputs.len(),
                    k.num_inputs,
                    k.num_outputs
                ));
            }
            Ok(())
        }
        Instr::SwitchTag { targets, .. } if targets.is_empty() => Err("a tag switch with no targets".into()),
        _ => Ok(()),
    }
}

/// How many `AllocFrame` instructions `f` has: the memory plan numbers a function's
/// frame-arena slots densely from 0 and gives each at least one, so no valid slot reaches
/// this count, and the arena a call reserves stays proportional to the code.
fn frame_allocs(f: &VmFunction) -> u32 {
    let n = f.code.iter().filter(|i| matches!(i, Instr::AllocFrame { .. })).count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The resource claims of one instruction: static tensor shapes against `limits`, frame
/// slots below `frame_allocs`, and every dtype it names.
fn check_resources(ins: &Instr, frame_allocs: u32, limits: &Limits) -> Result<(), String> {
    match ins {
        Instr::AllocTensor { dtype, shape, .. } => limits.check_tensor(*dtype, shape).map(drop),
        Instr::AllocFrame { slot, dtype, shape, .. } => {
            if slot.0 >= frame_allocs {
                return Err(format!(
                    "frame-arena slot {} in a function of {frame_allocs} AllocFrame instruction(s)",
                    slot.0
                ));
            }
            limits.check_tensor(*dtype, shape).map(drop)
        }
        Instr::Cast { dtype, .. } => check_dtype(*dtype),
        Instr::LoadImm { value: s, .. }
        | Instr::BinImm { imm: s, .. }
        | Instr::IfCmpImm { imm: s, .. }
        | Instr::RetBinImm { imm: s, .. } => check_dtype(s.dtype),
        _ => Ok(()),
    }
}

/// Checks the dtypes and static dimensions of a type the host converts values by.
fn check_type(t: &ValueType) -> Result<(), String> {
    match t {
        ValueType::Tensor { dtype, shape } => {
            check_dtype(*dtype)?;
            match shape.iter().flatten().find(|&&d| d < 0) {
                Some(d) => Err(format!("a tensor type with negative dimension {d}")),
                None => Ok(()),
            }
        }
        ValueType::Tuple(ts) | ValueType::Adt { args: ts, .. } => ts.iter().try_for_each(check_type),
        ValueType::Ref(t) => check_type(t),
        ValueType::Func | ValueType::Param(_) => Ok(()),
    }
}
