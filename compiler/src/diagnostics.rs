//! Compile-time diagnostics: every error carries a span and renders as
//! `error: message`, `--> file:line:col`, the source line and a caret.

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

/// Renders diagnostics as `error: ...`, `--> file:line:col`, the line and a caret.
pub fn render(diagnostics: &[Diagnostic], sources: &SourceMap, color: bool) -> String {
    let mut buf = if color { termcolor::Buffer::ansi() } else { termcolor::Buffer::no_color() };
    // ASCII frame characters: the locus line reads `--> file:line:col` as documented above.
    let config = term::Config { chars: term::Chars::ascii(), ..term::Config::default() };
    for d in diagnostics {
        // Rendering only fails on a span outside its file, which is a compiler bug; fall back
        // to the bare message rather than lose the diagnostic.
        if term::emit(&mut buf, &config, sources, &d.to_codespan()).is_err() {
            let (line, col) = sources.line_col(d.span.file, d.span.lo);
            let name = &sources.file(d.span.file).name;
            let _ = writeln!(buf, "error: {}\n --> {name}:{line}:{col}", d.message);
        }
    }
    String::from_utf8_lossy(buf.as_slice()).into_owned()
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
}
