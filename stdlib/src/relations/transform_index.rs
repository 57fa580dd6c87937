//! Indexing transforms (TVM `src/relay/op/tensor/transform.cc`, `src/relay/op/nn/pad.cc`,
//! `include/tvm/topi/detail/strided_slice.h`): `take`, `strided_slice`, `nn.pad`.

use super::attr_util::{add_dims, required_ints};
use super::{normalize_axis, tensor_arg};
use crate::known;
use relay_compiler::ir::{AttrValue, Dim};
use relay_compiler::op::{AttrReader, RelType, RelationResult};

/// `take(data, indices, axis=None, batch_dims=0, mode="clip")`: elements of `data` picked by
/// integer `indices`. Without `axis`, `data` is flattened and the output has the indices'
/// shape; with it, the shape is `data.shape[:axis] + indices.shape[batch_dims:] +
/// data.shape[axis+1:]`. `mode` is `clip`, `wrap` or `fast` (how out-of-range indices are
/// treated at run time).
pub fn take_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let data = known!(tensor_arg(args, 0));
    let indices = known!(tensor_arg(args, 1));
    if !indices.dtype.is_int() {
        return Err(format!("indices must be an integer tensor, found `{indices}`"));
    }
    let mode = attrs.str("mode", "clip")?;
    if !matches!(mode, "clip" | "wrap" | "fast") {
        return Err(format!("mode must be \"clip\", \"wrap\" or \"fast\", found {mode:?}"));
    }
    if attrs.get("axis").is_none() {
        return Ok(Some(RelType::tensor(indices.shape.clone(), data.dtype)));
    }
    let axis = normalize_axis(attrs.int("axis", 0)?, data.rank()).map_err(|e| format!("{e}: `{data}`"))?;
    let batch_dims = attrs.int("batch_dims", 0)?;
    let n_idx = indices.rank() as i64;
    let b = if batch_dims < 0 { batch_dims + n_idx } else { batch_dims };
    if b < 0 || b > n_idx || b > axis as i64 {
        return Err(format!(
            "batch_dims {batch_dims} must be within the indices' rank {n_idx} and not after axis {axis}"
        ));
    }
    let b = b as usize;
    for i in 0..b {
        if let (Dim::Known(x), Dim::Known(y)) = (data.shape[i], indices.shape[i]) {
            if x != y {
                return Err(format!("batch dimension {i} differs: `{data}` and `{indices}`"));
            }
        }
    }
    let mut shape = data.shape[..axis].to_vec();
    shape.extend_from_slice(&indices.shape[b..]);
    shape.extend_from_slice(&data.shape[axis + 1..]);
    Ok(Some(RelType::tensor(shape, data.dtype)))
}

/// `index` (negative counts from the end) clamped into the range a slice with `stride` may
/// start or stop at (TVM `CanonicalizeIndex`).
fn canonical_index(index: i64, extent: i64, stride: i64) -> i64 {
    let (lo, hi) = if stride < 0 { (-1, extent - 1) } else { (0, extent) };
    let index = if index < 0 { index.saturating_add(extent) } else { index };
    index.clamp(lo, hi)
}

/// The length of `begin..end` by `stride` within a dimension of size `extent`, after
/// canonicalising both ends. A slice running against its stride is an error (as in TVM).
pub fn slice_len(extent: i64, begin: i64, end: i64, stride: i64) -> Result<i64, String> {
    if stride == 0 {
        return Err("strides must not be 0".to_string());
    }
    let b = canonical_index(begin, extent, stride);
    let e = canonical_index(end, extent, stride);
    if (stride > 0 && b > e) || (stride < 0 && e > b) {
        return Err(format!("the slice {begin}:{end}:{stride} runs against its stride"));
    }
    let step = stride.unsigned_abs();
    Ok((e.abs_diff(b).div_ceil(step)) as i64)
}

/// One sliced axis: where it is and its begin, end and stride (ends not yet canonicalised).
struct AxisSlice {
    axis: usize,
    begin: i64,
    end: i64,
    stride: i64,
}

/// The per-axis slices `strided_slice`'s attributes describe: one per `begin` entry, on the
/// listed `axes` or else the leading dimensions. A missing `end` or stride takes the whole
/// dimension (in the stride's direction: a negative stride runs through index 0, as NumPy
/// does, where TVM's relation would stop before it); in `size` mode `end` holds sizes
/// (negative: to the end) and strides are 1.
fn axis_slices(rank: usize, attrs: &AttrReader) -> Result<Vec<AxisSlice>, String> {
    let begin = required_ints(attrs, "begin")?;
    let end = required_ints(attrs, "end")?;
    let strides = attrs.ints("strides")?.unwrap_or_default();
    let size_mode = match attrs.str("slice_mode", "end")? {
        "end" => false,
        "size" => true,
        other => return Err(format!("slice_mode must be \"end\" or \"size\", found {other:?}")),
    };
    if end.len() > begin.len() || strides.len() > begin.len() {
        return Err(format!("end {end:?} and strides {strides:?} may not be longer than begin {begin:?}"));
    }
    let axes: Vec<usize> = match attrs.ints("axes")? {
        Some(axes) if axes.len() != begin.len() => {
            return Err(format!("axes {axes:?} and begin {begin:?} must have the same length"));
        }
        Some(axes) => axes.iter().map(|&a| normalize_axis(a, rank)).collect::<Result<_, _>>()?,
        None if begin.len() > rank => return Err(format!("begin {begin:?} is longer than the rank {rank}")),
        None => (0..begin.len()).collect(),
    };
    Ok(axes
        .into_iter()
        .zip(begin)
        .enumerate()
        .map(|(i, (axis, begin))| {
            let stride = if size_mode { 1 } else { strides.get(i).copied().unwrap_or(1) };
            let end = match end.get(i) {
                Some(&size) if size_mode && size >= 0 => begin.saturating_add(size),
                Some(&e) if !size_mode => e,
                _ if stride < 0 => i64::MIN,
                _ => i64::MAX,
            };
            AxisSlice { axis, begin, end, stride }
        })
        .collect())
}

/// `strided_slice(data, begin=[...], end=[...], strides=[...], axes=None, slice_mode="end")`:
/// each sliced dimension becomes `ceil(|end - begin| / |stride|)` after clamping the ends into
/// the dimension (negative indices count from the end; see `axis_slices`); a `?` dimension
/// stays `?`. A static slice running against its stride is an error, as in TVM.
pub fn strided_slice_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    let mut shape = t.shape.clone();
    for s in axis_slices(t.rank(), attrs).map_err(|e| format!("{e}: `{t}`"))? {
        if let Dim::Known(extent) = t.shape[s.axis] {
            let n = slice_len(extent, s.begin, s.end, s.stride)
                .map_err(|e| format!("{e} on axis {}: `{t}`", s.axis))?;
            shape[s.axis] = Dim::Known(n);
        }
    }
    Ok(Some(RelType::tensor(shape, t.dtype)))
}

/// `pad_width=[[before, after], ...]`: one non-negative pair per dimension.
fn pad_widths(attrs: &AttrReader, rank: usize) -> Result<Vec<(i64, i64)>, String> {
    let Some(AttrValue::List(rows)) = attrs.get("pad_width") else {
        return Err("attribute `pad_width` must be a list of [before, after] pairs".to_string());
    };
    if rows.len() != rank {
        return Err(format!("pad_width gives {} pair(s) for a tensor of rank {rank}", rows.len()));
    }
    rows.iter()
        .map(|row| match row {
            AttrValue::List(pair) => match pair[..] {
                [AttrValue::Int(a), AttrValue::Int(b)] if a >= 0 && b >= 0 => Ok((a, b)),
                [AttrValue::Int(a), AttrValue::Int(b)] => {
                    Err(format!("pad widths must not be negative, found [{a}, {b}]"))
                }
                _ => Err("each pad_width entry must be a pair of integers".to_string()),
            },
            _ => Err("each pad_width entry must be a pair of integers".to_string()),
        })
        .collect()
}

/// `nn.pad(data, pad_value, pad_width=[[b0, a0], ...], pad_mode="constant")`: each dimension
/// grows by its pair; `pad_value` is a scalar. `pad_mode` is `constant`, `edge` or
/// `reflect` (reflecting needs pads smaller than the dimension).
pub fn pad_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let t = known!(tensor_arg(args, 0));
    let value = known!(tensor_arg(args, 1));
    if value.rank() != 0 {
        return Err(format!("the pad value must be a scalar, found `{value}`"));
    }
    let mode = attrs.str("pad_mode", "constant")?;
    if !matches!(mode, "constant" | "edge" | "reflect") {
        return Err(format!("pad_mode must be \"constant\", \"edge\" or \"reflect\", found {mode:?}"));
    }
    let widths = pad_widths(attrs, t.rank()).map_err(|e| format!("{e}: `{t}`"))?;
    let mut shape = Vec::with_capacity(t.rank());
    for (i, (&d, &(before, after))) in t.shape.iter().zip(&widths).enumerate() {
        if let (Dim::Known(n), "reflect") = (d, mode) {
            if before >= n || after >= n {
                return Err(format!(
                    "reflect padding [{before}, {after}] of axis {i} needs pads below its size: `{t}`"
                ));
            }
        }
        shape.push(add_dims(add_dims(d, Dim::Known(before))?, Dim::Known(after))?);
    }
    Ok(Some(RelType::tensor(shape, t.dtype)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relations::attr_util::{int_list, run_rel};
    use relay_devices::DType;
    use Dim::{Any, Known as K};

    fn t(shape: &[Dim], dtype: DType) -> RelType {
        RelType::tensor(shape.to_vec(), dtype)
    }

    #[test]
    fn take_axes() {
        let data = t(&[K(4), K(5), K(6)], DType::F32);
        let idx = t(&[K(2), Any], DType::I64);
        let take = |pairs: &[(&str, AttrValue)]| run_rel(take_rel, &[data.clone(), idx.clone()], pairs);
        assert_eq!(take(&[]), Ok(Some(t(&[K(2), Any], DType::F32))));
        assert_eq!(take(&[("axis", AttrValue::Int(1))]), Ok(Some(t(&[K(4), K(2), Any, K(6)], DType::F32))));
        assert_eq!(take(&[("axis", AttrValue::Int(-1))]), Ok(Some(t(&[K(4), K(5), K(2), Any], DType::F32))));
        assert!(take(&[("axis", AttrValue::Int(3))]).is_err());
        let batched = run_rel(
            take_rel,
            &[data.clone(), t(&[K(4), K(3)], DType::I32)],
            &[("axis", AttrValue::Int(1)), ("batch_dims", AttrValue::Int(1))],
        );
        assert_eq!(batched, Ok(Some(t(&[K(4), K(3), K(6)], DType::F32))));
        let mismatch = run_rel(
            take_rel,
            &[data, t(&[K(3), K(3)], DType::I32)],
            &[("axis", AttrValue::Int(1)), ("batch_dims", AttrValue::Int(1))],
        );
        assert!(mismatch.unwrap_err().contains("batch dimension 0 differs"));
    }

    #[test]
    fn strided_slice_attrs() {
        let x = t(&[K(10), K(8), Any], DType::F32);
        let slice = |pairs: &[(&str, AttrValue)]| run_rel(strided_slice_rel, std::slice::from_ref(&x), pairs);
        let be = |b: &[i64], e: &[i64]| [("begin", int_list(b)), ("end", int_list(e))];
        assert_eq!(slice(&be(&[2], &[5])), Ok(Some(t(&[K(3), K(8), Any], DType::F32))));
        assert_eq!(slice(&be(&[0, 0, 0], &[1, 1, 1])), Ok(Some(t(&[K(1), K(1), Any], DType::F32))));
        let mut size = be(&[8, 2], &[5, -1]).to_vec();
        size.push(("slice_mode", AttrValue::Str("size".into())));
        assert_eq!(slice(&size), Ok(Some(t(&[K(2), K(6), Any], DType::F32))));
        let mut reversed = be(&[-1], &[]).to_vec();
        reversed.push(("strides", int_list(&[-3])));
        assert_eq!(slice(&reversed), Ok(Some(t(&[K(4), K(8), Any], DType::F32))));
        assert!(slice(&[("begin", int_list(&[0]))]).unwrap_err().contains("`end` is required"));
    }

    #[test]
    fn slices() {
        assert_eq!(slice_len(10, 0, 10, 1), Ok(10));
        assert_eq!(slice_len(10, 1, 8, 3), Ok(3));
        assert_eq!(slice_len(10, -3, i64::MAX, 1), Ok(3));
        assert_eq!(slice_len(10, 0, 100, 1), Ok(10));
        assert_eq!(slice_len(10, 9, -11, -1), Ok(10));
        assert_eq!(slice_len(10, i64::MAX, 0, -2), Ok(5));
        assert_eq!(slice_len(10, 9, i64::MIN, -1), Ok(10));
        assert_eq!(slice_len(10, -100, 2, 1), Ok(2));
        assert_eq!(slice_len(10, 3, 3, 1), Ok(0));
        assert!(slice_len(10, 5, 2, 1).unwrap_err().contains("runs against"));
        assert!(slice_len(10, 0, 2, 0).is_err());
        assert_eq!(slice_len(10, i64::MIN, i64::MAX, i64::MIN), Err("the slice -9223372036854775808:9223372036854775807:-9223372036854775808 runs against its stride".into()));
    }
}
