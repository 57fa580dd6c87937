//! Reductions (TVM `ReduceRel`, `ArgReduceRel`): `axis`, `keepdims`, `exclude`.

use super::{normalize_axis, tensor_arg};
use crate::known;
use relay_compiler::ir::Dim;
use relay_compiler::op::{AttrReader, RelType, RelationResult, TensorType};
use relay_devices::DType;

/// The axes a reduction removes: `axis` (all when absent), or all others with `exclude`.
fn reduced_axes(t: &TensorType, attrs: &AttrReader) -> Result<Vec<bool>, String> {
    let rank = t.rank();
    let exclude = attrs.bool("exclude", false)?;
    let mut reduced = vec![attrs.ints("axis")?.is_none(); rank];
    if let Some(axes) = attrs.ints("axis")? {
        for a in axes {
            let i = normalize_axis(a, rank)?;
            if reduced[i] {
                return Err(format!("axis {a} is given twice"));
            }
            reduced[i] = true;
        }
        if exclude {
            reduced.iter_mut().for_each(|r| *r = !*r);
        }
    }
    Ok(reduced)
}

fn reduced_shape(t: &TensorType, attrs: &AttrReader) -> Result<Vec<Dim>, String> {
    let keepdims = attrs.bool("keepdims", false)?;
    let reduced = reduced_axes(t, attrs)?;
    Ok(t.shape
        .iter()
        .zip(&reduced)
        .filter_map(|(&d, &r)| match (r, keepdims) {
            (false, _) => Some(d),
            (true, true) => Some(Dim::Known(1)),
            (true, false) => None,
        })
        .collect())
}

/// `sum`, `mean`, `max`, `min`, `prod`: the input dtype over the reduced shape.
pub fn reduce_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    Ok(Some(RelType::tensor(reduced_shape(t, attrs)?, t.dtype)))
}

/// `argmax`, `argmin`: `int32` indices over the reduced shape.
pub fn arg_reduce_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    Ok(Some(RelType::tensor(reduced_shape(t, attrs)?, DType::I32)))
}
