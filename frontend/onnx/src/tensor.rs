//! Tensors known at import time (initializers, `Constant` nodes), decoded from `TensorProto`
//! into little-endian bytes, the layout safetensors stores.

use crate::dtype;
use onnx_protobuf::tensor_proto::DataLocation;
use onnx_protobuf::TensorProto;
use relay_devices::{DType, DTypeCode};

/// The most elements a declared tensor (input, output or constant) may have: 2^32, far above
/// any model that fits in memory, and low enough that element counts never overflow.
pub const MAX_ELEMENTS: u64 = 1 << 32;

/// The element count of `dims`, checked: every dimension non-negative and the product at
/// most [`MAX_ELEMENTS`]. Unknown dimensions (`None`) count as 1.
pub fn element_count(dims: &[Option<i64>]) -> Result<usize, String> {
    let mut n: u64 = 1;
    for d in dims.iter().flatten() {
        let d = u64::try_from(*d).map_err(|_| format!("dimension {d} is negative"))?;
        n = n
            .checked_mul(d)
            .filter(|&n| n <= MAX_ELEMENTS)
            .ok_or_else(|| format!("shape {dims:?} declares more than {MAX_ELEMENTS} elements"))?;
    }
    usize::try_from(n).map_err(|_| format!("shape {dims:?} is too large for this machine"))
}

/// A tensor's dtype, shape and data.
#[derive(Clone, Debug, PartialEq)]
pub struct Const {
    /// Element type.
    pub dtype: DType,
    /// Shape (every dimension known).
    pub dims: Vec<i64>,
    /// The elements in row-major order, little-endian, [`DType::size_bytes`] each (a `bool`
    /// is one byte).
    pub data: Vec<u8>,
}

impl Const {
    /// Decodes `t` from `raw_data` or the typed data field its type uses.
    ///
    /// # Errors
    /// An unsupported element type, data stored outside the file (`external_data`), a
    /// negative or huge shape, or data whose length does not match the shape.
    pub fn from_proto(t: &TensorProto) -> Result<Const, String> {
        if t.data_location.value() == DataLocation::EXTERNAL as i32 || !t.external_data.is_empty() {
            return Err("tensor data stored outside the model file (external data) is not supported".into());
        }
        let dtype = dtype::from_onnx(t.data_type)?;
        let dims: Vec<Option<i64>> = t.dims.iter().map(|&d| Some(d)).collect();
        let n = element_count(&dims)?;
        let width = dtype.size_bytes();
        let data = if !t.raw_data.is_empty() {
            t.raw_data.clone()
        } else {
            match (dtype.code, dtype.bits) {
                (DTypeCode::Float, 32) => t.float_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
                (DTypeCode::Float, 64) => t.double_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
                (DTypeCode::Int, 64) => t.int64_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
                (DTypeCode::UInt, 32 | 64) => {
                    t.uint64_data.iter().flat_map(|&v| v.to_le_bytes()[..width].to_vec()).collect()
                }
                // int32_data carries every type of 32 bits or fewer, one element per entry
                // (FLOAT16 and BFLOAT16 as their bit patterns).
                _ => t.int32_data.iter().flat_map(|&v| v.to_le_bytes()[..width].to_vec()).collect(),
            }
        };
        if Some(data.len()) != n.checked_mul(width) {
            return Err(format!(
                "its data has {} bytes, but shape {:?} of {dtype} needs {}",
                data.len(),
                t.dims,
                n.saturating_mul(width)
            ));
        }
        Ok(Const { dtype, dims: t.dims.clone(), data })
    }

    /// A tensor of `dtype` and shape `dims` holding `values` (converted: floats to integers
    /// truncate, anything to `bool` is "not zero").
    pub fn from_f64s(dtype: DType, dims: Vec<i64>, values: &[f64]) -> Const {
        let data = values.iter().flat_map(|&v| encode(dtype, v as i64, v)).collect();
        Const { dtype, dims, data }
    }

    /// A tensor of integer (or `bool`) `dtype` and shape `dims` holding `values` (wrapping
    /// to the dtype's width).
    pub fn from_i64s(dtype: DType, dims: Vec<i64>, values: &[i64]) -> Const {
        let data = values.iter().flat_map(|&v| encode(dtype, v, v as f64)).collect();
        Const { dtype, dims, data }
    }

    /// The elements as `f64` (integers converted, booleans 0 or 1).
    pub fn to_f64(&self) -> Vec<f64> {
        let w = self.dtype.size_bytes();
        self.data.chunks_exact(w).map(|c| element_f64(self.dtype, c)).collect()
    }

    /// The elements of an integer tensor (shape, axes, sizes operands).
    ///
    /// # Errors
    /// A floating-point tensor.
    pub fn to_i64(&self) -> Result<Vec<i64>, String> {
        if self.dtype.is_float() {
            return Err(format!("expected an integer tensor, got {}", self.dtype));
        }
        let w = self.dtype.size_bytes();
        Ok(self.data.chunks_exact(w).map(|c| element_i64(self.dtype, c)).collect())
    }

    /// The tensor as a Relay scalar literal (`2.0f32`, `-1i64`, `True`), when it is 0-d
    /// (a literal's type) and a literal holds its value exactly (finite, integers within 2^53).
    pub fn scalar_literal(&self) -> Option<String> {
        if !self.dims.is_empty() {
            return None;
        }
        let v = self.to_f64()[0];
        let exact = if self.dtype.is_float() {
            v.is_finite()
        } else {
            element_i64(self.dtype, &self.data) as f64 as i64 == element_i64(self.dtype, &self.data)
        };
        exact.then(|| dtype::literal(self.dtype, v))
    }
}

/// One element of `dtype` as little-endian bytes: `int` for integer types, `float` for
/// floating-point ones, "not zero" for `bool`.
fn encode(dtype: DType, int: i64, float: f64) -> Vec<u8> {
    match (dtype.code, dtype.bits) {
        (DTypeCode::Bool, _) => vec![u8::from(int != 0 || float != 0.0)],
        (DTypeCode::Float, 16) => half::f16::from_f64(float).to_le_bytes().to_vec(),
        (DTypeCode::BFloat, _) => half::bf16::from_f64(float).to_le_bytes().to_vec(),
        (DTypeCode::Float, 32) => (float as f32).to_le_bytes().to_vec(),
        (DTypeCode::Float, _) => float.to_le_bytes().to_vec(),
        _ => int.to_le_bytes()[..dtype.size_bytes()].to_vec(),
    }
}

/// One little-endian element of `dtype` as `i64` (`u64` above `i64::MAX` wraps, floats truncate).
fn element_i64(dtype: DType, c: &[u8]) -> i64 {
    let mut b = [0u8; 8];
    b[..c.len()].copy_from_slice(c);
    match (dtype.code, c.len()) {
        (DTypeCode::Int, 1) => c[0] as i8 as i64,
        (DTypeCode::Int, 2) => i16::from_le_bytes([c[0], c[1]]) as i64,
        (DTypeCode::Int, 4) => i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64,
        (DTypeCode::Float | DTypeCode::BFloat, _) => element_f64(dtype, c) as i64,
        // Unsigned, boolean and 64-bit signed: zero extension is the value.
        _ => i64::from_le_bytes(b),
    }
}

/// One little-endian element of `dtype` as `f64`.
fn element_f64(dtype: DType, c: &[u8]) -> f64 {
    match (dtype.code, c.len()) {
        (DTypeCode::Float, 2) => half::f16::from_le_bytes([c[0], c[1]]).to_f64(),
        (DTypeCode::BFloat, _) => half::bf16::from_le_bytes([c[0], c[1]]).to_f64(),
        (DTypeCode::Float, 4) => f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64,
        (DTypeCode::Float, _) => f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        (DTypeCode::UInt, _) => {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(b) as f64
        }
        _ => element_i64(dtype, c) as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use onnx_protobuf::tensor_proto::DataType;
    use protobuf::Enum;

    #[test]
    fn half_float_initializers_decode_from_int32_data_and_raw_bytes() {
        // ONNX stores FLOAT16 and BFLOAT16 in int32_data as their 16-bit patterns.
        let halves = [1.5f32, -2.0].map(half::f16::from_f32);
        let t = TensorProto {
            data_type: DataType::FLOAT16.value(),
            dims: vec![2],
            int32_data: halves.iter().map(|h| i32::from(h.to_bits())).collect(),
            ..Default::default()
        };
        let c = Const::from_proto(&t).unwrap();
        assert_eq!((c.dtype, c.to_f64()), (DType::F16, vec![1.5, -2.0]));
        assert_eq!(c.data, halves.iter().flat_map(|h| h.to_le_bytes()).collect::<Vec<_>>());
        let raw = [0.1f32].map(half::bf16::from_f32);
        let t = TensorProto {
            data_type: DataType::BFLOAT16.value(),
            dims: vec![],
            raw_data: raw[0].to_le_bytes().to_vec(),
            ..Default::default()
        };
        let c = Const::from_proto(&t).unwrap();
        assert_eq!((c.dtype, c.to_f64()), (DType::BF16, vec![0.10009765625]));
        assert_eq!(c.scalar_literal().as_deref(), Some("0.10009765625bf16"));
        // Folding writes half floats rounded once, to nearest even.
        assert_eq!(Const::from_f64s(DType::F16, vec![], &[2049.0]).to_f64(), vec![2048.0]);
    }
}
