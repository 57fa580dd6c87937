//! `nn.conv2d_transpose` and `nn.conv1d_transpose` (TVM `src/relay/op/nn/convolution.cc`
//! `Conv2DTransposeRel`, `topi.nn.conv2d_transpose_nchw`): the gradient of a convolution with
//! respect to its data — each input element scatters `x * w` over a window of the output —
//! with strides, padding (removed from the full output), `output_padding`, dilation and
//! groups. `NCHW` data and `IOHW` weights (weight `[in, out / groups, kh, kw]`); another
//! layout is a type error. The 1-d form runs as height 1.

use super::{converted, dim_text, padding4, padding_as_2d, pair, product_dtype, rank4};
use crate::attrs::{Conv1dTransposeAttrs, Conv2dTransposeAttrs};
use crate::error::KernelError;
use crate::kernels::num::Num;
use crate::kernels::util::{args, nums, only_output, to_positive};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use crate::ops::index::may_equal;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The transposed convolutions.
pub const CONV_TRANSPOSE: &[OpEntry] = &[OpEntry::of::<Conv2dTranspose>(), OpEntry::of::<Conv1dTranspose>()];

/// Errors unless each `(attribute, given, accepted)` layout is accepted (`""` always is for
/// the output layout, written last).
fn require_layouts(op: &str, layouts: [(&str, &str, &str); 3]) -> Result<(), KernelError> {
    for (i, (name, given, accepted)) in layouts.into_iter().enumerate() {
        if given != accepted && !(i == 2 && given.is_empty()) {
            return Err(KernelError::Attr(format!("{op} supports {name} {accepted:?} only, got {given:?}")));
        }
    }
    Ok(())
}

/// `output_padding` as `[h, w]` (one value applies to both), each below its stride.
fn output_padding(v: &[i64], strides: [usize; 2]) -> Result<[usize; 2], KernelError> {
    let two = match *v {
        [a] => [a, a],
        [a, b] => [a, b],
        _ => {
            return Err(KernelError::Attr(format!(
                "attribute `output_padding` must have 1 or 2 values, found {}",
                v.len()
            )))
        }
    };
    let mut out = [0; 2];
    for ((o, p), s) in out.iter_mut().zip(two).zip(strides) {
        *o = usize::try_from(p).ok().filter(|&p| p < s).ok_or_else(|| {
            KernelError::Attr(format!(
                "output_padding {v:?} must be non-negative and below the strides {strides:?}"
            ))
        })?;
    }
    Ok(out)
}

/// The output size along one axis: `(size - 1) * stride + dilation * (k - 1) + 1 +
/// output_padding - pad`; `?` stays `?`.
fn transposed_out<D: ShapeDim>(
    size: D,
    k: D,
    stride: usize,
    dilation: usize,
    opad: usize,
    pad: usize,
) -> Result<D, KernelError> {
    let (Some(size), Some(k)) = (size.value(), k.value()) else {
        return Ok(if size.value().is_none() { size } else { k });
    };
    if size == 0 || k == 0 {
        return Err(KernelError::Shape("a transposed convolution needs a non-empty input and window".into()));
    }
    let full = (size - 1)
        .checked_mul(stride)
        .and_then(|x| x.checked_add((k - 1).checked_mul(dilation)?))
        .and_then(|x| x.checked_add(1 + opad))
        .ok_or_else(super::too_large)?;
    full.checked_sub(pad).map(D::known).ok_or_else(|| {
        KernelError::Shape(format!(
            "the padding {pad} removes more than the {full} elements of the full output"
        ))
    })
}

/// Everything the kernel loop needs, from canonical shapes the shape function has checked.
struct TransposePlan {
    strides: [usize; 2],
    dilation: [usize; 2],
    output_padding: [usize; 2],
    /// `[top, left, bottom, right]`.
    pad: [usize; 4],
    groups: usize,
}

impl TransposePlan {
    /// The plan of a call's attributes, checked.
    fn new(a: &Conv2dTransposeAttrs) -> Result<TransposePlan, KernelError> {
        let strides = pair(&a.strides, "strides")?;
        Ok(TransposePlan {
            strides,
            dilation: pair(&a.dilation, "dilation")?,
            output_padding: output_padding(&a.output_padding, strides)?,
            pad: padding4(&a.padding)?,
            groups: to_positive(a.groups, "groups")?,
        })
    }

    /// The output shape from canonical `[[n, c, h, w], [i, o / groups, kh, kw]]` (`shapes` as
    /// written, for messages).
    fn shape<D: ShapeDim>(
        &self,
        [data, weight]: [&[D]; 2],
        [[n, c, h, w], [i, og, kh, kw]]: [[D; 4]; 2],
        a: &Conv2dTransposeAttrs,
    ) -> Result<[D; 4], KernelError> {
        let groups = self.groups;
        if !may_equal(c, i) {
            return Err(KernelError::Shape(format!(
                "the data has {} channels but the weight's first (input) axis is {}: {} and {}",
                dim_text(c),
                dim_text(i),
                shape_text(data),
                shape_text(weight)
            )));
        }
        if c.value().is_some_and(|c| c % groups != 0) {
            return Err(KernelError::Shape(format!(
                "{} input channels do not divide into groups={groups}",
                dim_text(c)
            )));
        }
        let o = match og.value() {
            Some(v) => D::known(v.checked_mul(groups).ok_or_else(super::too_large)?),
            None => og,
        };
        if let Some(ch) =
            a.channels.filter(|&ch| !usize::try_from(ch).is_ok_and(|ch| may_equal(D::known(ch), o)))
        {
            return Err(KernelError::Shape(format!(
                "channels={ch} does not match the weight's {} output channels x groups={groups}: {}",
                dim_text(og),
                shape_text(weight)
            )));
        }
        if let Some(size) = &a.kernel_size {
            let [sh, sw] = pair(size, "kernel_size")?;
            if !may_equal(D::known(sh), kh) || !may_equal(D::known(sw), kw) {
                return Err(KernelError::Shape(format!(
                    "kernel_size=[{sh}, {sw}] does not match the weight: {}",
                    shape_text(weight)
                )));
            }
        }
        let along = |axis: usize, size: D, k: D| {
            let pad = self.pad[axis].checked_add(self.pad[axis + 2]).ok_or_else(super::too_large)?;
            transposed_out(size, k, self.strides[axis], self.dilation[axis], self.output_padding[axis], pad)
        };
        Ok([n, o, along(0, h, kh)?, along(1, w, kw)?])
    }

    /// Scatters every input element times its weight window into `out` (zeroed first):
    /// input `(iy, ix)` through tap `(ky, kx)` lands on `(iy * s + ky * d - pad_top, ...)`.
    fn run<O: Num>(&self, [data, kernel, out_shape]: [[usize; 4]; 3], x: &[O], w: &[O], out: &mut [O]) {
        let [n, c, h, wd] = data;
        let [_, og, kh, kw] = kernel;
        let [_, oc, oh, ow] = out_shape;
        let per_group = (c / self.groups).max(1);
        out.iter_mut().for_each(|v| *v = O::ZERO);
        let at = |axis: usize, i: usize, k: usize, size: usize| {
            (i * self.strides[axis] + k * self.dilation[axis])
                .checked_sub(self.pad[axis])
                .filter(|&p| p < size)
        };
        for b in 0..n {
            for ch in 0..c {
                let g = ch / per_group;
                for iy in 0..h {
                    for ix in 0..wd {
                        let xv = x[((b * c + ch) * h + iy) * wd + ix];
                        for oo in 0..og {
                            let f = g * og + oo;
                            for ky in 0..kh {
                                let Some(oy) = at(0, iy, ky, oh) else { continue };
                                for kx in 0..kw {
                                    let Some(ox) = at(1, ix, kx, ow) else { continue };
                                    let wv = w[((ch * og + oo) * kh + ky) * kw + kx];
                                    let d = &mut out[((b * oc + f) * oh + oy) * ow + ox];
                                    *d = d.add_wrapping(xv.mul_wrapping(wv));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Runs a checked call on canonical 4-d shapes.
fn run_plan(
    plan: &TransposePlan,
    shapes: [[usize; 4]; 3],
    [d, w]: [&Tensor; 2],
    out: &mut Tensor,
) -> Result<(), KernelError> {
    nums!(out.dtype(), O => {
        let (x, k) = (converted::<O>(d)?, converted::<O>(w)?);
        plan.run(shapes, &x, &k, out.as_mut_slice::<O>()?);
        Ok(())
    })
}

/// `nn.conv2d_transpose(data, weight)`: data `[n, c, h, w]` and weight `[c, o / groups, kh,
/// kw]` give `[n, o, oh, ow]` with `oh = (h - 1) * stride_h + dilation_h * (kh - 1) + 1 +
/// output_padding_h - pad_top - pad_bottom` (likewise `ow`). Numeric dtypes, converted to and
/// accumulated in `out_dtype` (else the data's).
#[derive(Debug)]
pub struct Conv2dTranspose;

impl Operator for Conv2dTranspose {
    const NAME: &'static str = "nn.conv2d_transpose";
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "2-d transposed convolution (NCHW data, IOHW weight)";
    type Attrs = Conv2dTransposeAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &Conv2dTransposeAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, weight] = args(inputs)?;
        require_layouts(
            Self::NAME,
            [
                ("data_layout", &a.data_layout, "NCHW"),
                ("kernel_layout", &a.kernel_layout, "IOHW"),
                ("out_layout", &a.out_layout, "NCHW"),
            ],
        )?;
        let dims = [rank4(data, "data")?, rank4(weight, "weight")?];
        Ok(vec![TransposePlan::new(a)?.shape([data, weight], dims, a)?.to_vec()])
    }

    fn dtypes(inputs: &[DType], a: &Conv2dTransposeAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, w] = args(inputs)?;
        Ok(vec![product_dtype(d, w, a.out_dtype)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &Conv2dTransposeAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [d, w] = args(inputs)?;
        let out = only_output(outputs)?;
        let shapes = [rank4(d.shape(), "data")?, rank4(w.shape(), "weight")?, rank4(out.shape(), "output")?];
        run_plan(&TransposePlan::new(a)?, shapes, [d, w], out)
    }
}

/// `nn.conv1d_transpose(data, weight)`: `nn.conv2d_transpose` of height 1 over `NCW` data and
/// `IOW` weights: `[n, c, w]` and `[c, o / groups, k]` give `[n, o, ow]`.
#[derive(Debug)]
pub struct Conv1dTranspose;

/// A 1-d call's attributes as those of the 2-d one of height 1 it runs as.
fn as_2d(a: &Conv1dTransposeAttrs) -> Result<Conv2dTransposeAttrs, KernelError> {
    let one = |v: &[i64], name: &str, first: i64| match *v {
        [x] => Ok(vec![first, x]),
        _ => Err(KernelError::Attr(format!("attribute `{name}` must have 1 value, found {}", v.len()))),
    };
    Ok(Conv2dTransposeAttrs {
        channels: a.channels,
        kernel_size: a.kernel_size.as_deref().map(|k| one(k, "kernel_size", 1)).transpose()?,
        strides: one(&a.strides, "strides", 1)?,
        output_padding: one(&a.output_padding, "output_padding", 0)?,
        padding: padding_as_2d(&a.padding)?,
        dilation: one(&a.dilation, "dilation", 1)?,
        groups: a.groups,
        out_dtype: a.out_dtype,
        ..Conv2dTransposeAttrs::default()
    })
}

impl Operator for Conv1dTranspose {
    const NAME: &'static str = "nn.conv1d_transpose";
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "1-d transposed convolution (NCW data, IOW weight)";
    type Attrs = Conv1dTransposeAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &Conv1dTransposeAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, weight] = args(inputs)?;
        require_layouts(
            Self::NAME,
            [
                ("data_layout", &a.data_layout, "NCW"),
                ("kernel_layout", &a.kernel_layout, "IOW"),
                ("out_layout", &a.out_layout, "NCW"),
            ],
        )?;
        let height1 = |s: &[D], what: &str| match *s {
            [n, c, w] => Ok([n, c, D::known(1), w]),
            _ => Err(KernelError::Shape(format!("{what} must have rank 3, found {}", shape_text(s)))),
        };
        let dims = [height1(data, "data")?, height1(weight, "weight")?];
        let a2 = as_2d(a)?;
        let [n, o, _, ow] = TransposePlan::new(&a2)?.shape([data, weight], dims, &a2)?;
        Ok(vec![vec![n, o, ow]])
    }

    fn dtypes(inputs: &[DType], a: &Conv1dTransposeAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, w] = args(inputs)?;
        Ok(vec![product_dtype(d, w, a.out_dtype)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &Conv1dTransposeAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [d, w] = args(inputs)?;
        let out = only_output(outputs)?;
        let height1 = |s: &[usize]| match *s {
            [n, c, w] => Ok([n, c, 1, w]),
            _ => Err(KernelError::Shape(format!("{} is not 3-d", shape_text(s)))),
        };
        let shapes = [height1(d.shape())?, height1(w.shape())?, height1(out.shape())?];
        run_plan(&TransposePlan::new(&as_2d(a)?)?, shapes, [d, w], out)
    }
}
