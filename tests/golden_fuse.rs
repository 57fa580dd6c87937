//! FuseOps golden files: every `tests/relay/pass/fuse_ops/NAME.relay` goes through the
//! lowering pipeline at opt-level 1 (fusion and `FoldFusedConstants` last, without -O2's
//! Relay-level cleanup, which would fold away the constant kernels some files are about)
//! and the printed functions of the file itself must equal the sibling `NAME.expected`.
//!
//! Each file starts with a `//` line saying what it shows; a line `// max_group_size: N`
//! sets the group limit, and `// inline: off` keeps local functions (no `inline_closures`)
//! where the file is about what happens at a call. `RELAY_TEST_BLESS=1` writes the `.expected` files; read the diff
//! before committing it.

use relay_compiler::pass::{lower_for_vm, LowerOptions};
use relay_compiler::syntax::printer::print_module;
use std::path::Path;

mod common;

fn check(path: &Path, bless: bool) -> Result<(), String> {
    let text = common::read_described(path)?;
    let mut options = LowerOptions::at_level(1);
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("// max_group_size:") {
            options.fuse.max_group_size = n.trim().parse().map_err(|e| format!("max_group_size: {e}"))?;
        }
        if line.trim() == "// inline: off" {
            options.inline.enabled = false;
        }
    }
    let checked =
        relay::check(&path.display().to_string(), &text).map_err(|e| format!("does not check:\n{e}"))?;
    let mut module = checked.module;
    lower_for_vm(&mut module, &relay_stdlib::op_registry(), &options)
        .map_err(|e| format!("lowering failed:\n{}", e.render(&module.sources, false)))?;
    common::check_expected(path, &print_module(&module, Some(checked.file)), bless, "fused module")
}

fn main() {
    let bless = common::bless();
    common::golden::run(common::golden::file_trials("pass/fuse_ops", 6, move |path, _| check(path, bless)));
}
