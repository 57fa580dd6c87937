//! Values as JSON, both ways, guided by the types the executable records (ARCHITECTURE.md §3,
//! "Data in and out").
//!
//! | Relay value | JSON |
//! |---|---|
//! | tensor (any rank, 0-d included) | `{"dtype": "float32", "shape": [2, 3], "data": [...]}`, `data` flat and row-major; bools as `true`/`false`; non-finite floats as `"nan"`, `"inf"`, `"-inf"` |
//! | tensor, on input, when the type fixes the dtype | also a bare number (0-d) or nested arrays (their nesting gives the shape, checked against the type) |
//! | tuple | `[v, ...]` |
//! | constructor | `{"con": "Cons", "fields": [...]}` (`fields` may be left out for `Nil`) |
//! | `List[T]` | a plain array `[x1, x2, ...]`, 0-d elements as bare numbers (on input also as a constructor) |
//! | reference | `{"ref": v}` |
//! | closure (output only) | `{"closure": "<function name>"}` |
//!
//! Output is written by an explicit-stack walk straight into a string, so a list of a million
//! elements prints without recursion. Input is read while it is parsed ([`Reader`], in
//! `read.rs`), from text of any nesting up to [`crate::batch::MAX_JSON_DEPTH`] or from a parsed
//! tree ([`from_json`]); [`dismantle`] drops a parsed tree of any depth without the recursion
//! of `serde_json::Value`'s own drop.

use crate::typed::{self, describe, Syntax};
use relay_devices::{DType, DTypeCode, Scalar, Tensor};
use relay_runtime::{Executable, ScalarValue, Value, ValueType};
use serde_json::Value as Json;
use std::fmt::Write;

mod read;
pub(crate) use read::{skip_rest, Gathered, Text};
pub use read::{Reader, ValueSeed};

/// Writes `v`, of type `ty`, as compact JSON.
///
/// # Errors
/// When the value does not have the type, or holds a constructor value of unknown type.
pub fn to_json(exe: &Executable, ty: &ValueType, v: &Value) -> Result<String, String> {
    typed::print::<JsonSyntax>(exe, ty, v)
}

/// The output forms of the module documentation's table.
struct JsonSyntax;

impl Syntax for JsonSyntax {
    const SEPARATOR: &'static str = ",";
    const REF: (&'static str, &'static str) = ("{\"ref\":", "}");
    const CYCLE: &'static str = "\"<cycle>\"";

    fn scalar(out: &mut String, s: ScalarValue) {
        write_tensor_json(out, s.dtype, &[], &[s.to_scalar()]);
    }

    fn tensor(out: &mut String, t: &Tensor) {
        let data: Vec<Scalar> = (0..t.len()).filter_map(|i| t.get(i)).collect();
        write_tensor_json(out, t.dtype(), t.shape(), &data);
    }

    fn tuple(out: &mut String, _: usize) -> &'static str {
        out.push('[');
        "]"
    }

    fn constructor(out: &mut String, name: &str, _: usize) -> &'static str {
        let _ = write!(out, "{{\"con\":{},\"fields\":[", Json::from(name));
        "]}"
    }

    fn closure(out: &mut String, name: &str) {
        let _ = write!(out, "{{\"closure\":{}}}", Json::from(name));
    }

    // A `List` is the plain array that input also accepts, and its 0-d elements bare
    // numbers, since the list's type fixes their dtype.
    const LIST: Option<(&'static str, &'static str)> = Some(("[", "]"));

    fn list_scalar(out: &mut String, s: ScalarValue) {
        write_element(out, s.dtype, s.to_scalar());
    }
}

/// Drops `json` with an explicit stack: `serde_json::Value`'s own drop recurses once per
/// nesting level and overflows the stack on trees that [`crate::batch::parse_json`] accepts.
pub fn dismantle(json: Json) {
    let mut pending = vec![json];
    while let Some(j) = pending.pop() {
        match j {
            Json::Array(items) => pending.extend(items),
            Json::Object(fields) => pending.extend(fields.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

fn write_tensor_json(out: &mut String, dtype: DType, shape: &[usize], data: &[Scalar]) {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let _ = write!(out, "{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data\":[", dims.join(","));
    for (i, &x) in data.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_element(out, dtype, x);
    }
    out.push_str("]}");
}

fn write_element(out: &mut String, dtype: DType, x: Scalar) {
    let _ = match x {
        Scalar::Bool(b) => write!(out, "{b}"),
        Scalar::Int(i) => write!(out, "{i}"),
        Scalar::UInt(u) => write!(out, "{u}"),
        Scalar::Float(f) if f.is_nan() => write!(out, "\"nan\""),
        Scalar::Float(f) if f.is_infinite() => write!(out, "\"{}inf\"", if f < 0.0 { "-" } else { "" }),
        // `Debug` gives the shortest form that reads back exactly, in JSON number syntax.
        Scalar::Float(f) if dtype.bits == 32 => write!(out, "{:?}", f as f32),
        Scalar::Float(f) => write!(out, "{f:?}"),
    };
}

/// Reads a value of type `ty` from a parsed JSON tree (see the module documentation for the
/// forms; [`Reader`] reads them while parsing).
///
/// # Errors
/// A message saying what was expected and where (`at [0].fields[1]`).
pub fn from_json(exe: &Executable, ty: &ValueType, json: &Json) -> Result<Value, String> {
    use serde::de::DeserializeSeed;
    let reader = Reader::new(exe);
    reader.seed(ty).deserialize(serde_stacker::Deserializer::new(json)).map_err(|e| reader.message(e))
}

/// An input error and the path to it, innermost segment first.
struct InputError {
    message: String,
    path: Vec<String>,
}

impl From<String> for InputError {
    fn from(message: String) -> Self {
        InputError { message, path: vec![] }
    }
}

fn within<T>(r: Result<T, InputError>, segment: impl FnOnce() -> String) -> Result<T, InputError> {
    r.map_err(|mut e| {
        e.path.push(segment());
        e
    })
}

fn expected(what: &str, json: &Json) -> InputError {
    let mut found = String::new();
    preview(&mut found, json, 3);
    if found.len() > 60 {
        found.truncate(found.floor_char_boundary(57));
        found.push_str("...");
    }
    format!("expected {what}, found {found}").into()
}

/// Writes `json` compactly, with arrays and objects below `depth` levels as `[...]`/`{...}`
/// and at most a few items each, so that a message about a deep or wide input costs little.
fn preview(out: &mut String, json: &Json, depth: usize) {
    const ITEMS: usize = 8;
    let more = |out: &mut String, n: usize| {
        if n > ITEMS {
            out.push_str(",...");
        }
    };
    match json {
        Json::Array(_) | Json::Object(_) if depth == 0 => {
            out.push_str(if json.is_array() { "[...]" } else { "{...}" });
        }
        Json::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().take(ITEMS).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                preview(out, x, depth - 1);
            }
            more(out, items.len());
            out.push(']');
        }
        Json::Object(fields) => {
            out.push('{');
            for (i, (k, v)) in fields.iter().take(ITEMS).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{}:", Json::from(k.as_str()));
                preview(out, v, depth - 1);
            }
            more(out, fields.len());
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn read_tensor(dtype: DType, shape: &[Option<i64>], json: &Json) -> Result<Value, InputError> {
    let ty = ValueType::Tensor { dtype, shape: shape.to_vec() };
    let (dims, elements): (Vec<usize>, Vec<&Json>) = match json {
        Json::Object(o) => {
            let form = "a tensor as {\"dtype\", \"shape\", \"data\"}";
            let (Some(d), Some(s), Some(Json::Array(data))) = (o.get("dtype"), o.get("shape"), o.get("data"))
            else {
                return Err(expected(form, json));
            };
            if o.len() != 3 {
                return Err(expected(form, json));
            }
            let given: Option<DType> = d.as_str().and_then(|d| d.parse().ok());
            if given != Some(dtype) {
                return Err(format!("expected dtype {dtype}, found {d}").into());
            }
            let dims: Option<Vec<usize>> = s
                .as_array()
                .and_then(|a| a.iter().map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok())).collect());
            let dims = dims.ok_or_else(|| expected("`shape` as an array of sizes", s))?;
            (dims, data.iter().collect())
        }
        _ => nested(json)?,
    };
    if !typed::shape_fits(&dims, shape) {
        return Err(format!("found a tensor of shape {dims:?}, expected `{}`", describe(&ty)).into());
    }
    let n = relay_devices::shape_size(&dims).ok_or_else(|| format!("shape {dims:?} is too large"))?;
    if n != elements.len() {
        return Err(format!("shape {dims:?} needs {n} element(s), {} given", elements.len()).into());
    }
    let values = elements
        .iter()
        .enumerate()
        .map(|(i, j)| within(element(dtype, j), || format!(".data[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let t: Tensor = relay_runtime::tensor_from_scalars(dtype, dims, &values)?;
    Ok(Value::from_tensor(t))
}

/// The shape and row-major elements of a bare number or nested arrays.
fn nested(json: &Json) -> Result<(Vec<usize>, Vec<&Json>), InputError> {
    let mut dims = vec![];
    let mut probe = json;
    while let Json::Array(items) = probe {
        dims.push(items.len());
        match items.first() {
            Some(first) => probe = first,
            None => break,
        }
    }
    let mut out = Vec::new();
    // Each level must be an array of the probed length; leaves must not be arrays.
    let mut pending = vec![(json, 0usize)];
    while let Some((j, depth)) = pending.pop() {
        match (j, dims.get(depth)) {
            (Json::Array(items), Some(&n)) if items.len() == n => {
                pending.extend(items.iter().rev().map(|x| (x, depth + 1)));
            }
            (Json::Array(_), _) | (_, Some(_)) => {
                return Err(format!("nested arrays of uneven shape (expected {dims:?})").into());
            }
            (leaf, None) => out.push(leaf),
        }
    }
    Ok((dims, out))
}

fn element(dtype: DType, j: &Json) -> Result<ScalarValue, InputError> {
    let bad = || expected(&format!("a {dtype} element"), j);
    match dtype.code {
        DTypeCode::Bool => j.as_bool().map(ScalarValue::bool).ok_or_else(bad),
        DTypeCode::Float | DTypeCode::BFloat => {
            let f = match j {
                Json::Number(n) => n.as_f64().ok_or_else(bad)?,
                Json::String(s) => match s.as_str() {
                    "nan" => f64::NAN,
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    _ => return Err(bad()),
                },
                _ => return Err(bad()),
            };
            let v = ScalarValue::float(dtype, f);
            // A finite number that rounds to infinity (`1e40` for float32) is a mistake in the
            // input, not a way of writing `"inf"`.
            match v.to_scalar() {
                Scalar::Float(r) if f.is_finite() && r.is_infinite() => {
                    Err(expected(&format!("a number in the range of {dtype}"), j))
                }
                _ => Ok(v),
            }
        }
        DTypeCode::Int | DTypeCode::UInt => {
            let bits = u32::from(dtype.bits);
            let fits = if dtype.code == DTypeCode::Int {
                j.as_i64()
                    .filter(|&v| bits >= 64 || (v >> (bits - 1)) == 0 || (v >> (bits - 1)) == -1)
                    .map(|v| v as u64)
            } else {
                j.as_u64().filter(|&v| bits >= 64 || v >> bits == 0)
            };
            let v = fits.ok_or_else(|| expected(&format!("an integer in the range of {dtype}"), j))?;
            Ok(ScalarValue::int(dtype, v as i64))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typed::tests::list_exe as exe;

    fn tensor_ty(dtype: DType, shape: &[Option<i64>]) -> ValueType {
        ValueType::Tensor { dtype, shape: shape.to_vec() }
    }

    fn round_trip(ty: &ValueType, input: &str) -> String {
        let e = exe();
        let v = from_json(&e, ty, &serde_json::from_str(input).unwrap()).unwrap();
        to_json(&e, ty, &v).unwrap()
    }

    #[test]
    fn tensors_in_every_input_form() {
        let t = tensor_ty(DType::F32, &[Some(2), None]);
        let full = r#"{"dtype":"float32","shape":[2,2],"data":[1.0,2.5,"nan","-inf"]}"#;
        assert_eq!(round_trip(&t, full), full);
        assert_eq!(round_trip(&t, "[[1, 2.5], [\"nan\", \"-inf\"]]"), full);
        let s = tensor_ty(DType::I64, &[]);
        assert_eq!(round_trip(&s, "-7"), r#"{"dtype":"int64","shape":[],"data":[-7]}"#);
        let b = tensor_ty(DType::BOOL, &[Some(2)]);
        assert_eq!(round_trip(&b, "[true, false]"), r#"{"dtype":"bool","shape":[2],"data":[true,false]}"#);
    }

    #[test]
    fn bad_tensors_are_errors() {
        let e = exe();
        let t = tensor_ty(DType::I8, &[Some(2)]);
        let read = |s: &str| from_json(&e, &t, &serde_json::from_str(s).unwrap());
        assert!(read("[1, 2, 3]").unwrap_err().contains("shape [3]"));
        assert!(read("[1, 300]").unwrap_err().contains("range of int8"));
        assert!(read("[[1], 2]").unwrap_err().contains("uneven"));
        assert!(read("[1.5, 2]").is_err());
        let f = tensor_ty(DType::F32, &[]);
        let err = from_json(&e, &f, &serde_json::json!(1e40)).unwrap_err();
        assert!(err.contains("range of float32"), "{err}");
        assert!(from_json(&e, &f, &serde_json::json!("inf")).is_ok());
        assert!(read(r#"{"dtype":"int32","shape":[2],"data":[1,2]}"#).unwrap_err().contains("dtype int8"));
        assert!(read(r#"{"dtype":"int8","shape":[2],"data":[1]}"#).unwrap_err().contains("needs 2"));
    }

    #[test]
    fn lists_tuples_and_refs() {
        let int = tensor_ty(DType::I32, &[]);
        let list = ValueType::Adt { name: "List".into(), args: vec![int.clone()] };
        assert_eq!(round_trip(&list, "[1, 2]"), "[1,2]");
        assert_eq!(round_trip(&list, r#"{"con": "Cons", "fields": [1, {"con": "Nil"}]}"#), "[1]");
        assert_eq!(round_trip(&list, "[]"), "[]");
        let lists = ValueType::Adt { name: "List".into(), args: vec![list.clone()] };
        assert_eq!(round_trip(&lists, "[[1], [], [2, 3]]"), "[[1],[],[2,3]]");
        let vectors = ValueType::Adt { name: "List".into(), args: vec![tensor_ty(DType::F32, &[Some(1)])] };
        assert_eq!(round_trip(&vectors, "[[0.5]]"), r#"[{"dtype":"float32","shape":[1],"data":[0.5]}]"#);
        let pair = ValueType::Tuple(vec![int.clone(), ValueType::Ref(Box::new(int))]);
        assert_eq!(
            round_trip(&pair, r#"[1, {"ref": 2}]"#),
            r#"[{"dtype":"int32","shape":[],"data":[1]},{"ref":{"dtype":"int32","shape":[],"data":[2]}}]"#
        );
    }

    #[test]
    fn errors_name_the_path() {
        let e = exe();
        let int = tensor_ty(DType::I32, &[]);
        let list = ValueType::Adt { name: "List".into(), args: vec![int] };
        let err = from_json(&e, &list, &serde_json::json!([1, 2, "x"])).unwrap_err();
        assert!(err.contains("at [2]"), "{err}");
        let err = from_json(&e, &list, &serde_json::json!({"con": "Cons", "fields": [true, {"con": "Nil"}]}))
            .unwrap_err();
        assert!(err.contains("at .fields[0]"), "{err}");
        let err = from_json(&e, &list, &serde_json::json!({"con": "Some", "fields": []})).unwrap_err();
        assert!(err.contains("not a constructor of `List`"), "{err}");
        assert!(from_json(&e, &ValueType::Func, &serde_json::json!(1)).is_err());
    }

    #[test]
    fn a_long_list_prints_without_recursion() {
        let int = tensor_ty(DType::I32, &[]);
        let list = ValueType::Adt { name: "List".into(), args: vec![int] };
        let items: Vec<Json> = (0..200_000).map(Json::from).collect();
        let e = exe();
        let v = from_json(&e, &list, &Json::Array(items)).unwrap();
        let s = to_json(&e, &list, &v).unwrap();
        assert!(s.starts_with("[0,1,2,") && s.ends_with(",199998,199999]"), "{}", &s[s.len() - 40..]);
    }
}
