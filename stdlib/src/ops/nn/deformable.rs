//! `nn.deformable_conv2d` (TVM `src/relay/op/nn/convolution.cc` `DeformableConv2DRel`,
//! `topi.nn.deformable_conv2d_nchw`; Dai et al., "Deformable Convolutional Networks", 2017):
//! a convolution whose every tap reads the data at its regular position plus a learned
//! offset, by bilinear sampling.

use super::{converted, padding, per_axis, product_dtype};
use crate::attrs::{Conv2dAttrs, DeformableConv2dAttrs};
use crate::error::KernelError;
use crate::kernels::util::{args, only_output, to_positive};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use crate::ops::image::sample::write_values;
use crate::ops::index::may_equal;
use crate::ops::Conv2d;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The deformable convolution.
pub const DEFORMABLE: &[OpEntry] = &[OpEntry::of::<DeformableConv2d>()];

/// The name, for messages.
const NAME: &str = "nn.deformable_conv2d";

/// The `nn.conv2d` call of the same data, weight and window, which gives the output shape.
fn as_conv2d(a: &DeformableConv2dAttrs) -> Result<Conv2dAttrs, KernelError> {
    for (name, given, accepted) in
        [("data_layout", &a.data_layout, "NCHW"), ("kernel_layout", &a.kernel_layout, "OIHW")]
    {
        if given != accepted {
            return Err(KernelError::Attr(format!(
                "{NAME} supports {name} {accepted:?} only, got {given:?}"
            )));
        }
    }
    if !a.out_layout.is_empty() && a.out_layout != "NCHW" {
        return Err(KernelError::Attr(format!(
            "{NAME} supports out_layout \"NCHW\" only, got {:?}",
            a.out_layout
        )));
    }
    Ok(Conv2dAttrs {
        strides: a.strides.clone(),
        padding: a.padding.clone(),
        dilation: a.dilation.clone(),
        groups: a.groups,
        channels: a.channels,
        kernel_size: a.kernel_size.clone(),
        out_dtype: a.out_dtype,
        ..Conv2dAttrs::default()
    })
}

/// `nn.deformable_conv2d(data, offset, weight)`: data `[n, c, h, w]`, offset
/// `[n, 2 * dg * kh * kw, oh, ow]` and weight `[o, c / groups, kh, kw]` give
/// `[n, o, oh, ow]`, the output size `nn.conv2d`'s (`dg` is `deformable_groups`). Tap
/// `(ky, kx)` of output `(y, x)` reads channel `ch` of deformable group `g = ch / (c / dg)` at
/// `(y * stride_h - pad_top + ky * dilation_h + dy, x * stride_w - pad_left + kx *
/// dilation_w + dx)`, where `dy` is offset channel `(g * kh * kw + ky * kw + kx) * 2` and `dx`
/// the next, by TVM's bilinear sample: 0 outside `[0, h) x [0, w)`, the upper neighbours
/// clamped to the last row and column. Float operands of one dtype; the output is `out_dtype`
/// or the data's.
#[derive(Debug)]
pub struct DeformableConv2d;

impl Operator for DeformableConv2d {
    const NAME: &'static str = NAME;
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 3;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "2-d convolution at learned offsets (NCHW data, OIHW weight)";
    type Attrs = DeformableConv2dAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &DeformableConv2dAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, offset, weight] = args(inputs)?;
        let out = Conv2d::shapes(&[data, weight], &as_conv2d(a)?)?;
        let dg = to_positive(a.deformable_groups, "deformable_groups")?;
        if data[1].value().is_some_and(|c| c % dg != 0) {
            return Err(KernelError::Shape(format!(
                "the {} input channels of {} do not divide into deformable_groups={dg}",
                data[1].value().unwrap_or_default(),
                shape_text(data)
            )));
        }
        let taps = D::product(&[weight[2], weight[3], D::known(2 * dg)])?;
        let want = out.first().map(|o| [o[0], taps, o[2], o[3]]);
        match want {
            Some(want) if offset.len() == 4 && want.iter().zip(offset).all(|(&w, &o)| may_equal(w, o)) => {
                Ok(out)
            }
            _ => Err(KernelError::Shape(format!(
                "the offset must be (batch, 2 * deformable_groups * kh * kw, out_h, out_w) = {}, found {}",
                want.map_or_else(|| "?".into(), |w| shape_text(&w)),
                shape_text(offset)
            ))),
        }
    }

    fn dtypes(inputs: &[DType], a: &DeformableConv2dAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, offset, w] = args(inputs)?;
        DTypeSet::Floats.check(d)?;
        if offset != d {
            return Err(KernelError::DType(format!(
                "the offset must have the data's dtype `{d}`, found `{offset}`"
            )));
        }
        Ok(vec![product_dtype(d, w, a.out_dtype)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &DeformableConv2dAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data, offset, weight] = args(inputs)?;
        let out = only_output(outputs)?;
        let four = |t: &[usize]| {
            <[usize; 4]>::try_from(t).map_err(|_| KernelError::Shape(format!("{} is not 4-d", shape_text(t))))
        };
        let ([n, c, h, w], [o, ci, kh, kw], [_, _, oh, ow]) =
            (four(data.shape())?, four(weight.shape())?, four(out.shape())?);
        let [_, sh, sw] = per_axis(&a.strides, 2, "strides")?;
        let [_, dh, dw] = per_axis(&a.dilation, 2, "dilation")?;
        let [[_, top, left], _] = padding(&a.padding, 2)?;
        let dg_size = c / to_positive(a.deformable_groups, "deformable_groups")?;
        let per_group = o / to_positive(a.groups, "groups")?;
        let (x, offsets, k): (Vec<f64>, Vec<f64>, Vec<f64>) =
            (converted(data)?, converted(offset)?, converted(weight)?);
        // TVM's bilinear sample of channel plane `plane` (`bilinear_sample_nchw`, 0 outside).
        let sample = |plane: &[f64], y: f64, xx: f64| {
            // Written so that a NaN offset also samples 0.
            if !(y >= 0.0 && xx >= 0.0 && y < h as f64 && xx < w as f64) {
                return 0.0;
            }
            let (y0, x0) = (y.floor() as usize, xx.floor() as usize);
            let (y1, x1) = ((y.ceil() as usize).min(h - 1), (xx.ceil() as usize).min(w - 1));
            let (ly, lx) = (y - y0 as f64, xx - x0 as f64);
            let at = |r: usize, col: usize| plane[r * w + col];
            (at(y0, x0) * (1.0 - lx) + at(y0, x1) * lx) * (1.0 - ly)
                + (at(y1, x0) * (1.0 - lx) + at(y1, x1) * lx) * ly
        };
        let (taps, offset_channels) = (kh * kw, four(offset.shape())?[1]);
        let mut values = vec![0.0; out.len()];
        for b in 0..n {
            // The sampled data of every channel, tap and output position: TVM's `data_deform`.
            let mut deformed = vec![0.0; c * taps * oh * ow];
            for ch in 0..c {
                let plane = &x[(b * c + ch) * h * w..(b * c + ch + 1) * h * w];
                for tap in 0..taps {
                    let (ky, kx) = (tap / kw, tap % kw);
                    let channel = (ch / dg_size) * taps * 2 + tap * 2;
                    for y in 0..oh {
                        for xx in 0..ow {
                            let off =
                                |i: usize| offsets[((b * offset_channels + channel + i) * oh + y) * ow + xx];
                            let py = (y * sh + ky * dh) as f64 - top as f64 + off(0);
                            let px = (xx * sw + kx * dw) as f64 - left as f64 + off(1);
                            deformed[((ch * taps + tap) * oh + y) * ow + xx] = sample(plane, py, px);
                        }
                    }
                }
            }
            for f in 0..o {
                let first = (f / per_group) * ci;
                for i in 0..ci {
                    for tap in 0..taps {
                        let kv = k[(f * ci + i) * taps + tap];
                        let src = &deformed[((first + i) * taps + tap) * oh * ow..][..oh * ow];
                        let dst = &mut values[(b * o + f) * oh * ow..][..oh * ow];
                        for (d, s) in dst.iter_mut().zip(src) {
                            *d += s * kv;
                        }
                    }
                }
            }
        }
        write_values(out, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_errors() {
        let a = DeformableConv2dAttrs { padding: vec![1], deformable_groups: 2, ..Default::default() };
        let out =
            DeformableConv2d::shapes::<usize>(&[&[1, 4, 5, 6], &[1, 36, 5, 6], &[3, 4, 3, 3]], &a).unwrap();
        assert_eq!(out, vec![vec![1, 3, 5, 6]]);
        let err = DeformableConv2d::shapes::<usize>(&[&[1, 4, 5, 6], &[1, 18, 5, 6], &[3, 4, 3, 3]], &a)
            .unwrap_err();
        assert!(err.to_string().contains("(1, 36, 5, 6)"), "{err}");
        let three = DeformableConv2dAttrs { deformable_groups: 3, ..a.clone() };
        assert!(DeformableConv2d::shapes::<usize>(&[&[1, 4, 5, 6], &[1, 54, 5, 6], &[3, 4, 3, 3]], &three)
            .is_err());
        let nhwc = DeformableConv2dAttrs { data_layout: "NHWC".into(), ..a };
        assert!(DeformableConv2d::shapes::<usize>(&[&[1, 5, 6, 4], &[1, 36, 5, 6], &[3, 4, 3, 3]], &nhwc)
            .is_err());
    }
}
