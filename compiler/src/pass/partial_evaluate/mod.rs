//! Partial evaluation (paper §4; TVM `PartialEvaluate`): an online partial evaluator that
//! runs each global function on what is known at compile time and leaves residual code for
//! the rest.
//!
//! Every value is a [`PValue`](value::PValue): a residual atom naming it at run time, and
//! possibly its static part ([`value::Static`]): a tensor constant, a tuple, a constructor
//! value, a closure (its `fn` literal and captured values), a global function, or a
//! reference cell whose contents a [`value::Store`] tracks. The rules:
//! - an operator call on known tensors is computed now by FoldConstant's evaluator (the
//!   reference kernels, with its element and work caps); `if` on a known condition and
//!   `match` on a known constructor become the branch taken, pattern variables bound to the
//!   fields' values; a projection of a known tuple is the field;
//! - a call of a known closure or global is unfolded: its body is evaluated in the caller's
//!   block with the parameters bound to the arguments' values. `@map(%f, [a, b, c])` with a
//!   known spine and a known `%f` becomes straight-line code, and a loop whose condition is
//!   known at each step becomes its body repeated;
//! - everything else is residual code, bound by `let` ([`residual`]), in evaluation order:
//!   nothing is computed twice and no effect is dropped, duplicated or reordered. `ref`,
//!   `:=` and calls of unknown functions always stay; a read of a cell whose contents are
//!   known is that value; what is known of cells is forgotten after calls of unknown
//!   functions, writes through unknown references and dynamic branches;
//! - a `fn` literal is also residualised where it stands (its body evaluated with dynamic
//!   parameters) for uses that stay calls or let it escape; DeadCodeElimination, run at the
//!   end of the pass, removes the residual code nobody uses.
//!
//! Termination: each global function may unfold at most [`MAX_UNFOLDS`] calls, nested at
//! most [`MAX_UNFOLD_DEPTH`] deep, and a recursive call (of a function already being
//! unfolded) is unfolded only when no dynamic branch has been entered since that outer
//! activation: recursion on a dynamic argument leaves a call of the (unspecialised)
//! function after one level, and a dynamic `if` never unrolls. Past a bound the call stays
//! a residual call. Without unfolding, evaluation is one walk of the body (and of each
//! `fn` literal once per evaluation of it), so the pass ends, and its output is at most
//! about `MAX_UNFOLDS` function bodies larger than its input.

mod eval;
mod residual;
mod value;

use super::dead_code;
use super::util::builder::is_primitive;
use crate::diagnostics::CompileError;
use crate::ir::Module;
use crate::op::OpRegistry;
use crate::ty::TypeMap;
use eval::Evaluator;
use rustc_hash::FxHashMap as HashMap;

/// Calls unfolded per global function at most: bounds the output's growth (and the work)
/// when many calls unfold side by side.
pub const MAX_UNFOLDS: usize = 1024;

/// Unfolded calls nested inside one another at most: a loop unrolled by recursion nests one
/// call per step, so loops of up to about this many steps unroll in full; past it, the
/// rest of the loop stays a call.
pub const MAX_UNFOLD_DEPTH: usize = 256;

/// Partially evaluates every global function except `Primitive=1` ones (see the module
/// docs), then removes the residual code nobody uses ([`dead_code`]).
///
/// # Errors
/// An internal error if `types` lacks a type or a variable is unbound (it must be the
/// [`TypeMap`] of `m` as it is).
pub fn partial_evaluate(m: &mut Module, types: &TypeMap, ops: &OpRegistry) -> Result<(), CompileError> {
    let globals: HashMap<_, _> =
        m.functions.iter().map(|f| (f.name, (f.func.params.clone(), f.func.body))).collect();
    for i in 0..m.functions.len() {
        if is_primitive(m, &m.functions[i].func) {
            continue;
        }
        let name = m.functions[i].name;
        m.functions[i].func.body = Evaluator::new(types, ops, &globals).global(m, name)?;
    }
    dead_code(m, types, &[])
}

#[cfg(test)]
mod tests;
