//! Expressions, variables, patterns and functions (paper §3.1, Figure 1).

use super::{Attrs, ExprId, PatId, Span, Symbol, TypeId, TypeParamId, VarId};
use relay_devices::DType;

/// An expression node: what it is and where it was written.
#[derive(Clone, Debug)]
pub struct Expr {
    /// The node itself.
    pub kind: ExprKind,
    /// Source location (for nodes made by passes, the span of what they came from).
    pub span: Span,
}

/// The expression forms of Relay.
///
/// A node may be referenced from several places (graph bindings `%0 = ...;` make the IR a
/// DAG); passes must not assume a tree.
#[derive(Clone, Debug)]
pub enum ExprKind {
    /// A local variable `%x`.
    Var(VarId),
    /// A global function `@f`.
    Global(Symbol),
    /// An ADT constructor `Cons`, used as a value or called.
    Constructor(Symbol),
    /// A primitive operator `add`, `nn.conv2d`, resolved by name against the operator
    /// registry.
    Op(Symbol),
    /// A scalar literal (a 0-d tensor constant): `1`, `1.5f`, `True`.
    Literal(Literal),
    /// `meta[relay.Constant][i]`: tensor constant `i` of [`Module::constants`](super::Module).
    Constant(u32),
    /// `(a, b, ...)`; `()` is the unit value; `(a,)` a 1-tuple.
    Tuple(Vec<ExprId>),
    /// `e.N`: field `N` of a tuple.
    Proj { tuple: ExprId, index: u32 },
    /// `f(a, b, key=value)`: a call of a function, closure, constructor or operator.
    Call { callee: ExprId, args: Vec<ExprId>, attrs: Attrs },
    /// `let %x = value; body`. The variable is in scope in `body`, and also in `value` when
    /// `value` is a `fn` literal (a local recursive function).
    Let { var: VarId, value: ExprId, body: ExprId },
    /// `if (cond) { then_branch } else { else_branch }`.
    If { cond: ExprId, then_branch: ExprId, else_branch: ExprId },
    /// `match (e) { arms }`; `complete` is false for `match?`, which may be non-exhaustive.
    Match { scrutinee: ExprId, arms: Vec<MatchArm>, complete: bool },
    /// `fn [A](%x: T) -> R { body }`: a function literal (closure).
    Function(Box<Function>),
    /// `ref(e)`: a new mutable cell holding `e`.
    RefNew(ExprId),
    /// `ref_read(r)`.
    RefRead(ExprId),
    /// `ref_write(r, v)`; evaluates to `()`.
    RefWrite { cell: ExprId, value: ExprId },
}

impl ExprKind {
    /// Whether the node is an atom of A-normal form: it names a value without computing
    /// anything (a variable, global, constructor, operator, literal or constant).
    pub fn is_atom(&self) -> bool {
        matches!(
            self,
            ExprKind::Var(_)
                | ExprKind::Global(_)
                | ExprKind::Constructor(_)
                | ExprKind::Op(_)
                | ExprKind::Literal(_)
                | ExprKind::Constant(_)
        )
    }
}

/// One arm of a `match`.
#[derive(Clone, Debug)]
pub struct MatchArm {
    /// What the scrutinee must look like.
    pub pattern: PatId,
    /// The value of the `match` when this arm is taken.
    pub body: ExprId,
}

/// A function: a `def` body or a `fn` literal.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Type parameters, instantiated afresh at each use.
    pub type_params: Vec<TypeParamId>,
    /// Parameters; their annotations live in [`VarDecl::ty`].
    pub params: Vec<VarId>,
    /// The annotated return type, if any.
    pub ret_type: Option<TypeId>,
    /// The body.
    pub body: ExprId,
    /// Function attributes such as `Primitive=1`.
    pub attrs: Attrs,
}

/// A scalar literal: value and element type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Literal {
    /// The value as written (floats keep full `f64` precision of the text).
    pub value: LiteralValue,
    /// `int32` for `1`, `int64` for `1i64` or an integer outside int32, `float32` for `1f`, ...
    pub dtype: DType,
}

/// The value of a [`Literal`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LiteralValue {
    /// An integer.
    Int(i64),
    /// A float, including `inff` and `-inff`.
    Float(f64),
    /// `True` or `False`.
    Bool(bool),
}

/// A local variable: one per binding site (parameter, `let`, pattern, `free_var`).
#[derive(Clone, Debug)]
pub struct VarDecl {
    /// The name without `%`.
    pub name: Symbol,
    /// The annotation, if one was written.
    pub ty: Option<TypeId>,
    /// Where it is bound.
    pub span: Span,
}

/// A type parameter: one per binding site.
#[derive(Clone, Debug)]
pub struct TypeParamDecl {
    /// The name (`A`).
    pub name: Symbol,
    /// Where it is bound.
    pub span: Span,
}

/// A pattern node of a `match` arm.
#[derive(Clone, Debug)]
pub struct Pattern {
    /// The pattern itself.
    pub kind: PatternKind,
    /// Where it was written.
    pub span: Span,
}

/// The forms of patterns.
#[derive(Clone, Debug)]
pub enum PatternKind {
    /// `_`.
    Wildcard,
    /// `%x` or `%x: T`: binds the matched value.
    Var(VarId),
    /// `Cons(%h, %t)` or `Nil`.
    Constructor { name: Symbol, args: Vec<PatId> },
    /// `(p1, p2)`; `(p)` is a 1-tuple pattern.
    Tuple(Vec<PatId>),
}
