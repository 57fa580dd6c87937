//! Conversion to graph normal form (TVM `ToGraphNormalForm`): `let %x = v; body` becomes
//! `body` with every use of `%x` referring to the one node `v`, so the program is a dataflow
//! graph (printed with `%0 = ...;` graph bindings) rather than a `let` chain. The inverse of
//! `ToANormalForm`.
//!
//! Only pure values (see [`super::dead_code`]) move, since a shared node is evaluated where
//! it is first used rather than where the `let` was; a value that refers to its own variable
//! (a recursive local function) keeps its `let`, and so does everything with an effect (a
//! reference written, a function called). A pure value whose variable is unused goes.

use super::dead_code::is_pure;
use super::util::builder::is_primitive;
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use super::util::walk::preorder;
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, Module, VarId};
use crate::ty::TypeMap;
use rustc_hash::FxHashMap as HashMap;

/// Converts every global function's pure `let`s to shared nodes (see the module docs).
///
/// # Errors
/// None today (the pass signature).
pub fn to_graph_normal_form(m: &mut Module, _types: &TypeMap) -> Result<(), CompileError> {
    for i in 0..m.functions.len() {
        let body = m.functions[i].func.body;
        let mut movable = HashMap::default();
        for e in preorder(m, body, |_| true) {
            if let ExprKind::Let { var, value, .. } = m.expr(e).kind {
                let recursive = preorder(m, value, |_| true)
                    .into_iter()
                    .any(|n| matches!(m.expr(n).kind, ExprKind::Var(v) if v == var));
                if !recursive && is_pure(m, value) {
                    movable.insert(value, var);
                }
            }
        }
        let mut graph = Graph { movable, bound: HashMap::default() };
        m.functions[i].func.body = rewrite(m, body, &mut graph)?;
    }
    Ok(())
}

struct Graph {
    /// The `let` values that move, and their variables.
    movable: HashMap<ExprId, VarId>,
    /// Each moved variable's (rewritten) value.
    bound: HashMap<VarId, ExprId>,
}

impl Rewrite for Graph {
    fn enter(&mut self, m: &Module, e: ExprId) -> bool {
        !matches!(&m.expr(e).kind, ExprKind::Function(f) if is_primitive(m, f))
    }

    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let new = match m.expr(old).kind {
            ExprKind::Var(v) => self.bound.get(&v).copied().unwrap_or(old),
            ExprKind::Let { value, .. } if self.movable.contains_key(&value) => kids[1],
            _ => rebuild(m, old, kids),
        };
        if let Some(&var) = self.movable.get(&old) {
            self.bound.insert(var, new);
        }
        Ok(new)
    }
}
