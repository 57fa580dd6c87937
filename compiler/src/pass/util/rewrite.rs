//! An iterative bottom-up expression rewriter.
//!
//! Passes that replace some nodes and keep the rest (eta expansion, lambda lifting, operator
//! lowering, substitution) all rebuild the spine above every replaced node. This does it once:
//! children are rewritten before their parent, each node exactly once (shared DAG nodes stay
//! shared), without recursion, and unchanged nodes keep their ids.

use super::walk::{children, with_children};
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, IdMap, Module};

/// What a pass does at each node.
pub(crate) trait Rewrite {
    /// Called once per node before its children. `false` keeps the node and everything under
    /// it as they are (no further calls for them).
    fn enter(&mut self, _m: &Module, _e: ExprId) -> bool {
        true
    }

    /// The replacement of `old`, whose children (in [`children`] order) have been rewritten
    /// to `kids`. [`rebuild`] is the identity rewrite.
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError>;
}

/// `old` with its children replaced by `kids`: `old` itself when they are the same, else a
/// new node with `old`'s span.
pub(crate) fn rebuild(m: &mut Module, old: ExprId, kids: &[ExprId]) -> ExprId {
    let expr = m.expr(old);
    let same = children(&expr.kind).iter().map(|&(c, _)| c).eq(kids.iter().copied());
    if same {
        return old;
    }
    let (kind, span) = (with_children(&expr.kind, kids), expr.span);
    m.add_expr(kind, span)
}

/// Rewrites the expression under `root` with `rw`, returning the new root.
///
/// # Errors
/// The first error `rw` returns.
pub(crate) fn rewrite(m: &mut Module, root: ExprId, rw: &mut impl Rewrite) -> Result<ExprId, CompileError> {
    let mut done: IdMap<ExprId, ExprId> = IdMap::new();
    let mut stack = vec![(root, false)];
    while let Some((e, expanded)) = stack.pop() {
        if !expanded {
            // A shared node may be queued several times: the first entry popped visits it,
            // and since the DAG has no cycles the others are popped after that visit is done.
            if done.contains_key(e) {
                continue;
            }
            if !rw.enter(m, e) {
                done.insert(e, e);
                continue;
            }
            stack.push((e, true));
            let kids = children(&m.expr(e).kind);
            stack.extend(
                kids.into_iter().rev().filter(|(c, _)| !done.contains_key(*c)).map(|(c, _)| (c, false)),
            );
            continue;
        }
        let kids: Vec<ExprId> =
            children(&m.expr(e).kind).iter().map(|&(c, _)| done.get(c).copied().unwrap_or(c)).collect();
        let new = rw.leave(m, e, &kids)?;
        done.insert(e, new);
    }
    Ok(done.get(root).copied().unwrap_or(root))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{ExprKind, Literal, LiteralValue};
    use crate::syntax::parse_module;
    use relay_devices::DType;

    /// Replaces every int32 literal by its successor.
    struct Bump;

    impl Rewrite for Bump {
        fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
            match m.expr(old).kind {
                ExprKind::Literal(Literal { value: LiteralValue::Int(i), dtype }) => {
                    let lit = Literal { value: LiteralValue::Int(i + 1), dtype };
                    Ok(m.add_expr(ExprKind::Literal(lit), m.expr(old).span))
                }
                _ => Ok(rebuild(m, old, kids)),
            }
        }
    }

    #[test]
    fn rebuilds_spines_keeps_the_rest_and_sharing() {
        let mut m =
            parse_module("t.relay", "def @f(%x: float32) { %0 = (1, %x); (%0, %0, (%x, %x)) }").unwrap();
        let root = m.function_by_name("f").unwrap().func.body;
        let new = rewrite(&mut m, root, &mut Bump).unwrap();
        assert_ne!(new, root);
        let ExprKind::Tuple(fields) = m.expr(new).kind.clone() else { panic!() };
        let ExprKind::Tuple(old_fields) = m.expr(root).kind.clone() else { panic!() };
        assert_eq!(fields[0], fields[1], "a shared node stays shared");
        assert_ne!(fields[0], old_fields[0]);
        assert_eq!(fields[2], old_fields[2], "an untouched subtree keeps its id");
        let ExprKind::Tuple(pair) = &m.expr(fields[0]).kind else { panic!() };
        let ExprKind::Literal(lit) = m.expr(pair[0]).kind else { panic!() };
        assert_eq!(lit, Literal { value: LiteralValue::Int(2), dtype: DType::I32 });
    }

    #[test]
    fn deep_let_chains_do_not_recurse() {
        let mut text = String::from("def @f() {\n");
        for i in 0..100_000 {
            text.push_str(&format!("let %x{i} = {i};\n"));
        }
        text.push_str("%x0\n}\n");
        let mut m = parse_module("t.relay", &text).unwrap();
        let root = m.function_by_name("f").unwrap().func.body;
        let handle = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || rewrite(&mut m, root, &mut Bump).map(|r| r != root))
            .unwrap();
        assert_eq!(handle.join().unwrap(), Ok(true));
    }
}
