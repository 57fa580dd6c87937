//! Checks every reference kernel against the NumPy vectors in `tests/ops/vectors/<op>.json`
//! (written by `tests/ops/gen_vectors.py`; committed, so no Python is needed here).
//!
//! Per case: the attributes parse, the shape function and dtype rule give the expected
//! output shapes and dtypes, and the kernel's outputs match. Floats match when
//! `|got - want| <= atol + 1e-5 * |want|` (`atol` 1e-6 unless the case widens it for
//! accumulating ops); integers and bools match exactly. Cases marked `"error": true` must be
//! rejected by attribute parsing, the shape function, the dtype rule or the kernel.
//!
//! The float32 cases also check `float16`: with the inputs rounded to `float16`, each output
//! must be the float32 kernel's output on those rounded inputs, rounded to `float16` once
//! (or that output unchanged where its dtype does not follow the inputs', as `arange`'s).
//!
//! The cases also seed a robustness test: mutated copies (other attribute values, input
//! shapes, dtypes, values and counts) must give outputs or a `KernelError`, never a panic.

use relay_compiler::ir::{AttrValue, Attrs, Interner};
use relay_compiler::op::AttrReader;
use relay_devices::{DType, Element, Scalar, Tensor};
use relay_stdlib::kernels::table::{reference_ops, RefOp};
use relay_stdlib::KernelError;
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

const RTOL: f64 = 1e-5;
const DEFAULT_ATOL: f64 = 1e-6;

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/ops/vectors")
}

fn load(op: &str) -> Result<Value, String> {
    let path = vectors_dir().join(format!("{op}.json"));
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn scalar(v: &Value, dtype: DType) -> Result<Scalar, String> {
    let bad = || format!("{v} is not a {dtype} value");
    Ok(match (v, dtype.is_float()) {
        (Value::Bool(b), _) => Scalar::Bool(*b),
        (Value::String(s), true) => Scalar::Float(match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            _ => return Err(bad()),
        }),
        (Value::Number(n), true) => Scalar::Float(n.as_f64().ok_or_else(bad)?),
        (Value::Number(n), false) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Scalar::Int(i),
            (None, Some(u)) => Scalar::UInt(u),
            _ => return Err(bad()),
        },
        _ => return Err(bad()),
    })
}

fn build<T: Element>(shape: Vec<usize>, values: &[Scalar]) -> Result<Tensor, String> {
    Tensor::from_vec(shape, values.iter().map(|&s| T::from_scalar(s)).collect()).map_err(|e| e.to_string())
}

fn tensor(v: &Value) -> Result<Tensor, String> {
    let dtype: DType = v["dtype"].as_str().ok_or("missing dtype")?.parse().map_err(|e| format!("{e}"))?;
    let shape = v["shape"]
        .as_array()
        .ok_or("missing shape")?
        .iter()
        .map(|d| d.as_u64().map(|d| d as usize).ok_or("bad dimension"))
        .collect::<Result<Vec<_>, _>>()?;
    let data = v["data"].as_array().ok_or("missing data")?;
    let values = data.iter().map(|x| scalar(x, dtype)).collect::<Result<Vec<_>, _>>()?;
    tensor_of(dtype, shape, &values)
}

fn tensor_of(dtype: DType, shape: Vec<usize>, values: &[Scalar]) -> Result<Tensor, String> {
    match dtype {
        DType::BOOL => build::<bool>(shape, values),
        DType::I8 => build::<i8>(shape, values),
        DType::I16 => build::<i16>(shape, values),
        DType::I32 => build::<i32>(shape, values),
        DType::I64 => build::<i64>(shape, values),
        DType::U8 => build::<u8>(shape, values),
        DType::U16 => build::<u16>(shape, values),
        DType::U32 => build::<u32>(shape, values),
        DType::U64 => build::<u64>(shape, values),
        DType::F16 => build::<half::f16>(shape, values),
        DType::F32 => build::<f32>(shape, values),
        DType::F64 => build::<f64>(shape, values),
        other => Err(format!("no tensors of {other}")),
    }
}

fn attr_value(v: &Value) -> Result<AttrValue, String> {
    Ok(match v {
        Value::Null => AttrValue::Null,
        Value::Bool(b) => AttrValue::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => AttrValue::Int(i),
            None => AttrValue::Float(n.as_f64().ok_or("bad number")?),
        },
        Value::String(s) => AttrValue::Str(s.clone()),
        Value::Array(items) => AttrValue::List(items.iter().map(attr_value).collect::<Result<_, _>>()?),
        Value::Object(_) => return Err("objects are not attribute values".into()),
    })
}

fn close(got: Scalar, want: Scalar, atol: f64) -> bool {
    match (got, want) {
        (Scalar::Float(g), Scalar::Float(w)) => {
            (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= atol + RTOL * w.abs()
        }
        (g, w) => g == w,
    }
}

fn compare(index: usize, got: &Tensor, want: &Tensor, atol: f64) -> Result<(), String> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(format!(
            "output {index}: got {}{:?}, want {}{:?}",
            got.dtype(),
            got.shape(),
            want.dtype(),
            want.shape()
        ));
    }
    for i in 0..want.len() {
        let (g, w) = (got.get(i), want.get(i));
        match (g, w) {
            (Some(g), Some(w)) if close(g, w, atol) => {}
            _ => return Err(format!("output {index} element {i}: got {g:?}, want {w:?}")),
        }
    }
    Ok(())
}

/// Attributes by name, as a call carries them.
type NamedAttrs = Vec<(String, AttrValue)>;

/// A case's inputs and attributes.
fn case_parts(case: &Value) -> Result<(Vec<Tensor>, NamedAttrs), String> {
    let inputs = case["inputs"]
        .as_array()
        .ok_or("missing inputs")?
        .iter()
        .map(tensor)
        .collect::<Result<Vec<_>, _>>()?;
    let attrs = case["attrs"]
        .as_object()
        .ok_or("missing attrs")?
        .iter()
        .map(|(k, v)| Ok((k.clone(), attr_value(v)?)))
        .collect::<Result<Vec<_>, String>>()?;
    Ok((inputs, attrs))
}

/// Parses the attributes, sizes the outputs with the shape function and dtype rule, and runs
/// the kernel, as the VM will.
fn call(op: &RefOp, inputs: &[Tensor], attrs: &[(String, AttrValue)]) -> Result<Vec<Tensor>, KernelError> {
    let mut symbols = Interner::default();
    let attrs = Attrs(attrs.iter().map(|(k, v)| (symbols.intern(k), v.clone())).collect());
    let parsed = (op.parse_attrs)(&AttrReader::new(&symbols, &attrs))?;
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let dtypes: Vec<DType> = inputs.iter().map(Tensor::dtype).collect();
    let out_shapes = (op.shapes)(&refs, parsed.as_ref())?;
    let out_dtypes = (op.dtypes)(&dtypes, parsed.as_ref())?;
    let mut outputs = out_shapes
        .into_iter()
        .zip(out_dtypes)
        .map(|(s, d)| Tensor::zeros(d, s))
        .collect::<Result<Vec<_>, _>>()?;
    (op.kernel)(&refs, parsed.as_ref(), &mut outputs)?;
    Ok(outputs)
}

/// Runs one case end to end; `Err` describes a failure of the operator or the case.
fn run_case(op: &RefOp, case: &Value) -> Result<(), String> {
    let (inputs, attrs) = case_parts(case)?;
    let expect_error = case["error"].as_bool().unwrap_or(false);
    match (call(op, &inputs, &attrs), expect_error) {
        (Err(_), true) => Ok(()),
        (Ok(_), true) => Err("expected an error, got outputs".into()),
        (Err(e), false) => Err(format!("unexpected error: {e}")),
        (Ok(outputs), false) => {
            let want = case["outputs"].as_array().ok_or("missing outputs")?;
            if outputs.len() != want.len() {
                return Err(format!("{} outputs, want {}", outputs.len(), want.len()));
            }
            let atol = case["atol"].as_f64().unwrap_or(DEFAULT_ATOL);
            for (i, (got, w)) in outputs.iter().zip(want).enumerate() {
                compare(i, got, &tensor(w)?, atol)?;
            }
            Ok(())
        }
    }
}

fn cases_of(op: &RefOp) -> Result<Vec<Value>, String> {
    Ok(load(op.name)?["cases"].as_array().cloned().unwrap_or_default())
}

#[test]
fn every_kernel_matches_its_vectors() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for op in reference_ops() {
        let cases = match cases_of(op) {
            Ok(cases) => cases,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        for case in &cases {
            checked += 1;
            if let Err(e) = run_case(op, case) {
                failures.push(format!("{} / {}: {e}", op.name, case["name"]));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {checked} cases failed:\n{}", failures.len(), failures.join("\n"));
    assert!(checked >= 3 * reference_ops().len());
}

/// `t` with every element converted to `dtype` (rounded to nearest even for `float16`).
fn converted(t: &Tensor, dtype: DType) -> Result<Tensor, String> {
    let values: Vec<Scalar> = (0..t.len()).filter_map(|i| t.get(i)).collect();
    tensor_of(dtype, t.shape().to_vec(), &values)
}

/// Runs a float32 case on `float16` inputs; `Ok(false)` when the case does not apply (no
/// inputs, an input or output that is not `float32`, a dtype attribute, an expected error).
fn run_case_in_float16(op: &RefOp, case: &Value) -> Result<bool, String> {
    let (inputs, attrs) = case_parts(case)?;
    let all_f32 = |vs: &Value| vs.as_array().is_some_and(|vs| vs.iter().all(|v| v["dtype"] == "float32"));
    if case["error"].as_bool().unwrap_or(false)
        || inputs.is_empty()
        || !all_f32(&case["inputs"])
        || !all_f32(&case["outputs"])
        || attrs.iter().any(|(k, _)| k.contains("dtype"))
    {
        return Ok(false);
    }
    let halves = inputs.iter().map(|t| converted(t, DType::F16)).collect::<Result<Vec<_>, _>>()?;
    let rounded = halves.iter().map(|t| converted(t, DType::F32)).collect::<Result<Vec<_>, _>>()?;
    match (call(op, &halves, &attrs), call(op, &rounded, &attrs)) {
        (Ok(got), Ok(wide)) => {
            // An output follows the inputs' dtype if it is float64 for float64 inputs.
            let doubles = rounded.iter().map(|t| converted(t, DType::F64)).collect::<Result<Vec<_>, _>>()?;
            let follows =
                call(op, &doubles, &attrs).map(|o| o.iter().map(|t| t.dtype() == DType::F64).collect());
            let follows: Vec<bool> = follows.unwrap_or_else(|_| vec![true; wide.len()]);
            for (i, (got, wide)) in got.iter().zip(&wide).enumerate() {
                let want = if follows[i] { converted(wide, DType::F16)? } else { wide.clone() };
                compare(i, got, &want, 0.0)?;
            }
            Ok(true)
        }
        (Err(_), Err(_)) => Ok(true),
        (Err(e), Ok(_)) => Err(format!("float16 fails where float32 runs: {e}")),
        (Ok(_), Err(e)) => Err(format!("float16 runs where float32 fails: {e}")),
    }
}

#[test]
fn float16_computes_in_float32_and_rounds_each_output_once() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for op in reference_ops() {
        for case in cases_of(op).unwrap_or_default() {
            match run_case_in_float16(op, &case) {
                Ok(ran) => checked += usize::from(ran),
                Err(e) => failures.push(format!("{} / {}: {e}", op.name, case["name"])),
            }
        }
    }
    assert!(failures.is_empty(), "{} float16 cases failed:\n{}", failures.len(), failures.join("\n"));
    assert!(checked >= 300, "only {checked} float16 cases");
}

#[test]
fn every_op_has_three_vector_cases() {
    let mut missing = Vec::new();
    for op in reference_ops() {
        let cases =
            load(op.name).map(|v| v["cases"].as_array().cloned().unwrap_or_default()).unwrap_or_default();
        let passing = cases.iter().filter(|c| !c["error"].as_bool().unwrap_or(false)).count();
        if passing < 3 {
            missing.push(format!("{}: {passing} cases", op.name));
        }
    }
    assert!(missing.is_empty(), "operators without 3 vector cases:\n{}", missing.join("\n"));
}

#[test]
fn every_vector_file_names_a_kernel_and_the_data_stays_small() {
    let mut total = 0;
    for entry in std::fs::read_dir(vectors_dir()).expect("vectors directory") {
        let path = entry.expect("directory entry").path();
        total += std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let op = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        assert!(reference_ops().any(|o| o.name == op), "{} has no kernel", path.display());
    }
    // About 10 KB per operator: small inputs that still cover every attribute. The bound
    // keeps a careless case (a 224×224 image) out of the repository.
    assert!(total < 3 * 1024 * 1024, "vectors take {total} bytes");
}

/// A small deterministic generator (xorshift64), so that failures reproduce.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const DTYPES: &[DType] =
    &[DType::F32, DType::F64, DType::I32, DType::I64, DType::I8, DType::U8, DType::BOOL, DType::F16];
const STRINGS: &[&str] =
    &["NCHW", "OIHW", "NHWC", "clip", "wrap", "fast", "edge", "reflect", "size", "int32", "", "?"];

fn random_attr(rng: &mut Rng, depth: usize) -> AttrValue {
    match rng.below(if depth > 1 { 5 } else { 7 }) {
        0 => AttrValue::Int(rng.below(9) as i64 - 4),
        1 => AttrValue::Float(rng.below(8) as f64 * 0.5 - 1.0),
        2 => AttrValue::Bool(rng.below(2) == 1),
        3 => AttrValue::Str(rng.pick(STRINGS).to_string()),
        4 => AttrValue::Null,
        _ => AttrValue::List((0..rng.below(5)).map(|_| random_attr(rng, depth + 1)).collect()),
    }
}

/// A tensor of `dtype` and `shape` with small values, negative ones included.
fn random_tensor(rng: &mut Rng, dtype: DType, shape: Vec<usize>) -> Tensor {
    let n = shape.iter().product();
    let values: Vec<Scalar> = (0..n).map(|_| Scalar::Int(rng.below(16) as i64 - 5)).collect();
    tensor_of(dtype, shape, &values).expect("valid random tensor")
}

/// `shape` with one dimension changed, one added or one removed.
fn mutate_shape(rng: &mut Rng, shape: &[usize]) -> Vec<usize> {
    let mut s = shape.to_vec();
    match rng.below(3) {
        0 if !s.is_empty() => {
            let k = rng.below(s.len());
            s[k] = rng.below(5);
        }
        1 => s.insert(rng.below(s.len() + 1), rng.below(4)),
        _ if !s.is_empty() => {
            s.remove(rng.below(s.len()));
        }
        _ => s.push(2),
    }
    s
}

/// One random change to a case's inputs or attributes.
fn mutate(rng: &mut Rng, op: &RefOp, inputs: &mut Vec<Tensor>, attrs: &mut NamedAttrs) {
    match rng.below(6) {
        0 if !op.attr_names.is_empty() => {
            let name = rng.pick(op.attr_names).to_string();
            attrs.retain(|(k, _)| *k != name);
            attrs.push((name, random_attr(rng, 0)));
        }
        1 if !attrs.is_empty() => {
            attrs.remove(rng.below(attrs.len()));
        }
        2 if !inputs.is_empty() => {
            let k = rng.below(inputs.len());
            let shape = mutate_shape(rng, inputs[k].shape());
            inputs[k] = random_tensor(rng, inputs[k].dtype(), shape);
        }
        3 if !inputs.is_empty() => {
            let k = rng.below(inputs.len());
            let dtype = *rng.pick(DTYPES);
            inputs[k] = random_tensor(rng, dtype, inputs[k].shape().to_vec());
        }
        4 if !inputs.is_empty() => {
            let k = rng.below(inputs.len());
            inputs[k] = random_tensor(rng, inputs[k].dtype(), inputs[k].shape().to_vec());
        }
        _ if rng.below(2) == 0 && !inputs.is_empty() => {
            inputs.remove(rng.below(inputs.len()));
        }
        _ => {
            let dtype = *rng.pick(DTYPES);
            inputs.push(random_tensor(rng, dtype, vec![2]));
        }
    }
}

#[test]
fn mutated_cases_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut panics = Vec::new();
    for op in reference_ops() {
        for case in cases_of(op).unwrap_or_default() {
            let Ok((inputs, attrs)) = case_parts(&case) else { continue };
            for _ in 0..40 {
                let (mut inputs, mut attrs) = (inputs.clone(), attrs.clone());
                for _ in 0..=rng.below(2) {
                    mutate(&mut rng, op, &mut inputs, &mut attrs);
                }
                let described = format!(
                    "{}: {:?} {attrs:?}",
                    op.name,
                    inputs.iter().map(|t| (t.dtype(), t.shape().to_vec())).collect::<Vec<_>>()
                );
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    let _ = call(op, &inputs, &attrs);
                    // Preallocated outputs of the wrong shape must be rejected, not written past.
                    let refs: Vec<&Tensor> = inputs.iter().collect();
                    let mut symbols = Interner::default();
                    let ir_attrs = Attrs(attrs.iter().map(|(k, v)| (symbols.intern(k), v.clone())).collect());
                    if let Ok(parsed) = (op.parse_attrs)(&AttrReader::new(&symbols, &ir_attrs)) {
                        let mut wrong = vec![Tensor::zeros(DType::F32, vec![1]).expect("small tensor")];
                        let _ = (op.kernel)(&refs, parsed.as_ref(), &mut wrong);
                    }
                }));
                if outcome.is_err() {
                    panics.push(described);
                }
            }
        }
    }
    assert!(panics.is_empty(), "{} panics:\n{}", panics.len(), panics.join("\n"));
}
