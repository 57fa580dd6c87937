//! Injective and creation rules (the operators: `crate::ops::transform`), each an item's
//! `COMPUTE`: each output element reads input elements at computed indices, so these fuse
//! into their consumers. `split`'s projection is here too.

use super::util::{flatten, lazy, lit, norm_axis, tensors, unflatten};
use crate::attrs::{
    ConcatenateAttrs, InitOpAttrs, MirrorPadAttrs, MirrorPadMode, NoAttrs, OpAttrs, PadAttrs, PadMode,
    ReshapeLikeAttrs, SplitAttrs, StackAttrs, StridedSliceAttrs, TakeAttrs, TakeMode, TransposeAttrs,
};
use crate::ops::transform::split_sizes;
use relay_compiler::ir::AttrValue;
use relay_compiler::kir::{Expr, Index};
use relay_compiler::op::{AttrReader, ComputeInput, LazyTensor, OutType, ProjectedCall, TensorDef};
use relay_devices::DType;

/// Ops that keep the row-major order of the elements and only change the shape.
pub(crate) fn same_order<A>(inputs: &[ComputeInput], _: &A, out: &OutType) -> Result<TensorDef, String> {
    let [x] = tensors(inputs)?;
    if x.size() != out.shape.iter().product::<i64>() {
        return Err("element counts differ".into());
    }
    let (x, out_shape) = (x.clone(), out.shape.clone());
    Ok(lazy(move |k, idx| {
        let flat = flatten(&out_shape, idx);
        x.at(k, &unflatten(&x.shape, &flat))
    }))
}

pub(crate) fn transpose(
    inputs: &[ComputeInput],
    a: &TransposeAttrs,
    _: &OutType,
) -> Result<TensorDef, String> {
    let [x] = tensors(inputs)?;
    let rank = x.shape.len();
    let axes: Vec<usize> = match &a.axes {
        None => (0..rank).rev().collect(),
        Some(axes) => axes.iter().map(|&ax| norm_axis(ax, rank)).collect::<Result<_, _>>()?,
    };
    if axes.len() != rank {
        return Err("transpose axes do not match the rank".into());
    }
    let x = x.clone();
    Ok(lazy(move |k, idx| {
        let mut src = vec![Index::Const(0); rank];
        for (o, &ax) in axes.iter().enumerate() {
            src[ax] = idx[o].clone();
        }
        x.at(k, &src)
    }))
}

/// `select(i < end_0, v_0, select(i < end_1, v_1, ...))` over the non-empty parts, each read
/// at a clamped position so every load stays in bounds.
pub(crate) fn concatenate(
    inputs: &[ComputeInput],
    a: &ConcatenateAttrs,
    out: &OutType,
) -> Result<TensorDef, String> {
    let [ComputeInput::Tuple(parts)] = inputs else { return Err("concatenate takes one tuple".into()) };
    let axis = norm_axis(a.axis, out.shape.len())?;
    let parts: Vec<LazyTensor> =
        parts.iter().filter(|p| p.shape.get(axis).copied().unwrap_or(0) > 0).cloned().collect();
    if parts.is_empty() {
        return Err("nothing to concatenate".into());
    }
    Ok(lazy(move |k, idx| {
        let mut value: Option<Expr> = None;
        let mut offsets = Vec::with_capacity(parts.len());
        let mut start = 0;
        for p in &parts {
            offsets.push(start);
            start += p.shape[axis];
        }
        for (p, &off) in parts.iter().zip(&offsets).rev() {
            let mut src = idx.to_vec();
            src[axis] = (idx[axis].clone() - off).clamp(0, p.shape[axis] - 1);
            let v = p.at(k, &src);
            value = Some(match value {
                None => v,
                Some(later) => {
                    Expr::select(Expr::index(idx[axis].clone()).lt(Expr::i64(off + p.shape[axis])), v, later)
                }
            });
        }
        value.unwrap_or_else(|| lit(DType::F32, 0.0))
    }))
}

pub(crate) fn stack(inputs: &[ComputeInput], a: &StackAttrs, out: &OutType) -> Result<TensorDef, String> {
    let [ComputeInput::Tuple(parts)] = inputs else { return Err("stack takes one tuple".into()) };
    let axis = norm_axis(a.axis, out.shape.len())?;
    let Some((last, rest)) = parts.split_last() else { return Err("nothing to stack".into()) };
    let (last, rest) = (last.clone(), rest.to_vec());
    Ok(lazy(move |k, idx| {
        let mut src = idx.to_vec();
        src.remove(axis);
        let mut value = last.at(k, &src);
        for (j, p) in rest.iter().enumerate().rev() {
            value =
                Expr::select(Expr::index(idx[axis].clone()).equal(Expr::i64(j as i64)), p.at(k, &src), value);
        }
        value
    }))
}

pub(crate) fn take(inputs: &[ComputeInput], a: &TakeAttrs, _: &OutType) -> Result<TensorDef, String> {
    let [data, indices] = tensors(inputs)?;
    if a.batch_dims != 0 || a.mode == TakeMode::Fast {
        return Err("this take runs in the reference kernel".into());
    }
    let (data, indices) = (data.clone(), indices.clone());
    let axis = match a.axis {
        Some(ax) => Some(norm_axis(ax, data.shape.len())?),
        None => None,
    };
    let n = axis.map_or(data.size(), |ax| data.shape[ax]);
    if n == 0 || !indices.dtype.is_int() {
        return Err("take from an empty axis runs in the reference kernel".into());
    }
    let mode = a.mode;
    let ir = indices.shape.len();
    Ok(lazy(move |k, idx| {
        let (before, rest) = idx.split_at(axis.unwrap_or(0).min(idx.len()));
        let (ii, after) = rest.split_at(ir.min(rest.len()));
        let raw = Index::value(indices.at(k, ii).cast(DType::I64));
        let pos = match mode {
            TakeMode::Wrap => raw.floor_mod(n),
            _ => raw.clamp(0, n - 1),
        };
        match axis {
            None => data.at(k, &unflatten(&data.shape, &pos)),
            Some(_) => {
                let src: Vec<Index> =
                    before.iter().cloned().chain([pos]).chain(after.iter().cloned()).collect();
                data.at(k, &src)
            }
        }
    }))
}

pub(crate) fn strided_slice(
    inputs: &[ComputeInput],
    a: &StridedSliceAttrs,
    _: &OutType,
) -> Result<TensorDef, String> {
    let [x] = tensors(inputs)?;
    let shape: Vec<usize> = x.shape.iter().map(|&d| d as usize).collect();
    let plan = crate::ops::transform::slice_plan(&shape, a).map_err(|e| e.to_string())?;
    let x = x.clone();
    Ok(lazy(move |k, idx| {
        let mut src = idx.to_vec();
        for &(axis, start, step, _) in &plan {
            src[axis] = idx[axis].clone() * step as i64 + start as i64;
        }
        x.at(k, &src)
    }))
}

pub(crate) fn pad(inputs: &[ComputeInput], a: &PadAttrs, _: &OutType) -> Result<TensorDef, String> {
    let [x, value] = tensors(inputs)?;
    if a.pad_mode == PadMode::Reflect
        || a.pad_width.len() != x.shape.len()
        || a.pad_width.iter().any(|w| w.len() != 2 || w[0] < 0 || w[1] < 0)
        || x.shape.contains(&0)
    {
        return Err("this pad runs in the reference kernel".into());
    }
    let before: Vec<i64> = a.pad_width.iter().map(|w| w[0]).collect();
    let (x, value, mode) = (x.clone(), value.clone(), a.pad_mode);
    Ok(lazy(move |k, idx| {
        let mut inside = Expr::bool(true);
        let mut src = Vec::with_capacity(idx.len());
        for ((i, &b), &n) in idx.iter().zip(&before).zip(&x.shape) {
            let p = i.clone() - b;
            inside = inside
                .and(Expr::index(p.clone()).ge(Expr::i64(0)))
                .and(Expr::index(p.clone()).lt(Expr::i64(n)));
            src.push(p.clamp(0, n - 1));
        }
        let v = x.at(k, &src);
        match mode {
            PadMode::Constant => Expr::select(inside, v, value.at(k, &[]).cast(x.dtype)),
            _ => v,
        }
    }))
}

/// `nn.mirror_pad`: output coordinate `i` of an axis of size `n` padded by `before` reads the
/// input at `p = i - before` mirrored once about the edges (the reference kernel's
/// `mirror_border`), `SYMMETRIC` about `-1/2` and `n - 1/2`, `REFLECT` about `0` and `n - 1`.
/// In doubled coordinates both mirrors are one formula, `M - |M - |2p + s||` with `s` 1
/// (`SYMMETRIC`) or 0 and `M = 2(n - 1) + 2s`, halved after taking `s` away again.
pub(crate) fn mirror_pad(
    inputs: &[ComputeInput],
    a: &MirrorPadAttrs,
    _: &OutType,
) -> Result<TensorDef, String> {
    let [x] = tensors(inputs)?;
    if a.pad_width.len() != x.shape.len() || a.pad_width.iter().any(|w| w.len() != 2) || x.shape.contains(&0)
    {
        return Err("this mirror_pad runs in the reference kernel".into());
    }
    let s = match a.mode {
        MirrorPadMode::Symmetric => 1,
        MirrorPadMode::Reflect => 0,
    };
    let before: Vec<i64> = a.pad_width.iter().map(|w| w[0]).collect();
    let x = x.clone();
    Ok(lazy(move |k, idx| {
        let abs = |v: Index| v.clone().max(Index::Const(0) - v);
        let src: Vec<Index> = idx
            .iter()
            .zip(&before)
            .zip(&x.shape)
            .map(|((i, &b), &n)| {
                let m = 2 * (n - 1) + 2 * s;
                let u = (i.clone() - b) * 2 + s;
                (Index::Const(m) - abs(Index::Const(m) - abs(u)) - s).floor_div(2).clamp(0, n - 1)
            })
            .collect();
        x.at(k, &src)
    }))
}

pub(crate) fn fill_const(out: &OutType, v: f64) -> Result<TensorDef, String> {
    let d = out.dtype;
    Ok(lazy(move |_, _| lit(d, v)))
}

pub(crate) fn full(inputs: &[ComputeInput], _: &InitOpAttrs, out: &OutType) -> Result<TensorDef, String> {
    let [v] = tensors(inputs)?;
    let (v, d) = (v.clone(), out.dtype);
    Ok(lazy(move |k, _| v.at(k, &[]).cast(d)))
}

/// `broadcast_to`: each output element reads the input at the broadcast position.
pub(crate) fn broadcast_to(
    inputs: &[ComputeInput],
    _: &InitOpAttrs,
    _: &OutType,
) -> Result<TensorDef, String> {
    let [x] = tensors(inputs)?;
    let x = x.clone();
    Ok(lazy(move |k, idx| x.at_broadcast(k, idx)))
}

/// `split`'s projection: field `field` of `split(x, indices_or_sections, axis)` is the slice of
/// `x` between the field's split points along `axis` (the sizes the shape function gives).
pub(crate) fn split_field(
    r: &AttrReader,
    shapes: &[Vec<i64>],
    field: usize,
) -> Result<ProjectedCall, String> {
    let [shape] = shapes else { return Err("split takes one input".into()) };
    let a = SplitAttrs::from_attrs(r)?;
    let axis = norm_axis(a.axis, shape.len())?;
    let dim = usize::try_from(shape[axis]).map_err(|_| "split of an unknown dimension".to_string())?;
    let sizes = split_sizes(dim, &a.indices_or_sections).map_err(|e| e.to_string())?;
    let begin: usize = sizes.iter().take(field).sum();
    let size = sizes.get(field).ok_or_else(|| format!("split has no field {field}"))?;
    let ints = |v: usize| AttrValue::List(vec![AttrValue::Int(v as i64)]);
    Ok(ProjectedCall {
        op: "strided_slice",
        attrs: vec![("begin", ints(begin)), ("end", ints(begin + size)), ("axes", ints(axis))],
    })
}

/// The data operand of a `_like` call (its first input): the second contributes only its
/// type, which the output type already carries.
fn like_data(inputs: &[ComputeInput]) -> Result<&[ComputeInput], String> {
    match inputs {
        [x, _] => Ok(std::slice::from_ref(x)),
        _ => Err(format!("expected 2 inputs, got {}", inputs.len())),
    }
}

/// `reshape_like`: the data in row-major order under the output's shape.
pub(crate) fn reshape_like(
    inputs: &[ComputeInput],
    _: &ReshapeLikeAttrs,
    out: &OutType,
) -> Result<TensorDef, String> {
    same_order(like_data(inputs)?, &(), out)
}

/// `broadcast_to_like`: the data broadcast to the output's shape.
pub(crate) fn broadcast_to_like(
    inputs: &[ComputeInput],
    _: &NoAttrs,
    out: &OutType,
) -> Result<TensorDef, String> {
    broadcast_to(like_data(inputs)?, &InitOpAttrs::default(), out)
}
