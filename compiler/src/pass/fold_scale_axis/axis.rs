//! The axis analysis both directions of `FoldScaleAxis` share: which operator's weight can
//! absorb a scale and along which of its axes, whether a constant is a per-channel vector
//! along an activation's channel axis, and how many users each node has.

use crate::codegen::constant_tensor;
use crate::ir::ConstantData;
use crate::ir::{Attrs, ExprId, ExprKind, LiteralValue, Module, Span};
use crate::op::{AttrReader, OpRegistry};
use crate::pass::fold_fused_constants::constant_data;
use crate::pass::util::builder::{as_op_call, op_call, static_tensor};
use crate::pass::util::walk::{children, preorder};
use crate::ty::TypeMap;
use relay_devices::DType;
use std::collections::HashMap;

/// An operator call whose weight can absorb a per-channel scale: `nn.conv2d` in the layouts
/// the kernels run (data `NCHW`, weight `OIHW`) or `nn.dense` (weight `[units, in]`).
pub(super) struct Consumer {
    /// `nn.conv2d` or `nn.dense`.
    pub op: &'static str,
    /// The activation operand.
    pub data: ExprId,
    /// The weight operand.
    pub weight: ExprId,
    /// The call's attributes, kept as they are.
    pub attrs: Attrs,
    /// The weight's rank (4 or 2): the scale is laid along its axis 0 (output channels) or
    /// axis 1 (input channels).
    pub weight_rank: usize,
    /// Channel groups (1 for `nn.dense`).
    pub groups: i64,
}

impl Consumer {
    /// `e` as a consumer, if it calls one of the operators above in the supported layouts.
    pub fn of(m: &Module, e: ExprId) -> Option<Consumer> {
        let (op, args, attrs) = as_op_call(m, e)?;
        let &[data, weight] = args else { return None };
        let reader = AttrReader::new(&m.symbols, attrs);
        let (op, weight_rank, groups) = match op {
            "nn.conv2d" => {
                let layouts =
                    (reader.str("data_layout", "NCHW").ok()?, reader.str("kernel_layout", "OIHW").ok()?);
                let out = reader.str("out_layout", "").ok()?;
                if layouts != ("NCHW", "OIHW") || !matches!(out, "" | "NCHW") {
                    return None;
                }
                ("nn.conv2d", 4, reader.int("groups", 1).ok()?)
            }
            "nn.dense" => ("nn.dense", 2, 1),
            _ => return None,
        };
        Some(Consumer { op, data, weight, attrs: attrs.clone(), weight_rank, groups })
    }

    /// The channel axis of the activation of rank `rank` that a scale is laid along (the
    /// input's for the forward direction, the output's for the backward one).
    pub fn channel_axis(&self, rank: usize) -> usize {
        if self.op == "nn.conv2d" {
            1
        } else {
            rank.saturating_sub(1)
        }
    }

    /// The call again, on `data` and `weight`.
    pub fn rebuild(&self, m: &mut Module, data: ExprId, weight: ExprId, span: Span) -> ExprId {
        call_with(m, self.op, vec![data, weight], self.attrs.clone(), span)
    }
}

/// A call of operator `op` with the attributes of a call it replaces.
pub(super) fn call_with(m: &mut Module, op: &str, args: Vec<ExprId>, attrs: Attrs, span: Span) -> ExprId {
    let op = m.symbols.intern(op);
    let callee = m.add_expr(ExprKind::Op(op), span);
    m.add_expr(ExprKind::Call { callee, args, attrs }, span)
}

/// The `channels` values of `e` when it is a float literal or metadata constant that, laid
/// over a tensor of rank `rank`, varies at most along `axis`: a scalar, or a shape of at most
/// `rank` dimensions (aligned at the end, as broadcasting aligns them) that are all 1 except
/// the one at `axis`, which is 1 or `channels`. Multiplying by such a value never changes the
/// other operand's shape.
pub(super) fn channel_values(
    m: &Module,
    e: ExprId,
    rank: usize,
    axis: usize,
    channels: i64,
) -> Option<Vec<f64>> {
    let count = usize::try_from(channels).ok()?;
    match m.expr(e).kind {
        ExprKind::Literal(lit) => match lit.value {
            LiteralValue::Float(v) => Some(vec![v; count]),
            _ => None,
        },
        ExprKind::Constant(i) => {
            let c = m.constants.get(i as usize)?;
            if !c.dtype.is_float() || c.shape.len() > rank {
                return None;
            }
            let offset = rank - c.shape.len();
            let mut along = 1;
            for (d, &n) in c.shape.iter().enumerate() {
                if d + offset == axis && n == channels {
                    along = n;
                } else if n != 1 {
                    return None;
                }
            }
            match along {
                1 => Some(vec![*c.data.first()?; count]),
                _ => Some(c.data.clone()),
            }
        }
        _ => None,
    }
}

/// A metadata constant node holding `values` (dtype `dtype`) with shape `[len]` followed by
/// `trailing` ones: laid along the axis `trailing` dimensions before the last.
pub(super) fn channel_constant(
    m: &mut Module,
    values: &[f64],
    dtype: DType,
    trailing: usize,
    span: Span,
) -> ExprId {
    let mut shape = vec![values.len() as i64];
    shape.resize(trailing + 1, 1);
    m.constants.push(ConstantData { dtype, shape, data: values.to_vec() });
    m.add_expr(ExprKind::Constant((m.constants.len() - 1) as u32), span)
}

/// `op(x, y)` (`multiply` or `divide`), computed now by the operators' reference kernels when
/// both are metadata constants and `ops` has an evaluator (so a folded weight does not wait
/// for `FoldConstant`, whose size limit large weights exceed), else the call.
pub(super) fn binary(m: &mut Module, ops: &OpRegistry, op: &str, x: ExprId, y: ExprId, span: Span) -> ExprId {
    let now = || -> Option<ConstantData> {
        let evaluate = ops.evaluator()?;
        let tensor = |e: ExprId| match m.expr(e).kind {
            ExprKind::Constant(i) => constant_tensor(m.constants.get(i as usize)?).ok(),
            _ => None,
        };
        let (a, b) = (tensor(x)?, tensor(y)?);
        let no_attrs = Attrs::default();
        let out = evaluate(op, &AttrReader::new(&m.symbols, &no_attrs), &[&a, &b]).ok()?;
        constant_data(out.first()?)
    };
    match now() {
        Some(c) => {
            m.constants.push(c);
            m.add_expr(ExprKind::Constant((m.constants.len() - 1) as u32), span)
        }
        None => op_call(m, op, vec![x, y], vec![], span),
    }
}

/// The operands of an `add` as (activation, constant): the constant is the literal or
/// metadata constant operand, in either order.
pub(super) fn split_add(m: &Module, args: &[ExprId]) -> Option<(ExprId, ExprId)> {
    let is_constant = |e: ExprId| matches!(m.expr(e).kind, ExprKind::Literal(_) | ExprKind::Constant(_));
    match *args {
        [x, b] if is_constant(b) => Some((x, b)),
        [b, x] if is_constant(b) => Some((x, b)),
        _ => None,
    }
}

/// How many times each node under `root` is used as an operand (a shared node more than
/// once).
pub(super) fn use_counts(m: &Module, root: ExprId) -> HashMap<ExprId, usize> {
    let mut uses = HashMap::new();
    for e in preorder(m, root, |_| true) {
        for (c, _) in children(&m.expr(e).kind) {
            *uses.entry(c).or_insert(0) += 1;
        }
    }
    uses
}

/// The nodes a rewrite made and the nodes they replace, so types and use counts of the
/// program before the pass stay readable for rebuilt nodes.
#[derive(Default)]
pub(super) struct Origins {
    of: HashMap<ExprId, ExprId>,
}

impl Origins {
    /// Records that `new` replaces `old`.
    pub fn record(&mut self, new: ExprId, old: ExprId) {
        if new != old {
            self.of.insert(new, old);
        }
    }

    /// The node of the program before the pass that `e` stands for.
    pub fn old(&self, e: ExprId) -> ExprId {
        self.of.get(&e).copied().unwrap_or(e)
    }

    /// The static shape and dtype of `e` (through its origin).
    pub fn tensor(&self, m: &Module, types: &TypeMap, e: ExprId) -> Option<(Vec<i64>, DType)> {
        static_tensor(m, types.expr(self.old(e))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Literal, Span};

    fn constant(m: &mut Module, shape: Vec<i64>, data: Vec<f64>) -> ExprId {
        m.constants.push(ConstantData { dtype: DType::F32, shape, data });
        m.add_expr(ExprKind::Constant((m.constants.len() - 1) as u32), Span::default())
    }

    #[test]
    fn per_channel_constants() {
        let mut m = Module::default();
        let column = constant(&mut m, vec![2, 1, 1], vec![2.0, 3.0]);
        assert_eq!(channel_values(&m, column, 4, 1, 2), Some(vec![2.0, 3.0]));
        // Along another axis, or broadcasting the other operand to more dimensions: no.
        assert_eq!(channel_values(&m, column, 4, 2, 2), None);
        assert_eq!(channel_values(&m, column, 2, 0, 2), None);
        let row = constant(&mut m, vec![2], vec![2.0, 3.0]);
        assert_eq!(channel_values(&m, row, 4, 1, 2), None);
        assert_eq!(channel_values(&m, row, 2, 1, 2), Some(vec![2.0, 3.0]));
        let one = constant(&mut m, vec![1, 1, 1], vec![4.0]);
        assert_eq!(channel_values(&m, one, 4, 1, 3), Some(vec![4.0; 3]));
        let lit = Literal { value: LiteralValue::Float(0.5), dtype: DType::F32 };
        let lit = m.add_expr(ExprKind::Literal(lit), Span::default());
        assert_eq!(channel_values(&m, lit, 4, 1, 2), Some(vec![0.5, 0.5]));
        let int = Literal { value: LiteralValue::Int(2), dtype: DType::I32 };
        let int = m.add_expr(ExprKind::Literal(int), Span::default());
        assert_eq!(channel_values(&m, int, 4, 1, 2), None);
    }

    #[test]
    fn channel_constants_are_laid_along_their_axis() {
        let mut m = Module::default();
        let e = channel_constant(&mut m, &[1.0, 2.0], DType::F32, 3, Span::default());
        let ExprKind::Constant(i) = m.expr(e).kind else { panic!("not a constant") };
        assert_eq!(m.constants[i as usize].shape, [2, 1, 1, 1]);
    }
}
