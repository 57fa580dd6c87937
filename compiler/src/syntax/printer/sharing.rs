//! Where graph bindings (`%0 = ...;`) go.
//!
//! The IR is a DAG: a node referenced from several places would print once per path, which is
//! exponential. So a non-atomic node used more than once in a function prints once, as a
//! graph binding, in the innermost scope holding all its uses, just before the first
//! statement of that scope that uses it. Scopes are statement sequences: a function body,
//! an `if` branch, a `match` arm body and a parenthesised `let` block; a `let` body continues
//! the sequence of its `let`.
//!
//! Known limit: a node used both inside the `fn` of a recursive `let %f = fn ...` and after it,
//! and mentioning `%f`, lands before that `let`, where `%f` is not yet bound.

use crate::ir::{ExprId, ExprKind, Module};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// A statement sequence of the printed text, named by the node that owns it and a slot
/// number (branch or arm index); [`ROOT`] is the body being printed.
pub(super) type ScopeKey = (ExprId, u32);

/// The scope of the function body (or expression) being printed.
pub(super) const ROOT: ScopeKey = (ExprId(u32::MAX), 0);

/// Calls `f` on each child expression of `kind`, in printing order.
pub(super) fn for_each_child(kind: &ExprKind, mut f: impl FnMut(ExprId)) {
    match kind {
        ExprKind::Var(_)
        | ExprKind::Global(_)
        | ExprKind::Constructor(_)
        | ExprKind::Op(_)
        | ExprKind::Literal(_)
        | ExprKind::Constant(_) => {}
        ExprKind::Tuple(fields) => fields.iter().copied().for_each(f),
        ExprKind::Proj { tuple, .. } => f(*tuple),
        ExprKind::Call { callee, args, .. } => {
            f(*callee);
            args.iter().copied().for_each(f);
        }
        ExprKind::Let { value, body, .. } => {
            f(*value);
            f(*body);
        }
        ExprKind::If { cond, then_branch, else_branch } => {
            f(*cond);
            f(*then_branch);
            f(*else_branch);
        }
        ExprKind::Match { scrutinee, arms, .. } => {
            f(*scrutinee);
            arms.iter().for_each(|a| f(a.body));
        }
        ExprKind::Function(func) => f(func.body),
        ExprKind::RefNew(e) | ExprKind::RefRead(e) => f(*e),
        ExprKind::RefWrite { cell, value } => {
            f(*cell);
            f(*value);
        }
    }
}

/// A place in the text: a scope (index into [`Analysis::scopes`]) and a statement of it.
type Pos = (u32, u32);

/// Where each graph binding of one function goes.
#[derive(Default)]
pub(super) struct Layout {
    bindings: HashMap<(ScopeKey, u32), Vec<ExprId>>,
    bound: HashSet<ExprId>,
}

impl Layout {
    /// Lays out the graph bindings of the function body (or expression) `root`.
    pub(super) fn analyze(m: &Module, root: ExprId) -> Layout {
        Analysis::new(m, root).run(root)
    }

    /// Whether `e` prints as a graph binding (and as `%N` at its uses).
    pub(super) fn is_bound(&self, e: ExprId) -> bool {
        self.bound.contains(&e)
    }

    /// The graph bindings to print just before statement `stmt` of scope `key`, in order.
    pub(super) fn bindings_at(&self, key: ScopeKey, stmt: u32) -> &[ExprId] {
        self.bindings.get(&(key, stmt)).map_or(&[], Vec::as_slice)
    }
}

/// A node of a `let` chain: `e` continues the statement sequence rather than printing as one
/// statement. The first node of a parenthesised `let` block is one even when bound.
pub(super) fn continues_chain(m: &Module, e: ExprId, first_of_block: bool, bound: bool) -> bool {
    matches!(m.expr(e).kind, ExprKind::Let { .. }) && (first_of_block || !bound)
}

enum Work {
    /// `e` occurs at `pos`.
    Child(ExprId, Pos),
    /// `e` prints at `pos`: walk what it contains.
    Content(ExprId, Pos),
    /// A new scope owned by `key` whose statements start with `root`.
    Scope { key: ScopeKey, root: ExprId, parent: Option<Pos>, block: bool },
}

struct Scope {
    key: ScopeKey,
    parent: Option<Pos>,
    depth: u32,
}

struct Analysis<'m> {
    m: &'m Module,
    /// How many times each node is referenced inside the function.
    uses: HashMap<ExprId, u32>,
    /// For shared nodes: the uses seen so far and the innermost place covering them.
    seen: HashMap<ExprId, (u32, Pos)>,
    scopes: Vec<Scope>,
    layout: Layout,
}

impl<'m> Analysis<'m> {
    fn new(m: &'m Module, root: ExprId) -> Self {
        let mut uses = HashMap::default();
        uses.insert(root, 1);
        let mut stack = vec![root];
        while let Some(e) = stack.pop() {
            for_each_child(&m.expr(e).kind, |c| {
                let n = uses.entry(c).or_insert(0);
                *n += 1;
                if *n == 1 {
                    stack.push(c);
                }
            });
        }
        Analysis { m, uses, seen: HashMap::default(), scopes: vec![], layout: Layout::default() }
    }

    fn shared(&self, e: ExprId) -> bool {
        self.uses.get(&e).is_some_and(|&n| n > 1) && !self.m.expr(e).kind.is_atom()
    }

    fn run(mut self, root: ExprId) -> Layout {
        let mut work = vec![Work::Scope { key: ROOT, root, parent: None, block: false }];
        while let Some(item) = work.pop() {
            match item {
                Work::Scope { key, root, parent, block } => {
                    let depth = parent.map_or(0, |(s, _)| self.scopes[s as usize].depth + 1);
                    let sid = self.scopes.len() as u32;
                    self.scopes.push(Scope { key, parent, depth });
                    let (mut e, mut stmt, mut first) = (root, 0, block);
                    while continues_chain(self.m, e, first, self.shared(e)) {
                        let ExprKind::Let { value, body, .. } = self.m.expr(e).kind else { break };
                        work.push(Work::Child(value, (sid, stmt)));
                        (e, stmt, first) = (body, stmt + 1, false);
                    }
                    work.push(Work::Child(e, (sid, stmt)));
                }
                Work::Child(e, pos) => {
                    if self.m.expr(e).kind.is_atom() {
                        continue;
                    }
                    if !self.shared(e) {
                        work.push(Work::Content(e, pos));
                        continue;
                    }
                    let total = self.uses.get(&e).copied().unwrap_or(0);
                    let (count, at) = match self.seen.get(&e) {
                        Some(&(n, p)) => (n + 1, self.common(p, pos)),
                        None => (1, pos),
                    };
                    self.seen.insert(e, (count, at));
                    if count == total {
                        // Every use is known; the parents were placed earlier, so pushing
                        // in this order and printing in reverse puts dependencies first.
                        let key = self.scopes[at.0 as usize].key;
                        self.layout.bindings.entry((key, at.1)).or_default().push(e);
                        self.layout.bound.insert(e);
                        work.push(Work::Content(e, at));
                    }
                }
                Work::Content(e, pos) => self.content(e, pos, &mut work),
            }
        }
        for list in self.layout.bindings.values_mut() {
            list.reverse();
        }
        self.layout
    }

    fn content(&self, e: ExprId, pos: Pos, work: &mut Vec<Work>) {
        let parent = Some(pos);
        match &self.m.expr(e).kind {
            ExprKind::Let { .. } => work.push(Work::Scope { key: (e, 0), root: e, parent, block: true }),
            ExprKind::If { cond, then_branch, else_branch } => {
                work.push(Work::Child(*cond, pos));
                work.push(Work::Scope { key: (e, 0), root: *then_branch, parent, block: false });
                work.push(Work::Scope { key: (e, 1), root: *else_branch, parent, block: false });
            }
            ExprKind::Match { scrutinee, arms, .. } => {
                work.push(Work::Child(*scrutinee, pos));
                for (i, arm) in arms.iter().enumerate() {
                    work.push(Work::Scope { key: (e, i as u32), root: arm.body, parent, block: false });
                }
            }
            ExprKind::Function(f) => {
                work.push(Work::Scope { key: (e, 0), root: f.body, parent, block: false })
            }
            kind => for_each_child(kind, |c| work.push(Work::Child(c, pos))),
        }
    }

    /// The innermost place whose statement contains both `a` and `b`.
    fn common(&self, mut a: Pos, mut b: Pos) -> Pos {
        let depth = |p: Pos| self.scopes[p.0 as usize].depth;
        let up = |p: Pos| self.scopes[p.0 as usize].parent.unwrap_or(p);
        while depth(a) > depth(b) {
            a = up(a);
        }
        while depth(b) > depth(a) {
            b = up(b);
        }
        while a.0 != b.0 && depth(a) > 0 {
            (a, b) = (up(a), up(b));
        }
        (a.0, a.1.min(b.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Attrs, Span};

    #[test]
    fn shared_node_is_bound_once_before_its_first_use() {
        let mut m = Module::default();
        let s = Span::default();
        let x = m.symbols.intern("x");
        let add = m.symbols.intern("add");
        let xv = m.add_var(x, None, s);
        let xe = m.add_expr(ExprKind::Var(xv), s);
        let op = m.add_expr(ExprKind::Op(add), s);
        let sum = m.add_expr(ExprKind::Call { callee: op, args: vec![xe, xe], attrs: Attrs::default() }, s);
        let twice =
            m.add_expr(ExprKind::Call { callee: op, args: vec![sum, sum], attrs: Attrs::default() }, s);
        let root = m.add_expr(ExprKind::Let { var: xv, value: xe, body: twice }, s);
        let layout = Layout::analyze(&m, root);
        assert!(layout.is_bound(sum));
        assert!(!layout.is_bound(twice));
        assert!(!layout.is_bound(xe), "variables are atomic");
        assert_eq!(layout.bindings_at(ROOT, 1), &[sum]);
        assert!(layout.bindings_at(ROOT, 0).is_empty());
    }
}
