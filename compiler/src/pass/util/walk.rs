//! The children of an expression node and iterative traversals of the expression DAG.
//!
//! Every pass needs the same two facts about a node: which nodes it refers to, in evaluation
//! order, and in what role (a callee, a branch taken or not, the body of a `fn`). Keeping them
//! here means a new [`ExprKind`] variant is handled in one place.

use crate::ir::{ExprId, ExprKind, Function, IdSet, MatchArm, Module, PatId, PatternKind, VarId};
use smallvec::{smallvec, SmallVec};

/// The role of a child in its parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// The function of a call (evaluated before the arguments).
    Callee,
    /// Evaluated whenever the parent is: arguments, fields, a condition, a scrutinee, a
    /// `let`'s value and body.
    Operand,
    /// An `if` branch or a `match` arm body: evaluated only when taken.
    Branch,
    /// The body of a `fn` literal: evaluated when the function is called.
    FnBody,
}

/// The children of one node, inline up to four (every node but long tuples, calls and
/// matches): every walk visits every node, so a list per visit should not allocate.
pub type Children = SmallVec<[(ExprId, Slot); 4]>;

/// The children of `kind` in evaluation order (callee first, then arguments left to right;
/// a condition or scrutinee before the branches).
pub fn children(kind: &ExprKind) -> Children {
    use Slot::*;
    match kind {
        ExprKind::Var(_)
        | ExprKind::Global(_)
        | ExprKind::Constructor(_)
        | ExprKind::Op(_)
        | ExprKind::Literal(_)
        | ExprKind::Constant(_) => Children::new(),
        ExprKind::Tuple(fields) => fields.iter().map(|&f| (f, Operand)).collect(),
        ExprKind::Proj { tuple, .. } => smallvec![(*tuple, Operand)],
        ExprKind::Call { callee, args, .. } => {
            std::iter::once((*callee, Callee)).chain(args.iter().map(|&a| (a, Operand))).collect()
        }
        ExprKind::Let { value, body, .. } => smallvec![(*value, Operand), (*body, Operand)],
        ExprKind::If { cond, then_branch, else_branch } => {
            smallvec![(*cond, Operand), (*then_branch, Branch), (*else_branch, Branch)]
        }
        ExprKind::Match { scrutinee, arms, .. } => {
            std::iter::once((*scrutinee, Operand)).chain(arms.iter().map(|a| (a.body, Branch))).collect()
        }
        ExprKind::Function(f) => smallvec![(f.body, FnBody)],
        ExprKind::RefNew(v) | ExprKind::RefRead(v) => smallvec![(*v, Operand)],
        ExprKind::RefWrite { cell, value } => smallvec![(*cell, Operand), (*value, Operand)],
    }
}

/// `kind` with its children replaced by `new`, given in [`children`] order. Missing entries
/// keep the old child (callers always pass one per child).
pub(crate) fn with_children(kind: &ExprKind, new: &[ExprId]) -> ExprKind {
    let mut next = new.iter().copied();
    let mut take = |old: ExprId| next.next().unwrap_or(old);
    match kind {
        ExprKind::Var(_)
        | ExprKind::Global(_)
        | ExprKind::Constructor(_)
        | ExprKind::Op(_)
        | ExprKind::Literal(_)
        | ExprKind::Constant(_) => kind.clone(),
        ExprKind::Tuple(fields) => ExprKind::Tuple(fields.iter().map(|&f| take(f)).collect()),
        ExprKind::Proj { tuple, index } => ExprKind::Proj { tuple: take(*tuple), index: *index },
        ExprKind::Call { callee, args, attrs } => {
            let callee = take(*callee);
            ExprKind::Call { callee, args: args.iter().map(|&a| take(a)).collect(), attrs: attrs.clone() }
        }
        ExprKind::Let { var, value, body } => {
            let value = take(*value);
            ExprKind::Let { var: *var, value, body: take(*body) }
        }
        ExprKind::If { cond, then_branch, else_branch } => {
            let cond = take(*cond);
            let then_branch = take(*then_branch);
            ExprKind::If { cond, then_branch, else_branch: take(*else_branch) }
        }
        ExprKind::Match { scrutinee, arms, complete } => {
            let scrutinee = take(*scrutinee);
            let arms = arms.iter().map(|a| MatchArm { pattern: a.pattern, body: take(a.body) }).collect();
            ExprKind::Match { scrutinee, arms, complete: *complete }
        }
        ExprKind::Function(f) => {
            ExprKind::Function(Box::new(Function { body: take(f.body), ..(**f).clone() }))
        }
        ExprKind::RefNew(v) => ExprKind::RefNew(take(*v)),
        ExprKind::RefRead(v) => ExprKind::RefRead(take(*v)),
        ExprKind::RefWrite { cell, value } => {
            let cell = take(*cell);
            ExprKind::RefWrite { cell, value: take(*value) }
        }
    }
}

/// Every node reachable from `root` through children whose slot `follow` accepts, each once,
/// in depth-first pre-order with children in evaluation order (so the first occurrence of
/// anything comes first). Iterative: deep `let` chains and long lists are fine.
pub(crate) fn preorder(m: &Module, root: ExprId, follow: impl Fn(Slot) -> bool) -> Vec<ExprId> {
    let mut seen = IdSet::new();
    let mut order = vec![];
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        if !seen.insert(e) {
            continue;
        }
        order.push(e);
        let kids = children(&m.expr(e).kind);
        stack.extend(kids.into_iter().rev().filter(|&(_, s)| follow(s)).map(|(c, _)| c));
    }
    order
}

/// Every node reachable from `root` through children whose slot `follow` accepts, each once,
/// after all of its descendants (depth-first post-order). Reversed, it lists every node
/// before anything it refers to.
pub(crate) fn postorder(m: &Module, root: ExprId, follow: impl Fn(Slot) -> bool) -> Vec<ExprId> {
    let mut seen = IdSet::new();
    let mut order = vec![];
    let mut stack = vec![(root, false)];
    while let Some((e, expanded)) = stack.pop() {
        if expanded {
            order.push(e);
            continue;
        }
        if !seen.insert(e) {
            continue;
        }
        stack.push((e, true));
        let kids = children(&m.expr(e).kind);
        stack.extend(
            kids.into_iter().rev().filter(|&(c, s)| follow(s) && !seen.contains(c)).map(|(c, _)| (c, false)),
        );
    }
    order
}

/// The variables bound by pattern `p`, left to right.
pub(crate) fn pattern_vars(m: &Module, p: PatId) -> Vec<VarId> {
    let mut vars = vec![];
    let mut stack = vec![p];
    while let Some(p) = stack.pop() {
        match &m.pattern(p).kind {
            PatternKind::Wildcard => {}
            PatternKind::Var(v) => vars.push(*v),
            PatternKind::Constructor { args: ps, .. } | PatternKind::Tuple(ps) => {
                stack.extend(ps.iter().rev())
            }
        }
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_module;

    #[test]
    fn with_children_inverts_children() {
        let m = parse_module(
            "t.relay",
            "type L { C(int32, L), N } \
             def @f(%x: int32, %l: L) { let %y = (%x, %x.0); if (True) { %y } else { match (%l) { C(%h, _) => %h, N => ref_read(ref(%x)) } } }",
        )
        .unwrap();
        for e in &m.exprs {
            let kids: Vec<ExprId> = children(&e.kind).into_iter().map(|(c, _)| c).collect();
            let rebuilt = with_children(&e.kind, &kids);
            let again: Vec<ExprId> = children(&rebuilt).into_iter().map(|(c, _)| c).collect();
            assert_eq!(kids, again);
        }
    }

    #[test]
    fn orders_visit_each_node_once() {
        let m = parse_module("t.relay", "def @f(%x: int32) { %0 = (%x, %x); (%0, %0) }").unwrap();
        let root = m.function_by_name("f").unwrap().func.body;
        let pre = preorder(&m, root, |_| true);
        let post = postorder(&m, root, |_| true);
        assert_eq!(pre.len(), post.len());
        assert_eq!(pre[0], root);
        assert_eq!(post.last(), Some(&root));
        let shared = pre[1];
        let pos = |e| post.iter().position(|&x| x == e).unwrap();
        assert!(children(&m.expr(shared).kind).iter().all(|&(c, _)| pos(c) < pos(shared)));
    }
}
