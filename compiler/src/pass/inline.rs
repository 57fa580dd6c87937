//! Inlining of global functions marked `Inline=1` (TVM `Inline`): a call `@f(a, b)` becomes
//! `let %x' = a; let %y' = b; <a fresh copy of @f's body>` (arguments still evaluated once,
//! in order, before the body), and a marked global no longer referenced afterwards is
//! removed.
//!
//! A marked global is inlined when it is not generic (its parameters' types are then those
//! of the call site), does not call itself, and the call passes as many arguments as it has
//! parameters; inlined bodies may call other marked globals, inlined in the next round (at
//! most [`MAX_ROUNDS`], so mutual recursion ends).

use super::util::builder::{has_flag, let_chain};
use super::util::copy::copy_fresh_with;
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use super::util::walk::preorder;
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, Function, Module, Symbol};
use crate::ty::TypeMap;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The function attribute that asks for inlining.
pub const INLINE: &str = "Inline";

/// Rounds of inlining: a marked global called from an inlined body is inlined in the next.
pub const MAX_ROUNDS: usize = 8;

/// Inlines the calls of `Inline=1` globals in every global function (see the module docs).
///
/// # Errors
/// None today (the rewriter's signature).
pub fn inline(m: &mut Module, _types: &TypeMap) -> Result<(), CompileError> {
    let marked: HashMap<Symbol, Function> = m
        .functions
        .iter()
        .filter(|g| has_flag(m, &g.func.attrs, INLINE) && g.func.type_params.is_empty())
        .filter(|g| !calls(m, g.func.body, g.name))
        .map(|g| (g.name, g.func.clone()))
        .collect();
    if marked.is_empty() {
        return Ok(());
    }
    for i in 0..m.functions.len() {
        for _ in 0..MAX_ROUNDS {
            let body = m.functions[i].func.body;
            let new = rewrite(m, body, &mut Inliner { marked: &marked })?;
            if new == body {
                break;
            }
            m.functions[i].func.body = new;
        }
    }
    let referenced: HashSet<Symbol> = m
        .functions
        .iter()
        .flat_map(|g| preorder(m, g.func.body, |_| true))
        .filter_map(|e| match m.expr(e).kind {
            ExprKind::Global(g) => Some(g),
            _ => None,
        })
        .collect();
    m.retain_functions(|g| !marked.contains_key(&g.name) || referenced.contains(&g.name));
    Ok(())
}

/// Whether the expression under `root` refers to global `name`.
fn calls(m: &Module, root: ExprId, name: Symbol) -> bool {
    preorder(m, root, |_| true)
        .into_iter()
        .any(|e| matches!(m.expr(e).kind, ExprKind::Global(g) if g == name))
}

struct Inliner<'a> {
    marked: &'a HashMap<Symbol, Function>,
}

impl Rewrite for Inliner<'_> {
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let new = rebuild(m, old, kids);
        let ExprKind::Call { callee, args, .. } = &m.expr(new).kind else { return Ok(new) };
        let ExprKind::Global(g) = m.expr(*callee).kind else { return Ok(new) };
        let Some(f) = self.marked.get(&g).filter(|f| f.params.len() == args.len()) else { return Ok(new) };
        let args = args.clone();
        let mut renamed = HashMap::default();
        let mut bindings = vec![];
        for (&p, a) in f.params.iter().zip(args) {
            let decl = m.var(p).clone();
            let fresh = m.add_var(decl.name, decl.ty, decl.span);
            renamed.insert(p, fresh);
            bindings.push((fresh, a));
        }
        let (body, _) = copy_fresh_with(m, f.body, renamed)?;
        Ok(let_chain(m, bindings, body))
    }
}
