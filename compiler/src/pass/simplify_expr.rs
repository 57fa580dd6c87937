//! Algebraic simplification (TVM `SimplifyExpr`), each rule only where the result has the
//! type of what it replaces:
//! - `reshape(reshape(x, a), b)` → `reshape(x, newshape=<static result shape>)`, and a
//!   reshape to `x`'s own shape → `x`;
//! - `transpose(transpose(x, a), b)` → one transpose of the composed permutation, or `x` when
//!   it is the identity;
//! - `x * 1`, `1 * x`, `x + 0`, `0 + x`, `x - 0` → `x` (a literal, or a constant whose
//!   elements are all 1 or all 0);
//! - `cast(cast(x, b), c)` → `cast(x, c)` when `b` holds every value of `x`'s dtype, and a cast
//!   to `x`'s own dtype → `x`;
//! - `broadcast_to(x, s)` of `x`'s own shape → `x`.
//!
//! Rules apply bottom-up, so chains collapse in one pass.

use super::util::builder::{as_op_call, op_call};
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use crate::diagnostics::CompileError;
use crate::ir::{AttrValue, Dim, ExprId, ExprKind, IdMap, LiteralValue, Module, TypeId, TypeKind};
use crate::op::AttrReader;
use crate::ty::TypeMap;
use relay_devices::{DType, DTypeCode};

/// Simplifies every global function (see the module docs).
///
/// # Errors
/// None today (the pass signature).
pub fn simplify_expr(m: &mut Module, types: &TypeMap) -> Result<(), CompileError> {
    for i in 0..m.functions.len() {
        let body = m.functions[i].func.body;
        let mut simplify = Simplify { types, new_types: IdMap::new() };
        m.functions[i].func.body = rewrite(m, body, &mut simplify)?;
    }
    Ok(())
}

struct Simplify<'a> {
    types: &'a TypeMap,
    /// Types of the nodes this pass made: each has the type of the node it replaced.
    new_types: IdMap<ExprId, TypeId>,
}

impl Simplify<'_> {
    fn ty(&self, e: ExprId) -> Option<TypeId> {
        self.new_types.get(e).copied().or_else(|| self.types.expr(e))
    }

    /// The static shape and dtype of `e`'s tensor type.
    fn tensor(&self, m: &Module, e: ExprId) -> Option<(Vec<i64>, DType)> {
        match m.types.kind(self.ty(e)?) {
            TypeKind::Tensor { shape, dtype } => {
                let dims = shape.iter().map(|d| if let Dim::Known(n) = d { Some(*n) } else { None });
                Some((dims.collect::<Option<_>>()?, *dtype))
            }
            _ => None,
        }
    }

    /// The simpler form of `e` (an operator call whose operands are already simplified) with
    /// type `ty`, if a rule applies.
    fn simplify(&self, m: &mut Module, e: ExprId, ty: TypeId) -> Option<ExprId> {
        let (op, args, attrs) = as_op_call(m, e)?;
        let (op, args, attrs) = (op.to_string(), args.to_vec(), attrs.clone());
        let span = m.expr(e).span;
        let same_type = |s: &Self, x: ExprId| s.ty(x) == Some(ty);
        match (op.as_str(), args.as_slice()) {
            ("reshape" | "broadcast_to", &[x]) if same_type(self, x) => Some(x),
            ("reshape", &[inner]) => {
                let (_, [x], _) = as_op_call(m, inner).filter(|(op, _, _)| *op == "reshape")? else {
                    return None;
                };
                let x = *x;
                if same_type(self, x) {
                    return Some(x);
                }
                let (shape, _) = self.tensor(m, e)?;
                let newshape = AttrValue::List(shape.into_iter().map(AttrValue::Int).collect());
                Some(op_call(m, "reshape", vec![x], vec![("newshape", newshape)], span))
            }
            ("transpose", &[inner]) => {
                let (_, [x], inner_attrs) = as_op_call(m, inner).filter(|(op, _, _)| *op == "transpose")?
                else {
                    return None;
                };
                let (x, inner_attrs) = (*x, inner_attrs.clone());
                let rank = self.tensor(m, e)?.0.len();
                let outer = permutation(m, &attrs, rank)?;
                let first = permutation(m, &inner_attrs, rank)?;
                let composed: Vec<usize> = outer.iter().map(|&i| first[i]).collect();
                if composed.iter().enumerate().all(|(i, &a)| i == a) {
                    return Some(x);
                }
                let axes = AttrValue::List(composed.into_iter().map(|a| AttrValue::Int(a as i64)).collect());
                Some(op_call(m, "transpose", vec![x], vec![("axes", axes)], span))
            }
            ("multiply", &[a, b]) => identity_operand(m, a, b, 1.0).filter(|&x| same_type(self, x)),
            ("add", &[a, b]) => identity_operand(m, a, b, 0.0).filter(|&x| same_type(self, x)),
            ("subtract", &[a, b]) if is_all(m, b, 0.0) && same_type(self, a) => Some(a),
            ("cast", &[x]) => {
                if same_type(self, x) {
                    return Some(x);
                }
                let (_, [y], _) = as_op_call(m, x).filter(|(op, _, _)| *op == "cast")? else { return None };
                let y = *y;
                let (_, from) = self.tensor(m, y)?;
                let (_, middle) = self.tensor(m, x)?;
                let ExprKind::Call { callee, .. } = m.expr(e).kind else { return None };
                let call = ExprKind::Call { callee, args: vec![y], attrs };
                holds_all(middle, from).then(|| m.add_expr(call, span))
            }
            _ => None,
        }
    }
}

impl Rewrite for Simplify<'_> {
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let new = rebuild(m, old, kids);
        let Some(ty) = self.types.expr(old) else { return Ok(new) };
        if new != old {
            self.new_types.insert(new, ty);
        }
        match self.simplify(m, new, ty) {
            Some(simpler) => {
                self.new_types.get_or_insert_with(simpler, || ty);
                Ok(simpler)
            }
            None => Ok(new),
        }
    }
}

/// A transpose's permutation: its `axes` (negative counted from the end), or the reversal
/// when it has none; `None` when they are malformed.
fn permutation(m: &Module, attrs: &crate::ir::Attrs, rank: usize) -> Option<Vec<usize>> {
    let axes = AttrReader::new(&m.symbols, attrs).ints("axes").ok()?;
    match axes {
        None => Some((0..rank).rev().collect()),
        Some(a) if a.is_empty() => Some((0..rank).rev().collect()),
        Some(a) if a.len() == rank => {
            a.iter().map(|&x| usize::try_from(if x < 0 { x + rank as i64 } else { x }).ok()).collect()
        }
        Some(_) => None,
    }
}

/// The operand of `a op b` that is not the identity element `unit` of `op`, if one is.
fn identity_operand(m: &Module, a: ExprId, b: ExprId, unit: f64) -> Option<ExprId> {
    if is_all(m, b, unit) {
        Some(a)
    } else if is_all(m, a, unit) {
        Some(b)
    } else {
        None
    }
}

/// Whether `e` is a literal or metadata constant whose every element is `v`.
fn is_all(m: &Module, e: ExprId, v: f64) -> bool {
    match m.expr(e).kind {
        ExprKind::Literal(lit) => match lit.value {
            LiteralValue::Int(i) => i as f64 == v,
            LiteralValue::Float(f) => f == v,
            LiteralValue::Bool(_) => false,
        },
        ExprKind::Constant(i) => m.constants.get(i as usize).is_some_and(|c| c.data.iter().all(|&x| x == v)),
        _ => false,
    }
}

/// Whether every value of dtype `from` is exactly a value of dtype `to`.
fn holds_all(to: DType, from: DType) -> bool {
    use DTypeCode::*;
    let mantissa = |t: DType| match t.bits {
        16 => 11,
        32 => 24,
        64 => 53,
        _ => 0,
    };
    match (from.code, to.code) {
        (Bool, _) => true,
        (a, b) if a == b => to.bits >= from.bits,
        (UInt, Int) => to.bits > from.bits,
        (Int | UInt, Float) => u32::from(from.bits) < mantissa(to),
        _ => false,
    }
}
