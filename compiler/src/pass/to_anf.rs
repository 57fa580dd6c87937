//! Conversion to A-normal form (TVM `ToANormalForm`).
//!
//! Bindings follow evaluation order (callee, then arguments left to right; a condition before
//! its branches). Fresh variables are annotated with the type of what they bind; a `let` of the
//! program keeps its variable. A node shared by several uses is bound once, in the innermost
//! scope holding all of them (see [`Scopes`]), and its variable is used everywhere. `let`
//! chains are walked in a loop; other nesting recurses on growable stack segments.

use super::closure_literal;
use super::to_basic_block_normal_form::must_bind;
use super::util::builder::{is_primitive, let_chain, var_ref, Types};
use super::util::rewrite::rebuild;
use super::util::scope::{ScopeId, Scopes, ROOT};
use super::util::walk::{children, Slot};
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, IdMap, IdSet, Module, VarId};
use crate::ty::TypeMap;

/// Converts the body of every global function except `Primitive=1` ones to A-normal form.
///
/// Afterwards every function body is a chain `let %v = <value>; ...; <atom>`, where an atom is
/// a variable, global, constructor, operator, literal or constant, and a value is one of: a
/// call whose callee and arguments are atoms; a tuple of atoms; a projection, `ref`,
/// `ref_read` or `ref_write` of atoms; an `if` on an atom with branches in ANF; a `match` on
/// an atom with arm bodies in ANF; a `fn` literal whose body is in ANF; a `Primitive=1` `fn`
/// literal (a kernel: its body is not touched); or an atom. The body of a `Closure=1` global
/// stays its `fn` literal, with the literal's body in ANF. Fresh variables are named `v<N>`
/// and annotated.
///
/// # Errors
/// An internal error if `types` lacks a type (it must be the [`TypeMap`] of `m` as it is).
pub fn to_anf(m: &mut Module, types: &TypeMap) -> Result<(), CompileError> {
    convert_bodies(m, Types::new(types, "to_anf"), false)
}

/// The body of every global function except `Primitive=1` ones in A-normal form, or with
/// `basic_blocks` in basic-block normal form (only what
/// [`must_bind`](super::to_basic_block_normal_form::must_bind) names is bound).
pub(crate) fn convert_bodies(m: &mut Module, types: Types, basic_blocks: bool) -> Result<(), CompileError> {
    for i in 0..m.functions.len() {
        let func = m.functions[i].func.clone();
        if is_primitive(m, &func) {
            continue;
        }
        let mut next = 0;
        m.functions[i].func.body = match closure_literal(m, &func) {
            Some((literal, f)) => {
                let body = Anf::convert(m, types, f.body, &mut next, basic_blocks)?;
                rebuild(m, literal, &[body])
            }
            None => Anf::convert(m, types, func.body, &mut next, basic_blocks)?,
        };
    }
    Ok(())
}

/// The conversion of one function body.
struct Anf<'t> {
    types: Types<'t>,
    scopes: Scopes,
    /// The bindings made so far in each scope that is being built.
    open: Vec<Vec<(VarId, ExprId)>>,
    /// The atom standing for each node already bound.
    atoms: IdMap<ExprId, ExprId>,
    /// Suffix of the next fresh variable's name (shared with nested bodies).
    next: usize,
    /// In basic-block normal form, the nodes to bind (the rest stay nested where they are).
    only: Option<IdSet<ExprId>>,
}

impl<'t> Anf<'t> {
    /// The body `body` in ANF; `next` numbers fresh variables.
    fn convert(
        m: &mut Module,
        types: Types<'t>,
        body: ExprId,
        next: &mut usize,
        basic_blocks: bool,
    ) -> Result<ExprId, CompileError> {
        let scopes = Scopes::analyze(m, body);
        let only = basic_blocks.then(|| must_bind(m, body, &scopes));
        let mut anf =
            Anf { types, open: vec![vec![]; scopes.len()], scopes, atoms: IdMap::new(), next: *next, only };
        let result = anf.block(m, body, ROOT);
        *next = anf.next;
        result
    }

    /// The statement sequence of scope `scope`, whose result is `e`.
    fn block(&mut self, m: &mut Module, e: ExprId, scope: ScopeId) -> Result<ExprId, CompileError> {
        let result = self.atom(m, e)?;
        let bindings = std::mem::take(&mut self.open[scope]);
        Ok(let_chain(m, bindings, result))
    }

    /// The atom for `e`, binding `e` (and what it needs) first if it is not atomic.
    fn atom(&mut self, m: &mut Module, e: ExprId) -> Result<ExprId, CompileError> {
        if m.expr(e).kind.is_atom() {
            return Ok(e);
        }
        if let Some(&a) = self.atoms.get(e) {
            return Ok(a);
        }
        crate::stack::grow(|| {
            if matches!(m.expr(e).kind, ExprKind::Let { .. }) {
                return self.let_chain(m, e);
            }
            if self.only.as_ref().is_some_and(|only| !only.contains(e)) {
                let nested = self.value(m, e)?;
                self.atoms.insert(e, nested);
                return Ok(nested);
            }
            let scope = self.scope(m, e)?;
            let value = self.value(m, e)?;
            let (ty, span) = (self.types.expr(m, e)?, m.expr(e).span);
            let name = m.symbols.intern(&format!("v{}", self.next));
            self.next += 1;
            let v = m.add_var(name, Some(ty), span);
            self.open[scope].push((v, value));
            let a = var_ref(m, v, span);
            self.atoms.insert(e, a);
            Ok(a)
        })
    }

    /// `e` rebuilt as a value: atoms for operands, ANF blocks for branches and `fn` bodies.
    fn value(&mut self, m: &mut Module, e: ExprId) -> Result<ExprId, CompileError> {
        if let ExprKind::Function(f) = &m.expr(e).kind {
            if is_primitive(m, f) {
                return Ok(e);
            }
            let body = f.body;
            let body = Anf::convert(m, self.types, body, &mut self.next, self.only.is_some())?;
            return Ok(rebuild(m, e, &[body]));
        }
        let mut kids = vec![];
        let mut branch = 0;
        for (c, slot) in children(&m.expr(e).kind) {
            kids.push(match slot {
                Slot::Branch => {
                    let scope = self.scopes.branch(e, branch).ok_or_else(|| self.lost(m, e))?;
                    branch += 1;
                    self.block(m, c, scope)?
                }
                Slot::Callee | Slot::Operand | Slot::FnBody => self.atom(m, c)?,
            });
        }
        Ok(rebuild(m, e, &kids))
    }

    /// Binds the `let` chain starting at `first` into the current sequence, in a loop, and
    /// returns the atom of its final body.
    fn let_chain(&mut self, m: &mut Module, first: ExprId) -> Result<ExprId, CompileError> {
        let mut chain = vec![];
        let mut cur = first;
        while let ExprKind::Let { var, value, body } = m.expr(cur).kind {
            if cur != first && self.atoms.contains_key(cur) {
                break;
            }
            let scope = self.scope(m, cur)?;
            let rhs = self.let_value(m, var, value, scope)?;
            self.open[scope].push((var, rhs));
            chain.push(cur);
            cur = body;
        }
        let result = self.atom(m, cur)?;
        for l in chain {
            self.atoms.insert(l, result);
        }
        Ok(result)
    }

    /// What the program's `let %var = value` binds in ANF: the value itself when this `let`
    /// is where it belongs (no extra variable), else the atom it is bound to elsewhere.
    fn let_value(
        &mut self,
        m: &mut Module,
        var: VarId,
        value: ExprId,
        scope: ScopeId,
    ) -> Result<ExprId, CompileError> {
        let kind = &m.expr(value).kind;
        let here = !kind.is_atom()
            && !matches!(kind, ExprKind::Let { .. })
            && !self.atoms.contains_key(value)
            && self.scopes.of(value) == Some(scope);
        if !here {
            return self.atom(m, value);
        }
        let rhs = crate::stack::grow(|| self.value(m, value))?;
        let a = var_ref(m, var, m.expr(value).span);
        self.atoms.insert(value, a);
        Ok(rhs)
    }

    fn scope(&self, m: &Module, e: ExprId) -> Result<ScopeId, CompileError> {
        self.scopes.of(e).ok_or_else(|| self.lost(m, e))
    }

    fn lost(&self, m: &Module, e: ExprId) -> CompileError {
        self.types.error(m.expr(e).span, "a node is missing from the scope analysis")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::util::test_util::{checked, print};

    fn anf(text: &str) -> String {
        let (mut m, types) = checked(text);
        to_anf(&mut m, &types).unwrap();
        print(&mut m)
    }

    #[test]
    fn operands_are_bound_in_evaluation_order() {
        let out = anf("def @main(%x: float32) -> float32 { add(multiply(%x, %x), negative(%x)) }");
        assert!(
            out.contains(
                "let %v0: float32 = multiply(%x, %x);\n  let %v1: float32 = negative(%x);\n  \
                 let %v2: float32 = add(%v0, %v1);\n  %v2"
            ),
            "{out}"
        );
    }

    #[test]
    fn program_lets_keep_their_variables() {
        let out =
            anf("def @main(%x: float32) -> float32 { let %y = add(%x, %x); let %z = %y; negative(%z) }");
        assert!(
            out.contains("let %y = add(%x, %x);\n  let %z = %y;\n  let %v0: float32 = negative(%z);\n  %v0"),
            "{out}"
        );
    }

    #[test]
    fn shared_nodes_are_bound_once_in_the_common_scope() {
        let out = anf("def @main(%c: bool, %x: float32) -> float32 {
               %0 = add(%x, %x);
               %1 = multiply(%x, %x);
               if (%c) { negative(%0) } else { if (%c) { add(%1, %1) } else { %0 } }
             }");
        let shared = out.find("let %v0: float32 = add(%x, %x);").expect(&out);
        let branch = out.find("if (%c)").expect(&out);
        assert!(shared < branch, "{out}");
        assert_eq!(out.matches("add(%x, %x)").count(), 1, "{out}");
        assert_eq!(out.matches("multiply(%x, %x)").count(), 1, "{out}");
        // `%1` is only used in the inner `else` branch's `then` branch: bound there.
        assert!(out.contains("if (%c) {\n      let %v2: float32 = multiply(%x, %x);\n      let %v3: float32 = add(%v2, %v2);\n      %v3"), "{out}");
    }

    #[test]
    fn matches_and_nested_functions() {
        let out = anf("type L { C(float32, L), N }
             def @main(%l: L) -> float32 {
               let %f = fn (%y: float32) -> float32 { negative(negative(%y)) };
               match (%l) { C(%h, _) => %f(add(%h, 1f)), N => 0f }
             }");
        assert!(
            out.contains("let %f = fn (%y: float32) -> float32 {\n    let %v0: float32 = negative(%y);"),
            "{out}"
        );
        assert!(out.contains("C(%h, _) => {\n      let %v2: float32 = add(%h, 1f);\n      let %v3: float32 = %f(%v2);\n      %v3"), "{out}");
        assert!(out.contains("let %v4: float32 = match (%l) {"), "{out}");
    }

    #[test]
    fn long_let_chains_on_a_small_stack() {
        let mut text = String::from("def @main(%x: float32) -> float32 {\n");
        for i in 0..100_000 {
            text.push_str(&format!("let %x{i} = add(%x, 1f);\n"));
        }
        text.push_str("negative(%x99999)\n}\n");
        let (mut m, types) = checked(&text);
        let handle = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                to_anf(&mut m, &types).unwrap();
                m.exprs.len()
            })
            .unwrap();
        assert!(handle.join().unwrap() > 300_000);
    }
}
