//! Compile-time diagnostics: every error carries a span and renders as
//! `error: message`, `--> file:line:col`, the source line and a caret.

pub mod suggest;

use crate::ir::{SourceMap, Span};
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::term::{self, termcolor};
use std::fmt;
use std::io::Write;

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The program is rejected.
    Error,
    /// Worth a look; the program is accepted.
    Warning,
}

/// One message about the source, anchored at a span.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The headline, e.g. ``unknown global `@mian` ``.
    pub message: String,
    /// Where the caret goes.
    pub span: Span,
    /// Further spans with a word each (e.g. "first defined here").
    pub labels: Vec<(Span, String)>,
    /// Trailing notes (`= help: did you mean `%x`?`).
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Error, message: message.into(), span, labels: vec![], notes: vec![] }
    }

    /// Adds a secondary label.
    pub fn with_label(mut self, span: Span, text: impl Into<String>) -> Diagnostic {
        self.labels.push((span, text.into()));
        self
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    fn to_codespan(&self) -> CsDiagnostic<crate::ir::FileId> {
        let base = match self.severity {
            Severity::Error => CsDiagnostic::error(),
            Severity::Warning => CsDiagnostic::warning(),
        };
        let mut labels = vec![Label::primary(self.span.file, self.span.lo as usize..self.span.hi as usize)];
        labels.extend(
            self.labels
                .iter()
                .map(|(s, t)| Label::secondary(s.file, s.lo as usize..s.hi as usize).with_message(t)),
        );
        base.with_message(&self.message).with_labels(labels).with_notes(self.notes.clone())
    }
}

/// The diagnostics of a failed compilation, in source order; returned by every front-end
/// entry point. Render it with [`CompileError::render`].
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct CompileError {
    /// All diagnostics (at least one error).
    pub diagnostics: Vec<Diagnostic>,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
        match self.diagnostics.first() {
            Some(d) if n == 1 => write!(f, "{}", d.message),
            Some(d) => write!(f, "{} (and {} more errors)", d.message, n - 1),
            None => write!(f, "compilation failed"),
        }
    }
}

impl CompileError {
    /// Wraps diagnostics, sorting them by position.
    pub fn new(mut diagnostics: Vec<Diagnostic>) -> CompileError {
        diagnostics.sort_by_key(|d| (d.span.file, d.span.lo));
        CompileError { diagnostics }
    }

    /// Renders every diagnostic with source snippets and carets; `color` adds ANSI colours.
    pub fn render(&self, sources: &SourceMap, color: bool) -> String {
        render(&self.diagnostics, sources, color)
    }
}

/// The most diagnostics [`render`] shows; one last line counts the rest. Stages stop
/// computing "did you mean" notes once they have reported this many.
pub const MAX_SHOWN: usize = 100;

/// The longest source line (in bytes) shown whole under a diagnostic; a label on a longer
/// line shows `EXCERPT` bytes of it around the caret instead.
pub const MAX_LINE: usize = 240;

/// Bytes of a long line shown on each side of a caret.
const EXCERPT: usize = 60;

/// Renders diagnostics as `error: ...`, `--> file:line:col`, the line and a caret. At most
/// [`MAX_SHOWN`] of them, and long lines as excerpts, so the output is bounded whatever the
/// input: a line of a megabyte with a thousand errors on it prints a few kilobytes.
pub fn render(diagnostics: &[Diagnostic], sources: &SourceMap, color: bool) -> String {
    let mut buf = if color { termcolor::Buffer::ansi() } else { termcolor::Buffer::no_color() };
    // ASCII frame characters: the locus line reads `--> file:line:col` as documented above.
    let config = term::Config { chars: term::Chars::ascii(), ..term::Config::default() };
    for d in diagnostics.iter().take(MAX_SHOWN) {
        // Rendering only fails on a span outside its file, which is a compiler bug; fall back
        // to the bare message rather than lose the diagnostic.
        if on_long_line(d, sources) || term::emit(&mut buf, &config, sources, &d.to_codespan()).is_err() {
            render_excerpt(&mut buf, d, sources);
        }
    }
    if diagnostics.len() > MAX_SHOWN {
        let _ = writeln!(buf, "... and {} more diagnostics not shown", diagnostics.len() - MAX_SHOWN);
    }
    String::from_utf8_lossy(buf.as_slice()).into_owned()
}

/// The byte range of the line holding `offset` in `text`.
fn line_around(text: &str, offset: usize) -> std::ops::Range<usize> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    start..end
}

/// Whether a span of `d` starts or ends on a line longer than [`MAX_LINE`].
fn on_long_line(d: &Diagnostic, sources: &SourceMap) -> bool {
    std::iter::once(&d.span).chain(d.labels.iter().map(|(s, _)| s)).any(|s| {
        let text = &sources.file(s.file).text;
        [s.lo, s.hi].iter().any(|&at| line_around(text, at as usize).len() > MAX_LINE)
    })
}

/// Renders `d` as its message, locus, an excerpt of the primary span's line with carets,
/// and its notes (labels on other lines are left out).
fn render_excerpt(buf: &mut termcolor::Buffer, d: &Diagnostic, sources: &SourceMap) {
    let file = sources.file(d.span.file);
    let text = file.text.as_str();
    let (line, col) = sources.line_col(d.span.file, d.span.lo);
    let kind = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let _ = writeln!(buf, "{kind}: {}\n --> {}:{line}:{col}", d.message, file.name);
    let lo = (d.span.lo as usize).min(text.len());
    let whole = line_around(text, lo);
    let from = text.floor_char_boundary(lo.saturating_sub(EXCERPT).max(whole.start));
    let to = text.ceil_char_boundary((lo + EXCERPT).min(whole.end));
    let hi = (d.span.hi as usize).clamp(lo, to);
    let (before, after) =
        (if from > whole.start { "..." } else { "" }, if to < whole.end { "..." } else { "" });
    let pad = before.len() + text[from..lo].chars().count();
    let carets = text[lo..hi].chars().count().max(1);
    let _ = writeln!(buf, "  |\n  | {before}{}{after}", &text[from..to]);
    let _ = writeln!(buf, "  | {}{}", " ".repeat(pad), "^".repeat(carets));
    for note in &d.notes {
        let _ = writeln!(buf, "  = {note}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_file_line_col_and_caret() {
        let mut sources = SourceMap::default();
        let f = sources.add("m.relay", "def @main() {\n  %y\n}\n");
        let err =
            CompileError::new(vec![Diagnostic::error(Span::new(f, 16, 18), "undeclared variable `%y`")]);
        let text = err.render(&sources, false);
        assert!(text.contains("error: undeclared variable `%y`"), "{text}");
        assert!(text.contains("--> m.relay:2:3"), "{text}");
        assert!(text.contains("^^"), "{text}");
        assert_eq!(sources.line_col(f, 16), (2, 3));
    }

    #[test]
    fn long_lines_and_many_diagnostics_are_capped() {
        let mut sources = SourceMap::default();
        let line = format!("{}%y{}", "x".repeat(100_000), "z".repeat(100_000));
        let f = sources.add("m.relay", format!("def @main() {{\n{line}\n}}\n"));
        let at = 14 + 100_000;
        let d = Diagnostic::error(Span::new(f, at, at + 2), "undeclared variable `%y`").with_note("help: x");
        let err = CompileError::new(vec![d; MAX_SHOWN + 5]);
        let text = err.render(&sources, false);
        assert!(text.len() < MAX_SHOWN * 400, "{} bytes", text.len());
        assert!(text.contains("--> m.relay:2:100001"), "{text}");
        assert!(text.contains(&format!("  | ...{}%y{}...\n", "x".repeat(EXCERPT), "z".repeat(EXCERPT - 2))));
        assert!(text.contains(&format!("  | {}^^\n", " ".repeat(EXCERPT + 3))));
        assert!(text.contains("= help: x"));
        assert_eq!(text.matches("error: undeclared").count(), MAX_SHOWN);
        assert!(text.ends_with("... and 5 more diagnostics not shown\n"), "{text}");
    }
}
