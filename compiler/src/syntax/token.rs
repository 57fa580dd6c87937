//! Tokens of the Relay text format, as produced by the [lexer](super::lexer).

use relay_devices::DType;

/// What a token is. Names and literal values live in [`Token::value`]; the text of every
/// token is also available through its span.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// A bare identifier: `add`, `nn`, `Cons`, `Tensor`, `float32`, `A`.
    Ident,
    /// `%x`: a local variable.
    Local,
    /// `%0`: a graph binding.
    Graph,
    /// `@f`: a global function.
    Global,
    /// An integer literal such as `1`, `7i64`.
    Int,
    /// A float literal such as `1.5f`, `1e-3`, `inff`.
    Float,
    /// A string literal `"NCHW"`.
    Str,
    /// `def`.
    Def,
    /// `type`.
    Type,
    /// `extern`.
    Extern,
    /// `fn`.
    Fn,
    /// `let`.
    Let,
    /// `if`.
    If,
    /// `else`.
    Else,
    /// `match`.
    Match,
    /// `match?`.
    MatchPartial,
    /// `ref`.
    Ref,
    /// `ref_read`.
    RefRead,
    /// `ref_write`.
    RefWrite,
    /// `free_var`.
    FreeVar,
    /// `True`.
    True,
    /// `False`.
    False,
    /// `_`.
    Underscore,
    /// `(`.
    LParen,
    /// `)`.
    RParen,
    /// `[`.
    LBracket,
    /// `]`.
    RBracket,
    /// `{`.
    LBrace,
    /// `}`.
    RBrace,
    /// `#[`: opens an attribute such as `#[version = "0.0.5"]`.
    HashBracket,
    /// `,`.
    Comma,
    /// `.`.
    Dot,
    /// `;`.
    Semi,
    /// `:`.
    Colon,
    /// `=`.
    Eq,
    /// `==`.
    EqEq,
    /// `!=`.
    NotEq,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `+`.
    Plus,
    /// `-`.
    Minus,
    /// `*`.
    Star,
    /// `/`.
    Slash,
    /// `?`.
    Question,
    /// `->`.
    Arrow,
    /// `=>`.
    FatArrow,
    /// `#[metadata]` and the JSON text after it, up to the end of the file.
    Metadata,
    /// The end of the file.
    Eof,
}

impl TokenKind {
    /// The keyword spelled `word`, if it is one.
    pub fn keyword(word: &str) -> Option<TokenKind> {
        Some(match word {
            "def" => TokenKind::Def,
            "type" => TokenKind::Type,
            "extern" => TokenKind::Extern,
            "fn" => TokenKind::Fn,
            "let" => TokenKind::Let,
            "if" => TokenKind::If,
            "else" => TokenKind::Else,
            "match" => TokenKind::Match,
            "ref" => TokenKind::Ref,
            "ref_read" => TokenKind::RefRead,
            "ref_write" => TokenKind::RefWrite,
            "free_var" => TokenKind::FreeVar,
            "True" => TokenKind::True,
            "False" => TokenKind::False,
            "_" => TokenKind::Underscore,
            _ => return None,
        })
    }

    /// Whether this token opens a bracketed region that a later token must close.
    pub fn is_open_delimiter(self) -> bool {
        matches!(self, TokenKind::LParen | TokenKind::LBracket | TokenKind::LBrace | TokenKind::HashBracket)
    }

    /// Whether this token closes a bracketed region.
    pub fn is_close_delimiter(self) -> bool {
        matches!(self, TokenKind::RParen | TokenKind::RBracket | TokenKind::RBrace)
    }

    /// The closing token matching an opening delimiter.
    pub fn closer(self) -> Option<TokenKind> {
        match self {
            TokenKind::LParen => Some(TokenKind::RParen),
            TokenKind::LBracket | TokenKind::HashBracket => Some(TokenKind::RBracket),
            TokenKind::LBrace => Some(TokenKind::RBrace),
            _ => None,
        }
    }
}

/// An integer literal before its sign is known: `-` is a separate token that the parser folds
/// into the literal, so the magnitude may be one more than `i64::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntLit {
    /// The digits' value.
    pub magnitude: u64,
    /// The element type a suffix (`i64`, `u8`) asked for; `None` means int32, or int64 when the
    /// value does not fit int32.
    pub dtype: Option<DType>,
}

/// A float literal before its sign is known.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FloatLit {
    /// The (non-negative) value; `inff` is infinity and `nanf` NaN.
    pub magnitude: f64,
    /// `float32` unless a suffix (`f16`, `f64`) says otherwise.
    pub dtype: DType,
}

/// The payload of a token.
#[derive(Clone, Debug, PartialEq)]
pub enum TokenValue {
    /// Punctuation, keywords, end of file.
    None,
    /// The name of an identifier, local (without `%`) or global (without `@`).
    Name(Box<str>),
    /// A graph binding's number.
    Graph(u32),
    /// An integer literal.
    Int(IntLit),
    /// A float literal.
    Float(FloatLit),
    /// A string literal's contents with escapes resolved.
    Str(Box<str>),
    /// The byte offset where the JSON of a `#[metadata]` section starts.
    Metadata(u32),
}

/// One token: its kind, payload and byte range in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// Names and literal values.
    pub value: TokenValue,
    /// First byte.
    pub lo: u32,
    /// One past the last byte.
    pub hi: u32,
}

impl Token {
    /// The name carried by an identifier, local or global token (empty for other tokens).
    pub fn name(&self) -> &str {
        match &self.value {
            TokenValue::Name(n) => n,
            _ => "",
        }
    }

    /// A short description for "expected ..., found ..." messages.
    pub fn describe(&self) -> String {
        match (&self.kind, &self.value) {
            (TokenKind::Ident, TokenValue::Name(n)) => format!("identifier `{n}`"),
            (TokenKind::Local, TokenValue::Name(n)) => format!("`%{n}`"),
            (TokenKind::Global, TokenValue::Name(n)) => format!("`@{n}`"),
            (TokenKind::Graph, TokenValue::Graph(n)) => format!("`%{n}`"),
            (TokenKind::Int, _) => "an integer literal".to_string(),
            (TokenKind::Float, _) => "a float literal".to_string(),
            (TokenKind::Str, _) => "a string literal".to_string(),
            (TokenKind::Metadata, _) => "the `#[metadata]` section".to_string(),
            (TokenKind::Eof, _) => "end of file".to_string(),
            (kind, _) => format!("`{}`", spelling(*kind)),
        }
    }
}

/// How a token of fixed text is written (for messages).
pub fn spelling(kind: TokenKind) -> &'static str {
    match kind {
        TokenKind::Ident => "identifier",
        TokenKind::Local => "%name",
        TokenKind::Graph => "%N",
        TokenKind::Global => "@name",
        TokenKind::Int => "integer",
        TokenKind::Float => "float",
        TokenKind::Str => "string",
        TokenKind::Def => "def",
        TokenKind::Type => "type",
        TokenKind::Extern => "extern",
        TokenKind::Fn => "fn",
        TokenKind::Let => "let",
        TokenKind::If => "if",
        TokenKind::Else => "else",
        TokenKind::Match => "match",
        TokenKind::MatchPartial => "match?",
        TokenKind::Ref => "ref",
        TokenKind::RefRead => "ref_read",
        TokenKind::RefWrite => "ref_write",
        TokenKind::FreeVar => "free_var",
        TokenKind::True => "True",
        TokenKind::False => "False",
        TokenKind::Underscore => "_",
        TokenKind::LParen => "(",
        TokenKind::RParen => ")",
        TokenKind::LBracket => "[",
        TokenKind::RBracket => "]",
        TokenKind::LBrace => "{",
        TokenKind::RBrace => "}",
        TokenKind::HashBracket => "#[",
        TokenKind::Comma => ",",
        TokenKind::Dot => ".",
        TokenKind::Semi => ";",
        TokenKind::Colon => ":",
        TokenKind::Eq => "=",
        TokenKind::EqEq => "==",
        TokenKind::NotEq => "!=",
        TokenKind::Lt => "<",
        TokenKind::Le => "<=",
        TokenKind::Gt => ">",
        TokenKind::Ge => ">=",
        TokenKind::Plus => "+",
        TokenKind::Minus => "-",
        TokenKind::Star => "*",
        TokenKind::Slash => "/",
        TokenKind::Question => "?",
        TokenKind::Arrow => "->",
        TokenKind::FatArrow => "=>",
        TokenKind::Metadata => "#[metadata]",
        TokenKind::Eof => "end of file",
    }
}
