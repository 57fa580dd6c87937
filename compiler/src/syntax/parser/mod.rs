//! The recursive-descent parser: tokens → module definitions, resolving local names as it
//! goes and recording global ones for [`resolve`](crate::syntax::resolve).
//!
//! Files: `items` (top level: `def`, `type`, the version header, a bare expression), `expr`
//! (sequences, operators, atoms), `literal`, `types`, `pattern` (`match`), `attrs`,
//! `metadata`, `scope` (name tables), `delimiters` (bracket pre-check).
//!
//! Errors: the first syntax error in a definition abandons it ([`Abort`]) and parsing resumes
//! at the next `def`, `type` or `extern`; name errors are recorded and parsing continues, so
//! one run reports every independent mistake.

mod attrs;
mod delimiters;
mod expr;
mod items;
mod literal;
mod metadata;
mod pattern;
mod scope;
#[cfg(test)]
mod tests;
mod tvm_metadata;
mod types;

use super::lexer::lex;
use super::resolve::{resolve, Unresolved};
use super::token::{Token, TokenKind};
use crate::diagnostics::Diagnostic;
use crate::ir::{ExprId, FileId, Module, Span, Symbol, TypeParamId, VarId};
use rustc_hash::FxHashMap as HashMap;
use scope::ScopedMap;
use std::rc::Rc;

/// Deepest nesting of expressions, types, patterns and attribute lists accepted; beyond it the
/// parser reports an error instead of exhausting memory.
pub const MAX_NESTING: u32 = 100_000;

/// A syntax error was reported; the current definition is abandoned.
#[derive(Debug)]
pub(super) struct Abort;

type PResult<T> = Result<T, Abort>;

/// The constants of this file's `#[metadata]` section in `Module::constants`.
#[derive(Debug, Clone, Copy)]
struct Constants {
    offset: u32,
    count: u32,
    /// The section exists.
    present: bool,
    /// The section failed to load: references to it are not checked.
    broken: bool,
}

/// Parser state for one file.
pub(super) struct Parser<'m> {
    module: &'m mut Module,
    file: FileId,
    text: Rc<str>,
    tokens: Vec<Token>,
    /// Index of the matching closer for each opening delimiter (see `delimiters`).
    partner: Vec<u32>,
    pos: usize,
    diags: Vec<Diagnostic>,
    locals: ScopedMap<Symbol, VarId>,
    type_params: ScopedMap<Symbol, TypeParamId>,
    /// `%N = e;` bindings, one table per enclosing function (inner functions see outer ones).
    graph: Vec<HashMap<u32, ExprId>>,
    depth: u32,
    /// `Some` while parsing the file's bare top-level expression: its `free_var`s.
    free_vars: Option<Vec<VarId>>,
    constants: Constants,
    unresolved: Unresolved,
}

/// Parses `file` of `module.sources` into `module` and checks its names; returns every
/// diagnostic (empty on success).
pub(crate) fn parse_file(module: &mut Module, file: FileId) -> Vec<Diagnostic> {
    let text: Rc<str> = Rc::from(module.sources.file(file).text.as_str());
    let lexed = lex(&text, file);
    let mut diags = lexed.diagnostics;
    if lexed.fatal {
        return diags;
    }
    let partner = match delimiters::match_delimiters(&lexed.tokens, file) {
        Ok(p) => p,
        Err(d) => {
            diags.push(d);
            return diags;
        }
    };
    let offset = module.constants.len() as u32;
    let mut parser = Parser {
        module,
        file,
        text,
        tokens: lexed.tokens,
        partner,
        pos: 0,
        diags,
        locals: ScopedMap::new(),
        type_params: ScopedMap::new(),
        graph: vec![HashMap::default()],
        depth: 0,
        free_vars: None,
        constants: Constants { offset, count: 0, present: false, broken: false },
        unresolved: Unresolved::default(),
    };
    parser.parse_items();
    let Parser { module, diags: mut all, unresolved, .. } = parser;
    all.extend(resolve(module, unresolved));
    all
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        // The token vector always ends with `Eof`, which `bump` never steps over.
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn kind(&self) -> TokenKind {
        self.peek().kind
    }

    /// The kind of the token `n` places ahead (`Eof` past the end).
    fn nth(&self, n: usize) -> TokenKind {
        self.tokens.get(self.pos + n).map_or(TokenKind::Eof, |t| t.kind)
    }

    fn at(&self, kind: TokenKind) -> bool {
        self.kind() == kind
    }

    /// Consumes the current token and returns its index.
    fn bump(&mut self) -> usize {
        let i = self.pos.min(self.tokens.len() - 1);
        if self.tokens[i].kind != TokenKind::Eof {
            self.pos = i + 1;
        }
        i
    }

    fn bump_lo(&mut self) -> u32 {
        let i = self.bump();
        self.tokens[i].lo
    }

    fn bump_span(&mut self) -> Span {
        let i = self.bump();
        self.tok_span(i)
    }

    fn bump_kind(&mut self) -> TokenKind {
        let i = self.bump();
        self.tokens[i].kind
    }

    /// The interned name of identifier, local or global token `i`.
    fn tok_sym(&mut self, i: usize) -> Symbol {
        self.module.symbols.intern(self.tokens[i].name())
    }

    fn eat(&mut self, kind: TokenKind) -> bool {
        let found = self.at(kind);
        if found {
            self.bump();
        }
        found
    }

    /// Consumes a `kind` token or reports "expected `what`, found ...".
    fn expect(&mut self, kind: TokenKind, what: &str) -> PResult<usize> {
        if self.at(kind) {
            Ok(self.bump())
        } else {
            Err(self.unexpected(what))
        }
    }

    /// Consumes a `%name`; a bare identifier in its place gets a hint about the `%`.
    fn expect_local(&mut self, what: &str) -> PResult<usize> {
        if self.at(TokenKind::Local) {
            return Ok(self.bump());
        }
        let abort = self.unexpected(what);
        if self.at(TokenKind::Ident) {
            let note = format!("help: local variables are written with `%`: `%{}`", self.peek().name());
            if let Some(d) = self.diags.last_mut() {
                d.notes.push(note);
            }
        }
        Err(abort)
    }

    /// Reports that the current token is not what the grammar needs here.
    fn unexpected(&mut self, what: &str) -> Abort {
        let tok = self.peek();
        let msg = format!("expected {what}, found {}", tok.describe());
        let span = self.tok_span(self.pos.min(self.tokens.len() - 1));
        self.error(span, msg)
    }

    fn tok(&self, i: usize) -> &Token {
        &self.tokens[i]
    }

    fn tok_span(&self, i: usize) -> Span {
        let t = &self.tokens[i];
        Span::new(self.file, t.lo, t.hi)
    }

    /// The end of the last consumed token.
    fn prev_hi(&self) -> u32 {
        if self.pos == 0 {
            0
        } else {
            self.tokens[self.pos - 1].hi
        }
    }

    /// From `lo` to the end of the last consumed token.
    fn span_from(&self, lo: u32) -> Span {
        Span::new(self.file, lo, self.prev_hi().max(lo))
    }

    fn error(&mut self, span: Span, message: impl Into<String>) -> Abort {
        self.diags.push(Diagnostic::error(span, message));
        Abort
    }

    fn report(&mut self, diag: Diagnostic) {
        self.diags.push(diag);
    }

    fn sym(&mut self, name: &str) -> Symbol {
        self.module.symbols.intern(name)
    }

    /// Runs `f` one nesting level deeper: on a fresh stack segment when the current one runs
    /// low, and not at all beyond [`MAX_NESTING`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_NESTING {
            let span = self.tok_span(self.pos.min(self.tokens.len() - 1));
            return Err(self.error(span, format!("nesting is too deep (more than {MAX_NESTING} levels)")));
        }
        self.depth += 1;
        let result = crate::stack::grow(|| f(self));
        self.depth -= 1;
        result
    }

    /// Skips to the next token that can start a top-level definition.
    fn recover(&mut self) {
        while !matches!(
            self.kind(),
            TokenKind::Def | TokenKind::Type | TokenKind::Extern | TokenKind::Metadata | TokenKind::Eof
        ) {
            self.bump();
        }
    }

    /// Whether a `name=` attribute (the name may be dotted) starts at the current token.
    fn at_attribute(&self) -> bool {
        let mut i = self.pos;
        if self.tokens.get(i).map(|t| t.kind) != Some(TokenKind::Ident) {
            return false;
        }
        i += 1;
        while self.tokens.get(i).map(|t| t.kind) == Some(TokenKind::Dot)
            && self.tokens.get(i + 1).map(|t| t.kind) == Some(TokenKind::Ident)
        {
            i += 2;
        }
        self.tokens.get(i).map(|t| t.kind) == Some(TokenKind::Eq)
    }

    /// `a.b.c`: an identifier and any `.ident` continuations, joined; with its span.
    fn dotted_name(&mut self) -> PResult<(String, Span)> {
        let first = self.expect(TokenKind::Ident, "a name")?;
        let lo = self.tok(first).lo;
        let mut name = self.tok(first).name().to_string();
        while self.at(TokenKind::Dot) && self.nth(1) == TokenKind::Ident {
            self.bump();
            let i = self.bump();
            name.push('.');
            name.push_str(self.tok(i).name());
        }
        Ok((name, self.span_from(lo)))
    }
}
