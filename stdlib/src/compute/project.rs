//! Projections (see `relay_compiler::op::ProjectFn`): `split(x).i` as a `strided_slice` of
//! `x`, so each field of a split fuses with its consumers like any injective op.

use super::util::norm_axis;
use crate::relations::split_sizes;
use relay_compiler::ir::{AttrValue, Dim};
use relay_compiler::op::{AttrReader, ProjectFn, ProjectedCall};

/// The projection of operator `name`, if it has one.
pub fn rule(name: &str) -> Option<ProjectFn> {
    match name {
        "split" => Some(split),
        _ => None,
    }
}

/// Field `field` of `split(x, indices_or_sections, axis)`: the slice of `x` between the
/// field's split points along `axis` (the same sizes the type relation gives the fields).
fn split(r: &AttrReader, shapes: &[Vec<i64>], field: usize) -> Result<ProjectedCall, String> {
    let [shape] = shapes else { return Err("split takes one input".into()) };
    let axis = norm_axis(r.int("axis", 0)?, shape.len())?;
    let spec = r.get("indices_or_sections").ok_or("attribute `indices_or_sections` is required")?;
    let sizes = split_sizes(Dim::Known(shape[axis]), spec)?;
    let mut begin = 0;
    for (i, size) in sizes.into_iter().enumerate() {
        let Dim::Known(size) = size else { return Err("split of an unknown dimension".into()) };
        if i == field {
            let ints = |v: i64| AttrValue::List(vec![AttrValue::Int(v)]);
            return Ok(ProjectedCall {
                op: "strided_slice",
                attrs: vec![("begin", ints(begin)), ("end", ints(begin + size)), ("axes", ints(axis as i64))],
            });
        }
        begin += size;
    }
    Err(format!("split has no field {field}"))
}
