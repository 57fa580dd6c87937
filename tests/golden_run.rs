//! Run golden files: every `tests/relay/run/*.relay` is compiled with the prelude (parse,
//! type inference, lowering passes, bytecode) at every opt-level — 0 (reference kernels), 1
//! (fused, JIT-compiled kernels), 2 (the default, Relay-level cleanup first) and 3 — and run
//! on the VM; the directives in its header comment say what must come out, at every level.
//!
//! The header is the run of `//` lines at the top of the file. In it:
//! - `// run: @f(ARGS) == RESULT` — calling `@f` on ARGS returns RESULT. ARGS are JSON values
//!   separated by commas, exactly what `relay-vm run --entry f --args '[ARGS]'` takes (so a
//!   `List[int32]` may be `[1, 2]`, an `int32` is `3`, a tensor nested arrays); RESULT is the
//!   value as `relay-vm run --format text` prints it (`Cons(1, Nil)`, `(1f, True)`,
//!   `float32[[1, 2], [3, 4]]`).
//! - `// trap: @f(ARGS): TEXT` — the call traps, and the trap's message (`trap in `g` at
//!   instruction N: ...`) contains TEXT.
//! - `// max-call-depth: N` — the file's calls run on a VM with this recursion limit.
//!
//! Every other header line describes the file; there must be at least one, and at least one
//! `run:` or `trap:` line. `RELAY_TEST_BLESS=1` rewrites the RESULT of each `run:` line from
//! the actual result (a call that traps is reported, not blessed). Check what it writes.

use common::directives::{parse_directives, Call, Directives, Expect, RUN};
use relay::vm::VmConfig;
use relay::Program;
use std::path::Path;

mod common;

/// The text of a call's result, or the trap message.
fn call(program: &Program, config: &VmConfig, c: &Call) -> Result<Result<String, String>, String> {
    let exe = program.executable();
    let f = program.function(&c.func).map_err(|e| e.to_string())?;
    let args = c.arguments(exe, f)?;
    let mut vm = program.vm_with(config.clone());
    match program.invoke(&mut vm, &c.func, args) {
        Ok(v) => relay::text::to_text(exe, &f.ret_type, &v)
            .map(Ok)
            .map_err(|e| format!("line {}: {e}", c.line + 1)),
        Err(relay::Error::Trap(t)) => Ok(Err(t.to_string())),
        Err(e) => Err(format!("line {}: {e}", c.line + 1)),
    }
}

/// Runs one file; returns its problems and, when blessing, the rewritten text.
fn check_file(path: &Path, bless: bool) -> (Vec<String>, Option<String>) {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return (vec![format!("cannot read: {e}")], None),
    };
    let d = match parse_directives(&text) {
        Ok(d) => d,
        Err(e) => return (vec![e], None),
    };
    let mut config = VmConfig::default();
    if let Some(n) = d.max_call_depth {
        config.max_call_depth = n;
    }
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut problems = vec![];
    let device = common::test_device();
    // On a device only fused kernels move, and the levels above 0 differ only on the host:
    // the default level covers the device.
    let levels: &[u8] = if device.is_opencl() { &[2] } else { &OPT_LEVELS };
    for &opt_level in levels {
        let program = match Program::builder()
            .source(path.display().to_string(), &text)
            .opt_level(opt_level)
            .device(device.clone())
            .build()
        {
            Ok(p) => p,
            Err(e) => {
                problems.push(format!("does not compile at opt-level {opt_level}:\n{e}"));
                continue;
            }
        };
        // Expectations are blessed from the reference kernels only.
        let bless = bless && opt_level == 0;
        check_calls(&program, &config, &d, opt_level, bless, &mut lines, &mut problems);
    }
    let blessed = bless.then(|| lines.join("\n") + "\n").filter(|b| *b != text);
    (problems, blessed)
}

/// Relative tolerance of float results at opt-level > 0 (the JIT's documented error bound
/// for its `exp`/`tanh`/`sigmoid` approximations is a few ulp).
const FLOAT_TOLERANCE: f64 = 1e-5;

/// Whether two printed values are equal up to [`FLOAT_TOLERANCE`] in their numbers.
fn close(want: &str, got: &str) -> bool {
    let split = |s: &str| -> Vec<String> {
        let mut parts = vec![];
        let mut cur = String::new();
        for ch in s.chars() {
            let numeric = ch.is_ascii_digit() || matches!(ch, '.' | '-' | 'e' | '+');
            if numeric
                != cur
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | 'e' | '+'))
                && !cur.is_empty()
            {
                parts.push(std::mem::take(&mut cur));
            }
            cur.push(ch);
        }
        parts.push(cur);
        parts
    };
    let (a, b) = (split(want), split(got));
    a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| match (x.parse::<f64>(), y.parse::<f64>()) {
            (Ok(x), Ok(y)) => (x - y).abs() <= FLOAT_TOLERANCE * x.abs().max(y.abs()).max(1.0),
            _ => x == y,
        })
}

/// The optimisation levels every file runs at.
const OPT_LEVELS: [u8; 4] = [0, 1, 2, 3];

/// Runs the calls of `d` on `program`, recording problems (or, when blessing, new results).
fn check_calls(
    program: &Program,
    config: &VmConfig,
    d: &Directives,
    opt_level: u8,
    bless: bool,
    lines: &mut [String],
    problems: &mut Vec<String>,
) {
    for c in &d.calls {
        let outcome = match call(program, config, c) {
            Ok(o) => o,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let at = format!("line {} (@{}, opt-level {opt_level})", c.line + 1, c.func);
        match (&c.expect, outcome) {
            (Expect::Value(want), Ok(got)) if *want == got => {}
            // JIT kernels approximate `exp`, `tanh`, ... and contract multiply-adds.
            (Expect::Value(want), Ok(got)) if opt_level > 0 && close(want, &got) => {}
            (Expect::Value(want), Ok(got)) => {
                if bless {
                    let args = &c.args[1..c.args.len() - 1];
                    lines[c.line] = format!("{RUN}@{}({args}) == {got}", c.func);
                } else {
                    problems.push(format!("{at}: expected `{want}`, got `{got}`"));
                }
            }
            (Expect::Value(want), Err(trap)) => {
                problems.push(format!("{at}: expected `{want}`, trapped: {trap}"))
            }
            (Expect::Trap(want), Err(trap)) if trap.contains(want.as_str()) => {}
            (Expect::Trap(want), Err(trap)) => {
                problems.push(format!("{at}: expected a trap with `{want}`, got: {trap}"))
            }
            (Expect::Trap(want), Ok(got)) => {
                problems.push(format!("{at}: expected a trap with `{want}`, got `{got}`"))
            }
        }
    }
}

fn main() {
    let bless = common::bless();
    let mut trials = common::golden::file_trials("run", 60, move |path, _| {
        let (mut problems, blessed) = check_file(path, bless);
        if let Some(new_text) = blessed {
            if let Err(e) = std::fs::write(path, new_text) {
                problems.push(format!("cannot bless: {e}"));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    });
    trials.push(common::golden::unit("directives_parse", directives_parse));
    trials.push(common::golden::unit(
        "trap_frames_point_at_their_expressions",
        trap_frames_point_at_their_expressions,
    ));
    common::golden::run(trials);
}

fn directives_parse() {
    let d = parse_directives(concat!(
        "// covers things\n",
        "// run: @main([1, \"a)\"], {\"con\": \"Nil\"}) == Cons(1, Nil)\n",
        "// trap: @f(): no arm\n",
        "// max-call-depth: 100\n",
        "def @main() { 1 }\n",
    ))
    .unwrap();
    assert_eq!(d.calls.len(), 2);
    assert_eq!(d.calls[0].args, "[[1, \"a)\"], {\"con\": \"Nil\"}]");
    assert!(matches!(&d.calls[0].expect, Expect::Value(v) if v == "Cons(1, Nil)"));
    assert!(matches!(&d.calls[1].expect, Expect::Trap(t) if t == "no arm"));
    assert_eq!(d.max_call_depth, Some(100));
    assert!(parse_directives("// run: @main(1 == 2\n").is_err());
    assert!(parse_directives("// only a description\n").is_err());
}

/// Each frame of the VM's trap in `run/trap_call_stack.relay` gives the source position of
/// its expression: the `match?` that fails, then each pending call, at every opt-level and
/// after the executable is saved and loaded again.
fn trap_frames_point_at_their_expressions() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/relay/run/trap_call_stack.relay");
    let text = std::fs::read_to_string(&path).unwrap();
    let name = path.display().to_string();
    let want: Vec<(String, String)> = [("pick", 10, 3), ("mid", 13, 7), ("main", 16, 12)]
        .iter()
        .map(|&(f, line, col)| (f.to_string(), format!("{name}:{line}:{col}")))
        .collect();
    for opt_level in OPT_LEVELS {
        let program = Program::builder().source(name.clone(), &text).opt_level(opt_level).build().unwrap();
        let loaded = Program::load(&program.save()).unwrap();
        for p in [&program, &loaded] {
            let Err(relay::Error::Trap(t)) = p.invoke(&mut p.vm(), "main", vec![]) else { panic!("no trap") };
            let frames: Vec<(String, String)> =
                t.stack.iter().map(|f| (f.function.clone(), f.span.clone())).collect();
            assert_eq!(frames, want, "opt-level {opt_level}:\n{t}");
            let (f, at) = &want[1];
            assert!(t.to_string().contains(&format!("\n  at @{f} ({at})\n")), "{t}");
        }
    }
}
