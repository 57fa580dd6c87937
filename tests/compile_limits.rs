//! Depth limits of every stage, at the limit and one past it (issue 17). The parser accepts
//! nesting up to `MAX_NESTING` levels and rejects deeper programs with a diagnostic; every
//! later stage (type inference, the passes, bytecode emission, the printer, the VM) must then
//! handle the deepest accepted program on a 2 MiB thread. JSON input nests up to
//! `MAX_JSON_DEPTH` levels: reading it into VM values and dropping it must not overflow either.

use relay::batch::{parse_input_line, MAX_JSON_DEPTH};
use relay::compiler::syntax::MAX_NESTING;
use relay::vm::Value;
use relay::{scalar, Program};

/// Runs `f` on a thread with a 2 MiB stack (a test thread's default size).
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let handle = std::thread::Builder::new().stack_size(2 << 20).spawn(f).expect("spawn");
    handle.join().unwrap_or_else(|_| panic!("the thread panicked"))
}

/// `@main(%x)`: `arms` nested `if`s, the `i`-th returning `i` when `%x` is `i`. The
/// function body, each `else` block and each condition count one nesting level, so the
/// deepest accepted chain has `MAX_NESTING - 2` arms.
fn else_if_chain(arms: u32) -> String {
    let mut text = String::from("def @main(%x: int32) -> int32 {\n");
    for i in 0..arms {
        text.push_str(&format!("if (equal(%x, {i})) {{ {i} }} else {{\n"));
    }
    text.push_str("-1");
    text.push_str(&"}".repeat(arms as usize));
    text.push_str("\n}\n");
    text
}

/// `@main(%x)`: `levels` nested `match`es on `%x`, the innermost `Some` arm returning
/// `levels`: each arm body counts one level (and the innermost scrutinee one).
fn nested_matches(levels: u32) -> String {
    let mut text = String::from("def @main(%x: Option[int32]) -> int32 {\n");
    for _ in 0..levels {
        text.push_str("match (%x) { Some(%y) => ");
    }
    text.push_str(&levels.to_string());
    text.push_str(&", None => 0 }".repeat(levels as usize));
    text.push_str("\n}\n");
    text
}

/// Compiles `text` (at the default opt-level) and runs `@main(arg(program))`, returning the
/// int32 result.
fn compile_and_run(
    text: &str,
    arg: impl FnOnce(&Program) -> Result<Value, relay::Error>,
) -> Result<i64, String> {
    let program = Program::builder().source("deep.relay", text).build().map_err(|e| e.to_string())?;
    let arg = arg(&program).map_err(|e| e.to_string())?;
    let mut vm = program.vm();
    let v = program.invoke(&mut vm, "main", vec![arg]).map_err(|e| e.to_string())?;
    let f = program.function("main").map_err(|e| e.to_string())?;
    let out = relay::json::to_json(program.executable(), &f.ret_type, &v)?;
    let value: serde_json::Value = serde_json::from_str(&out).map_err(|e| e.to_string())?;
    value["data"][0].as_i64().ok_or(out)
}

fn too_deep(result: Result<impl std::fmt::Debug, String>) -> bool {
    matches!(&result, Err(e) if e.contains("nesting is too deep"))
}

/// Nesting that overflowed bytecode emission on an 8 MiB main thread before it was guarded
/// (4,700 `match`es, 16,000 `if`s), here on a 2 MiB thread; fast enough for every test run.
const DEEP: u32 = 20_000;

#[test]
fn deep_if_and_match_nesting_compiles_and_runs_on_a_small_stack() {
    let last = DEEP as i32 - 1;
    let result = on_small_stack(move || compile_and_run(&else_if_chain(DEEP), |_| Ok(scalar(last))));
    assert_eq!(result, Ok(i64::from(last)));
    let some = |p: &Program| p.constructor("Some", vec![scalar(7i32)]);
    let result = on_small_stack(move || compile_and_run(&nested_matches(DEEP / 4), some));
    assert_eq!(result, Ok(i64::from(DEEP / 4)));
}

// At the limit itself a debug build takes minutes: `cargo test --release --test compile_limits --
// --ignored`.
#[test]
#[ignore = "minutes in a debug build; run with --release"]
fn an_else_if_chain_at_the_nesting_limit_compiles_and_runs() {
    let arms = MAX_NESTING - 2;
    let last = arms as i32 - 1;
    let result = on_small_stack(move || compile_and_run(&else_if_chain(arms), |_| Ok(scalar(last))));
    assert_eq!(result, Ok(i64::from(last)));
    let past = on_small_stack(move || compile_and_run(&else_if_chain(arms + 1), |_| Ok(scalar(0i32))));
    assert!(too_deep(past.clone()), "{past:?}");
}

#[test]
#[ignore = "minutes in a debug build; run with --release"]
fn nested_matches_at_the_nesting_limit_compile_and_run() {
    let levels = MAX_NESTING - 2;
    let some = |p: &Program| p.constructor("Some", vec![scalar(7i32)]);
    let result = on_small_stack(move || compile_and_run(&nested_matches(levels), some));
    assert_eq!(result, Ok(i64::from(levels)));
    let past = on_small_stack(move || compile_and_run(&nested_matches(levels + 1), some));
    assert!(too_deep(past.clone()), "{past:?}");
}

#[test]
fn the_printer_output_is_linear_in_depth() {
    let text = else_if_chain(MAX_NESTING - 2);
    let printed = on_small_stack(move || {
        let (module, file) = relay::parse("deep.relay", &text).map_err(|e| e.to_string())?;
        Ok::<_, String>((text.len(), relay::compiler::syntax::printer::print_module(&module, Some(file))))
    });
    let (input, printed) = printed.expect("parses");
    // Each level prints on three lines whose indentation stops at `MAX_INDENT` levels: without
    // the cap this would be ~10 GB.
    let indent = 2 * relay::compiler::syntax::printer::MAX_INDENT;
    assert!(printed.len() < 4 * input + 3 * indent * MAX_NESTING as usize, "{} bytes", printed.len());
}

/// An input line `[l]` where `l` is a `List[int32]` of `n` elements in the constructor form,
/// `{"con": "Cons", "fields": [i, ...]}`: two JSON nesting levels per element plus two for
/// the line's array and the last `fields`.
fn deep_list_line(n: usize) -> String {
    let mut line = String::from("[");
    for i in 0..n {
        line.push_str(&format!("{{\"con\":\"Cons\",\"fields\":[{i},"));
    }
    line.push_str("{\"con\":\"Nil\"}");
    line.push_str(&"]}".repeat(n));
    line.push(']');
    line
}

#[test]
fn json_input_at_the_depth_limit_reads_and_drops() {
    let text = "def @main(%l: List[int32]) -> int32 { @length(%l) }";
    let program = Program::builder().source("len.relay", text).build().expect("compiles");
    let elements = (MAX_JSON_DEPTH - 2) / 2;
    let (line, past) = (deep_list_line(elements), deep_list_line(elements + 1));
    let result = on_small_stack(move || {
        let input = parse_input_line(&line)?;
        let f = program.function("main").map_err(|e| e.to_string())?;
        let value = relay::json::from_json(program.executable(), &f.param_types[0], &input.args[0])?;
        let mut vm = program.vm();
        let n = program.invoke(&mut vm, "main", vec![value]).map_err(|e| e.to_string())?;
        Ok::<_, String>(format!("{n:?}"))
    });
    let result = result.expect("reads, runs and drops");
    assert!(result.contains(&elements.to_string()), "{result}");
    let past = on_small_stack(move || parse_input_line(&past).map(|_| ()));
    assert!(matches!(&past, Err(e) if e.contains("nested")), "{past:?}");
}

#[test]
fn a_deep_object_of_unknown_keys_drops_without_recursion() {
    let depth = MAX_JSON_DEPTH - 1;
    let line = format!("{{\"args\": [], \"note\": {}1{}}}", "[".repeat(depth - 1), "]".repeat(depth - 1));
    let result = on_small_stack(move || parse_input_line(&line).map(|l| l.args.len()));
    assert_eq!(result, Ok(0));
}
