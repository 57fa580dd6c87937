//! Weights from a safetensors file, bound to an entry function's parameters by name
//! (ARCHITECTURE.md §3, "Data in and out"; `relay-vm run --params`).
//!
//! A tensor named `N` binds the parameter `%N` (a leading `%` in `N` is dropped), or else the
//! parameter `%sanitize_name(N)` ([`relay_compiler::ir::sanitize_name`], the rule the ONNX
//! importer names parameters by): a PyTorch `state_dict` key `fc1.weight` binds `%fc1.weight`
//! or `%fc1_weight`. Its shape must fit the parameter's type; its dtype is converted to the
//! parameter's when every element survives the conversion exactly (`float16`/`bfloat16` →
//! `float32`, `int64` indices → `int32` while they fit). Tensors that bind no parameter
//! (`num_batches_tracked`) are reported in [`Bound::unused`] for the caller to warn about or
//! refuse; parameters without a tensor are left to the caller.
//!
//! A tensor whose dtype is its parameter's and whose bytes are aligned for it borrows them
//! ([`Storage::Shared`]): with [`map_file`] the weights are read from the page cache as kernels
//! touch them, never copied into the heap. Other tensors (misaligned data, `bool`, converted
//! dtypes, a big-endian host) are copied.

use crate::typed::{describe, shape_fits};
use relay_compiler::ir::sanitize_name;
use relay_compiler::pass::BoundParam;
use relay_devices::arith::cast;
use relay_devices::{DType, Scalar, SharedBuffer, SharedBytes, Storage, Tensor};
use relay_runtime::{Value, ValueType, VmFunction};
use safetensors::{Dtype, SafeTensors};
use std::path::Path;

/// The file at `path`, memory-mapped read-only, for [`bind_params`] to borrow tensors from.
///
/// # Errors
/// The file cannot be opened or mapped.
pub fn map_file(path: &Path) -> std::io::Result<SharedBytes> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.len() == 0 {
        // Nothing to map (mapping zero bytes is an error on Linux); parsing reports it.
        return Ok(SharedBytes::new(Vec::new()));
    }
    // SAFETY: `Mmap::map` is unsafe because the mapped bytes are not ours alone: if another
    // process writes the file while it is mapped, the weights change under the running model
    // (later reads see the new bytes, so results are garbage but every bit pattern is still a
    // valid element: only dtypes without invalid values are ever borrowed, `bool` is copied),
    // and if it truncates the file, touching a page past the new end raises SIGBUS and kills
    // the process. We accept that as every memory-mapping weights loader does (safetensors'
    // `safe_open`, `torch.load(mmap=True)`); `--params` documents that the file must not change
    // while a program that bound it runs. The map is read-only: we never write through it.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    Ok(SharedBytes::new(map))
}

/// What a safetensors file binds of an entry function.
#[derive(Debug, Clone)]
pub struct Bound {
    /// `(parameter index, value)` for every parameter a tensor binds, in parameter order.
    pub values: Vec<(usize, Value)>,
    /// The file's tensors that bind no parameter, by name, sorted.
    pub unused: Vec<String>,
    /// Every tensor name in the file, sorted (for messages about a missing weight).
    pub names: Vec<String>,
}

/// Reads the safetensors file `bytes` and binds its tensors to the parameters of `func`
/// (copying `bytes` once; [`bind_shared_params`] binds without copying).
///
/// # Errors
/// As [`bind_shared_params`].
pub fn bind_params(func: &VmFunction, bytes: &[u8]) -> Result<Bound, String> {
    bind_shared_params(func, &SharedBytes::new(bytes.to_vec()))
}

/// Reads the safetensors file `bytes` and binds its tensors to the parameters of `func`;
/// tensors of their parameter's dtype borrow `bytes` when aligned (see the module header).
///
/// # Errors
/// A malformed file; a tensor whose dtype is not one safetensors tensors can have here
/// (`bool`, `int8..64`, `uint8..64`, `float16`, `bfloat16`, `float32`, `float64`); a tensor
/// whose shape does not fit its parameter's type, or whose elements do not all convert
/// exactly to the parameter's dtype; two tensors binding the same parameter.
pub fn bind_shared_params(func: &VmFunction, bytes: &SharedBytes) -> Result<Bound, String> {
    bind_by_name(&func.param_names, &func.param_types, bytes)
}

/// [`bind_shared_params`] for a function whose parameters are `param_names` of types
/// `param_types` (before compiling: the compiler binds weights as constants).
///
/// # Errors
/// As [`bind_shared_params`].
pub(crate) fn bind_by_name(
    param_names: &[String],
    param_types: &[ValueType],
    bytes: &SharedBytes,
) -> Result<Bound, String> {
    let file =
        SafeTensors::deserialize(bytes.as_bytes()).map_err(|e| format!("not a safetensors file: {e}"))?;
    let mut names: Vec<String> = file.names().into_iter().map(str::to_string).collect();
    names.sort();
    let mut values: Vec<(usize, Value)> = Vec::new();
    let mut unused = Vec::new();
    for name in &names {
        let Some(index) = parameter_of(param_names, name) else {
            unused.push(name.clone());
            continue;
        };
        if values.iter().any(|(i, _)| *i == index) {
            return Err(format!("two tensors bind parameter `%{}` (one is `{name}`)", param_names[index]));
        }
        let view = file.tensor(name).map_err(|e| format!("tensor `{name}`: {e}"))?;
        let t = tensor(view.dtype(), view.shape(), data_of(bytes, view.data()))
            .map_err(|e| format!("tensor `{name}`: {e}"))?;
        let (Some(expected), Some(param)) = (param_types.get(index), param_names.get(index)) else {
            return Err(format!("parameter {index} has no type"));
        };
        let converted = match expected {
            ValueType::Tensor { dtype, shape } if shape_fits(t.shape(), shape) => convert(&t, *dtype),
            _ => None,
        };
        let Some(t2) = converted else {
            let got = ValueType::Tensor {
                dtype: t.dtype(),
                shape: t.shape().iter().map(|&d| Some(d as i64)).collect(),
            };
            return Err(format!(
                "tensor `{name}` is `{}`, but parameter `%{param}` is `{}`{}",
                describe(&got),
                describe(expected),
                if matches!(expected, ValueType::Tensor { shape, .. } if shape_fits(t.shape(), shape)) {
                    " (not every element converts exactly)"
                } else {
                    ""
                }
            ));
        };
        values.push((index, Value::from_tensor(t2)));
    }
    values.sort_by_key(|(i, _)| *i);
    Ok(Bound { values, unused, names })
}

/// The index of the parameter a tensor named `name` binds: `%name`, else
/// `%sanitize_name(name)`.
fn parameter_of(params: &[String], name: &str) -> Option<usize> {
    let key = name.strip_prefix('%').unwrap_or(name);
    params.iter().position(|p| p == key).or_else(|| {
        let sanitized = sanitize_name(key);
        params.iter().position(|p| *p == sanitized)
    })
}

/// "`%p` is not in FILE (it has: a, b, ...)" for the parameters `params` that a weight file
/// `file` holding `names` (sorted) does not bind; at most 20 names are listed.
pub fn missing_message(params: &[&str], file: &str, names: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut has = names.iter().take(SHOWN).map(String::as_str).collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        has.push_str(&format!(", ... ({} more)", names.len() - SHOWN));
    }
    let which: Vec<String> = params.iter().map(|p| format!("`%{p}`")).collect();
    let verb = if which.len() == 1 { "is" } else { "are" };
    format!("{} {verb} not in {file} (it has: {has})", which.join(", "))
}

/// `t` as a tensor of `dtype`, if every element converts exactly (`None` otherwise).
fn convert(t: &Tensor, dtype: DType) -> Option<Tensor> {
    if t.dtype() == dtype {
        return Some(t.clone());
    }
    let mut out = Tensor::zeros(dtype, t.shape().to_vec()).ok()?;
    for i in 0..t.len() {
        let v = t.get(i)?;
        let c = cast(v, dtype);
        let back = cast(c, t.dtype());
        let exact = back == v
            || matches!((back, v), (Scalar::Float(a), Scalar::Float(b)) if a.is_nan() && b.is_nan());
        if !exact || !out.set(i, c) {
            return None;
        }
    }
    Some(out)
}

/// The name, dtype and shape of every tensor in the safetensors file `bytes`, without reading
/// their data: what the compiler needs to specialise the parameters they will bind
/// ([`relay_compiler::pass::specialize_params`]). Each tensor is listed under its name (less
/// a leading `%`) and, when different and not itself a tensor's name, its sanitised name, as
/// [`bind_params`] binds them; tensors of unsupported dtypes (`float8_e4m3fn`, complex) are
/// skipped (binding reports them).
///
/// # Errors
/// A malformed file.
pub fn bound_shapes(bytes: &[u8]) -> Result<Vec<BoundParam>, String> {
    let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| format!("not a safetensors file: {e}"))?;
    let tensors = meta.tensors();
    let mut shapes = vec![];
    for (name, info) in &tensors {
        let Some(dtype) = element_type(info.dtype) else { continue };
        let shape =
            info.shape.iter().map(|&d| i64::try_from(d).map_err(|_| format!("tensor `{name}` is too large")));
        let shape: Vec<i64> = shape.collect::<Result<_, _>>()?;
        let key = name.strip_prefix('%').unwrap_or(name);
        let sanitized = sanitize_name(key);
        if sanitized != key && !tensors.contains_key(&sanitized) {
            shapes.push(BoundParam { name: sanitized, dtype, shape: shape.clone() });
        }
        shapes.push(BoundParam { name: key.to_string(), dtype, shape });
    }
    Ok(shapes)
}

/// The element type of a safetensors dtype, if tensors support it.
fn element_type(dtype: Dtype) -> Option<DType> {
    Some(match dtype {
        Dtype::BOOL => DType::BOOL,
        Dtype::I8 => DType::I8,
        Dtype::I16 => DType::I16,
        Dtype::I32 => DType::I32,
        Dtype::I64 => DType::I64,
        Dtype::U8 => DType::U8,
        Dtype::U16 => DType::U16,
        Dtype::U32 => DType::U32,
        Dtype::U64 => DType::U64,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        _ => return None,
    })
}

/// `data`, a slice of `file`'s bytes, as shared bytes of `file` (`None` if it is not one).
fn data_of(file: &SharedBytes, data: &[u8]) -> Option<SharedBytes> {
    let start = (data.as_ptr() as usize).checked_sub(file.as_bytes().as_ptr() as usize)?;
    file.slice(start..start.checked_add(data.len())?)
}

/// A tensor from safetensors' little-endian element bytes `data`: borrowed when the host is
/// little-endian, the dtype has storage and the bytes are aligned for it; otherwise copied.
fn tensor(dtype: Dtype, shape: &[usize], data: Option<SharedBytes>) -> Result<Tensor, String> {
    fn le<const N: usize, T>(data: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
        data.chunks_exact(N).map(|c| f(c.try_into().unwrap_or([0; N]))).collect()
    }
    let Some(data) = data else {
        return Err("its data is not inside the file".to_string());
    };
    let borrowed = element_type(dtype)
        .filter(|_| cfg!(target_endian = "little"))
        .and_then(|d| SharedBuffer::new(d, data.clone()));
    if let Some(buffer) = borrowed {
        return Tensor::from_storage(shape.to_vec(), Storage::Shared(buffer)).map_err(|e| e.to_string());
    }
    let data = data.as_bytes();
    let storage = match dtype {
        Dtype::BOOL => Storage::Bool(data.iter().map(|&b| b != 0).collect()),
        Dtype::I8 => Storage::I8(le(data, i8::from_le_bytes)),
        Dtype::I16 => Storage::I16(le(data, i16::from_le_bytes)),
        Dtype::I32 => Storage::I32(le(data, i32::from_le_bytes)),
        Dtype::I64 => Storage::I64(le(data, i64::from_le_bytes)),
        Dtype::U8 => Storage::U8(data.to_vec()),
        Dtype::U16 => Storage::U16(le(data, u16::from_le_bytes)),
        Dtype::U32 => Storage::U32(le(data, u32::from_le_bytes)),
        Dtype::U64 => Storage::U64(le(data, u64::from_le_bytes)),
        Dtype::F16 => Storage::F16(le(data, half::f16::from_le_bytes)),
        Dtype::BF16 => Storage::BF16(le(data, half::bf16::from_le_bytes)),
        Dtype::F32 => Storage::F32(le(data, f32::from_le_bytes)),
        Dtype::F64 => Storage::F64(le(data, f64::from_le_bytes)),
        other => return Err(format!("dtype {other:?} is not supported (convert it to float32)")),
    };
    Tensor::from_storage(shape.to_vec(), storage).map_err(|e| e.to_string())
}
