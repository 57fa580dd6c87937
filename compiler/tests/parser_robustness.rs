//! The front end must never panic or overflow the stack: deep nesting is parsed or rejected
//! with a diagnostic, and arbitrary input yields `Ok` or diagnostics whose spans lie in the
//! file. Every test body runs on a 2 MiB thread, the default size of a test thread.

use proptest::prelude::*;
use relay_compiler::diagnostics::CompileError;
use relay_compiler::ir::Module;
use relay_compiler::syntax::parse_module;

/// Runs `f` on a thread with a 2 MiB stack.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new().stack_size(2 << 20).spawn(f).unwrap().join().unwrap()
}

/// Parses `text`, checking that every diagnostic points into it and renders.
fn parse_checked(text: &str) -> Result<Module, CompileError> {
    let result = parse_module("fuzz.relay", text);
    if let Err(e) = &result {
        assert!(!e.diagnostics.is_empty());
        let mut sources = relay_compiler::ir::SourceMap::default();
        sources.add("fuzz.relay", text);
        for d in &e.diagnostics {
            for span in std::iter::once(&d.span).chain(d.labels.iter().map(|(s, _)| s)) {
                assert!(
                    span.lo <= span.hi && span.hi as usize <= text.len(),
                    "{d:?} in {} bytes",
                    text.len()
                );
                assert!(text.is_char_boundary(span.lo as usize) && text.is_char_boundary(span.hi as usize));
            }
        }
        e.render(&sources, false);
    }
    result
}

fn message(e: &CompileError) -> String {
    e.diagnostics.iter().map(|d| d.message.as_str()).collect::<Vec<_>>().join("\n")
}

#[test]
fn deep_let_chain() {
    on_small_stack(|| {
        let n = 100_000;
        let mut text = String::from("def @main() {\n  let %x0 = 0;\n");
        for i in 1..n {
            text += &format!("  let %x{i} = add(%x{}, 1);\n", i - 1);
        }
        text += &format!("  %x{}\n}}\n", n - 1);
        let m = parse_checked(&text).unwrap();
        assert!(m.exprs.len() > 3 * n);
    });
}

#[test]
fn deep_sequence_and_graph_bindings() {
    on_small_stack(|| {
        let n = 100_000;
        let mut text = String::from("def @main(%x) {\n  %0 = %x;\n");
        for i in 1..n {
            text += &format!("  %{i} = add(%{}, %x);\n  %{i};\n", i - 1);
        }
        text += &format!("  %{}\n}}\n", n - 1);
        parse_checked(&text).unwrap();
    });
}

#[test]
fn long_operator_chain() {
    on_small_stack(|| {
        let text = format!("def @main() {{ 1{} }}", " + 1 * 2".repeat(100_000));
        parse_checked(&text).unwrap();
        let text = format!("def @main() {{ {}1 }}", "-".repeat(100_000));
        parse_checked(&text).unwrap();
        let text = format!("def @main(%x) {{ {}%x }}", "- ".repeat(100_000));
        parse_checked(&text).unwrap();
    });
}

#[test]
fn nested_constructor_literal() {
    on_small_stack(|| {
        let n = 10_000;
        let mut text = String::from("type List[A] { Cons(A, List[A]), Nil }\ndef @main() {\n");
        for i in 0..n {
            text += &format!("Cons({i}, ");
        }
        text += "Nil";
        text += &")".repeat(n);
        text += "\n}\n";
        parse_checked(&text).unwrap();
    });
}

#[test]
fn nested_parentheses_types_patterns_and_attributes() {
    on_small_stack(|| {
        let n = 10_000;
        let parens = format!("def @main() {{ {}1{} }}", "(".repeat(n), ")".repeat(n));
        parse_checked(&parens).unwrap();
        let tuples = format!("def @main() {{ {}1{} }}", "(".repeat(n), ",)".repeat(n));
        parse_checked(&tuples).unwrap();
        let ty = format!("def @main(%x: {}int32{}) {{ %x }}", "(".repeat(n), ",)".repeat(n));
        parse_checked(&ty).unwrap();
        let fn_ty = format!("def @main(%x: {}int32) {{ %x }}", "fn () -> ".repeat(n));
        parse_checked(&fn_ty).unwrap();
        let pat = format!("def @main(%x) {{ match (%x) {{ {}_{} => 1 }} }}", "(".repeat(n), ")".repeat(n));
        parse_checked(&pat).unwrap();
        let attr = format!("def @main() {{ f(a={}1{}) }}", "[".repeat(n), "]".repeat(n));
        parse_checked(&attr).unwrap();
        let blocks = format!("def @main() {{ {}1{} }}", "{".repeat(n), "}".repeat(n));
        parse_checked(&blocks).unwrap();
        let fns = format!("def @main() {{ {}1{} }}", "fn () {".repeat(n), "}".repeat(n));
        parse_checked(&fns).unwrap();
    });
}

#[test]
fn nesting_beyond_the_limit_is_a_diagnostic() {
    on_small_stack(|| {
        let n = 100_001;
        let text = format!("def @main() {{ {}1{} }}", "(".repeat(n), ")".repeat(n));
        let err = parse_checked(&text).unwrap_err();
        assert!(message(&err).contains("nesting is too deep"), "{}", message(&err));
        let text = format!("def @main(%x: {}int32{}) {{ %x }}", "ref(".repeat(n), ")".repeat(n));
        let err = parse_checked(&text).unwrap_err();
        assert!(message(&err).contains("nesting is too deep"), "{}", message(&err));
    });
}

#[test]
fn unbalanced_input_is_a_diagnostic() {
    on_small_stack(|| {
        let text = "(".repeat(200_000);
        let err = parse_checked(&text).unwrap_err();
        assert!(message(&err).contains("unclosed delimiter"));
        assert!(parse_checked(&"}".repeat(1000)).is_err());
    });
}

#[test]
fn truncated_and_odd_inputs() {
    let cases = [
        "",
        "#[",
        "#[version",
        "#[version = ",
        "#[version = \"0.0.5\"",
        "#[metadata]",
        "#[metadata] {",
        "#[metadata]\n{\"relay.Constant\": [{\"dtype\": \"float32\", \"shape\": [1e30], \"data\": []}]}",
        "meta",
        "meta[",
        "meta[relay.Constant]",
        "meta[relay.Constant][99999999999]",
        "def",
        "def @f",
        "def @f(",
        "type",
        "type T",
        "type T {",
        "extern",
        "extern type",
        "extern type T[",
        "%",
        "@",
        "-",
        "--",
        "fn",
        "match",
        "match?",
        "1.",
        ".",
        "..1",
        "%0 = 1;",
        "%0 = 1; %0",
        "free_var",
        "free_var %x",
        "let",
        "let %x = 1;",
        "(",
        ")",
        "1 +",
        "if (True) { 1 }",
        "ref(",
        "\u{feff}1",
        "\"",
        "/*",
        "*/",
        "1e",
        "1e+",
        "99999999999999999999",
        "%99999999999",
        "@f(",
        "Cons(",
        "x.0",
        "1.0.0",
        "(1,).0.1.2",
        "Nil()()",
        "match (1) { }",
        "def @f[]() { 1 }",
        "def @f() -> { 1 }",
        "def @f(%x: Tensor[(-1), float32]) { %x }",
        "def @f(%x: Tensor[(), float32x0]) { %x }",
    ];
    on_small_stack(move || {
        for text in cases {
            let _ = parse_checked(text);
        }
    });
}

/// Fragments that lex as valid tokens, for token soups.
const TOKENS: &[&str] = &[
    "def",
    "@main",
    "@f",
    "type",
    "extern",
    "fn",
    "let",
    "if",
    "else",
    "match",
    "match?",
    "ref",
    "ref_read",
    "ref_write",
    "free_var",
    "True",
    "False",
    "_",
    "%x",
    "%y",
    "%0",
    "%1",
    "List",
    "Cons",
    "Nil",
    "Tensor",
    "float32",
    "int8",
    "add",
    "nn.conv2d",
    "meta",
    "relay.Constant",
    "1",
    "-2",
    "1.5f",
    "1i64",
    "inff",
    "\"s\"",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ".",
    ";",
    ":",
    "=",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "?",
    "->",
    "=>",
    "#[version = \"0.0.5\"]",
    "#[metadata]",
    "None",
    "Primitive=1",
    "/* c */",
    "// c\n",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..60).prop_map(|ts| ts.join(" "))
}

/// Mostly balanced soups reach deeper into the parser than random ones.
fn balanced_soup() -> impl Strategy<Value = String> {
    (token_soup(), token_soup(), token_soup())
        .prop_map(|(a, b, c)| format!("def @main(%x, %y) {{ {a} ({b}) [{c}] }}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let _ = on_small_stack(move || parse_checked(&text).is_ok());
    }

    #[test]
    fn arbitrary_strings(text in "\\PC{0,200}") {
        let _ = on_small_stack(move || parse_checked(&text).is_ok());
    }

    #[test]
    fn token_soups(text in token_soup()) {
        let _ = on_small_stack(move || parse_checked(&text).is_ok());
    }

    #[test]
    fn balanced_token_soups(text in balanced_soup()) {
        let _ = on_small_stack(move || parse_checked(&text).is_ok());
    }
}
