//! Shadowing the prelude: a program's own definitions replace the prelude's of the same name.
//!
//! TVM parses a program without a prelude, so texts printed by TVM define `@id`, `@sum`,
//! `List` or `Nil` themselves. Here the prelude is in scope, and such a definition would be a
//! duplicate; instead the prelude's definition is left out — and with it every prelude
//! definition that uses a name it defines (the prelude's `@map` calls `Cons`; once the program
//! defines its own `List`, that `@map` would not type-check against it). The rest of the
//! prelude stays.
//!
//! Both texts are scanned with the lexer, not parsed: a top-level item runs from its `def`,
//! `type` or `extern` to the next one, and what it defines is the `@name` after `def`, or the
//! type's name and its constructors. Left-out items are blanked with spaces (newlines kept), so
//! every span into the prelude still points at the same line and column.

use super::lexer::lex;
use super::token::{Token, TokenKind};
use crate::ir::FileId;
use rustc_hash::FxHashSet as HashSet;
use std::ops::Range;

/// One top-level item of a file: its byte range, the names it defines and those it mentions.
struct Item {
    range: Range<usize>,
    defines: Vec<Name>,
    mentions: HashSet<Name>,
}

/// A global (`@name`) or a type-level name (an ADT or a constructor).
#[derive(Clone, PartialEq, Eq, Hash)]
enum Name {
    Global(Box<str>),
    Type(Box<str>),
}

/// `prelude` with every definition that `program` shadows left out (see the module docs),
/// byte for byte the same length and with the same line breaks.
pub fn shadowed_prelude(prelude: &str, program: &str) -> String {
    let own: HashSet<Name> = items(program).into_iter().flat_map(|i| i.defines).collect();
    let items = items(prelude);
    let mut dropped = vec![false; items.len()];
    let mut gone: HashSet<Name> = HashSet::default();
    // Until nothing changes: an item goes if the program defines one of its names or it
    // mentions a name defined by an item that went.
    loop {
        let mut changed = false;
        for (i, item) in items.iter().enumerate() {
            if !dropped[i]
                && (item.defines.iter().any(|n| own.contains(n))
                    || item.mentions.iter().any(|n| gone.contains(n)))
            {
                dropped[i] = true;
                gone.extend(item.defines.iter().cloned());
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut bytes = prelude.as_bytes().to_vec();
    for item in items.iter().zip(&dropped).filter(|(_, &d)| d).map(|(i, _)| i) {
        for b in &mut bytes[item.range.clone()] {
            if !b.is_ascii_whitespace() {
                *b = b' ';
            }
        }
    }
    // Only whole items were blanked, and items start and end on token boundaries, so the
    // text is still UTF-8; the fallback never runs.
    String::from_utf8(bytes).unwrap_or_else(|_| prelude.to_string())
}

/// The top-level `def`, `type` and `extern type` items of `text`.
fn items(text: &str) -> Vec<Item> {
    let tokens = lex(text, FileId(0)).tokens;
    let mut starts = vec![];
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate() {
        if depth == 0 && matches!(t.kind, TokenKind::Def | TokenKind::Type | TokenKind::Extern) {
            // `extern type T` is one item.
            if !(t.kind == TokenKind::Type && i > 0 && tokens[i - 1].kind == TokenKind::Extern) {
                starts.push(i);
            }
        }
        if t.kind.is_open_delimiter() {
            depth += 1;
        } else if t.kind.is_close_delimiter() {
            depth = depth.saturating_sub(1);
        }
    }
    let ends = starts.iter().skip(1).copied().chain([tokens.len().saturating_sub(1)]);
    starts.iter().zip(ends).map(|(&a, b)| item(text, &tokens[a..b])).collect()
}

fn item(text: &str, tokens: &[Token]) -> Item {
    let lo = tokens.first().map_or(0, |t| t.lo as usize);
    let hi = tokens.last().map_or(lo, |t| t.hi as usize).min(text.len());
    let mut defines = vec![];
    let mut mentions = HashSet::default();
    let head = tokens.iter().position(|t| t.kind != TokenKind::Extern).unwrap_or(0);
    let is_type = tokens.get(head).is_some_and(|t| t.kind == TokenKind::Type);
    let mut depth = 0usize;
    let mut in_body = false;
    for (i, t) in tokens.iter().enumerate() {
        match t.kind {
            TokenKind::Global if i == head + 1 => defines.push(Name::Global(t.name().into())),
            TokenKind::Ident if is_type && i == head + 1 => defines.push(Name::Type(t.name().into())),
            // A constructor: a name directly inside the type's braces.
            TokenKind::Ident if is_type && in_body && depth == 1 => defines.push(Name::Type(t.name().into())),
            TokenKind::Global => {
                mentions.insert(Name::Global(t.name().into()));
            }
            TokenKind::Ident => {
                mentions.insert(Name::Type(t.name().into()));
            }
            _ => {}
        }
        if t.kind == TokenKind::LBrace && depth == 0 {
            in_body = true;
        }
        if t.kind.is_open_delimiter() {
            depth += 1;
        } else if t.kind.is_close_delimiter() {
            depth = depth.saturating_sub(1);
        }
    }
    Item { range: lo..hi, defines, mentions }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRELUDE: &str = "type List[A] { Cons(A, List[A]), Nil }\n\
        def @id[A](%x: A) -> A { %x }\n\
        def @map[A, B](%f: fn (A) -> B, %xs: List[A]) -> List[B] { Nil }\n\
        def @twice(%x: int32) { @id(%x) }\n";

    fn kept(program: &str) -> Vec<String> {
        let text = shadowed_prelude(PRELUDE, program);
        assert_eq!(text.len(), PRELUDE.len());
        assert_eq!(text.lines().count(), PRELUDE.lines().count());
        items(&text)
            .into_iter()
            .flat_map(|i| i.defines)
            .map(|n| match n {
                Name::Global(g) => format!("@{g}"),
                Name::Type(t) => t.to_string(),
            })
            .collect()
    }

    #[test]
    fn nothing_shadowed_keeps_everything() {
        assert_eq!(kept("def @main() { 1 }"), ["List", "Cons", "Nil", "@id", "@map", "@twice"]);
    }

    #[test]
    fn a_shadowed_definition_and_its_users_go() {
        assert_eq!(kept("def @id(%x: int32) { %x }"), ["List", "Cons", "Nil", "@map"]);
        // Defining `Nil` (in another type) takes `List` and everything that mentions it.
        assert_eq!(kept("type T { Nil }"), ["@id", "@twice"]);
        assert_eq!(kept("extern type List"), ["@id", "@twice"]);
    }

    #[test]
    fn mentions_do_not_shadow() {
        assert_eq!(kept("def @main() { @id(Nil) }").len(), 6);
    }
}
