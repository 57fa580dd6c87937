//! Elementwise, broadcast and reduction operators.

use crate::op;
use crate::relations::*;
use relay_compiler::op::OpDef;

/// Unary elementwise operators (`OpPattern::ElemWise`).
pub const ELEMWISE: &[OpDef] = &[
    op!("negative", 1, identity_rel, ElemWise, "-x"),
    op!("abs", 1, identity_rel, ElemWise, "|x|"),
    op!("exp", 1, float_unary_rel, ElemWise, "e^x"),
    op!("log", 1, float_unary_rel, ElemWise, "natural logarithm"),
    op!("sqrt", 1, float_unary_rel, ElemWise, "square root"),
    op!("rsqrt", 1, float_unary_rel, ElemWise, "1 / sqrt(x)"),
    op!("tanh", 1, float_unary_rel, ElemWise, "hyperbolic tangent"),
    op!("sigmoid", 1, float_unary_rel, ElemWise, "1 / (1 + e^-x)"),
    op!("erf", 1, float_unary_rel, ElemWise, "Gauss error function"),
    op!("floor", 1, float_unary_rel, ElemWise, "round down"),
    op!("ceil", 1, float_unary_rel, ElemWise, "round up"),
    op!("round", 1, float_unary_rel, ElemWise, "round half away from zero"),
    op!("sign", 1, identity_rel, ElemWise, "-1, 0 or 1"),
    op!("nn.relu", 1, identity_rel, ElemWise, "max(x, 0)"),
    op!("nn.leaky_relu", 1, identity_rel, ElemWise, "x if x > 0 else alpha * x"),
    op!("clip", 1, identity_rel, ElemWise, "min(max(x, a_min), a_max)"),
    op!("cast", 1, cast_rel, ElemWise, "convert to `dtype`"),
    op!("copy", 1, identity_rel, ElemWise, "a copy of x"),
    op!("logical_not", 1, logical_not_rel, ElemWise, "not x (bool)"),
    op!("zeros_like", 1, identity_rel, ElemWise, "zeros of x's type"),
    op!("ones_like", 1, identity_rel, ElemWise, "ones of x's type"),
];

/// Binary operators with NumPy broadcasting (`OpPattern::Broadcast`).
pub const BROADCAST: &[OpDef] = &[
    op!("add", 2, broadcast_rel, Broadcast, "a + b"),
    op!("subtract", 2, broadcast_rel, Broadcast, "a - b"),
    op!("multiply", 2, broadcast_rel, Broadcast, "a * b"),
    op!("divide", 2, broadcast_rel, Broadcast, "a / b"),
    op!("power", 2, broadcast_rel, Broadcast, "a ^ b"),
    op!("maximum", 2, broadcast_rel, Broadcast, "max(a, b)"),
    op!("minimum", 2, broadcast_rel, Broadcast, "min(a, b)"),
    op!("floor_divide", 2, broadcast_rel, Broadcast, "floor(a / b)"),
    op!("floor_mod", 2, broadcast_rel, Broadcast, "a - floor(a / b) * b"),
    op!("equal", 2, broadcast_bool_rel, Broadcast, "a == b"),
    op!("not_equal", 2, broadcast_bool_rel, Broadcast, "a != b"),
    op!("less", 2, broadcast_bool_rel, Broadcast, "a < b"),
    op!("less_equal", 2, broadcast_bool_rel, Broadcast, "a <= b"),
    op!("greater", 2, broadcast_bool_rel, Broadcast, "a > b"),
    op!("greater_equal", 2, broadcast_bool_rel, Broadcast, "a >= b"),
    op!("logical_and", 2, logical_rel, Broadcast, "a and b (bool)"),
    op!("logical_or", 2, logical_rel, Broadcast, "a or b (bool)"),
    op!("where", 3, where_rel, Broadcast, "cond ? x : y, broadcast"),
];

/// Reductions (`OpPattern::CommReduce`).
pub const REDUCE: &[OpDef] = &[
    op!("sum", 1, reduce_rel, CommReduce, "sum over axes"),
    op!("mean", 1, reduce_rel, CommReduce, "mean over axes"),
    op!("max", 1, reduce_rel, CommReduce, "maximum over axes"),
    op!("min", 1, reduce_rel, CommReduce, "minimum over axes"),
    op!("prod", 1, reduce_rel, CommReduce, "product over axes"),
    op!("argmax", 1, arg_reduce_rel, CommReduce, "index of the maximum (int32)"),
    op!("argmin", 1, arg_reduce_rel, CommReduce, "index of the minimum (int32)"),
];
