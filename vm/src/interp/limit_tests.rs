//! The VM's limits against hand-assembled bytecode: tensor size and memory budget,
//! register-stack bounds, cancellation from another thread, and deadlines.

use super::*;
use crate::executable::{ValueType, VmFunction};
use crate::operand::Init;
use crate::operand::{FuncIdx, Target};
use crate::StopReason;
use std::time::{Duration, Instant};
use Instr::*;

fn func(num_regs: u32, code: Vec<Instr>) -> VmFunction {
    let ty = ValueType::Tensor { dtype: DType::F32, shape: vec![] };
    VmFunction {
        name: "main".into(),
        source: String::new(),
        param_names: vec![],
        param_types: vec![],
        ret_type: ty,
        num_regs,
        code,
        spans: crate::SpanTable::default(),
    }
}

fn exe(code: Vec<Instr>) -> Executable {
    Executable { functions: vec![func(2, code)], ..Default::default() }
}

fn run(exe: &Executable, config: VmConfig) -> Result<Value, Trap> {
    let kernels: Vec<Arc<dyn PackedFunc>> = vec![];
    Vm::new(exe, &kernels, config).expect("vm").invoke("main", vec![])
}

fn alloc(dst: u32, shape: &[i64]) -> Instr {
    AllocTensor { dst: Reg(dst), dtype: DType::F32, shape: shape.to_vec().into(), init: Init::Zero }
}

#[test]
fn a_tensor_over_the_limit_traps_instead_of_aborting() {
    // `zeros(shape=[100000, 100000])`: 40 GB, over the default 16 GiB per tensor.
    let e = exe(vec![alloc(0, &[100_000, 100_000]), Ret { src: Reg(0) }]);
    let t = run(&e, VmConfig::default()).expect_err("traps");
    assert!(t.message.contains("40000000000 bytes, over the limit"), "{t}");
    // Under a small limit a small tensor is refused as well, and a smaller one allowed.
    let small = VmConfig { max_tensor_bytes: 1024, ..VmConfig::default() };
    assert!(run(&exe(vec![alloc(0, &[257]), Ret { src: Reg(0) }]), small.clone()).is_err());
    assert!(run(&exe(vec![alloc(0, &[256]), Ret { src: Reg(0) }]), small).is_ok());
}

#[test]
fn live_tensors_over_the_memory_budget_trap() {
    // Two live 400-byte tensors fit in 1000 bytes; a third does not.
    let code = |n: u32| -> Vec<Instr> {
        let mut code: Vec<Instr> = (0..n).map(|r| alloc(r, &[100])).collect();
        code.push(Ret { src: Reg(0) });
        code
    };
    let config = VmConfig { max_memory_bytes: 1000, ..VmConfig::default() };
    let two = Executable { functions: vec![func(3, code(2))], ..Default::default() };
    let three = Executable { functions: vec![func(3, code(3))], ..Default::default() };
    assert!(run(&two, config.clone()).is_ok());
    let t = run(&three, config.clone()).expect_err("traps");
    assert!(t.message.contains("memory budget of 1000 bytes (800 bytes in use)"), "{t}");
    // Tensors that die give their bytes back: one register reused forever stays in budget.
    let kernels: Vec<Arc<dyn PackedFunc>> = vec![];
    let reused = exe(vec![alloc(0, &[100]), alloc(0, &[100]), alloc(0, &[100]), Ret { src: Reg(0) }]);
    let off = VmConfig { reuse_memory: false, ..config };
    let mut vm = Vm::new(&reused, &kernels, off).expect("vm");
    for _ in 0..3 {
        assert!(vm.invoke("main", vec![]).is_ok());
    }
}

#[test]
fn a_register_file_over_the_budget_traps() {
    // A crafted register count: 2^32 - 1 registers would be ~100 GB of value stack.
    let e = Executable {
        functions: vec![func(u32::MAX, vec![alloc(0, &[1]), Ret { src: Reg(0) }])],
        ..Default::default()
    };
    let t = run(&e, VmConfig::default()).expect_err("traps");
    assert!(t.message.contains("registers exceeds the memory budget"), "{t}");
}

/// `main` loops forever: a backward `Goto`, or a self tail call.
fn forever(tail_call: bool) -> Executable {
    let back = if tail_call {
        TailCall { func: FuncIdx(0), args: vec![].into() }
    } else {
        Goto { target: Target(0) }
    };
    exe(vec![LoadConst { dst: Reg(0), index: crate::operand::ConstIdx(0) }, back])
}

#[test]
fn another_thread_cancels_an_endless_loop() {
    for tail_call in [false, true] {
        let mut e = forever(tail_call);
        e.constants.push(relay_devices::Tensor::scalar(0f32));
        let kernels: Vec<Arc<dyn PackedFunc>> = vec![];
        let mut vm = Vm::new(&e, &kernels, VmConfig::default()).expect("vm");
        let handle = vm.cancel_handle().clone();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            handle.cancel();
        });
        let t = vm.invoke("main", vec![]).expect_err("stopped");
        canceller.join().expect("cancels");
        assert_eq!(t.message, "cancelled");
        assert_eq!(vm.cancel_handle().stop_reason(), Some(StopReason::Cancelled));
        // Final: the next run stops at its first check.
        assert!(vm.invoke("main", vec![]).is_err());
    }
}

#[test]
fn a_deadline_stops_an_endless_loop() {
    let mut e = forever(true);
    e.constants.push(relay_devices::Tensor::scalar(0f32));
    let config =
        VmConfig { deadline: Some(Instant::now() + Duration::from_millis(20)), ..VmConfig::default() };
    let t = run(&e, config).expect_err("stopped");
    assert_eq!(t.message, "deadline passed (time limit exceeded)");
    // A handle shared by two VMs stops both.
    let shared = CancelHandle::new();
    let config = VmConfig { cancel: Some(shared.clone()), ..VmConfig::default() };
    shared.cancel();
    assert!(run(&e, config.clone()).is_err() && run(&e, config).is_err());
}
