//! Crafted executables with a valid checksum that claim more than the verifier's
//! [`Limits`] allow are rejected at load, each with an error naming the problem: the five
//! attacks of issue #17 (a huge register count on an uncalled function, a 2^32 `AllocTensor`
//! dimension, an `AllocFrame` offset of 4294901760 with dtype `int0`, a kir temp of 2^40 rows,
//! a kir loop of extent 2^31 around an op).
//!
//! Each attack edits a compiled executable and saves it again: the bytes are the original
//! file with those fields patched and the CRC-32 recomputed, without offset arithmetic.

use relay::compiler::kir::{self, BufferDecl, BufferRole, Extent, Index, LoopKind, Stmt, VarDecl, VarId};
use relay::devices::{DType, DTypeCode};
use relay::vm::{Executable, Imm, Instr, Limits, LoadError, Reg};
use relay::{Error, Program};

/// A function nobody calls, and a tensor function with an intermediate (a frame-arena
/// tensor at -O0) and a fused kernel (at -O2).
const SOURCE: &str = r#"#[version = "0.0.5"]
def @unused(%x: float32) -> float32 { %x }
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {
  multiply(tanh(add(%x, %y)), %y)
}
"#;

fn compiled(opt_level: u8) -> Executable {
    Program::builder()
        .source("limits.relay", SOURCE)
        .opt_level(opt_level)
        .build()
        .unwrap()
        .executable()
        .clone()
}

/// Loading `exe`'s file fails verification; the message.
fn rejected(exe: &Executable) -> String {
    match Executable::load(&exe.save()) {
        Err(LoadError::Verify(e)) => e.to_string(),
        other => panic!("expected a verification error, got {other:?}"),
    }
}

/// Limits that admit anything, to show the file is otherwise well formed.
fn unlimited() -> Limits {
    Limits {
        max_registers: u64::MAX,
        max_liveness_bits: u64::MAX,
        max_tensor_bytes: u64::MAX,
        max_kernel_work: u64::MAX,
    }
}

/// The first instruction of `exe` that `pick` selects, for patching.
fn instr(exe: &mut Executable, pick: impl Fn(&Instr) -> bool) -> &mut Instr {
    exe.functions.iter_mut().flat_map(|f| f.code.iter_mut()).find(|i| pick(i)).expect("no such instruction")
}

#[test]
fn registers_of_an_uncalled_function_count() {
    let mut exe = compiled(0);
    let f = exe.function_index("unused").unwrap();
    exe.functions[f].num_regs = u32::MAX;
    assert!(Executable::load_with(&exe.save(), &unlimited()).is_ok());
    let m = rejected(&exe);
    assert!(m.starts_with("invalid bytecode in `unused` at 0: 4294967295 register(s)"), "{m}");
    assert!(m.ends_with("over the limit of 4194304"), "{m}");
}

#[test]
fn an_alloc_tensor_dimension_of_2_pow_32_is_rejected() {
    let mut exe = compiled(0);
    let Instr::AllocTensor { shape, .. } = instr(&mut exe, |i| matches!(i, Instr::AllocTensor { .. })) else {
        unreachable!()
    };
    shape[0] = 1 << 32;
    assert!(Executable::load_with(&exe.save(), &unlimited()).is_ok());
    let m = rejected(&exe);
    assert!(m.contains("a float32 tensor of 2 dimension(s) takes 51539607552 bytes, over the limit"), "{m}");
}

#[test]
fn an_alloc_frame_offset_past_the_frame_or_of_dtype_int0_is_rejected() {
    let int0 = DType { code: DTypeCode::Int, bits: 0, lanes: 1 };
    let alloc_frame = |i: &Instr| matches!(i, Instr::AllocFrame { .. });
    // The attack: both at once.
    let mut exe = compiled(0);
    if let Instr::AllocFrame { offset, dtype, .. } = instr(&mut exe, alloc_frame) {
        *offset = Imm(4294901760);
        *dtype = int0;
    }
    assert!(Executable::load_with(&exe.save(), &unlimited()).is_err());
    rejected(&exe);
    // Each on its own, with its own message.
    let mut exe = compiled(0);
    if let Instr::AllocFrame { offset, .. } = instr(&mut exe, alloc_frame) {
        *offset = Imm(4294901760);
    }
    let m = rejected(&exe);
    assert!(m.contains("frame-arena offset 4294901760 (+"), "{m}");
    let mut exe = compiled(0);
    if let Instr::AllocFrame { dtype, .. } = instr(&mut exe, alloc_frame) {
        *dtype = int0;
    }
    let m = rejected(&exe);
    assert!(m.contains("dtype int0 (Int, 0 bits, 1 lanes) is not a tensor element type"), "{m}");
}

/// `exe` with its first fused kernel rewritten by `edit`.
fn with_kernel(mut exe: Executable, edit: impl FnOnce(&mut kir::Kernel)) -> Executable {
    let desc = exe.kernels.iter_mut().find(|k| k.kernel.is_some()).expect("no fused kernel");
    let mut kernel = kir::Kernel::from_bytes(desc.kernel.as_deref().unwrap()).unwrap();
    edit(&mut kernel);
    desc.kernel = Some(kernel.to_bytes());
    exe
}

/// Loading and binding `exe`'s file fails on its kernel; the message.
fn kernel_rejected(exe: &Executable) -> String {
    let bytes = exe.save();
    assert!(Executable::load(&bytes).is_ok(), "the bytecode itself is valid");
    match Program::load(&bytes) {
        Err(Error::Kernel { message, .. }) => message,
        Err(e) => panic!("expected a kernel error, got {e}"),
        Ok(_) => panic!("the kernel was accepted"),
    }
}

#[test]
fn a_kir_temp_of_2_pow_40_rows_is_rejected() {
    let exe = with_kernel(compiled(2), |k| {
        k.buffers.push(BufferDecl {
            name: "huge".into(),
            role: BufferRole::Temp,
            dtype: DType::F32,
            shape: vec![Extent::Const(1 << 40), Extent::Const(3)],
        })
    });
    let m = kernel_rejected(&exe);
    assert!(
        m.contains("buffer `huge`: a float32 tensor of 2 dimension(s) takes 13194139533312 bytes"),
        "{m}"
    );
}

#[test]
fn a_kir_loop_of_extent_2_pow_31_around_an_op_is_rejected() {
    let exe = with_kernel(compiled(2), |k| {
        let var = VarId(k.vars.len() as u32);
        k.vars.push(VarDecl { name: "spin".into() });
        let body = std::mem::take(&mut k.body);
        k.body = vec![Stmt::For { var, extent: Index::Const(1 << 31), kind: LoopKind::Serial, body }];
    });
    let m = kernel_rejected(&exe);
    assert!(m.contains("a call may execute 12884901888 statements, over the limit of 2147483648"), "{m}");
}

#[test]
fn many_registers_times_long_code_is_rejected() {
    // Within the register total, but the VM's liveness sets would take 2^20 × 5001 bits.
    let mut exe = compiled(0);
    let f = exe.function_index("unused").unwrap();
    let f = &mut exe.functions[f];
    f.num_regs = 1 << 20;
    f.code = vec![Instr::Move { dst: Reg(0), src: Reg(0) }; 5000];
    f.code.push(Instr::Ret { src: Reg(0) });
    assert!(Executable::load_with(&exe.save(), &unlimited()).is_ok());
    let m = rejected(&exe);
    assert!(m.contains("1048576 registers × 5001 instructions need 5243928576 bits"), "{m}");
}
