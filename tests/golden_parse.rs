//! Parse golden files: every `tests/relay/parse/*.relay` must parse (with the prelude), print,
//! parse back to a structurally equal module, and print identically the second time. The
//! prelude itself must define TVM's prelude names with full annotations and round-trip too.

use relay_compiler::ir::{structurally_equal, FileId, Module};
use relay_compiler::syntax::printer::print_module;
use relay_compiler::syntax::{parse_source, shadowed_prelude};
use relay_stdlib::PRELUDE;
use std::path::Path;

mod common;

/// The functions TVM's `prelude.rly` defines; ours must define the same.
const PRELUDE_FUNCTIONS: [&str; 24] = [
    "id",
    "compose",
    "flip",
    "hd",
    "tl",
    "nth",
    "length",
    "update",
    "map",
    "foldl",
    "foldr",
    "foldr1",
    "sum",
    "concat",
    "filter",
    "zip",
    "rev",
    "map_accuml",
    "map_accumr",
    "unfoldr",
    "unfoldl",
    "tmap",
    "size",
    "iterate",
];

/// The prelude's ADTs: name, number of type parameters, constructors in tag order.
const PRELUDE_ADTS: [(&str, usize, &[&str]); 3] =
    [("List", 1, &["Cons", "Nil"]), ("Option", 1, &["Some", "None"]), ("Tree", 1, &["Rose"])];

/// Parses `files` in order into one module (each file sees the definitions of the earlier
/// ones, as the prelude is seen by a program). Returns the module and the last file's id, or
/// the rendered diagnostics.
fn parse_files(files: &[(&str, &str)]) -> Result<(Module, FileId), String> {
    let mut module = Module::default();
    let mut last = None;
    for &(name, text) in files {
        let file = module.sources.add(name, text);
        parse_source(&mut module, file).map_err(|e| e.render(&module.sources, false))?;
        last = Some(file);
    }
    last.map(|f| (module, f)).ok_or_else(|| "no files to parse".to_string())
}

/// A program parsed after the prelude (without the definitions the program shadows).
fn parse_with_prelude(name: &str, text: &str) -> Result<(Module, FileId), String> {
    parse_files(&[("prelude.relay", &shadowed_prelude(PRELUDE, text)), (name, text)])
}

/// The first line where `a` and `b` differ, for a readable failure message.
fn first_difference(a: &str, b: &str) -> String {
    let mut b_lines = b.lines();
    for (i, la) in a.lines().enumerate() {
        match b_lines.next() {
            Some(lb) if lb == la => continue,
            Some(lb) => return format!("line {}: `{la}` then `{lb}`", i + 1),
            None => return format!("line {}: `{la}` then end of text", i + 1),
        }
    }
    match b_lines.next() {
        Some(lb) => format!("end of text then `{lb}`"),
        None => "texts differ only in line endings".to_string(),
    }
}

/// Print → parse → compare → print again, for the definitions of `file` in `module` (all of
/// them when `None`). `reparse` parses printed text the same way the original was parsed.
fn check_round_trip(
    module: &Module,
    file: Option<FileId>,
    reparse: impl Fn(&str) -> Result<(Module, FileId), String>,
) -> Result<(), String> {
    let printed = print_module(module, file);
    let (module2, file2) = reparse(&printed)
        .map_err(|e| format!("printed text does not parse:\n{e}\nprinted text:\n{printed}"))?;
    let file2 = file.map(|_| file2);
    structurally_equal(module, file, &module2, file2)
        .map_err(|e| format!("printed text parses to a different module: {e}\nprinted text:\n{printed}"))?;
    let printed2 = print_module(&module2, file2);
    if printed2 != printed {
        return Err(format!(
            "printing is not idempotent ({})\nfirst print:\n{printed}\nsecond print:\n{printed2}",
            first_difference(&printed, &printed2)
        ));
    }
    Ok(())
}

/// The whole check for one golden file, parsed as `name`.
fn check_golden(path: &Path, name: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    if !text.starts_with("// ") {
        return Err("the first line must be a `//` comment saying what the file covers".to_string());
    }
    let (module, file) = parse_with_prelude(name, &text).map_err(|e| format!("does not parse:\n{e}"))?;
    check_round_trip(&module, Some(file), |printed| parse_with_prelude(&format!("{name} (printed)"), printed))
}

fn main() {
    let mut trials = common::golden::file_trials("parse", 60, check_golden);
    trials.push(common::golden::unit(
        "prelude_defines_tvm_prelude_with_full_annotations",
        prelude_defines_tvm_prelude_with_full_annotations,
    ));
    trials.push(common::golden::unit("prelude_round_trips", prelude_round_trips));
    common::golden::run(trials);
}

fn prelude_defines_tvm_prelude_with_full_annotations() {
    let (module, _) = parse_files(&[("prelude.relay", PRELUDE)]).unwrap_or_else(|e| panic!("prelude:\n{e}"));
    let mut problems = Vec::new();
    for name in PRELUDE_FUNCTIONS {
        let Some(global) = module.function_by_name(name) else {
            problems.push(format!("@{name} is not defined"));
            continue;
        };
        let func = &global.func;
        if func.ret_type.is_none() {
            problems.push(format!("@{name} has no return type"));
        }
        for &param in &func.params {
            let var = module.var(param);
            if var.ty.is_none() {
                problems.push(format!("parameter %{} of @{name} has no type", module.name(var.name)));
            }
        }
    }
    for (adt, arity, ctors) in PRELUDE_ADTS {
        let Some(def) = module.symbols.get(adt).and_then(|s| module.type_def(s)) else {
            problems.push(format!("type {adt} is not defined"));
            continue;
        };
        if def.type_params.len() != arity {
            problems.push(format!("type {adt} has {} type parameters, not {arity}", def.type_params.len()));
        }
        let names: Vec<&str> = def.constructors.iter().map(|&c| module.name(c)).collect();
        if names != ctors {
            problems.push(format!("type {adt} has constructors {names:?}, not {ctors:?}"));
        }
    }
    assert!(problems.is_empty(), "prelude problems:\n{}", problems.join("\n"));
}

fn prelude_round_trips() {
    let (module, _) = parse_files(&[("prelude.relay", PRELUDE)]).unwrap_or_else(|e| panic!("prelude:\n{e}"));
    let reparse = |printed: &str| parse_files(&[("prelude.relay (printed)", printed)]);
    if let Err(e) = check_round_trip(&module, None, reparse) {
        panic!("prelude: {e}");
    }
}
