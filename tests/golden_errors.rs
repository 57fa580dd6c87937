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

use relay_compiler::diagnostics::Diagnostic;
use relay_compiler::ir::{FileId, Module};
use relay_compiler::syntax::parse_source;
use std::path::{Path, PathBuf};

const DIR: &str = "tests/relay/errors";
const HEADER: &str = "// error: ";

/// One expected or actual diagnostic: 1-based line and column, and the message.
#[derive(Clone, Debug, PartialEq)]
struct Expected {
    line: usize,
    col: usize,
    message: String,
}

/// The header's expectations and the number of header lines.
fn read_header(text: &str) -> Result<(Vec<Expected>, usize), String> {
    let mut expected = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(HEADER) else { break };
        let mut parts = rest.splitn(3, ':');
        let (Some(l), Some(c), Some(m)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("malformed header line `{line}`"));
        };
        let (Ok(line_no), Ok(col)) = (l.trim().parse(), c.trim().parse()) else {
            return Err(format!("malformed position in `{line}`"));
        };
        expected.push(Expected { line: line_no, col, message: m.trim().to_string() });
    }
    let n = expected.len();
    Ok((expected, n))
}

/// Parses the prelude and then `text` as `name`; returns the module (for its sources), the
/// file's id and the diagnostics (empty if it parsed).
fn diagnose(name: &str, text: &str) -> Result<(Module, FileId, Vec<Diagnostic>), String> {
    let mut module = Module::default();
    let prelude = module.sources.add("prelude.relay", relay_stdlib::PRELUDE);
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

fn actual(module: &Module, file: FileId, diags: &[Diagnostic]) -> Vec<Expected> {
    diags
        .iter()
        .map(|d| {
            let (line, col) = module.sources.line_col(d.span.file, d.span.lo);
            let message = if d.span.file == file {
                d.message.clone()
            } else {
                format!("(in {}) {}", module.sources.file(d.span.file).name, d.message)
            };
            Expected { line, col, message }
        })
        .collect()
}

/// Checks one file; returns a description of every mismatch.
fn check(path: &Path, bless: bool) -> Result<(), String> {
    let name = format!("{DIR}/{}", path.file_name().and_then(|n| n.to_str()).unwrap_or_default());
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    let (expected, header_lines) = read_header(&text).map_err(|e| format!("{name}: {e}"))?;
    let (module, file, diags) = diagnose(&name, &text).map_err(|e| format!("{name}: {e}"))?;
    let found = actual(&module, file, &diags);
    let rendered = relay_compiler::diagnostics::render(&diags, &module.sources, false);
    if bless {
        return rewrite_header(path, &text, header_lines, &found);
    }
    let mut problems = Vec::new();
    if expected.is_empty() {
        problems.push("no `// error:` header: an error test must expect at least one diagnostic".to_string());
    }
    let mut unmatched: Vec<&Expected> = found.iter().collect();
    for e in &expected {
        let hit = unmatched
            .iter()
            .position(|a| a.line == e.line && a.col == e.col && a.message.contains(&e.message));
        match hit {
            Some(i) => {
                unmatched.remove(i);
            }
            None => problems.push(format!("missing: {}:{}: {}", e.line, e.col, e.message)),
        }
    }
    problems.extend(unmatched.iter().map(|a| format!("unexpected: {}:{}: {}", a.line, a.col, a.message)));
    for a in &found {
        let locus = format!("--> {name}:{}:{}", a.line, a.col);
        if !rendered.contains(&locus) {
            problems.push(format!("rendered output lacks `{locus}`"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{name}:\n  {}\nrendered diagnostics:\n{rendered}", problems.join("\n  ")))
    }
}

/// Replaces the header with the actual diagnostics. Lines below the header move by the change
/// in header length, so their line numbers are shifted to match.
fn rewrite_header(path: &Path, text: &str, header_lines: usize, found: &[Expected]) -> Result<(), String> {
    let shift = |line: usize| (line + found.len()).saturating_sub(header_lines);
    let mut out: String =
        found.iter().map(|a| format!("{HEADER}{}:{}: {}\n", shift(a.line), a.col, a.message)).collect();
    for line in text.lines().skip(header_lines) {
        out.push_str(line);
        out.push('\n');
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}

#[test]
fn golden_error_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bless = std::env::var_os("RELAY_TEST_BLESS").is_some_and(|v| v == "1");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join(DIR))
        .expect("tests/relay/errors exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "relay"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no error tests found");
    let failures: Vec<String> = paths.iter().filter_map(|p| check(p, bless).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} files failed:\n\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n\n")
    );
}

#[test]
fn header_parsing() {
    let (e, n) = read_header("// error: 3:7: unknown global `@f`\n// error: 4:1: x: y\n// other\n").unwrap();
    assert_eq!(n, 2);
    assert_eq!(e[0], Expected { line: 3, col: 7, message: "unknown global `@f`".into() });
    assert_eq!(e[1].message, "x: y");
    assert!(read_header("// error: 3: nope\n").is_err());
}
