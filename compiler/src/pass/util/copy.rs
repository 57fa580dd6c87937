//! Copying an expression with fresh binders, so that the copy and the original can both live
//! in one function without sharing a variable (passes assume every variable is bound once).

use super::rewrite::{rebuild, rewrite, Rewrite};
use super::walk::{pattern_vars, preorder};
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, MatchArm, Module, PatId, Pattern, PatternKind, VarId};
use rustc_hash::FxHashMap as HashMap;

/// A copy of the expression under `root` in which every variable bound inside it (`let`,
/// `fn` parameters, `match` patterns) is a fresh variable with the same name and annotation;
/// free variables are kept. Returns the copy and the map from old to fresh binders.
///
/// # Errors
/// None today (the rewriter's signature).
pub(crate) fn copy_fresh(
    m: &mut Module,
    root: ExprId,
) -> Result<(ExprId, HashMap<VarId, VarId>), CompileError> {
    copy_fresh_with(m, root, HashMap::default())
}

/// [`copy_fresh`], also replacing the free variables that are keys of `renamed` by their
/// values (a substitution of variables for variables).
///
/// # Errors
/// None today (the rewriter's signature).
pub(crate) fn copy_fresh_with(
    m: &mut Module,
    root: ExprId,
    renamed: HashMap<VarId, VarId>,
) -> Result<(ExprId, HashMap<VarId, VarId>), CompileError> {
    let mut fresh = renamed;
    for e in preorder(m, root, |_| true) {
        let bound: Vec<VarId> = match &m.expr(e).kind {
            ExprKind::Let { var, .. } => vec![*var],
            ExprKind::Function(f) => f.params.clone(),
            ExprKind::Match { arms, .. } => arms.iter().flat_map(|a| pattern_vars(m, a.pattern)).collect(),
            _ => vec![],
        };
        for v in bound {
            let decl = m.var(v).clone();
            fresh.insert(v, m.add_var(decl.name, decl.ty, decl.span));
        }
    }
    let mut copy = Copy { fresh };
    let root = rewrite(m, root, &mut copy)?;
    Ok((root, copy.fresh))
}

struct Copy {
    fresh: HashMap<VarId, VarId>,
}

impl Copy {
    fn var(&self, v: VarId) -> VarId {
        self.fresh.get(&v).copied().unwrap_or(v)
    }

    fn pattern(&self, m: &mut Module, p: PatId) -> PatId {
        let Pattern { kind, span } = m.pattern(p).clone();
        let kind = match kind {
            PatternKind::Wildcard => PatternKind::Wildcard,
            PatternKind::Var(v) => PatternKind::Var(self.var(v)),
            PatternKind::Constructor { name, args } => PatternKind::Constructor {
                name,
                args: args.into_iter().map(|a| self.pattern(m, a)).collect(),
            },
            PatternKind::Tuple(ps) => {
                PatternKind::Tuple(ps.into_iter().map(|a| self.pattern(m, a)).collect())
            }
        };
        m.add_pattern(Pattern { kind, span })
    }
}

impl Rewrite for Copy {
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let span = m.expr(old).span;
        // Every node is rebuilt, so the copy shares nothing with the original but free atoms.
        let kind = match &m.expr(old).kind {
            ExprKind::Var(v) => ExprKind::Var(self.var(*v)),
            ExprKind::Let { var, .. } => {
                let [value, body] = kids else { return Ok(rebuild(m, old, kids)) };
                ExprKind::Let { var: self.var(*var), value: *value, body: *body }
            }
            ExprKind::Function(f) => {
                let mut f = (**f).clone();
                f.params = f.params.iter().map(|&p| self.var(p)).collect();
                f.body = kids.first().copied().unwrap_or(f.body);
                ExprKind::Function(Box::new(f))
            }
            ExprKind::Match { arms, complete, .. } => {
                let arms: Vec<(PatId, usize)> =
                    arms.iter().enumerate().map(|(i, a)| (a.pattern, i)).collect();
                let complete = *complete;
                let Some((&scrutinee, bodies)) = kids.split_first() else { return Ok(rebuild(m, old, kids)) };
                let arms = arms
                    .into_iter()
                    .filter_map(|(p, i)| {
                        Some(MatchArm { pattern: self.pattern(m, p), body: *bodies.get(i)? })
                    })
                    .collect();
                ExprKind::Match { scrutinee, arms, complete }
            }
            _ => {
                let rebuilt = rebuild(m, old, kids);
                if rebuilt != old {
                    return Ok(rebuilt);
                }
                m.expr(old).kind.clone()
            }
        };
        Ok(m.add_expr(kind, span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::util::test_util::checked;
    use crate::pass::util::walk::preorder;

    fn binders(m: &Module, root: ExprId) -> Vec<VarId> {
        let mut vars = vec![];
        for e in preorder(m, root, |_| true) {
            match &m.expr(e).kind {
                ExprKind::Let { var, .. } => vars.push(*var),
                ExprKind::Function(f) => vars.extend(&f.params),
                ExprKind::Match { arms, .. } => {
                    vars.extend(arms.iter().flat_map(|a| pattern_vars(m, a.pattern)))
                }
                _ => {}
            }
        }
        vars
    }

    #[test]
    fn binders_are_fresh_and_free_variables_kept() {
        let (mut m, _) = checked(
            "def @main(%x: float32, %o: (float32, float32)) -> float32 {
               let %f = fn (%y: float32) -> float32 {
                 let %z = add(%y, %x);
                 match (%o) { (%a, _) => add(%a, %z) }
               };
               %f(%x)
             }",
        );
        let body = m.functions[0].func.body;
        let ExprKind::Let { value: literal, .. } = m.expr(body).kind else { panic!("not a let") };
        let (copy, fresh) = copy_fresh(&mut m, literal).unwrap();
        let (old, new) = (binders(&m, literal), binders(&m, copy));
        assert_eq!(old.len(), 3, "%y, %z, %a");
        assert_eq!(new, old.iter().map(|v| fresh[v]).collect::<Vec<_>>());
        assert!(new.iter().all(|v| !old.contains(v)));
        let names = |vs: &[VarId], m: &Module| {
            vs.iter().map(|&v| m.name(m.var(v).name).to_string()).collect::<Vec<_>>()
        };
        assert_eq!(names(&new, &m), names(&old, &m));
        // `%x` and `%o` are free in the literal: the copy reads the same variables.
        let free = |root| {
            preorder(&m, root, |_| true)
                .into_iter()
                .filter_map(|e| match m.expr(e).kind {
                    ExprKind::Var(v) if m.functions[0].func.params.contains(&v) => Some(v),
                    _ => None,
                })
                .collect::<rustc_hash::FxHashSet<_>>()
        };
        assert_eq!(free(copy), free(literal));
        assert_eq!(free(copy).len(), 2);
    }
}
