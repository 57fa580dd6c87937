//! The lexer: source text → [`Token`]s, with a diagnostic for every malformed token.
//!
//! Differences from TVM's tokenizer (`src/parser/tokenizer.h`), all deliberate:
//! - `-` is always its own token; the parser folds it into a following numeric literal, so
//!   `%x-1` is a subtraction rather than two adjacent expressions.
//! - Digits right after a `.` are an integer, never the start of a float, so `%x.0.1` is two
//!   projections.
//! - `->`, `=>`, `==`, `!=`, `<=`, `>=` are single tokens.
//! - Literal suffixes are checked: `i i8 i16 i32 i64 u8 u16 u32 u64 f f16 bf16 f32 f64` (TVM has
//!   no `u` or `bf16` suffixes; we accept them so that every scalar literal has a spelling).
//! - `nanf` is a float literal next to `inff`; strings may contain `\"`, `\\`, `\n`, `\t`.
//! - Names after `%` and `@` may contain `/` (as TVM's identifiers do) and `.` (which TVM's
//!   lexer splits off), the spellings of ONNX and PyTorch names (`%conv/1`, `%fc1.weight`,
//!   `%/layer1/Conv_output_0`, `%features.0.weight`); see [`sigil_name_len`]. Bare
//!   identifiers (operators, constructors, types, attribute keys) keep TVM's letters and
//!   digits, with `.` a separate token.

use super::token::{FloatLit, IntLit, Token, TokenKind, TokenValue};
use crate::diagnostics::Diagnostic;
use crate::ir::{FileId, Span};
use relay_devices::DType;

/// The tokens of a file (always ending with [`TokenKind::Eof`]) and the lexical errors.
#[derive(Debug)]
pub struct Lexed {
    /// Tokens in order; comments and whitespace are dropped.
    pub tokens: Vec<Token>,
    /// The `//` and `/* */` comments in order, for the formatter (the parser ignores them).
    pub comments: Vec<Comment>,
    /// Malformed tokens, unterminated comments and strings, stray characters.
    pub diagnostics: Vec<Diagnostic>,
    /// Whether some text could not be turned into a token at all (a stray character, an
    /// unterminated comment or string): parsing what is left would only report consequences.
    pub fatal: bool,
}

/// A comment's place in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comment {
    /// First byte (the `/`).
    pub lo: u32,
    /// One past the last byte (a `//` comment stops before its newline).
    pub hi: u32,
    /// Whether only whitespace precedes it on its line; otherwise it trails code.
    pub own_line: bool,
}

/// Splits `text` (the contents of `file`) into tokens.
pub fn lex(text: &str, file: FileId) -> Lexed {
    let mut lexer = Lexer {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        file,
        tokens: vec![],
        comments: vec![],
        diagnostics: vec![],
        fatal: false,
    };
    lexer.run();
    Lexed {
        tokens: lexer.tokens,
        comments: lexer.comments,
        diagnostics: lexer.diagnostics,
        fatal: lexer.fatal,
    }
}

struct Lexer<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    file: FileId,
    tokens: Vec<Token>,
    comments: Vec<Comment>,
    diagnostics: Vec<Diagnostic>,
    fatal: bool,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The length of the name at the start of `bytes` (after a `%` or `@`), 0 if there is none.
///
/// A name is a first segment `[A-Za-z_/][A-Za-z0-9_/]*` followed by `.segment`s of
/// `[A-Za-z0-9_/]+`, up to the last segment that is not all digits: trailing `.0`, `.1` are
/// tuple projections, so `%t.0.1` projects twice while `%features.0.weight` is one name. A `/`
/// belongs to the name only when a name character follows it, so `%a/%b` and `%a/ 2` still
/// divide; `%x/2` is the name `x/2`, as in TVM.
pub(crate) fn sigil_name_len(bytes: &[u8]) -> usize {
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let is_part = |i: usize| match at(i) {
        b'/' => is_ident_continue(at(i + 1)),
        b => is_ident_continue(b),
    };
    if !(is_ident_start(at(0)) || at(0) == b'/' && is_part(0)) {
        return 0;
    }
    let mut i = 1;
    while is_part(i) {
        i += 1;
    }
    let mut end = i;
    while at(i) == b'.' && is_part(i + 1) {
        let seg = i + 1;
        i = seg;
        while is_part(i) {
            i += 1;
        }
        if !bytes[seg..i].iter().all(u8::is_ascii_digit) {
            end = i;
        }
    }
    end
}

impl Lexer<'_> {
    fn peek_at(&self, offset: usize) -> u8 {
        self.bytes.get(self.pos + offset).copied().unwrap_or(0)
    }

    fn span(&self, lo: usize, hi: usize) -> Span {
        Span::new(self.file, lo as u32, hi as u32)
    }

    fn error(&mut self, lo: usize, hi: usize, message: impl Into<String>) {
        let span = self.span(lo, hi);
        self.diagnostics.push(Diagnostic::error(span, message));
    }

    /// An error after which the token stream is incomplete.
    fn fatal_error(&mut self, lo: usize, hi: usize, message: impl Into<String>) {
        self.fatal = true;
        self.error(lo, hi, message);
    }

    fn push(&mut self, kind: TokenKind, value: TokenValue, lo: usize) {
        self.tokens.push(Token { kind, value, lo: lo as u32, hi: self.pos as u32 });
    }

    fn after_dot(&self) -> bool {
        self.tokens.last().is_some_and(|t| t.kind == TokenKind::Dot)
    }

    fn run(&mut self) {
        // A UTF-8 byte order mark is not part of the text.
        if self.text.starts_with('\u{feff}') {
            self.pos = '\u{feff}'.len_utf8();
        }
        while self.pos < self.bytes.len() {
            let lo = self.pos;
            let b = self.bytes[lo];
            match b {
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => self.pos += 1,
                b'/' if self.peek_at(1) == b'/' => {
                    while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                    // A `\r\n` line ending is not part of the comment.
                    let hi = if self.bytes[..self.pos].ends_with(b"\r") { self.pos - 1 } else { self.pos };
                    self.comment(lo, hi);
                }
                b'/' if self.peek_at(1) == b'*' => {
                    self.block_comment();
                    if !self.fatal {
                        self.comment(lo, self.pos);
                    }
                }
                b'0'..=b'9' => self.number(),
                b'"' => self.string(),
                b'%' => self.sigil_name(TokenKind::Local),
                b'@' => self.sigil_name(TokenKind::Global),
                b'#' => {
                    if self.attribute() {
                        return self.finish();
                    }
                }
                _ if is_ident_start(b) => self.word(),
                _ => self.punctuation(),
            }
        }
        self.finish();
    }

    fn finish(&mut self) {
        self.pos = self.bytes.len();
        let end = self.pos;
        self.push(TokenKind::Eof, TokenValue::None, end);
    }

    fn comment(&mut self, lo: usize, hi: usize) {
        // Only the blanks just before it are scanned, so lexing stays linear.
        let before = self.bytes[..lo].iter().rev().find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\x0c'));
        let own_line = before.is_none_or(|&b| b == b'\n');
        self.comments.push(Comment { lo: lo as u32, hi: hi as u32, own_line });
    }

    /// `/* ... */`, nesting like TVM's.
    fn block_comment(&mut self) {
        let lo = self.pos;
        self.pos += 2;
        let mut depth = 1usize;
        while self.pos < self.bytes.len() {
            match (self.bytes[self.pos], self.peek_at(1)) {
                (b'/', b'*') => {
                    depth += 1;
                    self.pos += 2;
                }
                (b'*', b'/') => {
                    depth -= 1;
                    self.pos += 2;
                    if depth == 0 {
                        return;
                    }
                }
                _ => self.pos += 1,
            }
        }
        self.fatal_error(lo, lo + 2, "unterminated block comment");
    }

    fn punctuation(&mut self) {
        use TokenKind as K;
        let lo = self.pos;
        let (kind, len) = match (self.bytes[lo], self.peek_at(1)) {
            (b'-', b'>') => (K::Arrow, 2),
            (b'=', b'>') => (K::FatArrow, 2),
            (b'=', b'=') => (K::EqEq, 2),
            (b'!', b'=') => (K::NotEq, 2),
            (b'<', b'=') => (K::Le, 2),
            (b'>', b'=') => (K::Ge, 2),
            (b'(', _) => (K::LParen, 1),
            (b')', _) => (K::RParen, 1),
            (b'[', _) => (K::LBracket, 1),
            (b']', _) => (K::RBracket, 1),
            (b'{', _) => (K::LBrace, 1),
            (b'}', _) => (K::RBrace, 1),
            (b',', _) => (K::Comma, 1),
            (b'.', _) => (K::Dot, 1),
            (b';', _) => (K::Semi, 1),
            (b':', _) => (K::Colon, 1),
            (b'=', _) => (K::Eq, 1),
            (b'<', _) => (K::Lt, 1),
            (b'>', _) => (K::Gt, 1),
            (b'+', _) => (K::Plus, 1),
            (b'-', _) => (K::Minus, 1),
            (b'*', _) => (K::Star, 1),
            (b'/', _) => (K::Slash, 1),
            (b'?', _) => (K::Question, 1),
            _ => {
                // Step over a whole UTF-8 character so spans stay on character boundaries.
                let ch = self.text[lo..].chars().next().unwrap_or('\u{fffd}');
                self.pos += ch.len_utf8().max(1);
                let hi = self.pos;
                self.fatal_error(lo, hi, format!("unexpected character `{}`", ch.escape_debug()));
                return;
            }
        };
        self.pos += len;
        self.push(kind, TokenValue::None, lo);
    }

    /// An identifier, keyword, `match?`, or the float literals `inff`/`nanf`.
    fn word(&mut self) {
        let lo = self.pos;
        while self.pos < self.bytes.len() && is_ident_continue(self.bytes[self.pos]) {
            self.pos += 1;
        }
        let word = &self.text[lo..self.pos];
        if let Some(lit) = special_float(word) {
            self.push(TokenKind::Float, TokenValue::Float(lit), lo);
            return;
        }
        match TokenKind::keyword(word) {
            Some(TokenKind::Match) if self.peek_at(0) == b'?' => {
                self.pos += 1;
                self.push(TokenKind::MatchPartial, TokenValue::None, lo);
            }
            Some(kind) => self.push(kind, TokenValue::None, lo),
            None => self.push(TokenKind::Ident, TokenValue::Name(word.into()), lo),
        }
    }

    /// `%name`, `%0` or `@name`.
    fn sigil_name(&mut self, kind: TokenKind) {
        let lo = self.pos;
        self.pos += 1;
        let start = self.pos;
        let next = self.peek_at(0);
        if kind == TokenKind::Local && next.is_ascii_digit() {
            while self.peek_at(0).is_ascii_digit() {
                self.pos += 1;
            }
            match self.text[start..self.pos].parse::<u32>() {
                Ok(n) => self.push(TokenKind::Graph, TokenValue::Graph(n), lo),
                Err(_) => {
                    let hi = self.pos;
                    self.fatal_error(lo, hi, "graph variable number is too large");
                }
            }
        } else if sigil_name_len(&self.bytes[start..]) > 0 {
            self.pos += sigil_name_len(&self.bytes[start..]);
            let name = self.text[start..self.pos].into();
            self.push(kind, TokenValue::Name(name), lo);
        } else {
            let sigil = if kind == TokenKind::Local { '%' } else { '@' };
            self.fatal_error(lo, lo + 1, format!("expected a name after `{sigil}`"));
        }
    }

    fn string(&mut self) {
        let lo = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(ch) = self.text[self.pos..].chars().next() else {
                self.fatal_error(lo, lo + 1, "unterminated string literal");
                self.push(TokenKind::Str, TokenValue::Str(out.into()), lo);
                return;
            };
            self.pos += ch.len_utf8();
            match ch {
                '"' => break,
                '\\' => {
                    let esc_lo = self.pos - 1;
                    let Some(e) = self.text[self.pos..].chars().next() else { continue };
                    self.pos += e.len_utf8();
                    match e {
                        '"' => out.push('"'),
                        '\\' => out.push('\\'),
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        _ => {
                            let hi = self.pos;
                            self.error(
                                esc_lo,
                                hi,
                                format!("unknown escape `\\{}` in string", e.escape_debug()),
                            );
                        }
                    }
                }
                c => out.push(c),
            }
        }
        self.push(TokenKind::Str, TokenValue::Str(out.into()), lo);
    }

    /// `#[metadata]` (returns true: the rest of the file is JSON) or `#[` of another attribute.
    fn attribute(&mut self) -> bool {
        let lo = self.pos;
        if self.peek_at(1) != b'[' {
            self.pos += 1;
            self.fatal_error(lo, lo + 1, "expected `[` after `#`");
            return false;
        }
        let mut p = lo + 2;
        let skip_ws = |mut p: usize| {
            while self.bytes.get(p).is_some_and(|b| b.is_ascii_whitespace()) {
                p += 1;
            }
            p
        };
        p = skip_ws(p);
        if self.bytes[p..].starts_with(b"metadata")
            && !self.bytes.get(p + 8).copied().is_some_and(is_ident_continue)
        {
            let q = skip_ws(p + 8);
            if self.bytes.get(q) == Some(&b']') {
                self.pos = self.bytes.len();
                self.push(TokenKind::Metadata, TokenValue::Metadata(q as u32 + 1), lo);
                return true;
            }
        }
        self.pos += 2;
        self.push(TokenKind::HashBracket, TokenValue::None, lo);
        false
    }

    fn number(&mut self) {
        let lo = self.pos;
        while self.peek_at(0).is_ascii_digit() {
            self.pos += 1;
        }
        let mut is_float = false;
        // After `.` only digits belong to the number: `%t.0.1` projects twice.
        if !self.after_dot() {
            if self.peek_at(0) == b'.' && self.peek_at(1).is_ascii_digit() {
                is_float = true;
                self.pos += 1;
                while self.peek_at(0).is_ascii_digit() {
                    self.pos += 1;
                }
            }
            let sign = matches!(self.peek_at(1), b'+' | b'-');
            let exp_digit = if sign { self.peek_at(2) } else { self.peek_at(1) };
            if matches!(self.peek_at(0), b'e' | b'E') && exp_digit.is_ascii_digit() {
                is_float = true;
                self.pos += if sign { 2 } else { 1 };
                while self.peek_at(0).is_ascii_digit() {
                    self.pos += 1;
                }
            }
        }
        let digits_end = self.pos;
        let suffix_lo = self.pos;
        if !self.after_dot() && is_ident_start(self.peek_at(0)) {
            while is_ident_continue(self.peek_at(0)) {
                self.pos += 1;
            }
        }
        let digits = &self.text[lo..digits_end];
        let suffix = &self.text[suffix_lo..self.pos];
        match parse_suffix(suffix) {
            Suffix::Int(dtype) if !is_float => self.int_token(lo, digits, dtype),
            Suffix::Int(_) => {
                let hi = self.pos;
                self.error(lo, hi, format!("integer suffix `{suffix}` on a float literal"));
                self.float_token(lo, digits, DType::F32);
            }
            Suffix::Float(dtype) => self.float_token(lo, digits, dtype),
            Suffix::None if is_float => self.float_token(lo, digits, DType::F32),
            Suffix::None => self.int_token(lo, digits, None),
            Suffix::Bad => {
                let hi = self.pos;
                self.error(suffix_lo, hi, format!("invalid literal suffix `{suffix}`"));
                // Keep a token so that the parser reports nothing further here.
                if is_float {
                    self.float_token(lo, digits, DType::F32);
                } else {
                    self.int_token(lo, digits, None);
                }
            }
        }
    }

    fn int_token(&mut self, lo: usize, digits: &str, dtype: Option<DType>) {
        match digits.parse::<u64>() {
            Ok(magnitude) => self.push(TokenKind::Int, TokenValue::Int(IntLit { magnitude, dtype }), lo),
            Err(_) => {
                let hi = self.pos;
                self.error(lo, hi, format!("integer literal `{digits}` is too large"));
                let zero = IntLit { magnitude: 0, dtype };
                self.push(TokenKind::Int, TokenValue::Int(zero), lo);
            }
        }
    }

    fn float_token(&mut self, lo: usize, digits: &str, dtype: DType) {
        // `digits` matched [0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)?, which `f64::from_str` accepts.
        let magnitude = digits.parse::<f64>().unwrap_or(f64::NAN);
        self.push(TokenKind::Float, TokenValue::Float(FloatLit { magnitude, dtype }), lo);
    }
}

enum Suffix {
    None,
    Int(Option<DType>),
    Float(DType),
    Bad,
}

fn parse_suffix(suffix: &str) -> Suffix {
    match suffix {
        "" => Suffix::None,
        "f" => Suffix::Float(DType::F32),
        // TVM's bare `i` is int32 (`-42i`), with no widening to int64.
        "i" => Suffix::Int(Some(DType::I32)),
        // Ours, as the `u` ones are: TVM prints a bfloat16 scalar as a metadata constant.
        "bf16" => Suffix::Float(DType::BF16),
        "f16" | "f32" | "f64" | "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" => {
            let name = match &suffix[..1] {
                "f" => "float",
                "i" => "int",
                _ => "uint",
            };
            match format!("{name}{}", &suffix[1..]).parse::<DType>() {
                Ok(d) if d.is_float() => Suffix::Float(d),
                Ok(d) => Suffix::Int(Some(d)),
                Err(_) => Suffix::Bad,
            }
        }
        _ => Suffix::Bad,
    }
}

/// `inff`, `nanf` and their `f16`/`bf16`/`f32`/`f64` forms.
fn special_float(word: &str) -> Option<FloatLit> {
    let (magnitude, rest) = if let Some(r) = word.strip_prefix("inf") {
        (f64::INFINITY, r)
    } else if let Some(r) = word.strip_prefix("nan") {
        (f64::NAN, r)
    } else {
        return None;
    };
    match parse_suffix(rest) {
        Suffix::Float(dtype) => Some(FloatLit { magnitude, dtype }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TokenKind as K;

    fn kinds(text: &str) -> Vec<TokenKind> {
        let lexed = lex(text, FileId(0));
        assert!(lexed.diagnostics.is_empty(), "{:?}", lexed.diagnostics);
        lexed.tokens.iter().map(|t| t.kind).collect()
    }

    fn single(text: &str) -> TokenValue {
        let lexed = lex(text, FileId(0));
        assert!(lexed.diagnostics.is_empty(), "{text}: {:?}", lexed.diagnostics);
        assert_eq!(lexed.tokens.len(), 2, "{text}: {:?}", lexed.tokens);
        lexed.tokens[0].value.clone()
    }

    fn int(text: &str) -> (u64, Option<DType>) {
        match single(text) {
            TokenValue::Int(i) => (i.magnitude, i.dtype),
            v => panic!("{text}: {v:?}"),
        }
    }

    fn float(text: &str) -> (f64, DType) {
        match single(text) {
            TokenValue::Float(f) => (f.magnitude, f.dtype),
            v => panic!("{text}: {v:?}"),
        }
    }

    #[test]
    fn punctuation_and_keywords() {
        assert_eq!(
            kinds("def @f(%x) -> T { match? (%x) { _ => 1 } }"),
            vec![
                K::Def,
                K::Global,
                K::LParen,
                K::Local,
                K::RParen,
                K::Arrow,
                K::Ident,
                K::LBrace,
                K::MatchPartial,
                K::LParen,
                K::Local,
                K::RParen,
                K::LBrace,
                K::Underscore,
                K::FatArrow,
                K::Int,
                K::RBrace,
                K::RBrace,
                K::Eof
            ]
        );
        assert_eq!(
            kinds("== != <= >= < > = + - * / ? : ; , ."),
            vec![
                K::EqEq,
                K::NotEq,
                K::Le,
                K::Ge,
                K::Lt,
                K::Gt,
                K::Eq,
                K::Plus,
                K::Minus,
                K::Star,
                K::Slash,
                K::Question,
                K::Colon,
                K::Semi,
                K::Comma,
                K::Dot,
                K::Eof
            ]
        );
        assert_eq!(kinds("match ?"), vec![K::Match, K::Question, K::Eof]);
        let words = kinds("True False free_var ref ref_read ref_write extern type let if else fn _");
        assert_eq!(words.len(), 14);
        assert!(!words.contains(&K::Ident));
    }

    #[test]
    fn names() {
        let lexed = lex("%x1 %0 %12 @main nn.conv2d", FileId(0));
        let t = &lexed.tokens;
        assert_eq!((t[0].kind, t[0].name()), (K::Local, "x1"));
        assert_eq!(t[1].value, TokenValue::Graph(0));
        assert_eq!(t[2].value, TokenValue::Graph(12));
        assert_eq!((t[3].kind, t[3].name()), (K::Global, "main"));
        assert_eq!(t[4].name(), "nn");
        assert_eq!(t[5].kind, K::Dot);
        assert_eq!(t[6].name(), "conv2d");
        assert_eq!((t[0].lo, t[0].hi), (0, 3));
    }

    #[test]
    fn names_with_dots_and_slashes() {
        let name = |text: &str| {
            let lexed = lex(text, FileId(0));
            assert!(lexed.diagnostics.is_empty(), "{text}: {:?}", lexed.diagnostics);
            (lexed.tokens[0].name().to_string(), lexed.tokens.len() - 2)
        };
        assert_eq!(name("%fc1.weight"), ("fc1.weight".into(), 0));
        assert_eq!(name("%conv/1"), ("conv/1".into(), 0));
        assert_eq!(name("@model.forward"), ("model.forward".into(), 0));
        assert_eq!(name("%/layer1/Conv_output_0"), ("/layer1/Conv_output_0".into(), 0));
        assert_eq!(name("%features.0.weight"), ("features.0.weight".into(), 0));
        // Trailing all-digit segments are projections.
        assert_eq!(name("%t.0.1"), ("t".into(), 4));
        assert_eq!(name("%a.b.0"), ("a.b".into(), 2));
        // A `/` not followed by a name character is the division operator.
        assert_eq!(name("%a/%b"), ("a".into(), 2));
        assert_eq!(name("%a / 2"), ("a".into(), 2));
        assert_eq!(name("%a.b/c.d"), ("a.b/c.d".into(), 0));
        assert_eq!(name("%a//b"), ("a".into(), 0), "`//` starts a comment");
        assert_eq!(kinds("%a.(1)"), vec![K::Local, K::Dot, K::LParen, K::Int, K::RParen, K::Eof]);
    }

    #[test]
    fn integer_literals() {
        assert_eq!(int("1"), (1, None));
        assert_eq!(int("1i64"), (1, Some(DType::I64)));
        assert_eq!(int("42i"), (42, Some(DType::I32)));
        assert_eq!(int("7i16"), (7, Some(DType::I16)));
        assert_eq!(int("7i8"), (7, Some(DType::I8)));
        assert_eq!(int("7u8"), (7, Some(DType::U8)));
        assert_eq!(int("3000000000"), (3_000_000_000, None));
        assert_eq!(int("9223372036854775808"), (1 << 63, None));
    }

    #[test]
    fn float_literals() {
        assert_eq!(float("1f"), (1.0, DType::F32));
        assert_eq!(float("1.5f"), (1.5, DType::F32));
        assert_eq!(float("1.5"), (1.5, DType::F32));
        assert_eq!(float("1e-3f"), (1e-3, DType::F32));
        assert_eq!(float("1E+3"), (1e3, DType::F32));
        assert_eq!(float("2f16"), (2.0, DType::F16));
        assert_eq!(float("2bf16"), (2.0, DType::BF16));
        assert_eq!(float("3f64"), (3.0, DType::F64));
        assert_eq!(float("inff"), (f64::INFINITY, DType::F32));
        assert_eq!(float("inff64"), (f64::INFINITY, DType::F64));
        assert!(float("nanf").0.is_nan());
        // A number followed by a projection-like dot and a name is three tokens.
        assert_eq!(kinds("1.x"), vec![K::Int, K::Dot, K::Ident, K::Eof]);
    }

    #[test]
    fn digits_after_a_dot_are_an_integer() {
        let lexed = lex("%t.0.1", FileId(0));
        let kinds: Vec<_> = lexed.tokens.iter().map(|t| t.kind).collect();
        assert_eq!(kinds, vec![K::Local, K::Dot, K::Int, K::Dot, K::Int, K::Eof]);
        assert_eq!(lexed.tokens[4].value, TokenValue::Int(IntLit { magnitude: 1, dtype: None }));
    }

    #[test]
    fn minus_is_separate() {
        assert_eq!(kinds("-5 %x-1"), vec![K::Minus, K::Int, K::Local, K::Minus, K::Int, K::Eof]);
    }

    #[test]
    fn bad_suffixes() {
        for text in ["1i7", "1x", "1.5i64", "2f8", "1u1"] {
            let lexed = lex(text, FileId(0));
            assert_eq!(lexed.diagnostics.len(), 1, "{text}");
        }
        let lexed = lex("1i7", FileId(0));
        assert!(lexed.diagnostics[0].message.contains("invalid literal suffix `i7`"));
    }

    #[test]
    fn comments_nest() {
        assert_eq!(kinds("1 /* a /* b */ c */ 2 // x\n3"), vec![K::Int, K::Int, K::Int, K::Eof]);
        let lexed = lex("1 /* /* */", FileId(0));
        assert_eq!(lexed.diagnostics.len(), 1);
        assert_eq!(lexed.diagnostics[0].message, "unterminated block comment");
        assert_eq!(lexed.diagnostics[0].span.lo, 2);
    }

    #[test]
    fn strings() {
        assert_eq!(single(r#""NC\"HW\n""#), TokenValue::Str("NC\"HW\n".into()));
        let lexed = lex("\"abc", FileId(0));
        assert_eq!(lexed.diagnostics[0].message, "unterminated string literal");
    }

    #[test]
    fn metadata_ends_the_tokens() {
        let text = "1 #[ metadata ]\n{\"relay.Constant\": [(]}";
        let lexed = lex(text, FileId(0));
        assert!(lexed.diagnostics.is_empty());
        let kinds: Vec<_> = lexed.tokens.iter().map(|t| t.kind).collect();
        assert_eq!(kinds, vec![K::Int, K::Metadata, K::Eof]);
        assert_eq!(lexed.tokens[1].value, TokenValue::Metadata(15));
        assert_eq!(
            kinds_of("#[version = \"0.0.5\"]"),
            vec![K::HashBracket, K::Ident, K::Eq, K::Str, K::RBracket]
        );
    }

    fn kinds_of(text: &str) -> Vec<TokenKind> {
        let mut k = kinds(text);
        k.pop();
        k
    }

    #[test]
    fn stray_characters_are_reported_on_char_boundaries() {
        let lexed = lex("1 $ é 2", FileId(0));
        assert_eq!(lexed.diagnostics.len(), 2);
        assert_eq!((lexed.diagnostics[1].span.lo, lexed.diagnostics[1].span.hi), (4, 6));
        assert_eq!(lexed.tokens.len(), 3);
    }
}
