//! FuseOps golden files: every `tests/relay/pass/fuse_ops/NAME.relay` goes through the
//! lowering pipeline at opt-level 2 (so FuseOps runs last) and the printed functions of the
//! file itself must equal the sibling `NAME.expected`.
//!
//! Each file starts with a `//` line saying what it shows; a line `// max_group_size: N`
//! sets the group limit. `RELAY_TEST_BLESS=1` writes the `.expected` files; read the diff
//! before committing it.

use relay_compiler::pass::{lower_for_vm, LowerOptions};
use relay_compiler::syntax::printer::print_module;
use std::path::{Path, PathBuf};

fn check(path: &Path, bless: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    if !text.starts_with("//") {
        return Err("the file needs a `//` line saying what it shows".to_string());
    }
    let mut options = LowerOptions::at_level(2);
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("// max_group_size:") {
            options.fuse.max_group_size = n.trim().parse().map_err(|e| format!("max_group_size: {e}"))?;
        }
    }
    let checked =
        relay::check(&path.display().to_string(), &text).map_err(|e| format!("does not check:\n{e}"))?;
    let mut module = checked.module;
    lower_for_vm(&mut module, &relay_stdlib::op_registry(), &options)
        .map_err(|e| format!("lowering failed:\n{}", e.render(&module.sources, false)))?;
    let got = print_module(&module, Some(checked.file));
    let expected_path = path.with_extension("expected");
    if bless {
        return std::fs::write(&expected_path, &got).map_err(|e| format!("cannot bless: {e}"));
    }
    let want = std::fs::read_to_string(&expected_path)
        .map_err(|e| format!("cannot read {} ({e}); run with RELAY_TEST_BLESS=1", expected_path.display()))?;
    if got != want {
        return Err(format!("fused module differs\n--- expected\n{want}--- actual\n{got}"));
    }
    Ok(())
}

#[test]
fn fuse_ops_goldens() {
    let bless = std::env::var_os("RELAY_TEST_BLESS").is_some_and(|v| v == "1");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/relay/pass/fuse_ops");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "relay"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut failures = vec![];
    if files.len() < 6 {
        failures.push(format!("expected at least 6 fuse_ops goldens, found {}", files.len()));
    }
    for f in &files {
        if let Err(e) = check(f, bless) {
            failures.push(format!("{}: {e}", f.display()));
        }
    }
    assert!(failures.is_empty(), "{} problem(s):\n{}", failures.len(), failures.join("\n"));
}
