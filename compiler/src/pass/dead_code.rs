//! Dead-code elimination (TVM `DeadCodeElimination`): `let %x = v; body` becomes `body` when
//! `%x` is not used and `v` is pure, and global functions that no entry function reaches are
//! removed.
//!
//! Pure means evaluating it can have no effect but its value: no reference is created, read
//! or written, no function or closure is called (it may loop or write a reference), and no
//! `match?` may fail. Operator calls, constructors, tuples, projections, `fn` literals (their
//! bodies run only when called) and `if`/`match` over pure parts are pure. Removing a `let`
//! can leave another unused, so rounds repeat until none is removed (at most [`MAX_ROUNDS`]).

use super::util::builder::is_primitive;
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use super::util::walk::{preorder, Slot};
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, IdSet, Module, Symbol, VarId};
use crate::ty::TypeMap;
use rustc_hash::FxHashSet as HashSet;

/// Rounds of removal per function: each removes the `let`s unused after the one before.
pub const MAX_ROUNDS: usize = 64;

/// Removes unused pure `let`s in every global function and, when `entries` is not empty, the
/// globals not reachable from the ones it names (see the module docs). With no entries every
/// global is kept: any may be called from outside.
///
/// # Errors
/// None today (the pass signature).
pub fn dead_code(m: &mut Module, _types: &TypeMap, entries: &[&str]) -> Result<(), CompileError> {
    remove_unreachable_globals(m, entries);
    for i in 0..m.functions.len() {
        for _ in 0..MAX_ROUNDS {
            let body = m.functions[i].func.body;
            let used = used_vars(m, body);
            let new = rewrite(m, body, &mut Unused { used: &used })?;
            if new == body {
                break;
            }
            m.functions[i].func.body = new;
        }
    }
    Ok(())
}

/// The variables referenced anywhere under `root`.
fn used_vars(m: &Module, root: ExprId) -> IdSet<VarId> {
    preorder(m, root, |_| true)
        .into_iter()
        .filter_map(|e| match m.expr(e).kind {
            ExprKind::Var(v) => Some(v),
            _ => None,
        })
        .collect()
}

struct Unused<'a> {
    used: &'a IdSet<VarId>,
}

impl Rewrite for Unused<'_> {
    fn enter(&mut self, m: &Module, e: ExprId) -> bool {
        !matches!(&m.expr(e).kind, ExprKind::Function(f) if is_primitive(m, f))
    }

    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        if let ExprKind::Let { var, value, .. } = m.expr(old).kind {
            if !self.used.contains(var) && is_pure(m, value) {
                return Ok(kids[1]);
            }
        }
        Ok(rebuild(m, old, kids))
    }
}

/// Whether evaluating `e` can have no effect but its value (see the module docs).
pub(crate) fn is_pure(m: &Module, e: ExprId) -> bool {
    preorder(m, e, |s| s != Slot::FnBody).into_iter().all(|n| match &m.expr(n).kind {
        ExprKind::Call { callee, .. } => {
            matches!(m.expr(*callee).kind, ExprKind::Op(_) | ExprKind::Constructor(_))
        }
        ExprKind::RefNew(_) | ExprKind::RefRead(_) | ExprKind::RefWrite { .. } => false,
        ExprKind::Match { complete, .. } => *complete,
        _ => true,
    })
}

/// Drops the globals that no global named in `entries` reaches (nothing when `entries` is
/// empty or names no global).
fn remove_unreachable_globals(m: &mut Module, entries: &[&str]) {
    let mut stack: Vec<Symbol> =
        entries.iter().filter_map(|n| m.function_by_name(n)).map(|f| f.name).collect();
    if stack.is_empty() {
        return;
    }
    let mut reached: HashSet<Symbol> = stack.iter().copied().collect();
    while let Some(name) = stack.pop() {
        let Some(f) = m.function(name) else { continue };
        for e in preorder(m, f.func.body, |_| true) {
            if let ExprKind::Global(g) = m.expr(e).kind {
                if reached.insert(g) {
                    stack.push(g);
                }
            }
        }
    }
    if reached.len() < m.functions.len() {
        m.retain_functions(|f| reached.contains(&f.name));
    }
}
