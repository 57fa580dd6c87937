//! Operator calls become calls of primitive functions.
//!
//! `add(%a, %b)` becomes `fn (%p0: T0, %p1: T1, Primitive=1) -> R { add(%p0, %p1) }(%a, %b)`,
//! with the operator's attributes kept on the inner call. The emitter compiles each
//! `Primitive=1` function to one kernel invoked with preallocated outputs, so after this pass
//! every tensor computation the VM runs is such a call. Operator fusion (TVM `FuseOps`) builds
//! bigger primitive functions of the same shape.

use super::util::builder::{call, flag, fresh_var, function, is_primitive, var_ref, Types};
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use super::PRIMITIVE;
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, Function, Module};
use crate::ty::TypeMap;

/// Wraps every operator call outside `Primitive=1` functions in a primitive function of its
/// own, with parameters typed by the call's argument types.
///
/// # Errors
/// An internal error if `types` lacks a type (it must be the [`TypeMap`] of `m` as it is).
pub fn lower_primitives(m: &mut Module, types: &TypeMap) -> Result<(), CompileError> {
    let mut lower = Lower { types: Types::new(types, "lower_primitives") };
    for i in 0..m.functions.len() {
        if is_primitive(m, &m.functions[i].func) {
            continue;
        }
        m.functions[i].func.body = rewrite(m, m.functions[i].func.body, &mut lower)?;
    }
    Ok(())
}

struct Lower<'t> {
    types: Types<'t>,
}

impl Rewrite for Lower<'_> {
    fn enter(&mut self, m: &Module, e: ExprId) -> bool {
        !matches!(&m.expr(e).kind, ExprKind::Function(f) if is_primitive(m, f))
    }

    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let expr = m.expr(old);
        let ExprKind::Call { callee, args, attrs } = &expr.kind else { return Ok(rebuild(m, old, kids)) };
        if !matches!(m.expr(*callee).kind, ExprKind::Op(_)) {
            return Ok(rebuild(m, old, kids));
        }
        let (op, args, attrs, span) = (*callee, args.clone(), attrs.clone(), expr.span);
        let mut params = Vec::with_capacity(args.len());
        for (i, &a) in args.iter().enumerate() {
            let ty = self.types.expr(m, a)?;
            params.push(fresh_var(m, &format!("p{i}"), ty, span));
        }
        let inner_args = params.iter().map(|&p| var_ref(m, p, span)).collect();
        let body = m.add_expr(ExprKind::Call { callee: op, args: inner_args, attrs }, span);
        let prim = Function {
            type_params: vec![],
            params,
            ret_type: Some(self.types.expr(m, old)?),
            body,
            attrs: flag(m, PRIMITIVE),
        };
        let prim = function(m, prim, span);
        // `kids` is the callee (the operator) followed by the rewritten arguments.
        let outer_args = kids.get(1..).unwrap_or_default().to_vec();
        Ok(call(m, prim, outer_args, span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::util::test_util::{checked, print};

    #[test]
    fn operator_calls_become_primitive_calls() {
        let (mut m, types) = checked(
            "def @main(%x: Tensor[(2, 3), float32]) {
               let %f = fn (%y: Tensor[(2, 3), float32]) { negative(%y) };
               clip(add(%f(%x), %x), a_min=0f, a_max=1f)
             }",
        );
        lower_primitives(&mut m, &types).unwrap();
        let out = print(&mut m);
        assert!(
            out.contains("fn (%p0: Tensor[(2, 3), float32], Primitive=1) -> Tensor[(2, 3), float32] {\n      negative(%p0)"),
            "{out}"
        );
        assert!(out.contains("clip(%p0, a_min=0f, a_max=1f)"), "{out}");
        assert!(
            out.contains("fn (%p0: Tensor[(2, 3), float32], %p1: Tensor[(2, 3), float32], Primitive=1)"),
            "{out}"
        );
        assert_eq!(out.matches("Primitive=1").count(), 3, "{out}");
        // Running it again lowers nothing more: primitive bodies are left alone.
        let types = crate::pass::util::test_util::infer(&mut m);
        lower_primitives(&mut m, &types).unwrap();
        assert_eq!(print(&mut m), out);
    }
}
