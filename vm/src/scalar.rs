//! Unboxed scalars: Relay's 0-d tensors as register values, and the arithmetic the VM does on
//! them directly (TVM boxes every scalar in a heap tensor; that is much of why its VM is slow
//! on control flow).

use relay_devices::arith::{self, eval_binary, eval_unary, BinOp, UnOp};
use relay_devices::{DType, DTypeCode, Scalar, Tensor};

/// An unboxed Relay scalar (0-d tensor) with its dtype: a `LoadImm` operand and the value of
/// a scalar register.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScalarValue {
    /// Element type (a one-lane dtype).
    pub dtype: DType,
    /// The value's bits: signed integers sign-extended to 64 bits, unsigned zero-extended,
    /// floats as `f64` bits (a `float16`/`bfloat16`/`float32` value is exactly representable), bool as 0/1.
    pub bits: u64,
}

impl ScalarValue {
    /// A signed or unsigned integer scalar of `dtype`, wrapped to its width.
    pub fn int(dtype: DType, v: i64) -> ScalarValue {
        ScalarValue { dtype, bits: wrap(dtype, v as u64) }
    }

    /// A float scalar of `dtype`, rounded to its precision (to nearest even).
    pub fn float(dtype: DType, v: f64) -> ScalarValue {
        let v = match arith::cast(Scalar::Float(v), dtype) {
            Scalar::Float(rounded) => rounded,
            _ => v,
        };
        ScalarValue { dtype, bits: v.to_bits() }
    }

    /// A bool scalar.
    pub fn bool(v: bool) -> ScalarValue {
        ScalarValue { dtype: DType::BOOL, bits: u64::from(v) }
    }

    /// The value as a signed integer (bool as 0/1, floats truncated).
    pub fn as_i64(self) -> i64 {
        match self.dtype.code {
            DTypeCode::Float | DTypeCode::BFloat => f64::from_bits(self.bits) as i64,
            _ => self.bits as i64,
        }
    }

    /// The value as a float.
    pub fn as_f64(self) -> f64 {
        match self.dtype.code {
            DTypeCode::Float | DTypeCode::BFloat => f64::from_bits(self.bits),
            DTypeCode::Int => self.bits as i64 as f64,
            DTypeCode::UInt | DTypeCode::Bool => self.bits as f64,
        }
    }

    /// Whether the value is non-zero (the truth of a condition).
    pub fn is_true(self) -> bool {
        match self.dtype.code {
            DTypeCode::Float | DTypeCode::BFloat => f64::from_bits(self.bits) != 0.0,
            _ => self.bits != 0,
        }
    }

    /// The widened element value.
    pub fn to_scalar(self) -> Scalar {
        match self.dtype.code {
            DTypeCode::Bool => Scalar::Bool(self.bits != 0),
            DTypeCode::Int => Scalar::Int(self.bits as i64),
            DTypeCode::UInt => Scalar::UInt(self.bits),
            DTypeCode::Float | DTypeCode::BFloat => Scalar::Float(f64::from_bits(self.bits)),
        }
    }

    /// The scalar of `dtype` holding `s` (converted with `as`-cast semantics).
    pub fn from_scalar(dtype: DType, s: Scalar) -> ScalarValue {
        let v = match s {
            Scalar::Bool(b) => ScalarValue::bool(b),
            Scalar::Int(i) => ScalarValue::int(DType::I64, i),
            Scalar::UInt(u) => ScalarValue { dtype: DType::scalar(DTypeCode::UInt, 64), bits: u },
            Scalar::Float(f) => ScalarValue::float(DType::F64, f),
        };
        v.cast(dtype)
    }

    /// Converts to `dtype` by the workspace's one cast, [`arith::cast`] (Rust `as` semantics:
    /// integers wrap, floats to integers truncate, saturate and map NaN to 0, anything
    /// non-zero to bool is true), as the reference kernels, kir and the JIT do.
    pub fn cast(self, dtype: DType) -> ScalarValue {
        match arith::cast(self.to_scalar(), dtype) {
            Scalar::Bool(b) => ScalarValue::bool(b),
            Scalar::Int(i) => ScalarValue::int(dtype, i),
            Scalar::UInt(u) => ScalarValue { dtype, bits: wrap(dtype, u) },
            Scalar::Float(f) => ScalarValue::float(dtype, f),
        }
    }

    /// The scalar as a 0-d tensor (for kernels, which take tensors).
    ///
    /// # Errors
    /// A dtype tensors cannot hold (vector types).
    pub fn to_tensor(self) -> Result<Tensor, String> {
        tensor_from_scalars(self.dtype, vec![], &[self])
    }

    /// The element of a 0-d tensor as a scalar.
    pub fn from_tensor(t: &Tensor) -> Option<ScalarValue> {
        if t.ndim() != 0 {
            return None;
        }
        t.get(0).map(|s| ScalarValue::from_scalar(t.dtype(), s))
    }
}

/// A tensor of `dtype` and `shape` from its row-major elements (each converted to `dtype`).
///
/// # Errors
/// A dtype tensors cannot hold, or an element count that does not match the shape.
pub fn tensor_from_scalars(
    dtype: DType,
    shape: Vec<usize>,
    values: &[ScalarValue],
) -> Result<Tensor, String> {
    fn collect<T>(values: &[ScalarValue], f: impl Fn(ScalarValue) -> T) -> Vec<T> {
        values.iter().map(|&v| f(v)).collect()
    }
    let vs: Vec<ScalarValue> = values.iter().map(|v| v.cast(dtype)).collect();
    let vs = &vs[..];
    let t = match (dtype.code, dtype.bits, dtype.lanes) {
        (DTypeCode::Bool, _, 1) => Tensor::from_vec(shape, collect(vs, |v| v.is_true())),
        (DTypeCode::Float, 32, 1) => Tensor::from_vec(shape, collect(vs, |v| v.as_f64() as f32)),
        (DTypeCode::Float, 64, 1) => Tensor::from_vec(shape, collect(vs, |v| v.as_f64())),
        (DTypeCode::Int, 8, 1) => Tensor::from_vec(shape, collect(vs, |v| v.bits as i8)),
        (DTypeCode::Int, 16, 1) => Tensor::from_vec(shape, collect(vs, |v| v.bits as i16)),
        (DTypeCode::Int, 32, 1) => Tensor::from_vec(shape, collect(vs, |v| v.bits as i32)),
        (DTypeCode::Int, 64, 1) => Tensor::from_vec(shape, collect(vs, |v| v.bits as i64)),
        (DTypeCode::UInt, 8, 1) => Tensor::from_vec(shape, collect(vs, |v| v.bits as u8)),
        (DTypeCode::UInt, 16, 1) => Tensor::from_vec(shape, collect(vs, |v| v.bits as u16)),
        (DTypeCode::UInt, 32, 1) => Tensor::from_vec(shape, collect(vs, |v| v.bits as u32)),
        (DTypeCode::UInt, 64, 1) => Tensor::from_vec(shape, collect(vs, |v| v.bits)),
        // No `Vec<f16>`/`Vec<bf16>` here (the VM does not link `half`): each value is set
        // with its cast.
        _ if dtype.is_half_float() => Tensor::zeros(dtype, shape).map(|mut t| {
            for (i, v) in vs.iter().enumerate() {
                t.set(i, v.to_scalar());
            }
            t
        }),
        _ => return Err(format!("no tensor storage for {dtype}")),
    };
    t.map_err(|e| e.to_string())
}

/// Truncates `bits` to the integer width of `dtype`, sign-extending signed types.
fn wrap(dtype: DType, bits: u64) -> u64 {
    let w = u32::from(dtype.bits);
    if w >= 64 || dtype.code == DTypeCode::Bool {
        return if dtype.code == DTypeCode::Bool { u64::from(bits != 0) } else { bits };
    }
    let mask = (1u64 << w) - 1;
    let v = bits & mask;
    if dtype.code == DTypeCode::Int && v >> (w - 1) == 1 {
        v | !mask
    } else {
        v
    }
}

/// `a op b` for the dispatch loop: `int32`, `int64` and `float32` arithmetic and every
/// comparison, inline; `None` sends the rest to [`binary`] (which also reports errors).
#[inline(always)]
pub(crate) fn fast(op: BinOp, a: ScalarValue, b: ScalarValue) -> Option<ScalarValue> {
    match op {
        BinOp::Add => arith(a, b, i32::wrapping_add, i64::wrapping_add, |x, y| x + y),
        BinOp::Sub => arith(a, b, i32::wrapping_sub, i64::wrapping_sub, |x, y| x - y),
        BinOp::Mul => arith(a, b, i32::wrapping_mul, i64::wrapping_mul, |x, y| x * y),
        _ => compare(op, a, b).map(ScalarValue::bool),
    }
}

/// `a op b` on `int32`, `int64` or `float32` operands of one dtype. A `float32` result
/// computed in single precision equals [`binary`]'s double-precision result rounded, as
/// double rounding is exact for `+ - *` at these widths.
#[inline(always)]
fn arith(
    a: ScalarValue,
    b: ScalarValue,
    i32_op: impl Fn(i32, i32) -> i32,
    i64_op: impl Fn(i64, i64) -> i64,
    f32_op: impl Fn(f32, f32) -> f32,
) -> Option<ScalarValue> {
    let key = dtype_key(a.dtype);
    if key != dtype_key(b.dtype) {
        return None;
    }
    let bits = if key == I32_KEY {
        i64::from(i32_op(a.bits as i32, b.bits as i32)) as u64
    } else if key == I64_KEY {
        i64_op(a.bits as i64, b.bits as i64) as u64
    } else if key == F32_KEY {
        let v = f32_op(f64::from_bits(a.bits) as f32, f64::from_bits(b.bits) as f32);
        f64::from(v).to_bits()
    } else {
        return None;
    };
    Some(ScalarValue { dtype: a.dtype, bits })
}

/// A dtype as one integer, so that the fast paths test it with a single comparison (the
/// fields are packed in their in-memory order, which lets the compiler load them at once).
#[inline(always)]
const fn dtype_key(d: DType) -> u32 {
    d.lanes as u32 | (d.bits as u32) << 16 | (d.code as u32) << 24
}

const I32_KEY: u32 = dtype_key(DType::I32);
const I64_KEY: u32 = dtype_key(DType::I64);
const F32_KEY: u32 = dtype_key(DType::F32);

/// A comparison on operands of one dtype (any: the bit layout of [`ScalarValue`] makes a
/// signed, unsigned or float comparison of the 64 bits exact); `None` for other operations
/// and mismatched dtypes, which go to [`binary`]. NaN compares false except with `!=`, as in
/// [`binary`].
#[inline(always)]
pub(crate) fn compare(op: BinOp, a: ScalarValue, b: ScalarValue) -> Option<bool> {
    if dtype_key(a.dtype) != dtype_key(b.dtype) {
        return None;
    }
    match a.dtype.code {
        DTypeCode::Int => arith::compare(op, a.bits as i64, b.bits as i64),
        DTypeCode::UInt | DTypeCode::Bool => arith::compare(op, a.bits, b.bits),
        DTypeCode::Float | DTypeCode::BFloat => {
            arith::compare(op, f64::from_bits(a.bits), f64::from_bits(b.bits))
        }
    }
}

/// `a op b` on two scalars of the same dtype, by the shared arithmetic
/// ([`relay_devices::arith`]: integers wrap, integer division by zero gives 0).
///
/// # Errors
/// Mismatched dtypes, or an operation the dtype does not have (`pow` on integers, `and` on
/// floats).
pub fn binary(op: BinOp, a: ScalarValue, b: ScalarValue) -> Result<ScalarValue, String> {
    if a.dtype != b.dtype {
        return Err(format!("scalar `{}` on {} and {}", op.name(), a.dtype, b.dtype));
    }
    let r = eval_binary(op, a.dtype, a.to_scalar(), b.to_scalar())
        .ok_or_else(|| format!("scalar `{}` is not defined on {}", op.name(), a.dtype))?;
    Ok(ScalarValue::from_scalar(if op.is_comparison() { DType::BOOL } else { a.dtype }, r))
}

/// `op a` on a scalar, by the shared arithmetic ([`relay_devices::arith`]).
///
/// # Errors
/// An operation the dtype does not have (`not` on floats, `exp` on integers).
pub fn unary(op: UnOp, a: ScalarValue) -> Result<ScalarValue, String> {
    eval_unary(op, a.dtype, a.to_scalar())
        .map(|r| ScalarValue::from_scalar(a.dtype, r))
        .ok_or_else(|| format!("scalar `{}` is not defined on {}", op.name(), a.dtype))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i32v(v: i64) -> ScalarValue {
        ScalarValue::int(DType::I32, v)
    }

    #[test]
    fn int32_wraps_and_floors() {
        let max = i32v(i32::MAX as i64);
        assert_eq!(binary(BinOp::Add, max, i32v(1)).unwrap().as_i64(), i32::MIN as i64);
        assert_eq!(binary(BinOp::FloorDiv, i32v(-7), i32v(2)).unwrap().as_i64(), -4);
        assert_eq!(binary(BinOp::FloorMod, i32v(-7), i32v(2)).unwrap().as_i64(), 1);
        assert_eq!(binary(BinOp::Div, i32v(-7), i32v(2)).unwrap().as_i64(), -3);
        // The shared integer rules: total division, wrapping `MIN / -1`.
        assert_eq!(binary(BinOp::Div, i32v(1), i32v(0)).unwrap().as_i64(), 0);
        assert_eq!(binary(BinOp::FloorMod, i32v(7), i32v(0)).unwrap().as_i64(), 0);
        let min = i32v(i32::MIN.into());
        assert_eq!(binary(BinOp::Div, min, i32v(-1)).unwrap(), min);
        assert!(binary(BinOp::Pow, i32v(2), i32v(3)).is_err());
    }

    #[test]
    fn float32_rounds_to_single_precision() {
        let a = ScalarValue::float(DType::F32, 0.1);
        let b = ScalarValue::float(DType::F32, 0.2);
        let s = binary(BinOp::Add, a, b).unwrap();
        assert_eq!(s.as_f64() as f32, 0.1f32 + 0.2f32);
    }

    #[test]
    fn comparisons_and_logic() {
        assert!(binary(BinOp::Lt, i32v(1), i32v(2)).unwrap().is_true());
        assert!(!binary(BinOp::Ge, i32v(1), i32v(2)).unwrap().is_true());
        let nan = ScalarValue::float(DType::F32, f64::NAN);
        assert!(!binary(BinOp::Eq, nan, nan).unwrap().is_true());
        assert!(binary(BinOp::Ne, nan, nan).unwrap().is_true());
        assert!(binary(BinOp::And, ScalarValue::bool(true), i32v(1)).is_err());
        assert!(!unary(UnOp::Not, ScalarValue::bool(true)).unwrap().is_true());
    }

    #[test]
    fn fast_path_agrees_with_the_general_one() {
        let ops = [
            BinOp::Add,
            BinOp::FloorMod,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::Div,
            BinOp::Eq,
            BinOp::Ne,
            BinOp::Lt,
            BinOp::Le,
            BinOp::Gt,
            BinOp::Ge,
        ];
        let ints = [0i64, 1, -1, 7, i32::MAX as i64, i32::MIN as i64, i64::MAX, i64::MIN];
        let floats = [0.0, -1.5, 3.25, 1e30, f64::NAN];
        let mut fast_ones = 0;
        for op in ops {
            for &x in &ints {
                for &y in &ints {
                    for dt in [DType::I32, DType::I64, DType::I8, DType::U8, DType::U64, DType::BOOL] {
                        let (a, b) = (ScalarValue::int(dt, x), ScalarValue::int(dt, y));
                        if let Some(v) = fast(op, a, b) {
                            fast_ones += 1;
                            assert_eq!(Ok(v), binary(op, a, b), "{op:?} {x} {y} {dt}");
                        }
                        if let Some(t) = compare(op, a, b) {
                            assert_eq!(Ok(t), binary(op, a, b).map(ScalarValue::is_true));
                        }
                    }
                }
            }
            for &x in &floats {
                for &y in &floats {
                    let (a, b) = (ScalarValue::float(DType::F32, x), ScalarValue::float(DType::F32, y));
                    if let Some(t) = compare(op, a, b) {
                        assert_eq!(Ok(t), binary(op, a, b).map(ScalarValue::is_true));
                    }
                    if let Some(v) = fast(op, a, b) {
                        fast_ones += 1;
                        let slow = binary(op, a, b).unwrap();
                        assert!(
                            v == slow || (v.as_f64().is_nan() && slow.as_f64().is_nan()),
                            "{op:?} {x} {y}"
                        );
                    }
                }
            }
        }
        assert!(fast_ones > 2000, "{fast_ones}");
        let (a, b) = (ScalarValue::int(DType::I32, 1), ScalarValue::int(DType::I64, 1));
        assert!(fast(BinOp::Add, a, b).is_none() && compare(BinOp::Eq, a, b).is_none());
    }

    #[test]
    fn casts() {
        assert_eq!(ScalarValue::float(DType::F32, -2.7).cast(DType::I32).as_i64(), -2);
        assert_eq!(i32v(300).cast(DType::I8).as_i64(), 44);
        assert_eq!(i32v(-1).cast(DType::U8).bits, 255);
        assert!(i32v(5).cast(DType::BOOL).is_true());
        // Floats to integers saturate and NaN becomes 0, as `arith::cast` and the kernels do
        // (a wrap through i64 would give 44 and 0 for the first two).
        let f = |v: f64| ScalarValue::float(DType::F32, v);
        assert_eq!(f(300.0).cast(DType::I8).as_i64(), 127);
        assert_eq!(f(-1.0).cast(DType::U8).bits, 0);
        assert_eq!(f(f64::NAN).cast(DType::I32).as_i64(), 0);
        assert_eq!(f(1e20).cast(DType::I64).as_i64(), i64::MAX);
        assert_eq!(ScalarValue::int(DType::I64, -1).cast(DType::F32).as_f64(), -1.0);
        assert_eq!(ScalarValue::bool(true).cast(DType::I32).as_i64(), 1);
    }
}
