//! Operators that create values: `zeros`, `ones`, `full` and `nn.pad` (TVM
//! `src/relay/op/tensor/transform.cc`, `src/relay/op/nn/pad.cc`).

use super::shape::init_shape;
use crate::attrs::{InitOpAttrs, PadAttrs, PadMode};
use crate::error::KernelError;
use crate::kernels::util::{any_type, args, fill, for_each_index, only_output, scalar_value, to_size};
use crate::kernels::{Checked, Kernel};
use relay_devices::{shape_size, DType, Element, Scalar, Storage, Tensor};

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
    ($(#[$doc:meta])* $name:ident = $op:literal, $value:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Kernel for $name {
            const NAME: &'static str = $op;
            type Attrs = InitOpAttrs;

            fn shapes(inputs: &[&[usize]], attrs: &InitOpAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
                let [] = args(inputs)?;
                Ok(vec![init_shape($op, attrs)?])
            }

            fn dtypes(inputs: &[DType], attrs: &InitOpAttrs) -> Result<Vec<DType>, KernelError> {
                let [] = args(inputs)?;
                Ok(vec![init_dtype(attrs, DType::F32)?])
            }

            fn compute(_: &[&Tensor], _: &InitOpAttrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                fill(only_output(outputs)?, $value)
            }
        }
    };
}

constant! {
    /// `zeros`: a tensor of `shape` and `dtype` (default `float32`) filled with 0.
    Zeros = "zeros", Scalar::Int(0)
}

constant! {
    /// `ones`: a tensor of `shape` and `dtype` (default `float32`) filled with 1.
    Ones = "ones", Scalar::Int(1)
}

/// `full(fill_value)`: a tensor of `shape` filled with the scalar input, converted to `dtype`
/// (default: the fill value's dtype).
#[derive(Debug)]
pub struct Full;

impl Kernel for Full {
    const NAME: &'static str = "full";
    type Attrs = InitOpAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &InitOpAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [v] = args(inputs)?;
        if shape_size(v) != Some(1) {
            return Err(KernelError::Shape(format!("fill value must be a scalar, got shape {v:?}")));
        }
        Ok(vec![init_shape(Self::NAME, attrs)?])
    }

    fn dtypes(inputs: &[DType], attrs: &InitOpAttrs) -> Result<Vec<DType>, KernelError> {
        let [v] = args(inputs)?;
        Ok(vec![init_dtype(attrs, v)?])
    }

    fn compute(
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

/// Per axis, for each output coordinate, the input coordinate it copies (`None`: pad value).
fn pad_maps(shape: &[usize], attrs: &PadAttrs) -> Result<Vec<Vec<Option<usize>>>, KernelError> {
    if attrs.pad_width.len() != shape.len() {
        return Err(KernelError::Attr(format!(
            "pad_width has {} entries for rank {}",
            attrs.pad_width.len(),
            shape.len()
        )));
    }
    let mut maps = Vec::with_capacity(shape.len());
    for (&d, w) in shape.iter().zip(&attrs.pad_width) {
        let (before, after) = match w.as_slice() {
            &[b, a] => (to_size(b, "pad width")?, to_size(a, "pad width")?),
            _ => return Err(KernelError::Attr(format!("pad_width entry {w:?} must be [before, after]"))),
        };
        let padded = before + after > 0;
        if padded && d == 0 && attrs.pad_mode != PadMode::Constant {
            return Err(KernelError::Shape("cannot pad an empty axis from its edges".into()));
        }
        let total = before.checked_add(d).and_then(|n| n.checked_add(after));
        let total = total.ok_or_else(|| KernelError::Attr("pad width overflows".into()))?;
        let map = (0..total).map(|o| {
            let i = o as i128 - before as i128;
            let last = d as i128 - 1;
            let inside = (0..=last).contains(&i);
            match attrs.pad_mode {
                _ if inside => Some(i as usize),
                PadMode::Constant => None,
                PadMode::Edge => Some(i.clamp(0, last) as usize),
                PadMode::Reflect if last == 0 => Some(0),
                PadMode::Reflect => {
                    let m = i.rem_euclid(2 * last);
                    Some((if m > last { 2 * last - m } else { m }) as usize)
                }
            }
        });
        maps.push(map.collect());
    }
    Ok(maps)
}

impl Kernel for Pad {
    const NAME: &'static str = "nn.pad";
    type Attrs = PadAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &PadAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [x, v] = args(inputs)?;
        if shape_size(v) != Some(1) {
            return Err(KernelError::Shape(format!("pad value must be a scalar, got shape {v:?}")));
        }
        Ok(vec![pad_maps(x, attrs)?.iter().map(Vec::len).collect()])
    }

    fn dtypes(inputs: &[DType], _: &PadAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, _] = args(inputs)?;
        Ok(vec![d])
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &PadAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, v] = args(inputs)?;
        let maps = pad_maps(x.shape(), attrs)?;
        let value = scalar_value(v)?;
        let out = only_output(outputs)?;
        let out_shape = out.shape().to_vec();
        any_type!(x.dtype(), T => {
            let pad = T::from_scalar(value);
            let src = x.view::<T>()?;
            let mut dst = out.as_mut_slice::<T>()?.iter_mut();
            let mut at = Vec::with_capacity(out_shape.len());
            for_each_index(&out_shape, |o| {
                at.clear();
                at.extend(o.iter().zip(&maps).map_while(|(&k, m)| m.get(k).copied().flatten()));
                let value = if at.len() == o.len() { src.get(&at).unwrap_or(pad) } else { pad };
                if let Some(d) = dst.next() {
                    *d = value;
                }
                Ok(())
            })
        })
    }
}
