//! What a function value can run: every global function, every `fn` literal (with the
//! variables it captures) and every constructor that takes fields, numbered once per program.
//! A function value is a VM [`ClosureValue`](relay_runtime::ClosureValue) whose `func` is such a
//! number and whose captured values are those variables' values (TVM's interpreter captures
//! the free variables of a `fn` the same way).

use relay_compiler::ir::{ExprId, ExprKind, Module, Symbol, VarId};
use relay_compiler::pass::free_vars;
use std::collections::HashMap;

/// One thing a function value can run.
#[derive(Debug)]
pub(super) enum Callable {
    /// A global function (`captures` empty) or a `fn` literal.
    Function {
        /// The name call stacks show: `main` for `@main`, `%loop` for a `fn` bound by
        /// `let %loop`, `fn` for an anonymous one.
        name: String,
        /// The parameters, bound to the call's arguments.
        params: Vec<VarId>,
        /// The body.
        body: ExprId,
        /// The variables the literal mentions from enclosing scopes, in the order of the
        /// closure's captured values.
        captures: Vec<VarId>,
        /// The variable of `let %f = fn ...` when the body calls itself through it: bound to
        /// the closure itself on entry, so a closure never holds itself.
        rec_var: Option<VarId>,
    },
    /// A constructor with fields, called as a function.
    Constructor {
        /// Its name.
        name: String,
        /// Its tag.
        tag: u32,
        /// Its number of fields.
        arity: usize,
    },
}

/// Every [`Callable`] of a module: globals first (in definition order), then `fn` literals,
/// then constructors.
#[derive(Debug, Default)]
pub(super) struct Callables {
    /// The callables; a closure's `func` indexes this list.
    pub list: Vec<Callable>,
    /// The number of globals at the front of `list`.
    pub globals: usize,
    /// The index of each global function.
    pub global: HashMap<Symbol, u32>,
    /// The index of each `fn` literal, by its expression.
    pub literal: HashMap<ExprId, u32>,
    /// The index of each constructor with fields.
    pub constructor: HashMap<Symbol, u32>,
}

impl Callables {
    /// Numbers the callables of `m`.
    pub fn new(m: &Module) -> Callables {
        let mut c = Callables::default();
        for g in &m.functions {
            c.global.insert(g.name, c.list.len() as u32);
            c.list.push(Callable::Function {
                name: m.name(g.name).to_string(),
                params: g.func.params.clone(),
                body: g.func.body,
                captures: vec![],
                rec_var: None,
            });
        }
        c.globals = c.list.len();
        // `let %f = fn ...`: the literal is named after `%f`, and calls itself through it.
        let mut let_bound: HashMap<ExprId, VarId> = HashMap::new();
        for e in &m.exprs {
            if let ExprKind::Let { var, value, .. } = e.kind {
                if matches!(m.expr(value).kind, ExprKind::Function(_)) {
                    let_bound.insert(value, var);
                }
            }
        }
        for (i, e) in m.exprs.iter().enumerate() {
            let ExprKind::Function(f) = &e.kind else { continue };
            let id = ExprId(i as u32);
            let mut captures = free_vars(m, id);
            let bound_by = let_bound.get(&id).copied();
            let rec_var = bound_by.filter(|v| captures.contains(v));
            captures.retain(|v| Some(*v) != rec_var);
            let name = bound_by.map_or_else(|| "fn".to_string(), |v| format!("%{}", m.name(m.var(v).name)));
            c.literal.insert(id, c.list.len() as u32);
            c.list.push(Callable::Function {
                name,
                params: f.params.clone(),
                body: f.body,
                captures,
                rec_var,
            });
        }
        for con in m.constructors.iter().filter(|con| !con.fields.is_empty()) {
            c.constructor.insert(con.name, c.list.len() as u32);
            c.list.push(Callable::Constructor {
                name: m.name(con.name).to_string(),
                tag: con.tag,
                arity: con.fields.len(),
            });
        }
        c
    }

    /// The name call stacks and printed function values show for callable `i`.
    pub fn name(&self, i: u32) -> &str {
        match self.list.get(i as usize) {
            Some(Callable::Function { name, .. } | Callable::Constructor { name, .. }) => name,
            None => "?",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_capture_free_variables_and_name_themselves() {
        let checked = crate::check(
            "t.relay",
            "def @f(%n: int32) -> int32 {
               let %k = 2;
               let %loop = fn (%i: int32) -> int32 { if (%i == 0) { %k } else { %loop(%i - 1) } };
               %loop(%n)
             }",
        )
        .unwrap();
        let m = &checked.module;
        let c = Callables::new(m);
        let Some(&f) = m.function_by_name("f").map(|g| &g.name) else { panic!("no @f") };
        assert_eq!(c.name(c.global[&f]), "f");
        let (&lit, &i) = c.literal.iter().find(|(_, &i)| c.name(i) == "%loop").unwrap();
        let Callable::Function { captures, rec_var, .. } = &c.list[i as usize] else { panic!() };
        let names: Vec<&str> = captures.iter().map(|&v| m.name(m.var(v).name)).collect();
        assert_eq!(names, ["k"]);
        assert!(rec_var.is_some());
        assert!(matches!(m.expr(lit).kind, ExprKind::Function(_)));
        let cons = m.symbols.get("Cons").unwrap();
        assert_eq!(c.name(c.constructor[&cons]), "Cons");
    }
}
