//! Conversion to basic-block normal form (TVM `ToBasicBlockNormalForm`): every function body
//! and every `if` branch and `match` arm is a block whose `let`s are scoped so that no
//! expression is shared across blocks. A node used from several blocks (a graph binding
//! read in both branches of an `if`) is bound by `let` once, in the innermost block holding
//! all its uses (the scope analysis of [`to_anf`](super::to_anf())); the program's own `let`s
//! stay; everything else stays nested as written (sharing within one block is allowed), unlike
//! A-normal form, which binds every non-atomic expression.

use super::to_anf::convert_bodies;
use super::util::builder::Types;
use super::util::scope::Scopes;
use super::util::walk::{children, postorder, Slot};
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, IdSet, Module};
use crate::ty::TypeMap;

/// Converts the body of every global function except `Primitive=1` ones to basic-block
/// normal form (see the module docs). Fresh variables are named `v<N>` and annotated.
///
/// # Errors
/// An internal error if `types` lacks a type (it must be the [`TypeMap`] of `m` as it is).
pub fn to_basic_block_normal_form(m: &mut Module, types: &TypeMap) -> Result<(), CompileError> {
    convert_bodies(m, Types::new(types, "ToBasicBlockNormalForm"), true)
}

/// The nodes of `body` (not inside nested `fn` bodies, which are analysed on their own)
/// that basic-block normal form binds by `let`:
/// - the nodes used from a block other than their own (their scope was lifted to the
///   innermost common block), and the program's `let`s;
/// - the non-atomic operands of a node that contains one of those bound in its own block:
///   the bindings inside it move before it, so its operands are bound too, in evaluation
///   order, so that none of them is computed after what it preceded. (A node lifted to an
///   outer block is bound before this whole block and moves nothing here.)
pub(crate) fn must_bind(m: &Module, body: ExprId, scopes: &Scopes) -> IdSet<ExprId> {
    let nodes = postorder(m, body, |slot| slot != Slot::FnBody);
    let mut bind = IdSet::new();
    for &p in &nodes {
        if matches!(m.expr(p).kind, ExprKind::Let { .. }) {
            bind.insert(p);
        }
        let mut branch = 0;
        for (c, slot) in children(&m.expr(p).kind) {
            let used_in = match slot {
                Slot::FnBody => continue,
                Slot::Branch => {
                    branch += 1;
                    scopes.branch(p, branch - 1)
                }
                Slot::Callee | Slot::Operand => scopes.of(p),
            };
            if !m.expr(c).kind.is_atom() && used_in != scopes.of(c) {
                bind.insert(c);
            }
        }
    }
    // Children come before parents in `nodes`, so one sweep finds every node holding a
    // binding in its own block.
    let mut holds = IdSet::new();
    for &e in &nodes {
        let kids = children(&m.expr(e).kind);
        let operands = kids.iter().filter(|(_, s)| matches!(s, Slot::Callee | Slot::Operand));
        let here = scopes.of(e);
        if bind.contains(e) || operands.clone().any(|(c, _)| holds.contains(*c) && scopes.of(*c) == here) {
            holds.insert(e);
            if !matches!(m.expr(e).kind, ExprKind::Let { .. }) {
                bind.extend(operands.map(|(c, _)| *c).filter(|&c| !m.expr(c).kind.is_atom()));
            }
        }
    }
    bind
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::util::test_util::{checked, print};

    fn bbnf(text: &str) -> String {
        let (mut m, types) = checked(text);
        to_basic_block_normal_form(&mut m, &types).unwrap();
        print(&mut m)
    }

    #[test]
    fn a_node_shared_by_two_branches_is_bound_before_them() {
        let out = bbnf(
            "def @main(%c: bool, %x: float32) -> float32 {
               %0 = negative(%x);
               if (%c) { add(%0, %x) } else { multiply(%0, %x) }
             }",
        );
        assert!(out.contains("let %v0: float32 = negative(%x);"), "{out}");
        assert!(out.contains("add(%v0, %x)") && out.contains("multiply(%v0, %x)"), "{out}");
    }

    #[test]
    fn nested_expressions_of_one_block_stay_nested() {
        let out = bbnf(
            "def @main(%x: float32) -> float32 {
               let %y = add(negative(%x), %x);
               multiply(%y, negative(%y))
             }",
        );
        assert!(out.contains("let %y = add(negative(%x), %x);"), "{out}");
        assert!(out.contains("multiply(%y, negative(%y))"), "{out}");
        assert!(!out.contains("%v0"), "{out}");
    }
}
