//! Eta expansion of constructors and globals used as values (TVM `EtaExpand` with
//! `expand_constructor` and `expand_global_var`).
//!
//! `@map(Some, %xs)` becomes `@map(fn (%x0: A) -> Option[A] { Some(%x0) }, %xs)`, and a global
//! passed as a value, `@foldl(@add_one, ...)`, becomes `fn (%x0: T0, ...) -> R { @add_one(%x0,
//! ...) }`. Afterwards constructors and globals are only ever called directly, and every
//! function value the VM builds is a closure of a `fn` literal, which lambda lifting then
//! turns into a global. The parameter types come from the type of the use, so a polymorphic
//! constructor or global is expanded at the instance it is used at. Nullary constructors are
//! values already; operators cannot be values (that is a type error).

use super::util::builder::{call, fresh_var, function, is_primitive, var_ref, Types};
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use super::util::walk::{children, Slot};
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, Function, IdMap, Module};
use crate::ty::TypeMap;

/// Expands every constructor with fields and every global that is used other than as the
/// callee of a call, in every global function except `Primitive=1` ones.
///
/// # Errors
/// An internal error if `types` lacks the type of a node (it must be the [`TypeMap`] of
/// `m` as it is).
pub fn eta_expand(m: &mut Module, types: &TypeMap) -> Result<(), CompileError> {
    for i in 0..m.functions.len() {
        if is_primitive(m, &m.functions[i].func) {
            continue;
        }
        let mut eta = Eta { types: Types::new(types, "eta_expand"), expanded: IdMap::new() };
        let body = rewrite(m, m.functions[i].func.body, &mut eta)?;
        m.functions[i].func.body = eta.value(m, body)?;
    }
    Ok(())
}

struct Eta<'t> {
    types: Types<'t>,
    /// The expansion of each constructor or global node, so a shared node stays shared.
    expanded: IdMap<ExprId, ExprId>,
}

impl Eta<'_> {
    /// `e` in a value position: expanded if it is a constructor with fields or a global.
    fn value(&mut self, m: &mut Module, e: ExprId) -> Result<ExprId, CompileError> {
        let expandable = match &m.expr(e).kind {
            ExprKind::Constructor(c) => m.constructor(*c).is_some_and(|c| !c.fields.is_empty()),
            ExprKind::Global(_) => true,
            _ => false,
        };
        if !expandable {
            return Ok(e);
        }
        if let Some(&x) = self.expanded.get(e) {
            return Ok(x);
        }
        let ty = self.types.func(m, e)?;
        let span = m.expr(e).span;
        let params: Vec<_> =
            ty.params.iter().enumerate().map(|(i, &t)| fresh_var(m, &format!("x{i}"), t, span)).collect();
        let args = params.iter().map(|&p| var_ref(m, p, span)).collect();
        let body = call(m, e, args, span);
        let f = Function {
            type_params: ty.type_params,
            params,
            ret_type: Some(ty.ret),
            body,
            attrs: Default::default(),
        };
        let x = function(m, f, span);
        self.expanded.insert(e, x);
        Ok(x)
    }
}

impl Rewrite for Eta<'_> {
    fn enter(&mut self, m: &Module, e: ExprId) -> bool {
        !matches!(&m.expr(e).kind, ExprKind::Function(f) if is_primitive(m, f))
    }

    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let slots = children(&m.expr(old).kind);
        let mut new = Vec::with_capacity(kids.len());
        for (&k, (_, slot)) in kids.iter().zip(slots) {
            new.push(if slot == Slot::Callee { k } else { self.value(m, k)? });
        }
        Ok(rebuild(m, old, &new))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::util::test_util::{checked, print};

    const LIST: &str = "type List[A] { Cons(A, List[A]), Nil }\ntype Box[A] { Wrap(A) }\n";

    #[test]
    fn constructors_and_globals_as_values() {
        let text = format!(
            "{LIST}
             def @apply[A, B](%f: fn (A) -> B, %x: A) -> B {{ %f(%x) }}
             def @inc(%x: int32) -> int32 {{ add(%x, 1) }}
             def @fst(%p: (int32, float32)) -> int32 {{ %p.0 }}
             def @main() {{
               let %c = Cons;
               (%c(1, Nil), @apply(@inc, 2), @apply(Wrap, 1f), @apply(@fst, (1, 2f)))
             }}"
        );
        let (mut m, types) = checked(&text);
        eta_expand(&mut m, &types).unwrap();
        let out = print(&mut m);
        assert!(out.contains("let %c = fn (%x0: int32, %x1: List[int32]) -> List[int32] {"), "{out}");
        assert!(out.contains("Cons(%x0, %x1)"), "{out}");
        assert!(out.contains("@apply(fn (%x0: int32) -> int32 {"), "{out}");
        assert!(out.contains("@inc(%x0)"), "{out}");
        assert!(out.contains("fn (%x0: float32) -> Box[float32] {"), "{out}");
        assert!(out.contains("fn (%x0: (int32, float32)) -> int32"), "{out}");
        // Callees are left alone; nullary constructors are values already.
        assert!(out.contains("%c(1, Nil)"), "{out}");
        assert!(!out.contains("fn () -> List"), "{out}");
    }

    #[test]
    fn polymorphic_uses_expand_at_the_type_parameters() {
        let text = format!(
            "{LIST}
             def @wrap[A](%x: A) -> fn (A, List[A]) -> List[A] {{ Cons }}"
        );
        let (mut m, types) = checked(&text);
        eta_expand(&mut m, &types).unwrap();
        let out = print(&mut m);
        assert!(out.contains("fn (%x0: A, %x1: List[A]) -> List[A] {"), "{out}");
    }
}
