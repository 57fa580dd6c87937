//! The printer: IR → canonical Relay text (`#[version = "0.0.5"]`, TVM's format).
//!
//! The output parses back to a structurally equal module
//! ([`structurally_equal`](crate::ir::structurally_equal)) and printing is idempotent.
//! Conventions, close to TVM's `relay_text_printer.cc`:
//! - `def @f[A](%x: T, %y, Primitive=1) -> R { ... }`: function attributes follow the
//!   parameters; `fn` literals likewise. A zero-dimensional tensor type prints as its dtype,
//!   a one-element tuple (type or value) as `(x,)`.
//! - Calls never print infix (`add(%x, %y)`). The call of a fieldless constructor prints
//!   `Nil`, as in TVM (the parser reads `Nil` and `Nil()` alike); a bare fieldless
//!   constructor value therefore does not round-trip, which is why the parser never makes one.
//! - Literals: int32 bare (`-5`), other integers with a suffix (`1i64`, `1i16`, `1i8`,
//!   `1u8`), floats always with one (`1f`, `1.5f`, `1e-7f16`, `inff64`, `-inff`, `nanf`) using
//!   the shortest text that reads back as the same `f64`; float attributes likewise (`1e-5f`,
//!   `f64` beyond the float32 range). Strings escape `"`, `\`, newline, tab and return.
//! - `let` chains print one binding per line, `if` and `match` bodies in braces on their own
//!   lines; a `let` anywhere but in a statement sequence prints as a parenthesised block.
//!   Callees and projected tuples other than names, calls and projections are parenthesised
//!   (`(fn (%x) { %x })(1)`, `(1).0`).
//! - Nodes used more than once in a function print once as graph bindings `%N = ...;`
//!   (see `printer/sharing.rs`); an inner binder that would capture an outer variable of the same name
//!   is renamed, as is a name that would not lex back (see `printer/names.rs`).
//! - Free variables print as `free_var %x: T;` at the top of the definition body. The parser
//!   accepts `free_var` only in a file's top-level expression, so such a module (which the
//!   parser never produces) does not read back.
//! - Tensor constants (`ExprKind::Constant` and `meta[relay.Constant][i]` attributes) are
//!   renumbered in order of first use, and the `#[metadata]` section holds them as JSON
//!   (`{"relay.Constant": [{"dtype", "shape", "data"}]}`; JSON has no NaN or infinity, so such
//!   elements come out as `null`, which the parser rejects).
//!
//! - Indentation stops growing at [`MAX_INDENT`] levels, so output is linear in the input.
//!
//! Nothing recurses per `let` of a chain; the remaining recursion (nested calls, types,
//! patterns) runs under [`crate::stack::grow`], so deep programs print on small threads.

mod comments;
mod expr;
mod leaf;
mod names;
mod sharing;
mod wrap;

use super::token::TokenKind;
use crate::ir::{ExprId, FileId, GlobalFunction, Module, TypeDef, TypeId, TypeParamId, VarId};
use comments::Comments;
use names::{is_identifier, Scopes};
use rustc_hash::FxHashMap as HashMap;
use sharing::{Layout, ROOT};
use std::fmt::Write;
pub use wrap::{wrap, LINE_WIDTH};

/// Prints the type definitions and then the global functions of `module` whose span lies in
/// `file` (all of them for `None`), each group in definition order, followed by a
/// `#[metadata]` section when a tensor constant is referenced.
pub fn print_module(module: &Module, file: Option<FileId>) -> String {
    let in_file = |f: FileId| file.is_none_or(|want| want == f);
    let mut meta = Meta::default();
    let mut items = Vec::new();
    for def in module.type_defs.iter().filter(|d| in_file(d.span.file)) {
        items.push(Printer::new(module, None).type_def(def));
    }
    for func in module.functions.iter().filter(|g| in_file(g.span.file)) {
        items.push(Printer::new(module, Some(&mut meta)).global(func));
    }
    join_items(module, &items, &meta)
}

/// `relay-vm fmt`: prints the definitions of source file `file` as [`print_module`] does,
/// but in their order in the file and with the file's comments, each before the node it
/// preceded or after the line it trailed (see `printer/comments.rs`). The output parses
/// back to the same module, and formatting it again gives the same text. Lines longer than
/// [`LINE_WIDTH`] are broken at bracket groups (see `printer/wrap.rs`).
pub fn format_file(module: &Module, file: FileId) -> String {
    let mut comments = Comments::new(file, &module.sources.file(file).text);
    let mut meta = Meta::default();
    enum Item<'a> {
        Type(&'a TypeDef),
        Global(&'a GlobalFunction),
    }
    let mut order: Vec<(u32, Item)> = module
        .type_defs
        .iter()
        .filter(|d| d.span.file == file)
        .map(|d| (d.span.lo, Item::Type(d)))
        .chain(module.functions.iter().filter(|g| g.span.file == file).map(|g| (g.span.lo, Item::Global(g))))
        .collect();
    order.sort_by_key(|(lo, _)| *lo);
    let mut items: Vec<String> = order
        .into_iter()
        .map(|(_, item)| match item {
            Item::Type(def) => Printer::new(module, None).with_comments(&mut comments).type_def(def),
            Item::Global(g) => Printer::new(module, Some(&mut meta)).with_comments(&mut comments).global(g),
        })
        .collect();
    let mut rest = Printer::new(module, None).with_comments(&mut comments);
    rest.remaining_comments();
    let rest = rest.finish();
    if !rest.is_empty() {
        items.push(rest.trim_end().to_string());
    }
    wrap(&join_items(module, &items, &meta), LINE_WIDTH)
}

/// The version header, the items separated by blank lines, and the `#[metadata]` section.
fn join_items(module: &Module, items: &[String], meta: &Meta) -> String {
    let mut text = String::from("#[version = \"0.0.5\"]\n");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(item);
        text.push('\n');
    }
    if !meta.order.is_empty() {
        text.push_str("#[metadata]\n");
        text.push_str(&meta.json(module));
    }
    text
}

/// Prints one expression (with its graph bindings and, for a `let`, its chain on several
/// lines); free variables print by name without `free_var` declarations and constants keep
/// their module index. Used for diagnostics.
pub fn print_expr(module: &Module, expr: ExprId) -> String {
    let mut p = Printer::new(module, None);
    p.layout = Layout::analyze(module, expr);
    p.scope(ROOT, expr, false);
    p.finish()
}

/// Prints a type: `Tensor[(2, 3), float32]`, `float32`, `fn (A) -> B`, `List[A]`, `(A, B)`.
pub fn print_type(module: &Module, ty: TypeId) -> String {
    let mut p = Printer::new(module, None);
    p.ty(ty);
    p.finish()
}

/// A name whose text is only known once the whole item has been walked.
enum Hole {
    Var(VarId),
    TypeParam(TypeParamId),
    /// Where the `free_var` declarations of a definition go.
    FreeVars,
}

/// Text with holes for names.
#[derive(Default)]
struct Out {
    text: String,
    holes: Vec<(usize, Hole)>,
}

/// The tensor constants referenced so far, in the order they print in `#[metadata]`.
#[derive(Default)]
struct Meta {
    order: Vec<u32>,
    index: HashMap<u32, u32>,
}

impl Meta {
    fn number(&mut self, constant: u32) -> u32 {
        *self.index.entry(constant).or_insert_with(|| {
            self.order.push(constant);
            self.order.len() as u32 - 1
        })
    }

    fn json(&self, m: &Module) -> String {
        let mut text = String::from("{\"relay.Constant\": [");
        for (i, c) in self.order.iter().enumerate() {
            text.push_str(if i == 0 { "\n  " } else { ",\n  " });
            match m.constants.get(*c as usize) {
                Some(c) => {
                    let shape = serde_json::to_string(&c.shape).unwrap_or_default();
                    let data = serde_json::to_string(&c.data).unwrap_or_default();
                    let _ =
                        write!(text, "{{\"dtype\": \"{}\", \"shape\": {shape}, \"data\": {data}}}", c.dtype);
                }
                // A dangling constant index is a malformed module; keep the text parseable
                // JSON so the parser reports the missing entry rather than a syntax error.
                None => text.push_str("null"),
            }
        }
        text.push_str("\n]}\n");
        text
    }
}

fn valid_var_name(_: &Module, name: &str) -> bool {
    is_identifier(name)
}

/// A type parameter name must lex as one identifier (not a keyword, `inff`, ...) and must not
/// be read back as something else: `Tensor`, a dtype or an ADT.
fn valid_type_param_name(m: &Module, name: &str) -> bool {
    let lexed = super::lexer::lex(name, FileId(0));
    let one_ident = matches!(lexed.tokens.as_slice(),
        [t, _] if t.kind == TokenKind::Ident && t.lo == 0 && t.hi as usize == name.len());
    one_ident
        && lexed.diagnostics.is_empty()
        && name != "Tensor"
        && name.parse::<relay_devices::DType>().is_err()
        && m.symbols.get(name).and_then(|s| m.type_def(s)).is_none()
}

/// The deepest indentation printed, in levels of two spaces.
pub const MAX_INDENT: usize = 32;

/// Prints one item (a definition, or the expression or type of [`print_expr`]/
/// [`print_type`]).
struct Printer<'m> {
    m: &'m Module,
    out: Out,
    indent: usize,
    vars: Scopes<'m, VarId>,
    tparams: Scopes<'m, TypeParamId>,
    layout: Layout,
    graph: HashMap<ExprId, u32>,
    /// `free_var` declarations of the definition being printed; `None` when not printing a
    /// definition.
    free_decls: Option<Out>,
    /// Renumbering of constants for `#[metadata]`; `None` prints module indices.
    meta: Option<&'m mut Meta>,
    /// The source comments still to print (`fmt`); `None` prints none.
    comments: Option<&'m mut Comments>,
    /// Where the `\n` after the last `//` comment printed is (or will be), so that
    /// nothing is appended to that line.
    line_comment_end: Option<usize>,
}

impl<'m> Printer<'m> {
    fn new(m: &'m Module, meta: Option<&'m mut Meta>) -> Self {
        Printer {
            m,
            out: Out::default(),
            indent: 0,
            vars: Scopes::new(m, valid_var_name, "v"),
            tparams: Scopes::new(m, valid_type_param_name, "T"),
            layout: Layout::default(),
            graph: HashMap::default(),
            free_decls: None,
            meta,
            comments: None,
            line_comment_end: None,
        }
    }

    fn with_comments(mut self, comments: &'m mut Comments) -> Self {
        self.comments = Some(comments);
        self
    }

    fn w(&mut self, s: &str) {
        self.out.text.push_str(s);
    }

    /// A new line, indented by the nesting depth up to [`MAX_INDENT`] levels: deeper lines
    /// stay at that column, so the text grows linearly with the program, not with
    /// depth × lines (a 100,000-deep `if` would otherwise print 10 GB of spaces).
    fn nl(&mut self) {
        self.out.text.push('\n');
        for _ in 0..self.indent.min(MAX_INDENT) {
            self.out.text.push_str("  ");
        }
    }

    fn hole(&mut self, h: Hole) {
        self.out.holes.push((self.out.text.len(), h));
    }

    /// Calls `f` for each item, with `, ` between them.
    fn comma_list<T: Copy>(&mut self, items: &[T], mut f: impl FnMut(&mut Self, T)) {
        for (i, &item) in items.iter().enumerate() {
            if i > 0 {
                self.w(", ");
            }
            f(self, item);
        }
    }

    fn global(mut self, g: &GlobalFunction) -> String {
        self.layout = Layout::analyze(self.m, g.func.body);
        self.free_decls = Some(Out::default());
        self.comments_before(g.span.file, g.span.lo);
        self.w("def @");
        self.w(self.m.name(g.name));
        self.function(&g.func, ROOT);
        if let Some(end) = self.comments.as_deref().and_then(|c| c.def_end_after(g.span.hi)) {
            self.comments_after_item(g.span.file, end);
        }
        self.finish()
    }

    fn type_def(mut self, def: &TypeDef) -> String {
        let file = def.span.file;
        self.comments_before(file, def.span.lo);
        if def.is_extern {
            self.w("extern ");
        }
        self.w("type ");
        self.w(self.m.name(def.name));
        self.bind_type_params(&def.type_params);
        if !def.is_extern {
            self.w(" {");
            self.indent += 1;
            for &c in &def.constructors {
                self.nl();
                if let Some(c) = self.m.constructor(c) {
                    self.comments_before(c.span.file, c.span.lo);
                }
                self.w(self.m.name(c));
                let fields = self.m.constructor(c).map(|c| c.fields.as_slice()).unwrap_or_default();
                if !fields.is_empty() {
                    self.w("(");
                    self.comma_list(fields, Self::ty);
                    self.w(")");
                }
                self.w(",");
            }
            let close = self.comments.as_deref().and_then(|c| c.brace_end_after(def.span.hi));
            if let Some(close) = close {
                self.comments_before_close(file, close - 1);
            }
            self.indent -= 1;
            if !def.constructors.is_empty() || self.line_comment_end.is_some_and(|e| e >= self.out.text.len())
            {
                self.nl();
            }
            self.w("}");
            if let Some(close) = close {
                self.comments_after_item(file, close);
            }
        } else {
            self.comments_after_item(file, def.span.hi);
        }
        self.finish()
    }

    /// Prints `[A, B]` (nothing for none) and brings the parameters into scope.
    fn bind_type_params(&mut self, params: &[TypeParamId]) {
        if params.is_empty() {
            return;
        }
        self.w("[");
        self.comma_list(params, |p, t| {
            let name = p.m.name(p.m.type_params[t.index()].name);
            p.tparams.bind(t, name);
            p.hole(Hole::TypeParam(t));
        });
        self.w("]");
    }

    fn unbind_type_params(&mut self, params: &[TypeParamId]) {
        params.iter().rev().for_each(|&t| self.tparams.unbind(t));
    }

    /// Fills in the names.
    fn finish(mut self) -> String {
        let decls = self.free_decls.take().map(|d| self.render(d, "")).unwrap_or_default();
        let out = std::mem::take(&mut self.out);
        self.render(out, &decls)
    }

    fn render(&self, out: Out, free_decls: &str) -> String {
        let mut text = String::with_capacity(out.text.len() + out.holes.len() * 4);
        let mut at = 0;
        for (pos, hole) in out.holes {
            text.push_str(&out.text[at..pos]);
            at = pos;
            match hole {
                Hole::Var(v) => {
                    text.push('%');
                    text.push_str(self.vars.name(v, self.m.name(self.m.var(v).name)));
                }
                Hole::TypeParam(t) => {
                    text.push_str(self.tparams.name(t, self.m.name(self.m.type_params[t.index()].name)))
                }
                Hole::FreeVars => text.push_str(free_decls),
            }
        }
        text.push_str(&out.text[at..]);
        text
    }
}

#[cfg(test)]
mod tests;
