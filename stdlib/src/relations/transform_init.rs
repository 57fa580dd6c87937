//! Tensors made from attributes rather than data (TVM `src/relay/op/tensor/transform.cc`
//! `InitOpRel`, `FullRel`, `ShapeOfRel`): `zeros`, `ones`, `full`, `shape_of`.

use super::attr_util::{dim_from_len, dtype_attr, shape_attr};
use super::tensor_arg;
use crate::known;
use relay_compiler::op::{AttrReader, RelType, RelationResult};
use relay_devices::DType;

/// `zeros(shape=[...], dtype="float32")`, `ones(...)`: no inputs; a tensor of the given shape
/// and dtype.
pub fn init_rel(_: &[RelType], attrs: &AttrReader) -> RelationResult {
    let shape = shape_attr(attrs, "shape")?;
    let dtype = dtype_attr(attrs, "dtype", DType::F32)?;
    Ok(Some(RelType::tensor(shape, dtype)))
}

/// `full(fill_value, shape=[...], dtype=...)`: `fill_value` is a scalar; the dtype defaults to
/// its dtype.
pub fn full_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let fill = known!(tensor_arg(args, 0));
    if fill.rank() != 0 {
        return Err(format!("the fill value must be a scalar, found `{fill}`"));
    }
    let shape = shape_attr(attrs, "shape")?;
    let dtype = dtype_attr(attrs, "dtype", fill.dtype)?;
    Ok(Some(RelType::tensor(shape, dtype)))
}

/// `shape_of(data, dtype="int32")`: the shape of `data` as a 1-d tensor of `rank` integers.
pub fn shape_of_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    let dtype = dtype_attr(attrs, "dtype", DType::I32)?;
    if !dtype.is_int() {
        return Err(format!("dtype must be an integer type, found {dtype}"));
    }
    Ok(Some(RelType::tensor(vec![dim_from_len(t.rank())?], dtype)))
}
