//! The `dyn.*` operators as [`DynamicForm`]s of their static operators (TVM
//! `src/relay/op/dyn/`): each names its operands, turns their values into the static
//! attributes, and gives TVM's dynamic relation.

use super::operand::{float_list, float_scalar, int_list, int_scalar, one_value, static_length, unknown};
use super::DynamicForm;
use crate::attrs::{
    DynExpandDimsAttrs, DynOneHotAttrs, DynPadAttrs, DynReshapeAttrs, DynResize2dAttrs, DynStridedSliceAttrs,
    DynUpsamplingAttrs, ExpandDimsAttrs, InitOpAttrs, NoAttrs, OneHotAttrs, PadAttrs, ReshapeAttrs,
    Resize2dAttrs, SqueezeAttrs, StridedSliceAttrs, TileAttrs, TopkAttrs, UpsamplingAttrs,
};
use crate::error::KernelError;
use crate::kernels::util::{args, normalize_axis, to_size};
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use crate::ops as fixed;
use relay_devices::Tensor;

/// One integer operand.
const INT: &[DTypeSet] = &[DTypeSet::Ints];

/// Operand `i`'s value, read by `read` at run time; `None` while type checking.
fn value<T>(
    operands: Option<&[&Tensor]>,
    i: usize,
    read: impl FnOnce(&Tensor) -> Result<T, KernelError>,
) -> Result<Option<T>, KernelError> {
    match operands {
        None => Ok(None),
        Some(ops) => match ops.get(i) {
            Some(t) => read(t).map(Some),
            None => Err(KernelError::Arity { expected: (i + 1).to_string(), actual: ops.len() }),
        },
    }
}

/// An attribute TVM's dynamic form leaves unset because an operand carries it.
fn operand_not_attribute(op: &str, name: &str) -> KernelError {
    KernelError::Attr(format!("`{name}` is an operand of {op}, not an attribute"))
}

/// `InitOpAttrs` with `shape` from operand 0 (`dyn.zeros`, `dyn.ones`, `dyn.full`,
/// `dyn.broadcast_to`).
fn init_attrs(op: &str, a: &InitOpAttrs, operands: Option<&[&Tensor]>) -> Result<InitOpAttrs, KernelError> {
    if a.shape.is_some() {
        return Err(operand_not_attribute(op, "shape"));
    }
    let shape = value(operands, 0, |t| int_list(t, "the shape"))?.unwrap_or_default();
    Ok(InitOpAttrs { shape: Some(shape), dtype: a.dtype })
}

/// `outs` with the dimension at each of `axes` made `?`.
fn unknown_at<D: ShapeDim>(mut outs: Vec<Vec<D>>, axes: &[usize]) -> Result<Vec<Vec<D>>, KernelError> {
    for out in &mut outs {
        for &a in axes {
            if let Some(d) = out.get_mut(a) {
                *d = D::maybe(None)?;
            }
        }
    }
    Ok(outs)
}

/// The positions of the height and width axes in a 2-d image `layout` (checked by the static
/// relation before this is asked).
fn height_width(layout: &str) -> Vec<usize> {
    ['H', 'W'].iter().filter_map(|&c| layout.find(c)).collect()
}

/// `dyn.reshape(data, newshape)`: `reshape` to the shape `newshape` holds; TVM's special
/// values but `-2` and `-4`, which would make the rank depend on the values.
#[derive(Debug)]
pub struct Reshape;

impl DynamicForm for Reshape {
    const NAME: &'static str = "dyn.reshape";
    const DOC: &'static str = "reshape to the shape a tensor holds";
    type Static = fixed::Reshape;
    type Attrs = DynReshapeAttrs;
    const OPERANDS: &'static [usize] = &[1];
    const OPERAND_DTYPES: &'static [DTypeSet] = INT;

    fn static_attrs(a: &DynReshapeAttrs, operands: Option<&[&Tensor]>) -> Result<ReshapeAttrs, KernelError> {
        let newshape = value(operands, 0, |t| int_list(t, "newshape"))?.unwrap_or_default();
        if let Some(v) = newshape.iter().find(|&&v| v == -2 || v == -4) {
            return Err(KernelError::Attr(format!(
                "dyn.reshape's newshape may not hold {v}: the result's rank would depend on it"
            )));
        }
        Ok(ReshapeAttrs { newshape, allowzero: a.allowzero })
    }

    fn relation<D: ShapeDim>(
        data: &[&[D]],
        operands: &[&[D]],
        _: &DynReshapeAttrs,
    ) -> Result<Vec<Vec<D>>, KernelError> {
        let ([_], [newshape]) = (args(data)?, args(operands)?);
        Ok(vec![unknown(static_length(newshape, "newshape")?)?])
    }
}

/// Declares the `dyn.*` forms whose one shape operand (at `operand`) gives `InitOpAttrs`'s
/// `shape`: `dyn.broadcast_to`, `dyn.full`, `dyn.zeros`, `dyn.ones`. `data`, where there are
/// other inputs, checks them the way the static relation would (given placeholder attributes).
macro_rules! shaped {
    ($(#[$doc:meta])* $name:ident = $op:literal, $static:ident, $what:literal, operand $i:literal
        $(, data |$data:ident, $attrs:ident| $check:expr)?) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl DynamicForm for $name {
            const NAME: &'static str = $op;
            const DOC: &'static str = $what;
            type Static = fixed::$static;
            type Attrs = InitOpAttrs;
            const OPERANDS: &'static [usize] = &[$i];
            const OPERAND_DTYPES: &'static [DTypeSet] = INT;

            fn static_attrs(a: &InitOpAttrs, operands: Option<&[&Tensor]>) -> Result<InitOpAttrs, KernelError> {
                init_attrs(Self::NAME, a, operands)
            }

            fn relation<D: ShapeDim>(
                _data: &[&[D]],
                operands: &[&[D]],
                a: &InitOpAttrs,
            ) -> Result<Vec<Vec<D>>, KernelError> {
                let _placeholder = Self::static_attrs(a, None)?;
                $(let ($data, $attrs) = (_data, &_placeholder);
                $check;)?
                let [shape] = args(operands)?;
                Ok(vec![unknown(static_length(shape, "the shape")?)?])
            }
        }
    };
}

shaped! {
    /// `dyn.broadcast_to(data, shape)`: `broadcast_to` the shape `shape` holds.
    BroadcastTo = "dyn.broadcast_to", BroadcastTo, "broadcast to the shape a tensor holds", operand 1,
        data |data, _a| args::<_, 1>(data)?
}

shaped! {
    /// `dyn.full(fill_value, shape)`: `full` of the shape `shape` holds.
    Full = "dyn.full", Full, "a scalar repeated to the shape a tensor holds", operand 1,
        // The static relation checks the fill value is a scalar.
        data |data, a| fixed::Full::shapes(data, a)?
}

shaped! {
    /// `dyn.zeros(shape, dtype)`: `zeros` of the shape `shape` holds.
    Zeros = "dyn.zeros", Zeros, "zeros of the shape a tensor holds", operand 0
}

shaped! {
    /// `dyn.ones(shape, dtype)`: `ones` of the shape `shape` holds.
    Ones = "dyn.ones", Ones, "ones of the shape a tensor holds", operand 0
}

/// `dyn.tile(data, reps)`: `tile` by the counts `reps` holds.
#[derive(Debug)]
pub struct Tile;

impl DynamicForm for Tile {
    const NAME: &'static str = "dyn.tile";
    const DOC: &'static str = "data repeated by the counts a tensor holds";
    type Static = fixed::Tile;
    type Attrs = NoAttrs;
    const OPERANDS: &'static [usize] = &[1];
    const OPERAND_DTYPES: &'static [DTypeSet] = INT;

    fn static_attrs(_: &NoAttrs, operands: Option<&[&Tensor]>) -> Result<TileAttrs, KernelError> {
        Ok(TileAttrs { reps: value(operands, 0, |t| int_list(t, "reps"))?.unwrap_or_default() })
    }

    fn relation<D: ShapeDim>(
        data: &[&[D]],
        operands: &[&[D]],
        _: &NoAttrs,
    ) -> Result<Vec<Vec<D>>, KernelError> {
        let ([x], [reps]) = (args(data)?, args(operands)?);
        Ok(vec![unknown(x.len().max(static_length(reps, "reps")?))?])
    }
}

/// `dyn.strided_slice(data, begin, end, strides, slice_mode)`: `strided_slice` of the first
/// `len(begin)` axes by the bounds the operands hold (all three of one length).
#[derive(Debug)]
pub struct StridedSlice;

impl DynamicForm for StridedSlice {
    const NAME: &'static str = "dyn.strided_slice";
    const DOC: &'static str = "slice by begin, end, strides held in tensors";
    type Static = fixed::StridedSlice;
    type Attrs = DynStridedSliceAttrs;
    const OPERANDS: &'static [usize] = &[1, 2, 3];
    const OPERAND_DTYPES: &'static [DTypeSet] = &[DTypeSet::Ints, DTypeSet::Ints, DTypeSet::Ints];

    fn static_attrs(
        a: &DynStridedSliceAttrs,
        operands: Option<&[&Tensor]>,
    ) -> Result<StridedSliceAttrs, KernelError> {
        let begin = value(operands, 0, |t| int_list(t, "begin"))?.unwrap_or_default();
        let end = value(operands, 1, |t| int_list(t, "end"))?.unwrap_or_default();
        let strides = value(operands, 2, |t| int_list(t, "strides"))?.unwrap_or_default();
        if end.len() != begin.len() || strides.len() != begin.len() {
            return Err(KernelError::Shape(format!(
                "begin, end and strides must have one length, got {}, {} and {}",
                begin.len(),
                end.len(),
                strides.len()
            )));
        }
        Ok(StridedSliceAttrs { begin, end, strides: Some(strides), slice_mode: a.slice_mode, axes: None })
    }

    fn relation<D: ShapeDim>(
        data: &[&[D]],
        operands: &[&[D]],
        _: &DynStridedSliceAttrs,
    ) -> Result<Vec<Vec<D>>, KernelError> {
        let ([x], [begin, end, strides]) = (args(data)?, args(operands)?);
        let n = static_length(begin, "begin")?;
        if static_length(end, "end")? != n || static_length(strides, "strides")? != n {
            return Err(KernelError::Shape(format!(
                "begin, end and strides must have one length, got shapes {}, {} and {}",
                shape_text(begin),
                shape_text(end),
                shape_text(strides)
            )));
        }
        if n > x.len() {
            return Err(KernelError::Shape(format!(
                "{n} sliced axes is more than the data's rank {}",
                x.len()
            )));
        }
        let mut out = unknown(n)?;
        out.extend_from_slice(&x[n..]);
        Ok(vec![out])
    }
}

/// `dyn.topk(data, k, axis, ret_type, is_ascend, dtype)`: `topk` with the count `k` holds
/// (below 1: the whole axis).
#[derive(Debug)]
pub struct Topk;

impl DynamicForm for Topk {
    const NAME: &'static str = "dyn.topk";
    const DOC: &'static str = "topk with k held in a tensor";
    type Static = fixed::Topk;
    type Attrs = TopkAttrs;
    const OPERANDS: &'static [usize] = &[1];
    const OPERAND_DTYPES: &'static [DTypeSet] = INT;

    fn static_attrs(a: &TopkAttrs, operands: Option<&[&Tensor]>) -> Result<TopkAttrs, KernelError> {
        if a.k.is_some() {
            return Err(operand_not_attribute(Self::NAME, "k"));
        }
        Ok(TopkAttrs { k: value(operands, 0, |t| int_scalar(t, "k"))?, ..a.clone() })
    }

    fn relation<D: ShapeDim>(
        data: &[&[D]],
        operands: &[&[D]],
        a: &TopkAttrs,
    ) -> Result<Vec<Vec<D>>, KernelError> {
        let ([x], [k]) = (args(data)?, args(operands)?);
        one_value(k, "k")?;
        let outs = fixed::Topk::shapes(data, &Self::static_attrs(a, None)?)?;
        unknown_at(outs, &[normalize_axis(a.axis, x.len())?])
    }
}

/// `dyn.one_hot(indices, on_value, off_value, depth, axis, dtype)`: `one_hot` with the
/// length `depth` holds.
#[derive(Debug)]
pub struct OneHot;

impl DynamicForm for OneHot {
    const NAME: &'static str = "dyn.one_hot";
    const DOC: &'static str = "one_hot with depth held in a tensor";
    type Static = fixed::OneHot;
    type Attrs = DynOneHotAttrs;
    const OPERANDS: &'static [usize] = &[3];
    const OPERAND_DTYPES: &'static [DTypeSet] = INT;

    fn static_attrs(a: &DynOneHotAttrs, operands: Option<&[&Tensor]>) -> Result<OneHotAttrs, KernelError> {
        let depth = value(operands, 0, |t| int_scalar(t, "depth"))?.unwrap_or(0);
        Ok(OneHotAttrs { depth, axis: a.axis, dtype: a.dtype })
    }

    fn relation<D: ShapeDim>(
        data: &[&[D]],
        operands: &[&[D]],
        a: &DynOneHotAttrs,
    ) -> Result<Vec<Vec<D>>, KernelError> {
        let ([indices, _, _], [depth]) = (args(data)?, args(operands)?);
        one_value(depth, "depth")?;
        let outs = fixed::OneHot::shapes(data, &Self::static_attrs(a, None)?)?;
        let rank = indices.len();
        let at = if a.axis == -1 { rank } else { normalize_axis(a.axis, rank + 1)? };
        unknown_at(outs, &[at])
    }
}

/// `dyn.squeeze(data, axes)`: `squeeze` of the axes `axes` holds (each of size 1).
#[derive(Debug)]
pub struct Squeeze;

impl DynamicForm for Squeeze {
    const NAME: &'static str = "dyn.squeeze";
    const DOC: &'static str = "remove the size-1 axes a tensor lists";
    type Static = fixed::Squeeze;
    type Attrs = SqueezeAttrs;
    const OPERANDS: &'static [usize] = &[1];
    const OPERAND_DTYPES: &'static [DTypeSet] = INT;

    fn static_attrs(a: &SqueezeAttrs, operands: Option<&[&Tensor]>) -> Result<SqueezeAttrs, KernelError> {
        if a.axis.is_some() {
            return Err(operand_not_attribute(Self::NAME, "axis"));
        }
        Ok(SqueezeAttrs { axis: Some(value(operands, 0, |t| int_list(t, "axes"))?.unwrap_or_default()) })
    }

    fn relation<D: ShapeDim>(
        data: &[&[D]],
        operands: &[&[D]],
        a: &SqueezeAttrs,
    ) -> Result<Vec<Vec<D>>, KernelError> {
        Self::static_attrs(a, None)?;
        let ([x], [axes]) = (args(data)?, args(operands)?);
        let n = static_length(axes, "axes")?;
        let rank = x.len().checked_sub(n).ok_or_else(|| {
            KernelError::Shape(format!("cannot squeeze {n} axes of a tensor of rank {}", x.len()))
        })?;
        Ok(vec![unknown(rank)?])
    }
}

/// `dyn.expand_dims(data, axis, num_newaxis)`: `expand_dims` at the axis `axis` holds.
#[derive(Debug)]
pub struct ExpandDims;

impl DynamicForm for ExpandDims {
    const NAME: &'static str = "dyn.expand_dims";
    const DOC: &'static str = "insert size-1 axes where a tensor says";
    type Static = fixed::ExpandDims;
    type Attrs = DynExpandDimsAttrs;
    const OPERANDS: &'static [usize] = &[1];
    const OPERAND_DTYPES: &'static [DTypeSet] = INT;

    fn static_attrs(
        a: &DynExpandDimsAttrs,
        operands: Option<&[&Tensor]>,
    ) -> Result<ExpandDimsAttrs, KernelError> {
        let axis = value(operands, 0, |t| int_scalar(t, "axis"))?.unwrap_or(0);
        Ok(ExpandDimsAttrs { axis, num_newaxis: a.num_newaxis })
    }

    fn relation<D: ShapeDim>(
        data: &[&[D]],
        operands: &[&[D]],
        a: &DynExpandDimsAttrs,
    ) -> Result<Vec<Vec<D>>, KernelError> {
        let ([x], [axis]) = (args(data)?, args(operands)?);
        one_value(axis, "axis")?;
        Ok(vec![unknown(x.len() + to_size(a.num_newaxis, "num_newaxis")?)?])
    }
}

/// `dyn.nn.pad(data, pad_width, pad_value, pad_mode)`: `nn.pad` by the `[rank, 2]` widths
/// `pad_width` holds.
#[derive(Debug)]
pub struct Pad;

impl DynamicForm for Pad {
    const NAME: &'static str = "dyn.nn.pad";
    const DOC: &'static str = "nn.pad by widths held in a tensor";
    type Static = fixed::Pad;
    type Attrs = DynPadAttrs;
    const OPERANDS: &'static [usize] = &[1];
    const OPERAND_DTYPES: &'static [DTypeSet] = INT;

    fn static_attrs(a: &DynPadAttrs, operands: Option<&[&Tensor]>) -> Result<PadAttrs, KernelError> {
        let pad_width = value(operands, 0, |t| match t.shape() {
            [_, 2] => {
                Ok(crate::ops::index::index_values(t)?.chunks(2).map(<[i64]>::to_vec).collect::<Vec<_>>())
            }
            shape => Err(KernelError::Shape(format!(
                "pad_width must be of shape (rank, 2), found {}",
                shape_text(shape)
            ))),
        })?;
        Ok(PadAttrs { pad_width: pad_width.unwrap_or_default(), pad_mode: a.pad_mode })
    }

    fn relation<D: ShapeDim>(
        data: &[&[D]],
        operands: &[&[D]],
        a: &DynPadAttrs,
    ) -> Result<Vec<Vec<D>>, KernelError> {
        let ([x, _], [widths]) = (args(data)?, args(operands)?);
        let fits = matches!(widths, [r, w] if r.value().is_none_or(|r| r == x.len()) && w.value().is_none_or(|w| w == 2));
        if !fits {
            return Err(KernelError::Shape(format!(
                "pad_width must be of shape ({}, 2) for data of rank {}, found {}",
                x.len(),
                x.len(),
                shape_text(widths)
            )));
        }
        // The static relation checks the pad value is a scalar.
        fixed::Pad::shapes(data, &PadAttrs { pad_width: vec![vec![0, 0]; x.len()], pad_mode: a.pad_mode })?;
        Ok(vec![unknown(x.len())?])
    }
}

/// `dyn.nn.upsampling(data, scale_h, scale_w, layout, method, align_corners)`:
/// `nn.upsampling` by the factors the two operands hold.
#[derive(Debug)]
pub struct Upsampling;

impl DynamicForm for Upsampling {
    const NAME: &'static str = "dyn.nn.upsampling";
    const DOC: &'static str = "nn.upsampling by factors held in tensors";
    type Static = fixed::Upsampling;
    type Attrs = DynUpsamplingAttrs;
    const OPERANDS: &'static [usize] = &[1, 2];
    const OPERAND_DTYPES: &'static [DTypeSet] = &[DTypeSet::Nums, DTypeSet::Nums];

    fn static_attrs(
        a: &DynUpsamplingAttrs,
        operands: Option<&[&Tensor]>,
    ) -> Result<UpsamplingAttrs, KernelError> {
        Ok(UpsamplingAttrs {
            scale_h: value(operands, 0, |t| float_scalar(t, "scale_h"))?.unwrap_or(1.0),
            scale_w: value(operands, 1, |t| float_scalar(t, "scale_w"))?.unwrap_or(1.0),
            layout: a.layout.clone(),
            method: a.method,
            align_corners: a.align_corners,
        })
    }

    fn relation<D: ShapeDim>(
        data: &[&[D]],
        operands: &[&[D]],
        a: &DynUpsamplingAttrs,
    ) -> Result<Vec<Vec<D>>, KernelError> {
        let [scale_h, scale_w] = args(operands)?;
        one_value(scale_h, "scale_h")?;
        one_value(scale_w, "scale_w")?;
        let outs = fixed::Upsampling::shapes(data, &Self::static_attrs(a, None)?)?;
        unknown_at(outs, &height_width(&a.layout))
    }
}

/// `dyn.image.resize2d(data, size, roi, layout, ...)`: `image.resize2d` to the size `size`
/// holds, over the region `roi` holds.
#[derive(Debug)]
pub struct Resize2d;

impl DynamicForm for Resize2d {
    const NAME: &'static str = "dyn.image.resize2d";
    const DOC: &'static str = "image.resize2d to a size held in a tensor";
    type Static = fixed::Resize2d;
    type Attrs = DynResize2dAttrs;
    const OPERANDS: &'static [usize] = &[1, 2];
    const OPERAND_DTYPES: &'static [DTypeSet] = &[DTypeSet::Ints, DTypeSet::Nums];

    fn static_attrs(
        a: &DynResize2dAttrs,
        operands: Option<&[&Tensor]>,
    ) -> Result<Resize2dAttrs, KernelError> {
        Ok(Resize2dAttrs {
            size: value(operands, 0, |t| int_list(t, "size"))?.unwrap_or_else(|| vec![1, 1]),
            roi: value(operands, 1, |t| float_list(t, "roi"))?.unwrap_or_else(|| vec![0.0; 4]),
            layout: a.layout.clone(),
            method: a.method,
            coordinate_transformation_mode: a.coordinate_transformation_mode,
            rounding_method: a.rounding_method,
            cubic_alpha: a.cubic_alpha,
            cubic_exclude: a.cubic_exclude,
            extrapolation_value: a.extrapolation_value,
            out_dtype: a.out_dtype,
        })
    }

    fn relation<D: ShapeDim>(
        data: &[&[D]],
        operands: &[&[D]],
        a: &DynResize2dAttrs,
    ) -> Result<Vec<Vec<D>>, KernelError> {
        let [size, roi] = args(operands)?;
        if !matches!(size, [n] if n.value().is_none_or(|n| n == 2)) {
            return Err(KernelError::Shape(format!(
                "size must hold 2 values, found shape {}",
                shape_text(size)
            )));
        }
        if roi.len() != 1 {
            return Err(KernelError::Shape(format!("roi must be 1-d, found shape {}", shape_text(roi))));
        }
        let outs = fixed::Resize2d::shapes(data, &Self::static_attrs(a, None)?)?;
        unknown_at(outs, &height_width(&a.layout))
    }
}
