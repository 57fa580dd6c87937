//! Parser unit tests: expressions are checked through a compact S-expression rendering.

use crate::ir::{
    AttrValue, Dim, ExprId, ExprKind, LiteralValue, Module, PatId, PatternKind, TypeId, TypeKind,
};
use crate::syntax::parse_module;
use relay_devices::DType;

fn parse(text: &str) -> Module {
    match parse_module("t.relay", text) {
        Ok(m) => m,
        Err(e) => {
            let mut sources = crate::ir::SourceMap::default();
            sources.add("t.relay", text);
            panic!("{}", e.render(&sources, false))
        }
    }
}

/// The error messages of a text that must not parse.
fn errors(text: &str) -> Vec<String> {
    match parse_module("t.relay", text) {
        Ok(_) => panic!("parsed: {text}"),
        Err(e) => e.diagnostics.iter().map(|d| d.message.clone()).collect(),
    }
}

fn body(m: &Module, name: &str) -> ExprId {
    m.function_by_name(name).unwrap().func.body
}

/// `@main`'s body as an S-expression.
fn main_sexp(text: &str) -> String {
    let m = parse(text);
    show(&m, body(&m, "main"))
}

fn show(m: &Module, e: ExprId) -> String {
    let list = |items: &[ExprId]| items.iter().map(|&a| show(m, a)).collect::<Vec<_>>().join(" ");
    match &m.expr(e).kind {
        ExprKind::Var(v) => format!("%{}#{}", m.name(m.var(*v).name), v.0),
        ExprKind::Global(g) => format!("@{}", m.name(*g)),
        ExprKind::Constructor(c) => format!("ctor:{}", m.name(*c)),
        ExprKind::Op(o) => m.name(*o).to_string(),
        ExprKind::Literal(l) => match l.value {
            LiteralValue::Int(i) => format!("{i}:{}", l.dtype),
            LiteralValue::Float(f) => format!("{f}:{}", l.dtype),
            LiteralValue::Bool(b) => format!("{b}"),
        },
        ExprKind::Constant(i) => format!("const{i}"),
        ExprKind::Tuple(fs) => format!("(tuple {})", list(fs)).replace(" )", ")"),
        ExprKind::Proj { tuple, index } => format!("{}.{index}", show(m, *tuple)),
        ExprKind::Call { callee, args, attrs } => {
            let mut s = format!("({}", show(m, *callee));
            for &a in args {
                s += &format!(" {}", show(m, a));
            }
            for (k, v) in &attrs.0 {
                s += &format!(" {}={v:?}", m.name(*k));
            }
            s + ")"
        }
        ExprKind::Let { var, value, body } => {
            format!("(let %{}#{} {} {})", m.name(m.var(*var).name), var.0, show(m, *value), show(m, *body))
        }
        ExprKind::If { cond, then_branch, else_branch } => {
            format!("(if {} {} {})", show(m, *cond), show(m, *then_branch), show(m, *else_branch))
        }
        ExprKind::Match { scrutinee, arms, complete } => {
            let arms: Vec<_> =
                arms.iter().map(|a| format!("[{} {}]", show_pat(m, a.pattern), show(m, a.body))).collect();
            format!(
                "({} {} {})",
                if *complete { "match" } else { "match?" },
                show(m, *scrutinee),
                arms.join(" ")
            )
        }
        ExprKind::Function(f) => {
            let params: Vec<_> =
                f.params.iter().map(|p| format!("%{}#{}", m.name(m.var(*p).name), p.0)).collect();
            format!("(fn [{}] {})", params.join(" "), show(m, f.body))
        }
        ExprKind::RefNew(e) => format!("(ref {})", show(m, *e)),
        ExprKind::RefRead(e) => format!("(ref_read {})", show(m, *e)),
        ExprKind::RefWrite { cell, value } => format!("(ref_write {} {})", show(m, *cell), show(m, *value)),
    }
}

fn show_pat(m: &Module, p: PatId) -> String {
    match &m.pattern(p).kind {
        PatternKind::Wildcard => "_".into(),
        PatternKind::Var(v) => format!("%{}#{}", m.name(m.var(*v).name), v.0),
        PatternKind::Constructor { name, args } => {
            let args: Vec<_> = args.iter().map(|&a| show_pat(m, a)).collect();
            format!("{}({})", m.name(*name), args.join(" "))
        }
        PatternKind::Tuple(ps) => {
            let ps: Vec<_> = ps.iter().map(|&a| show_pat(m, a)).collect();
            format!("<{}>", ps.join(" "))
        }
    }
}

fn param_type(m: &Module, func: &str, i: usize) -> TypeKind {
    let f = &m.function_by_name(func).unwrap().func;
    m.types.kind(m.var(f.params[i]).ty.unwrap()).clone()
}

#[test]
fn precedence_and_associativity() {
    assert_eq!(main_sexp("1 + 2 * 3"), "(add 1:int32 (multiply 2:int32 3:int32))");
    assert_eq!(main_sexp("1 - 2 - 3"), "(subtract (subtract 1:int32 2:int32) 3:int32)");
    assert_eq!(main_sexp("8 / 4 / 2"), "(divide (divide 8:int32 4:int32) 2:int32)");
    assert_eq!(
        main_sexp("1 + 2 < 3 == 4 >= 5"),
        "(equal (less (add 1:int32 2:int32) 3:int32) (greater_equal 4:int32 5:int32))"
    );
    assert_eq!(
        main_sexp("1 != 2 <= 3 > 4"),
        "(not_equal 1:int32 (greater (less_equal 2:int32 3:int32) 4:int32))"
    );
    assert_eq!(main_sexp("(1 + 2) * 3"), "(multiply (add 1:int32 2:int32) 3:int32)");
}

#[test]
fn prefix_minus() {
    assert_eq!(main_sexp("-5"), "-5:int32");
    assert_eq!(main_sexp("-inff"), "-inf:float32");
    assert_eq!(main_sexp("-1.5f"), "-1.5:float32");
    assert_eq!(main_sexp("- -2"), "2:int32");
    assert_eq!(main_sexp("2-1"), "(subtract 2:int32 1:int32)");
    assert_eq!(main_sexp("free_var %x; -%x * 2"), "(multiply (negative %x#0) 2:int32)");
    assert_eq!(main_sexp("-(1)"), "(negative 1:int32)");
    assert_eq!(main_sexp("-2147483648"), "-2147483648:int32");
    assert_eq!(main_sexp("2147483648"), "2147483648:int64");
}

#[test]
fn literal_forms() {
    let cases = [
        ("1", "1:int32"),
        ("1i64", "1:int64"),
        ("1i16", "1:int16"),
        ("1i8", "1:int8"),
        ("3u8", "3:uint8"),
        ("1f", "1:float32"),
        ("1.5f", "1.5:float32"),
        ("1.5", "1.5:float32"),
        ("1e-3f", "0.001:float32"),
        ("2f16", "2:float16"),
        ("3f64", "3:float64"),
        ("inff", "inf:float32"),
        ("True", "true"),
        ("False", "false"),
    ];
    for (text, want) in cases {
        assert_eq!(main_sexp(text), want, "{text}");
    }
    assert!(errors("def @main() { 300i8 }")[0].contains("does not fit in int8"));
    assert!(errors("def @main() { 1e39f }")[0].contains("does not fit in float32"));
}

#[test]
fn projections_and_calls_chain() {
    assert_eq!(main_sexp("free_var %x; %x.0.1"), "%x#0.0.1");
    assert_eq!(main_sexp("free_var %f; %f(1)(2).0"), "((%f#0 1:int32) 2:int32).0");
    assert_eq!(main_sexp("(1, (2, 3)).1.0"), "(tuple 1:int32 (tuple 2:int32 3:int32)).1.0");
    assert_eq!(main_sexp("(1,)"), "(tuple 1:int32)");
    assert_eq!(main_sexp("()"), "(tuple)");
    assert_eq!(main_sexp("(1)"), "1:int32");
}

#[test]
fn let_scoping_and_shadowing() {
    assert_eq!(
        main_sexp("let %x = 1; let %x = %x + 1; %x"),
        "(let %x#0 1:int32 (let %x#1 (add %x#0 1:int32) %x#1))"
    );
    // A `fn` literal on the right sees its own variable; anything else sees the outer one.
    assert_eq!(main_sexp("let %f = fn (%n) { %f(%n) }; %f"), "(let %f#0 (fn [%n#1] (%f#0 %n#1)) %f#0)");
    assert!(errors("def @main() { let %g = fn () { %g }(); %g }")[0].contains("undeclared variable `%g`"));
    assert_eq!(main_sexp("1; 2"), "(let %_#0 1:int32 2:int32)");
    // Bindings do not leak out of parentheses or blocks.
    assert!(errors("def @main() { (let %y = 1; %y); %y }")[0].contains("undeclared variable `%y`"));
    assert!(errors("def @main() { let %x: int32 = 1; %y }")[0].contains("undeclared variable `%y`"));
}

#[test]
fn graph_bindings_share_nodes_and_are_per_function() {
    let m = parse("def @main(%x) { %0 = add(%x, %x); %1 = fn () { %0 }; (%0, %1) }");
    let ExprKind::Tuple(fields) = &m.expr(body(&m, "main")).kind else { panic!() };
    let ExprKind::Function(f) = &m.expr(fields[1]).kind else { panic!() };
    assert_eq!(f.body, fields[0]);
    let e = errors("def @f() { %0 = 1; %0 }\ndef @g() { %0 }");
    assert_eq!(e, vec!["undefined graph variable `%0`".to_string()]);
}

#[test]
fn functions_types_and_attributes() {
    let m = parse(
        "def @f[A, B](%g: fn (A) -> B, %p0: Tensor[(1, ?), float32], %t: (int8, ()), %r: ref(A), \
         %h: fn [C](C) -> C, %s: float32x4, %u: _, Primitive=1, Compiler=\"x\") -> Tensor[(), bool] { %g }",
    );
    let f = &m.function_by_name("f").unwrap().func;
    assert_eq!(f.type_params.len(), 2);
    assert_eq!(m.attr(&f.attrs, "Primitive"), Some(&AttrValue::Int(1)));
    assert_eq!(m.attr(&f.attrs, "Compiler"), Some(&AttrValue::Str("x".into())));
    assert!(matches!(param_type(&m, "f", 0), TypeKind::Func { ref params, .. } if params.len() == 1));
    assert_eq!(
        param_type(&m, "f", 1),
        TypeKind::Tensor { shape: vec![Dim::Known(1), Dim::Any], dtype: DType::F32 }
    );
    let TypeKind::Tuple(fs) = param_type(&m, "f", 2) else { panic!() };
    assert_eq!(m.types.kind(fs[1]), &TypeKind::Tuple(vec![]));
    assert!(matches!(param_type(&m, "f", 3), TypeKind::Ref(_)));
    assert!(
        matches!(param_type(&m, "f", 4), TypeKind::Func { ref type_params, .. } if type_params.len() == 1)
    );
    assert!(matches!(param_type(&m, "f", 5), TypeKind::Tensor { ref shape, .. } if shape.is_empty()));
    assert_eq!(param_type(&m, "f", 6), TypeKind::Hole);
    let ret: TypeId = f.ret_type.unwrap();
    assert_eq!(m.types.kind(ret), &TypeKind::Tensor { shape: vec![], dtype: DType::BOOL });
}

#[test]
fn call_attributes() {
    assert_eq!(
        main_sexp("free_var %x; nn.conv2d(%x, %x, padding=[1, -1], eps=1e-05f, layout=\"NCHW\", axis=None, k=(2, 3),)"),
        "(nn.conv2d %x#0 %x#0 padding=List([Int(1), Int(-1)]) eps=Float(1e-5) layout=Str(\"NCHW\") axis=Null \
         k=List([Int(2), Int(3)]))"
    );
    assert!(errors("def @main(%x) { f(axis=1, %x) }")[0].contains("positional arguments come first"));
    assert!(errors("def @main(%x) { f(%x, a=1, a=2) }")[0].contains("duplicate attribute `a`"));
}

#[test]
fn adts_constructors_and_match() {
    let text = "type List[A] { Cons(A, List[A]), Nil, }
        def @main(%l: List[int32]) {
          match? (%l) { Cons(%h, _) => %h, Nil => Cons(1, Nil), (%a) => %a, }
        }";
    assert_eq!(
        main_sexp(text),
        "(match? %l#0 [Cons(%h#1 _) %h#1] [Nil() (ctor:Cons 1:int32 (ctor:Nil))] [<%a#2> %a#2])"
    );
    // `Nil` and `Nil()` are the same call; types may be defined after use.
    assert_eq!(main_sexp("def @main() { (Nil, Nil()) }\ntype T { Nil }"), "(tuple (ctor:Nil) (ctor:Nil))");
    let m = parse("extern type Storage\ndef @f(%s: Storage) { %s }");
    assert!(m.type_def(m.symbols.get("Storage").unwrap()).unwrap().is_extern);
}

#[test]
fn operators_stay_ops() {
    assert_eq!(main_sexp("add(1, 2)"), "(add 1:int32 2:int32)");
    assert_eq!(
        main_sexp("ref_write(ref(1), ref_read(ref(2)))"),
        "(ref_write (ref 1:int32) (ref_read (ref 2:int32)))"
    );
}

#[test]
fn if_and_blocks() {
    assert_eq!(
        main_sexp("if (True) { 1 } else { let %y = 2; %y }"),
        "(if true 1:int32 (let %y#0 2:int32 %y#0))"
    );
}

#[test]
fn bare_expression_becomes_main_with_free_vars() {
    let m = parse("def @id(%x) { %x }\nfree_var %a: float32; free_var %b; @id(%a) + %b");
    let main = &m.function_by_name("main").unwrap().func;
    let names: Vec<_> = main.params.iter().map(|&p| m.name(m.var(p).name)).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(errors("def @main() { 1 }\n2")[0].contains("already defined"));
    assert!(errors("def @f() { free_var %x; %x }")[0].contains("only allowed in a top-level expression"));
}

#[test]
fn metadata_constants() {
    let text = "#[version = \"0.0.5\"]\ndef @main() { (meta[relay.Constant][1], meta[relay.Constant][0]) }\n\
                #[metadata]\n{\"relay.Constant\": [{\"dtype\": \"float32\", \"shape\": [2], \"data\": [1, 2]}, \
                {\"dtype\": \"int64\", \"shape\": [], \"data\": [7]}]}";
    let m = parse(text);
    assert_eq!(show(&m, body(&m, "main")), "(tuple const1 const0)");
    assert_eq!(m.constants[1].dtype, DType::I64);
    assert!(errors("def @main() { meta[relay.Constant][0] }")[0].contains("the file has none"));
    assert!(
        errors("#[version = \"0.0.4\"]\ndef @main() { 1 }")[0].contains("unsupported text format version")
    );
}

#[test]
fn several_errors_are_reported() {
    let e = errors("def @f() { 1 + }\ndef @g() { %nope }\ndef @h() { @missing() }");
    assert_eq!(e.len(), 3, "{e:?}");
}

#[test]
fn comments_are_ignored() {
    assert_eq!(main_sexp("/* a /* nested */ b */ 1 // trailing\n"), "1:int32");
}

#[test]
fn user_file_sees_the_prelude() {
    let prelude = "type List[A] { Cons(A, List[A]), Nil }\ndef @id[A](%x: A) -> A { %x }";
    let (m, file) =
        crate::syntax::parse_with_prelude(prelude, "user.relay", "def @main() { @id(Cons(1, Nil)) }")
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.0, 1);
    assert_eq!(show(&m, body(&m, "main")), "(@id (ctor:Cons 1:int32 (ctor:Nil)))");
    // The user's `@id` shadows the prelude's.
    let (m, _) = crate::syntax::parse_with_prelude(prelude, "user.relay", "def @id() { 1 }")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(show(&m, body(&m, "id")), "1:int32");
    let err = crate::syntax::parse_with_prelude(prelude, "user.relay", "def @f() { 1 }\ndef @f() { 2 }")
        .unwrap_err();
    assert_eq!(err.diagnostics.len(), 1);
    assert_eq!(err.diagnostics[0].span.file.0, 1);
    let err = crate::syntax::parse_with_prelude("def @broken( {", "user.relay", "1").unwrap_err();
    assert_eq!(err.diagnostics[0].span.file.0, 0);
}

#[test]
fn calling_a_graph_binding_of_a_nullary_constructor_calls_the_value() {
    let m = crate::syntax::parse_module("t.relay", "type T { C }\ndef @main() { %0 = C; %0(1) }\n").unwrap();
    let calls_of_calls = m
        .exprs
        .iter()
        .filter(|e| matches!(&e.kind, ExprKind::Call { callee, .. } if matches!(m.expr(*callee).kind, ExprKind::Call { .. })))
        .count();
    assert_eq!(calls_of_calls, 1, "`%0(1)` must call the value `C()`");
}
