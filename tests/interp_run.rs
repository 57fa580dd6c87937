//! The reference interpreter against the run goldens: every `// run:` and `// trap:` line of
//! `tests/relay/run/*.relay` (whose expectations `golden_run.rs` checks on the VM) must hold
//! through `relay::interp` too, with the file's `// max-call-depth:`. Results are compared
//! exactly (both run the reference kernels), except that a function value prints the name of
//! the function it runs, which lambda lifting chooses on the VM: any function value matches
//! any other.
//!
//! Each file is a test of its own (`cargo test --test interp_run -- run/closures`).
//!
//! Also here: the deep programs the interpreter must run without host recursion.

use common::directives::{parse_directives, Expect};
use relay::interp::Interpreter;
use std::path::Path;

mod common;

/// `<fn @NAME>` with the name dropped.
fn without_function_names(printed: &str) -> String {
    let mut out = String::new();
    let mut rest = printed;
    while let Some(i) = rest.find("<fn @") {
        out.push_str(&rest[..i]);
        out.push_str("<fn>");
        rest = rest[i..].find('>').map_or("", |j| &rest[i + j + 1..]);
    }
    out.push_str(rest);
    out
}

/// The problems of one file's calls through the interpreter.
fn check_file(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let d = parse_directives(&text)?;
    let mut interp = Interpreter::compile(&path.display().to_string(), &text).map_err(|e| e.to_string())?;
    if let Some(n) = d.max_call_depth {
        interp = interp.with_max_call_depth(n);
    }
    let exe = interp.signature();
    let mut problems = vec![];
    for c in &d.calls {
        let f = interp.function(&c.func).map_err(|e| e.to_string())?;
        let args = c.arguments(exe, f)?;
        let at = format!("line {} (@{})", c.line + 1, c.func);
        let outcome = match interp.invoke(&c.func, args) {
            Ok(v) => Ok(relay::text::to_text(exe, &f.ret_type, &v).map_err(|e| format!("{at}: {e}"))?),
            Err(relay::Error::Fault(fault)) => Err(fault.to_string()),
            Err(e) => return Err(format!("{at}: {e}")),
        };
        match (&c.expect, outcome) {
            (Expect::Value(want), Ok(got))
                if without_function_names(want) == without_function_names(&got) => {}
            (Expect::Value(want), Ok(got)) => problems.push(format!("{at}: expected `{want}`, got `{got}`")),
            (Expect::Value(want), Err(fault)) => {
                problems.push(format!("{at}: expected `{want}`, trapped: {fault}"))
            }
            (Expect::Trap(want), Err(fault)) if fault.contains(want.as_str()) => {}
            (Expect::Trap(want), Err(fault)) => {
                problems.push(format!("{at}: expected a trap with `{want}`, got: {fault}"))
            }
            (Expect::Trap(want), Ok(got)) => {
                problems.push(format!("{at}: expected a trap with `{want}`, got `{got}`"))
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn main() {
    let mut trials = common::golden::file_trials("run", 60, |path, _| check_file(path));
    for (name, test) in UNITS {
        trials.push(common::golden::unit(name, *test));
    }
    common::golden::run(trials);
}

/// The tests besides the goldens.
const UNITS: &[(&str, fn())] = &[
    (
        "function_names_are_ignored_in_printed_function_values",
        function_names_are_ignored_in_printed_function_values,
    ),
    ("a_million_deep_non_tail_recursion_runs", a_million_deep_non_tail_recursion_runs),
    ("a_hundred_thousand_deep_let_chain_runs", a_hundred_thousand_deep_let_chain_runs),
    ("faults_name_the_relay_call_stack", faults_name_the_relay_call_stack),
    ("closures_capture_values_and_refs_are_shared_cells", closures_capture_values_and_refs_are_shared_cells),
];

fn function_names_are_ignored_in_printed_function_values() {
    assert_eq!(without_function_names("(<fn @f_lifted_0>, 1)"), "(<fn>, 1)");
    assert_eq!(without_function_names("Cons(<fn @%k>, Nil)"), "Cons(<fn>, Nil)");
    assert_ne!(without_function_names("<fn @f>"), without_function_names("1"));
}

/// Runs `@main()` of `source` and prints the result.
fn run_main(source: &str) -> Result<String, String> {
    let interp = Interpreter::compile("t.relay", source).map_err(|e| e.to_string())?;
    let f = interp.function("main").map_err(|e| e.to_string())?;
    let v = interp.invoke("main", vec![]).map_err(|e| e.to_string())?;
    relay::text::to_text(interp.signature(), &f.ret_type, &v)
}

fn a_million_deep_non_tail_recursion_runs() {
    let source = "def @depth(%n: int32) -> int32 { if (%n == 0) { 0 } else { 1 + @depth(%n - 1) } }
                  def @main() -> int32 { @depth(1000000) }";
    assert_eq!(run_main(source).as_deref(), Ok("1000000"));
}

fn a_hundred_thousand_deep_let_chain_runs() {
    let mut source = String::from("def @main() -> int32 {\n  let %x0 = 0;\n");
    for i in 1..=100_000 {
        source.push_str(&format!("  let %x{i} = %x{} + 1;\n", i - 1));
    }
    source.push_str("  %x100000\n}\n");
    assert_eq!(run_main(&source).as_deref(), Ok("100000"));
}

fn faults_name_the_relay_call_stack() {
    let source = "def @inner(%xs: List[int32]) -> int32 { match? (%xs) { Cons(%x, _) => %x } }
                  def @main() -> int32 { 1 + @inner(Nil) }";
    let err = run_main(source).unwrap_err();
    assert!(err.contains("trap in `inner`"), "{err}");
    assert!(err.contains("\n  at @inner\n  at @main"), "{err}");
    assert!(err.contains("match?"), "{err}");
}

fn closures_capture_values_and_refs_are_shared_cells() {
    let source = "def @main() -> (int32, int32) {
                    let %cell = ref(1);
                    let %k = 10;
                    let %add_k = fn (%x: int32) -> int32 { %x + %k };
                    let %bump = fn () -> () { ref_write(%cell, %add_k(ref_read(%cell))) };
                    %bump();
                    %bump();
                    (ref_read(%cell), %add_k(5))
                  }";
    assert_eq!(run_main(source).as_deref(), Ok("(21, 15)"));
}
