//! Values in Relay-like syntax, for people (`relay-vm run --format text`):
//!
//! | value | text |
//! |---|---|
//! | scalar | a Relay literal: `1`, `1i64`, `2u8`, `1f`, `0.5f`, `1f64`, `True`; non-finite floats `nanf`, `inff`, `-inff` |
//! | tensor | the dtype, then nested brackets: `float32[[1, 2.5], [3, 4]]` |
//! | tuple | `(1f, 2f)`, `(1,)`, `()` |
//! | constructor | `Cons(1, Nil)` |
//! | reference | `ref(1)` |
//! | closure | `<fn @name>` |
//!
//! The walk is the one the JSON writer uses (`typed.rs`): it keeps its own stack, so long
//! lists print without recursion.

use crate::typed::{self, Syntax};
use relay_devices::{DType, DTypeCode, Scalar, Tensor};
use relay_runtime::{Executable, ScalarValue, Value, ValueType};

/// Prints `v`, of type `ty`, on one line.
///
/// # Errors
/// When the value does not have the type, or holds a constructor value of unknown type.
pub fn to_text(exe: &Executable, ty: &ValueType, v: &Value) -> Result<String, String> {
    typed::print::<TextSyntax>(exe, ty, v)
}

/// The forms of the module documentation's table.
struct TextSyntax;

impl Syntax for TextSyntax {
    const SEPARATOR: &'static str = ", ";
    const REF: (&'static str, &'static str) = ("ref(", ")");
    const CYCLE: &'static str = "<cycle>";

    fn scalar(out: &mut String, s: ScalarValue) {
        out.push_str(&element(s.dtype, s.to_scalar()));
        out.push_str(suffix(s.dtype));
    }

    fn tensor(out: &mut String, t: &Tensor) {
        write_tensor(out, t);
    }

    fn tuple(out: &mut String, fields: usize) -> &'static str {
        out.push('(');
        // A one-field tuple needs its comma, as in Relay.
        if fields == 1 {
            ",)"
        } else {
            ")"
        }
    }

    fn constructor(out: &mut String, name: &str, fields: usize) -> &'static str {
        out.push_str(name);
        if fields == 0 {
            return "";
        }
        out.push('(');
        ")"
    }

    fn closure(out: &mut String, name: &str) {
        out.push_str("<fn @");
        out.push_str(name);
        out.push('>');
    }
}

/// The literal suffix Relay's text format uses for a scalar of `dtype` (`int32` and `bool`
/// have none).
fn suffix(dtype: DType) -> &'static str {
    match (dtype.code, dtype.bits) {
        (DTypeCode::Int, 8) => "i8",
        (DTypeCode::Int, 16) => "i16",
        (DTypeCode::Int, 64) => "i64",
        (DTypeCode::UInt, 8) => "u8",
        (DTypeCode::UInt, 16) => "u16",
        (DTypeCode::UInt, 32) => "u32",
        (DTypeCode::UInt, 64) => "u64",
        (DTypeCode::Float, 16) => "f16",
        (DTypeCode::BFloat, 16) => "bf16",
        (DTypeCode::Float, 32) => "f",
        (DTypeCode::Float, 64) => "f64",
        _ => "",
    }
}

/// One element without a suffix: `1`, `2.5`, `True`, `nan`.
fn element(dtype: DType, x: Scalar) -> String {
    match x {
        Scalar::Bool(b) => if b { "True" } else { "False" }.to_string(),
        Scalar::Int(i) => i.to_string(),
        Scalar::UInt(u) => u.to_string(),
        Scalar::Float(f) if f.is_nan() => "nan".to_string(),
        Scalar::Float(f) if f.is_infinite() => if f < 0.0 { "-inf" } else { "inf" }.to_string(),
        Scalar::Float(f) => {
            // The shortest form that reads back exactly, without a `.0` on whole numbers.
            let s = if dtype.bits == 32 { format!("{:?}", f as f32) } else { format!("{f:?}") };
            match s.strip_suffix(".0") {
                Some(whole) => whole.to_string(),
                None => s,
            }
        }
    }
}

fn write_tensor(out: &mut String, t: &Tensor) {
    let dtype = t.dtype();
    out.push_str(&dtype.to_string());
    let shape = t.shape();
    // Row-major order: `blocks[k]` elements make one bracket of dimension `k`. Before
    // element `i`, open a bracket for every block starting there; after it, close one for
    // every block ending there.
    let mut blocks = vec![1usize; shape.len()];
    let mut size = 1usize;
    for k in (0..shape.len()).rev() {
        size = size.saturating_mul(shape[k]);
        blocks[k] = size;
    }
    if t.is_empty() {
        // Zero elements: brackets down to the first zero dimension.
        let depth = shape.iter().position(|&d| d == 0).map_or(shape.len(), |z| z + 1);
        let mut inner = "[]".to_string();
        for k in (0..depth.saturating_sub(1)).rev() {
            let items = vec![inner.as_str(); shape[k]];
            inner = format!("[{}]", items.join(", "));
        }
        out.push_str(&inner);
        return;
    }
    for i in 0..t.len() {
        let opens = blocks.iter().filter(|&&b| i % b == 0).count();
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&"[".repeat(opens));
        if let Some(x) = t.get(i) {
            out.push_str(&element(dtype, x));
        }
        let closes = blocks.iter().filter(|&&b| (i + 1) % b == 0).count();
        out.push_str(&"]".repeat(closes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_runtime::ScalarValue;

    fn show(v: Value, ty: ValueType) -> String {
        to_text(&Executable::default(), &ty, &v).unwrap()
    }

    fn scalar_ty(dtype: DType) -> ValueType {
        ValueType::Tensor { dtype, shape: vec![] }
    }

    #[test]
    fn scalars_print_as_relay_literals() {
        let f = |v: f64| Value::Scalar(ScalarValue::float(DType::F32, v));
        assert_eq!(show(f(1.0), scalar_ty(DType::F32)), "1f");
        assert_eq!(show(f(0.1), scalar_ty(DType::F32)), "0.1f");
        assert_eq!(show(f(f64::NEG_INFINITY), scalar_ty(DType::F32)), "-inff");
        let i = Value::Scalar(ScalarValue::int(DType::I64, -3));
        assert_eq!(show(i, scalar_ty(DType::I64)), "-3i64");
        assert_eq!(show(Value::Scalar(ScalarValue::bool(true)), scalar_ty(DType::BOOL)), "True");
    }

    #[test]
    fn tensors_print_as_nested_brackets() {
        let t = Tensor::from_vec(vec![2, 3], vec![1i32, 2, 3, 4, 5, 6]).unwrap();
        let ty = ValueType::Tensor { dtype: DType::I32, shape: vec![Some(2), Some(3)] };
        assert_eq!(show(Value::from_tensor(t), ty), "int32[[1, 2, 3], [4, 5, 6]]");
        let e = Tensor::from_vec(vec![2, 0], Vec::<f32>::new()).unwrap();
        let ty = ValueType::Tensor { dtype: DType::F32, shape: vec![Some(2), Some(0)] };
        assert_eq!(show(Value::from_tensor(e), ty), "float32[[], []]");
        let v = Tensor::from_vec(vec![2], vec![0.5f64, 2.0]).unwrap();
        let ty = ValueType::Tensor { dtype: DType::F64, shape: vec![None] };
        assert_eq!(show(Value::from_tensor(v), ty), "float64[0.5, 2]");
    }

    #[test]
    fn tuples() {
        let one = || Value::Scalar(ScalarValue::int(DType::I32, 1));
        let int = scalar_ty(DType::I32);
        assert_eq!(show(Value::tuple(vec![one()]), ValueType::Tuple(vec![int.clone()])), "(1,)");
        assert_eq!(show(Value::tuple(vec![]), ValueType::Tuple(vec![])), "()");
        let pair = ValueType::Tuple(vec![int.clone(), int]);
        assert_eq!(show(Value::tuple(vec![one(), one()]), pair), "(1, 1)");
    }
}
