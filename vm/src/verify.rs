//! The bytecode verifier: run on every loaded executable so that a corrupt or hostile file
//! is rejected up front instead of misbehaving in the interpreter. Besides structure
//! (registers, jump targets, indices, arities) it bounds the resources the file can make
//! the VM claim before a single instruction runs: registers, frame-arena slots, statically
//! shaped tensors and element types ([`Limits`]).

use crate::executable::{Executable, ValueType, VmFunction};
use crate::isa::Instr;
use crate::operand::{Init, KernelIdx, VerifyCtx};
use relay_devices::{DType, Storage, ARENA_ALIGN};

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
    /// Registers × instructions of one function, in bits (default 2^32, 512 MiB): making a VM
    /// runs a liveness analysis that keeps a set of the function's registers (rounded up to
    /// 64) for every instruction, so a file with many registers and long code would claim
    /// their product.
    pub max_liveness_bits: u64,
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
        Limits {
            max_registers: 1 << 22,
            max_liveness_bits: 1 << 32,
            max_tensor_bytes: 1 << 32,
            max_kernel_work: 1 << 31,
        }
    }
}

impl Limits {
    /// No bound at all: for an executable this process compiled itself, whose kernels are as
    /// large as the program's own tensors and loops. Its allocations still go through the
    /// VM's run-time caps ([`crate::VmConfig`]) and its kernels still poll the deadline and
    /// the cancel handle, so a huge but honest program traps or is stopped instead of being
    /// refused at load as if it were a corrupt file.
    pub const UNBOUNDED: Limits = Limits {
        max_registers: u64::MAX,
        max_liveness_bits: u64::MAX,
        max_tensor_bytes: u64::MAX,
        max_kernel_work: u64::MAX,
    };

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
/// `uint` of 8 to 64 bits, `float16`/`bfloat16`/`float32`/`float64`, one lane (so `int0`, odd widths and vector
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
/// stays within `limits`: its registers (in total, and times each function's instructions),
/// every frame-arena offset (aligned, and within the bytes of the function's `AllocFrame`
/// tensors laid end to end, so the arena a call takes stays proportional to the code), every
/// static tensor shape, and every dtype of an instruction or a value type.
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
        let bits = u128::from(f.num_regs.div_ceil(64)) * 64 * f.code.len() as u128;
        if bits > u128::from(limits.max_liveness_bits) {
            return Err(err(
                0,
                format!(
                    "{} registers × {} instructions need {bits} bits of liveness sets, over the limit of {}",
                    f.num_regs,
                    f.code.len(),
                    limits.max_liveness_bits
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
            Some(last) if last.falls_through() => {
                return Err(err(f.code.len() - 1, "control falls off the end of the function".into()))
            }
            Some(_) => {}
        }
        let arena_bound = arena_bound(f, limits);
        for (pc, ins) in f.code.iter().enumerate() {
            ins.verify_operands(&ctx).map_err(|m| err(pc, m))?;
            check_arity(exe, ins).map_err(|m| err(pc, m))?;
            check_resources(ins, arena_bound, limits).map_err(|m| err(pc, m))?;
            check_init(exe, &f.code, pc).map_err(|m| err(pc, m))?;
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

/// The kernel call the allocation at `pc` of `code` is made for, if it is one: the
/// `InvokePacked` it is followed by through other allocations and kills of other registers
/// only (the memory plan's kills may land between), which writes the allocated register as
/// an output without reading it as an input.
pub fn allocated_for(code: &[Instr], pc: usize) -> Option<KernelIdx> {
    let alloc_dst = |ins: &Instr| match ins {
        Instr::AllocTensor { dst, .. } | Instr::AllocFrame { dst, .. } => Some(*dst),
        _ => None,
    };
    let dst = alloc_dst(code.get(pc)?)?;
    let passed = |ins: &&Instr| match ins {
        Instr::Kill { regs } => !regs.contains(&dst),
        other => alloc_dst(other).is_some(),
    };
    match code.get(pc + 1..)?.iter().find(|i| !passed(i)) {
        Some(Instr::InvokePacked { kernel, inputs, outputs })
            if outputs.contains(&dst) && !inputs.contains(&dst) =>
        {
            Some(*kernel)
        }
        _ => None,
    }
}

/// An allocation left unzeroed ([`Init::Kernel`]) must be made for a call of a kernel that
/// carries kir (the compiler proved from the kir that the call writes it whole before
/// reading it; a reference kernel carries no such proof).
fn check_init(exe: &Executable, code: &[Instr], pc: usize) -> Result<(), String> {
    let Some(Instr::AllocTensor { init: Init::Kernel, .. } | Instr::AllocFrame { init: Init::Kernel, .. }) =
        code.get(pc)
    else {
        return Ok(());
    };
    match allocated_for(code, pc).and_then(|k| exe.kernels.get(k.0 as usize)) {
        Some(k) if k.kernel.is_some() => Ok(()),
        _ => {
            Err("an allocation left unzeroed (init=kernel) is not an output of the next kir kernel call"
                .into())
        }
    }
}

/// The most bytes `f`'s frame arena can need: its `AllocFrame` tensors laid end to end,
/// each at an aligned offset (what a memory plan that shares nothing would make). Tensors over
/// `limits` count as empty: they are rejected on their own.
fn arena_bound(f: &VmFunction, limits: &Limits) -> u64 {
    f.code
        .iter()
        .filter_map(|i| match i {
            Instr::AllocFrame { dtype, shape, .. } => limits.check_tensor(*dtype, shape).ok(),
            _ => None,
        })
        .fold(0u64, |sum, b| sum.saturating_add(b.div_ceil(ARENA_ALIGN as u64) * ARENA_ALIGN as u64))
}

/// The resource claims of one instruction: static tensor shapes against `limits`, frame-arena
/// offsets aligned and within `arena_bound`, and every dtype it names.
fn check_resources(ins: &Instr, arena_bound: u64, limits: &Limits) -> Result<(), String> {
    match ins {
        Instr::AllocTensor { dtype, shape, .. } => limits.check_tensor(*dtype, shape).map(drop),
        Instr::AllocFrame { offset, dtype, shape, .. } => {
            let bytes = limits.check_tensor(*dtype, shape)?;
            let offset = u64::from(offset.0);
            if !offset.is_multiple_of(ARENA_ALIGN as u64) || offset.saturating_add(bytes) > arena_bound {
                return Err(format!(
                    "frame-arena offset {offset} (+{bytes} bytes) is not a multiple of {ARENA_ALIGN} \
                     within the {arena_bound} bytes of the function's AllocFrame tensors"
                ));
            }
            Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::Instr;
    use crate::operand::{Imm, KernelIdx, Reg};
    use relay_devices::DTypeCode;

    /// An executable of one function of `num_regs` registers and `code`.
    fn exe(num_regs: u32, code: Vec<Instr>) -> Executable {
        let f = VmFunction {
            name: "f".into(),
            source: String::new(),
            param_names: vec![],
            param_types: vec![],
            ret_type: ValueType::Func,
            num_regs,
            code,
            spans: crate::SpanTable::default(),
        };
        Executable { functions: vec![f], ..Executable::default() }
    }

    fn ret() -> Instr {
        Instr::Ret { src: Reg(0) }
    }

    fn limits() -> Limits {
        Limits { max_registers: 100, max_liveness_bits: 256, max_tensor_bytes: 64, max_kernel_work: 1 }
    }

    #[test]
    fn registers_at_the_limit_and_past_it() {
        let big = Limits { max_liveness_bits: u64::MAX, ..limits() };
        assert_eq!(verify_with(&exe(100, vec![ret()]), &big), Ok(()));
        let e = verify_with(&exe(101, vec![ret()]), &big).unwrap_err();
        assert_eq!(e.message, "101 register(s) bring the executable's total to 101, over the limit of 100");
    }

    #[test]
    fn liveness_bits_at_the_limit_and_past_it() {
        // 64 registers (one word) × 4 instructions = 256 bits; a 65th register takes a word more.
        let code =
            vec![Instr::Move { dst: Reg(1), src: Reg(0) }; 3].into_iter().chain([ret()]).collect::<Vec<_>>();
        assert_eq!(verify_with(&exe(64, code.clone()), &limits()), Ok(()));
        let e = verify_with(&exe(65, code), &limits()).unwrap_err();
        assert!(
            e.message.ends_with("need 512 bits of liveness sets, over the limit of 256"),
            "{}",
            e.message
        );
    }

    #[test]
    fn static_tensors_at_the_limit_and_past_it() {
        let alloc = |shape: Vec<i64>| Instr::AllocTensor {
            dst: Reg(0),
            dtype: DType::F32,
            shape: shape.into(),
            init: Init::Zero,
        };
        assert_eq!(verify_with(&exe(1, vec![alloc(vec![4, 4]), ret()]), &limits()), Ok(()));
        let e = verify_with(&exe(1, vec![alloc(vec![17]), ret()]), &limits()).unwrap_err();
        assert_eq!(
            (e.pc, e.message.as_str()),
            (0, "a float32 tensor of 1 dimension(s) takes 68 bytes, over the limit of 64")
        );
        let e = verify_with(&exe(1, vec![alloc(vec![2, -1]), ret()]), &limits()).unwrap_err();
        assert_eq!(e.message, "a float32 tensor with negative dimension -1");
        // Dimensions whose product overflows any integer still compare as too large.
        assert!(limits().check_tensor(DType::F64, &[i64::MAX, i64::MAX, i64::MAX]).is_err());
    }

    #[test]
    fn frame_offsets_are_aligned_and_within_the_tensors_laid_end_to_end() {
        let frame = |at| Instr::AllocFrame {
            dst: Reg(0),
            offset: Imm(at),
            dtype: DType::I32,
            shape: [2].into(),
            init: Init::Zero,
        };
        assert_eq!(verify_with(&exe(1, vec![frame(64), frame(0), ret()]), &limits()), Ok(()));
        let e = verify_with(&exe(1, vec![frame(0), frame(128), ret()]), &limits()).unwrap_err();
        assert_eq!(
            (e.pc, e.message.as_str()),
            (1, "frame-arena offset 128 (+8 bytes) is not a multiple of 64 within the 128 bytes of the function's AllocFrame tensors")
        );
        let e = verify_with(&exe(1, vec![frame(0), frame(4), ret()]), &limits()).unwrap_err();
        assert_eq!(e.pc, 1);
    }

    #[test]
    fn unzeroed_allocations_are_outputs_of_the_next_kir_kernel_call() {
        let alloc =
            |dst, init| Instr::AllocTensor { dst: Reg(dst), dtype: DType::F32, shape: [2].into(), init };
        let call = |input, output| Instr::InvokePacked {
            kernel: KernelIdx(0),
            inputs: vec![Reg(input)].into(),
            outputs: vec![Reg(output)].into(),
        };
        let with_kernel = |code, kir: Option<Vec<u8>>| {
            let mut e = exe(3, code);
            let desc = crate::KernelDesc {
                op: "k".into(),
                attrs: vec![],
                num_inputs: 1,
                num_outputs: 1,
                kernel: kir,
            };
            e.kernels.push(desc);
            e
        };
        let kir = || Some(vec![0u8]);
        // Through another allocation, to the call that writes it.
        let good = vec![alloc(1, Init::Kernel), alloc(2, Init::Zero), call(0, 1), ret()];
        assert_eq!(verify_with(&with_kernel(good.clone(), kir()), &limits()), Ok(()));
        let refused = |code, kir| verify_with(&with_kernel(code, kir), &limits()).map_err(|e| e.pc);
        assert_eq!(refused(good, None), Err(0), "a reference kernel proves nothing");
        assert_eq!(refused(vec![alloc(1, Init::Kernel), call(1, 1), ret()], kir()), Err(0), "read first");
        assert_eq!(refused(vec![alloc(1, Init::Kernel), call(0, 2), ret()], kir()), Err(0), "not its output");
        let moved = vec![alloc(1, Init::Kernel), Instr::Move { dst: Reg(2), src: Reg(1) }, call(0, 1), ret()];
        assert_eq!(refused(moved, kir()), Err(0), "read before the call");
        assert_eq!(refused(vec![alloc(1, Init::Zero), ret()], None), Ok(()));
    }

    #[test]
    fn only_tensor_element_types_pass() {
        for ok in [DType::BOOL, DType::I8, DType::U64, DType::F16, DType::BF16, DType::F32, DType::F64] {
            assert_eq!(check_dtype(ok), Ok(()));
        }
        let bad = [
            DType { code: DTypeCode::Int, bits: 0, lanes: 1 },
            DType { code: DTypeCode::Int, bits: 7, lanes: 1 },
            DType { code: DTypeCode::Float, bits: 8, lanes: 1 },
            DType { code: DTypeCode::BFloat, bits: 32, lanes: 1 },
            DType { code: DTypeCode::Float, bits: 32, lanes: 4 },
            DType { code: DTypeCode::Float, bits: 32, lanes: 0 },
        ];
        for dtype in bad {
            let cast = Instr::Cast { dst: Reg(0), src: Reg(0), dtype };
            let e = verify_with(&exe(1, vec![cast, ret()]), &limits()).unwrap_err();
            assert!(e.message.contains("is not a tensor element type"), "{dtype}: {}", e.message);
        }
        let mut typed = exe(1, vec![ret()]);
        typed.functions[0].ret_type =
            ValueType::Tuple(vec![ValueType::Tensor { dtype: bad[0], shape: vec![None] }]);
        assert!(verify_with(&typed, &limits()).is_err());
    }
}
