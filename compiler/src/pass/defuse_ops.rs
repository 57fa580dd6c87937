//! Undoing fusion (TVM `DefuseOps`): each call of a `Primitive=1` function (a literal, or a
//! variable bound to one by `let`) becomes the function's body with its parameters replaced
//! by the arguments, and `let`s of primitive functions no longer used go. The inverse of
//! `FuseOps` (and of `LowerPrimitives`): operator calls appear inline again.
//!
//! An argument that is a variable replaces its parameter directly; any other argument is
//! bound by `let` first, so it is still evaluated once.

use super::util::builder::{is_primitive, let_chain};
use super::util::copy::copy_fresh_with;
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use super::util::walk::preorder;
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, Function, Module, VarId};
use crate::ty::TypeMap;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Inlines every primitive call in every global function (see the module docs).
///
/// # Errors
/// None today (the rewriter's signature).
pub fn defuse_ops(m: &mut Module, _types: &TypeMap) -> Result<(), CompileError> {
    for i in 0..m.functions.len() {
        if is_primitive(m, &m.functions[i].func) {
            continue;
        }
        let body = m.functions[i].func.body;
        let primitives: HashMap<VarId, Function> = preorder(m, body, |_| true)
            .into_iter()
            .filter_map(|e| match &m.expr(e).kind {
                ExprKind::Let { var, value, .. } => match &m.expr(*value).kind {
                    ExprKind::Function(f) if is_primitive(m, f) => Some((*var, (**f).clone())),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let body = rewrite(m, body, &mut Defuse { primitives: &primitives })?;
        let used: HashSet<VarId> = preorder(m, body, |_| true)
            .into_iter()
            .filter_map(|e| match m.expr(e).kind {
                ExprKind::Var(v) => Some(v),
                _ => None,
            })
            .collect();
        let unused = primitives.keys().copied().filter(|v| !used.contains(v)).collect();
        m.functions[i].func.body = rewrite(m, body, &mut DropLets { unused })?;
    }
    Ok(())
}

struct Defuse<'a> {
    primitives: &'a HashMap<VarId, Function>,
}

impl Rewrite for Defuse<'_> {
    fn enter(&mut self, m: &Module, e: ExprId) -> bool {
        !matches!(&m.expr(e).kind, ExprKind::Function(f) if is_primitive(m, f))
    }

    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let new = rebuild(m, old, kids);
        let ExprKind::Call { callee, args, .. } = &m.expr(new).kind else { return Ok(new) };
        let f = match &m.expr(*callee).kind {
            ExprKind::Function(f) if is_primitive(m, f) => (**f).clone(),
            ExprKind::Var(v) => match self.primitives.get(v) {
                Some(f) => f.clone(),
                None => return Ok(new),
            },
            _ => return Ok(new),
        };
        if f.params.len() != args.len() {
            return Ok(new);
        }
        let args = args.clone();
        let mut renamed = HashMap::default();
        let mut bindings = vec![];
        for (&p, a) in f.params.iter().zip(args) {
            let target = match m.expr(a).kind {
                ExprKind::Var(v) => v,
                _ => {
                    let decl = m.var(p).clone();
                    let fresh = m.add_var(decl.name, decl.ty, decl.span);
                    bindings.push((fresh, a));
                    fresh
                }
            };
            renamed.insert(p, target);
        }
        let (body, _) = copy_fresh_with(m, f.body, renamed)?;
        Ok(let_chain(m, bindings, body))
    }
}

/// Removes the `let`s of the given variables.
struct DropLets {
    unused: HashSet<VarId>,
}

impl Rewrite for DropLets {
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        match m.expr(old).kind {
            ExprKind::Let { var, .. } if self.unused.contains(&var) => Ok(kids[1]),
            _ => Ok(rebuild(m, old, kids)),
        }
    }
}
