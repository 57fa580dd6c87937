//! Bracket matching over the token stream, before parsing.
//!
//! Checking `( ) [ ] { }` up front gives one precise diagnostic for an unclosed or mismatched
//! delimiter instead of a cascade of parse errors, and lets the parser skip over a bracketed
//! region in O(1) (used to decide whether a `let` binds a `fn` literal).

use crate::diagnostics::Diagnostic;
use crate::ir::{FileId, Span};
use crate::syntax::token::{spelling, Token};

/// For every opening delimiter the index of its closing token; other entries are `u32::MAX`.
///
/// # Errors
/// The first unexpected, mismatched or unclosed delimiter.
pub(super) fn match_delimiters(tokens: &[Token], file: FileId) -> Result<Vec<u32>, Diagnostic> {
    let span = |t: &Token| Span::new(file, t.lo, t.hi);
    let mut partner = vec![u32::MAX; tokens.len()];
    let mut open: Vec<usize> = Vec::new();
    for (i, tok) in tokens.iter().enumerate() {
        if tok.kind.is_open_delimiter() {
            open.push(i);
            continue;
        }
        if !tok.kind.is_close_delimiter() {
            continue;
        }
        match open.pop() {
            None => {
                return Err(Diagnostic::error(
                    span(tok),
                    format!("unexpected closing delimiter `{}`", spelling(tok.kind)),
                ))
            }
            Some(o) if tokens[o].kind.closer() == Some(tok.kind) => {
                partner[o] = i as u32;
            }
            Some(o) => {
                let opener = &tokens[o];
                return Err(Diagnostic::error(
                    span(tok),
                    format!("mismatched closing delimiter `{}`", spelling(tok.kind)),
                )
                .with_label(span(opener), format!("unclosed `{}`", spelling(opener.kind))));
            }
        }
    }
    match open.pop() {
        Some(o) => {
            let opener = &tokens[o];
            Err(Diagnostic::error(span(opener), format!("unclosed delimiter `{}`", spelling(opener.kind))))
        }
        None => Ok(partner),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::lexer::lex;

    fn check(text: &str) -> Result<Vec<u32>, String> {
        let lexed = lex(text, FileId(0));
        match_delimiters(&lexed.tokens, FileId(0)).map_err(|d| format!("{}@{}", d.message, d.span.lo))
    }

    #[test]
    fn partners() {
        let p = check("f([1], {2})").unwrap();
        assert_eq!(p[1], 9);
        assert_eq!(p[2], 4);
        assert_eq!(p[6], 8);
    }

    #[test]
    fn errors() {
        assert_eq!(check("(1, 2"), Err("unclosed delimiter `(`@0".into()));
        assert_eq!(check("{ (1 }"), Err("mismatched closing delimiter `}`@5".into()));
        assert_eq!(check("1)"), Err("unexpected closing delimiter `)`@1".into()));
    }
}
