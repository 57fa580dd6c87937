//! Elementwise relations: the output has the input's type (TVM `IdentityRel`), possibly with
//! a dtype rule.

use super::tensor_arg;
use crate::known;
use relay_compiler::op::{AttrReader, RelType, RelationResult};
use relay_devices::{DType, DTypeCode};

/// `out = in`: `nn.relu`, `negative`, `copy`, `zeros_like`, ...
pub fn identity_rel(args: &[RelType], _: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    Ok(Some(RelType::Tensor(t.clone())))
}

/// Like [`identity_rel`], for ops defined only on floats (`exp`, `log`, `tanh`, `sigmoid`,
/// `sqrt`, `rsqrt`, `erf`).
pub fn float_unary_rel(args: &[RelType], _: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    if !t.dtype.is_float() {
        return Err(format!("expects a floating-point tensor, found `{t}`"));
    }
    Ok(Some(RelType::Tensor(t.clone())))
}

/// `logical_not`: bool in, bool out.
pub fn logical_not_rel(args: &[RelType], _: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    if t.dtype.code != DTypeCode::Bool {
        return Err(format!("expects a bool tensor, found `{t}`"));
    }
    Ok(Some(RelType::Tensor(t.clone())))
}

/// `cast(x, dtype=...)`: same shape, the requested dtype.
pub fn cast_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    let name = attrs.str("dtype", "")?;
    if name.is_empty() {
        return Err("attribute `dtype` is required".to_string());
    }
    let dtype: DType = name.parse().map_err(|e| format!("{e} in attribute `dtype`"))?;
    Ok(Some(RelType::tensor(t.shape.clone(), dtype)))
}
