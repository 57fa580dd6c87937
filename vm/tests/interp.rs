//! The interpreter on hand-assembled bytecode: loops, deep recursion, closures, ADTs, refs,
//! traps, and the executable file format.

use relay_devices::DType;
use relay_runtime::*;

fn i32_imm(v: i64) -> ScalarValue {
    ScalarValue::int(DType::I32, v)
}

fn int_ty() -> ValueType {
    ValueType::Tensor { dtype: DType::I32, shape: vec![] }
}

fn func(name: &str, params: &[&str], num_regs: u32, code: Vec<Instr>) -> VmFunction {
    VmFunction {
        name: name.into(),
        source: String::new(),
        param_names: params.iter().map(|s| s.to_string()).collect(),
        param_types: params.iter().map(|_| int_ty()).collect(),
        ret_type: int_ty(),
        num_regs,
        code,
        spans: relay_runtime::SpanTable::default(),
    }
}

/// `count(n, acc) = if n == 0 { acc } else { count(n - 1, acc + 1) }` (tail call).
fn count_loop() -> VmFunction {
    use Instr::*;
    func(
        "count",
        &["n", "acc"],
        5,
        vec![
            LoadImm { dst: Reg(2), value: i32_imm(0) },
            Bin { op: BinOp::Eq, dst: Reg(3), lhs: Reg(0), rhs: Reg(2) },
            If { cond: Reg(3), else_target: Target(4) },
            Ret { src: Reg(1) },
            LoadImm { dst: Reg(4), value: i32_imm(1) },
            Bin { op: BinOp::Sub, dst: Reg(0), lhs: Reg(0), rhs: Reg(4) },
            Bin { op: BinOp::Add, dst: Reg(1), lhs: Reg(1), rhs: Reg(4) },
            TailCall { func: FuncIdx(0), args: vec![Reg(0), Reg(1)].into() },
        ],
    )
}

/// `depth(n) = if n == 0 { 0 } else { 1 + depth(n - 1) }` (not a tail call).
fn depth() -> VmFunction {
    use Instr::*;
    func(
        "depth",
        &["n"],
        4,
        vec![
            LoadImm { dst: Reg(1), value: i32_imm(0) },
            Bin { op: BinOp::Eq, dst: Reg(2), lhs: Reg(0), rhs: Reg(1) },
            If { cond: Reg(2), else_target: Target(4) },
            Ret { src: Reg(1) },
            LoadImm { dst: Reg(3), value: i32_imm(1) },
            Bin { op: BinOp::Sub, dst: Reg(2), lhs: Reg(0), rhs: Reg(3) },
            Invoke { dst: Reg(2), func: FuncIdx(1), args: vec![Reg(2)].into() },
            Bin { op: BinOp::Add, dst: Reg(2), lhs: Reg(2), rhs: Reg(3) },
            Ret { src: Reg(2) },
        ],
    )
}

fn exe(functions: Vec<VmFunction>) -> Executable {
    Executable { functions, strings: vec!["no arm matched".into()], ..Default::default() }
}

fn run(exe: &Executable, name: &str, args: Vec<Value>) -> Result<Value, Trap> {
    verify(exe).expect("verifies");
    let kernels: KernelTable = vec![];
    Vm::new(exe, &kernels, VmConfig::default()).unwrap().invoke(name, args)
}

fn as_int(v: &Value) -> i64 {
    match v {
        Value::Scalar(s) => s.as_i64(),
        other => panic!("not a scalar: {other:?}"),
    }
}

#[test]
fn tail_recursive_loop_runs_ten_million_iterations_in_constant_space() {
    let e = exe(vec![count_loop()]);
    let v = run(&e, "count", vec![Value::Scalar(i32_imm(10_000_000)), Value::Scalar(i32_imm(0))]).unwrap();
    assert_eq!(as_int(&v), 10_000_000);
}

#[test]
fn deep_non_tail_recursion_uses_no_host_stack() {
    let e = exe(vec![count_loop(), depth()]);
    let v = run(&e, "depth", vec![Value::Scalar(i32_imm(1_000_000))]).unwrap();
    assert_eq!(as_int(&v), 1_000_000);
}

#[test]
fn recursion_limit_is_a_trap() {
    let e = exe(vec![count_loop(), depth()]);
    let kernels: KernelTable = vec![];
    let mut vm = Vm::new(&e, &kernels, VmConfig { max_call_depth: 1000, ..VmConfig::default() }).unwrap();
    let t = vm.invoke("depth", vec![Value::Scalar(i32_imm(5000))]).unwrap_err();
    assert_eq!(t.stack[0].function, "depth");
    assert!(t.message.contains("recursion deeper than 1000"), "{t}");
}

#[test]
fn closures_adts_and_refs() {
    use Instr::*;
    // add_captured(k, x) = k + x; main(x) = let f = closure(add_captured, [10]);
    //   let r = ref(f(x)); ref_write(r, (ref_read(r), 1)); match-like: GetField 0 of the tuple.
    let add = func(
        "add_captured",
        &["k", "x"],
        3,
        vec![Bin { op: BinOp::Add, dst: Reg(2), lhs: Reg(0), rhs: Reg(1) }, Ret { src: Reg(2) }],
    );
    let main = func(
        "main",
        &["x"],
        8,
        vec![
            LoadImm { dst: Reg(1), value: i32_imm(10) },
            AllocClosure { dst: Reg(2), func: FuncIdx(0), captured: vec![Reg(1)].into() },
            InvokeClosure { dst: Reg(3), closure: Reg(2), args: vec![Reg(0)].into() },
            RefNew { dst: Reg(4), value: Reg(3) },
            RefRead { dst: Reg(5), cell: Reg(4) },
            AllocADT { dst: Reg(6), tag: Imm(0), fields: vec![Reg(5), Reg(1)].into() },
            RefWrite { cell: Reg(4), value: Reg(6) },
            RefRead { dst: Reg(7), cell: Reg(4) },
            GetField { dst: Reg(7), obj: Reg(7), index: Imm(0) },
            Ret { src: Reg(7) },
        ],
    );
    let e = exe(vec![add, main]);
    assert_eq!(as_int(&run(&e, "main", vec![Value::Scalar(i32_imm(5))]).unwrap()), 15);
}

#[test]
fn faults_are_traps_not_panics() {
    use Instr::*;
    let bad_field = func(
        "bad",
        &["x"],
        2,
        vec![GetField { dst: Reg(1), obj: Reg(0), index: Imm(0) }, Ret { src: Reg(1) }],
    );
    let fatal = func("fatal", &[], 1, vec![Fatal { message: StrIdx(0) }]);
    // `pow` is for floats only (relay_devices::arith): on integers it is a fault.
    let int_pow = func(
        "int_pow",
        &["x"],
        2,
        vec![
            LoadImm { dst: Reg(1), value: i32_imm(0) },
            Bin { op: BinOp::Pow, dst: Reg(1), lhs: Reg(0), rhs: Reg(1) },
            Ret { src: Reg(1) },
        ],
    );
    let e = exe(vec![bad_field, fatal, int_pow]);
    let t = run(&e, "bad", vec![Value::Scalar(i32_imm(1))]).unwrap_err();
    assert_eq!((t.stack[0].function.as_str(), t.stack[0].pc), ("bad", 0));
    assert!(run(&e, "fatal", vec![]).unwrap_err().message.contains("no arm matched"));
    assert!(run(&e, "int_pow", vec![Value::Scalar(i32_imm(1))])
        .unwrap_err()
        .message
        .contains("not defined on int32"));
    assert!(run(&e, "missing", vec![]).is_err());
    assert!(run(&e, "bad", vec![]).unwrap_err().message.contains("takes 1 argument"));
}

#[test]
fn save_load_round_trip_and_corruption() {
    let mut e = exe(vec![count_loop(), depth()]);
    e.constants.push(relay_devices::Tensor::from_vec(vec![2], vec![1.5f32, -2.0]).unwrap());
    e.kernels.push(KernelDesc {
        op: "nn.conv2d".into(),
        attrs: vec![
            ("padding".into(), Attr::List(vec![Attr::Int(1), Attr::Int(1)])),
            ("data_layout".into(), Attr::Str("NCHW".into())),
        ],
        num_inputs: 2,
        num_outputs: 1,
        kernel: None,
    });
    let bytes = e.save();
    assert_eq!(Executable::load(&bytes).unwrap(), e);
    for cut in [0, 5, 12, bytes.len() / 2, bytes.len() - 1] {
        assert!(Executable::load(&bytes[..cut]).is_err(), "truncated at {cut}");
    }
    let mut flipped = bytes.clone();
    flipped[30] ^= 0x40;
    assert!(Executable::load(&flipped).is_err());
}

#[test]
fn verifier_rejects_bad_bytecode() {
    use Instr::*;
    let cases = vec![
        func("f", &["x"], 1, vec![Ret { src: Reg(3) }]),
        func("f", &["x"], 1, vec![Goto { target: Target(9) }]),
        func("f", &["x"], 1, vec![Move { dst: Reg(0), src: Reg(0) }]),
        func(
            "f",
            &["x"],
            1,
            vec![Invoke { dst: Reg(0), func: FuncIdx(0), args: vec![].into() }, Ret { src: Reg(0) }],
        ),
        func(
            "f",
            &["x"],
            1,
            vec![
                InvokePacked { kernel: KernelIdx(0), inputs: vec![].into(), outputs: vec![].into() },
                Ret { src: Reg(0) },
            ],
        ),
        func("f", &["x", "y"], 1, vec![Ret { src: Reg(0) }]),
    ];
    for f in cases {
        let e = exe(vec![f.clone()]);
        assert!(verify(&e).is_err(), "{f:?}");
        assert!(Executable::load(&e.save()).is_err());
    }
}
