//! The Relay IR: arenas addressed by typed `u32` ids (ARCHITECTURE.md §3, "IR").
//!
//! Expressions, variables, patterns and type parameters live in per-module arenas; types are
//! hash-consed so that two structurally equal types have the same [`TypeId`]. Nothing in the
//! IR owns a child through a `Box`, so dropping a 100,000-deep `let` chain does not recurse.
//! Global functions, constructors and ADTs are referred to by name ([`Symbol`]), as TVM's
//! `GlobalVar` and `GlobalTypeVar` are.

mod attrs;
mod equal;

mod expr;
mod id;
mod id_map;
mod module;
mod name;
mod source;
mod symbol;
mod types;

pub use attrs::{AttrValue, Attrs};
pub use equal::structurally_equal;

pub use expr::{
    Expr, ExprKind, Function, Literal, LiteralValue, MatchArm, Pattern, PatternKind, TypeParamDecl, VarDecl,
};
pub use id::{ExprId, PatId, TypeId, TypeParamId, VarId};
pub use id_map::{ArenaId, IdMap, IdSet};
pub use module::{ConstantData, ConstructorDef, GlobalFunction, Module, TypeDef};
pub use name::sanitize_name;
pub use source::{FileId, SourceFile, SourceMap, Span};
pub use symbol::{Interner, Symbol};
pub use types::{Dim, TypeInterner, TypeKind};
