//! Shape specialisation of local functions.
//!
//! A local function whose parameters are annotated with `?` dimensions so that one body
//! serves several callers (`let %linear = fn (%w: Tensor[(?, 128), float32]) {...}` called
//! with a `(128, 128)` and a `(59, 128)` weight) types every operator in its body with `?`
//! dimensions, and such operators run their reference kernels: FuseOps only fuses statically
//! shaped calls. This pass gives each distinct list of static argument types at its call
//! sites its own copy of the function, with the parameters annotated by those types and the
//! return type left to inference, so the copies are statically shaped and fuse. It is TVM's
//! shape specialisation at compile time, where the shapes are known at the call sites.
//!
//! Only functions that are bound by `let` and used solely as the callee of calls are copied;
//! recursive ones, generic ones and calls whose argument types are themselves dynamic keep
//! the original function.

use super::util::builder::{is_primitive, Types};
use super::util::copy::copy_fresh;
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use super::util::walk::{children, preorder, Slot};
use crate::diagnostics::CompileError;
use crate::ir::{Dim, ExprId, ExprKind, Function, Module, TypeId, TypeKind, VarId};
use crate::ty::TypeMap;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// At most this many copies of one function are made (distinct argument types beyond it keep
/// calling the original).
pub const MAX_SPECIALIZATIONS: usize = 8;

/// Specialises the local functions of every global function (see the module docs).
///
/// # Errors
/// An internal error if `types` lacks a type (it must be the [`TypeMap`] of `m` as it is).
pub fn specialize_closures(m: &mut Module, types: &TypeMap) -> Result<(), CompileError> {
    let types = Types::new(types, "specialize_closures");
    for i in 0..m.functions.len() {
        if is_primitive(m, &m.functions[i].func) {
            continue;
        }
        let body = m.functions[i].func.body;
        let plans = plan(m, &types, body)?;
        if plans.is_empty() {
            continue;
        }
        let mut copies: HashMap<VarId, Vec<(VarId, ExprId)>> = HashMap::default();
        let mut redirect: HashMap<ExprId, VarId> = HashMap::default();
        for (f, p) in plans {
            for (arg_types, sites) in p.groups {
                let (var, literal) = specialized_copy(m, f, p.literal, &arg_types)?;
                copies.entry(f).or_default().push((var, literal));
                redirect.extend(sites.into_iter().map(|s| (s, var)));
            }
        }
        let mut rw = Redirect { copies, redirect };
        m.functions[i].func.body = rewrite(m, body, &mut rw)?;
    }
    Ok(())
}

/// What to do with one local function: its `fn` literal and its call sites grouped by their
/// argument types.
struct Plan {
    literal: ExprId,
    groups: Vec<(Vec<TypeId>, Vec<ExprId>)>,
}

/// The local functions under `root` worth specialising.
fn plan(m: &Module, types: &Types, root: ExprId) -> Result<Vec<(VarId, Plan)>, CompileError> {
    let nodes = preorder(m, root, |_| true);
    let mut candidates: HashMap<VarId, ExprId> = HashMap::default();
    for &e in &nodes {
        if let ExprKind::Let { var, value, .. } = &m.expr(e).kind {
            if let ExprKind::Function(f) = &m.expr(*value).kind {
                if f.type_params.is_empty() && !is_primitive(m, f) && has_dynamic_params(m, f) {
                    candidates.insert(*var, *value);
                }
            }
        }
    }
    let mut sites: HashMap<VarId, Vec<ExprId>> = HashMap::default();
    let mut rejected: HashSet<VarId> = HashSet::default();
    for &e in &nodes {
        for (c, slot) in children(&m.expr(e).kind) {
            if let ExprKind::Var(v) = m.expr(c).kind {
                if candidates.contains_key(&v) {
                    match slot {
                        Slot::Callee => sites.entry(v).or_default().push(e),
                        _ => {
                            rejected.insert(v);
                        }
                    }
                }
            }
        }
    }
    let mut plans = vec![];
    // In binding order, so that the copies (and the globals lambda lifting makes of them) are
    // numbered the same way on every run.
    let mut candidates: Vec<(VarId, ExprId)> = candidates.into_iter().collect();
    candidates.sort_by_key(|(v, _)| v.index());
    for (f, literal) in candidates {
        let Some(calls) = sites.remove(&f) else { continue };
        let ExprKind::Function(func) = &m.expr(literal).kind else { continue };
        let inner: HashSet<ExprId> = preorder(m, func.body, |_| true).into_iter().collect();
        if rejected.contains(&f) || calls.iter().any(|c| inner.contains(c)) {
            continue;
        }
        let annotated: Vec<Option<TypeId>> = func.params.iter().map(|&p| m.var(p).ty).collect();
        let mut groups: Vec<(Vec<TypeId>, Vec<ExprId>)> = vec![];
        for call in calls {
            let ExprKind::Call { args, .. } = &m.expr(call).kind else { continue };
            let arg_types = args.iter().map(|&a| types.expr(m, a)).collect::<Result<Vec<_>, _>>()?;
            let useful = arg_types.len() == annotated.len()
                && arg_types.iter().all(|&t| is_static(m, t))
                && arg_types.iter().zip(&annotated).any(|(&t, &a)| Some(t) != a);
            if !useful {
                continue;
            }
            match groups.iter().position(|(ts, _)| *ts == arg_types) {
                Some(g) => groups[g].1.push(call),
                None if groups.len() < MAX_SPECIALIZATIONS => groups.push((arg_types, vec![call])),
                None => {}
            }
        }
        if !groups.is_empty() {
            plans.push((f, Plan { literal, groups }));
        }
    }
    Ok(plans)
}

/// Whether a parameter or the result of `f` is annotated with a `?` dimension.
fn has_dynamic_params(m: &Module, f: &Function) -> bool {
    f.params.iter().map(|&p| m.var(p).ty).chain([f.ret_type]).flatten().any(|t| !is_static(m, t))
}

/// Whether `ty` is made of tensor types without `?` dimensions, tuples and ADTs of them.
fn is_static(m: &Module, ty: TypeId) -> bool {
    let mut stack = vec![ty];
    while let Some(t) = stack.pop() {
        match m.types.kind(t) {
            TypeKind::Tensor { shape, .. } => {
                if shape.iter().any(|d| matches!(d, Dim::Any)) {
                    return false;
                }
            }
            TypeKind::Tuple(ts) => stack.extend(ts),
            TypeKind::Adt { args, .. } => stack.extend(args),
            _ => return false,
        }
    }
    true
}

/// A copy of local function `f` (the literal `literal`) with parameters annotated by
/// `arg_types` and no return annotation, and a fresh variable to bind it to.
fn specialized_copy(
    m: &mut Module,
    f: VarId,
    literal: ExprId,
    arg_types: &[TypeId],
) -> Result<(VarId, ExprId), CompileError> {
    let (copy, _) = copy_fresh(m, literal)?;
    let span = m.expr(copy).span;
    let ExprKind::Function(func) = &m.expr(copy).kind else { return Ok((f, literal)) };
    let mut func = (**func).clone();
    for (&p, &t) in func.params.iter().zip(arg_types) {
        m.vars[p.index()].ty = Some(t);
    }
    func.ret_type = None;
    let copy = m.add_expr(ExprKind::Function(Box::new(func)), span);
    let decl = m.var(f).clone();
    Ok((m.add_var(decl.name, None, decl.span), copy))
}

/// Binds the copies next to their originals and points each call site at its copy.
struct Redirect {
    copies: HashMap<VarId, Vec<(VarId, ExprId)>>,
    redirect: HashMap<ExprId, VarId>,
}

impl Rewrite for Redirect {
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let span = m.expr(old).span;
        match &m.expr(old).kind {
            ExprKind::Call { args, attrs, .. } if self.redirect.contains_key(&old) => {
                let (n, attrs) = (args.len(), attrs.clone());
                let Some(&target) = self.redirect.get(&old) else { return Ok(rebuild(m, old, kids)) };
                let callee = m.add_expr(ExprKind::Var(target), span);
                let args = kids.get(1..).filter(|a| a.len() == n).map(<[ExprId]>::to_vec);
                let Some(args) = args else { return Ok(rebuild(m, old, kids)) };
                Ok(m.add_expr(ExprKind::Call { callee, args, attrs }, span))
            }
            ExprKind::Let { var, .. } if self.copies.contains_key(var) => {
                let var = *var;
                let rebuilt = rebuild(m, old, kids);
                let ExprKind::Let { value, body, .. } = m.expr(rebuilt).kind else { return Ok(rebuilt) };
                let mut body = body;
                for (copy_var, copy) in self.copies.remove(&var).unwrap_or_default().into_iter().rev() {
                    body = m.add_expr(ExprKind::Let { var: copy_var, value: copy, body }, span);
                }
                Ok(m.add_expr(ExprKind::Let { var, value, body }, span))
            }
            _ => Ok(rebuild(m, old, kids)),
        }
    }
}
