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

use relay::compiler::diagnostics::{Diagnostic, Severity};
use relay::compiler::ir::{FileId, Module};
use relay::compiler::syntax::printer::print_type;
use relay::compiler::ty::{infer_types, TypeMap};
use std::path::{Path, PathBuf};

const TYPE: &str = "// type: ";
const ERROR: &str = "// error: ";

/// What a header asks for.
#[derive(Default)]
struct Directives {
    /// `(global name without @, expected printed type)`.
    types: Vec<(String, String)>,
    /// `(line, column, message substring)`.
    errors: Vec<(usize, usize, String)>,
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
            let mut parts = rest.splitn(3, ':');
            let (Some(l), Some(c), Some(msg)) = (parts.next(), parts.next(), parts.next()) else {
                return Err(format!("malformed directive `{line}`: expected `{ERROR}LINE:COL: text`"));
            };
            let num =
                |s: &str| s.trim().parse::<usize>().map_err(|_| format!("malformed position in `{line}`"));
            d.errors.push((num(l)?, num(c)?, msg.trim().to_string()));
        } else {
            d.description.push(line.to_string());
        }
    }
    if d.description.is_empty() {
        return Err("the header needs a `//` line saying what the file covers".to_string());
    }
    Ok(d)
}

/// An error as the directives see it: position in the user's file and first message line.
struct Found {
    line: usize,
    col: usize,
    message: String,
}

fn found_errors(module: &Module, file: FileId, diags: &[Diagnostic]) -> Result<Vec<Found>, String> {
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
        out.push(Found { line, col, message: d.message.clone() });
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
    Failed { found: Vec<Found>, rendered: String },
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
            let mut unmatched: Vec<&Found> = found.iter().collect();
            for (line, col, text) in &d.errors {
                match unmatched
                    .iter()
                    .position(|f| f.line == *line && f.col == *col && f.message.contains(text.as_str()))
                {
                    Some(i) => {
                        unmatched.remove(i);
                    }
                    None => problems
                        .push(format!("expected error at {line}:{col} containing `{text}`: not reported")),
                }
            }
            for f in unmatched {
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

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/relay/typecheck")
}

fn golden_files() -> Vec<PathBuf> {
    let dir = golden_dir();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())).path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "relay"))
        .collect();
    files.sort();
    files
}

fn check_golden(path: &Path, bless: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let name = format!(
        "tests/relay/typecheck/{}",
        path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into())
    );
    let d = parse_directives(&text)?;
    let outcome = run(&name, &text, &d)?;
    if bless {
        let new = blessed(&text, &d, &outcome);
        if new != text {
            std::fs::write(path, new).map_err(|e| format!("cannot write: {e}"))?;
        }
        return Ok(());
    }
    compare(&d, &outcome)
}

#[test]
fn golden_typecheck_files() {
    let bless = std::env::var_os("RELAY_TEST_BLESS").is_some_and(|v| v == "1");
    let files = golden_files();
    let failures: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            check_golden(path, bless).err().map(|reason| format!("--- {name}:\n{reason}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} golden typecheck files failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
    assert!(files.len() >= 50, "expected at least 50 golden typecheck files, found {}", files.len());
}
