//! Type inference (paper §3.2): Hindley–Milner with explicit type parameters, unification by
//! union-find with an occurs check, ADTs, closures and references, and TVM-style type
//! relations for operators solved by a worklist.
//!
//! Decisions, as in TVM: type parameters are explicit (`def @map[A, B]`, `fn [A]`) and
//! instantiated afresh at each use; there is no implicit let-generalisation. Globals may call
//! each other in any order (all signatures are declared before bodies are checked). `?`
//! dimensions unify with any size and are checked at run time. A non-exhaustive `match` is an
//! error naming the missing patterns; `match?` allows it. Every expression must end with a
//! fully known type; otherwise the error names the expression to annotate.

mod exhaustive;
mod infer;
mod solve;
mod term;

use crate::diagnostics::{CompileError, Diagnostic};
use crate::ir::{ExprId, ExprKind, Module, Symbol, TypeId, VarId};
use crate::op::OpRegistry;
use infer::Checker;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The inferred types of a module.
#[derive(Debug, Clone, Default)]
pub struct TypeMap {
    /// The type of each expression, indexed by [`ExprId`]; `None` for nodes not reachable
    /// from any global function (or, after [`reinfer_types`], possibly the type of a node
    /// that a pass made unreachable).
    pub exprs: Vec<Option<TypeId>>,
    /// The type of each variable, indexed by [`VarId`].
    pub vars: Vec<Option<TypeId>>,
    /// Each global function's type (with its type parameters).
    pub globals: HashMap<Symbol, TypeId>,
}

impl TypeMap {
    /// The type of expression `e`.
    pub fn expr(&self, e: ExprId) -> Option<TypeId> {
        self.exprs.get(e.index()).copied().flatten()
    }

    /// The type of variable `v`.
    pub fn var(&self, v: VarId) -> Option<TypeId> {
        self.vars.get(v.index()).copied().flatten()
    }
}

/// Infers the type of every expression of every global function in `module`, checking
/// operator calls against `ops`' type relations. Finished types are interned in
/// `module.types`.
///
/// # Errors
/// Every type error found, each at the expression it concerns: mismatches name both types,
/// relation failures name the operator and its argument types, non-exhaustive matches list
/// the missing patterns, and expressions whose type cannot be determined say what to annotate.
pub fn infer_types(module: &mut Module, ops: &OpRegistry) -> Result<TypeMap, CompileError> {
    infer_into(module, ops, TypeMap::default(), &HashMap::default())
}

/// [`infer_types`] after a pass changed `module` only in the global functions named in
/// `changed` (new globals included), given `prev`, the types of the module before the pass:
/// only the changed functions' bodies are inferred, against the other globals' finished
/// signatures from `prev`, whose expression and variable types are kept; within them, only
/// the nodes the pass added are visited (the others keep their types from `prev`).
///
/// Sound because passes never edit an expression node in place (a global whose
/// `Function` is unchanged reaches the same nodes, a node reaches the same subtree) and the
/// caller has checked that no type definition or variable annotation changed. Where a changed function's signature differs
/// from before, its unchanged callers were typed against the old one, so the whole module is
/// inferred again. Entries of the result for nodes no longer reachable may be stale.
///
/// # Errors
/// As [`infer_types`], for the changed functions.
pub fn reinfer_types(
    module: &mut Module,
    ops: &OpRegistry,
    prev: TypeMap,
    changed: &HashSet<Symbol>,
) -> Result<TypeMap, CompileError> {
    let kept: HashMap<Symbol, TypeId> =
        prev.globals.iter().filter(|(g, _)| !changed.contains(*g)).map(|(&g, &t)| (g, t)).collect();
    let before: Vec<(Symbol, TypeId)> =
        changed.iter().filter_map(|g| Some((*g, *prev.globals.get(g)?))).collect();
    let map = infer_into(module, ops, prev, &kept)?;
    if before.iter().any(|(g, t)| map.globals.get(g) != Some(t)) {
        return infer_types(module, ops);
    }
    Ok(map)
}

/// Infers every global not in `kept` (whose signatures are taken as given), not visiting
/// the nodes `seed` types; the result is `seed` with the finished types written over it and
/// its globals replaced (an empty `seed` gives a whole inference).
fn infer_into(
    module: &mut Module,
    ops: &OpRegistry,
    seed: TypeMap,
    kept: &HashMap<Symbol, TypeId>,
) -> Result<TypeMap, CompileError> {
    let mut ck = Checker::new(module, ops, &seed);
    ck.check_module(kept);
    ck.solve();
    ck.report_unsolved();
    check_exhaustiveness(&mut ck);
    let Checker { mut terms, expr_ty, var_ty, global_ty, mut diags, .. } = ck;
    let mut map = seed;
    map.globals.clear();
    map.exprs.resize(expr_ty.len(), None);
    map.vars.resize(var_ty.len(), None);

    let had_errors = !diags.is_empty();
    // One "cannot infer" per function: the outermost unknown explains the inner ones, and one
    // report per unsolved type variable (a `let` variable explains the value bound to it).
    let mut reported_in: Vec<crate::ir::Span> = vec![];
    let mut reported_vars = vec![];
    for (i, t) in var_ty.iter().enumerate() {
        let Some(t) = *t else { continue };
        match terms.finish(module, t) {
            Some(ty) => map.vars[i] = Some(ty),
            None if !had_errors && !terms.has_error(t) => {
                let v = &module.vars[i];
                let shown = terms.display(module, t);
                let unsolved = terms.unbound_vars(t);
                if !reported_in
                    .iter()
                    .any(|s| s.file == v.span.file && s.lo <= v.span.lo && v.span.hi <= s.hi)
                    && !unsolved.iter().any(|u| reported_vars.contains(u))
                {
                    reported_in.push(v.span);
                    reported_vars.extend(unsolved);
                    diags.push(
                        Diagnostic::error(
                            v.span,
                            format!(
                                "cannot infer the type of `%{}` (known so far: `{shown}`)",
                                module.name(v.name)
                            ),
                        )
                        .with_note("help: add a type annotation"),
                    );
                }
            }
            None => {}
        }
    }
    for (i, t) in expr_ty.iter().enumerate() {
        let Some(t) = *t else { continue };
        match terms.finish(module, t) {
            Some(ty) => map.exprs[i] = Some(ty),
            None if !had_errors && !terms.has_error(t) => {
                let span = module.exprs[i].span;
                let unsolved = terms.unbound_vars(t);
                if !reported_in.iter().any(|s| s.file == span.file && s.lo <= span.lo && span.hi <= s.hi)
                    && !unsolved.iter().any(|u| reported_vars.contains(u))
                {
                    reported_in.push(span);
                    reported_vars.extend(unsolved);
                    let shown = terms.display(module, t);
                    diags.push(
                        Diagnostic::error(
                            span,
                            format!("cannot infer the type of this expression (known so far: `{shown}`)"),
                        )
                        .with_note("help: add a type annotation"),
                    );
                }
            }
            None => {}
        }
    }
    for (name, t) in global_ty {
        if let Some(ty) = terms.finish(module, t) {
            map.globals.insert(name, ty);
        }
    }
    if diags.is_empty() {
        Ok(map)
    } else {
        Err(CompileError::new(diags))
    }
}

fn check_exhaustiveness(ck: &mut Checker<'_>) {
    let m = ck.m;
    for &e in &ck.matches {
        let ExprKind::Match { arms, complete: true, .. } = &m.expr(e).kind else { continue };
        let pats: Vec<_> = arms.iter().map(|a| a.pattern).collect();
        let missing = exhaustive::missing_patterns(m, &pats);
        if !missing.is_empty() {
            ck.diags.push(
                Diagnostic::error(
                    m.expr(e).span,
                    format!("non-exhaustive `match`: missing {}", missing.join(", ")),
                )
                .with_note("help: add arms for these patterns, or use `match?` to allow a run-time failure"),
            );
        }
    }
}
