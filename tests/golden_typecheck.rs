//! Type-check golden files: every `tests/relay/typecheck/*.relay` is parsed with the prelude
//! and type-checked against the operator library; the directives in its header comment say
//! what must come out.
//!
//! The header is the run of `//` lines at the top of the file. In it:
//! - `// type: @name: T` — global `@name` has type `T` as `print_type` prints it;
//! - `// error: LINE:COL: text` — a type error at that position (1-based, in characters) whose
//!   message contains `text`. A file with such lines must fail to type-check with exactly
//!   these errors: as many, each at its position with its text.
//!
//! Every other header line describes the file; there must be at least one.
//! `RELAY_TEST_BLESS=1` rewrites the directives from the actual results (the types of the
//! globals already listed, or of all the file's globals when none is; the full message of
//! each error), keeping the description. Check what it writes before committing it.

use common::Located;
use relay::compiler::diagnostics::{Diagnostic, Severity};
use relay::compiler::ir::{FileId, Module};
use relay::compiler::syntax::printer::print_type;
use relay::compiler::ty::{infer_types, TypeMap};
use std::path::Path;

mod common;

const TYPE: &str = "// type: ";
const ERROR: &str = "// error: ";

/// What a header asks for.
#[derive(Default)]
struct Directives {
    /// `(global name without @, expected printed type)`.
    types: Vec<(String, String)>,
    /// Expected errors; each message is a substring of the reported one.
    errors: Vec<Located>,
    /// Header lines that are not directives, in order.
    description: Vec<String>,
}

fn parse_directives(text: &str) -> Result<Directives, String> {
    let mut d = Directives::default();
    for line in text.lines().take_while(|l| l.starts_with("//")) {
        if let Some(rest) = line.strip_prefix(TYPE) {
            let (name, ty) = rest
                .strip_prefix('@')
                .and_then(|r| r.split_once(": "))
                .ok_or_else(|| format!("malformed directive `{line}`: expected `{TYPE}@name: type`"))?;
            d.types.push((name.to_string(), ty.trim().to_string()));
        } else if let Some(rest) = line.strip_prefix(ERROR) {
            let error = Located::parse(rest)
                .ok_or_else(|| format!("malformed directive `{line}`: expected `{ERROR}LINE:COL: text`"))?;
            d.errors.push(error);
        } else {
            d.description.push(line.to_string());
        }
    }
    if d.description.is_empty() {
        return Err("the header needs a `//` line saying what the file covers".to_string());
    }
    Ok(d)
}

/// The errors as the directives see them: positions in the user's file.
fn found_errors(module: &Module, file: FileId, diags: &[Diagnostic]) -> Result<Vec<Located>, String> {
    let mut out = vec![];
    for d in diags.iter().filter(|d| d.severity == Severity::Error) {
        if d.span.file != file {
            return Err(format!(
                "an error outside the file (in {}): {}",
                module.sources.file(d.span.file).name,
                d.message
            ));
        }
        let (line, col) = module.sources.line_col(file, d.span.lo);
        out.push(Located { line, col, message: d.message.clone() });
    }
    Ok(out)
}

/// The type of each listed global, or of every global of `file` when none is listed.
fn global_types(
    module: &mut Module,
    file: FileId,
    map: &TypeMap,
    wanted: &[(String, String)],
) -> Vec<(String, Option<String>)> {
    let names: Vec<String> = if wanted.is_empty() {
        module
            .functions
            .iter()
            .filter(|g| g.span.file == file)
            .map(|g| module.name(g.name).to_string())
            .collect()
    } else {
        wanted.iter().map(|(n, _)| n.clone()).collect()
    };
    names
        .into_iter()
        .map(|n| {
            let ty = module.symbols.get(&n).and_then(|s| map.globals.get(&s)).map(|&t| print_type(module, t));
            (n, ty)
        })
        .collect()
}

/// The outcome of type-checking one file: inferred global types, or the errors (also
/// rendered, for a file expected to type-check).
enum Outcome {
    Typed(Vec<(String, Option<String>)>),
    Failed { found: Vec<Located>, rendered: String },
}

fn run(name: &str, text: &str, d: &Directives) -> Result<Outcome, String> {
    let (mut module, file) = relay::parse(name, text).map_err(|e| format!("does not parse:\n{e}"))?;
    let ops = relay::stdlib::op_registry();
    match infer_types(&mut module, &ops) {
        Ok(map) => Ok(Outcome::Typed(global_types(&mut module, file, &map, &d.types))),
        Err(e) => Ok(Outcome::Failed {
            found: found_errors(&module, file, &e.diagnostics)?,
            rendered: e.render(&module.sources, false),
        }),
    }
}

/// Compares the outcome with the directives; every mismatch is listed.
fn compare(d: &Directives, outcome: &Outcome) -> Result<(), String> {
    let mut problems = vec![];
    match outcome {
        Outcome::Typed(types) => {
            if !d.errors.is_empty() {
                problems.push(format!("expected {} error(s), but the file type-checks", d.errors.len()));
            }
            if d.types.is_empty() && d.errors.is_empty() {
                problems.push("no `// type:` or `// error:` directive".to_string());
            }
            for ((name, want), (_, got)) in d.types.iter().zip(types) {
                match got {
                    Some(got) if got == want => {}
                    Some(got) => problems.push(format!("@{name}: expected `{want}`, inferred `{got}`")),
                    None => problems.push(format!("@{name}: no such global or no type inferred")),
                }
            }
        }
        Outcome::Failed { rendered, .. } if d.errors.is_empty() => {
            problems.push(format!("does not type-check:\n{rendered}"));
        }
        Outcome::Failed { found, .. } => {
            if !d.types.is_empty() {
                problems.push("`// type:` directives need a file that type-checks".to_string());
            }
            let (missing, unexpected) = common::unmatched(&d.errors, found);
            for e in missing {
                problems.push(format!(
                    "expected error at {}:{} containing `{}`: not reported",
                    e.line, e.col, e.message
                ));
            }
            for f in unexpected {
                problems.push(format!("unexpected error at {}:{}: {}", f.line, f.col, f.message));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The file with its directives replaced by the actual outcome; error lines shift by the
/// change in the number of directive lines.
fn blessed(text: &str, d: &Directives, outcome: &Outcome) -> String {
    let old = d.types.len() + d.errors.len();
    let mut header: Vec<String> = match outcome {
        Outcome::Typed(types) => {
            types.iter().map(|(n, t)| format!("{TYPE}@{n}: {}", t.as_deref().unwrap_or("<none>"))).collect()
        }
        Outcome::Failed { found, .. } => found
            .iter()
            .map(|f| {
                let line = f.line + found.len() - old;
                format!("{ERROR}{line}:{}: {}", f.col, f.message.lines().next().unwrap_or(""))
            })
            .collect(),
    };
    header.extend(d.description.iter().cloned());
    let body: Vec<&str> = text.lines().skip_while(|l| l.starts_with("//")).collect();
    let mut out = header.join("\n");
    out.push('\n');
    out.push_str(&body.join("\n"));
    out.push('\n');
    out
}

fn check_golden(path: &Path, name: &str, bless: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let d = parse_directives(&text)?;
    let outcome = run(name, &text, &d)?;
    if bless {
        let new = blessed(&text, &d, &outcome);
        if new != text {
            std::fs::write(path, new).map_err(|e| format!("cannot write: {e}"))?;
        }
        return Ok(());
    }
    compare(&d, &outcome)
}

fn main() {
    let bless = common::bless();
    common::golden::run(common::golden::file_trials("typecheck", 50, move |path, name| {
        check_golden(path, name, bless)
    }));
}
