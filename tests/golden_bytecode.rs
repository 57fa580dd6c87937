//! Bytecode golden files: every `tests/relay/bytecode/NAME.relay` is compiled with the prelude
//! and the disassembly of its own functions (the prelude's are left out; closures lifted out
//! of the file's functions are kept) and of the executable's kernel list must equal the
//! sibling `NAME.expected`, as `relay-vm disasm` prints them.
//!
//! Each file starts with a `//` line saying what it shows. `RELAY_TEST_BLESS=1` writes the
//! `.expected` files from the actual disassembly; read the diff before committing it.

use relay::Program;
use std::collections::HashSet;
use std::path::Path;

mod common;

/// Names of the functions an empty program has: the prelude's and the closures lifted out
/// of them.
fn prelude_functions() -> HashSet<String> {
    let program = Program::builder()
        .source("empty.relay", "#[version = \"0.0.5\"]\n")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    program.executable().functions.iter().map(|f| f.name.clone()).collect()
}

/// The disassembly of the functions not in `skip`, and the kernel list.
fn listing(program: &Program, skip: &HashSet<String>) -> String {
    let exe = program.executable();
    let mut out = String::new();
    let mut keep = false;
    for line in exe.disassemble().lines() {
        if let Some(header) = line.strip_prefix("fn @") {
            // `fn @name(params) regs=R`
            let name = header.split('(').next().unwrap_or("");
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
    let text = common::read_described(path)?;
    let program = Program::builder()
        .source(path.display().to_string(), &text)
        .build()
        .map_err(|e| format!("does not compile:\n{e}"))?;
    common::check_expected(path, &listing(&program, skip), bless, "disassembly")
}

fn main() {
    let bless = common::bless();
    let skip = prelude_functions();
    common::golden::run(common::golden::file_trials("bytecode", 5, move |path, _| check(path, &skip, bless)));
}
