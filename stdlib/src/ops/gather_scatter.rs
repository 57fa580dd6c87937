//! Gathers, scatters and `one_hot` (TVM `src/relay/op/tensor/transform.cc`,
//! `include/tvm/topi/transform.h`, `python/tvm/topi/scatter*.py`): reading and writing tensors
//! at positions given by integer index tensors. Negative indices count from the end; indices
//! outside `-n..n` are a [`KernelError::IndexOutOfRange`] in the reference kernels (fused
//! kernels, which cannot fail, wrap them into range instead).

use super::index::{copy_from_offsets, index_values, may_equal, same_shape, strides, wrap_index};
use crate::attrs::{
    GatherAttrs, GatherNdAttrs, OneHotAttrs, ScatterElementsAttrs, ScatterNdAttrs, ScatterReduction,
};
use crate::compute::util::{lazy, tensors};
use crate::error::KernelError;
use crate::kernels::num::Num;
use crate::kernels::util::{
    any_type, args, for_each_index, normalize_axis, nums, only_output, same_dtype, scalar_value, to_positive,
    to_size,
};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::kir::{Expr, Index};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Element, Storage, Tensor};

/// The gather, scatter and one-hot operators.
pub const GATHER_SCATTER: &[OpEntry] = &[
    OpEntry::of::<Gather>(),
    OpEntry::of::<GatherNd>(),
    OpEntry::of::<ScatterElements>(),
    OpEntry::of::<ScatterNd>(),
    OpEntry::of::<OneHot>(),
];

/// Errors unless `dtype` is an integer type (of an index tensor).
fn index_dtype(dtype: DType) -> Result<(), KernelError> {
    DTypeSet::Ints
        .check(dtype)
        .map(|_| ())
        .map_err(|_| KernelError::DType(format!("indices must be integers, found `{dtype}`")))
}

/// `gather(data, indices, axis)`: `out[p] = data[p with p[axis] = indices[p]]` (NumPy's
/// `take_along_axis`, ONNX `GatherElements`). `indices` has `data`'s rank and, on the other
/// axes, at most its sizes; the output has `indices`' shape and `data`'s dtype.
#[derive(Debug)]
pub struct Gather;

impl Operator for Gather {
    const NAME: &'static str = "gather";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "data[p with p[axis] = indices[p]]";
    type Attrs = GatherAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<GatherAttrs>> = Some(|inputs, a, _| {
        let [data, indices] = tensors(inputs)?;
        let axis = normalize_axis(a.axis, data.shape.len()).map_err(|e| e.to_string())?;
        let n = data.shape[axis];
        if n == 0 || !indices.dtype.is_int() {
            return Err("a gather from an empty axis runs in the reference kernel".into());
        }
        let (data, indices) = (data.clone(), indices.clone());
        Ok(lazy(move |k, idx| {
            let mut src = idx.to_vec();
            src[axis] = Index::value(indices.at(k, idx).cast(DType::I64)).floor_mod(n);
            data.at(k, &src)
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &GatherAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, indices] = args(inputs)?;
        let axis = normalize_axis(a.axis, data.len())?;
        let fits = |i: usize| match (indices[i].value(), data[i].value()) {
            (Some(x), Some(y)) => i == axis || x <= y,
            _ => true,
        };
        if indices.len() != data.len() || !(0..data.len()).all(fits) {
            return Err(KernelError::Shape(format!(
                "gather indices of shape {} do not fit data of shape {} (same rank, no larger off axis {axis})",
                shape_text(indices),
                shape_text(data)
            )));
        }
        Ok(vec![indices.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &GatherAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, i] = args(inputs)?;
        index_dtype(i)?;
        Ok(vec![Self::DTYPES.check(d)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &GatherAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data, indices] = args(inputs)?;
        let offsets = along_axis_offsets(data.shape(), indices, a.axis)?;
        let out = only_output(outputs)?;
        any_type!(data.dtype(), T => copy_from_offsets::<T>(data, &offsets, out))
    }
}

/// The flat offset in `data` of `p with p[axis] = indices[p]`, for every position `p` of
/// `indices` in row-major order (`gather` and `scatter_elements`).
fn along_axis_offsets(dshape: &[usize], indices: &Tensor, axis: i64) -> Result<Vec<usize>, KernelError> {
    let axis = normalize_axis(axis, dshape.len())?;
    let (ds, n) = (strides(dshape), dshape[axis]);
    let mut idx = index_values(indices)?.into_iter();
    let mut offsets = Vec::with_capacity(indices.len());
    for_each_index(indices.shape(), |p| {
        let at = wrap_index(idx.next().unwrap_or(i64::MAX), n)?;
        offsets.push(
            p.iter().zip(&ds).enumerate().map(|(i, (&x, &s))| if i == axis { at * s } else { x * s }).sum(),
        );
        Ok(())
    })?;
    Ok(offsets)
}

/// `gather_nd(data, indices, batch_dims, index_rank)`: with `indices` of shape
/// `(M, B..., Y...)` and `data` of shape `(B..., X_0, ..., X_{N-1})`, `out[b, y, x] =
/// data[b, indices[:, b, y], x]`: the first `M` non-batch axes of `data` are indexed, the rest
/// kept. Output shape `(B..., Y..., X_M, ...)`, `data`'s dtype.
#[derive(Debug)]
pub struct GatherNd;

/// `gather_nd`'s output shape, batch dims `b` and index length `m`.
fn gather_nd_plan<D: ShapeDim>(
    data: &[D],
    indices: &[D],
    a: &GatherNdAttrs,
) -> Result<(Vec<D>, usize, usize), KernelError> {
    let b = usize::try_from(a.batch_dims)
        .map_err(|_| KernelError::Attr(format!("batch_dims must be non-negative, got {}", a.batch_dims)))?;
    let Some((&first, rest)) = indices.split_first() else {
        return Err(KernelError::Shape("gather_nd indices must have rank at least 1".into()));
    };
    let m = match (first.value(), a.index_rank) {
        (Some(m), _) => m,
        (None, Some(r)) => to_positive(r, "index_rank")?,
        (None, None) => {
            return Err(KernelError::Shape(
                "gather_nd needs the length of indices' first axis (index_rank)".into(),
            ))
        }
    };
    if b + m > data.len() || b > rest.len() || !(0..b).all(|i| may_equal(data[i], rest[i])) {
        return Err(KernelError::Shape(format!(
            "gather_nd indices of shape {} do not index data of shape {} with batch_dims {b}",
            shape_text(indices),
            shape_text(data)
        )));
    }
    let mut out = rest.to_vec();
    out.extend_from_slice(&data[b + m..]);
    Ok((out, b, m))
}

impl Operator for GatherNd {
    const NAME: &'static str = "gather_nd";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "data[indices[:, y]] for every position y of indices[0]";
    type Attrs = GatherNdAttrs;
    // `out[batch, y, inner] = data[batch, indices[0, batch, y], ..., indices[m-1, batch, y],
    // inner]`; an index wraps into its axis like `gather`'s (the reference kernel's `-n..n`,
    // and any other value kept in bounds, since a fused kernel cannot fail).
    const COMPUTE: Option<crate::operator::ComputeRule<GatherNdAttrs>> = Some(|inputs, a, _| {
        let [data, indices] = tensors(inputs)?;
        let sizes = |s: &[i64]| s.iter().map(|&d| usize::try_from(d)).collect::<Result<Vec<_>, _>>();
        let (dshape, ishape) = match (sizes(&data.shape), sizes(&indices.shape)) {
            (Ok(d), Ok(i)) => (d, i),
            _ => return Err("a gather_nd of unknown shape runs in the reference kernel".into()),
        };
        let (_, b, m) = gather_nd_plan(&dshape, &ishape, a).map_err(|e| e.to_string())?;
        if !indices.dtype.is_int() || dshape[b..b + m].contains(&0) {
            return Err("a gather_nd from an empty axis runs in the reference kernel".into());
        }
        let (data, indices) = (data.clone(), indices.clone());
        let positions = ishape.len() - 1;
        Ok(lazy(move |k, idx| {
            let (at, inner) = idx.split_at(positions);
            let mut src: Vec<Index> = at[..b].to_vec();
            for (j, &n) in dshape[b..b + m].iter().enumerate() {
                let row: Vec<Index> =
                    std::iter::once(Index::from(j as i64)).chain(at.iter().cloned()).collect();
                src.push(Index::value(indices.at(k, &row).cast(DType::I64)).floor_mod(n as i64));
            }
            src.extend(inner.iter().cloned());
            data.at(k, &src)
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &GatherNdAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, indices] = args(inputs)?;
        Ok(vec![gather_nd_plan(data, indices, a)?.0])
    }

    fn dtypes(inputs: &[DType], _: &GatherNdAttrs) -> Result<Vec<DType>, KernelError> {
        Gather::dtypes(inputs, &GatherAttrs::default())
    }

    fn reference(
        inputs: &[&Tensor],
        a: &GatherNdAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data, indices] = args(inputs)?;
        let (dshape, ishape) = (data.shape(), indices.shape());
        let (_, b, m) = gather_nd_plan(dshape, ishape, a)?;
        let offsets = nd_offsets(dshape, ishape, &index_values(indices)?, b, m)?;
        let out = only_output(outputs)?;
        any_type!(data.dtype(), T => copy_from_offsets::<T>(data, &offsets, out))
    }
}

/// The flat offset in `data` of every element an `nd` gather reads or an `nd` scatter
/// writes, in the order of the output (or of `updates`): `idx` is `indices` flattened, of
/// shape `ishape = (m, batch..., y...)`; `data` has `b` batch dims.
fn nd_offsets(
    dshape: &[usize],
    ishape: &[usize],
    idx: &[i64],
    b: usize,
    m: usize,
) -> Result<Vec<usize>, KernelError> {
    let ds = strides(dshape);
    let positions: usize = ishape.iter().skip(1).product();
    let per_batch: usize = ishape.iter().skip(1 + b).product();
    let inner: usize = dshape[b + m..].iter().product();
    let mut offsets = Vec::with_capacity(positions * inner);
    for pos in 0..positions {
        let batch = pos / per_batch.max(1);
        let mut offset = if b == 0 { 0 } else { batch * ds[b - 1] };
        for j in 0..m {
            let i = idx.get(j * positions + pos).copied().unwrap_or(i64::MAX);
            offset += wrap_index(i, dshape[b + j])? * ds[b + j];
        }
        offsets.extend((0..inner).map(|x| offset + x));
    }
    Ok(offsets)
}

/// Combines `update` into `slot` as `r` says.
fn reduce_into<T: Num>(slot: &mut T, update: T, r: ScatterReduction) {
    *slot = match r {
        ScatterReduction::Update => update,
        ScatterReduction::Add => slot.add_wrapping(update),
        ScatterReduction::Mul => slot.mul_wrapping(update),
        ScatterReduction::Min if update < *slot => update,
        ScatterReduction::Max if update > *slot => update,
        ScatterReduction::Min | ScatterReduction::Max => *slot,
    };
}

/// Copies `data` to `out`, then combines `updates[k]` into `out[offsets[k]]` in order.
fn scatter_offsets<T: Num>(
    data: &Tensor,
    updates: &Tensor,
    offsets: &[usize],
    r: ScatterReduction,
    out: &mut Tensor,
) -> Result<(), KernelError> {
    let dst = out.as_mut_slice::<T>()?;
    dst.copy_from_slice(data.as_slice::<T>()?);
    let len = dst.len();
    for (&u, &o) in updates.as_slice::<T>()?.iter().zip(offsets) {
        reduce_into(dst.get_mut(o).ok_or(KernelError::IndexOutOfRange { index: o as i64, size: len })?, u, r);
    }
    Ok(())
}

/// `scatter_elements(data, indices, updates, axis, reduction)`: a copy of `data` where, for
/// every position `p` of `indices`, `out[p with p[axis] = indices[p]]` is combined with
/// `updates[p]` (ONNX `ScatterElements`, the inverse of `gather`). `indices` and `updates`
/// share a shape of `data`'s rank; the output has `data`'s shape and numeric dtype.
#[derive(Debug)]
pub struct ScatterElements;

impl Operator for ScatterElements {
    const NAME: &'static str = "scatter_elements";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 3;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "data with updates combined in at indices along axis";
    type Attrs = ScatterElementsAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &ScatterElementsAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, indices, updates] = args(inputs)?;
        same_shape(indices, updates, "scatter_elements indices and updates")?;
        Gather::shapes(&[data, indices], &GatherAttrs { axis: a.axis })?;
        Ok(vec![data.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &ScatterElementsAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, i, u] = args(inputs)?;
        index_dtype(i)?;
        Ok(vec![Self::DTYPES.check(same_dtype(&[d, u])?)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &ScatterElementsAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data, indices, updates] = args(inputs)?;
        let offsets = along_axis_offsets(data.shape(), indices, a.axis)?;
        let out = only_output(outputs)?;
        nums!(data.dtype(), T => scatter_offsets::<T>(data, updates, &offsets, a.reduction, out))
    }
}

/// `scatter_nd(data, indices, updates, mode)`: with `indices` of shape `(M, Y...)` and
/// `updates` of shape `(Y..., X_M, ...)`, a copy of `data` where `out[indices[:, y], x]` is
/// combined with `updates[y, x]` (ONNX `ScatterND`, the inverse of `gather_nd`). Output:
/// `data`'s shape and numeric dtype.
#[derive(Debug)]
pub struct ScatterNd;

impl Operator for ScatterNd {
    const NAME: &'static str = "scatter_nd";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 3;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "data with updates[y] combined in at indices[:, y]";
    type Attrs = ScatterNdAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &ScatterNdAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, indices, updates] = args(inputs)?;
        let (expected, _, _) = gather_nd_plan(data, indices, &GatherNdAttrs::default())?;
        same_shape(updates, &expected, "scatter_nd updates and indices.shape[1:] + data.shape[M:]")?;
        Ok(vec![data.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &ScatterNdAttrs) -> Result<Vec<DType>, KernelError> {
        ScatterElements::dtypes(inputs, &ScatterElementsAttrs::default())
    }

    fn reference(
        inputs: &[&Tensor],
        a: &ScatterNdAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data, indices, updates] = args(inputs)?;
        let (_, b, m) = gather_nd_plan(data.shape(), indices.shape(), &GatherNdAttrs::default())?;
        let offsets = nd_offsets(data.shape(), indices.shape(), &index_values(indices)?, b, m)?;
        let out = only_output(outputs)?;
        nums!(data.dtype(), T => scatter_offsets::<T>(data, updates, &offsets, a.mode, out))
    }
}

/// `one_hot(indices, on_value, off_value, depth, axis, dtype)`: a new axis of length `depth`
/// at `axis`, holding `on_value` where its position equals the index and `off_value`
/// elsewhere (an index outside `0..depth` is all `off_value`). `on_value` and `off_value` are
/// 0-d tensors, converted to `dtype`.
#[derive(Debug)]
pub struct OneHot;

/// `one_hot`'s new axis position in an output of rank `rank + 1`.
fn one_hot_axis(a: &OneHotAttrs, rank: usize) -> Result<usize, KernelError> {
    if a.axis == -1 {
        Ok(rank)
    } else {
        normalize_axis(a.axis, rank + 1)
    }
}

impl Operator for OneHot {
    const NAME: &'static str = "one_hot";
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 3;
    const DTYPES: DTypeSet = DTypeSet::Ints;
    const DOC: &'static str = "on_value at each index along a new axis of length depth, else off_value";
    type Attrs = OneHotAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<OneHotAttrs>> = Some(|inputs, a, out| {
        let [indices, on, off] = tensors(inputs)?;
        let axis = one_hot_axis(a, indices.shape.len()).map_err(|e| e.to_string())?;
        let (indices, on, off, dtype) = (indices.clone(), on.clone(), off.clone(), out.dtype);
        Ok(lazy(move |k, idx| {
            let mut at = idx.to_vec();
            let position = at.remove(axis);
            let hit = Expr::index(position).equal(indices.at(k, &at).cast(DType::I64));
            Expr::select(hit, on.at(k, &[]).cast(dtype), off.at(k, &[]).cast(dtype))
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &OneHotAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [indices, on, off] = args(inputs)?;
        if !on.is_empty() || !off.is_empty() {
            return Err(KernelError::Shape(format!(
                "one_hot on_value and off_value must be scalars, got shapes {} and {}",
                shape_text(on),
                shape_text(off)
            )));
        }
        let depth = to_size(a.depth, "depth")?;
        let mut out = indices.to_vec();
        out.insert(one_hot_axis(a, indices.len())?, D::known(depth));
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], a: &OneHotAttrs) -> Result<Vec<DType>, KernelError> {
        let [i, _, _] = args(inputs)?;
        index_dtype(i)?;
        if !Storage::supports(a.dtype) {
            return Err(KernelError::unsupported(a.dtype));
        }
        Ok(vec![a.dtype])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &OneHotAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [indices, on, off] = args(inputs)?;
        let axis = one_hot_axis(a, indices.ndim())?;
        let depth = to_size(a.depth, "depth")?;
        let idx = index_values(indices)?;
        let inner: usize = indices.shape()[axis..].iter().product();
        let out = only_output(outputs)?;
        let (on, off) = (scalar_value(on)?, scalar_value(off)?);
        any_type!(out.dtype(), T => {
            let (on, off) = (T::from_scalar(on), T::from_scalar(off));
            // A non-empty output has `depth, inner > 0`; its layout is `[outer][depth][inner]`.
            for (f, d) in out.as_mut_slice::<T>()?.iter_mut().enumerate() {
                let (o, pos, i) = (f / (depth * inner), f / inner % depth, f % inner);
                *d = if idx.get(o * inner + i) == Some(&(pos as i64)) { on } else { off };
            }
            Ok(())
        })
    }
}
