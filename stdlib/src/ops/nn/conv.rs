//! `nn.conv2d` and `nn.conv1d` (TVM `src/relay/op/nn/convolution.cc` `Conv2DRel`,
//! `Conv1DRel`, `topi.nn.conv2d_nchw`):
//! direct convolution with strides, asymmetric zero padding, dilation and groups (depthwise
//! when `groups` equals the input channels). Any plain layout runs (`NCHW`/`OIHW`, `NHWC`/`HWIO`
//! and every other permutation): the reference kernel loops over canonical `NCHW` data and
//! `OIHW` weights, others are permuted in and out (`super::in_canonical`); the kir rule is
//! `NCHW`/`OIHW` only, so other layouts run unfused.

use super::{
    converted, dim_text, in_canonical, padding4, padding_as_2d, pair, product_dtype, rank4, window_out,
    Layout, Layout4,
};
use crate::attrs::{Conv1dAttrs, Conv2dAttrs};
use crate::compute;
use crate::error::KernelError;
use crate::kernels::num::Num;
use crate::kernels::util::{args, nums, only_output, to_positive};
use crate::kernels::Checked;
use crate::operator::{shape_text, ComputeRule, DTypeSet, OpEntry, Operator, ShapeDim};
use crate::ops::index::may_equal;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The convolutions.
pub const CONV: &[OpEntry] = &[OpEntry::of::<Conv2d>(), OpEntry::of::<Conv1d>()];

/// `nn.conv2d(data, weight)`: in canonical layouts, data `[n, c, h, w]` and weight
/// `[o, c / groups, kh, kw]` give `[n, o, oh, ow]` with
/// `oh = (h + pad_top + pad_bottom - dilation_h * (kh - 1) - 1) / stride_h + 1` (likewise
/// `ow`); `o` divides into `groups`, and `channels` and `kernel_size`, when given, match the
/// weight. Numeric dtypes; both operands are converted to the output dtype (`out_dtype`, else
/// the data's) and accumulated in it, so `int8`/`uint8` inputs take `out_dtype="int32"`.
#[derive(Debug)]
pub struct Conv2d;

/// The data, weight and output layouts of a call.
fn layouts(a: &Conv2dAttrs) -> Result<[Layout4; 3], KernelError> {
    let data = Layout4::parse(&a.data_layout, "NCHW")?;
    let kernel = Layout4::parse(&a.kernel_layout, "OIHW")?;
    let out = match a.out_layout.as_str() {
        "" => data,
        l => Layout4::parse(l, "NCHW")?,
    };
    Ok([data, kernel, out])
}

/// The grouped-convolution channel rules: `c = groups * i` and `groups` divides `o`.
fn check_channels<D: ShapeDim>(
    data: &[D],
    weight: &[D],
    [c, o, i]: [D; 3],
    groups: usize,
) -> Result<(), KernelError> {
    if let Some(c) = c.value() {
        if c % groups != 0 {
            return Err(KernelError::Shape(format!(
                "{c} input channels do not divide into groups={groups}: {}",
                shape_text(data)
            )));
        }
        if !may_equal(D::known(c / groups), i) {
            return Err(KernelError::Shape(format!(
                "the data has {c} input channels but the weight expects {} x groups={groups}: {} and {}",
                dim_text(i),
                shape_text(data),
                shape_text(weight)
            )));
        }
    }
    if let Some(o) = o.value() {
        if o % groups != 0 {
            return Err(KernelError::Shape(format!(
                "{o} output channels do not divide into groups={groups}: {}",
                shape_text(weight)
            )));
        }
    }
    Ok(())
}

/// Whether attribute value `v` may be dimension `d`.
fn may_be<D: ShapeDim>(v: i64, d: D) -> bool {
    usize::try_from(v).is_ok_and(|v| may_equal(D::known(v), d))
}

impl Operator for Conv2d {
    const NAME: &'static str = "nn.conv2d";
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "2-d convolution (NCHW data, OIHW weight by default)";
    type Attrs = Conv2dAttrs;
    const COMPUTE: Option<ComputeRule<Conv2dAttrs>> = Some(compute::nn::conv2d);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &Conv2dAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, weight] = args(inputs)?;
        let [dl, kl, ol] = layouts(a)?;
        let dims = [dl.to_canonical(data, "data")?, kl.to_canonical(weight, "weight")?];
        Ok(vec![ol.arrange(conv_shape([data, weight], dims, a)?)])
    }

    fn dtypes(inputs: &[DType], a: &Conv2dAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, w] = args(inputs)?;
        Ok(vec![product_dtype(d, w, a.out_dtype)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &Conv2dAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [dl, kl, ol] = layouts(a)?;
        in_canonical(inputs, &[&dl.pos, &kl.pos], only_output(outputs)?, &ol.pos, |inputs, out| {
            let [d, w] = args(inputs)?;
            let p = plan(
                rank4(d.shape(), "data")?,
                rank4(w.shape(), "weight")?,
                rank4(out.shape(), "output")?,
                a,
            )?;
            p.convolve(d, w, out)
        })
    }
}

/// The convolution shape function over canonical dimensions `[[n, c, h, w], [o, i, kh, kw]]`
/// (`shapes` as written, for messages): `[n, o, oh, ow]`. A 1-d convolution comes here as a
/// 2-d one of height 1.
fn conv_shape<D: ShapeDim>(
    [data, weight]: [&[D]; 2],
    [[n, c, h, w], [o, i, kh, kw]]: [[D; 4]; 2],
    a: &Conv2dAttrs,
) -> Result<[D; 4], KernelError> {
    let groups = to_positive(a.groups, "groups")?;
    check_channels(data, weight, [c, o, i], groups)?;
    if let Some(channels) = a.channels.filter(|&ch| !may_be(ch, o)) {
        return Err(KernelError::Shape(format!(
            "channels={channels} does not match the weight's {} output channels: {}",
            dim_text(o),
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
    let strides = pair(&a.strides, "strides")?;
    let dilation = pair(&a.dilation, "dilation")?;
    let pad = padding4(&a.padding)?;
    let along = |axis: usize, size: D, k: D, name: &str| {
        // A `?` window gives a `?` extent: `k` itself.
        let Some(k) = k.value() else { return Ok(k) };
        let total = pad[axis].checked_add(pad[axis + 2]).ok_or_else(super::too_large)?;
        window_out(size, k, strides[axis], dilation[axis], total, false).map_err(|e| {
            KernelError::Shape(format!(
                "{} along {name}: {} and {}",
                crate::operator::message(e),
                shape_text(data),
                shape_text(weight)
            ))
        })
    };
    Ok([n, o, along(0, h, kh, "H")?, along(1, w, kw, "W")?])
}

/// `nn.conv1d(data, weight)`: `nn.conv2d` of height 1 over `NCW` data and `OIW` weights
/// (any permutation type-checks; the reference kernel runs those): `[n, c, w]` and
/// `[o, c / groups, k]` give `[n, o, ow]`. Numeric dtypes, `out_dtype` as for `nn.conv2d`.
/// Reference kernel only.
#[derive(Debug)]
pub struct Conv1d;

/// The 1-d layouts of a call (data, weight, output).
fn layouts1d(a: &Conv1dAttrs) -> Result<[Layout<3>; 3], KernelError> {
    let data = Layout::parse(&a.data_layout, "NCW")?;
    let kernel = Layout::parse(&a.kernel_layout, "OIW")?;
    let out = match a.out_layout.as_str() {
        "" => data,
        l => Layout::parse(l, "NCW")?,
    };
    Ok([data, kernel, out])
}

/// A 1-d convolution's attributes as those of the 2-d one of height 1 it runs as.
fn as_2d(a: &Conv1dAttrs) -> Result<Conv2dAttrs, KernelError> {
    let one = |v: &[i64], name: &str| match *v {
        [x] => Ok(vec![1, x]),
        _ => Err(KernelError::Attr(format!("attribute `{name}` must have 1 value, found {}", v.len()))),
    };
    Ok(Conv2dAttrs {
        strides: one(&a.strides, "strides")?,
        padding: padding_as_2d(&a.padding)?,
        dilation: one(&a.dilation, "dilation")?,
        groups: a.groups,
        channels: a.channels,
        kernel_size: a.kernel_size.as_deref().map(|k| one(k, "kernel_size")).transpose()?,
        out_dtype: a.out_dtype,
        ..Conv2dAttrs::default()
    })
}

impl Operator for Conv1d {
    const NAME: &'static str = "nn.conv1d";
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "1-d convolution (NCW data, OIW weight by default)";
    type Attrs = Conv1dAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &Conv1dAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, weight] = args(inputs)?;
        let [dl, kl, ol] = layouts1d(a)?;
        let ([n, c, w], [o, i, k]) = (dl.to_canonical(data, "data")?, kl.to_canonical(weight, "weight")?);
        let one = D::known(1);
        let [n, o, _, ow] = conv_shape([data, weight], [[n, c, one, w], [o, i, one, k]], &as_2d(a)?)?;
        Ok(vec![ol.arrange([n, o, ow])])
    }

    fn dtypes(inputs: &[DType], a: &Conv1dAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, w] = args(inputs)?;
        Ok(vec![product_dtype(d, w, a.out_dtype)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &Conv1dAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [dl, kl, ol] = layouts1d(a)?;
        in_canonical(inputs, &[&dl.pos, &kl.pos], only_output(outputs)?, &ol.pos, |inputs, out| {
            let [d, w] = args(inputs)?;
            let height1 = |s: &[usize]| match *s {
                [n, c, w] => Ok([n, c, 1, w]),
                _ => Err(KernelError::Shape(format!("{} is not 3-d", shape_text(s)))),
            };
            let p = plan(height1(d.shape())?, height1(w.shape())?, height1(out.shape())?, &as_2d(a)?)?;
            p.convolve(d, w, out)
        })
    }
}

/// Everything the kernel loop needs, from shapes [`conv_shape`] has checked.
struct ConvPlan {
    data: [usize; 4],
    kernel: [usize; 4],
    out: [usize; 4],
    strides: [usize; 2],
    dilation: [usize; 2],
    /// `[top, left, bottom, right]`.
    pad: [usize; 4],
    groups: usize,
}

/// The plan of a call whose canonical shapes passed [`conv_shape`] (its layout attributes
/// are not read: the operands are in canonical order by now).
fn plan(
    data: [usize; 4],
    kernel: [usize; 4],
    out: [usize; 4],
    a: &Conv2dAttrs,
) -> Result<ConvPlan, KernelError> {
    Ok(ConvPlan {
        data,
        kernel,
        out,
        strides: pair(&a.strides, "strides")?,
        dilation: pair(&a.dilation, "dilation")?,
        pad: padding4(&a.padding)?,
        groups: to_positive(a.groups, "groups")?,
    })
}

impl ConvPlan {
    /// The input coordinate that output coordinate `o` reads through kernel tap `k` on axis
    /// `axis` (0: height, 1: width), if it is not padding.
    fn input_at(&self, axis: usize, o: usize, k: usize) -> Option<usize> {
        let pos = (o * self.strides[axis] + k * self.dilation[axis]).checked_sub(self.pad[axis])?;
        (pos < self.data[2 + axis]).then_some(pos)
    }

    /// Convolves canonical data `d` with weight `w` into `out`, converting both to the
    /// output dtype first.
    fn convolve(&self, d: &Tensor, w: &Tensor, out: &mut Tensor) -> Result<(), KernelError> {
        nums!(out.dtype(), O => {
            let (x, k) = (converted::<O>(d)?, converted::<O>(w)?);
            self.run(&x, &k, out.as_mut_slice::<O>()?);
            Ok(())
        })
    }

    fn run<O: Num>(&self, x: &[O], w: &[O], out: &mut [O]) {
        let [n, c, h, wd] = self.data;
        let [oc, ci, kh, kw] = self.kernel;
        let [_, _, oh, ow] = self.out;
        let per_group = oc / self.groups;
        let mut dst = out.iter_mut();
        for b in 0..n {
            for f in 0..oc {
                let first_c = (f / per_group) * ci;
                for y in 0..oh {
                    for xo in 0..ow {
                        let mut acc = O::ZERO;
                        for i in 0..ci {
                            let ch = first_c + i;
                            for ky in 0..kh {
                                let Some(iy) = self.input_at(0, y, ky) else { continue };
                                for kx in 0..kw {
                                    let Some(ix) = self.input_at(1, xo, kx) else { continue };
                                    let xv = x[((b * c + ch) * h + iy) * wd + ix];
                                    let wv = w[((f * ci + i) * kh + ky) * kw + kx];
                                    acc = acc.add_wrapping(xv.mul_wrapping(wv));
                                }
                            }
                        }
                        if let Some(d) = dst.next() {
                            *d = acc;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::Dim::Known as K;

    fn conv(data: &[usize], weight: &[usize], a: &Conv2dAttrs) -> Result<Vec<usize>, String> {
        Conv2d::shapes(&[data, weight], a).map(|mut s| s.remove(0)).map_err(|e| e.to_string())
    }

    #[test]
    fn conv_shapes() {
        let a = Conv2dAttrs {
            strides: vec![2, 2],
            padding: vec![3, 3],
            channels: Some(64),
            ..Default::default()
        };
        assert_eq!(conv(&[1, 3, 224, 224], &[64, 3, 7, 7], &a).unwrap(), [1, 64, 112, 112]);
        let depthwise = Conv2dAttrs { groups: 3, padding: vec![1], ..Default::default() };
        assert_eq!(conv(&[1, 3, 224, 224], &[6, 1, 3, 3], &depthwise).unwrap(), [1, 6, 224, 224]);
        let err = conv(&[1, 3, 224, 224], &[8, 4, 3, 3], &Conv2dAttrs::default()).unwrap_err();
        assert!(err.contains("3 input channels but the weight expects 4"), "{err}");
    }

    #[test]
    fn layouts_type_check_and_int8_accumulates_in_int32() {
        let a = Conv2dAttrs {
            data_layout: "NHWC".into(),
            kernel_layout: "HWIO".into(),
            out_dtype: Some(DType::I32),
            ..Default::default()
        };
        let out = Conv2d::shapes(&[&[K(1), K(10), K(10), K(4)][..], &[K(3), K(3), K(4), K(8)]], &a).unwrap();
        assert_eq!(out, vec![vec![K(1), K(8), K(8), K(8)]]);
        assert_eq!(Conv2d::dtypes(&[DType::I8, DType::I8], &a).unwrap(), vec![DType::I32]);
    }
}
