//! Element types: ONNX's `TensorProto.DataType` codes and the Relay dtypes they import as.

use onnx_protobuf::tensor_proto::DataType as OnnxType;
use protobuf::Enum;
use relay_devices::{DType, DTypeCode};

/// The Relay dtype of ONNX element type `code` (numbers, booleans, `FLOAT16` and `BFLOAT16`;
/// 8-bit floats, complex numbers and strings are not supported), or a message naming the type.
pub fn from_onnx(code: i32) -> Result<DType, String> {
    let ty = OnnxType::from_i32(code).ok_or_else(|| format!("unknown ONNX element type {code}"))?;
    Ok(match ty {
        OnnxType::BOOL => DType::BOOL,
        OnnxType::INT8 => DType::I8,
        OnnxType::INT16 => DType::I16,
        OnnxType::INT32 => DType::I32,
        OnnxType::INT64 => DType::I64,
        OnnxType::UINT8 => DType::U8,
        OnnxType::UINT16 => DType::U16,
        OnnxType::UINT32 => DType::U32,
        OnnxType::UINT64 => DType::U64,
        OnnxType::FLOAT16 => DType::F16,
        OnnxType::BFLOAT16 => DType::BF16,
        OnnxType::FLOAT => DType::F32,
        OnnxType::DOUBLE => DType::F64,
        other => return Err(format!("element type {other:?} is not supported")),
    })
}

/// The safetensors dtype weights of `dtype` are written with (one of [`from_onnx`]'s).
pub fn safetensors_dtype(dtype: DType) -> safetensors::Dtype {
    use safetensors::Dtype as S;
    match (dtype.code, dtype.bits) {
        (DTypeCode::Bool, _) => S::BOOL,
        (DTypeCode::Int, 8) => S::I8,
        (DTypeCode::Int, 16) => S::I16,
        (DTypeCode::Int, 32) => S::I32,
        (DTypeCode::UInt, 8) => S::U8,
        (DTypeCode::UInt, 16) => S::U16,
        (DTypeCode::UInt, 32) => S::U32,
        (DTypeCode::UInt, _) => S::U64,
        (DTypeCode::Float, 16) => S::F16,
        (DTypeCode::BFloat, _) => S::BF16,
        (DTypeCode::Float, 32) => S::F32,
        (DTypeCode::Float, _) => S::F64,
        (DTypeCode::Int, _) => S::I64,
    }
}

/// A Relay scalar literal of `dtype` with value `v` (`0.5f32`, `1.5f16`, `-2bf16`, `1i64`,
/// `True`); integers truncate `v`, and a half float is `v` as it holds it exactly.
pub fn literal(dtype: DType, v: f64) -> String {
    match dtype.code {
        DTypeCode::Bool => (if v != 0.0 { "True" } else { "False" }).to_string(),
        DTypeCode::Float if dtype.bits == 16 => format!("{v:?}f16"),
        DTypeCode::BFloat => format!("{v:?}bf16"),
        DTypeCode::Float if dtype.bits == 32 => format!("{:?}f32", v as f32),
        DTypeCode::Float => format!("{v:?}f64"),
        DTypeCode::Int => format!("{}i{}", v as i64, dtype.bits),
        DTypeCode::UInt => format!("{}u{}", v as u64, dtype.bits),
    }
}
