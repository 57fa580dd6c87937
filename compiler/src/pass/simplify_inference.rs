//! Inference-time simplification (TVM `SimplifyInference`): the output of
//! `nn.batch_norm(x, gamma, beta, mean, var).0` becomes `x * scale + shift` with
//! `scale = 1 / sqrt(var + epsilon) * gamma` and `shift = -mean * scale + beta` (each factor
//! only when the `scale`/`center` attributes ask for it), the per-channel vectors expanded to
//! broadcast along `axis`; `nn.dropout(x).0` becomes `x` (dropout is the identity at
//! inference). Both then fuse as ordinary elementwise arithmetic, and with constant
//! statistics `FoldConstant` computes `scale` and `shift` once.
//!
//! As TVM's `InstanceNormToInferUnpack`, `GroupNormToInferUnpack` and `L2NormToInferUnpack`,
//! `nn.instance_norm`, `nn.group_norm` and `nn.l2_normalize` become `mean`, `variance`, `sum`
//! and elementwise arithmetic, which fuse: `(x - mean) / sqrt(variance + epsilon)` over every
//! axis but the batch axis 0 and the channel `axis` (a group norm's data reshaped to put its
//! groups on an axis of their own, and back), then `* gamma + beta` along `axis`; and
//! `x / sqrt(maximum(sum(x * x, axis), eps))`. The reduced axes are those of the reference
//! kernels (`relay_stdlib`'s `normalization.rs`), which sum in `float64`: the rewritten
//! forms sum in the data's dtype.
//!
//! The other fields (a batch norm's updated mean and variance, a dropout's mask) are left as
//! they are; a call whose data is not a statically ranked float tensor is left too, and so is
//! a group norm of data with an unknown dimension (its reshape needs the sizes).

use super::util::builder::{as_op_call, op_call};
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use crate::diagnostics::CompileError;
use crate::ir::{AttrValue, Dim, ExprId, ExprKind, Literal, LiteralValue, Module, Span, TypeKind};
use crate::op::AttrReader;
use crate::ty::TypeMap;
use relay_devices::DType;

/// The operators this pass rewrites into ordinary ones (for listings: they fuse through it).
pub const SIMPLIFIED_BY_INFERENCE: &[&str] =
    &["nn.batch_norm", "nn.dropout", "nn.instance_norm", "nn.group_norm", "nn.l2_normalize"];

/// Rewrites batch norms, dropouts and the normalisations in every global function (see the
/// module docs).
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
        if let ExprKind::Call { args, .. } = &m.expr(old).kind {
            // The data's type (the old node's: the new arguments have none).
            let data = args.first().and_then(|&a| self.types.expr(a)).map(|t| m.types.kind(t).clone());
            if let Some(TypeKind::Tensor { shape, dtype }) = data {
                return Ok(normalisation(m, new, &shape, dtype).unwrap_or(new));
            }
            return Ok(new);
        }
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
        let (scale, shift) = (expand(m, scale, trailing, span), expand(m, shift, trailing, span));
        let scaled = op_call(m, "multiply", vec![self.x, scale], vec![], span);
        op_call(m, "add", vec![scaled, shift], vec![], span)
    }
}

/// The channel vector `v` given `trailing` size-1 dimensions, to broadcast along the axis
/// that many before the last (TVM's `ExpandBiasToMatchAxis`).
fn expand(m: &mut Module, v: ExprId, trailing: i64, span: Span) -> ExprId {
    if trailing == 0 {
        return v;
    }
    let attrs = vec![("axis", AttrValue::Int(1)), ("num_newaxis", AttrValue::Int(trailing))];
    op_call(m, "expand_dims", vec![v], attrs, span)
}

/// `call` (an `nn.instance_norm`, `nn.group_norm` or `nn.l2_normalize` of float data of
/// `shape`) as the operators it decomposes into; `None` for any other call and for attributes
/// or shapes the rewrite does not take (the call then stays).
fn normalisation(m: &mut Module, call: ExprId, shape: &[Dim], dtype: DType) -> Option<ExprId> {
    let (op, args, attrs) = as_op_call(m, call)?;
    if !dtype.is_float() {
        return None;
    }
    let (op, args, attrs) = (op.to_string(), args.to_vec(), attrs.clone());
    let reader = AttrReader::new(&m.symbols, &attrs);
    let span = m.expr(call).span;
    let rank = shape.len() as i64;
    match (op.as_str(), args.as_slice()) {
        ("nn.l2_normalize", &[x]) => {
            let eps = reader.float("eps", 0.0).ok()?;
            let axis = match reader.get("axis") {
                None | Some(AttrValue::Null) => None,
                Some(_) => Some(reader.ints("axis").ok()??),
            };
            Some(l2_normalize(m, x, eps, axis, dtype, span))
        }
        (op @ ("nn.instance_norm" | "nn.group_norm"), &[x, gamma, beta]) => {
            let axis = reader.int("axis", 1).ok()?;
            let axis = if axis < 0 { axis + rank } else { axis };
            if !(1..rank).contains(&axis) {
                return None;
            }
            let norm = Norm {
                x,
                gamma,
                beta,
                axis,
                rank,
                epsilon: reader.float("epsilon", 1e-5).ok()?,
                center: reader.bool("center", true).ok()?,
                scale: reader.bool("scale", true).ok()?,
                dtype,
                span,
            };
            if op == "nn.instance_norm" {
                Some(norm.instance(m))
            } else {
                norm.group(m, reader.int("num_groups", 0).ok()?, shape)
            }
        }
        _ => None,
    }
}

/// `x / sqrt(maximum(sum(x * x, axis, keepdims), eps))` (`axis` `None`: every axis).
fn l2_normalize(
    m: &mut Module,
    x: ExprId,
    eps: f64,
    axis: Option<Vec<i64>>,
    dtype: DType,
    span: Span,
) -> ExprId {
    let square = op_call(m, "multiply", vec![x, x], vec![], span);
    let mut attrs = vec![("keepdims", AttrValue::Bool(true))];
    if let Some(axis) = axis {
        attrs.push(("axis", AttrValue::List(axis.into_iter().map(AttrValue::Int).collect())));
    }
    let sum = op_call(m, "sum", vec![square], attrs, span);
    let eps = m.add_expr(ExprKind::Literal(Literal { value: LiteralValue::Float(eps), dtype }), span);
    let floor = op_call(m, "maximum", vec![sum, eps], vec![], span);
    let norm = op_call(m, "sqrt", vec![floor], vec![], span);
    op_call(m, "divide", vec![x, norm], vec![], span)
}

/// The operands and attributes of one `nn.instance_norm` or `nn.group_norm` (`axis`
/// normalised, in `1..rank`).
struct Norm {
    x: ExprId,
    gamma: ExprId,
    beta: ExprId,
    axis: i64,
    rank: i64,
    epsilon: f64,
    center: bool,
    scale: bool,
    dtype: DType,
    span: Span,
}

impl Norm {
    /// `nn.instance_norm`: each `(n, c)` slice standardised over the other axes, then scaled.
    fn instance(&self, m: &mut Module) -> ExprId {
        let axes: Vec<i64> = (1..self.rank).filter(|&a| a != self.axis).collect();
        let y = self.standardise(m, self.x, &axes);
        self.scale_shift(m, y)
    }

    /// `nn.group_norm`: the data reshaped from `[.., C, ..]` to `[.., G, C / G, ..]` (`C` at
    /// `axis`), each `(n, group)` slice standardised over every other axis, reshaped back and
    /// scaled. `None` for an unknown dimension or a group count not dividing `C`.
    fn group(&self, m: &mut Module, groups: i64, shape: &[Dim]) -> Option<ExprId> {
        let dims: Vec<i64> = shape
            .iter()
            .map(|d| if let Dim::Known(n) = d { Some(*n) } else { None })
            .collect::<Option<_>>()?;
        let channels = *dims.get(self.axis as usize)?;
        if groups <= 0 || channels % groups != 0 {
            return None;
        }
        let ints = |v: &[i64]| AttrValue::List(v.iter().map(|&d| AttrValue::Int(d)).collect());
        let mut grouped = dims.clone();
        grouped.splice(self.axis as usize..=self.axis as usize, [groups, channels / groups]);
        let span = self.span;
        let x = op_call(m, "reshape", vec![self.x], vec![("newshape", ints(&grouped))], span);
        let axes: Vec<i64> = (1..=self.rank).filter(|&a| a != self.axis).collect();
        let y = self.standardise(m, x, &axes);
        let y = op_call(m, "reshape", vec![y], vec![("newshape", ints(&dims))], span);
        Some(self.scale_shift(m, y))
    }

    /// `(x - mean) / sqrt(variance + epsilon)`, the (population) mean and variance over `axes`.
    fn standardise(&self, m: &mut Module, x: ExprId, axes: &[i64]) -> ExprId {
        let span = self.span;
        let reduce = || {
            vec![
                ("axis", AttrValue::List(axes.iter().map(|&a| AttrValue::Int(a)).collect())),
                ("keepdims", AttrValue::Bool(true)),
            ]
        };
        let mean = op_call(m, "mean", vec![x], reduce(), span);
        let var = op_call(m, "variance", vec![x, mean], reduce(), span);
        let eps = m.add_expr(
            ExprKind::Literal(Literal { value: LiteralValue::Float(self.epsilon), dtype: self.dtype }),
            span,
        );
        let var_eps = op_call(m, "add", vec![var, eps], vec![], span);
        let std = op_call(m, "sqrt", vec![var_eps], vec![], span);
        let centred = op_call(m, "subtract", vec![x, mean], vec![], span);
        op_call(m, "divide", vec![centred, std], vec![], span)
    }

    /// `y * gamma + beta` along `axis`, each as `scale` and `center` ask.
    fn scale_shift(&self, m: &mut Module, mut y: ExprId) -> ExprId {
        let trailing = self.rank - self.axis - 1;
        if self.scale {
            let gamma = expand(m, self.gamma, trailing, self.span);
            y = op_call(m, "multiply", vec![y, gamma], vec![], self.span);
        }
        if self.center {
            let beta = expand(m, self.beta, trailing, self.span);
            y = op_call(m, "add", vec![y, beta], vec![], self.span);
        }
        y
    }
}
