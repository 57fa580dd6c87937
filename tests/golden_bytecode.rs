//! Bytecode golden files: every `tests/relay/bytecode/NAME.relay` is compiled with the prelude
//! and the disassembly of its own functions (the prelude's are left out; closures lifted out
//! of the file's functions are kept) and of the executable's kernel list must equal the
//! sibling `NAME.expected`, as `relay-vm disasm` prints them.
//!
//! Each file starts with a `//` line saying what it shows. `RELAY_TEST_BLESS=1` writes the
//! `.expected` files from the actual disassembly; read the diff before committing it.

use relay::Program;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Names of the functions an empty program has: the prelude's and the closures lifted out
/// of them.
fn prelude_functions() -> HashSet<String> {
    let program =
        Program::compile("empty.relay", "#[version = \"0.0.5\"]\n").unwrap_or_else(|e| panic!("{e}"));
    program.executable().functions.iter().map(|f| f.name.clone()).collect()
}

/// The disassembly of the functions not in `skip`, and the kernel list.
fn listing(program: &Program, skip: &HashSet<String>) -> String {
    let exe = program.executable();
    let mut out = String::new();
    let mut keep = false;
    for line in exe.disassemble().lines() {
        if line.starts_with("func#") {
            // `func#N name(params) regs=R`
            let name = line.split_whitespace().nth(1).and_then(|s| s.split('(').next()).unwrap_or("");
            keep = !skip.contains(name);
        } else if line.starts_with("kernel#") {
            keep = true;
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn check(path: &Path, skip: &HashSet<String>, bless: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    if !text.starts_with("//") {
        return Err("the file needs a `//` line saying what it shows".to_string());
    }
    let program = Program::compile(&path.display().to_string(), &text)
        .map_err(|e| format!("does not compile:\n{e}"))?;
    let got = listing(&program, skip);
    let expected_path = path.with_extension("expected");
    if bless {
        return std::fs::write(&expected_path, &got).map_err(|e| format!("cannot bless: {e}"));
    }
    let want = std::fs::read_to_string(&expected_path)
        .map_err(|e| format!("cannot read {} ({e}); run with RELAY_TEST_BLESS=1", expected_path.display()))?;
    if got != want {
        return Err(format!("disassembly differs\n--- expected\n{want}--- actual\n{got}"));
    }
    Ok(())
}

#[test]
fn bytecode_goldens() {
    let bless = std::env::var_os("RELAY_TEST_BLESS").is_some_and(|v| v == "1");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/relay/bytecode");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "relay"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let skip = prelude_functions();
    let mut failures = vec![];
    if files.len() < 5 {
        failures.push(format!("expected at least 5 bytecode goldens, found {}", files.len()));
    }
    for f in &files {
        if let Err(e) = check(f, &skip, bless) {
            failures.push(format!("{}: {e}", f.display()));
        }
    }
    assert!(failures.is_empty(), "{} problem(s):\n{}", failures.len(), failures.join("\n"));
}
