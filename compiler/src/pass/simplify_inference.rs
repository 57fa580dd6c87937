//! Inference-time simplification (TVM `SimplifyInference`): the output of
//! `nn.batch_norm(x, gamma, beta, mean, var).0` becomes `x * scale + shift` with
//! `scale = 1 / sqrt(var + epsilon) * gamma` and `shift = -mean * scale + beta` (each factor
//! only when the `scale`/`center` attributes ask for it), the per-channel vectors expanded to
//! broadcast along `axis`; `nn.dropout(x).0` becomes `x` (dropout is the identity at
//! inference). Both then fuse as ordinary elementwise arithmetic, and with constant
//! statistics `FoldConstant` computes `scale` and `shift` once.
//!
//! The other fields (a batch norm's updated mean and variance, a dropout's mask) are left as
//! they are; a call whose type is not a statically ranked tensor is left too.

use super::util::builder::{as_op_call, op_call};
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use crate::diagnostics::CompileError;
use crate::ir::{AttrValue, ExprId, ExprKind, Literal, LiteralValue, Module, Span, TypeKind};
use crate::op::AttrReader;
use crate::ty::TypeMap;
use relay_devices::DType;

/// Rewrites batch norms and dropouts in every global function (see the module docs).
///
/// # Errors
/// None today (the pass signature).
pub fn simplify_inference(m: &mut Module, types: &TypeMap) -> Result<(), CompileError> {
    for i in 0..m.functions.len() {
        let body = m.functions[i].func.body;
        m.functions[i].func.body = rewrite(m, body, &mut Simplify { types })?;
    }
    Ok(())
}

struct Simplify<'a> {
    types: &'a TypeMap,
}

impl Rewrite for Simplify<'_> {
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let new = rebuild(m, old, kids);
        let ExprKind::Proj { tuple, index: 0 } = m.expr(new).kind else { return Ok(new) };
        let Some((op, args, attrs)) = as_op_call(m, tuple) else { return Ok(new) };
        let (args, attrs) = (args.to_vec(), attrs.clone());
        let span = m.expr(old).span;
        match (op, args.as_slice()) {
            ("nn.dropout", [x]) => Ok(*x),
            ("nn.batch_norm", &[x, gamma, beta, mean, var]) => {
                let reader = AttrReader::new(&m.symbols, &attrs);
                let read = || -> Result<(i64, f64, bool, bool), String> {
                    Ok((
                        reader.int("axis", 1)?,
                        reader.float("epsilon", 1e-5)?,
                        reader.bool("center", true)?,
                        reader.bool("scale", true)?,
                    ))
                };
                let Ok((axis, epsilon, center, scale)) = read() else { return Ok(new) };
                // The input's type (the old node's: `x` may be new).
                let x_ty = match &m.expr(old).kind {
                    ExprKind::Proj { tuple, .. } => match &m.expr(*tuple).kind {
                        ExprKind::Call { args, .. } => args.first().and_then(|&a| self.types.expr(a)),
                        _ => None,
                    },
                    _ => None,
                };
                let Some(TypeKind::Tensor { shape, dtype }) = x_ty.map(|t| m.types.kind(t)) else {
                    return Ok(new);
                };
                let (rank, dtype) = (shape.len() as i64, *dtype);
                let axis = if axis < 0 { axis + rank } else { axis };
                if !(0..rank).contains(&axis) || !dtype.is_float() {
                    return Ok(new);
                }
                let bn = BatchNorm { x, gamma, beta, mean, var, epsilon, center, scale, dtype };
                Ok(bn.unpack(m, rank - axis - 1, span))
            }
            _ => Ok(new),
        }
    }
}

/// The operands and attributes of one `nn.batch_norm`.
struct BatchNorm {
    x: ExprId,
    gamma: ExprId,
    beta: ExprId,
    mean: ExprId,
    var: ExprId,
    epsilon: f64,
    center: bool,
    scale: bool,
    dtype: DType,
}

impl BatchNorm {
    /// `x * scale + shift`, the channel vectors given `trailing` size-1 dimensions.
    fn unpack(&self, m: &mut Module, trailing: i64, span: Span) -> ExprId {
        let scalar = |m: &mut Module, v: f64| {
            m.add_expr(ExprKind::Literal(Literal { value: LiteralValue::Float(v), dtype: self.dtype }), span)
        };
        let eps = scalar(m, self.epsilon);
        let var_eps = op_call(m, "add", vec![self.var, eps], vec![], span);
        let std = op_call(m, "sqrt", vec![var_eps], vec![], span);
        let one = scalar(m, 1.0);
        let mut scale = op_call(m, "divide", vec![one, std], vec![], span);
        if self.scale {
            scale = op_call(m, "multiply", vec![scale, self.gamma], vec![], span);
        }
        let neg_mean = op_call(m, "negative", vec![self.mean], vec![], span);
        let mut shift = op_call(m, "multiply", vec![neg_mean, scale], vec![], span);
        if self.center {
            shift = op_call(m, "add", vec![shift, self.beta], vec![], span);
        }
        let expand = |m: &mut Module, v: ExprId| {
            if trailing == 0 {
                return v;
            }
            let attrs = vec![("axis", AttrValue::Int(1)), ("num_newaxis", AttrValue::Int(trailing))];
            op_call(m, "expand_dims", vec![v], attrs, span)
        };
        let (scale, shift) = (expand(m, scale), expand(m, shift));
        let scaled = op_call(m, "multiply", vec![self.x, scale], vec![], span);
        op_call(m, "add", vec![scaled, shift], vec![], span)
    }
}
