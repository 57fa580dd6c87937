//! Free variables of an expression.
//!
//! Every binding site has its own [`VarId`] (a parameter, a `let`, a pattern variable), so a
//! variable is free in `e` exactly when `e` mentions it and binds it nowhere; no scope
//! tracking is needed. The variable of a recursive `let %f = fn ...` is bound by the `let`,
//! not by the `fn`: it is free in the `fn` literal itself.

use super::walk::{pattern_vars, preorder};
use crate::ir::{ExprId, ExprKind, Module, VarId};
use rustc_hash::FxHashSet as HashSet;

/// The variables free in `e`, in order of first mention (evaluation order), each once.
pub fn free_vars(m: &Module, e: ExprId) -> Vec<VarId> {
    let mut bound = HashSet::default();
    let mut used = vec![];
    for node in preorder(m, e, |_| true) {
        match &m.expr(node).kind {
            ExprKind::Var(v) => used.push(*v),
            ExprKind::Let { var, .. } => {
                bound.insert(*var);
            }
            ExprKind::Function(f) => bound.extend(f.params.iter().copied()),
            ExprKind::Match { arms, .. } => {
                for arm in arms {
                    bound.extend(pattern_vars(m, arm.pattern));
                }
            }
            _ => {}
        }
    }
    let mut seen = HashSet::default();
    used.into_iter().filter(|v| !bound.contains(v) && seen.insert(*v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_module;

    fn names(m: &Module, vs: &[VarId]) -> Vec<String> {
        vs.iter().map(|&v| m.name(m.var(v).name).to_string()).collect()
    }

    #[test]
    fn binders_params_lets_and_patterns() {
        let m = parse_module(
            "t.relay",
            "type L { C(int32, L), N }
             def @f(%a: int32, %b: int32, %l: L) {
               fn (%x: int32) {
                 let %y = (%b, %x);
                 match (%l) { C(%h, _) => (%h, %y, %a), N => (%a, %y, %b) }
               }
             }",
        )
        .unwrap();
        let f = m.function_by_name("f").unwrap().func.body;
        assert_eq!(names(&m, &free_vars(&m, f)), ["b", "l", "a"]);
    }

    #[test]
    fn a_recursive_let_variable_is_free_in_its_fn() {
        let m = parse_module(
            "t.relay",
            "def @f(%n: int32) { let %g = fn (%i: int32) -> int32 { %g(%i) }; %g(%n) }",
        )
        .unwrap();
        let body = m.function_by_name("f").unwrap().func.body;
        let ExprKind::Let { value, .. } = m.expr(body).kind else { panic!() };
        assert_eq!(names(&m, &free_vars(&m, value)), ["g"]);
        assert_eq!(names(&m, &free_vars(&m, body)), ["n"]);
    }
}
