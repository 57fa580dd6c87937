//! The `relay-vm` binary end to end: `run` (JSON and text output, `--args`, `--input`,
//! `--params`, executables, `--executor interp`, `-j`), `compile`, `disasm`, `check`, `fmt`, `opt`, numeric
//! option validation, and the exit codes 0 (success), 1 (compile error), 2 (trap, the memory
//! limit and the timeout included), 3 (bad command line or input), 130 (SIGINT during
//! `run --input`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_relay-vm");

/// A scratch directory for one test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("relay-vm-cli-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, contents).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn relay_vm(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts the exit code, showing stdout and stderr on failure; returns stdout.
fn expect(out: &Output, code: i32) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(code), "stdout:\n{stdout}\nstderr:\n{stderr}");
    stdout
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

const SUM: &str = "def @main(%xs: List[int32], %k: int32) { (@sum(%xs) * %k, Cons(%k, Nil)) }\n";
const DIV: &str = "def @main(%a: int32, %b: int32) -> int32 { %a / %b }\n";
/// Traps on an input of other than four elements.
const RESHAPE: &str = "def @main(%x: Tensor[(?), float32]) { reshape(%x, newshape=[2, 2]) }\n";

#[test]
fn run_prints_json_and_text() {
    let s = Scratch::new("formats");
    let f = s.file("sum.relay", SUM);
    let out = relay_vm(&["run", path(&f), "--args", "[[1, 2, 3], 2]"]);
    assert_eq!(expect(&out, 0), concat!(r#"[{"dtype":"int32","shape":[],"data":[12]},[2]]"#, "\n"));
    let out = relay_vm(&["run", path(&f), "--args", "[[1, 2, 3], 2]", "--format", "text"]);
    assert_eq!(expect(&out, 0), "(12, Cons(2, Nil))\n");
}

#[test]
fn run_without_parameters_and_with_another_entry() {
    let s = Scratch::new("entry");
    let f = s.file(
        "e.relay",
        "def @main() { ones(shape=[2], dtype=\"float32\") }\ndef @twice(%x: float32) { %x * 2f }\n",
    );
    assert_eq!(expect(&relay_vm(&["run", path(&f), "--format", "text"]), 0), "float32[1, 1]\n");
    let out = relay_vm(&["run", path(&f), "--entry", "twice", "--args", "[1.5]", "--format", "text"]);
    assert_eq!(expect(&out, 0), "3f\n");
    let out = relay_vm(&["run", path(&f), "--entry", "nope"]);
    expect(&out, 3);
    assert!(stderr(&out).contains("no function `@nope`"));
    // The message names what there is, the user's functions first, and the likely typo.
    let out = relay_vm(&["run", path(&f), "--entry", "twise", "--args", "[1.5]"]);
    expect(&out, 3);
    assert!(stderr(&out).contains("did you mean `@twice`? (it has @twice, @main, "), "{}", stderr(&out));
}

#[test]
fn a_number_outside_the_dtype_is_an_error_not_infinity() {
    let s = Scratch::new("range");
    let f = s.file("twice.relay", "def @main(%x: float32) { %x * 2f }\n");
    let out = relay_vm(&["run", path(&f), "--args", "[1e40]"]);
    expect(&out, 3);
    assert!(stderr(&out).contains("in the range of float32"), "{}", stderr(&out));
    expect(&relay_vm(&["run", path(&f), "--args", "[\"inf\"]"]), 0);
}

#[test]
fn numpy_files_are_arguments() {
    let s = Scratch::new("npy");
    let dense = s.file(
        "dense.relay",
        "def @main(%x: Tensor[(1, 2), float32], %w: Tensor[(2, 2), float32]) { nn.dense(%x, %w) }\n",
    );
    let twice = s.file("twice.relay", "def @main(%x: Tensor[(1, 2), float32]) { %x * 2f }\n");
    let npy = |name: &str| format!("@{}/tests/npy/{name}", env!("CARGO_MANIFEST_DIR"));
    let run = |f: &Path, args: &str| relay_vm(&["run", path(f), "--args", args, "--format", "text"]);
    assert_eq!(expect(&run(&twice, &npy("x.npy")), 0), "float32[[6, 8]]\n");
    // An .npz binds parameters by name, stored (np.savez) or deflated (np.savez_compressed).
    assert_eq!(expect(&run(&dense, &npy("weights.npz")), 0), "float32[[3, 8]]\n");
    assert_eq!(expect(&run(&dense, &npy("compressed.npz")), 0), "float32[[3, 8]]\n");
    let json = s.file("args.json", "[[[1, 2]]]");
    assert_eq!(expect(&run(&twice, &format!("@{}", path(&json))), 0), "float32[[2, 4]]\n");
    for (file, message) in [
        (npy("fortran.npy"), "Fortran-ordered"),
        (
            format!("@{}", path(&s.file("cut.npy", &std::fs::read(&npy("x.npy")[1..]).unwrap()[..100]))),
            "not a .npy",
        ),
        (format!("@{}", path(&s.file("bad.npz", b"PK not really"))), "not an .npz"),
        (npy("missing.npy"), "cannot read"),
    ] {
        let out = run(&twice, &file);
        expect(&out, 3);
        assert!(stderr(&out).contains(message), "{file}: {}", stderr(&out));
    }
}

#[test]
fn no_color_turns_colour_off() {
    // Colour needs a terminal, so a pipe never gets it; NO_COLOR must not change that, and a
    // diagnostic still renders in full.
    let s = Scratch::new("nocolor");
    let f = s.file("bad.relay", "def @main() { %x }\n");
    let out = Command::new(BIN).args(["check", path(&f)]).env("NO_COLOR", "1").output().unwrap();
    expect(&out, 1);
    assert!(!stderr(&out).contains('\u{1b}') && stderr(&out).contains("bad.relay:1:"), "{}", stderr(&out));
}

#[test]
fn bad_arguments_exit_3() {
    let s = Scratch::new("badargs");
    let f = s.file("sum.relay", SUM);
    for (args, message) in [
        (None, "needs argument(s) for %xs, %k"),
        (Some("[[1, 2]"), "malformed JSON"),
        (Some("{}"), "needs \"args\""),
        (Some("[[1], 2, 3]"), "takes 2 argument(s)"),
        (Some("[[1, \"x\"], 2]"), "argument `%xs`"),
        (Some("[[1], 2.5]"), "int32"),
    ] {
        let mut cmd = vec!["run", path(&f)];
        cmd.extend(args.iter().flat_map(|a| ["--args", *a]));
        let out = relay_vm(&cmd);
        expect(&out, 3);
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn traps_exit_2_naming_the_function() {
    let s = Scratch::new("trap");
    let f = s.file("div.relay", DIV);
    assert_eq!(
        expect(&relay_vm(&["run", path(&f), "--args", "[7, 2]"]), 0),
        "{\"dtype\":\"int32\",\"shape\":[],\"data\":[3]}\n"
    );
    // Integer division by zero is 0 (relay_devices::arith), not a trap.
    assert_eq!(
        expect(&relay_vm(&["run", path(&f), "--args", "[7, 0]"]), 0),
        "{\"dtype\":\"int32\",\"shape\":[],\"data\":[0]}\n"
    );
    let f = s.file("reshape.relay", RESHAPE);
    expect(&relay_vm(&["run", path(&f), "--args", "[[1, 2, 3, 4]]"]), 0);
    let out = relay_vm(&["run", path(&f), "--args", "[[1, 2, 3]]"]);
    expect(&out, 2);
    assert!(stderr(&out).contains("trap in `main`"), "{}", stderr(&out));
    assert!(stderr(&out).contains("reshape"), "{}", stderr(&out));
    // The call stack gives the source position of the faulting expression, `reshape(...)`.
    let at = format!("\n  at @main ({}:1:39)", path(&f));
    assert!(stderr(&out).contains(&at), "{}", stderr(&out));
}

#[test]
fn the_interpreter_runs_source_and_traps_like_the_vm() {
    let s = Scratch::new("interp");
    let f = s.file("sum.relay", SUM);
    let out =
        relay_vm(&["run", path(&f), "--executor", "interp", "--args", "[[1, 2, 3], 2]", "--format", "text"]);
    assert_eq!(expect(&out, 0), "(12, Cons(2, Nil))\n");
    let div = s.file("div.relay", DIV);
    // Integer division by zero is 0 (relay_devices::arith) in the interpreter too.
    let out = relay_vm(&["run", path(&div), "--executor", "interp", "--args", "[7, 0]"]);
    assert_eq!(expect(&out, 0), "{\"dtype\":\"int32\",\"shape\":[],\"data\":[0]}\n");
    let reshape = s.file("reshape.relay", RESHAPE);
    let out = relay_vm(&["run", path(&reshape), "--executor", "interp", "--args", "[[1, 2, 3]]"]);
    expect(&out, 2);
    assert!(stderr(&out).contains("trap in `main`"), "{}", stderr(&out));
    assert!(stderr(&out).contains("reshape"), "{}", stderr(&out));
    let exe = s.0.join("div.rvm");
    expect(&relay_vm(&["compile", path(&div), "-o", path(&exe)]), 0);
    let out = relay_vm(&["run", path(&exe), "--executor", "interp", "--args", "[7, 2]"]);
    expect(&out, 3);
    assert!(stderr(&out).contains("needs Relay source"), "{}", stderr(&out));
}

#[test]
fn compile_errors_exit_1() {
    let s = Scratch::new("compile_error");
    let f = s.file("bad.relay", "def @main(%x: int32) -> float32 { %x }\n");
    let out = relay_vm(&["run", path(&f), "--args", "[1]"]);
    expect(&out, 1);
    assert!(stderr(&out).contains("bad.relay:1:"), "{}", stderr(&out));
    expect(&relay_vm(&["compile", path(&f), "-o", path(&s.0.join("out.rvm"))]), 1);
    expect(&relay_vm(&["check", path(&f)]), 1);
}

#[test]
fn unreadable_inputs_and_bad_command_lines_exit_3() {
    let s = Scratch::new("unreadable");
    expect(&relay_vm(&["run", path(&s.0.join("missing.relay"))]), 3);
    expect(&relay_vm(&["run"]), 3);
    expect(&relay_vm(&["run", "x.relay", "--no-such-flag"]), 3);
    expect(&relay_vm(&["frobnicate"]), 3);
    expect(&relay_vm(&["run", "x.relay", "--format", "xml"]), 3);
    expect(&relay_vm(&["run", "x.relay", "--args", "[]", "--input", "y.jsonl"]), 3);
    let binary = s.file("binary.relay", [0xffu8, 0xfe, 0x00]);
    expect(&relay_vm(&["run", path(&binary)]), 3);
    assert!(expect(&relay_vm(&["--help"]), 0).contains("Usage"));
    assert!(expect(&relay_vm(&["run", "--help"]), 0).contains("--params"));
    assert!(expect(&relay_vm(&["--version"]), 0).contains("relay-vm"));
}

/// Numeric options are validated: out-of-range counts and levels exit 3 before anything runs,
/// instead of overflowing, wrapping or allocating without bound.
#[test]
fn numeric_options_are_validated() {
    let s = Scratch::new("numeric");
    let f = s.file("sum.relay", SUM);
    let bench = |extra: &[&str]| {
        let mut cmd = vec!["bench", path(&f), "--args", "[[1, 2], 3]"];
        cmd.extend(extra);
        relay_vm(&cmd)
    };
    let out = bench(&["--warmup", "0", "--reps", "2"]);
    let text = expect(&out, 0);
    assert!(
        text.contains("1 input(s) x 2 rep(s) after 0 warm-up pass(es)") && text.contains("build: compile ")
    );
    // Without --reps, passes repeat for --min-time; --format json gives every figure.
    let out = bench(&["--min-time", "0.2", "--format", "json"]);
    let figures: serde_json::Value = serde_json::from_str(&expect(&out, 0)).unwrap();
    assert!(figures["reps"].as_u64().unwrap() > 2, "{figures}");
    for q in ["mean", "p50", "p90", "p99", "max"] {
        assert!(figures["latency_ms"][q].as_f64().unwrap() > 0.0, "{figures}");
    }
    assert!(
        figures["throughput_per_s"].as_f64().unwrap() > 0.0 && figures["allocations_per_input"].is_object()
    );
    // Compilation (parse to bytecode) always takes some time; the kernels' binding is timed too.
    assert!(figures["build_ms"]["compile"].as_f64().unwrap() > 0.0, "{figures}");
    assert!(figures["build_ms"]["kernels"].as_f64().is_some(), "{figures}");
    for (extra, message) in [
        (&["--reps", "18446744073709551615"][..], "--reps"),
        (&["--reps", "1000000000"], "--reps"),
        (&["--reps=-1"], "--reps"),
        (&["--warmup", "18446744073709551615", "--reps", "1"], "--warmup"),
        (&["--opt-level", "99"], "--opt-level"),
        (&["--min-time", "0"], "--min-time"),
    ] {
        let out = bench(extra);
        expect(&out, 3);
        assert!(stderr(&out).contains(message), "{extra:?}: {}", stderr(&out));
    }
    // Within the per-option caps, but too many timed runs over all inputs together.
    let lines = s.file("many.jsonl", "[[1], 2]\n".repeat(5));
    let out = relay_vm(&["bench", path(&f), "--input", path(&lines), "--reps", "1000000"]);
    expect(&out, 3);
    assert!(stderr(&out).contains("more than 4194304 runs"), "{}", stderr(&out));
    // Every command's --opt-level takes 0 to 3.
    let exe = s.0.join("sum.exe");
    for level in ["99", "4", "256"] {
        expect(&relay_vm(&["run", path(&f), "--args", "[[1], 2]", "--opt-level", level]), 3);
        expect(&relay_vm(&["compile", path(&f), "-o", path(&exe), "--opt-level", level]), 3);
        expect(&relay_vm(&["disasm", path(&f), "--opt-level", level]), 3);
        expect(&relay_vm(&["dump", path(&f), "--opt-level", level]), 3);
    }
    let out = relay_vm(&["run", path(&f), "--args", "[[1], 2]", "--opt-level", "3", "--format", "text"]);
    assert_eq!(expect(&out, 0), "(2, Cons(2, Nil))\n");
}

#[test]
fn compile_then_run_and_disassemble() {
    let s = Scratch::new("compile");
    let src = s.file("sum.relay", SUM);
    let exe = s.0.join("sum.rvm");
    expect(&relay_vm(&["compile", path(&src), "-o", path(&exe)]), 0);
    let from_source = expect(&relay_vm(&["run", path(&src), "--args", "[[4], 3]"]), 0);
    let from_exe = expect(&relay_vm(&["run", path(&exe), "--args", "[[4], 3]"]), 0);
    assert_eq!(from_source, from_exe);
    let listing = expect(&relay_vm(&["disasm", path(&exe)]), 0);
    assert!(listing.contains("main(xs, k)"), "{listing}");
    assert!(listing.contains("Ret src="));
    assert_eq!(listing, expect(&relay_vm(&["disasm", path(&src)]), 0));
    let main = expect(&relay_vm(&["disasm", path(&exe), "--function", "@main"]), 0);
    assert!(main.starts_with("fn @main(xs, k)") && !main.contains("fn @sum("), "{main}");
    let out = relay_vm(&["disasm", path(&exe), "--function", "mian"]);
    expect(&out, 3);
    assert!(stderr(&out).contains("did you mean `@main`?"), "{}", stderr(&out));

    // `dump` without a flag prints the kernels, as `--kernels` does.
    let add = s.file("add.relay", "def @main(%x: Tensor[(3), float32]) { add(%x, %x) }");
    let kernels = expect(&relay_vm(&["dump", path(&add)]), 0);
    assert!(kernels.contains("// kernel#0\nkernel fused_add("), "{kernels}");
    assert_eq!(kernels, expect(&relay_vm(&["dump", path(&add), "--kernels"]), 0));
    assert!(!expect(&relay_vm(&["dump", path(&add), "--memory"]), 0).contains("kernel#0"));

    let mut bytes = std::fs::read(&exe).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    let corrupt = s.file("corrupt.rvm", &bytes);
    let out = relay_vm(&["run", path(&corrupt), "--args", "[[4], 3]"]);
    expect(&out, 3);
    assert!(stderr(&out).contains("checksum"), "{}", stderr(&out));
    expect(&relay_vm(&["disasm", path(&corrupt)]), 3);
    let truncated = s.file("truncated.rvm", &bytes[..bytes.len() / 2]);
    expect(&relay_vm(&["run", path(&truncated)]), 3);
}

#[test]
fn input_runs_once_per_line() {
    let s = Scratch::new("input");
    let f = s.file("div.relay", DIV);
    let lines = s.file("in.jsonl", "[7, 2]\n\n[9, 3]\n[-8, 4]\n");
    let out = relay_vm(&["run", path(&f), "--input", path(&lines), "--format", "text"]);
    assert_eq!(expect(&out, 0), "3\n3\n-2\n");
    let bad = s.file("bad.jsonl", "[7, 2]\n[1]\n");
    let out = relay_vm(&["run", path(&f), "--input", path(&bad), "--format", "text"]);
    assert_eq!(expect(&out, 3), "3\n");
    assert!(stderr(&out).contains("bad.jsonl:2"), "{}", stderr(&out));
    // Labelled inputs: stdout stays JSON lines (a scalar result predicts nothing: `null`), the
    // accuracy summary goes to stderr.
    let labelled =
        s.file("labelled.jsonl", "{\"args\": [7, 2], \"label\": 0}\n{\"args\": [9, 3], \"label\": 1}\n");
    let out = relay_vm(&["run", path(&f), "--input", path(&labelled)]);
    let jsonl = expect(&out, 0);
    assert_eq!(jsonl.lines().count(), 2, "{jsonl}");
    for line in jsonl.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert!(v["prediction"].is_null() && v["output"]["data"] == serde_json::json!([3]), "{line}");
    }
    assert!(stderr(&out).contains("accuracy: 0/2"), "{}", stderr(&out));
    let trap = s.file("trap.jsonl", "[[1, 2, 3]]\n");
    let reshape = s.file("reshape.relay", RESHAPE);
    expect(&relay_vm(&["run", path(&reshape), "--input", path(&trap)]), 2);
}

/// `@main(n)` counts down from `n` one call at a time: inputs of very different lengths.
const COUNTDOWN: &str = "def @main(%n: int32) -> int32 { if (%n <= 0) { %n } else { @main(%n - 1) } }\n";

#[test]
fn parallel_runs_print_in_input_order_the_same_as_one_thread() {
    let s = Scratch::new("jobs");
    let f = s.file("countdown.relay", COUNTDOWN);
    // Long and short inputs interleaved, so workers finish out of input order.
    let lines: String =
        (0..60).map(|i| format!("[{}]\n", if i % 3 == 0 { 200_000 - i } else { -i })).collect();
    let input = s.file("in.jsonl", lines);
    let one = expect(&relay_vm(&["run", path(&f), "--input", path(&input), "-j", "1"]), 0);
    let three = expect(&relay_vm(&["run", path(&f), "--input", path(&input), "-j", "3"]), 0);
    assert_eq!(one.lines().count(), 60);
    assert_eq!(one, three);
    // A bad line stops the run there, after the lines before it, on any number of threads.
    let bad = s.file("bad.jsonl", format!("{}[1, 2]\n[3]\n", "[5]\n".repeat(20)));
    let out = relay_vm(&["run", path(&f), "--input", path(&bad), "-j", "4"]);
    assert_eq!(expect(&out, 3), "{\"dtype\":\"int32\",\"shape\":[],\"data\":[0]}\n".repeat(20));
    assert!(stderr(&out).contains("bad.jsonl:21"), "{}", stderr(&out));
    expect(&relay_vm(&["run", path(&f), "--input", path(&input), "-j", "0"]), 3);
}

/// `@main(x, n)` applies `tanh` to a row `n` times: one kernel, called a different number of
/// times per input.
const TANH_TIMES: &str = "def @main(%x: Tensor[(1, 4), float32], %n: int32) -> Tensor[(1, 4), float32] {
  if (%n <= 0) { %x } else { @main(tanh(add(%x, 1f)), %n - 1) }
}
";

#[test]
fn batched_runs_print_in_input_order_the_same_as_one_at_a_time() {
    let s = Scratch::new("batch");
    let f = s.file("tanh.relay", TANH_TIMES);
    let lines: String = (0..23).map(|i| format!("[[[{i}, -1, 0.5, 2]], {}]\n", (i * 7) % 11)).collect();
    let input = s.file("in.jsonl", lines);
    let one = expect(&relay_vm(&["run", path(&f), "--input", path(&input), "--batch", "1"]), 0);
    let five = expect(&relay_vm(&["run", path(&f), "--input", path(&input), "--batch", "5"]), 0);
    assert_eq!(one.lines().count(), 23);
    // An elementwise kernel batched is the same loop per request: the same bits.
    assert_eq!(one, five);
    let bad = s.file("bad.jsonl", format!("{}[1, 2]\n", "[[[0, 0, 0, 0]], 3]\n".repeat(4)));
    let out = relay_vm(&["run", path(&f), "--input", path(&bad), "--batch", "3"]);
    assert_eq!(expect(&out, 3).lines().count(), 4);
    assert!(stderr(&out).contains("bad.jsonl:5"), "{}", stderr(&out));
    let bench = relay_vm(&[
        "bench",
        path(&f),
        "--input",
        path(&input),
        "--batch",
        "4",
        "--reps",
        "2",
        "--format",
        "json",
    ]);
    let b: serde_json::Value = serde_json::from_str(&expect(&bench, 0)).unwrap();
    assert_eq!((b["batch"].as_u64(), b["reps"].as_u64()), (Some(4), Some(2)));
}

#[test]
fn profile_counts_each_kernel_call() {
    let s = Scratch::new("profile");
    let f = s.file("k.relay", "def @main(%x: Tensor[(4), float32]) { sum(tanh(add(%x, 1f))) }\n");
    let input = s.file("in.jsonl", "[[1, 2, 3, 4]]\n".repeat(3));
    let out = relay_vm(&["profile", path(&f), "--input", path(&input), "--reps", "5", "--format", "json"]);
    let p: serde_json::Value = serde_json::from_str(&expect(&out, 0)).unwrap();
    let kernels = p["kernels"].as_array().unwrap();
    assert!(!kernels.is_empty(), "{p}");
    // Every kernel runs once per input and pass: 3 inputs x 5 passes.
    assert!(kernels.iter().all(|k| k["calls"] == 15), "{p}");
    let text = expect(&relay_vm(&["profile", path(&f), "--input", path(&input), "--reps", "1"]), 0);
    assert!(text.contains("(fused)") && text.contains("outside kernels"), "{text}");
}

fn safetensors_file(tensors: &[(&str, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
    let bytes: Vec<Vec<u8>> =
        tensors.iter().map(|(_, _, d)| d.iter().flat_map(|x| x.to_le_bytes()).collect()).collect();
    let views: Vec<(&str, safetensors::tensor::TensorView<'_>)> = tensors
        .iter()
        .zip(&bytes)
        .map(|((name, shape, _), b)| {
            (*name, safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), b).unwrap())
        })
        .collect();
    safetensors::serialize(views, None).unwrap()
}

#[test]
fn params_bind_weights_by_name() {
    let s = Scratch::new("params");
    let f = s.file(
        "dense.relay",
        "def @main(%x: Tensor[(1, 2), float32], %w: Tensor[(2, 2), float32], %b: Tensor[(2), float32]) {\n  nn.bias_add(nn.dense(%x, %w), %b)\n}\n",
    );
    let weights = s.file(
        "w.safetensors",
        safetensors_file(&[("w", vec![2, 2], vec![1.0, 0.0, 0.0, 2.0]), ("b", vec![2], vec![0.5, 0.5])]),
    );
    let out =
        relay_vm(&["run", path(&f), "--params", path(&weights), "--args", "[[[3, 4]]]", "--format", "text"]);
    assert_eq!(expect(&out, 0), "float32[[3.5, 8.5]]\n");
    let out = relay_vm(&["run", path(&f), "--params", path(&weights)]);
    expect(&out, 3);
    assert!(stderr(&out).contains("%x"), "{}", stderr(&out));

    let misnamed = s.file("m.safetensors", safetensors_file(&[("weight", vec![2, 2], vec![0.0; 4])]));
    let args =
        ["--params", path(&misnamed), "--args", "[[[3, 4]], [[1, 0], [0, 1]], [0, 0]]", "--format", "text"];
    let out = relay_vm(&[&["run", path(&f)][..], &args].concat());
    assert_eq!(expect(&out, 0), "float32[[3, 4]]\n");
    assert!(stderr(&out).contains("1 tensor(s) bind no parameter of `@main`: weight"), "{}", stderr(&out));
    let out = relay_vm(&[&["run", path(&f), "--strict-params"][..], &args].concat());
    expect(&out, 3);
    assert!(stderr(&out).contains("error: ") && stderr(&out).contains(": weight"), "{}", stderr(&out));
    let misshapen = s.file("s.safetensors", safetensors_file(&[("w", vec![4], vec![0.0; 4])]));
    let out = relay_vm(&["run", path(&f), "--params", path(&misshapen), "--args", "[[[3, 4]], [0, 0]]"]);
    expect(&out, 3);
    assert!(stderr(&out).contains("Tensor[(2, 2), float32]"), "{}", stderr(&out));

    // `compile`, `disasm` and `dump` build the program `run --params` runs: the weights'
    // shapes specialise it. `compile` keeps the weights parameters (an executable holds no
    // weights), so its bytecode is `run --params`'s; with `--bind-params` the weights are
    // constants.
    let open = s.file(
        "open.relay",
        "def @main(%x: Tensor[(1, ?), float32], %w: Tensor[(?, ?), float32]) { nn.dense(%x, %w) }\n",
    );
    let exe = s.0.join("open.rvm");
    let bound = ["--params", path(&weights)];
    expect(&relay_vm(&[&["compile", path(&open), "-o", path(&exe)][..], &bound].concat()), 0);
    let from_source = expect(&relay_vm(&[&["disasm", path(&open)][..], &bound].concat()), 0);
    assert_eq!(from_source, expect(&relay_vm(&["disasm", path(&exe)]), 0));
    let bound_text = expect(&relay_vm(&[&["disasm", path(&open), "--bind-params"][..], &bound].concat()), 0);
    assert!(bound_text.contains("fn @main(x) "), "the weight is a constant: {bound_text}");
    assert_ne!(from_source, expect(&relay_vm(&["disasm", path(&open)]), 0));
    assert!(
        from_source.contains("shape=[1, 2]"),
        "the output is allocated at its bound shape: {from_source}"
    );
    expect(&relay_vm(&[&["dump", path(&open), "--kernels"][..], &bound].concat()), 0);
    let out = relay_vm(&[
        "run",
        path(&exe),
        "--params",
        path(&weights),
        "--args",
        "[[[3, 4]]]",
        "--format",
        "text",
    ]);
    assert_eq!(expect(&out, 0), "float32[[3, 8]]\n");

    let garbage = s.file("g.safetensors", b"not a safetensors file");
    expect(&relay_vm(&["run", path(&f), "--params", path(&garbage), "--args", "[[[3, 4]], [0, 0]]"]), 3);
}

#[test]
fn check_and_fmt_still_work() {
    let s = Scratch::new("checkfmt");
    let f = s.file("ok.relay", "def @main(%x: int32)   { %x + 1 }\n");
    assert_eq!(expect(&relay_vm(&["check", path(&f), "--types"]), 0), "@main: fn (int32) -> int32\n");
    assert!(expect(&relay_vm(&["fmt", path(&f)]), 0).contains("def @main(%x: int32)"));
}

#[test]
fn fmt_keeps_comments_and_checks_or_rewrites_the_file() {
    let s = Scratch::new("fmtwrite");
    let f = s.file("c.relay", "// the entry\ndef @main(%x: int32) { %x + 1 /* one */ }\n");
    let formatted =
        "#[version = \"0.0.5\"]\n// the entry\ndef @main(%x: int32) {\n  add(%x, 1) /* one */\n}\n";
    assert_eq!(expect(&relay_vm(&["fmt", path(&f)]), 0), formatted);
    let out = relay_vm(&["fmt", "--check", path(&f)]);
    let message = stderr(&out);
    expect(&out, 1);
    assert!(message.starts_with(&format!("{}: not formatted", path(&f))), "{message}");
    assert!(message.contains("@@ line 1 @@\n-// the entry\n"), "{message}");
    assert_eq!(expect(&relay_vm(&["fmt", "--write", path(&f)]), 0), "");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), formatted);
    assert_eq!(expect(&relay_vm(&["fmt", "--check", path(&f)]), 0), "");
    // Nothing is written for a file that does not parse.
    let bad = s.file("bad.relay", "def @main( {\n");
    expect(&relay_vm(&["fmt", "--write", path(&bad)]), 1);
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), "def @main( {\n");
}

/// Never returns for `n != 0`.
const FOREVER: &str = "def @main(%n: int32) -> int32 { if (%n == 0) { 0 } else { @main(%n) } }\n";

#[test]
fn run_stops_at_the_timeout_and_the_memory_limit() {
    let s = Scratch::new("limits");
    let forever = s.file("forever.relay", FOREVER);
    let out = relay_vm(&["run", path(&forever), "--args", "[1]", "--timeout", "1"]);
    expect(&out, 2);
    assert!(stderr(&out).contains("deadline passed"), "{}", stderr(&out));
    // 4 MB of zeros against a 1 MiB budget (at -O0, so nothing folds them at compile time).
    let zeros = s.file("zeros.relay", "def @main() { zeros(shape=[1000, 1000]) }\n");
    let out = relay_vm(&["run", path(&zeros), "--opt-level", "0", "--max-memory", "1M"]);
    expect(&out, 2);
    assert!(stderr(&out).contains("over the limit of 1048576 bytes"), "{}", stderr(&out));
    expect(&relay_vm(&["run", path(&zeros), "--opt-level", "0", "--max-memory", "4G"]), 0);
    for bad in ["--max-memory=lots", "--max-memory=0", "--timeout=0", "--timeout=-1"] {
        expect(&relay_vm(&["run", path(&zeros), bad]), 3);
    }
}

#[cfg(unix)]
#[test]
fn sigint_during_run_input_prints_the_results_so_far_and_exits_130() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let s = Scratch::new("sigint");
    let forever = s.file("forever.relay", FOREVER);
    // The first input returns at once, the second never.
    let input = s.file("inputs.jsonl", "[0]\n[1]\n");
    let mut child = Command::new(BIN)
        .args(["run", path(&forever), "--input", path(&input)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    let read = stdout.read_line(&mut first);
    // The second input is running (or about to): interrupt it, whatever was read (the
    // process must not outlive the test).
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let out = child.wait_with_output().unwrap();
    assert!(read.is_ok() && kill.is_ok_and(|k| k.success()));
    assert_eq!(first, "{\"dtype\":\"int32\",\"shape\":[],\"data\":[0]}\n");
    let rest = String::from_utf8_lossy(&out.stdout).to_string();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(130), "stdout after the first line:\n{rest}\nstderr:\n{err}");
    assert!(err.contains("interrupted after 1 of 2 input(s)"), "{err}");
}

#[test]
fn no_prelude_leaves_the_prelude_out() {
    let s = Scratch::new("no-prelude");
    let uses_prelude = s.file("p.relay", "def @main() -> int32 { @id(1) }\n");
    assert_eq!(expect(&relay_vm(&["run", "--format", "text", path(&uses_prelude)]), 0).trim(), "1");
    for args in
        [&["check", "--no-prelude"][..], &["run", "--no-prelude"], &["--no-prelude", "compile", "-o", "x"]]
    {
        let out = relay_vm(&[args, &[path(&uses_prelude)]].concat());
        expect(&out, 1);
        assert!(stderr(&out).contains("`@id`"), "{args:?}: {}", stderr(&out));
    }
    // Without the prelude a program may define `List` and `@sum` as it likes.
    let own = s.file(
        "own.relay",
        "type List { Nil }\ndef @sum(%x: List) -> int32 { 0 }\ndef @main() { @sum(Nil) }\n",
    );
    assert_eq!(expect(&relay_vm(&["run", "--no-prelude", "--format", "text", path(&own)]), 0).trim(), "0");
}

#[test]
fn opt_prints_relay_that_checks_again() {
    let dir = Scratch::new("opt");
    let src = "def @main(%x: Tensor[(3), float32]) {\n  let %unused = exp(%x);\n  add(%x, add(1f, 2f))\n}\n";
    let file = dir.file("m.relay", src);
    let out =
        relay_vm(&["opt", path(&file), "--passes", "FoldConstant,DeadCodeElimination", "--time-passes"]);
    let text = expect(&out, 0);
    assert!(text.contains("add(%x, 3f)") && !text.contains("unused"), "{text}");
    let log = stderr(&out);
    assert!(log.contains("FoldConstant") && log.contains("infer") && log.contains("nodes"), "{log}");
    let again = dir.file("again.relay", &text);
    expect(&relay_vm(&["check", path(&again)]), 0);
    // A level's whole pipeline, and the module after one pass of it.
    let out = relay_vm(&["opt", path(&file), "-O", "3", "--print-after", "FuseOps"]);
    assert!(expect(&out, 0).contains("Primitive=1"));
    assert!(stderr(&out).contains("// after FuseOps"));
    expect(&relay_vm(&["opt", path(&file), "--passes", "NoSuchPass"]), 3);
    expect(&relay_vm(&["opt", path(&file), "--print-after", "NoSuchPass"]), 3);
}

#[test]
fn opt_and_dump_draw_dot() {
    let dir = Scratch::new("dot");
    let src = "def @main(%x: Tensor[(3), float32], %c: bool) {\n  let %y = exp(%x);\n  if (%c) { add(%y, 1f) } else { negative(%y) }\n}\n";
    let file = dir.file("m \"q\".relay", src);
    let dot = expect(&relay_vm(&["opt", path(&file), "--passes", "FoldConstant", "--dot"]), 0);
    assert!(dot.starts_with("digraph relay {") && dot.trim_end().ends_with('}'), "{dot}");
    assert_eq!(dot.matches("subgraph cluster_").count(), 1, "{dot}");
    assert!(dot.contains("shape=diamond") && dot.contains("shape=cds"), "{dot}");
    assert!(dot.contains("[label=\"Tensor[(3), float32]\"]"), "{dot}");
    assert_eq!(dot.matches('{').count(), dot.matches('}').count(), "{dot}");
    // The compiled program: its fused kernels are clusters inside @main's.
    let dump = expect(&relay_vm(&["dump", path(&file), "-O", "2", "--dot"]), 0);
    assert!(dump.matches("label=\"Primitive=1\"").count() >= 2, "{dump}");
    // An executable has no Relay to draw.
    let exe = dir.0.join("m.rvm");
    expect(&relay_vm(&["compile", path(&file), "-o", path(&exe)]), 0);
    expect(&relay_vm(&["dump", path(&exe), "--dot"]), 3);
    expect(&relay_vm(&["opt", path(&file), "--dot", "--print-after-all"]), 3);
}

#[test]
fn a_batch_norm_after_a_conv2d_ends_in_its_weight_at_o3() {
    let dir = Scratch::new("fold_scale_axis");
    let src = "def @main(%x: Tensor[(1, 2, 3, 3), float32]) {
  let %y = nn.conv2d(%x, meta[relay.Constant][0], channels=3, kernel_size=[1, 1]);
  nn.batch_norm(%y, meta[relay.Constant][1], meta[relay.Constant][1], meta[relay.Constant][2], meta[relay.Constant][1]).0
}
#[metadata]
{\"relay.Constant\": [
  {\"dtype\": \"float32\", \"shape\": [3, 2, 1, 1], \"data\": [1.0, -2.0, 3.0, 4.0, 0.5, 6.0]},
  {\"dtype\": \"float32\", \"shape\": [3], \"data\": [2.0, 0.5, 3.0]},
  {\"dtype\": \"float32\", \"shape\": [3], \"data\": [0.1, 0.2, 0.3]}
]}
";
    let file = dir.file("bn.relay", src);
    let text = expect(&relay_vm(&["opt", path(&file), "-O", "3"]), 0);
    assert_eq!(text.matches("nn.conv2d(").count(), 1, "{text}");
    assert!(!text.contains("multiply") && !text.contains("batch_norm"), "{text}");
    // The same values as the reference kernels compute from the batch norm (to rounding).
    let x: Vec<f64> = (0..18).map(|i| f64::from(i) / 4.0 - 2.0).collect();
    let args = format!(
        "[{}]",
        serde_json::json!([[x[..9].chunks(3).collect::<Vec<_>>(), x[9..].chunks(3).collect::<Vec<_>>()]])
    );
    let run = |level: &str| -> Vec<f64> {
        let out = expect(&relay_vm(&["run", path(&file), "-O", level, "--args", &args]), 0);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["data"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
    };
    let (want, got) = (run("0"), run("3"));
    assert_eq!(want.len(), 27);
    for (w, g) in want.iter().zip(&got) {
        assert!((w - g).abs() <= 1e-5 * w.abs().max(1.0), "{want:?}\n{got:?}");
    }
}

#[test]
fn combined_parallel_calls_compute_what_the_branches_did() {
    let dir = Scratch::new("combine_parallel");
    let cases = [
        (
            "CombineParallelConv2D",
            "def @main(%x: Tensor[(1, 2, 3, 3), float32], %a: Tensor[(2, 2, 3, 3), float32], %b: Tensor[(1, 2, 3, 3), float32]) {
  (nn.conv2d(%x, %a, padding=[1, 1]), nn.relu(nn.conv2d(%x, %b, padding=[1, 1])), nn.conv2d(%x, %a, padding=[1, 1]))
}",
            [vec![1, 2, 3, 3], vec![2, 2, 3, 3], vec![1, 2, 3, 3]],
        ),
        (
            "CombineParallelBatchMatmul",
            "def @main(%x: Tensor[(2, 3, 4), float32], %a: Tensor[(2, 1, 4), float32], %b: Tensor[(2, 2, 4), float32]) {
  (nn.batch_matmul(%x, %a, transpose_b=True), nn.batch_matmul(%x, %b, transpose_b=True), nn.batch_matmul(%x, %a, transpose_b=True))
}",
            [vec![2, 3, 4], vec![2, 1, 4], vec![2, 2, 4]],
        ),
    ];
    for (pass, src, shapes) in cases {
        let file = dir.file("m.relay", src);
        let combined = expect(&relay_vm(&["opt", path(&file), "--passes", pass]), 0);
        assert_eq!(combined.matches("strided_slice").count(), 3, "{pass}: {combined}");
        let after = dir.file("after.relay", &combined);
        // Distinct values (no two weights alike) so a slice at the wrong offset shows.
        let mut next = 0.0;
        let mut tensor = |shape: &[usize]| -> serde_json::Value {
            let n: usize = shape.iter().product();
            let flat: Vec<f64> = (0..n)
                .map(|_| {
                    next += 0.25;
                    (next % 7.0) - 3.0
                })
                .collect();
            shape[1..].iter().rev().fold(serde_json::json!(flat), |v, &d| {
                let rows: Vec<serde_json::Value> =
                    v.as_array().unwrap().chunks(d).map(|c| serde_json::json!(c)).collect();
                serde_json::json!(rows)
            })
        };
        let args = serde_json::json!(shapes.iter().map(|s| tensor(s)).collect::<Vec<_>>()).to_string();
        let before = expect(&relay_vm(&["run", path(&file), "--args", &args]), 0);
        assert_eq!(expect(&relay_vm(&["run", path(&after), "--args", &args]), 0), before, "{pass}");
    }
}
