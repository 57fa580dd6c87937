//! Printer tests on modules built by hand (the round trip through the parser is tested in
//! `compiler/tests/roundtrip_prop.rs` and in `syntax` tests).

use super::*;
use crate::ir::{
    AttrValue, Attrs, ConstantData, ConstructorDef, Dim, ExprKind, Function, Literal, LiteralValue, MatchArm,
    Pattern, PatternKind, Span, TypeKind,
};
use relay_devices::DType;

#[derive(Default)]
struct Build {
    m: Module,
}

impl Build {
    fn e(&mut self, kind: ExprKind) -> ExprId {
        self.m.add_expr(kind, Span::default())
    }

    fn var(&mut self, name: &str, ty: Option<TypeId>) -> VarId {
        let s = self.m.symbols.intern(name);
        self.m.add_var(s, ty, Span::default())
    }

    fn use_var(&mut self, v: VarId) -> ExprId {
        self.e(ExprKind::Var(v))
    }

    fn op(&mut self, name: &str) -> ExprId {
        let s = self.m.symbols.intern(name);
        self.e(ExprKind::Op(s))
    }

    fn call(&mut self, callee: ExprId, args: Vec<ExprId>) -> ExprId {
        self.e(ExprKind::Call { callee, args, attrs: Attrs::default() })
    }

    fn int(&mut self, v: i64) -> ExprId {
        self.e(ExprKind::Literal(Literal { value: LiteralValue::Int(v), dtype: DType::I32 }))
    }

    fn tensor(&mut self, shape: Vec<Dim>) -> TypeId {
        self.m.types.intern(TypeKind::Tensor { shape, dtype: DType::F32 })
    }

    fn let_(&mut self, var: VarId, value: ExprId, body: ExprId) -> ExprId {
        self.e(ExprKind::Let { var, value, body })
    }

    fn def(&mut self, name: &str, params: Vec<VarId>, body: ExprId) {
        let name = self.m.symbols.intern(name);
        let func = Function { type_params: vec![], params, ret_type: None, body, attrs: Attrs::default() };
        self.m.add_function(GlobalFunction { name, func, span: Span::default() }).unwrap();
    }

    fn print(&self) -> String {
        print_module(&self.m, None)
    }
}

#[test]
fn prints_every_form() {
    let mut b = Build::default();
    let a_sym = b.m.symbols.intern("A");
    let a = b.m.add_type_param(a_sym, Span::default());
    let pa = b.m.types.intern(TypeKind::Param(a));
    let list_sym = b.m.symbols.intern("List");
    let list_a = b.m.types.intern(TypeKind::Adt { name: list_sym, args: vec![pa] });
    let cons = b.m.symbols.intern("Cons");
    let nil = b.m.symbols.intern("Nil");
    let def = TypeDef {
        name: list_sym,
        type_params: vec![a],
        constructors: vec![cons, nil],
        is_extern: false,
        span: Span::default(),
    };
    let ctor = |name, fields, tag| ConstructorDef { name, adt: list_sym, fields, tag, span: Span::default() };
    b.m.add_type_def(def, vec![ctor(cons, vec![pa, list_a], 0), ctor(nil, vec![], 1)]).unwrap();

    let t23 = b.tensor(vec![Dim::Known(2), Dim::Any]);
    let x = b.var("x", Some(t23));
    let xs = b.var("xs", Some(list_a));
    let xe = b.use_var(x);
    let conv = b.op("nn.conv2d");
    let pad = b.m.symbols.intern("padding");
    let layout = b.m.symbols.intern("data_layout");
    let eps = b.m.symbols.intern("eps");
    let none = b.m.symbols.intern("none");
    let attrs = Attrs(vec![
        (pad, AttrValue::List(vec![AttrValue::Int(1), AttrValue::Int(-1)])),
        (layout, AttrValue::Str("NC\"HW".into())),
        (eps, AttrValue::Float(1e-5)),
        (none, AttrValue::Null),
    ]);
    let c = b.e(ExprKind::Call { callee: conv, args: vec![xe, xe], attrs });
    let y = b.var("y", None);
    let one = b.e(ExprKind::Tuple(vec![c]));
    let proj = b.e(ExprKind::Proj { tuple: one, index: 0 });
    let h = b.var("h", None);
    let ph = b.m.add_pattern(Pattern { kind: PatternKind::Var(h), span: Span::default() });
    let wild = b.m.add_pattern(Pattern { kind: PatternKind::Wildcard, span: Span::default() });
    let pc = b.m.add_pattern(Pattern {
        kind: PatternKind::Constructor { name: cons, args: vec![ph, wild] },
        span: Span::default(),
    });
    let pn = b.m.add_pattern(Pattern {
        kind: PatternKind::Constructor { name: nil, args: vec![] },
        span: Span::default(),
    });
    let xs_e = b.use_var(xs);
    let he = b.use_var(h);
    let cell = b.e(ExprKind::RefNew(he));
    let read = b.e(ExprKind::RefRead(cell));
    let nil_e = b.e(ExprKind::Constructor(nil));
    let nil_call = b.call(nil_e, vec![]);
    let arms = vec![MatchArm { pattern: pc, body: read }, MatchArm { pattern: pn, body: nil_call }];
    let mat = b.e(ExprKind::Match { scrutinee: xs_e, arms, complete: false });
    let z = b.var("z", None);
    let ze = b.use_var(z);
    let prim = b.m.symbols.intern("Primitive");
    let func = Function {
        type_params: vec![],
        params: vec![z],
        ret_type: None,
        body: ze,
        attrs: Attrs(vec![(prim, AttrValue::Int(1))]),
    };
    let lam = b.e(ExprKind::Function(Box::new(func)));
    let cst = b.e(ExprKind::Constant(0));
    let applied = b.call(lam, vec![cst]);
    let t = b.e(ExprKind::Literal(Literal { value: LiteralValue::Bool(true), dtype: DType::BOOL }));
    let iff = b.e(ExprKind::If { cond: t, then_branch: mat, else_branch: applied });
    let w = b.var("w", None);
    let we = b.use_var(w);
    let unit = b.e(ExprKind::Tuple(vec![]));
    let write = b.e(ExprKind::RefWrite { cell: we, value: unit });
    let inner = b.let_(w, iff, write);
    let body = b.let_(y, proj, inner);
    let name = b.m.symbols.intern("main");
    let func = Function {
        type_params: vec![a],
        params: vec![x, xs],
        ret_type: Some(t23),
        body,
        attrs: Attrs::default(),
    };
    b.m.add_function(GlobalFunction { name, func, span: Span::default() }).unwrap();
    b.m.constants.push(ConstantData { dtype: DType::F32, shape: vec![2], data: vec![1.0, 0.5] });
    let expected = r#"#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}

def @main[A](%x: Tensor[(2, ?), float32], %xs: List[A]) -> Tensor[(2, ?), float32] {
  let %y = (nn.conv2d(%x, %x, padding=[1, -1], data_layout="NC\"HW", eps=1e-5f, none=None),).0;
  let %w = if (True) {
    match? (%xs) {
      Cons(%h, _) => {
        ref_read(ref(%h))
      },
      Nil => {
        Nil
      },
    }
  } else {
    (fn (%z, Primitive=1) {
      %z
    })(meta[relay.Constant][0])
  };
  ref_write(%w, ())
}
#[metadata]
{"relay.Constant": [
  {"dtype": "float32", "shape": [2], "data": [1.0,0.5]}
]}
"#;
    assert_eq!(b.print(), expected);
}

#[test]
fn shared_nodes_print_once_in_the_innermost_scope() {
    let mut b = Build::default();
    let x = b.var("x", None);
    let xe = b.use_var(x);
    let add = b.op("add");
    let mul = b.op("multiply");
    // A chain of 60 doublings: exponential as a tree, linear as a DAG.
    let mut e = xe;
    for _ in 0..60 {
        e = b.call(mul, vec![e, e]);
    }
    let inner = b.call(add, vec![xe, xe]);
    let twice = b.call(add, vec![inner, inner]);
    let c = b.var("c", None);
    let ce = b.use_var(c);
    let branch = b.e(ExprKind::If { cond: ce, then_branch: twice, else_branch: e });
    b.def("main", vec![x, c], branch);
    let text = b.print();
    assert!(text.len() < 10_000, "{text}");
    assert!(text.contains("  if (%c) {\n    %0 = add(%x, %x);\n    add(%0, %0)\n  } else {\n    %1 = multiply(%x, %x);\n    %2 = multiply(%1, %1);"), "{text}");
    assert!(text.contains("%59 = multiply(%58, %58);\n    multiply(%59, %59)\n  }"), "{text}");
}

#[test]
fn captured_names_are_renamed_and_free_vars_declared() {
    let mut b = Build::default();
    let outer = b.var("x", None);
    let inner = b.var("x", None);
    let hole = b.m.types.intern(TypeKind::Hole);
    let free = b.var("f", Some(hole));
    let add = b.op("add");
    let oe = b.use_var(outer);
    let ie = b.use_var(inner);
    let fe = b.use_var(free);
    let sum = b.call(add, vec![oe, ie]);
    let sum = b.call(add, vec![sum, fe]);
    let one = b.int(1);
    let shadowing = b.let_(inner, one, sum);
    // Plain shadowing with no capture keeps the name.
    let again = b.var("x", None);
    let ae = b.use_var(again);
    let body = b.let_(again, shadowing, ae);
    b.def("main", vec![outer], body);
    let text = b.print();
    let expected = "def @main(%x) {
  free_var %f: _;
  let %x = (
    let %x_1 = 1;
    add(add(%x, %x_1), %f)
  );
  %x
}
";
    assert!(text.ends_with(expected), "{text}");
}

#[test]
fn types_print_like_tvm() {
    let mut m = Module::default();
    let f32_ = m.types.intern(TypeKind::Tensor { shape: vec![], dtype: DType::F32 });
    let t = m.types.intern(TypeKind::Tensor { shape: vec![Dim::Known(2), Dim::Known(3)], dtype: DType::F32 });
    let one = m.types.intern(TypeKind::Tensor { shape: vec![Dim::Known(1)], dtype: DType::I8 });
    let tup = m.types.intern(TypeKind::Tuple(vec![one]));
    let f = m.types.intern(TypeKind::Func { type_params: vec![], params: vec![t, tup], ret: f32_ });
    let r = m.types.intern(TypeKind::Ref(f));
    assert_eq!(print_type(&m, t), "Tensor[(2, 3), float32]");
    assert_eq!(print_type(&m, r), "ref(fn (Tensor[(2, 3), float32], (Tensor[(1), int8],)) -> float32)");
    let unit = m.types.intern(TypeKind::Tuple(vec![]));
    assert_eq!(print_type(&m, unit), "()");
}

/// Runs `f` on a thread with the 2 MiB stack tests get by default.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().stack_size(2 << 20).spawn(f).unwrap().join().unwrap();
}

#[test]
fn deep_let_chain_prints_on_a_small_stack() {
    on_small_stack(|| {
        let mut b = Build::default();
        let mut vars = Vec::new();
        for i in 0..100_000 {
            vars.push(b.var(&format!("v{i}"), None));
        }
        let mut body = b.use_var(vars[vars.len() - 1]);
        for i in (0..vars.len()).rev() {
            let value = if i == 0 { b.int(0) } else { b.use_var(vars[i - 1]) };
            body = b.let_(vars[i], value, body);
        }
        b.def("main", vec![], body);
        let text = b.print();
        assert_eq!(text.lines().count(), 100_004);
        assert!(text.contains("\n  let %v99999 = %v99998;\n  %v99999\n}"));
    });
}

#[test]
fn long_constructor_nest_prints_on_a_small_stack() {
    on_small_stack(|| {
        let mut b = Build::default();
        let cons = b.m.symbols.intern("Cons");
        let nil = b.m.symbols.intern("Nil");
        let ce = b.e(ExprKind::Constructor(cons));
        let mut e = b.e(ExprKind::Constructor(nil));
        for i in 0..10_000 {
            let v = b.int(i);
            e = b.call(ce, vec![v, e]);
        }
        let print = print_expr(&b.m, e);
        assert!(print.starts_with("Cons(9999, Cons(9998, "));
        assert!(print.ends_with(&format!("Cons(0, Nil){}", ")".repeat(9_999))));
    });
}

/// Parses `text`, prints it and parses the print: the two parses are structurally equal and
/// printing the second gives the same text. Returns the printed text.
fn round_trip(text: &str) -> String {
    let parse = |name: &str, text: &str| {
        crate::syntax::parse_module(name, text).unwrap_or_else(|e| {
            let mut sources = crate::ir::SourceMap::default();
            sources.add(name, text);
            panic!("{}\n{text}", e.render(&sources, false))
        })
    };
    let m = parse("in.relay", text);
    let printed = print_module(&m, None);
    let back = parse("printed.relay", &printed);
    if let Err(diff) = crate::ir::structurally_equal(&m, None, &back, None) {
        panic!("{diff}\n{printed}");
    }
    assert_eq!(print_module(&back, None), printed);
    printed
}

#[test]
fn text_round_trips() {
    let cases = [
        // Shadowing, a recursive local function, a call of a projection.
        "def @main(%x: int32) { let %x = add(%x, 1); \
         let %f = fn (%n: int32) -> int32 { if (equal(%n, 0)) { %x } else { %f(subtract(%n, 1)) } }; \
         let %t = (%f,); %t.0(%x) }",
        // Projection chains, 1-tuples, unit, the projection of a call.
        "def @main(%t) { let %a = %t.0.1; let %b = ((%t,), ()).0.0; negative(%t).0 }",
        // Every literal form.
        "def @main() { (1, -5, 1i64, -128i8, 255u8, 7i16, 1.5f, 1e-7f, 2f16, -3f64, 0.1f, -0f, inff, -inff16, nanf, True, False) }",
        // Every attribute form.
        r#"def @main(%x) { nn.conv2d(%x, %x, padding=[1, -1], layout="NC\"HW\n", eps=1e-5f, big=1e300f64, flag=True, none=None, nested=[[], [1.5f]]) }"#,
        // ADTs, match and match?, a `let` as a call argument and as a `let` value.
        "type L[A] { C(A, L[A]), N, } extern type E[A] \
         def @main(%l: L[int32], %e: E[float32]) { \
           let %v = match? (%l) { C(%h, N) => %h, C(_, C(%a, _)) => let %b = add(%a, 1); %b, N => 0 }; \
           add(%v, (let %c = 2; %c)) }",
        // Function types with type parameters, references, annotations everywhere.
        "def @main[A](%f: fn [B](B) -> (A, B), %r: ref(Tensor[(?, 3), float32]), %s: (A,)) -> () { \
         let %u: () = ref_write(%r, ref_read(%r)); %u }",
    ];
    for text in cases {
        round_trip(text);
    }
}

#[test]
fn graph_bindings_round_trip_into_the_innermost_scope() {
    let printed = round_trip(
        "def @main(%x, %c) { %0 = add(%x, %x); %1 = multiply(%0, %0); \
         let %f = fn () { subtract(%1, %1) }; \
         if (%c) { %f() } else { (%0, %0) } }",
    );
    let expected = "def @main(%x, %c) {
  %0 = add(%x, %x);
  let %f = fn () {
    %1 = multiply(%0, %0);
    subtract(%1, %1)
  };
  if (%c) {
    %f()
  } else {
    (%0, %0)
  }
}
";
    assert!(printed.ends_with(expected), "{printed}");
}

#[test]
fn constants_are_renumbered_in_order_of_use() {
    let printed = round_trip(
        r#"def @main() { add(meta[relay.Constant][2], meta[relay.Constant][0]) }
        #[metadata]
        {"relay.Constant": [{"dtype": "int32", "shape": [2], "data": [1, 2]},
                            {"dtype": "bool", "shape": [], "data": [true]},
                            {"dtype": "float32", "shape": [], "data": [0.5]}]}"#,
    );
    assert!(printed.contains("add(meta[relay.Constant][0], meta[relay.Constant][1])"), "{printed}");
    assert!(printed.ends_with(
        "#[metadata]\n{\"relay.Constant\": [\n  {\"dtype\": \"float32\", \"shape\": [], \"data\": [0.5]},\n  \
         {\"dtype\": \"int32\", \"shape\": [2], \"data\": [1.0,2.0]}\n]}\n"
    ));
}

#[test]
fn deep_programs_round_trip_on_a_small_stack() {
    on_small_stack(|| {
        let mut text = String::from("def @main() {\n  let %x = 0;\n");
        for _ in 0..100_000 {
            text.push_str("  let %x = add(%x, 1);\n");
        }
        text.push_str("  %x\n}\n");
        round_trip(&text);
        let mut text = String::from("type L { C(int32, L), N } def @main() { ");
        text.push_str(&"C(1, ".repeat(10_000));
        text.push('N');
        text.push_str(&")".repeat(10_000));
        text.push_str(" }");
        round_trip(&text);
    });
}
