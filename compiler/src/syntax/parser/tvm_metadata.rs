//! TVM's own `#[metadata]` form: the JSON of its node serializer (`tvm.ir.save_json`, what
//! `mod.astext(show_meta_data=True)` appends), from which we read the `relay.Constant`s.
//!
//! ```text
//! {"root": 1,
//!  "nodes": [{"type_key": ""},
//!            {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},
//!            {"type_key": "Array", "data": [3]},
//!            {"type_key": "relay.Constant", "attrs": {"data": "0", "span": "0", ...}}],
//!  "b64ndarrays": ["P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAQAAAAIgAQACAAAAAAAAAAgAAAAAAAAAAACAPwAAAEA="],
//!  "attrs": {"tvm_version": "0.16.0"}}
//! ```
//!
//! The root is a map from kind to an array of nodes; a constant's `data` attribute indexes
//! `b64ndarrays`, each an NDArray in TVM's `SaveDLTensor` layout, base64-encoded: magic
//! `0xDD5E40F096B4A13F` (u64), reserved (u64), device (two i32), ndim (i32), dtype (code u8:
//! 0 int, 1 uint, 2 float; bits u8; lanes u16), shape (ndim × i64), data size in bytes (i64),
//! then the elements, little-endian. A map's keys are either in `keys` (a string map) or
//! interleaved with the values in `data` as `runtime.String` nodes. Other kinds (`tir.SizeVar`,
//! `VirtualDevice`) are not needed: a `meta[tir.SizeVar][i]` dimension is read as `?`.

use crate::ir::ConstantData;
use base64::Engine;
use relay_devices::{DType, DTypeCode};
use serde_json::Value;

/// TVM's `kTVMNDArrayMagic`.
const NDARRAY_MAGIC: u64 = 0xDD5E_40F0_96B4_A13F;

/// Whether `v` looks like TVM's node-serializer JSON rather than our own metadata form.
pub(super) fn is_tvm_json(v: &Value) -> bool {
    v.get("root").is_some() && v.get("nodes").is_some()
}

/// The `relay.Constant`s of TVM's metadata JSON, in order, or what is wrong with it.
pub(super) fn constants(v: &Value, kind: &str) -> Result<Vec<ConstantData>, String> {
    let nodes = v.get("nodes").and_then(Value::as_array).ok_or("`nodes` must be a list")?;
    let node = |i: &Value| -> Result<&Value, String> {
        let i = i.as_u64().ok_or("a node index must be a non-negative integer")?;
        nodes.get(usize::try_from(i).unwrap_or(usize::MAX)).ok_or(format!("node index {i} is out of range"))
    };
    let arrays: Vec<String> = match v.get("b64ndarrays") {
        None => vec![],
        Some(a) => a
            .as_array()
            .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect())
            .ok_or("`b64ndarrays` must be a list of strings")?,
    };
    let root = node(v.get("root").ok_or("`root` is missing")?)?;
    let Some(list) = map_entry(root, kind, &node)? else { return Ok(vec![]) };
    let items = node(list)?.get("data").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let c = node(item)?;
            let at = c
                .get("attrs")
                .and_then(|a| a.get("data"))
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<usize>().ok())
                .ok_or_else(|| format!("constant {i}: its `data` attribute must index `b64ndarrays`"))?;
            let text = arrays.get(at).ok_or_else(|| format!("constant {i}: no `b64ndarrays` entry {at}"))?;
            ndarray(text).map_err(|e| format!("constant {i}: {e}"))
        })
        .collect()
}

/// The value (a node index) of `key` in the map node `map`, if it has that key.
fn map_entry<'v>(
    map: &'v Value,
    key: &str,
    node: &impl Fn(&Value) -> Result<&'v Value, String>,
) -> Result<Option<&'v Value>, String> {
    if map.get("type_key").and_then(Value::as_str) != Some("Map") {
        return Err("the root node must be a `Map`".to_string());
    }
    let data = map.get("data").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    match map.get("keys").and_then(Value::as_array) {
        Some(keys) => {
            let i = keys.iter().position(|k| k.as_str() == Some(key));
            Ok(i.and_then(|i| data.get(i)))
        }
        None => {
            for pair in data.chunks(2) {
                if let [k, v] = pair {
                    if node(k)?.get("repr_str").and_then(Value::as_str) == Some(key) {
                        return Ok(Some(v));
                    }
                }
            }
            Ok(None)
        }
    }
}

/// Reads little-endian values off the front of a byte slice.
struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err("the NDArray ends early".to_string());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
}

/// One NDArray of `b64ndarrays`.
fn ndarray(b64: &str) -> Result<ConstantData, String> {
    let raw =
        base64::engine::general_purpose::STANDARD.decode(b64).map_err(|e| format!("bad base64: {e}"))?;
    let mut r = Bytes(&raw);
    if u64::from_le_bytes(r.array()?) != NDARRAY_MAGIC {
        return Err("not an NDArray (wrong magic number)".to_string());
    }
    r.take(8 + 8)?; // reserved, device
    let ndim = i32::from_le_bytes(r.array()?);
    let [code, bits, l0, l1] = r.array()?;
    if u16::from_le_bytes([l0, l1]) != 1 {
        return Err("vector dtypes are not supported in constants".to_string());
    }
    let dtype = match (code, bits) {
        (1, 1) => Some(DType::BOOL),
        (0, b) => format!("int{b}").parse().ok(),
        (1, b) => format!("uint{b}").parse().ok(),
        (2, b) => format!("float{b}").parse().ok(),
        // DLPack's `kDLBfloat`.
        (4, b) => format!("bfloat{b}").parse().ok(),
        _ => None,
    }
    .ok_or(format!("unsupported dtype (code {code}, {bits} bits)"))?;
    let ndim = usize::try_from(ndim).map_err(|_| "negative ndim".to_string())?;
    let mut shape = Vec::new();
    let mut count = 1usize;
    for _ in 0..ndim {
        let d = i64::from_le_bytes(r.array()?);
        let n = usize::try_from(d).map_err(|_| format!("negative dimension {d}"))?;
        count = count.checked_mul(n).ok_or("the shape has too many elements")?;
        shape.push(d);
    }
    let size = usize::try_from(i64::from_le_bytes(r.array()?)).map_err(|_| "negative data size")?;
    let width = dtype.size_bytes();
    if count.checked_mul(width) != Some(size) {
        return Err(format!("{size} data bytes do not hold {count} elements of {dtype}"));
    }
    let data = r.take(size)?.chunks_exact(width).map(|c| element(dtype, c)).collect();
    Ok(ConstantData { dtype, shape: shape.clone(), data })
}

/// One little-endian element of `dtype` as the `f64` constants hold.
fn element(dtype: DType, b: &[u8]) -> f64 {
    let mut a = [0u8; 8];
    a[..b.len()].copy_from_slice(b);
    let signed = |bits: u32| {
        let v = u64::from_le_bytes(a);
        ((v << (64 - bits)) as i64 >> (64 - bits)) as f64
    };
    match (dtype.code, dtype.bits) {
        (DTypeCode::Bool, _) => f64::from(u8::from(a[0] != 0)),
        (DTypeCode::Int, bits) => signed(u32::from(bits)),
        (DTypeCode::UInt, _) => u64::from_le_bytes(a) as f64,
        (DTypeCode::Float, 16) => f64::from(half::f16::from_le_bytes([a[0], a[1]])),
        (DTypeCode::BFloat, _) => f64::from(half::bf16::from_le_bytes([a[0], a[1]])),
        (DTypeCode::Float, 32) => f64::from(f32::from_le_bytes([a[0], a[1], a[2], a[3]])),
        (DTypeCode::Float, _) => f64::from_le_bytes(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `SaveDLTensor` NDArray of float32 `[1, 2]` with shape `[2]`.
    fn f32_pair() -> String {
        let mut b = Vec::new();
        b.extend(NDARRAY_MAGIC.to_le_bytes());
        b.extend([0u8; 8]);
        b.extend(1i32.to_le_bytes());
        b.extend(0i32.to_le_bytes());
        b.extend(1i32.to_le_bytes());
        b.extend([2u8, 32, 1, 0]);
        b.extend(2i64.to_le_bytes());
        b.extend(8i64.to_le_bytes());
        b.extend(1f32.to_le_bytes());
        b.extend(2f32.to_le_bytes());
        base64::engine::general_purpose::STANDARD.encode(b)
    }

    #[test]
    fn reads_a_string_keyed_map() {
        let b64 = f32_pair();
        assert_eq!(b64, "P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAQAAAAIgAQACAAAAAAAAAAgAAAAAAAAAAACAPwAAAEA=");
        let json = format!(
            r#"{{"root": 1, "nodes": [{{"type_key": ""}}, {{"type_key": "Map", "keys": ["relay.Constant"], "data": [2]}},
                {{"type_key": "Array", "data": [3]}}, {{"type_key": "relay.Constant", "attrs": {{"data": "0", "span": "0"}}}}],
                "b64ndarrays": ["{b64}"], "attrs": {{"tvm_version": "0.16.0"}}}}"#
        );
        let v: Value = serde_json::from_str(&json).unwrap();
        assert!(is_tvm_json(&v));
        let cs = constants(&v, "relay.Constant").unwrap();
        assert_eq!(
            (cs[0].dtype, cs[0].shape.clone(), cs[0].data.clone()),
            (DType::F32, vec![2], vec![1.0, 2.0])
        );
    }

    #[test]
    fn reads_interleaved_keys_and_rejects_damage() {
        let b64 = f32_pair();
        let json = |arrays: &str| {
            format!(
                r#"{{"root": 1, "nodes": [{{"type_key": ""}}, {{"type_key": "Map", "data": [4, 2]}},
                    {{"type_key": "Array", "data": [3]}}, {{"type_key": "relay.Constant", "attrs": {{"data": "0"}}}},
                    {{"type_key": "runtime.String", "repr_str": "relay.Constant"}}], "b64ndarrays": [{arrays}]}}"#
            )
        };
        let v: Value = serde_json::from_str(&json(&format!("\"{b64}\""))).unwrap();
        assert_eq!(constants(&v, "relay.Constant").unwrap()[0].data, vec![1.0, 2.0]);
        for bad in ["\"AAAA\"", "\"!!\"", "", &format!("\"{}\"", &b64[..40])] {
            let v: Value = serde_json::from_str(&json(bad)).unwrap();
            assert!(constants(&v, "relay.Constant").is_err(), "{bad}");
        }
    }

    #[test]
    fn elements_of_every_width() {
        assert_eq!(element(DType::I8, &[0xff]), -1.0);
        assert_eq!(element(DType::I64, &(-5i64).to_le_bytes()), -5.0);
        assert_eq!(element(DType::U16, &[0xff, 0xff]), 65535.0);
        assert_eq!(element(DType::F16, &half::f16::from_f32(1.5).to_le_bytes()), 1.5);
        assert_eq!(element(DType::BF16, &half::bf16::from_f32(-1.5).to_le_bytes()), -1.5);
        assert_eq!(element(DType::BOOL, &[1]), 1.0);
    }
}
