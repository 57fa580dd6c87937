//! Making typed nodes: fresh annotated variables, calls, functions and `let` chains, with the
//! types read from the [`TypeMap`] of the program before the pass.
//!
//! A pass runs on a program that type-checked, so a missing type is a compiler bug; it is
//! reported as an internal-error diagnostic at the node rather than a panic.

use crate::diagnostics::{CompileError, Diagnostic};
use crate::ir::{
    AttrValue, Attrs, Dim, ExprId, ExprKind, Function, Module, Span, TypeId, TypeKind, TypeParamId, VarId,
};
use crate::ty::TypeMap;
use relay_devices::DType;

/// The inferred types of the program a pass rewrites, and the pass's name for errors.
#[derive(Clone, Copy)]
pub(crate) struct Types<'t> {
    map: &'t TypeMap,
    pass: &'static str,
}

/// The parts of a function type `fn [A](T0, T1) -> R`.
pub(crate) struct FuncType {
    pub type_params: Vec<TypeParamId>,
    pub params: Vec<TypeId>,
    pub ret: TypeId,
}

impl<'t> Types<'t> {
    /// The types of `map`, read by pass `pass`.
    pub fn new(map: &'t TypeMap, pass: &'static str) -> Self {
        Types { map, pass }
    }

    /// The type of expression `e`.
    pub fn expr(&self, m: &Module, e: ExprId) -> Result<TypeId, CompileError> {
        self.map.expr(e).ok_or_else(|| self.error(m.expr(e).span, "an expression has no inferred type"))
    }

    /// The type of variable `v`.
    pub fn var(&self, m: &Module, v: VarId) -> Result<TypeId, CompileError> {
        let span = m.var(v).span;
        self.map
            .var(v)
            .ok_or_else(|| self.error(span, format!("`%{}` has no inferred type", m.name(m.var(v).name))))
    }

    /// The type of `e`, which must be a function.
    pub fn func(&self, m: &Module, e: ExprId) -> Result<FuncType, CompileError> {
        let ty = self.expr(m, e)?;
        match m.types.kind(ty) {
            TypeKind::Func { type_params, params, ret } => {
                Ok(FuncType { type_params: type_params.clone(), params: params.clone(), ret: *ret })
            }
            _ => Err(self.error(m.expr(e).span, "a function has a non-function type")),
        }
    }

    /// An internal-error diagnostic at `span`.
    pub fn error(&self, span: Span, what: impl AsRef<str>) -> CompileError {
        CompileError::new(vec![Diagnostic::error(
            span,
            format!("internal compiler error in pass `{}`: {}", self.pass, what.as_ref()),
        )])
    }
}

/// A new variable `%name` annotated with `ty`.
pub(crate) fn fresh_var(m: &mut Module, name: &str, ty: TypeId, span: Span) -> VarId {
    let name = m.symbols.intern(name);
    m.add_var(name, Some(ty), span)
}

/// A reference to variable `v`.
pub(crate) fn var_ref(m: &mut Module, v: VarId, span: Span) -> ExprId {
    m.add_expr(ExprKind::Var(v), span)
}

/// `callee(args)` without attributes.
pub(crate) fn call(m: &mut Module, callee: ExprId, args: Vec<ExprId>, span: Span) -> ExprId {
    m.add_expr(ExprKind::Call { callee, args, attrs: Attrs::default() }, span)
}

/// A call of operator `op` with attributes `attrs`.
pub(crate) fn op_call(
    m: &mut Module,
    op: &str,
    args: Vec<ExprId>,
    attrs: Vec<(&str, AttrValue)>,
    span: Span,
) -> ExprId {
    let name = m.symbols.intern(op);
    let callee = m.add_expr(ExprKind::Op(name), span);
    let attrs = Attrs(attrs.into_iter().map(|(k, v)| (m.symbols.intern(k), v)).collect());
    m.add_expr(ExprKind::Call { callee, args, attrs }, span)
}

/// The name of the operator `e` calls, its arguments and attributes, if `e` is an
/// operator call.
pub(crate) fn as_op_call(m: &Module, e: ExprId) -> Option<(&str, &[ExprId], &Attrs)> {
    match &m.expr(e).kind {
        ExprKind::Call { callee, args, attrs } => match m.expr(*callee).kind {
            ExprKind::Op(op) => Some((m.name(op), args, attrs)),
            _ => None,
        },
        _ => None,
    }
}

/// A `fn` literal node.
pub(crate) fn function(m: &mut Module, f: Function, span: Span) -> ExprId {
    m.add_expr(ExprKind::Function(Box::new(f)), span)
}

/// `let %v0 = e0; let %v1 = e1; ...; result`.
pub(crate) fn let_chain(m: &mut Module, bindings: Vec<(VarId, ExprId)>, result: ExprId) -> ExprId {
    let mut body = result;
    for (var, value) in bindings.into_iter().rev() {
        let span = m.expr(value).span;
        body = m.add_expr(ExprKind::Let { var, value, body }, span);
    }
    body
}

/// The attribute list `key=1` (`Primitive=1`, `Closure=1`).
pub(crate) fn flag(m: &mut Module, key: &str) -> Attrs {
    Attrs(vec![(m.symbols.intern(key), AttrValue::Int(1))])
}

/// Whether attribute `key` is set to a true value (`key=1` or `key=True`).
pub(crate) fn has_flag(m: &Module, attrs: &Attrs, key: &str) -> bool {
    match m.attr(attrs, key) {
        Some(AttrValue::Int(v)) => *v != 0,
        Some(AttrValue::Bool(b)) => *b,
        _ => false,
    }
}

/// Whether `f` is a `Primitive=1` function (a kernel: passes leave its body alone).
pub(crate) fn is_primitive(m: &Module, f: &Function) -> bool {
    has_flag(m, &f.attrs, crate::pass::PRIMITIVE)
}

/// The static shape and dtype of type `ty`, if it is a tensor with known dimensions.
pub(crate) fn static_tensor(m: &Module, ty: TypeId) -> Option<(Vec<i64>, DType)> {
    match m.types.kind(ty) {
        TypeKind::Tensor { shape, dtype } => {
            let dims = shape.iter().map(|d| if let Dim::Known(n) = d { Some(*n) } else { None });
            Some((dims.collect::<Option<_>>()?, *dtype))
        }
        _ => None,
    }
}

/// Whether an annotation leaves something to inference: absent, or containing `_`.
pub(crate) fn is_incomplete(m: &Module, ty: Option<TypeId>) -> bool {
    ty.is_none_or(|ty| any_part(m, ty, |k| matches!(k, TypeKind::Hole)))
}

/// Whether `pred` holds for type `ty` or any type inside it.
pub(crate) fn any_part(m: &Module, ty: TypeId, pred: impl Fn(&TypeKind) -> bool) -> bool {
    let mut stack = vec![ty];
    while let Some(t) = stack.pop() {
        let kind = m.types.kind(t);
        if pred(kind) {
            return true;
        }
        match kind {
            TypeKind::Hole | TypeKind::Tensor { .. } | TypeKind::Param(_) => {}
            TypeKind::Tuple(ts) => stack.extend(ts),
            TypeKind::Adt { args, .. } => stack.extend(args),
            TypeKind::Ref(t) => stack.push(*t),
            TypeKind::Func { params, ret, .. } => {
                stack.extend(params);
                stack.push(*ret);
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Dim;
    use relay_devices::DType;

    #[test]
    fn incomplete_annotations() {
        let mut m = Module::default();
        let t = m.types.intern(TypeKind::Tensor { shape: vec![Dim::Any], dtype: DType::F32 });
        let hole = m.types.intern(TypeKind::Hole);
        let pair = m.types.intern(TypeKind::Tuple(vec![t, hole]));
        let f = m.types.intern(TypeKind::Func { type_params: vec![], params: vec![t], ret: t });
        assert!(is_incomplete(&m, None));
        assert!(is_incomplete(&m, Some(pair)));
        assert!(!is_incomplete(&m, Some(f)));
    }

    #[test]
    fn flags() {
        let mut m = Module::default();
        let attrs = flag(&mut m, "Primitive");
        assert!(has_flag(&m, &attrs, "Primitive"));
        assert!(!has_flag(&m, &attrs, "Closure"));
        let off = Attrs(vec![(m.symbols.intern("Closure"), AttrValue::Int(0))]);
        assert!(!has_flag(&m, &off, "Closure"));
    }
}
