//! OpenCL C for kir's types, literals, indices and scalar expressions, and the helper
//! functions they call (integer division that never traps, NaN-exact float `max`/`min`).
//!
//! Values keep kir's exact integer semantics: arithmetic wraps because it is done in the
//! unsigned type of the same width (`uint` for 8–32 bits, `ulong` for 64) and truncated back;
//! `bool` is a `uchar` holding 0 or 1, in memory and in expressions.

use super::half;
use crate::JitError;
use relay_devices::{DType, DTypeCode, Scalar};
use relay_kir::{BinOp, Expr, Index, IndexOp, Kernel, Literal, UnOp};

/// The OpenCL C type of a storable dtype.
pub(super) fn c_type(dt: DType) -> Result<&'static str, JitError> {
    Ok(match (dt.code, dt.bits, dt.lanes) {
        (DTypeCode::Bool, _, 1) | (DTypeCode::UInt, 8, 1) => "uchar",
        (DTypeCode::Int, 8, 1) => "char",
        (DTypeCode::Int, 16, 1) => "short",
        (DTypeCode::Int, 32, 1) => "int",
        (DTypeCode::Int, 64, 1) => "long",
        (DTypeCode::UInt, 16, 1) => "ushort",
        (DTypeCode::UInt, 32, 1) => "uint",
        (DTypeCode::UInt, 64, 1) => "ulong",
        (DTypeCode::Float, 32, 1) => "float",
        (DTypeCode::Float, 64, 1) => "double",
        _ if dt.is_half_float() => half::buffer_type(dt),
        _ => return Err(JitError::Internal(format!("no OpenCL C type for {dt}"))),
    })
}

/// The unsigned type wrapping arithmetic on an integer dtype is done in.
fn wrap_type(dt: DType) -> &'static str {
    if dt.bits == 64 {
        "ulong"
    } else {
        "uint"
    }
}

/// The promoted type whose division helpers serve an integer dtype.
fn div_type(dt: DType) -> &'static str {
    match (dt.code, dt.bits == 64) {
        (DTypeCode::Int, false) => "int",
        (DTypeCode::Int, true) => "long",
        (_, false) => "uint",
        (_, true) => "ulong",
    }
}

/// Helper functions every program starts with (`double` ones only when `fp64`).
pub(super) fn prelude(fp64: bool) -> String {
    let mut s = String::new();
    if fp64 {
        s.push_str("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    }
    s.push_str(half::PRELUDE);
    s.push_str(
        "static inline long relay_idx_floordiv(long a, long b) { long q = a / b; return (a % b < 0) ? q - 1 : q; }\n\
         static inline long relay_idx_floormod(long a, long b) { long r = a % b; return r < 0 ? r + b : r; }\n",
    );
    for (s_ty, u_ty) in [("int", "uint"), ("long", "ulong")] {
        s.push_str(&format!(
            "static inline {s_ty} relay_div_{s_ty}({s_ty} a, {s_ty} b) {{ return b == 0 ? 0 : b == -1 ? ({s_ty})(({u_ty})0 - ({u_ty})a) : a / b; }}\n\
             static inline {s_ty} relay_rem_{s_ty}({s_ty} a, {s_ty} b) {{ return (b == 0 || b == -1) ? 0 : a % b; }}\n\
             static inline {s_ty} relay_floordiv_{s_ty}({s_ty} a, {s_ty} b) {{ {s_ty} r = relay_rem_{s_ty}(a, b); {s_ty} q = relay_div_{s_ty}(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q; }}\n\
             static inline {s_ty} relay_floormod_{s_ty}({s_ty} a, {s_ty} b) {{ {s_ty} r = relay_rem_{s_ty}(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }}\n\
             static inline {u_ty} relay_div_{u_ty}({u_ty} a, {u_ty} b) {{ return b == 0 ? 0 : a / b; }}\n\
             static inline {u_ty} relay_floordiv_{u_ty}({u_ty} a, {u_ty} b) {{ return b == 0 ? 0 : a / b; }}\n\
             static inline {u_ty} relay_floormod_{u_ty}({u_ty} a, {u_ty} b) {{ return b == 0 ? 0 : a % b; }}\n"
        ));
    }
    let floats: &[(&str, &str)] = if fp64 { &[("float", "f"), ("double", "")] } else { &[("float", "f")] };
    for (t, suffix) in floats {
        s.push_str(&format!(
            "static inline {t} relay_max_{t}({t} a, {t} b) {{ return a > b ? a : b; }}\n\
             static inline {t} relay_min_{t}({t} a, {t} b) {{ return a < b ? a : b; }}\n\
             static inline {t} relay_floormod_{t}({t} a, {t} b) {{ return a - floor(a / b) * b; }}\n\
             static inline {t} relay_sign_{t}({t} a) {{ return a > 0 ? 1.0{suffix} : a < 0 ? -1.0{suffix} : a; }}\n\
             static inline {t} relay_sigmoid_{t}({t} a) {{ return 1.0{suffix} / (1.0{suffix} + exp(-a)); }}\n"
        ));
    }
    s
}

/// OpenCL C for an `i64` index.
pub(super) fn index(i: &Index, k: &Kernel) -> Result<String, JitError> {
    Ok(match i {
        Index::Const(c) => long_literal(*c),
        Index::Var(v) => format!("v{}", v.0),
        Index::Sym(s) => format!("s{}", s.0),
        Index::Value(e) => format!("((long){})", expr(e, k)?.0),
        Index::Bin(op, a, b) => {
            let (a, b) = (index(a, k)?, index(b, k)?);
            match op {
                IndexOp::Add => format!("({a} + {b})"),
                IndexOp::Sub => format!("({a} - {b})"),
                IndexOp::Mul => format!("({a} * {b})"),
                IndexOp::FloorDiv => format!("relay_idx_floordiv({a}, {b})"),
                IndexOp::FloorMod => format!("relay_idx_floormod({a}, {b})"),
                IndexOp::Min => format!("min({a}, {b})"),
                IndexOp::Max => format!("max({a}, {b})"),
            }
        }
    })
}

fn long_literal(c: i64) -> String {
    if c == i64::MIN {
        "(-9223372036854775807L - 1L)".into()
    } else if c < 0 {
        format!("({c}L)")
    } else {
        format!("{c}L")
    }
}

fn literal(l: &Literal) -> Result<String, JitError> {
    let dt = l.dtype();
    let t = c_type(dt)?;
    Ok(match l.value() {
        Scalar::Bool(b) => format!("((uchar){})", u8::from(b)),
        Scalar::Int(v) => format!("(({t}){})", long_literal(v)),
        Scalar::UInt(v) => format!("(({t}){v}UL)"),
        Scalar::Float(v) if v.is_nan() => format!("(({t})NAN)"),
        Scalar::Float(v) if v.is_infinite() => format!("(({t}){}INFINITY)", if v < 0.0 { "-" } else { "" }),
        // `{:?}` prints the shortest text that reads back as the same value.
        Scalar::Float(v) if dt.bits == 32 => format!("({:?}f)", v as f32),
        // Spelled with its type so a program using `double` always names it (see `emit`).
        Scalar::Float(v) => format!("((double){v:?})"),
    })
}

/// OpenCL C for a scalar expression, and its dtype.
pub(super) fn expr(e: &Expr, k: &Kernel) -> Result<(String, DType), JitError> {
    let ill = || JitError::Internal("ill-typed expression reached the OpenCL backend".into());
    Ok(match e {
        Expr::Const(l) => (literal(l)?, l.dtype()),
        Expr::Load { buf, index: i } => {
            let dt = k.buffer(*buf).ok_or_else(ill)?.dtype;
            let (b, i) = (format!("b{}", buf.0), index(i, k)?);
            match dt.is_half_float() {
                true => (half::load(dt, &b, &i), dt),
                false => (format!("{b}[{i}]"), dt),
            }
        }
        Expr::Local(l) => (format!("l{}", l.0), k.locals.get(l.index()).ok_or_else(ill)?.dtype),
        Expr::Index(i) => (index(i, k)?, DType::I64),
        Expr::Select(c, a, b) => {
            let (c, (a, dt), (b, _)) = (expr(c, k)?.0, expr(a, k)?, expr(b, k)?);
            (format!("({c} ? {a} : {b})"), dt)
        }
        Expr::Cast(to, a) => {
            let (a, from) = expr(a, k)?;
            (cast(&a, from, *to)?, *to)
        }
        Expr::Reinterpret(to, a) => {
            // OpenCL C's `as_<type>` reinterprets between types of one size (§6.2.4.2); the
            // operand is cast to its own type first, as integer promotion may have widened it.
            let (a, from) = expr(a, k)?;
            (format!("as_{}(({}){a})", c_type(*to)?, c_type(from)?), *to)
        }
        Expr::Unary(op, a) => {
            let (a, dt) = expr(a, k)?;
            (unary(*op, &a, dt)?, dt)
        }
        Expr::Binary(op, a, b) => {
            let ((a, dt), (b, _)) = (expr(a, k)?, expr(b, k)?);
            let result = if op.is_comparison() { DType::BOOL } else { dt };
            (binary(*op, &a, &b, dt)?, result)
        }
    })
}

fn cast(a: &str, from: DType, to: DType) -> Result<String, JitError> {
    let t = c_type(to)?;
    Ok(if from == to || from.is_half_float() {
        // A half float's expression is already its `float` value (`half.rs`).
        a.to_string()
    } else if to.is_half_float() {
        half::round(to, a)
    } else if to == DType::BOOL {
        format!("((uchar)({a} != 0))")
    } else if from.is_float() && to.is_int() {
        // Rust's `as`: toward zero, saturating, NaN to 0 — OpenCL's `_sat_rtz` conversions.
        format!("convert_{t}_sat_rtz({a})")
    } else {
        format!("(({t}){a})")
    })
}

fn unary(op: UnOp, a: &str, dt: DType) -> Result<String, JitError> {
    let t = c_type(dt)?;
    let w = wrap_type(dt);
    Ok(match dt.code {
        DTypeCode::Bool => format!("((uchar)!{a})"),
        // kir holds no `bfloat16` (its verifier refuses half floats); `c_type` refused it above.
        DTypeCode::BFloat => return Err(JitError::Internal(format!("no OpenCL C type for {dt}"))),
        DTypeCode::Float => {
            let one = if dt.bits == 32 { "1.0f" } else { "1.0" };
            match op {
                UnOp::Neg => format!("(-{a})"),
                UnOp::Abs => format!("fabs({a})"),
                UnOp::Rsqrt => format!("({one} / sqrt({a}))"),
                UnOp::Sign => format!("relay_sign_{t}({a})"),
                UnOp::Sigmoid => format!("relay_sigmoid_{t}({a})"),
                UnOp::Not => return Err(JitError::Internal("`not` of a float".into())),
                _ => format!("{}({a})", op.name()),
            }
        }
        DTypeCode::Int | DTypeCode::UInt => match op {
            UnOp::Neg => format!("(({t})(({w})0 - ({w}){a}))"),
            UnOp::Abs if dt.code == DTypeCode::UInt => a.to_string(),
            UnOp::Abs => format!("(({t})({a} < 0 ? ({w})0 - ({w}){a} : ({w}){a}))"),
            UnOp::Not => format!("(({t})~{a})"),
            UnOp::Sign if dt.code == DTypeCode::UInt => format!("(({t})({a} != 0))"),
            UnOp::Sign => format!("(({t})(({a} > 0) - ({a} < 0)))"),
            _ => return Err(JitError::Internal(format!("`{}` of an integer", op.name()))),
        },
    })
}

fn binary(op: BinOp, a: &str, b: &str, dt: DType) -> Result<String, JitError> {
    let t = c_type(dt)?;
    if let Some(cmp) = match op {
        BinOp::Eq => Some("=="),
        BinOp::Ne => Some("!="),
        BinOp::Lt => Some("<"),
        BinOp::Le => Some("<="),
        BinOp::Gt => Some(">"),
        BinOp::Ge => Some(">="),
        _ => None,
    } {
        return Ok(format!("((uchar)({a} {cmp} {b}))"));
    }
    let arith = |sym: &str| match dt.code {
        DTypeCode::Float => format!("({a} {sym} {b})"),
        _ => {
            let w = wrap_type(dt);
            format!("(({t})(({w}){a} {sym} ({w}){b}))")
        }
    };
    Ok(match (op, dt.code) {
        (BinOp::Add, _) => arith("+"),
        (BinOp::Sub, _) => arith("-"),
        (BinOp::Mul, _) => arith("*"),
        (BinOp::And, _) => format!("(({t})({a} & {b}))"),
        (BinOp::Or, _) => format!("(({t})({a} | {b}))"),
        (BinOp::Xor, _) => format!("(({t})({a} ^ {b}))"),
        // The amount modulo the dtype's width (`relay_devices::arith`); a left shift goes
        // through the unsigned wide type so that shifting into the sign bit is defined.
        (BinOp::Shl, DTypeCode::Int | DTypeCode::UInt) => {
            let w = wrap_type(dt);
            format!("(({t})(({w}){a} << ({b} & {})))", dt.bits - 1)
        }
        (BinOp::Shr, DTypeCode::Int | DTypeCode::UInt) => format!("(({t})({a} >> ({b} & {})))", dt.bits - 1),
        (BinOp::Div, DTypeCode::Float) => format!("({a} / {b})"),
        (BinOp::FloorDiv, DTypeCode::Float) => format!("floor({a} / {b})"),
        (BinOp::Pow, DTypeCode::Float) => format!("pow({a}, {b})"),
        (BinOp::FloorMod | BinOp::Max | BinOp::Min, DTypeCode::Float) => {
            format!("relay_{}_{t}({a}, {b})", op_helper(op))
        }
        (BinOp::Max, _) => format!("max({a}, {b})"),
        (BinOp::Min, _) => format!("min({a}, {b})"),
        (BinOp::Div | BinOp::FloorDiv | BinOp::FloorMod, _) => {
            let d = div_type(dt);
            format!("(({t})relay_{}_{d}(({d}){a}, ({d}){b}))", op_helper(op))
        }
        _ => return Err(JitError::Internal(format!("`{}` on {dt}", op.name()))),
    })
}

fn op_helper(op: BinOp) -> &'static str {
    match op {
        BinOp::Div => "div",
        BinOp::FloorDiv => "floordiv",
        BinOp::FloorMod => "floormod",
        BinOp::Max => "max",
        _ => "min",
    }
}
