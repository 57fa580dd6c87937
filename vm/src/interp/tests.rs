//! The dispatch loop's fast paths against hand-assembled bytecode: compare-and-branch, tail
//! calls that move arguments (in order, permuted, duplicated, across frame sizes, from
//! closures), moves at last uses, window clearing, and reuse of a VM after a trap.

use super::*;
use crate::executable::{ValueType, VmFunction};
use crate::operand::{FuncIdx, Imm, Init, Target};
use crate::verify::verify;
use relay_devices::arith::BinOp;
use relay_devices::Tensor;
use Instr::*;

fn i32v(v: i64) -> Value {
    Value::Scalar(ScalarValue::int(DType::I32, v))
}

fn imm(v: i64) -> ScalarValue {
    ScalarValue::int(DType::I32, v)
}

fn func(name: &str, num_params: usize, num_regs: u32, code: Vec<Instr>) -> VmFunction {
    let ty = ValueType::Tensor { dtype: DType::I32, shape: vec![] };
    VmFunction {
        name: name.into(),
        source: String::new(),
        param_names: (0..num_params).map(|i| format!("p{i}")).collect(),
        param_types: vec![ty.clone(); num_params],
        ret_type: ty,
        num_regs,
        code,
        spans: crate::SpanTable::default(),
    }
}

fn run(functions: Vec<VmFunction>, name: &str, args: Vec<Value>) -> Result<Value, Trap> {
    let exe = Executable { functions, ..Default::default() };
    verify(&exe).expect("verifies");
    let kernels: Vec<Arc<dyn PackedFunc>> = vec![];
    Vm::new(&exe, &kernels, VmConfig::default()).expect("vm").invoke(name, args)
}

fn int(v: Result<Value, Trap>) -> i64 {
    match v {
        Ok(Value::Scalar(s)) => s.as_i64(),
        other => panic!("not a scalar: {other:?}"),
    }
}

/// `f(a, b, n) = if n == 0 { a * 10 + b } else { f(args(a, b), n - 1) }`, where `args`
/// picks the registers of the tail call's first two arguments.
fn shuffle(args: [u32; 2]) -> VmFunction {
    func(
        "f",
        3,
        5,
        vec![
            IfCmpImm { op: BinOp::Eq, lhs: Reg(2), imm: imm(0), else_target: Target(4) },
            BinImm { op: BinOp::Mul, dst: Reg(3), lhs: Reg(0), imm: imm(10) },
            Bin { op: BinOp::Add, dst: Reg(3), lhs: Reg(3), rhs: Reg(1) },
            Ret { src: Reg(3) },
            BinImm { op: BinOp::Sub, dst: Reg(4), lhs: Reg(2), imm: imm(1) },
            TailCall { func: FuncIdx(0), args: vec![Reg(args[0]), Reg(args[1]), Reg(4)].into() },
        ],
    )
}

#[test]
fn compare_and_branch() {
    // sign(x, y) = if x < y { -1 } else if x == 7 { 7 } else { 1 }
    let sign = |cmp: Instr| {
        func(
            "sign",
            2,
            3,
            vec![
                cmp,
                LoadImm { dst: Reg(2), value: imm(-1) },
                Ret { src: Reg(2) },
                IfCmpImm { op: BinOp::Eq, lhs: Reg(0), imm: imm(7), else_target: Target(6) },
                LoadImm { dst: Reg(2), value: imm(7) },
                Ret { src: Reg(2) },
                LoadImm { dst: Reg(2), value: imm(1) },
                Ret { src: Reg(2) },
            ],
        )
    };
    let lt = sign(IfCmp { op: BinOp::Lt, lhs: Reg(0), rhs: Reg(1), else_target: Target(3) });
    assert_eq!(int(run(vec![lt.clone()], "sign", vec![i32v(-5), i32v(3)])), -1);
    assert_eq!(int(run(vec![lt.clone()], "sign", vec![i32v(7), i32v(3)])), 7);
    assert_eq!(int(run(vec![lt.clone()], "sign", vec![i32v(9), i32v(3)])), 1);
    let t = run(vec![lt], "sign", vec![i32v(1), Value::Scalar(ScalarValue::int(DType::I64, 2))]).unwrap_err();
    assert_eq!(t.stack[0].pc, 0);
    assert!(t.message.contains("int32 and int64"), "{t}");

    // NaN is unordered: `!=` holds, `<` does not.
    let nan = Value::Scalar(ScalarValue::float(DType::F32, f64::NAN));
    let one = Value::Scalar(ScalarValue::float(DType::F32, 1.0));
    let ne = sign(IfCmp { op: BinOp::Ne, lhs: Reg(0), rhs: Reg(1), else_target: Target(3) });
    assert_eq!(int(run(vec![ne], "sign", vec![nan.clone(), one.clone()])), -1);
    let lt = sign(IfCmp { op: BinOp::Lt, lhs: Reg(0), rhs: Reg(1), else_target: Target(3) });
    let t = run(vec![lt], "sign", vec![nan, one]).unwrap_err();
    assert!(t.message.contains("float32 and int32"), "the `== 7` test traps: {t}");
}

#[test]
fn returning_an_operation() {
    // depth(n) = if n != 0 { depth(n - 1) + 1 } else { n }; quot(a, b) = a / b.
    let depth = func(
        "depth",
        1,
        3,
        vec![
            IfCmpImm { op: BinOp::Ne, lhs: Reg(0), imm: imm(0), else_target: Target(4) },
            BinImm { op: BinOp::Sub, dst: Reg(1), lhs: Reg(0), imm: imm(1) },
            Invoke { dst: Reg(2), func: FuncIdx(0), args: vec![Reg(1)].into() },
            RetBinImm { op: BinOp::Add, lhs: Reg(2), imm: imm(1) },
            Ret { src: Reg(0) },
        ],
    );
    let quot = func("quot", 2, 2, vec![RetBin { op: BinOp::Div, lhs: Reg(0), rhs: Reg(1) }]);
    assert_eq!(int(run(vec![depth], "depth", vec![i32v(1000)])), 1000);
    assert_eq!(int(run(vec![quot.clone()], "quot", vec![i32v(-7), i32v(2)])), -3);
    assert_eq!(int(run(vec![quot], "quot", vec![i32v(1), i32v(0)])), 0, "x / 0 == 0");
}

#[test]
fn tail_calls_move_arguments_in_any_order() {
    // In order, swapped (needs a buffer), and one register passed twice (needs a clone).
    assert_eq!(int(run(vec![shuffle([0, 1])], "f", vec![i32v(1), i32v(2), i32v(3)])), 12);
    assert_eq!(int(run(vec![shuffle([1, 0])], "f", vec![i32v(1), i32v(2), i32v(3)])), 21);
    assert_eq!(int(run(vec![shuffle([1, 0])], "f", vec![i32v(1), i32v(2), i32v(4)])), 12);
    assert_eq!(int(run(vec![shuffle([1, 1])], "f", vec![i32v(1), i32v(2), i32v(1)])), 22);
    assert_eq!(int(run(vec![shuffle([0, 0])], "f", vec![i32v(3), i32v(2), i32v(5)])), 33);
}

#[test]
fn tail_calls_between_frames_of_different_sizes() {
    // big(x) = small(x + 1, x) through a wide frame; small(a, b) = big2(b - a) with a
    // narrow one; big2(x) returns x from its last register.
    let big = func(
        "big",
        1,
        9,
        vec![
            BinImm { op: BinOp::Add, dst: Reg(8), lhs: Reg(0), imm: imm(1) },
            TailCall { func: FuncIdx(1), args: vec![Reg(8), Reg(0)].into() },
        ],
    );
    let small = func(
        "small",
        2,
        3,
        vec![
            Bin { op: BinOp::Sub, dst: Reg(2), lhs: Reg(1), rhs: Reg(0) },
            TailCall { func: FuncIdx(2), args: vec![Reg(2)].into() },
        ],
    );
    let big2 = func("big2", 1, 12, vec![Move { dst: Reg(11), src: Reg(0) }, Ret { src: Reg(11) }]);
    assert_eq!(int(run(vec![big, small, big2], "big", vec![i32v(5)])), -1);
}

#[test]
fn heap_arguments_move_through_tail_calls() {
    // walk(xs, acc) over a list of tag 0 = Cons(head, tail), tag 1 = Nil, in a loop whose
    // arguments are fields of the old argument.
    let walk = func(
        "walk",
        2,
        4,
        vec![
            SwitchTag { obj: Reg(0), targets: vec![Target(1), Target(5)].into() },
            GetField { dst: Reg(2), obj: Reg(0), index: Imm(0) },
            GetField { dst: Reg(3), obj: Reg(0), index: Imm(1) },
            Bin { op: BinOp::Add, dst: Reg(2), lhs: Reg(1), rhs: Reg(2) },
            TailCall { func: FuncIdx(0), args: vec![Reg(3), Reg(2)].into() },
            Ret { src: Reg(1) },
        ],
    );
    let mut list = Value::adt(1, vec![]);
    for i in 1..=100 {
        list = Value::adt(0, vec![i32v(i), list]);
    }
    let exe = Executable { functions: vec![walk], ..Default::default() };
    let kernels: Vec<Arc<dyn PackedFunc>> = vec![];
    let mut vm = Vm::new(&exe, &kernels, VmConfig::default()).expect("vm");
    assert_eq!(int(vm.invoke("walk", vec![list.clone(), i32v(0)])), 5050);
    // The VM released every cell it walked: the host holds the only reference again.
    let Value::Adt(cell) = &list else { panic!("not a list") };
    assert_eq!(Arc::strong_count(cell), 1);
}

#[test]
fn a_tail_call_leaves_no_stale_registers() {
    // f(n) = if n == 0 { return $1 } else { $1 = 5; f(n - 1) }: the second activation must
    // not see the first one's $1.
    let f = func(
        "f",
        1,
        3,
        vec![
            IfCmpImm { op: BinOp::Eq, lhs: Reg(0), imm: imm(0), else_target: Target(2) },
            Ret { src: Reg(1) },
            LoadImm { dst: Reg(1), value: imm(5) },
            BinImm { op: BinOp::Sub, dst: Reg(2), lhs: Reg(0), imm: imm(1) },
            TailCall { func: FuncIdx(0), args: vec![Reg(2)].into() },
        ],
    );
    let t = run(vec![f], "f", vec![i32v(1)]).unwrap_err();
    assert_eq!((t.stack[0].pc, t.message.as_str()), (1, "return of empty register $1"));
}

#[test]
fn closures_tail_call_with_captured_values() {
    // add3(k, a, b) = k * 100 + a * 10 + b; main(x) tail-calls a closure of add3 capturing
    // 7 with the arguments swapped and itself passed along.
    let add3 = func(
        "add3",
        3,
        4,
        vec![
            BinImm { op: BinOp::Mul, dst: Reg(3), lhs: Reg(0), imm: imm(10) },
            Bin { op: BinOp::Add, dst: Reg(3), lhs: Reg(3), rhs: Reg(1) },
            BinImm { op: BinOp::Mul, dst: Reg(3), lhs: Reg(3), imm: imm(10) },
            Bin { op: BinOp::Add, dst: Reg(3), lhs: Reg(3), rhs: Reg(2) },
            Ret { src: Reg(3) },
        ],
    );
    let main = func(
        "main",
        2,
        4,
        vec![
            LoadImm { dst: Reg(2), value: imm(7) },
            AllocClosure { dst: Reg(3), func: FuncIdx(0), captured: vec![Reg(2)].into() },
            TailCallClosure { closure: Reg(3), args: vec![Reg(1), Reg(0)].into() },
        ],
    );
    assert_eq!(int(run(vec![add3.clone(), main], "main", vec![i32v(1), i32v(2)])), 721);
    let wrong = func(
        "wrong",
        0,
        2,
        vec![
            LoadImm { dst: Reg(0), value: imm(7) },
            AllocClosure { dst: Reg(1), func: FuncIdx(0), captured: vec![Reg(0)].into() },
            TailCallClosure { closure: Reg(1), args: vec![Reg(0)].into() },
        ],
    );
    let t = run(vec![add3, wrong], "wrong", vec![]).unwrap_err();
    assert!(t.message.contains("called with 1 argument"), "{t}");
}

/// `down(n) = if n == 0 { fatal "bottom" } else { down(n - 1) + 1 }`, function 0: it traps
/// `n` calls deep.
fn down() -> VmFunction {
    func(
        "down",
        1,
        3,
        vec![
            IfCmpImm { op: BinOp::Eq, lhs: Reg(0), imm: imm(0), else_target: Target(2) },
            Fatal { message: crate::operand::StrIdx(0) },
            BinImm { op: BinOp::Sub, dst: Reg(1), lhs: Reg(0), imm: imm(1) },
            Invoke { dst: Reg(2), func: FuncIdx(0), args: vec![Reg(1)].into() },
            BinImm { op: BinOp::Add, dst: Reg(2), lhs: Reg(2), imm: imm(1) },
            Ret { src: Reg(2) },
        ],
    )
}

#[test]
fn a_vm_runs_again_after_a_trap() {
    // Trapping 1000 frames deep.
    let down = down();
    let id = func("id", 1, 1, vec![Ret { src: Reg(0) }]);
    let exe = Executable { functions: vec![down, id], strings: vec!["bottom".into()], ..Default::default() };
    verify(&exe).expect("verifies");
    let kernels: Vec<Arc<dyn PackedFunc>> = vec![];
    let mut vm = Vm::new(&exe, &kernels, VmConfig::default()).expect("vm");
    for _ in 0..2 {
        let t = vm.invoke("down", vec![i32v(1000)]).unwrap_err();
        assert_eq!((t.stack[0].function.as_str(), t.message.as_str()), ("down", "bottom"));
        assert_eq!(int(vm.invoke("id", vec![i32v(4)])), 4);
    }
}

#[test]
fn a_trap_reports_the_relay_call_stack_innermost_first() {
    // main calls mid at pc 1, mid calls leaf at pc 0, leaf faults at pc 0.
    let mut leaf = func("leaf", 0, 1, vec![Fatal { message: crate::operand::StrIdx(0) }]);
    leaf.source = "m.relay:7:1".into();
    let mut mid = func(
        "mid",
        0,
        1,
        vec![Invoke { dst: Reg(0), func: FuncIdx(0), args: vec![].into() }, Ret { src: Reg(0) }],
    );
    let at = |line, col| crate::SourcePos { line, col };
    mid.spans = crate::SpanTable::from_positions("m.relay", &[at(12, 9), at(11, 3)]);
    let mut main = func(
        "main",
        0,
        1,
        vec![
            LoadImm { dst: Reg(0), value: imm(0) },
            Invoke { dst: Reg(0), func: FuncIdx(1), args: vec![].into() },
            Ret { src: Reg(0) },
        ],
    );
    main.spans = crate::SpanTable::from_positions("m.relay", &[at(20, 3), at(21, 5), at(20, 3)]);
    let exe =
        Executable { functions: vec![leaf, mid, main], strings: vec!["bottom".into()], ..Default::default() };
    verify(&exe).expect("verifies");
    let t = run_exe(&exe, "main");
    let frames: Vec<(&str, usize)> = t.stack.iter().map(|f| (f.function.as_str(), f.pc)).collect();
    assert_eq!(frames, [("leaf", 0), ("mid", 0), ("main", 1)]);
    assert_eq!(
        t.to_string(),
        "trap in `leaf` at instruction 0: bottom\n  at @leaf (instruction 0, defined at m.relay:7:1)\n  \
         at @mid (m.relay:12:9)\n  at @main (m.relay:21:5)"
    );
    let spans: Vec<&str> = t.stack.iter().map(|f| f.span.as_str()).collect();
    assert_eq!(spans, ["", "m.relay:12:9", "m.relay:21:5"]);
}

#[test]
fn a_deep_trap_keeps_only_the_innermost_frames() {
    // 5000 calls deep.
    let exe = Executable { functions: vec![down()], strings: vec!["bottom".into()], ..Default::default() };
    let kernels: Vec<Arc<dyn PackedFunc>> = vec![];
    let mut vm = Vm::new(&exe, &kernels, VmConfig::default()).expect("vm");
    let t = vm.invoke("down", vec![i32v(5000)]).unwrap_err();
    assert_eq!(t.stack.len(), crate::MAX_TRAP_FRAMES);
    assert_eq!((t.stack[0].pc, t.stack[1].pc), (1, 3), "the fault, then the pending calls");
}

/// Runs `name` of `exe`, which must trap.
fn run_exe(exe: &Executable, name: &str) -> Trap {
    let kernels: Vec<Arc<dyn PackedFunc>> = vec![];
    let mut vm = Vm::new(exe, &kernels, VmConfig::default()).expect("vm");
    vm.invoke(name, vec![]).unwrap_err()
}

/// A kernel that panics, as a buggy host kernel might.
struct Panics;

impl PackedFunc for Panics {
    fn output_types(&self, _: &[&Tensor]) -> Result<Vec<(DType, Vec<usize>)>, String> {
        Ok(vec![(DType::F32, vec![1])])
    }
    fn run(&self, _: &[&Tensor], _: &mut [Tensor]) -> Result<(), String> {
        panic!("kernel bug")
    }
}

#[test]
fn a_panic_through_a_run_leaves_no_stale_registers() {
    let boom = func(
        "boom",
        1,
        3,
        vec![
            LoadImm { dst: Reg(2), value: imm(9) },
            AllocTensor { dst: Reg(1), dtype: DType::F32, shape: vec![1].into(), init: Init::Zero },
            InvokePacked {
                kernel: crate::operand::KernelIdx(0),
                inputs: vec![Reg(0)].into(),
                outputs: vec![Reg(1)].into(),
            },
            Ret { src: Reg(1) },
        ],
    );
    let peek = func("peek", 0, 3, vec![Ret { src: Reg(2) }]);
    let desc = crate::executable::KernelDesc {
        op: "boom".into(),
        attrs: vec![],
        num_inputs: 1,
        num_outputs: 1,
        kernel: None,
    };
    let exe = Executable { functions: vec![boom, peek], kernels: vec![desc], ..Default::default() };
    let kernels: Vec<Arc<dyn PackedFunc>> = vec![Arc::new(Panics)];
    let mut vm = Vm::new(&exe, &kernels, VmConfig::default()).expect("vm");
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| vm.invoke("boom", vec![i32v(1)])));
    assert!(caught.is_err());
    let t = vm.invoke("peek", vec![]).unwrap_err();
    assert_eq!(t.message, "return of empty register $2");
}

#[test]
fn last_uses_move_values_without_losing_shared_ones() {
    // main(x, host) = let t = (x, x); let s = swap(t, t); (s.1, s.0, host.0): `x`, `t`, `s`
    // and `host` each die in the instruction that reads them last, some read twice there.
    let main = func(
        "main",
        2,
        9,
        vec![
            AllocADT { dst: Reg(2), tag: Imm(0), fields: vec![Reg(0), Reg(0)].into() },
            Invoke { dst: Reg(3), func: FuncIdx(1), args: vec![Reg(2), Reg(2)].into() },
            GetField { dst: Reg(4), obj: Reg(3), index: Imm(1) },
            GetField { dst: Reg(5), obj: Reg(3), index: Imm(0) },
            Move { dst: Reg(6), src: Reg(5) },
            GetField { dst: Reg(7), obj: Reg(1), index: Imm(0) },
            AllocADT { dst: Reg(8), tag: Imm(0), fields: vec![Reg(4), Reg(6), Reg(7)].into() },
            Ret { src: Reg(8) },
        ],
    );
    let swap = func(
        "swap",
        2,
        3,
        vec![AllocADT { dst: Reg(2), tag: Imm(0), fields: vec![Reg(1), Reg(0)].into() }, Ret { src: Reg(2) }],
    );
    let x = Arc::new(Tensor::zeros(DType::F32, vec![2]).expect("tensor"));
    let host = Value::tuple(vec![i32v(5)]);
    let got = run(vec![main, swap], "main", vec![Value::Tensor(x.clone()), host.clone()]).expect("runs");
    let Value::Adt(r) = got else { panic!("not a tuple: {got:?}") };
    let [Value::Adt(t0), Value::Adt(t1), five] = &r.fields[..] else { panic!("fields: {r:?}") };
    assert!(Arc::ptr_eq(t0, t1), "both are the one tuple `t`");
    assert!(t0.fields.iter().all(|v| matches!(v, Value::Tensor(t) if Arc::ptr_eq(t, &x))));
    // The host's `x`, the two fields of `t`: no reference leaked or lost.
    assert_eq!((Arc::strong_count(&x), Arc::strong_count(t0)), (3, 2));
    assert_eq!(int(Ok(five.clone())), 5);
    let Value::Adt(h) = &host else { panic!("not a tuple") };
    assert_eq!(int(Ok(h.fields[0].clone())), 5, "a shared cell keeps its fields");
}

/// A kernel that reports, per input, whether `run_shared` gave it the input's own handle.
struct Handles;

impl PackedFunc for Handles {
    fn output_types(&self, _: &[&Tensor]) -> Result<Vec<(DType, Vec<usize>)>, String> {
        Ok(vec![(DType::I32, vec![2])])
    }
    fn run(&self, _: &[&Tensor], _: &mut [Tensor]) -> Result<(), String> {
        Err("the VM calls run_shared".into())
    }
    fn run_shared(
        &self,
        inputs: &[&Tensor],
        handles: &[Option<&Arc<Tensor>>],
        outputs: &mut [Tensor],
        _: &crate::CancelHandle,
    ) -> Result<(), String> {
        for (i, (t, h)) in inputs.iter().zip(handles).enumerate() {
            let own = h.is_some_and(|h| std::ptr::eq(&**h, *t));
            outputs[0].set(i, relay_devices::Scalar::Int(i64::from(own)));
        }
        Ok(())
    }
}

#[test]
fn kernels_get_the_handles_of_tensor_inputs() {
    // shared(w, n) = InvokePacked(w, n): `w` a tensor register, `n` an unboxed scalar.
    let main = func(
        "main",
        2,
        3,
        vec![
            AllocTensor { dst: Reg(2), dtype: DType::I32, shape: vec![2].into(), init: Init::Zero },
            InvokePacked {
                kernel: crate::operand::KernelIdx(0),
                inputs: vec![Reg(0), Reg(1)].into(),
                outputs: vec![Reg(2)].into(),
            },
            Ret { src: Reg(2) },
        ],
    );
    let desc = crate::executable::KernelDesc {
        op: "handles".into(),
        attrs: vec![],
        num_inputs: 2,
        num_outputs: 1,
        kernel: None,
    };
    let exe = Executable { functions: vec![main], kernels: vec![desc], ..Default::default() };
    let kernels: Vec<Arc<dyn PackedFunc>> = vec![Arc::new(Handles)];
    let mut vm = Vm::new(&exe, &kernels, VmConfig::default()).expect("vm");
    let w = Value::from_tensor(Tensor::from_vec(vec![3], vec![1f32, 2.0, 3.0]).unwrap());
    let out = vm.invoke("main", vec![w, i32v(7)]).expect("run");
    let Value::Tensor(t) = out else { panic!("not a tensor: {}", out.kind()) };
    assert_eq!(t.as_slice::<i32>().unwrap(), &[1, 0]);
}

#[test]
fn instruction_profile_counts_by_class() {
    // f(n) = if n == 0 { n } else { f(n - 1) }
    let f = func(
        "f",
        1,
        2,
        vec![
            IfCmpImm { op: BinOp::Eq, lhs: Reg(0), imm: imm(0), else_target: Target(2) },
            Ret { src: Reg(0) },
            BinImm { op: BinOp::Sub, dst: Reg(1), lhs: Reg(0), imm: imm(1) },
            TailCall { func: FuncIdx(0), args: vec![Reg(1)].into() },
        ],
    );
    let exe = Executable { functions: vec![f], ..Default::default() };
    verify(&exe).expect("verifies");
    let kernels: Vec<Arc<dyn PackedFunc>> = vec![];
    let mut vm = Vm::new(&exe, &kernels, VmConfig::default()).expect("vm");
    assert_eq!(int(vm.invoke("f", vec![i32v(3)])), 0);
    assert!(vm.instr_profile().is_none());
    vm.start_instr_profile();
    for _ in 0..2 {
        assert_eq!(int(vm.invoke("f", vec![i32v(3)])), 0);
    }
    let counts = |vm: &Vm<'_>| {
        let mut rows: Vec<(InstrClass, u64)> =
            vm.instr_profile().expect("profiling").rows().iter().map(|r| (r.class, r.count)).collect();
        rows.sort();
        rows
    };
    use crate::isa::InstrClass;
    let expected = vec![
        (InstrClass::Call, 6),
        (InstrClass::Return, 2),
        (InstrClass::Branch, 8),
        (InstrClass::Scalar, 6),
    ];
    assert_eq!(counts(&vm), expected);
    // Restarting starts from zero.
    vm.start_instr_profile();
    assert_eq!(int(vm.invoke("f", vec![i32v(0)])), 0);
    assert_eq!(counts(&vm), vec![(InstrClass::Return, 1), (InstrClass::Branch, 1)]);
}
