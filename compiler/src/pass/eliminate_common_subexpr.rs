//! Common-subexpression elimination (TVM `EliminateCommonSubexpr`): in
//! `let %a = f(x, y); ... let %b = f(x, y); ...`, where `f` is an operator and the operands
//! are the same atoms with the same attributes, `%b` is bound to `%a` instead, so the
//! operator runs once.
//!
//! Only a binding in scope is reused: the earlier `let` must enclose the later one (inside its
//! body, possibly in a branch or a `fn` body, which then captures it). Operators are pure, so
//! reuse cannot skip an effect. Duplicates nested in one expression become `let`s when
//! `ToANormalForm` runs and are found there; calls whose operands are not atoms are left.
//! `Primitive=1` functions are kernels and are left alone.

use super::util::builder::{as_op_call, is_primitive};
use super::util::rewrite::rebuild;
use super::util::walk::children;
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, LiteralValue, Module, Symbol, VarId};
use crate::ty::TypeMap;
use relay_devices::DType;
use rustc_hash::FxHashMap as HashMap;

/// Reuses equal operator bindings in every global function (see the module docs).
///
/// # Errors
/// None today (the pass signature).
pub fn eliminate_common_subexpr(m: &mut Module, _types: &TypeMap) -> Result<(), CompileError> {
    for i in 0..m.functions.len() {
        let body = m.functions[i].func.body;
        let mut cse = Cse::default();
        m.functions[i].func.body = cse.visit(m, body);
    }
    Ok(())
}

/// An operand that names a value without computing it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Atom {
    Var(VarId),
    Global(Symbol),
    Constructor(Symbol),
    Constant(u32),
    /// A literal: dtype and the bits of its value.
    Literal(DType, u64),
}

/// What makes two operator calls equal: operator, attributes (printed: attribute values
/// hold floats) and operands.
type Key = (String, String, Vec<Atom>);

#[derive(Default)]
struct Cse {
    /// The bindings in scope for each call, innermost last.
    available: HashMap<Key, Vec<VarId>>,
    /// Rewritten nodes (the IR is a DAG).
    done: HashMap<ExprId, ExprId>,
    /// Variables now bound to an earlier one, so calls on either have one key.
    aliases: HashMap<VarId, VarId>,
}

impl Cse {
    /// `e` rewritten with the bindings now in scope.
    fn visit(&mut self, m: &mut Module, e: ExprId) -> ExprId {
        if let Some(&d) = self.done.get(&e) {
            return d;
        }
        let new = crate::stack::grow(|| match &m.expr(e).kind {
            ExprKind::Let { .. } => self.let_chain(m, e),
            ExprKind::Function(f) if is_primitive(m, f) => e,
            kind => {
                let kids: Vec<ExprId> = children(kind).into_iter().map(|(c, _)| c).collect();
                let kids: Vec<ExprId> = kids.into_iter().map(|c| self.visit(m, c)).collect();
                rebuild(m, e, &kids)
            }
        });
        self.done.insert(e, new);
        new
    }

    /// The `let` chain starting at `e`, walked in a loop; its bindings are available in the
    /// rest of the chain and withdrawn after it.
    fn let_chain(&mut self, m: &mut Module, e: ExprId) -> ExprId {
        let mut lets = vec![];
        let mut added = vec![];
        let mut at = e;
        while let ExprKind::Let { var, value, body } = m.expr(at).kind {
            let key = key(m, value, &self.aliases);
            let mut new_value = self.visit(m, value);
            match key.as_ref().and_then(|k| self.available.get(k)).and_then(|vs| vs.last()) {
                Some(&earlier) => {
                    new_value = m.add_expr(ExprKind::Var(earlier), m.expr(value).span);
                    self.aliases.insert(var, earlier);
                }
                None => {
                    if let Some(k) = key {
                        self.available.entry(k.clone()).or_default().push(var);
                        added.push(k);
                    }
                }
            }
            lets.push((at, var, new_value));
            at = body;
        }
        let mut result = self.visit(m, at);
        for k in added {
            if let Some(vs) = self.available.get_mut(&k) {
                vs.pop();
            }
        }
        for (old, var, value) in lets.into_iter().rev() {
            let ExprKind::Let { value: v0, body: b0, .. } = m.expr(old).kind else { continue };
            result = if (v0, b0) == (value, result) {
                old
            } else {
                m.add_expr(ExprKind::Let { var, value, body: result }, m.expr(old).span)
            };
        }
        result
    }
}

/// The key of `e` when it is an operator call on atoms (variables through `aliases`).
fn key(m: &Module, e: ExprId, aliases: &HashMap<VarId, VarId>) -> Option<Key> {
    let (op, args, attrs) = as_op_call(m, e)?;
    let atoms = args
        .iter()
        .map(|&a| match m.expr(a).kind {
            ExprKind::Var(v) => Some(Atom::Var(aliases.get(&v).copied().unwrap_or(v))),
            ExprKind::Global(g) => Some(Atom::Global(g)),
            ExprKind::Constructor(c) => Some(Atom::Constructor(c)),
            ExprKind::Constant(i) => Some(Atom::Constant(i)),
            ExprKind::Literal(lit) => Some(Atom::Literal(
                lit.dtype,
                match lit.value {
                    LiteralValue::Int(i) => i as u64,
                    LiteralValue::Float(f) => f.to_bits(),
                    LiteralValue::Bool(b) => u64::from(b),
                },
            )),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    let attrs: Vec<String> = attrs.0.iter().map(|(k, v)| format!("{}={v:?}", m.name(*k))).collect();
    Some((op.to_string(), attrs.join(","), atoms))
}
