//! TVM's `DynamicToStatic` (`src/relay/transforms/dynamic_to_static.cc`): a call of a `dyn.*`
//! operator whose shape operands (a shape, sizes, a count, scales) are constants becomes a
//! call of its static operator, the values read into its attributes — each operator's static
//! form ([`crate::op::OpDef::to_static`]), which reads them as its run-time kernel does. Its
//! result then has a static type, so it fuses and its consumers type statically.
//!
//! TVM folds each call's operands itself before looking at them; here `FoldConstant` runs
//! first in the pipeline, and after each round of rewrites this pass folds again and looks
//! again (a static result can make a later operand constant: `dyn.zeros(shape)` folds to a
//! constant once it is `zeros`), until nothing changes or [`MAX_ROUNDS`] rounds. A call with
//! an operand that is not constant, or whose values the static operator rejects (it then
//! fails at run time, as before), stays as it is and is sized at run time.

use super::fold_constant;
use super::manager::Revision;
use super::util::op_rewrite::{rewrite_calls, Facet};
use crate::diagnostics::CompileError;
use crate::ir::Module;
use crate::op::OpRegistry;
use crate::ty::{infer_types, TypeMap};

/// The most rounds of rewriting and folding (each round re-infers the module's types twice;
/// a chain of dynamic calls each fed by the last one's static result needs one per link).
pub const MAX_ROUNDS: usize = 8;

/// The rule this pass applies.
const STATIC_FORM: Facet = |def| def.to_static;

/// Rewrites every `dyn.*` call with constant operands into its static operator, folding
/// constants between rounds (see the module docs).
///
/// # Errors
/// A type error of the rewritten module (a static form that breaks typing is a bug of its
/// rule: each checks the static relation first).
pub fn dynamic_to_static(m: &mut Module, types: &TypeMap, ops: &OpRegistry) -> Result<(), CompileError> {
    if rewrite_calls(m, types, ops, STATIC_FORM)? == 0 {
        return Ok(());
    }
    let mut now = infer_types(m, ops)?;
    for _ in 1..MAX_ROUNDS {
        let before = Revision::of(m);
        fold_constant(m, &now, ops)?;
        if Revision::of(m) == before {
            break;
        }
        now = infer_types(m, ops)?;
        if rewrite_calls(m, &now, ops, STATIC_FORM)? == 0 {
            break;
        }
        now = infer_types(m, ops)?;
    }
    annotate_retyped(m, types, &now);
    Ok(())
}

/// Annotates each unannotated variable whose type the rewrites changed (`?` sizes now known)
/// with its type in `now`. Unlike the other passes' rewrites, these change the types of
/// nodes they do not replace (the references to a `let` whose value became static), so the
/// pass manager must infer the whole module again rather than only the new nodes; a changed
/// annotation is what tells it so.
fn annotate_retyped(m: &mut Module, before: &TypeMap, now: &TypeMap) {
    for (v, (&old, &new)) in before.vars.iter().zip(&now.vars).enumerate() {
        if old != new && m.vars[v].ty.is_none() {
            m.vars[v].ty = new;
        }
    }
}
