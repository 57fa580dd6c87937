//! Scalar arithmetic, defined once: the binary and unary operators ([`BinOp`], [`UnOp`]) and
//! their meaning on [`Scalar`] values of a [`DType`] ([`eval_binary`], [`eval_unary`],
//! [`cast`]). kir's interpreter (the oracle the JIT and OpenCL backends are tested against),
//! the VM's unboxed scalar instructions and the reference kernels' integer rules all evaluate
//! this table; it lives here, below the VM and the compiler, so that each can.
//!
//! Integer rules (TVM's, made total, because vectorised JIT code cannot trap):
//! - `+ - *` and negation wrap at the dtype's width; `abs(MIN) == MIN`.
//! - `/` truncates toward zero, `floordiv`/`floormod` round toward negative infinity (the
//!   remainder takes the divisor's sign); `i32::MIN / -1` wraps to `i32::MIN`.
//! - **Dividing by zero gives 0** for `/`, `floordiv` and `floormod`, as kir, the JIT and the
//!   OpenCL code generator compute it; the VM and the reference kernels agree, so an integer
//!   program gives the same answer on every path instead of trapping on some.
//! - `and`/`or`/`xor`/`not` are logical on `bool` and bitwise on integers; `pow` is for
//!   floats only.
//! - `shl`/`shr` take the shift amount modulo the dtype's bit width (`x << 9 == x << 1` for
//!   `int8`, `x << -1 == x << 7`); `shr` is arithmetic on signed dtypes, logical on unsigned.
//!
//! Floats follow IEEE in the operand's precision (`float32` in `f32`), except that
//! `exp log tanh sigmoid erf`, the trigonometric `sin cos tan asin acos atan` and the
//! hyperbolic `sinh cosh` of a `float32` are computed in `f64` and rounded once, so the
//! oracle is as accurate as `f32` allows, and that `float16` is computed in `float32` and
//! rounded to `float16` once per operation (TVM's CPU target does the same). `max`/`min` are compare-and-select (`a > b ? a : b`),
//! as the vector instructions compute them.

use crate::{DType, DTypeCode, Element, Scalar};

/// A binary scalar operator. Comparisons give `bool`; the rest a value of the operands' dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BinOp {
    /// `a + b` (integers wrap).
    Add,
    /// `a - b` (integers wrap).
    Sub,
    /// `a * b` (integers wrap).
    Mul,
    /// `a / b` (integers truncate; `x / 0 == 0`).
    Div,
    /// `floor(a / b)` (`x floordiv 0 == 0`).
    FloorDiv,
    /// `a - floor(a / b) * b`, with the sign of `b` (`x floormod 0 == 0`).
    FloorMod,
    /// Maximum (`a > b ? a : b` for floats).
    Max,
    /// Minimum (`a < b ? a : b` for floats).
    Min,
    /// `a` to the power `b` (floats).
    Pow,
    /// `a == b`.
    Eq,
    /// `a != b` (true when either float is NaN).
    Ne,
    /// `a < b`.
    Lt,
    /// `a <= b`.
    Le,
    /// `a > b`.
    Gt,
    /// `a >= b`.
    Ge,
    /// Logical and (bool) or bitwise and (integers).
    And,
    /// Logical or (bool) or bitwise or (integers).
    Or,
    /// Logical exclusive or (bool, `a != b`) or bitwise exclusive or (integers).
    Xor,
    /// `a << b` (integers): the shift amount is taken modulo the dtype's bit width, as
    /// Cranelift's `ishl`, OpenCL C's `<<` and Rust's `wrapping_shl` take it (C leaves a shift
    /// by the width or more undefined; made total like division by zero).
    Shl,
    /// `a >> b` (integers): arithmetic for signed dtypes, logical for unsigned ones; the shift
    /// amount is taken modulo the dtype's bit width, as for [`BinOp::Shl`].
    Shr,
}

/// A unary scalar operator; the result has the operand's dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum UnOp {
    /// `-a` (wrapping for integers).
    Neg,
    /// Logical (bool) or bitwise (integers) not.
    Not,
    /// `|a|` (wrapping for integers).
    Abs,
    /// `e^a` (float32).
    Exp,
    /// Natural logarithm (float32).
    Log,
    /// Square root.
    Sqrt,
    /// `1 / sqrt(a)`.
    Rsqrt,
    /// Hyperbolic tangent (float32).
    Tanh,
    /// `1 / (1 + e^-a)` (float32).
    Sigmoid,
    /// The error function (float32).
    Erf,
    /// Round toward -inf.
    Floor,
    /// Round toward +inf.
    Ceil,
    /// Round to nearest, ties away from zero.
    Round,
    /// -1, 0 or 1 (floats: `sign(±0) = ±0`, `sign(NaN) = NaN`).
    Sign,
    /// Sine (float32).
    Sin,
    /// Cosine (float32).
    Cos,
    /// Tangent (float32).
    Tan,
    /// Arcsine, in `[-π/2, π/2]`; NaN outside `[-1, 1]` (float32).
    Asin,
    /// Arccosine, in `[0, π]`; NaN outside `[-1, 1]` (float32).
    Acos,
    /// Arctangent, in `[-π/2, π/2]` (float32).
    Atan,
    /// Hyperbolic sine (float32).
    Sinh,
    /// Hyperbolic cosine (float32).
    Cosh,
}

impl BinOp {
    /// Every operator, in declaration order (the order of their encodings).
    pub const ALL: [BinOp; 20] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::FloorDiv,
        BinOp::FloorMod,
        BinOp::Max,
        BinOp::Min,
        BinOp::Pow,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shl,
        BinOp::Shr,
    ];

    /// The operator's mnemonic (`add`, `floordiv`, `lt`), as the disassembler prints it.
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::FloorDiv => "floordiv",
            BinOp::FloorMod => "floormod",
            BinOp::Max => "max",
            BinOp::Min => "min",
            BinOp::Pow => "pow",
            BinOp::Eq => "eq",
            BinOp::Ne => "ne",
            BinOp::Lt => "lt",
            BinOp::Le => "le",
            BinOp::Gt => "gt",
            BinOp::Ge => "ge",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::Shl => "shl",
            BinOp::Shr => "shr",
        }
    }

    /// The infix symbol C-like syntax writes the operator with (`+`, `<=`, `&&`), or its
    /// [`name`](BinOp::name) where it is written as a call (`max(a, b)`).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::Xor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            _ => self.name(),
        }
    }

    /// Whether the result is `bool` whatever the operand dtype.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
    }
}

impl UnOp {
    /// Every operator, in declaration order (the order of their encodings).
    pub const ALL: [UnOp; 22] = [
        UnOp::Neg,
        UnOp::Not,
        UnOp::Abs,
        UnOp::Exp,
        UnOp::Log,
        UnOp::Sqrt,
        UnOp::Rsqrt,
        UnOp::Tanh,
        UnOp::Sigmoid,
        UnOp::Erf,
        UnOp::Floor,
        UnOp::Ceil,
        UnOp::Round,
        UnOp::Sign,
        UnOp::Sin,
        UnOp::Cos,
        UnOp::Tan,
        UnOp::Asin,
        UnOp::Acos,
        UnOp::Atan,
        UnOp::Sinh,
        UnOp::Cosh,
    ];

    /// The operator's name (`neg`, `exp`), as printers write it.
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Neg => "neg",
            UnOp::Not => "not",
            UnOp::Abs => "abs",
            UnOp::Exp => "exp",
            UnOp::Log => "log",
            UnOp::Sqrt => "sqrt",
            UnOp::Rsqrt => "rsqrt",
            UnOp::Tanh => "tanh",
            UnOp::Sigmoid => "sigmoid",
            UnOp::Erf => "erf",
            UnOp::Floor => "floor",
            UnOp::Ceil => "ceil",
            UnOp::Round => "round",
            UnOp::Sign => "sign",
            UnOp::Sin => "sin",
            UnOp::Cos => "cos",
            UnOp::Tan => "tan",
            UnOp::Asin => "asin",
            UnOp::Acos => "acos",
            UnOp::Atan => "atan",
            UnOp::Sinh => "sinh",
            UnOp::Cosh => "cosh",
        }
    }

    /// Whether the op exists only for `float32` (approximated by backends).
    pub fn is_f32_only(self) -> bool {
        matches!(
            self,
            UnOp::Exp
                | UnOp::Log
                | UnOp::Tanh
                | UnOp::Sigmoid
                | UnOp::Erf
                | UnOp::Sin
                | UnOp::Cos
                | UnOp::Tan
                | UnOp::Asin
                | UnOp::Acos
                | UnOp::Atan
                | UnOp::Sinh
                | UnOp::Cosh
        )
    }
}

/// `v` converted to `to` with Rust `as` semantics (ints wrap, float→int saturates and maps
/// NaN to 0, anything non-zero is `true`), in the normal form of `to`: `Int` for signed
/// ints, `UInt` for unsigned ones, `Float` holding an exactly representable value for
/// `float16`/`bfloat16`/`float32`, `Bool` for `bool`.
pub fn cast(v: Scalar, to: DType) -> Scalar {
    match (to.code, to.bits) {
        (DTypeCode::Bool, _) => Scalar::Bool(bool::from_scalar(v)),
        (DTypeCode::Int, 8) => Scalar::Int(i64::from(i8::from_scalar(v))),
        (DTypeCode::Int, 16) => Scalar::Int(i64::from(i16::from_scalar(v))),
        (DTypeCode::Int, 32) => Scalar::Int(i64::from(i32::from_scalar(v))),
        (DTypeCode::Int, _) => Scalar::Int(i64::from_scalar(v)),
        (DTypeCode::UInt, 8) => Scalar::UInt(u64::from(u8::from_scalar(v))),
        (DTypeCode::UInt, 16) => Scalar::UInt(u64::from(u16::from_scalar(v))),
        (DTypeCode::UInt, 32) => Scalar::UInt(u64::from(u32::from_scalar(v))),
        (DTypeCode::UInt, _) => Scalar::UInt(u64::from_scalar(v)),
        (DTypeCode::Float, 16) => half::f16::from_scalar(v).to_scalar(),
        (DTypeCode::BFloat, _) => half::bf16::from_scalar(v).to_scalar(),
        (DTypeCode::Float, 32) => Scalar::Float(f64::from(f32::from_scalar(v))),
        (DTypeCode::Float, _) => Scalar::Float(f64::from_scalar(v)),
    }
}

/// `op(a, b)` for operands of `dtype`; `None` if the op is not defined for `dtype`.
/// Comparisons return `Bool`; everything else a value of `dtype` in its normal form.
pub fn eval_binary(op: BinOp, dtype: DType, a: Scalar, b: Scalar) -> Option<Scalar> {
    match dtype.code {
        // Half floats compute in `float32`; comparisons answer `bool`, values round once.
        _ if dtype.is_half_float() => eval_binary(op, DType::F32, a, b).map(|r| norm(r, dtype)),
        DTypeCode::Float if dtype.bits == 32 => {
            float_binary_f32(op, f32::from_scalar(a), f32::from_scalar(b))
        }
        DTypeCode::Float => float_binary_f64(op, f64::from_scalar(a), f64::from_scalar(b)),
        DTypeCode::Int => {
            int_binary(op, dtype.bits, i64::from_scalar(a), i64::from_scalar(b)).map(|r| norm(r, dtype))
        }
        DTypeCode::UInt => {
            uint_binary(op, dtype.bits, u64::from_scalar(a), u64::from_scalar(b)).map(|r| norm(r, dtype))
        }
        DTypeCode::Bool => bool_binary(op, bool::from_scalar(a), bool::from_scalar(b)),
        // A bfloat of any width but 16 has no arithmetic (nor storage).
        DTypeCode::BFloat => None,
    }
}

/// `op(a)` for an operand of `dtype`; `None` if the op is not defined for `dtype`.
pub fn eval_unary(op: UnOp, dtype: DType, a: Scalar) -> Option<Scalar> {
    match dtype.code {
        _ if dtype.is_half_float() => eval_unary(op, DType::F32, a).map(|r| cast(r, dtype)),
        DTypeCode::Float if dtype.bits == 32 => f32_unary(op, f32::from_scalar(a)),
        DTypeCode::Float => f64_unary(op, f64::from_scalar(a)),
        DTypeCode::Int => {
            let a = i64::from_scalar(a);
            let r = match op {
                UnOp::Neg => a.wrapping_neg(),
                UnOp::Abs => a.wrapping_abs(),
                UnOp::Not => !a,
                UnOp::Sign => a.signum(),
                _ => return None,
            };
            Some(cast(Scalar::Int(r), dtype))
        }
        DTypeCode::UInt => {
            let a = u64::from_scalar(a);
            let r = match op {
                UnOp::Neg => a.wrapping_neg(),
                UnOp::Abs => a,
                UnOp::Not => !a,
                UnOp::Sign => u64::from(a != 0),
                _ => return None,
            };
            Some(cast(Scalar::UInt(r), dtype))
        }
        DTypeCode::Bool => match op {
            UnOp::Not => Some(Scalar::Bool(!bool::from_scalar(a))),
            _ => None,
        },
        DTypeCode::BFloat => None,
    }
}

/// `op(a, b)` on elements of type `T` (an integer or float type) through [`eval_binary`]:
/// how typed code (the reference kernels) applies the table's rules; `None` where the op is
/// not defined for `T`.
pub fn eval_binary_as<T: Element>(op: BinOp, a: T, b: T) -> Option<T> {
    eval_binary(op, T::DTYPE, a.to_scalar(), b.to_scalar()).map(T::from_scalar)
}

/// Comparison results stay `Bool`; arithmetic results wrap to the dtype's width.
fn norm(r: Scalar, dtype: DType) -> Scalar {
    match r {
        Scalar::Bool(_) => r,
        _ => cast(r, dtype),
    }
}

/// Comparison `op` on two values of one element type (NaN compares false except with `!=`);
/// `None` for an operator that is not a comparison. Public for fast paths on typed values.
#[inline(always)]
pub fn compare<T: PartialOrd>(op: BinOp, a: T, b: T) -> Option<bool> {
    Some(match op {
        BinOp::Eq => a == b,
        BinOp::Ne => a != b,
        BinOp::Lt => a < b,
        BinOp::Le => a <= b,
        BinOp::Gt => a > b,
        BinOp::Ge => a >= b,
        _ => return None,
    })
}

macro_rules! float_binary {
    ($name:ident, $t:ty) => {
        fn $name(op: BinOp, a: $t, b: $t) -> Option<Scalar> {
            let r: $t = match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div => a / b,
                BinOp::FloorDiv => (a / b).floor(),
                BinOp::FloorMod => a - (a / b).floor() * b,
                BinOp::Max => {
                    if a > b {
                        a
                    } else {
                        b
                    }
                }
                BinOp::Min => {
                    if a < b {
                        a
                    } else {
                        b
                    }
                }
                BinOp::Pow => a.powf(b),
                BinOp::And | BinOp::Or | BinOp::Xor | BinOp::Shl | BinOp::Shr => return None,
                _ => return compare(op, a, b).map(Scalar::Bool),
            };
            Some(Scalar::Float(f64::from(r)))
        }
    };
}

float_binary!(float_binary_f32, f32);
float_binary!(float_binary_f64, f64);

/// The shift amount `b` of a `bits`-wide dtype, taken modulo the width (a power of two).
fn shift_amount(bits: u8, b: u64) -> u32 {
    // Lossless: the mask keeps at most 6 bits.
    (b & (u64::from(bits) - 1)) as u32
}

/// Signed integer operations on values sign-extended to 64 bits; the caller wraps the
/// result to the dtype's width, `bits` (exact for every narrower width, `MIN / -1` included;
/// a right shift of the sign-extended value is the narrow arithmetic shift).
fn int_binary(op: BinOp, bits: u8, a: i64, b: i64) -> Option<Scalar> {
    let r = match op {
        BinOp::Add => a.wrapping_add(b),
        BinOp::Sub => a.wrapping_sub(b),
        BinOp::Mul => a.wrapping_mul(b),
        BinOp::Div | BinOp::FloorDiv | BinOp::FloorMod if b == 0 => 0,
        BinOp::Div => a.wrapping_div(b),
        BinOp::FloorDiv => {
            let (q, r) = (a.wrapping_div(b), a.wrapping_rem(b));
            if r != 0 && (r < 0) != (b < 0) {
                q - 1
            } else {
                q
            }
        }
        BinOp::FloorMod => {
            let r = a.wrapping_rem(b);
            if r != 0 && (r < 0) != (b < 0) {
                r + b
            } else {
                r
            }
        }
        BinOp::Max => a.max(b),
        BinOp::Min => a.min(b),
        BinOp::And => a & b,
        BinOp::Or => a | b,
        BinOp::Xor => a ^ b,
        BinOp::Shl => a.wrapping_shl(shift_amount(bits, b as u64)),
        BinOp::Shr => a.wrapping_shr(shift_amount(bits, b as u64)),
        BinOp::Pow => return None,
        _ => return compare(op, a, b).map(Scalar::Bool),
    };
    Some(Scalar::Int(r))
}

/// Unsigned integer operations on zero-extended values; the caller wraps the result to the
/// dtype's width, `bits`.
fn uint_binary(op: BinOp, bits: u8, a: u64, b: u64) -> Option<Scalar> {
    let r = match op {
        BinOp::Add => a.wrapping_add(b),
        BinOp::Sub => a.wrapping_sub(b),
        BinOp::Mul => a.wrapping_mul(b),
        BinOp::Div | BinOp::FloorDiv | BinOp::FloorMod if b == 0 => 0,
        BinOp::Div | BinOp::FloorDiv => a / b,
        BinOp::FloorMod => a % b,
        BinOp::Max => a.max(b),
        BinOp::Min => a.min(b),
        BinOp::And => a & b,
        BinOp::Or => a | b,
        BinOp::Xor => a ^ b,
        BinOp::Shl => a.wrapping_shl(shift_amount(bits, b)),
        BinOp::Shr => a.wrapping_shr(shift_amount(bits, b)),
        BinOp::Pow => return None,
        _ => return compare(op, a, b).map(Scalar::Bool),
    };
    Some(Scalar::UInt(r))
}

/// `false < true`, as in C and Rust.
fn bool_binary(op: BinOp, a: bool, b: bool) -> Option<Scalar> {
    let r = match op {
        BinOp::And => a && b,
        BinOp::Or => a || b,
        BinOp::Xor => a != b,
        BinOp::Shl | BinOp::Shr => return None,
        _ => return compare(op, a, b).map(Scalar::Bool),
    };
    Some(Scalar::Bool(r))
}

macro_rules! float_common_unary {
    ($op:expr, $a:expr, $t:ty) => {
        match $op {
            UnOp::Neg => Some(-$a),
            UnOp::Abs => Some($a.abs()),
            UnOp::Sqrt => Some($a.sqrt()),
            UnOp::Rsqrt => Some(1.0 / $a.sqrt()),
            UnOp::Floor => Some($a.floor()),
            UnOp::Ceil => Some($a.ceil()),
            UnOp::Round => Some($a.round()),
            UnOp::Sign if $a > 0.0 => Some(1.0),
            UnOp::Sign if $a < 0.0 => Some(-1.0),
            UnOp::Sign => Some($a),
            _ => None::<$t>,
        }
    };
}

fn f32_unary(op: UnOp, a: f32) -> Option<Scalar> {
    let wide = f64::from(a);
    let r = match op {
        UnOp::Exp => wide.exp() as f32,
        UnOp::Log => wide.ln() as f32,
        UnOp::Tanh => wide.tanh() as f32,
        UnOp::Sigmoid => (1.0 / (1.0 + (-wide).exp())) as f32,
        UnOp::Erf => libm::erf(wide) as f32,
        UnOp::Sin => wide.sin() as f32,
        UnOp::Cos => wide.cos() as f32,
        UnOp::Tan => wide.tan() as f32,
        UnOp::Asin => wide.asin() as f32,
        UnOp::Acos => wide.acos() as f32,
        UnOp::Atan => wide.atan() as f32,
        UnOp::Sinh => wide.sinh() as f32,
        UnOp::Cosh => wide.cosh() as f32,
        UnOp::Not => return None,
        _ => float_common_unary!(op, a, f32)?,
    };
    Some(Scalar::Float(f64::from(r)))
}

fn f64_unary(op: UnOp, a: f64) -> Option<Scalar> {
    float_common_unary!(op, a, f64).map(Scalar::Float)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(op: BinOp, dtype: DType, a: i64, b: i64) -> Option<Scalar> {
        eval_binary(op, dtype, Scalar::Int(a), Scalar::Int(b))
    }

    #[test]
    fn integer_division_is_total_and_floors() {
        assert_eq!(int(BinOp::Div, DType::I32, -7, 2), Some(Scalar::Int(-3)));
        assert_eq!(int(BinOp::FloorDiv, DType::I32, -7, 2), Some(Scalar::Int(-4)));
        assert_eq!(int(BinOp::FloorMod, DType::I32, -7, 2), Some(Scalar::Int(1)));
        assert_eq!(int(BinOp::FloorMod, DType::I32, 7, -2), Some(Scalar::Int(-1)));
        assert_eq!(int(BinOp::Div, DType::I32, 5, 0), Some(Scalar::Int(0)));
        assert_eq!(int(BinOp::FloorMod, DType::I64, 5, 0), Some(Scalar::Int(0)));
        assert_eq!(int(BinOp::Div, DType::I32, i32::MIN.into(), -1), Some(Scalar::Int(i32::MIN.into())));
        assert_eq!(int(BinOp::FloorDiv, DType::I64, i64::MIN, -1), Some(Scalar::Int(i64::MIN)));
        let u = |op, a: u64, b: u64| eval_binary(op, DType::U8, Scalar::UInt(a), Scalar::UInt(b));
        assert_eq!(u(BinOp::FloorMod, 7, 0), Some(Scalar::UInt(0)));
        assert_eq!(eval_binary_as(BinOp::FloorDiv, -7i8, 2), Some(-4));
        assert_eq!(eval_binary_as(BinOp::Pow, 2i32, 3), None);
    }

    #[test]
    fn arithmetic_wraps_at_the_dtype_width() {
        assert_eq!(int(BinOp::Add, DType::I8, 127, 1), Some(Scalar::Int(-128)));
        assert_eq!(int(BinOp::Mul, DType::I32, 1 << 20, 1 << 20), Some(Scalar::Int(0)));
        let u = eval_binary(BinOp::Sub, DType::U8, Scalar::UInt(0), Scalar::UInt(1));
        assert_eq!(u, Some(Scalar::UInt(255)));
        assert_eq!(
            eval_unary(UnOp::Neg, DType::I32, Scalar::Int(i32::MIN.into())),
            Some(Scalar::Int(i32::MIN.into()))
        );
        assert_eq!(int(BinOp::Lt, DType::I32, -1, 0), Some(Scalar::Bool(true)));
    }

    #[test]
    fn shifts_take_the_amount_modulo_the_width() {
        assert_eq!(int(BinOp::Shl, DType::I8, 1, 7), Some(Scalar::Int(-128)));
        assert_eq!(int(BinOp::Shl, DType::I8, 1, 9), Some(Scalar::Int(2)));
        assert_eq!(int(BinOp::Shl, DType::I8, 1, -1), Some(Scalar::Int(-128)));
        assert_eq!(int(BinOp::Shr, DType::I8, -128, 7), Some(Scalar::Int(-1)));
        assert_eq!(int(BinOp::Shr, DType::I32, -8, 33), Some(Scalar::Int(-4)));
        assert_eq!(int(BinOp::Shl, DType::I64, 3, 64), Some(Scalar::Int(3)));
        let u = |op, a: u64, b: u64| eval_binary(op, DType::U8, Scalar::UInt(a), Scalar::UInt(b));
        assert_eq!(u(BinOp::Shr, 0x80, 7), Some(Scalar::UInt(1)));
        assert_eq!(u(BinOp::Shl, 0x81, 1), Some(Scalar::UInt(2)));
        assert_eq!(u(BinOp::Xor, 0xf0, 0xff), Some(Scalar::UInt(0x0f)));
        // Each agrees with Rust's wrapping shifts of the narrow type.
        for a in [-128i8, -3, 0, 5, 127] {
            for b in [-9i8, -1, 0, 1, 7, 8, 100] {
                assert_eq!(eval_binary_as(BinOp::Shl, a, b), Some(a.wrapping_shl(b as u32)));
                assert_eq!(eval_binary_as(BinOp::Shr, a, b), Some(a.wrapping_shr(b as u32)));
            }
        }
        assert_eq!(eval_binary_as(BinOp::Shl, 1.0f32, 1.0), None);
    }

    #[test]
    fn bools_are_logical_and_ordered() {
        let b = |op, x, y| eval_binary(op, DType::BOOL, Scalar::Bool(x), Scalar::Bool(y));
        assert_eq!(b(BinOp::Lt, false, true), Some(Scalar::Bool(true)));
        assert_eq!(b(BinOp::Or, false, true), Some(Scalar::Bool(true)));
        assert_eq!(b(BinOp::Xor, true, true), Some(Scalar::Bool(false)));
        assert_eq!(b(BinOp::Shl, true, true), None);
        assert_eq!(b(BinOp::Add, true, true), None);
    }

    #[test]
    fn float16_computes_in_float32_and_rounds_once() {
        let h = |op, a: f64, b: f64| eval_binary(op, DType::F16, Scalar::Float(a), Scalar::Float(b));
        // 2048 + 1 is exact in float32 and ties to even (2048) in float16.
        assert_eq!(h(BinOp::Add, 2048.0, 1.0), Some(Scalar::Float(2048.0)));
        assert_eq!(h(BinOp::Mul, 300.0, 300.0), Some(Scalar::Float(f64::INFINITY)));
        assert_eq!(h(BinOp::Lt, 1.0, 2.0), Some(Scalar::Bool(true)));
        let e = eval_unary(UnOp::Exp, DType::F16, Scalar::Float(1.0));
        assert_eq!(e, Some(Scalar::Float(half::f16::from_f64(std::f64::consts::E).to_f64())));
        assert_eq!(cast(Scalar::Float(0.1), DType::F16), Scalar::Float(0.0999755859375));
    }

    #[test]
    fn bfloat16_computes_in_float32_and_rounds_once() {
        let h = |op, a: f64, b: f64| eval_binary(op, DType::BF16, Scalar::Float(a), Scalar::Float(b));
        // 256 + 1 is exact in float32 and ties to even (256) in bfloat16's 8-bit significand;
        // 256 + 3 ties up to 260.
        assert_eq!(h(BinOp::Add, 256.0, 1.0), Some(Scalar::Float(256.0)));
        assert_eq!(h(BinOp::Add, 256.0, 3.0), Some(Scalar::Float(260.0)));
        // bfloat16 has float32's range: no overflow where float16 would.
        assert_eq!(h(BinOp::Mul, 300.0, 300.0), Some(Scalar::Float(90112.0)));
        assert_eq!(h(BinOp::Ge, 1.0, 2.0), Some(Scalar::Bool(false)));
        let e = eval_unary(UnOp::Exp, DType::BF16, Scalar::Float(1.0));
        assert_eq!(e, Some(Scalar::Float(half::bf16::from_f64(std::f64::consts::E).to_f64())));
        assert_eq!(cast(Scalar::Float(0.1), DType::BF16), Scalar::Float(0.10009765625));
    }

    #[test]
    fn float_max_min_follow_compare_and_select() {
        let f = |op, a: f32, b: f32| {
            eval_binary(op, DType::F32, Scalar::Float(a.into()), Scalar::Float(b.into()))
        };
        assert_eq!(f(BinOp::Max, f32::NAN, 1.0), Some(Scalar::Float(1.0)));
        assert!(matches!(f(BinOp::Max, 1.0, f32::NAN), Some(Scalar::Float(v)) if v.is_nan()));
        assert_eq!(f(BinOp::Ne, f32::NAN, f32::NAN), Some(Scalar::Bool(true)));
        assert_eq!(f(BinOp::FloorMod, -1.0, 3.0), Some(Scalar::Float(2.0)));
        assert_eq!(f(BinOp::And, 1.0, 1.0), None);
    }

    #[test]
    fn unary_ops_and_casts() {
        let u = |op, a: f32| eval_unary(op, DType::F32, Scalar::Float(a.into()));
        assert_eq!(u(UnOp::Round, -2.5), Some(Scalar::Float(-3.0)));
        assert_eq!(u(UnOp::Sign, -0.0), Some(Scalar::Float(-0.0)));
        assert_eq!(u(UnOp::Sigmoid, 0.0), Some(Scalar::Float(0.5)));
        assert_eq!(eval_unary(UnOp::Exp, DType::F64, Scalar::Float(0.0)), None);
        // The trigonometric and hyperbolic ops: f64 rounded once to f32, for f32 only.
        let once = |g: fn(f64) -> f64, a: f32| Some(Scalar::Float(f64::from(g(f64::from(a)) as f32)));
        assert_eq!(u(UnOp::Sin, 3.0), once(f64::sin, 3.0));
        assert_eq!(u(UnOp::Cos, 1e4), once(f64::cos, 1e4));
        assert_eq!(u(UnOp::Tan, -1.5), once(f64::tan, -1.5));
        assert_eq!(u(UnOp::Asin, -1.0), Some(Scalar::Float(f64::from(-std::f32::consts::FRAC_PI_2))));
        assert_eq!(u(UnOp::Acos, 0.25), once(f64::acos, 0.25));
        assert_eq!(u(UnOp::Atan, f32::INFINITY), Some(Scalar::Float(f64::from(std::f32::consts::FRAC_PI_2))));
        assert_eq!(u(UnOp::Sinh, -0.0), Some(Scalar::Float(-0.0)));
        assert_eq!(u(UnOp::Cosh, 89.4), once(f64::cosh, 89.4));
        assert!(matches!(u(UnOp::Acos, 1.5), Some(Scalar::Float(v)) if v.is_nan()));
        assert_eq!(eval_unary(UnOp::Sin, DType::F64, Scalar::Float(0.0)), None);
        assert_eq!(eval_unary(UnOp::Not, DType::BOOL, Scalar::Bool(true)), Some(Scalar::Bool(false)));
        assert_eq!(cast(Scalar::Float(1e10), DType::I32), Scalar::Int(i32::MAX.into()));
        assert_eq!(cast(Scalar::Float(f64::NAN), DType::U8), Scalar::UInt(0));
        assert_eq!(cast(Scalar::Int(-1), DType::U16), Scalar::UInt(65535));
        assert_eq!(cast(Scalar::Float(0.1), DType::F32), Scalar::Float(f64::from(0.1f32)));
    }

    #[test]
    fn names_and_encoding_order() {
        assert_eq!(BinOp::ALL.iter().enumerate().filter(|&(i, op)| *op as usize != i).count(), 0);
        assert_eq!(UnOp::ALL.iter().enumerate().filter(|&(i, op)| *op as usize != i).count(), 0);
        assert_eq!((BinOp::Le.name(), BinOp::Le.symbol(), BinOp::Max.symbol()), ("le", "<=", "max"));
    }
}
