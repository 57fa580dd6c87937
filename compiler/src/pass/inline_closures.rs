//! Inlining of small local functions.
//!
//! `let %cell = fn (%iou, %fc) { ... }; ... %cell(a, b) ...` becomes `... let %iou' = a;
//! let %fc' = b; <a fresh copy of the body> ...`: each call site gets the body, with the
//! parameters bound to the arguments by `let` (so arguments are still evaluated once, in
//! order, before the body, as a call would). The binding of the function goes away.
//!
//! Why: FuseOps groups operators within one dataflow region, and a call is a region
//! boundary. A model written with a helper function per cell (the Tree-LSTM's `%cell`, an
//! RNN's step) otherwise pays a closure call per use and keeps the operators on either side
//! of the call in separate kernels: the gate arithmetic apart from the forget-gate sum that
//! feeds it, each written to memory and read back. TVM reaches the same code by partial
//! evaluation or its `Inline` pass on globals marked `inline`.
//!
//! A function is inlined when it is bound by `let` to a non-generic, non-primitive `fn`
//! literal, every use of it is the callee of a call with as many arguments as it has
//! parameters, it does not call itself, and it is called once or its body has at most
//! [`InlineOptions::max_nodes`] expression nodes. Inlined bodies may call other local
//! functions; rounds repeat until nothing is left to inline (at most [`MAX_ROUNDS`]).

use super::util::builder::{is_primitive, Types};
use super::util::copy::copy_fresh_with;
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use super::util::walk::{children, preorder, Slot};
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, Module, VarId};
use crate::ty::TypeMap;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Rounds of inlining per global function: a local function called from an inlined body is
/// inlined in the next round.
pub const MAX_ROUNDS: usize = 4;

/// Options of [`inline_closures`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineOptions {
    /// The largest body (in expression nodes) inlined at several call sites; a function
    /// called once is inlined whatever its size.
    pub max_nodes: usize,
    /// Whether the pass runs at all (golden files of other passes turn it off to keep their
    /// local functions).
    pub enabled: bool,
}

impl Default for InlineOptions {
    /// Bodies of up to 64 nodes: a recurrent cell's gate arithmetic, not a whole model.
    fn default() -> Self {
        InlineOptions { max_nodes: 64, enabled: true }
    }
}

/// Inlines the small local functions of every global function (see the module docs).
///
/// # Errors
/// An internal error if `types` lacks the type of an unannotated parameter (it must be the
/// [`TypeMap`] of `m` as it is).
pub fn inline_closures(m: &mut Module, types: &TypeMap, options: &InlineOptions) -> Result<(), CompileError> {
    if !options.enabled {
        return Ok(());
    }
    let types = Types::new(types, "inline_closures");
    for i in 0..m.functions.len() {
        if is_primitive(m, &m.functions[i].func) {
            continue;
        }
        for _ in 0..MAX_ROUNDS {
            let body = m.functions[i].func.body;
            let targets = targets(m, body, options.max_nodes);
            if targets.is_empty() {
                break;
            }
            let mut rw = Inline { targets, rewritten: HashMap::default(), types };
            m.functions[i].func.body = rewrite(m, body, &mut rw)?;
        }
    }
    Ok(())
}

/// The local functions under `root` to inline: each variable with its `fn` literal.
fn targets(m: &Module, root: ExprId, max_nodes: usize) -> HashMap<VarId, ExprId> {
    let nodes = preorder(m, root, |_| true);
    let mut literals: HashMap<VarId, ExprId> = HashMap::default();
    for &e in &nodes {
        if let ExprKind::Let { var, value, .. } = &m.expr(e).kind {
            if let ExprKind::Function(f) = &m.expr(*value).kind {
                if f.type_params.is_empty() && !is_primitive(m, f) {
                    literals.insert(*var, *value);
                }
            }
        }
    }
    let mut calls: HashMap<VarId, usize> = HashMap::default();
    let mut rejected: HashSet<VarId> = HashSet::default();
    for &e in &nodes {
        for (c, slot) in children(&m.expr(e).kind) {
            let ExprKind::Var(v) = m.expr(c).kind else { continue };
            let Some(&literal) = literals.get(&v) else { continue };
            let arity_matches = match (&m.expr(e).kind, &m.expr(literal).kind) {
                (ExprKind::Call { args, .. }, ExprKind::Function(f)) => args.len() == f.params.len(),
                _ => false,
            };
            if slot == Slot::Callee && arity_matches {
                *calls.entry(v).or_default() += 1;
            } else {
                rejected.insert(v);
            }
        }
    }
    literals.retain(|v, &mut literal| {
        let Some(&n) = calls.get(v) else { return false };
        let ExprKind::Function(f) = &m.expr(literal).kind else { return false };
        let body = preorder(m, f.body, |_| true);
        let recursive = body.iter().any(|&e| matches!(m.expr(e).kind, ExprKind::Var(u) if u == *v));
        !rejected.contains(v) && !recursive && (n == 1 || body.len() <= max_nodes)
    });
    literals
}

/// Replaces the calls of the targets by their bodies and drops the targets' bindings.
struct Inline<'t> {
    targets: HashMap<VarId, ExprId>,
    /// Each target's literal as rewritten (calls of other targets in it inlined), which is
    /// what call sites copy: a `let`'s value is rewritten before its body, where the calls are.
    rewritten: HashMap<ExprId, ExprId>,
    types: Types<'t>,
}

impl Rewrite for Inline<'_> {
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        match &m.expr(old).kind {
            ExprKind::Let { var, .. } if self.targets.contains_key(var) => {
                // Every use was a call, each replaced by a copy: the binding is dead.
                Ok(kids.get(1).copied().unwrap_or(old))
            }
            ExprKind::Call { callee, .. } => {
                let literal = match m.expr(*callee).kind {
                    ExprKind::Var(v) => self.targets.get(&v).map(|l| self.rewritten.get(l).unwrap_or(l)),
                    _ => None,
                };
                match literal.copied() {
                    Some(literal) => self.body_at(m, literal, old, kids.get(1..).unwrap_or_default()),
                    None => Ok(rebuild(m, old, kids)),
                }
            }
            ExprKind::Function(_) if self.targets.values().any(|&l| l == old) => {
                let new = rebuild(m, old, kids);
                self.rewritten.insert(old, new);
                Ok(new)
            }
            _ => Ok(rebuild(m, old, kids)),
        }
    }
}

impl Inline<'_> {
    /// A fresh copy of `literal`'s body under `let`s binding its parameters to `args`, with
    /// the span of the call `call`. A variable argument replaces its parameter in the copy
    /// instead: an alias `let` would hide the dataflow edge from FuseOps.
    fn body_at(
        &self,
        m: &mut Module,
        literal: ExprId,
        call: ExprId,
        args: &[ExprId],
    ) -> Result<ExprId, CompileError> {
        let ExprKind::Function(f) = &m.expr(literal).kind else { return Ok(call) };
        let (params, body) = (f.params.clone(), f.body);
        let span = m.expr(call).span;
        let mut renamed = HashMap::default();
        let mut bindings = vec![];
        for (&p, &arg) in params.iter().zip(args) {
            if let ExprKind::Var(a) = m.expr(arg).kind {
                renamed.insert(p, a);
                continue;
            }
            // Unannotated parameters take their inferred type, so that the `let` is typed
            // as the call was.
            let decl = m.var(p).clone();
            let ty = match decl.ty {
                Some(t) => t,
                None => self.types.var(m, p)?,
            };
            let fresh = m.add_var(decl.name, Some(ty), decl.span);
            renamed.insert(p, fresh);
            bindings.push((fresh, arg));
        }
        let (mut body, _) = copy_fresh_with(m, body, renamed)?;
        for (var, value) in bindings.into_iter().rev() {
            body = m.add_expr(ExprKind::Let { var, value, body }, span);
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::util::test_util::{checked, print};

    fn inlined(text: &str, options: InlineOptions) -> String {
        let (mut m, types) = checked(text);
        inline_closures(&mut m, &types, &options).unwrap();
        print(&mut m)
    }

    #[test]
    fn a_small_function_is_inlined_at_every_call_with_its_arguments_bound_first() {
        let out = inlined(
            "def @main(%a: float32, %b: float32) -> (float32, float32) {
               let %f = fn (%x: float32, %y) { multiply(add(%x, %y), %x) };
               (%f(%a, negative(%b)), %f(%b, %a))
             }",
            InlineOptions::default(),
        );
        assert!(!out.contains("fn ("), "{out}");
        // A computed argument is bound (with its inferred type) before the body; variables
        // are substituted.
        assert!(out.contains("let %y: float32 = negative(%b);\n    multiply(add(%a, %y), %a)"), "{out}");
        assert!(out.contains("multiply(add(%b, %a), %b)"), "{out}");
    }

    #[test]
    fn recursive_escaping_and_large_functions_stay() {
        let recursive = "def @main(%n: int32) -> int32 {
               let %f = fn (%i: int32) -> int32 { if (less(%i, 1)) { 0 } else { %f(add(%i, -1)) } };
               %f(%n)
             }";
        assert!(inlined(recursive, InlineOptions::default()).contains("fn ("));
        let escaping = "def @main(%a: float32) -> (fn (float32) -> float32, float32) {
               let %f = fn (%x: float32) -> float32 { negative(%x) };
               (%f, %f(%a))
             }";
        assert!(inlined(escaping, InlineOptions::default()).contains("fn ("));
        let twice = "def @main(%a: float32) -> (float32, float32) {
               let %f = fn (%x: float32) -> float32 { negative(negative(%x)) };
               (%f(%a), %f(%a))
             }";
        let small = InlineOptions { max_nodes: 2, ..InlineOptions::default() };
        assert!(inlined(twice, small).contains("fn ("), "too large to copy twice");
        let once = "def @main(%a: float32) -> float32 {
               let %f = fn (%x: float32) -> float32 { negative(negative(%x)) };
               %f(%a)
             }";
        assert!(!inlined(once, small).contains("fn ("), "a single call is inlined at any size");
        let off = InlineOptions { enabled: false, ..InlineOptions::default() };
        assert!(inlined(once, off).contains("fn ("));
    }

    #[test]
    fn a_function_called_from_an_inlined_body_is_inlined_next_round() {
        let out = inlined(
            "def @main(%a: float32) -> float32 {
               let %g = fn (%y: float32) -> float32 { clip(%y, a_min=0f, a_max=1f) };
               let %f = fn (%x: float32) -> float32 { %g(negative(%x)) };
               %f(%f(%a))
             }",
            InlineOptions::default(),
        );
        assert!(!out.contains("fn ("), "{out}");
        assert_eq!(out.matches("clip(").count(), 2, "{out}");
    }
}
