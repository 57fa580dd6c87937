//! Operators that create values: `zeros`, `ones`, `full`, `nn.pad` and `nn.mirror_pad` (TVM
//! `src/relay/op/tensor/transform.cc`, `src/relay/op/nn/pad.cc`).

use super::{dim_from_i64, init_shape};
use crate::attrs::{InitOpAttrs, MirrorPadAttrs, MirrorPadMode, PadAttrs, PadMode};
use crate::compute::transform as rule;
use crate::error::KernelError;
use crate::kernels::util::{any_type, args, fill, for_each_index, only_output, scalar_value, to_size};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Element, Scalar, Storage, Tensor};

/// The dtype of a created tensor: `attrs.dtype`, else `default`; it must have storage.
fn init_dtype(attrs: &InitOpAttrs, default: DType) -> Result<DType, KernelError> {
    let d = attrs.dtype.unwrap_or(default);
    if Storage::supports(d) {
        Ok(d)
    } else {
        Err(KernelError::unsupported(d))
    }
}

/// Declares `zeros`/`ones`: no inputs, `shape` and `dtype` (default `float32`) from the
/// attributes, every element `value`.
macro_rules! constant {
    ($(#[$doc:meta])* $name:ident = $op:literal, $value:literal, $tvm_doc:literal) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::ElemWise;
            const NUM_INPUTS: usize = 0;
            const DTYPES: DTypeSet = DTypeSet::Any;
            const DOC: &'static str = $tvm_doc;
            type Attrs = InitOpAttrs;
            const COMPUTE: Option<crate::operator::ComputeRule<InitOpAttrs>> =
                Some(|_, _, out| rule::fill_const(out, $value as f64));

            fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &InitOpAttrs) -> Result<Vec<Vec<D>>, KernelError> {
                let [] = args(inputs)?;
                Ok(vec![init_shape($op, attrs)?])
            }

            fn dtypes(inputs: &[DType], attrs: &InitOpAttrs) -> Result<Vec<DType>, KernelError> {
                let [] = args(inputs)?;
                Ok(vec![init_dtype(attrs, DType::F32)?])
            }

            fn reference(_: &[&Tensor], _: &InitOpAttrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                fill(only_output(outputs)?, Scalar::Int($value))
            }
        }
    };
}

constant! {
    /// `zeros`: a tensor of `shape` and `dtype` (default `float32`) filled with 0.
    Zeros = "zeros", 0, "a tensor of zeros"
}

constant! {
    /// `ones`: a tensor of `shape` and `dtype` (default `float32`) filled with 1.
    Ones = "ones", 1, "a tensor of ones"
}

/// `full(fill_value)`: a tensor of `shape` filled with the scalar input, converted to `dtype`
/// (default: the fill value's dtype).
#[derive(Debug)]
pub struct Full;

impl Operator for Full {
    const NAME: &'static str = "full";
    const PATTERN: OpPattern = OpPattern::ElemWise;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "a tensor filled with a scalar";
    type Attrs = InitOpAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<InitOpAttrs>> = Some(rule::full);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &InitOpAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [v] = args(inputs)?;
        if !v.is_empty() {
            return Err(KernelError::Shape(format!(
                "the fill value must be a scalar, found shape {}",
                shape_text(v)
            )));
        }
        Ok(vec![init_shape(Self::NAME, attrs)?])
    }

    fn dtypes(inputs: &[DType], attrs: &InitOpAttrs) -> Result<Vec<DType>, KernelError> {
        let [v] = args(inputs)?;
        Ok(vec![init_dtype(attrs, v)?])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &InitOpAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [v] = args(inputs)?;
        fill(only_output(outputs)?, scalar_value(v)?)
    }
}

/// `nn.pad(data, pad_value)`: `data` with `pad_width[k] = [before, after]` elements added on
/// each side of axis `k`, filled with the scalar `pad_value` (converted to the data dtype),
/// the nearest edge element, or the mirror image. Any dtype.
#[derive(Debug)]
pub struct Pad;

/// Per axis of `shape` padded by `widths`, for each output coordinate, the input coordinate
/// it copies (`None`: pad value); `border(i, last)` maps a coordinate `i` outside `0..=last`.
fn pad_maps(
    shape: &[usize],
    widths: &[(usize, usize)],
    border: impl Fn(i128, i128) -> Option<usize>,
) -> Result<Vec<Vec<Option<usize>>>, KernelError> {
    let mut maps = Vec::with_capacity(shape.len());
    for (&d, &(before, after)) in shape.iter().zip(widths) {
        let total = before.checked_add(d).and_then(|n| n.checked_add(after));
        let total = total.ok_or_else(|| KernelError::Attr("pad width overflows".into()))?;
        let last = d as i128 - 1;
        let map = (0..total).map(|o| {
            let i = o as i128 - before as i128;
            if (0..=last).contains(&i) {
                Some(i as usize)
            } else {
                border(i, last)
            }
        });
        maps.push(map.collect());
    }
    Ok(maps)
}

/// The `nn.pad` border rule of `mode` for a coordinate `i` outside `0..=last`.
fn pad_border(mode: PadMode, i: i128, last: i128) -> Option<usize> {
    match mode {
        PadMode::Constant => None,
        PadMode::Edge => Some(i.clamp(0, last) as usize),
        PadMode::Reflect if last == 0 => Some(0),
        PadMode::Reflect => {
            let m = i.rem_euclid(2 * last);
            Some((if m > last { 2 * last - m } else { m }) as usize)
        }
    }
}

/// Writes `x` padded along `maps` (see [`pad_maps`]) into `out`, `pad` where a map says `None`.
fn copy_padded(
    x: &Tensor,
    maps: &[Vec<Option<usize>>],
    pad: Scalar,
    out: &mut Tensor,
) -> Result<(), KernelError> {
    let out_shape = out.shape().to_vec();
    any_type!(x.dtype(), T => {
        let pad = T::from_scalar(pad);
        let src = x.view::<T>()?;
        let mut dst = out.as_mut_slice::<T>()?.iter_mut();
        let mut at = Vec::with_capacity(out_shape.len());
        for_each_index(&out_shape, |o| {
            at.clear();
            at.extend(o.iter().zip(maps).map_while(|(&k, m)| m.get(k).copied().flatten()));
            let value = if at.len() == o.len() { src.get(&at).unwrap_or(pad) } else { pad };
            if let Some(d) = dst.next() {
                *d = value;
            }
            Ok(())
        })
    })
}

/// Each axis's `(before, after)` pad widths: one non-negative pair per dimension of a
/// rank-`rank` input.
fn pad_widths(pad_width: &[Vec<i64>], rank: usize) -> Result<Vec<(usize, usize)>, KernelError> {
    if pad_width.len() != rank {
        return Err(KernelError::Attr(format!(
            "pad_width gives {} pair(s) for a tensor of rank {rank}",
            pad_width.len()
        )));
    }
    pad_width
        .iter()
        .map(|w| match w.as_slice() {
            &[b, a] => Ok((to_size(b, "pad width")?, to_size(a, "pad width")?)),
            _ => Err(KernelError::Attr(format!("pad_width entry {w:?} must be [before, after]"))),
        })
        .collect()
}

impl Operator for Pad {
    const NAME: &'static str = "nn.pad";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "pad each dimension with a scalar, edge or reflection";
    type Attrs = PadAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<PadAttrs>> = Some(rule::pad);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &PadAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, v] = args(inputs)?;
        if !v.is_empty() {
            return Err(KernelError::Shape(format!(
                "the pad value must be a scalar, found shape {}",
                shape_text(v)
            )));
        }
        let widths = pad_widths(&attrs.pad_width, x.len())?;
        let mut out = Vec::with_capacity(x.len());
        for (i, (&d, &(before, after))) in x.iter().zip(&widths).enumerate() {
            if let Some(n) = d.value() {
                if attrs.pad_mode == PadMode::Reflect && (before >= n || after >= n) && n > 0 {
                    return Err(KernelError::Shape(format!(
                        "reflect padding [{before}, {after}] of axis {i} needs pads below its size {n}"
                    )));
                }
                if n == 0 && before + after > 0 && attrs.pad_mode != PadMode::Constant {
                    return Err(KernelError::Shape("cannot pad an empty axis from its edges".into()));
                }
            }
            let pads =
                before.checked_add(after).ok_or_else(|| KernelError::Attr("pad width overflows".into()))?;
            out.push(super::sum(&[d, dim_from_i64(pads as i64)?])?);
        }
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &PadAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, _] = args(inputs)?;
        Ok(vec![DTypeSet::Any.check(d)?])
    }

    fn reference(
        inputs: &[&Tensor],
        attrs: &PadAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, v] = args(inputs)?;
        let widths = pad_widths(&attrs.pad_width, x.ndim())?;
        let maps = pad_maps(x.shape(), &widths, |i, last| pad_border(attrs.pad_mode, i, last))?;
        copy_padded(x, &maps, scalar_value(v)?, only_output(outputs)?)
    }
}
/// `nn.mirror_pad(data)`: `data` with `pad_width[k] = [before, after]` elements added on each
/// side of axis `k`, copied from its mirror image (`SYMMETRIC` repeats the edge element,
/// `REFLECT` does not). One reflection: each width at most the axis size (`SYMMETRIC`) or
/// one less (`REFLECT`). Any dtype.
#[derive(Debug)]
pub struct MirrorPad;

/// The `nn.mirror_pad` border rule: coordinate `i` outside `0..=last` mirrored once.
fn mirror_border(mode: MirrorPadMode, i: i128, last: i128) -> Option<usize> {
    let shift = match mode {
        MirrorPadMode::Symmetric => 1,
        MirrorPadMode::Reflect => 0,
    };
    let mirrored = if i < 0 { -i - shift } else { 2 * last + shift - i };
    usize::try_from(mirrored).ok()
}

impl Operator for MirrorPad {
    const NAME: &'static str = "nn.mirror_pad";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "pad each dimension with its mirror image";
    type Attrs = MirrorPadAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<MirrorPadAttrs>> = Some(rule::mirror_pad);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &MirrorPadAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        let widths = pad_widths(&attrs.pad_width, x.len())?;
        let mut out = Vec::with_capacity(x.len());
        for (i, (&d, &(before, after))) in x.iter().zip(&widths).enumerate() {
            if let Some(n) = d.value() {
                let most = match attrs.mode {
                    MirrorPadMode::Symmetric => n,
                    MirrorPadMode::Reflect => n.saturating_sub(1),
                };
                if before > most || after > most {
                    return Err(KernelError::Shape(format!(
                        "mirror padding [{before}, {after}] of axis {i} (size {n}) may be at most {most}"
                    )));
                }
            }
            let pads =
                before.checked_add(after).ok_or_else(|| KernelError::Attr("pad width overflows".into()))?;
            out.push(super::sum(&[d, dim_from_i64(pads as i64)?])?);
        }
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &MirrorPadAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![DTypeSet::Any.check(d)?])
    }

    fn reference(
        inputs: &[&Tensor],
        attrs: &MirrorPadAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let widths = pad_widths(&attrs.pad_width, x.ndim())?;
        let maps = pad_maps(x.shape(), &widths, |i, last| mirror_border(attrs.mode, i, last))?;
        // Every coordinate maps into the data (the shape function bounds the widths), so the
        // pad value is never read.
        copy_padded(x, &maps, Scalar::Int(0), only_output(outputs)?)
    }
}
