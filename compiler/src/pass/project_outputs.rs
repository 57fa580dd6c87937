//! Fields of tuple-returning operators as single-output calls.
//!
//! `let %g = split(%x, indices_or_sections=3, axis=1); ... %g.0 ... %g.2 ...` becomes
//! `... strided_slice(%x, begin=[0], end=[k], axes=[1]) ... strided_slice(%x, ...) ...` when
//! every use of `%g` is a projection and the operator registers a
//! [`ProjectFn`](crate::op::ProjectFn). Each field is then an ordinary injective call that
//! FuseOps fuses into its consumers, where the tuple would have been an opaque kernel writing
//! every field to memory (TVM gets the same effect by fusing `split` with its
//! `TupleGetItem`s). A field that is never read is never computed. A tuple that is also used
//! whole (passed to a function) is built from the fields' calls, each its own fused kernel,
//! so no reference kernel is left.
//!
//! Runs before [`lower_primitives`](super::lower_primitives), on operator calls as written.

use super::util::builder::{fresh_var, var_ref, Types};
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use super::util::walk::{children, preorder};
use crate::diagnostics::CompileError;
use crate::ir::{Attrs, Dim, ExprId, ExprKind, Module, TypeKind, VarId};
use crate::op::{AttrReader, OpRegistry};
use crate::ty::TypeMap;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Replaces projections of let-bound calls of projectable operators by the single-output
/// calls computing them, and drops the bindings, or binds the tuple of those calls where the
/// tuple is used whole (see the module docs). Operands that are not
/// variables or constants are bound to variables first; calls on operands with `?`
/// dimensions are kept.
///
/// # Errors
/// An internal error if `types` lacks a type (it must be the [`TypeMap`] of `m` as it is).
pub fn project_outputs(m: &mut Module, types: &TypeMap, ops: &OpRegistry) -> Result<(), CompileError> {
    let types = Types::new(types, "project_outputs");
    for i in 0..m.functions.len() {
        let body = m.functions[i].func.body;
        let mut bound = projectable_bindings(m, &types, ops, body)?;
        if bound.is_empty() {
            continue;
        }
        // In binding order, so that fresh variables are numbered the same on every run.
        let mut vars: Vec<VarId> = bound.keys().copied().collect();
        vars.sort_by_key(|v| v.index());
        for v in vars {
            if let Some(b) = bound.get_mut(&v) {
                bind_operands(m, &types, b)?;
            }
        }
        let mut p = Project { ops, bound, declined: HashSet::default() };
        m.functions[i].func.body = rewrite(m, body, &mut p)?;
    }
    Ok(())
}

/// A binding `let %v = op(args, attrs)` of a projectable operator.
struct Bound {
    op: ExprId,
    /// The arguments as the projected calls take them: atoms.
    args: Vec<ExprId>,
    attrs: Attrs,
    shapes: Vec<Vec<i64>>,
    /// Arguments that were not atoms: their position and the variable now bound to them
    /// (every projected call reads it, so it is computed once).
    binds: Vec<(usize, VarId)>,
    /// How many fields the result has.
    fields: usize,
    /// Whether the tuple is also used whole (passed on, returned): it is then built from the
    /// projected calls.
    whole: bool,
}

/// Binds the arguments of `b` that are not atoms to fresh variables.
fn bind_operands(m: &mut Module, types: &Types, b: &mut Bound) -> Result<(), CompileError> {
    for i in 0..b.args.len() {
        let a = b.args[i];
        if !matches!(m.expr(a).kind, ExprKind::Var(_) | ExprKind::Constant(_)) {
            let span = m.expr(a).span;
            let v = fresh_var(m, "operand", types.expr(m, a)?, span);
            b.args[i] = var_ref(m, v, span);
            b.binds.push((i, v));
        }
    }
    Ok(())
}

/// The bindings under `root` that can be projected, by variable.
fn projectable_bindings(
    m: &Module,
    types: &Types,
    ops: &OpRegistry,
    root: ExprId,
) -> Result<HashMap<VarId, Bound>, CompileError> {
    let mut candidates = HashMap::default();
    let mut other_uses: HashSet<VarId> = HashSet::default();
    for e in preorder(m, root, |_| true) {
        let kind = &m.expr(e).kind;
        if let ExprKind::Let { var, value, .. } = kind {
            if let Some(b) = candidate(m, types, ops, *value)? {
                candidates.insert(*var, b);
            }
        }
        // A projection reads one field; any other use needs the whole tuple.
        if !matches!(kind, ExprKind::Proj { .. }) {
            for (c, _) in children(kind) {
                if let ExprKind::Var(v) = m.expr(c).kind {
                    other_uses.insert(v);
                }
            }
        }
    }
    for (v, b) in candidates.iter_mut() {
        b.whole = other_uses.contains(v);
    }
    Ok(candidates)
}

/// `value` as a [`Bound`], if it is a call of a projectable operator on atoms with static
/// shapes.
fn candidate(
    m: &Module,
    types: &Types,
    ops: &OpRegistry,
    value: ExprId,
) -> Result<Option<Bound>, CompileError> {
    let ExprKind::Call { callee, args, attrs } = &m.expr(value).kind else { return Ok(None) };
    let ExprKind::Op(name) = m.expr(*callee).kind else { return Ok(None) };
    let projectable = ops.lookup(m.name(name)).is_some_and(|id| ops.get(id).project.is_some());
    if !projectable {
        return Ok(None);
    }
    let mut shapes = Vec::with_capacity(args.len());
    for &a in args {
        let TypeKind::Tensor { shape, .. } = m.types.kind(types.expr(m, a)?) else { return Ok(None) };
        let known: Option<Vec<i64>> =
            shape.iter().map(|d| if let Dim::Known(d) = d { Some(*d) } else { None }).collect();
        let Some(known) = known else { return Ok(None) };
        shapes.push(known);
    }
    let TypeKind::Tuple(fields) = m.types.kind(types.expr(m, value)?) else { return Ok(None) };
    let fields = fields.len();
    Ok(Some(Bound {
        op: *callee,
        args: args.clone(),
        attrs: attrs.clone(),
        shapes,
        binds: vec![],
        fields,
        whole: false,
    }))
}

struct Project<'a> {
    ops: &'a OpRegistry,
    bound: HashMap<VarId, Bound>,
    /// Bindings with a projection the operator declined to compute on its own.
    declined: HashSet<VarId>,
}

impl Project<'_> {
    /// The call computing field `index` of `b`, or `None` if the operator declines.
    fn field(&self, m: &mut Module, b: &Bound, index: u32, old: ExprId) -> Option<ExprId> {
        let ExprKind::Op(name) = m.expr(b.op).kind else { return None };
        let project = self.ops.get(self.ops.lookup(m.name(name))?).project?;
        let call = project(&AttrReader::new(&m.symbols, &b.attrs), &b.shapes, index as usize).ok()?;
        let span = m.expr(old).span;
        let op_name = m.symbols.intern(call.op);
        let callee = m.add_expr(ExprKind::Op(op_name), span);
        let attrs = Attrs(call.attrs.into_iter().map(|(k, v)| (m.symbols.intern(k), v)).collect());
        Some(m.add_expr(ExprKind::Call { callee, args: b.args.clone(), attrs }, span))
    }
}

impl Rewrite for Project<'_> {
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        match m.expr(old).kind {
            ExprKind::Proj { tuple, index } => {
                if let ExprKind::Var(v) = m.expr(tuple).kind {
                    if let Some(b) = self.bound.get(&v) {
                        match self.field(m, b, index, old) {
                            Some(field) => return Ok(field),
                            None => {
                                self.declined.insert(v);
                            }
                        }
                    }
                }
                Ok(rebuild(m, old, kids))
            }
            ExprKind::Let { var, .. } if self.bound.contains_key(&var) => self.binding(m, var, old, kids),
            _ => Ok(rebuild(m, old, kids)),
        }
    }
}

impl Project<'_> {
    /// The rewritten `let %var = op(...); body` (children `kids`): the operands that were not
    /// atoms bound first, then the body, without the binding itself once every projection of
    /// it is replaced (if the operator declined one, the binding stays, on the bound operands).
    fn binding(
        &self,
        m: &mut Module,
        var: VarId,
        old: ExprId,
        kids: &[ExprId],
    ) -> Result<ExprId, CompileError> {
        let (Some(b), [value, body]) = (self.bound.get(&var), kids) else { return Ok(rebuild(m, old, kids)) };
        let ExprKind::Call { callee, args, attrs } = m.expr(*value).kind.clone() else {
            return Ok(rebuild(m, old, kids));
        };
        let span = m.expr(old).span;
        let mut inner = *body;
        let tuple = if b.whole { self.tuple_of_fields(m, b, old) } else { None };
        if let Some(tuple) = tuple {
            inner = m.add_expr(ExprKind::Let { var, value: tuple, body: inner }, span);
        } else if b.whole || self.declined.contains(&var) {
            // The operator declined a field that is read: the call stays, on the bound operands.
            let call = m.add_expr(ExprKind::Call { callee, args: b.args.clone(), attrs }, span);
            inner = m.add_expr(ExprKind::Let { var, value: call, body: inner }, span);
        }
        for &(i, v) in b.binds.iter().rev() {
            let Some(&operand) = args.get(i) else { continue };
            inner = m.add_expr(ExprKind::Let { var: v, value: operand, body: inner }, span);
        }
        Ok(inner)
    }

    /// The tuple of every field of `b`, each computed by its projected call, or `None` if the
    /// operator declines one.
    fn tuple_of_fields(&self, m: &mut Module, b: &Bound, old: ExprId) -> Option<ExprId> {
        let fields = (0..b.fields as u32).map(|i| self.field(m, b, i, old)).collect::<Option<Vec<_>>>()?;
        Some(m.add_expr(ExprKind::Tuple(fields), m.expr(old).span))
    }
}
