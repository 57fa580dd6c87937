//! Relay's text format (`#[version = "0.0.5"]`): lexer, parser with name resolution, printer.
//!
//! The grammar is TVM's (`src/parser/parser.cc`, `tokenizer.h`): `def` globals with type
//! parameters, parameter and return annotations and attributes after the parameters
//! (`fn (%p0: Tensor[(1), float32], Primitive=1) -> ...`); `type` ADTs and `extern type`;
//! `let`, `e1; e2`, graph bindings `%0 = ...;`, `free_var`; `fn` literals; calls, curried calls
//! and operator calls with keyword attributes; infix `* / + - < <= > >= == !=` (TVM's
//! precedence, left-associative, desugared to `multiply`, `divide`, `add`, ...); `if`,
//! `match`/`match?`; tuples and `.N`; `ref`, `ref_read`, `ref_write`; literals with suffixes;
//! types; `//` and nested `/* */` comments; a `#[metadata]` section of constants.
//!
//! A file may end with a bare expression (TVM's `parse_expr` form, usually with `free_var`s):
//! it becomes `def @main(<free vars in declaration order>) { expr }`, as TVM's
//! `IRModule::FromExpr` does; it is an error if `@main` is also defined.
//!
//! A bare identifier in expression position is a constructor if the module has one of that
//! name once the file is parsed (types may be defined after use, and the prelude's
//! constructors are already in the module), otherwise an operator `ExprKind::Op(name)`,
//! checked later against the operator registry. A constructor without fields that is not
//! called is wrapped in a call with no arguments, as TVM does: `Nil` and `Nil()` both parse to
//! `Call(Constructor(Nil), [])`, so `ExprKind::Constructor` is always the constructor function.
//!
//! # Where we differ from TVM's parser
//!
//! - **Scoping.** `let %x = %x + 1; ...` refers to the *outer* `%x` on the right; only a `let`
//!   whose right side is exactly a `fn` literal sees its own variable (a recursive local
//!   function). TVM binds the variable first, so shadowing a variable by an expression of
//!   itself is broken there.
//! - **Graph bindings** (`%0 = ...;`) are scoped per function: a nested `fn` sees its
//!   enclosing functions' bindings, and bindings do not leak out of the function. TVM keeps
//!   one table per file. A name maps to the bound node itself, so the IR is a DAG.
//! - **`extern type`** may be followed by anything; TVM stops parsing definitions after it.
//! - **Missing commas** between arguments, fields, parameters or arms are errors; TVM
//!   accepts `f(%a, %b %c)`.
//! - **Negative literals.** `-` is an operator token: before a numeric literal it folds into
//!   the literal (`-5`, `-inff`, `-1.5f`), elsewhere it is `negative(e)`; `%x-1` is a
//!   subtraction (TVM's lexer makes `-1` a literal there and then fails).
//! - **Projections** chain (`%x.0.1`, `f(%x).0`): digits after `.` always lex as an integer.
//! - **Literal suffixes** are checked: `i i8 i16 i32 i64 u8 u16 u32 u64 f f16 f32 f64` (the `u`
//!   suffixes and `i8` are ours; `i` is int32, as in TVM), and values must fit the type. An unsuffixed integer outside
//!   int32 is int64 and an unsuffixed float (`1.5`, `1e-3`) is float32, as in TVM. `nanf` is
//!   accepted next to `inff`.
//! - **Types.** `ref(T)` and function types with type parameters (`fn [A](A) -> A`), which
//!   TVM prints but does not parse, are accepted. `(T)` is a one-element tuple type, as in
//!   TVM; so is the pattern `(p)`, while the expression `(e)` is just `e`.
//! - **Blocks and `match`/`if`** are expressions anywhere (`let %y = match (%x) {...};`).
//! - **Names** after `%`/`@` may contain `.` and `/` (`%fc1.weight`, `%conv/1`): TVM's lexer
//!   allows `/` anywhere in an identifier, which makes `%a/%b` one name; ours takes a `/` only
//!   before a name character, and a `.` only before a segment that is not a tuple index, so
//!   `%a/%b` divides and `%t.0` projects. `%x/2` is the name `x/2`, as in TVM.
//! - **Names are checked**: unknown globals, types, constructors, wrong numbers of type
//!   arguments or pattern fields, duplicate definitions, parameters and attributes are
//!   errors here rather than later (or never). A capitalised identifier that is not a
//!   constructor is reported as an unknown constructor, since operator names are lower case.
//! - **Metadata** prints in our own JSON format (`{"relay.Constant": [{"dtype", "shape",
//!   "data"}]}`); TVM's object-serializer JSON (`b64ndarrays`) is read too. Symbolic
//!   dimensions `meta[tir.SizeVar][i]` are `?`.
//! - **Errors**: all errors of a file are reported together; after a syntax error the parser
//!   resumes at the next `def`/`type`/`extern`. Unclosed or mismatched brackets and
//!   characters that are not tokens are reported alone, since anything after them would be
//!   a consequence.
//!
//! No input makes the front end panic or overflow the stack: `let` chains and operator
//! chains are parsed iteratively, genuine nesting runs on growable stack segments and stops
//! with a diagnostic beyond 100,000 levels.

mod lexer;
mod parser;
pub mod printer;
mod resolve;
mod shadow;
mod token;

pub use parser::MAX_NESTING;
pub use shadow::shadowed_prelude;

use crate::diagnostics::{CompileError, Severity};
use crate::ir::{FileId, Module};

/// Parses source file `file` (already added to `module.sources`) and adds its definitions to
/// `module`; resolves names against everything in the module (so a file may use the prelude's
/// `List`/`map` when the prelude was parsed into the module first).
///
/// # Errors
/// Every syntax and name error of the file. The module then holds whatever part of the file
/// was parsed and should be discarded (its `sources` remain valid for rendering).
pub fn parse_source(module: &mut Module, file: FileId) -> Result<(), CompileError> {
    let diagnostics = parser::parse_file(module, file);
    if diagnostics.iter().any(|d| d.severity == Severity::Error) {
        Err(CompileError::new(diagnostics))
    } else {
        Ok(())
    }
}

/// Parses one standalone text (shown as `name` in diagnostics) into a fresh module.
///
/// # Errors
/// Every syntax and name error; the text is file 0 of the module's source map.
pub fn parse_module(name: &str, text: &str) -> Result<Module, CompileError> {
    let mut module = Module::default();
    let file = module.sources.add(name, text);
    parse_source(&mut module, file)?;
    Ok(module)
}

/// Parses `prelude` (as file `prelude.relay`, without the definitions `text` shadows: see
/// [`shadowed_prelude`]) and then the user's `text` (as `name`) into one module; returns it
/// and the user file's id.
///
/// # Errors
/// The prelude's errors if it does not parse, else the user file's; the prelude is file 0
/// and the user's text file 1 of the source map.
pub fn parse_with_prelude(prelude: &str, name: &str, text: &str) -> Result<(Module, FileId), CompileError> {
    let mut module = Module::default();
    let prelude_file = module.sources.add("prelude.relay", shadowed_prelude(prelude, text));
    let user = module.sources.add(name, text);
    parse_source(&mut module, prelude_file)?;
    parse_source(&mut module, user)?;
    Ok((module, user))
}
