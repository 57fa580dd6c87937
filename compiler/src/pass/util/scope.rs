//! Where each node of a function body must be bound in A-normal form (TVM `ToANormalForm`'s
//! scope analysis over its dependency graph).
//!
//! Scopes are statement sequences: the body, each `if` branch and each `match` arm body (a
//! `let` body continues its `let`'s sequence). A node used from several places (a graph
//! binding) is bound once, in the innermost scope that contains all its uses, so it is
//! computed once and visible everywhere it is needed; a node used once lands in the scope of
//! its use. Nested `fn` bodies are scopes of their own, analysed separately.

use super::walk::{children, postorder, Slot};
use crate::ir::{ExprId, IdMap, Module};
use rustc_hash::FxHashMap as HashMap;

/// A scope: an index into [`Scopes`].
pub(crate) type ScopeId = usize;

/// The scope of the body itself.
pub(crate) const ROOT: ScopeId = 0;

/// The scope tree of one function body and the scope of each of its nodes.
pub(crate) struct Scopes {
    parent: Vec<ScopeId>,
    depth: Vec<u32>,
    of: IdMap<ExprId, ScopeId>,
    /// The scope of branch `i` of an `if` (0 then, 1 else) or arm `i` of a `match`.
    branches: HashMap<(ExprId, usize), ScopeId>,
}

impl Scopes {
    /// Analyses the body `root`. Visiting nodes parents-first (reverse post-order) means every
    /// use of a node is known, and its scope final, before the node's own children are placed.
    pub fn analyze(m: &Module, root: ExprId) -> Scopes {
        let mut s =
            Scopes { parent: vec![ROOT], depth: vec![0], of: IdMap::new(), branches: HashMap::default() };
        s.of.insert(root, ROOT);
        for &e in postorder(m, root, |slot| slot != Slot::FnBody).iter().rev() {
            let Some(&here) = s.of.get(e) else { continue };
            let mut branch = 0;
            for (c, slot) in children(&m.expr(e).kind) {
                let at = match slot {
                    Slot::FnBody => continue,
                    Slot::Branch => {
                        let b = s.add(here);
                        s.branches.insert((e, branch), b);
                        branch += 1;
                        b
                    }
                    Slot::Callee | Slot::Operand => here,
                };
                let scope = match s.of.get(c) {
                    Some(&prev) => s.common(prev, at),
                    None => at,
                };
                s.of.insert(c, scope);
            }
        }
        s
    }

    /// Number of scopes.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// The scope node `e` is bound in.
    pub fn of(&self, e: ExprId) -> Option<ScopeId> {
        self.of.get(e).copied()
    }

    /// The scope of branch `i` of the `if` or `match` node `e`.
    pub fn branch(&self, e: ExprId, i: usize) -> Option<ScopeId> {
        self.branches.get(&(e, i)).copied()
    }

    fn add(&mut self, parent: ScopeId) -> ScopeId {
        self.parent.push(parent);
        self.depth.push(self.depth[parent] + 1);
        self.parent.len() - 1
    }

    /// The innermost scope containing both `a` and `b`.
    fn common(&self, mut a: ScopeId, mut b: ScopeId) -> ScopeId {
        while self.depth[a] > self.depth[b] {
            a = self.parent[a];
        }
        while self.depth[b] > self.depth[a] {
            b = self.parent[b];
        }
        while a != b {
            a = self.parent[a];
            b = self.parent[b];
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::ExprKind;
    use crate::syntax::parse_module;

    #[test]
    fn shared_nodes_go_to_the_innermost_common_scope() {
        let m = parse_module(
            "t.relay",
            "def @f(%c: bool, %x: int32) {
               %0 = (%x, 1);
               %1 = (%x, 2);
               if (%c) { (%0, %1, %1) } else { (%0, if (%c) { %1 } else { %x }) }
             }",
        )
        .unwrap();
        let body = m.function_by_name("f").unwrap().func.body;
        let s = Scopes::analyze(&m, body);
        let ExprKind::If { then_branch, else_branch, .. } = m.expr(body).kind else { panic!() };
        let ExprKind::Tuple(t) = m.expr(then_branch).kind.clone() else { panic!() };
        let ExprKind::Tuple(e) = m.expr(else_branch).kind.clone() else { panic!() };
        let (zero, one, inner_if) = (t[0], t[1], e[1]);
        assert_eq!(s.of(zero), Some(ROOT), "used in both branches");
        assert_eq!(s.of(one), Some(ROOT), "used in the then branch and inside the else branch");
        assert_eq!(s.of(then_branch), s.branch(body, 0));
        assert_eq!(s.of(inner_if), s.branch(body, 1));
        assert_eq!(s.len(), 5);
    }
}
