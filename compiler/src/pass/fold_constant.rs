//! Constant folding at Relay level (TVM `FoldConstant`): whole constant subexpressions are
//! computed at compile time.
//!
//! Bottom-up, so a folded operand makes its parent foldable:
//! - an operator call whose operands are literals or metadata constants (or tuples of them,
//!   as `concatenate` takes) runs once on the operators' reference kernels (the registry's
//!   [`Evaluator`](crate::op::Evaluator)) and becomes a literal (0-d) or a constant;
//! - `shape_of(x)` and `ndarray_size(x)` of any `x` whose type has a static shape become the
//!   constants that type gives (TVM's `VisitShapeOf`), so `dyn.*` calls fed by them, as TVM's
//!   frontends write them, reach [`super::dynamic_to_static`] with constant operands;
//! - `let %x = <literal or constant>; body` becomes `body` with `%x` replaced;
//! - a projection of a tuple of constants becomes the field;
//! - `if` on a constant condition becomes the branch taken;
//! - `match` on a value whose constructors are known (built of constructor calls, tuples and
//!   atoms) becomes the first arm that matches, its pattern variables bound by `let`.
//!
//! Like the kernel-level fold ([`super::fold_fused_constants`]) results over
//! [`MAX_FOLDED_ELEMENTS`] elements stay calls, so executables do not grow by what could be
//! computed at run time, and so do calls whose work is over [`MAX_FOLD_WORK`]: the output's
//! elements for elementwise, broadcast and injective operators, the inputs' for reductions,
//! their product for the rest (a convolution reads many inputs per output). Operators that
//! fail on their constants (a reshape to an impossible shape) are left to fail at run time.
//! `Primitive=1` functions are kernels and are left alone.

use super::fold_fused_constants::{constant_data, exact_in_f64, MAX_FOLDED_ELEMENTS, MAX_FOLD_WORK};
use super::util::builder::{as_op_call, is_primitive, let_chain};
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use super::util::walk::preorder;
use crate::codegen::constant_tensor;
use crate::diagnostics::CompileError;
use crate::ir::{
    ConstantData, Dim, ExprId, ExprKind, IdMap, Literal, LiteralValue, Module, PatId, PatternKind, TypeKind,
    VarId,
};
use crate::op::{AttrReader, OpPattern, OpRegistry};
use crate::ty::TypeMap;
use relay_devices::Tensor;

/// Folds the constant subexpressions of every global function (see the module docs).
/// Operator calls are folded only when `ops` has an evaluator.
///
/// # Errors
/// None today (the pass signature).
pub fn fold_constant(m: &mut Module, types: &TypeMap, ops: &OpRegistry) -> Result<(), CompileError> {
    for i in 0..m.functions.len() {
        let body = m.functions[i].func.body;
        let mut fold = Fold { types, ops, let_of_value: let_of_value(m, body), bound: IdMap::new() };
        m.functions[i].func.body = rewrite(m, body, &mut fold)?;
    }
    Ok(())
}

/// The variable each `let` value node under `body` is bound to.
pub(super) fn let_of_value(m: &Module, body: ExprId) -> IdMap<ExprId, VarId> {
    preorder(m, body, |_| true)
        .into_iter()
        .filter_map(|e| match m.expr(e).kind {
            ExprKind::Let { var, value, .. } => Some((value, var)),
            _ => None,
        })
        .collect()
}

struct Fold<'a> {
    types: &'a TypeMap,
    ops: &'a OpRegistry,
    /// The variable each `let` value node is bound to.
    let_of_value: IdMap<ExprId, VarId>,
    /// Variables whose `let` value folded to an atom, and that atom.
    bound: IdMap<VarId, ExprId>,
}

impl Rewrite for Fold<'_> {
    fn enter(&mut self, m: &Module, e: ExprId) -> bool {
        !matches!(&m.expr(e).kind, ExprKind::Function(f) if is_primitive(m, f))
    }

    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let new = rebuild(m, old, kids);
        let folded = self.fold(m, old, new).unwrap_or(new);
        if let Some(&var) = self.let_of_value.get(old) {
            if is_constant(m, folded) {
                self.bound.insert(var, folded);
            }
        }
        Ok(folded)
    }
}

impl Fold<'_> {
    /// The folded form of `new` (`old` with rewritten children), if a rule applies.
    fn fold(&self, m: &mut Module, old: ExprId, new: ExprId) -> Option<ExprId> {
        let span = m.expr(new).span;
        match m.expr(new).kind.clone() {
            ExprKind::Var(v) => {
                let atom = *self.bound.get(v)?;
                Some(m.add_expr(m.expr(atom).kind.clone(), span))
            }
            ExprKind::Let { value, body, .. } => is_constant(m, value).then_some(body),
            ExprKind::Proj { tuple, index } => match &m.expr(tuple).kind {
                ExprKind::Tuple(fields) if fields.iter().all(|&f| is_constant(m, f)) => {
                    fields.get(index as usize).copied()
                }
                _ => None,
            },
            ExprKind::If { cond, then_branch, else_branch } => {
                Some(if constant_condition(m, cond)? { then_branch } else { else_branch })
            }
            ExprKind::Match { scrutinee, arms, .. } => {
                if !is_known_value(m, scrutinee) {
                    return None;
                }
                for arm in arms {
                    match bind(m, arm.pattern, scrutinee)? {
                        Some(bindings) => return Some(let_chain(m, bindings, arm.body)),
                        None => continue,
                    }
                }
                None
            }
            ExprKind::Call { .. } => self.shape_constant(m, old, new).or_else(|| self.evaluate(m, old, new)),
            _ => None,
        }
    }

    /// `shape_of(x)` (`new`, rewritten from `old`) as the constant shape of `x`'s type, or
    /// `ndarray_size(x)` as its element count, in the call's dtype, when that shape is static
    /// and every value fits the dtype (TVM's `VisitShapeOf`; the values of `x` are not
    /// needed, so `x` need not be constant: it stays where something else reads it).
    fn shape_constant(&self, m: &mut Module, old: ExprId, new: ExprId) -> Option<ExprId> {
        let (op, _, _) = as_op_call(m, new)?;
        let size = match op {
            "shape_of" => false,
            "ndarray_size" => true,
            _ => return None,
        };
        let ExprKind::Call { args, .. } = &m.expr(old).kind else { return None };
        let &[x] = args.as_slice() else { return None };
        let TypeKind::Tensor { shape, .. } = m.types.kind(self.types.expr(x)?) else { return None };
        let dims = shape
            .iter()
            .map(|d| if let Dim::Known(d) = d { Some(*d) } else { None })
            .collect::<Option<Vec<i64>>>()?;
        let TypeKind::Tensor { dtype, .. } = *m.types.kind(self.types.expr(old)?) else { return None };
        let values = if size { vec![dims.iter().try_fold(1i64, |n, &d| n.checked_mul(d))?] } else { dims };
        let fits = dtype.is_int() && values.iter().all(|&v| dtype.bits >= 64 || v < 1i64 << (dtype.bits - 1));
        let shape = if size { vec![] } else { vec![values.len() as i64] };
        let data = values.into_iter().map(|v| v as f64).collect();
        let span = m.expr(new).span;
        fits.then(|| node(m, ConstantData { dtype, shape, data }, span))
    }

    /// The value of operator call `new`, computed now (see the module docs).
    fn evaluate(&self, m: &mut Module, old: ExprId, new: ExprId) -> Option<ExprId> {
        evaluate_op(m, self.ops, self.types.expr(old)?, new)
    }
}

/// The truth of a constant `if` condition (a `bool` literal or a one-element constant).
pub(crate) fn constant_condition(m: &Module, cond: ExprId) -> Option<bool> {
    match m.expr(cond).kind {
        ExprKind::Literal(Literal { value: LiteralValue::Bool(b), .. }) => Some(b),
        ExprKind::Constant(i) => {
            let c = m.constants.get(i as usize)?;
            (c.shape.is_empty() && c.data.len() == 1).then(|| c.data[0] != 0.0)
        }
        _ => None,
    }
}

/// The value of operator call `call` (its operands literals, constants or tuples of them),
/// whose type is `out_ty`, computed now on the reference kernels: a literal, a constant or
/// a tuple of them. `None` when the operator has no evaluator, an operand is not constant,
/// the result is over [`MAX_FOLDED_ELEMENTS`] or the work over [`MAX_FOLD_WORK`], or the
/// kernel fails (it is left to fail at run time).
pub(crate) fn evaluate_op(
    m: &mut Module,
    ops: &OpRegistry,
    out_ty: crate::ir::TypeId,
    call: ExprId,
) -> Option<ExprId> {
    let evaluator = ops.evaluator()?;
    let (op, args, attrs) = as_op_call(m, call)?;
    let pattern = ops.get(ops.lookup(op)?).pattern;
    let mut inputs = vec![];
    for &a in args {
        match &m.expr(a).kind {
            ExprKind::Tuple(fields) => {
                for &f in fields {
                    inputs.push(tensor(m, f)?);
                }
            }
            _ => inputs.push(tensor(m, a)?),
        }
    }
    let outputs = static_outputs(m, out_ty)?;
    let out_elems: u64 = outputs.iter().sum();
    let in_elems: Vec<u64> = inputs.iter().map(|t| t.len() as u64).collect();
    let work = match pattern {
        OpPattern::ElemWise | OpPattern::Broadcast | OpPattern::Injective => Some(out_elems),
        OpPattern::CommReduce => Some(in_elems.iter().sum()),
        _ => out_elems.checked_mul(in_elems.iter().copied().max().unwrap_or(1)),
    };
    if work? > MAX_FOLD_WORK {
        return None;
    }
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let results = evaluator(op, &AttrReader::new(&m.symbols, attrs), &refs).ok()?;
    let span = m.expr(call).span;
    let values = results.iter().map(|t| constant(m, t, span)).collect::<Option<Vec<_>>>()?;
    let tuple = matches!(m.types.kind(out_ty), TypeKind::Tuple(_));
    match (tuple, values.as_slice()) {
        (true, _) => Some(m.add_expr(ExprKind::Tuple(values), span)),
        (false, [one]) => Some(*one),
        (false, _) => None,
    }
}

/// The element counts of a call's outputs when every one is a statically shaped tensor of
/// at most [`MAX_FOLDED_ELEMENTS`] elements whose dtype constants hold exactly.
fn static_outputs(m: &Module, ty: crate::ir::TypeId) -> Option<Vec<u64>> {
    let tensors = match m.types.kind(ty) {
        TypeKind::Tuple(fields) => fields.clone(),
        TypeKind::Tensor { .. } => vec![ty],
        _ => return None,
    };
    tensors
        .into_iter()
        .map(|t| match m.types.kind(t) {
            TypeKind::Tensor { shape, dtype } if exact_in_f64(*dtype) => {
                let n = shape.iter().try_fold(1i64, |n, d| match d {
                    Dim::Known(d) => n.checked_mul(*d),
                    _ => None,
                })?;
                (n <= MAX_FOLDED_ELEMENTS).then(|| u64::try_from(n).ok())?
            }
            _ => None,
        })
        .collect()
}

/// Whether `e` is a literal or metadata constant.
fn is_constant(m: &Module, e: ExprId) -> bool {
    matches!(m.expr(e).kind, ExprKind::Literal(_) | ExprKind::Constant(_))
}

/// The tensor of literal or constant `e`.
pub(super) fn tensor(m: &Module, e: ExprId) -> Option<Tensor> {
    match m.expr(e).kind {
        ExprKind::Literal(lit) => {
            let v = match lit.value {
                LiteralValue::Int(i) => i as f64,
                LiteralValue::Float(f) => f,
                LiteralValue::Bool(b) => f64::from(u8::from(b)),
            };
            constant_tensor(&ConstantData { dtype: lit.dtype, shape: vec![], data: vec![v] }).ok()
        }
        ExprKind::Constant(i) => constant_tensor(m.constants.get(i as usize)?).ok(),
        _ => None,
    }
}

/// A node holding `t`: a literal when it is 0-d, else a new metadata constant.
fn constant(m: &mut Module, t: &Tensor, span: crate::ir::Span) -> Option<ExprId> {
    Some(node(m, constant_data(t)?, span))
}

/// A node holding `c`: a literal when it is 0-d (and holds one value), else a new metadata
/// constant.
fn node(m: &mut Module, c: ConstantData, span: crate::ir::Span) -> ExprId {
    if let ([], &[v]) = (c.shape.as_slice(), c.data.as_slice()) {
        let value = if c.dtype.is_float() {
            LiteralValue::Float(v)
        } else if c.dtype == relay_devices::DType::BOOL {
            LiteralValue::Bool(v != 0.0)
        } else {
            LiteralValue::Int(v as i64)
        };
        return m.add_expr(ExprKind::Literal(Literal { value, dtype: c.dtype }), span);
    }
    m.constants.push(c);
    m.add_expr(ExprKind::Constant((m.constants.len() - 1) as u32), span)
}

/// Whether `e` is built of constructor calls, tuples and atoms only: its shape is known and
/// dropping any part of it drops no effect.
fn is_known_value(m: &Module, e: ExprId) -> bool {
    preorder(m, e, |_| true).into_iter().all(|n| match &m.expr(n).kind {
        ExprKind::Call { callee, .. } => matches!(m.expr(*callee).kind, ExprKind::Constructor(_)),
        ExprKind::Tuple(_) => true,
        kind => kind.is_atom(),
    })
}

/// Matches known value `e` against pattern `p`: `Some(Some(bindings))` when it matches,
/// `Some(None)` when it cannot, `None` when that depends on a value not known now.
fn bind(m: &Module, p: PatId, e: ExprId) -> Option<Option<Vec<(VarId, ExprId)>>> {
    let mut bindings = vec![];
    let mut pending = vec![(p, e)];
    while let Some((p, e)) = pending.pop() {
        match (&m.pattern(p).kind, &m.expr(e).kind) {
            (PatternKind::Wildcard, _) => {}
            (PatternKind::Var(v), _) => bindings.push((*v, e)),
            (PatternKind::Constructor { name, args: ps }, ExprKind::Call { callee, args, .. }) => {
                let ExprKind::Constructor(c) = m.expr(*callee).kind else { return None };
                if c != *name || ps.len() != args.len() {
                    return Some(None);
                }
                pending.extend(ps.iter().copied().zip(args.iter().copied()));
            }
            (PatternKind::Tuple(ps), ExprKind::Tuple(fields)) if ps.len() == fields.len() => {
                pending.extend(ps.iter().copied().zip(fields.iter().copied()));
            }
            _ => return None,
        }
    }
    Some(Some(bindings))
}
