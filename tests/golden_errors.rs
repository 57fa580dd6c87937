//! Golden tests of front-end diagnostics.
//!
//! Each `tests/relay/errors/*.relay` starts with one line per expected diagnostic:
//! `// error: LINE:COL: message`, where LINE:COL (1-based, counting these header lines) is the
//! start of the primary span and `message` must be a substring of the diagnostic's message.
//! The file is parsed after the prelude; the diagnostics must match the header one to one,
//! and the rendered output must show `--> tests/relay/errors/NAME.relay:LINE:COL` for each.
//!
//! `RELAY_TEST_BLESS=1 cargo test --test golden_errors` rewrites the headers from the actual
//! diagnostics (full messages); review the diff.

use common::Located;
use relay_compiler::diagnostics::Diagnostic;
use relay_compiler::ir::{FileId, Module};
use relay_compiler::syntax::{parse_source, shadowed_prelude};
use std::path::Path;

mod common;

const HEADER: &str = "// error: ";

/// The header's expectations and the number of header lines.
fn read_header(text: &str) -> Result<(Vec<Located>, usize), String> {
    let mut expected = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(HEADER) else { break };
        expected.push(Located::parse(rest).ok_or_else(|| format!("malformed header line `{line}`"))?);
    }
    let n = expected.len();
    Ok((expected, n))
}

/// Parses the prelude and then `text` as `name`; returns the module (for its sources), the
/// file's id and the diagnostics (empty if it parsed).
fn diagnose(name: &str, text: &str) -> Result<(Module, FileId, Vec<Diagnostic>), String> {
    let mut module = Module::default();
    let prelude = module.sources.add("prelude.relay", shadowed_prelude(relay_stdlib::PRELUDE, text));
    let file = module.sources.add(name, text);
    if let Err(e) = parse_source(&mut module, prelude) {
        return Err(format!("the prelude does not parse:\n{}", e.render(&module.sources, false)));
    }
    let diags = match parse_source(&mut module, file) {
        Ok(()) => vec![],
        Err(e) => e.diagnostics,
    };
    Ok((module, file, diags))
}

fn actual(module: &Module, file: FileId, diags: &[Diagnostic]) -> Vec<Located> {
    diags
        .iter()
        .map(|d| {
            let (line, col) = module.sources.line_col(d.span.file, d.span.lo);
            let message = if d.span.file == file {
                d.message.clone()
            } else {
                format!("(in {}) {}", module.sources.file(d.span.file).name, d.message)
            };
            Located { line, col, message }
        })
        .collect()
}

/// Checks one file, parsed as `name`; returns a description of every mismatch.
fn check(path: &Path, name: &str, bless: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let (expected, header_lines) = read_header(&text)?;
    let (module, file, diags) = diagnose(name, &text)?;
    let found = actual(&module, file, &diags);
    let rendered = relay_compiler::diagnostics::render(&diags, &module.sources, false);
    if bless {
        return rewrite_header(path, &text, header_lines, &found);
    }
    let mut problems = Vec::new();
    if expected.is_empty() {
        problems.push("no `// error:` header: an error test must expect at least one diagnostic".to_string());
    }
    let (missing, unexpected) = common::unmatched(&expected, &found);
    problems.extend(missing.iter().map(|e| format!("missing: {}:{}: {}", e.line, e.col, e.message)));
    problems.extend(unexpected.iter().map(|a| format!("unexpected: {}:{}: {}", a.line, a.col, a.message)));
    for a in &found {
        let locus = format!("--> {name}:{}:{}", a.line, a.col);
        if !rendered.contains(&locus) {
            problems.push(format!("rendered output lacks `{locus}`"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "diagnostics differ from the header:\n  {}\nrendered diagnostics:\n{rendered}",
            problems.join("\n  ")
        ))
    }
}

/// Replaces the header with the actual diagnostics. Lines below the header move by the change
/// in header length, so their line numbers are shifted to match.
fn rewrite_header(path: &Path, text: &str, header_lines: usize, found: &[Located]) -> Result<(), String> {
    let shift = |line: usize| (line + found.len()).saturating_sub(header_lines);
    let mut out: String =
        found.iter().map(|a| format!("{HEADER}{}:{}: {}\n", shift(a.line), a.col, a.message)).collect();
    for line in text.lines().skip(header_lines) {
        out.push_str(line);
        out.push('\n');
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}

fn main() {
    let bless = common::bless();
    let mut trials = common::golden::file_trials("errors", 1, move |path, name| check(path, name, bless));
    trials.push(common::golden::unit("header_parsing", header_parsing));
    common::golden::run(trials);
}

fn header_parsing() {
    let (e, n) = read_header("// error: 3:7: unknown global `@f`\n// error: 4:1: x: y\n// other\n").unwrap();
    assert_eq!(n, 2);
    assert_eq!(e[0], Located { line: 3, col: 7, message: "unknown global `@f`".into() });
    assert_eq!(e[1].message, "x: y");
    assert!(read_header("// error: 3: nope\n").is_err());
}
