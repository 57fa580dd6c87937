//! Injective and creation rules (reference: `crate::kernels::transform`): each output
//! element reads input elements at computed indices, so these fuse into their consumers.

use super::util::{attrs, flatten, lazy, lit, norm_axis, tensors, unflatten};
use crate::attrs::{
    ConcatenateAttrs, InitOpAttrs, PadAttrs, PadMode, StackAttrs, StridedSliceAttrs, TakeAttrs, TakeMode,
    TransposeAttrs,
};
use relay_compiler::kir::{Expr, Index};
use relay_compiler::op::{AttrReader, ComputeFn, ComputeInput, LazyTensor, OutType, TensorDef};
use relay_devices::DType;

/// The rule of transform `name`.
pub(super) fn rule(name: &str) -> Option<ComputeFn> {
    let f: ComputeFn = match name {
        "reshape" | "squeeze" | "expand_dims" | "nn.batch_flatten" => same_order,
        "transpose" => transpose,
        "broadcast_to" => |i, _, _| {
            let [x] = tensors(i)?;
            let x = x.clone();
            Ok(lazy(move |k, idx| x.at_broadcast(k, idx)))
        },
        "concatenate" => concatenate,
        "stack" => stack,
        "take" => take,
        "strided_slice" => strided_slice,
        "nn.pad" => pad,
        "zeros" => |_, _, o| fill_const(o, 0.0),
        "ones" => |_, _, o| fill_const(o, 1.0),
        "full" => full,
        _ => return None,
    };
    Some(f)
}

/// Ops that keep the row-major order of the elements and only change the shape.
fn same_order(inputs: &[ComputeInput], _: &AttrReader, out: &OutType) -> Result<TensorDef, String> {
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

fn transpose(inputs: &[ComputeInput], r: &AttrReader, _: &OutType) -> Result<TensorDef, String> {
    let [x] = tensors(inputs)?;
    let a: TransposeAttrs = attrs(r)?;
    let rank = x.shape.len();
    let axes: Vec<usize> = match a.axes {
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
fn concatenate(inputs: &[ComputeInput], r: &AttrReader, out: &OutType) -> Result<TensorDef, String> {
    let [ComputeInput::Tuple(parts)] = inputs else { return Err("concatenate takes one tuple".into()) };
    let a: ConcatenateAttrs = attrs(r)?;
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

fn stack(inputs: &[ComputeInput], r: &AttrReader, out: &OutType) -> Result<TensorDef, String> {
    let [ComputeInput::Tuple(parts)] = inputs else { return Err("stack takes one tuple".into()) };
    let a: StackAttrs = attrs(r)?;
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

fn take(inputs: &[ComputeInput], r: &AttrReader, _: &OutType) -> Result<TensorDef, String> {
    let [data, indices] = tensors(inputs)?;
    let a: TakeAttrs = attrs(r)?;
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

fn strided_slice(inputs: &[ComputeInput], r: &AttrReader, _: &OutType) -> Result<TensorDef, String> {
    let [x] = tensors(inputs)?;
    let a: StridedSliceAttrs = attrs(r)?;
    let shape: Vec<usize> = x.shape.iter().map(|&d| d as usize).collect();
    let plan = crate::kernels::slice_plan(&shape, &a).map_err(|e| e.to_string())?;
    let x = x.clone();
    Ok(lazy(move |k, idx| {
        let mut src = idx.to_vec();
        for &(axis, start, step, _) in &plan {
            src[axis] = idx[axis].clone() * step as i64 + start as i64;
        }
        x.at(k, &src)
    }))
}

fn pad(inputs: &[ComputeInput], r: &AttrReader, _: &OutType) -> Result<TensorDef, String> {
    let [x, value] = tensors(inputs)?;
    let a: PadAttrs = attrs(r)?;
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

fn fill_const(out: &OutType, v: f64) -> Result<TensorDef, String> {
    let d = out.dtype;
    Ok(lazy(move |_, _| lit(d, v)))
}

fn full(inputs: &[ComputeInput], r: &AttrReader, out: &OutType) -> Result<TensorDef, String> {
    let [v] = tensors(inputs)?;
    let _: InitOpAttrs = attrs(r)?;
    let (v, d) = (v.clone(), out.dtype);
    Ok(lazy(move |k, _| v.at(k, &[]).cast(d)))
}
