//! Golden files of single passes: every `tests/relay/pass/<PassName>/NAME.relay` (a folder
//! per registered pass, named as the pass) is type-checked, runs the passes of its
//! `// pass: A,B` line (each after the passes it requires), and the printed functions of the
//! file must equal the sibling `NAME.expected`, which must parse and type-check again. A
//! `// entry: NAME` line names the entry functions (`DeadCodeElimination` removes the
//! globals they do not reach). `RELAY_TEST_BLESS=1` writes the `.expected` files; read the
//! diff before committing it. (`pass/fuse_ops` is the whole pipeline's: `tests/golden_fuse.rs`.)

use relay_compiler::pass::{registry, resolve, run_passes, PassContext, Silent};
use relay_compiler::syntax::printer::print_module;
use std::path::Path;

mod common;

fn check(path: &Path, bless: bool) -> Result<(), String> {
    let text = common::read_described(path)?;
    let directive = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
    let names: Vec<&str> = directive("// pass:")
        .ok_or("the file needs a `// pass: Name` line")?
        .split(',')
        .map(str::trim)
        .collect();
    let entries: Vec<&str> =
        directive("// entry:").map(|e| e.split(',').map(str::trim).collect()).unwrap_or_default();
    let passes = resolve(&names)?;
    let checked =
        relay::check(&path.display().to_string(), &text).map_err(|e| format!("does not check:\n{e}"))?;
    let mut module = checked.module;
    let ops = relay_stdlib::op_registry();
    let cx =
        PassContext { ops: &ops, fuse: Default::default(), inline: Default::default(), entries: &entries };
    run_passes(&mut module, &passes, &cx, &mut Silent)
        .map_err(|e| format!("the passes failed:\n{}", e.render(&module.sources, false)))?;
    let printed = print_module(&module, Some(checked.file));
    relay::check("after.relay", &printed)
        .map_err(|e| format!("the result does not check again:\n{e}\n{printed}"))?;
    common::check_expected(path, &printed, bless, "transformed module")
}

fn main() {
    let bless = common::bless();
    let mut trials = vec![];
    let mut folders = 0;
    for pass in registry::PASSES {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/relay/pass").join(pass.name);
        if dir.is_dir() {
            trials.extend(common::golden::file_trials(&format!("pass/{}", pass.name), 3, move |path, _| {
                check(path, bless)
            }));
            folders += 1;
        }
    }
    trials.push(libtest_mimic::Trial::test("golden folders for at least five passes", move || {
        if folders >= 5 {
            Ok(())
        } else {
            Err(format!("golden folders for at least five passes, found {folders}").into())
        }
    }));
    common::golden::run(trials);
}
