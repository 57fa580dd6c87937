//! Source comments carried through `fmt` ([`format_file`](super::format_file)).
//!
//! The IR holds no comments, so the formatter lexes the file again and prints each comment
//! just before the first node printed after it in the source: the printer asks for the
//! comments before a node's span when it starts a statement (a `let`, a graph binding, the
//! final expression), any other expression, a definition or a constructor, and for those
//! before the closing bracket when it ends a block. A comment that trailed code in the
//! source trails the previous line when it comes out at the start of a line; otherwise it
//! gets its own line, or stays inline (`/* */`) mid-line. A `//` comment is always followed
//! by a line break. Every comment prints exactly once, in source order, so the output reads
//! back to the same module and formatting it again changes nothing.

use super::super::lexer::{lex, Comment};
use super::super::token::{Token, TokenKind};
use super::{Hole, Printer};
use crate::ir::FileId;

/// The comments of one file not yet printed, and its tokens (to find closing brackets).
pub(super) struct Comments {
    file: FileId,
    list: Vec<Comment>,
    next: usize,
    tokens: Vec<Token>,
}

impl Comments {
    /// Lexes `text`, the contents of `file`.
    pub(super) fn new(file: FileId, text: &str) -> Comments {
        let lexed = lex(text, file);
        Comments { file, list: lexed.comments, next: 0, tokens: lexed.tokens }
    }

    /// Whether `file` is the file whose comments these are.
    pub(super) fn is_file(&self, file: FileId) -> bool {
        self.file == file
    }

    /// The first token at or after byte `pos`, if any.
    fn token_at(&self, pos: u32) -> Option<&Token> {
        self.tokens.get(self.tokens.partition_point(|t| t.lo < pos))
    }

    /// The end of the first `}` at or after byte `pos`: a type definition's closing brace,
    /// since its constructors' field types hold no braces.
    pub(super) fn brace_end_after(&self, pos: u32) -> Option<u32> {
        let from = self.tokens.partition_point(|t| t.lo < pos);
        self.tokens[from..].iter().find(|t| t.kind == TokenKind::RBrace).map(|t| t.hi)
    }

    /// The end of a definition's closing brace, the definition's name ending at byte `pos`:
    /// the last `}` before the next item (`def`, `type`, `extern`, the metadata section) or
    /// the end of the file. Found from the tokens, since no node's span ends there: a `let`
    /// ends before the expressions it scopes, and a graph-form body's tail is a node bound
    /// earlier.
    pub(super) fn def_end_after(&self, pos: u32) -> Option<u32> {
        let from = self.tokens.partition_point(|t| t.lo < pos);
        let rest = &self.tokens[from..];
        let next_item = rest
            .iter()
            .position(|t| {
                matches!(t.kind, TokenKind::Def | TokenKind::Type | TokenKind::Extern | TokenKind::Metadata)
            })
            .unwrap_or(rest.len());
        rest[..next_item].iter().rev().find(|t| t.kind == TokenKind::RBrace).map(|t| t.hi)
    }

    /// Takes the unprinted comments that start before `pos`.
    fn take_before(&mut self, pos: u32) -> &[Comment] {
        let from = self.next;
        while self.list.get(self.next).is_some_and(|c| c.lo < pos) {
            self.next += 1;
        }
        &self.list[from..self.next]
    }

    /// Takes the unprinted comments that trail code on a line ending at or after `end` with
    /// no token in between: those after a definition's last token, on its line.
    fn take_trailing(&mut self, end: u32) -> Vec<Comment> {
        let mut taken = Vec::new();
        while let Some(&c) = self.list.get(self.next) {
            if c.own_line || c.lo < end || self.token_at(end).is_some_and(|t| t.lo < c.lo) {
                break;
            }
            taken.push(c);
            self.next += 1;
        }
        taken
    }
}

impl Printer<'_> {
    /// Prints the comments that come before byte `pos` of `file` in the source.
    pub(super) fn comments_before(&mut self, file: FileId, pos: u32) {
        let Some(comments) = self.comments.as_deref_mut().filter(|c| c.is_file(file)) else { return };
        let taken = comments.take_before(pos).to_vec();
        self.emit_comments(file, &taken, false);
    }

    /// Prints the comments inside a block before its closing bracket, the first token after
    /// `hi` (the end of the block's last expression); the caller breaks the line next.
    pub(super) fn comments_before_close(&mut self, file: FileId, hi: u32) {
        let Some(comments) = self.comments.as_deref_mut().filter(|c| c.is_file(file)) else { return };
        let close = comments.token_at(hi).map_or(u32::MAX, |t| t.lo);
        let taken = comments.take_before(close).to_vec();
        self.emit_comments(file, &taken, true);
    }

    /// Prints the comments that trail an item on the line of its last token, which ends at
    /// byte `end`.
    pub(super) fn comments_after_item(&mut self, file: FileId, end: u32) {
        let Some(comments) = self.comments.as_deref_mut().filter(|c| c.is_file(file)) else { return };
        let taken = comments.take_trailing(end);
        self.emit_comments(file, &taken, true);
    }

    /// Prints every comment not printed yet, each on its own line.
    pub(super) fn remaining_comments(&mut self) {
        let Some(comments) = self.comments.as_deref_mut() else { return };
        let file = comments.file;
        let taken = comments.take_before(u32::MAX).to_vec();
        for c in taken {
            self.emit_comment(file, Comment { own_line: true, ..c }, false);
        }
    }

    /// `closing`: the line breaks after the last comment (the end of a block or item), so a
    /// comment that had its own line in the source gets one here too.
    fn emit_comments(&mut self, file: FileId, taken: &[Comment], closing: bool) {
        for &c in taken {
            self.emit_comment(file, c, closing);
        }
    }

    fn emit_comment(&mut self, file: FileId, c: Comment, closing: bool) {
        let source = &self.m.sources.file(file).text;
        let Some(text) = source.get(c.lo as usize..c.hi as usize) else { return };
        let text = text.trim_end();
        let is_line = text.starts_with("//");
        let line_start = self.out.text.rfind('\n').map_or(0, |i| i + 1);
        // A name (a hole in the text) printed on this line counts as text.
        let name_at = |from: usize| {
            self.out.holes.last().is_some_and(|(pos, h)| *pos >= from && !matches!(h, Hole::FreeVars))
        };
        let at_line_start = self.out.text[line_start..].bytes().all(|b| b == b' ') && !name_at(line_start);
        // The previous line can take a trailing comment unless it already ends in a `//`.
        let previous_line_open = line_start > 0 && self.line_comment_end != Some(line_start - 1);
        if at_line_start && !c.own_line && previous_line_open {
            let at = line_start - 1;
            let inserted = format!(" {text}");
            self.out.text.insert_str(at, &inserted);
            // Names printed at the end of that line stay before the comment.
            for (pos, _) in &mut self.out.holes {
                if *pos > at {
                    *pos += inserted.len();
                }
            }
            if is_line {
                self.line_comment_end = Some(at + inserted.len());
            }
        } else if at_line_start {
            self.w(text);
            if is_line {
                self.line_comment_end = Some(self.out.text.len());
            }
            if !closing {
                self.nl();
            }
        } else {
            let own_line = c.own_line || self.line_comment_end.is_some_and(|e| e >= line_start);
            if closing && own_line {
                self.nl();
            } else if name_at(self.out.text.len()) || !self.out.text.ends_with([' ', '(', '[']) {
                self.w(" ");
            }
            self.w(text);
            if is_line {
                self.line_comment_end = Some(self.out.text.len());
                if !closing {
                    self.nl();
                }
            } else if !closing {
                self.w(" ");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::format_file;
    use super::*;
    use crate::ir::structurally_equal;
    use crate::syntax::parse_with_prelude;
    use std::path::{Path, PathBuf};

    fn comment_texts(text: &str) -> Vec<String> {
        let lexed = lex(text, FileId(0));
        lexed.comments.iter().map(|c| text[c.lo as usize..c.hi as usize].trim_end().to_string()).collect()
    }

    /// Formats `text` and checks the properties `fmt` promises; returns the output, or `None`
    /// when `text` does not parse.
    fn check_format(name: &str, text: &str) -> Option<String> {
        let prelude = include_str!("../../../../prelude.relay");
        let (module, file) = parse_with_prelude(prelude, name, text).ok()?;
        let formatted = format_file(&module, file);
        assert_eq!(
            comment_texts(&formatted),
            comment_texts(text),
            "{name}: comments lost or reordered\n{formatted}"
        );
        let (reparsed, file2) = parse_with_prelude(prelude, name, &formatted)
            .unwrap_or_else(|e| panic!("{name}: output does not parse: {e:?}\n{formatted}"));
        if let Err(diff) = structurally_equal(&module, Some(file), &reparsed, Some(file2)) {
            panic!("{name}: output parses to a different module: {diff}\n{formatted}");
        }
        assert_eq!(format_file(&reparsed, file2), formatted, "{name}: not idempotent");
        Some(formatted)
    }

    #[test]
    fn a_comment_after_a_definitions_closing_brace_stays_there() {
        // A `let` body's span ends before its scope, and a graph-form body's tail is a node
        // bound earlier: neither ends at the closing brace.
        for text in [
            "def @f() {\n  let %x = 1;\n  %x\n} // c0\ndef @g() {\n  0\n}\n",
            "def @f() {\n  %0 = add(1, 2);\n  let %x = %0;\n  %0\n} // c0\n",
        ] {
            let out = check_format("t.relay", text).expect("parses");
            assert!(out.contains("} // c0\n"), "{out}");
        }
    }

    fn relay_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                relay_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "relay") {
                out.push(path);
            }
        }
    }

    #[test]
    fn every_relay_file_of_the_repository_keeps_its_comments() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        for dir in ["tests", "examples", "stdlib", "benches"] {
            relay_files(&root.join(dir), &mut files);
        }
        files.push(root.join("prelude.relay"));
        let formatted = files
            .iter()
            .filter_map(|f| check_format(&f.display().to_string(), &std::fs::read_to_string(f).ok()?))
            .count();
        assert!(formatted > 300, "only {formatted} of {} files parsed", files.len());
    }

    #[test]
    fn comments_in_every_position() {
        let text = "\
// before the type
type Pair {
  // before a constructor
  MkPair(int32, int32), // after a constructor
  /* last */
} // after the type

// before a def
def @f(%x: int32 /* a parameter */, Primitive=1 /* an attribute */) -> int32 {
  let %a = add(%x, 1); // trailing a let
  // inside the let chain
  let %b = multiply(/* an argument */ %a,
    // own line inside a call
    %a);
  %b // the result
  // the end of the body
}

def @g(%p: Pair) -> int32 {
  match (%p) {
    // before an arm
    MkPair(%u, %v) => {
      // inside a match arm
      add(%u, %v) /* ty=int32 */
    },
  }
}
// at the end of the file
";
        let out = check_format("t.relay", text).expect("parses");
        // Comments inside a parameter list or attributes, which carry no spans, move to the
        // next place that has one (here the end of the `def` line).
        let expected = "\
#[version = \"0.0.5\"]
// before the type
type Pair {
  // before a constructor
  MkPair(int32, int32), // after a constructor
  /* last */
} // after the type

// before a def
def @f(%x: int32, Primitive=1) -> int32 { /* a parameter */ /* an attribute */
  let %a = add(%x, 1); // trailing a let
  // inside the let chain
  let %b = multiply(/* an argument */ %a, // own line inside a call
  %a);
  %b // the result
  // the end of the body
}

def @g(%p: Pair) -> int32 {
  match (%p) {
    // before an arm
    MkPair(%u, %v) => {
      // inside a match arm
      add(%u, %v) /* ty=int32 */
    },
  }
}

// at the end of the file
";
        assert_eq!(out, expected);
    }
}
