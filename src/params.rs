//! Weights from a safetensors file, bound to an entry function's parameters by name
//! (ARCHITECTURE.md §3, "Data in and out"; `relay-vm run --params`).
//!
//! Each tensor in the file must be named like a parameter of the entry function (with or
//! without the leading `%`) and have the dtype and shape the parameter's type asks for;
//! parameters without a tensor are left to the caller. A tensor that names no parameter is an
//! error, so that a misspelt weight is not silently ignored.

use crate::typed::{describe, shape_fits};
use relay_compiler::pass::BoundParam;
use relay_devices::{DType, Storage, Tensor};
use relay_vm::{Value, ValueType, VmFunction};
use safetensors::{Dtype, SafeTensors};

/// Reads the safetensors file `bytes` and returns `(parameter index, value)` for every tensor,
/// in parameter order.
///
/// # Errors
/// A malformed file, a tensor that names no parameter of `func`, or one whose dtype (only
/// `bool`, `int8..64`, `uint8..64`, `float32` and `float64` are supported) or shape does not
/// fit the parameter's type.
pub fn bind_params(func: &VmFunction, bytes: &[u8]) -> Result<Vec<(usize, Value)>, String> {
    let file = SafeTensors::deserialize(bytes).map_err(|e| format!("not a safetensors file: {e}"))?;
    let mut bound = Vec::new();
    for (name, view) in file.iter() {
        let key = name.strip_prefix('%').unwrap_or(name);
        let index = func.param_names.iter().position(|p| p == key).ok_or_else(|| {
            format!("tensor `{name}` names no parameter of `{}` ({})", func.name, func.param_names.join(", "))
        })?;
        let t =
            tensor(view.dtype(), view.shape(), view.data()).map_err(|e| format!("tensor `{name}`: {e}"))?;
        let expected = &func.param_types[index];
        let fits = match expected {
            ValueType::Tensor { dtype, shape } => t.dtype() == *dtype && shape_fits(t.shape(), shape),
            _ => false,
        };
        if !fits {
            let got = ValueType::Tensor {
                dtype: t.dtype(),
                shape: t.shape().iter().map(|&d| Some(d as i64)).collect(),
            };
            return Err(format!(
                "tensor `{name}` is `{}`, but parameter `%{key}` is `{}`",
                describe(&got),
                describe(expected)
            ));
        }
        bound.push((index, Value::from_tensor(t)));
    }
    bound.sort_by_key(|(i, _)| *i);
    Ok(bound)
}

/// The name, dtype and shape of every tensor in the safetensors file `bytes`, without reading
/// their data: what the compiler needs to specialise the parameters they will bind
/// ([`relay_compiler::pass::specialize_params`]). Names lose a leading `%`; tensors of
/// unsupported dtypes are skipped (binding reports them).
///
/// # Errors
/// A malformed file.
pub fn bound_shapes(bytes: &[u8]) -> Result<Vec<BoundParam>, String> {
    let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| format!("not a safetensors file: {e}"))?;
    let mut shapes = vec![];
    for (name, info) in meta.tensors() {
        let Some(dtype) = element_type(info.dtype) else { continue };
        let shape =
            info.shape.iter().map(|&d| i64::try_from(d).map_err(|_| format!("tensor `{name}` is too large")));
        let name = name.strip_prefix('%').unwrap_or(&name).to_string();
        shapes.push(BoundParam { name, dtype, shape: shape.collect::<Result<_, _>>()? });
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
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        _ => return None,
    })
}

/// A tensor from safetensors' little-endian element bytes.
fn tensor(dtype: Dtype, shape: &[usize], data: &[u8]) -> Result<Tensor, String> {
    fn le<const N: usize, T>(data: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
        data.chunks_exact(N).map(|c| f(c.try_into().unwrap_or([0; N]))).collect()
    }
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
        Dtype::F32 => Storage::F32(le(data, f32::from_le_bytes)),
        Dtype::F64 => Storage::F64(le(data, f64::from_le_bytes)),
        other => return Err(format!("dtype {other:?} is not supported (convert it to float32)")),
    };
    Tensor::from_storage(shape.to_vec(), storage).map_err(|e| e.to_string())
}
