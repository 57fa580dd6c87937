//! `nn.conv2d` (TVM `src/relay/op/nn/convolution.cc`, `topi.nn.conv2d_nchw`): direct
//! convolution over `NCHW` data and `OIHW` weights with strides, asymmetric zero padding,
//! dilation and groups (depthwise when `groups` equals the input channels).

use super::{check_nchw, converted, nchw, padding4, pair, product_dtype};
use crate::attrs::Conv2dAttrs;
use crate::error::KernelError;
use crate::kernels::num::Num;
use crate::kernels::util::{args, nums, only_output, to_positive};
use crate::kernels::{Checked, Kernel};
use relay_devices::{DType, Tensor};

/// `nn.conv2d(data[n, c, h, w], weight[o, c / groups, kh, kw]) -> [n, o, oh, ow]` with
/// `oh = (h + pad_top + pad_bottom - dilation_h * (kh - 1) - 1) / stride_h + 1` (likewise
/// `ow`). Numeric dtypes; both operands are converted to the output dtype (`out_dtype`, else
/// the data's) and accumulated in it, so `int8`/`uint8` inputs take `out_dtype="int32"`.
#[derive(Debug)]
pub struct Conv2d;

/// Everything the kernel loop needs, derived and checked from shapes and attributes.
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

/// Output extent of one spatial axis, or `None` when the dilated window exceeds the padded
/// input.
fn out_extent(input: usize, pad: usize, window: usize, dilation: usize, stride: usize) -> Option<usize> {
    let span = (window.checked_sub(1)?).checked_mul(dilation)?.checked_add(1)?;
    Some((input.checked_add(pad)?.checked_sub(span)?) / stride + 1)
}

fn plan(data: &[usize], weight: &[usize], a: &Conv2dAttrs) -> Result<ConvPlan, KernelError> {
    check_nchw(&a.data_layout, &a.out_layout)?;
    if a.kernel_layout != "OIHW" {
        return Err(KernelError::Attr(format!(
            "kernel layout {} is not supported; use OIHW",
            a.kernel_layout
        )));
    }
    let [n, c, h, w] = nchw(data)?;
    let [o, ci, kh, kw] = nchw(weight)?;
    let groups = to_positive(a.groups, "groups")?;
    let bad = |why: &str| {
        KernelError::Shape(format!("nn.conv2d data {data:?}, weight {weight:?}, groups {groups}: {why}"))
    };
    if !c.is_multiple_of(groups) || !o.is_multiple_of(groups) || ci * groups != c {
        return Err(bad("channels do not split into groups"));
    }
    if a.channels.is_some_and(|ch| ch != o as i64) {
        return Err(bad("`channels` differs from the weight"));
    }
    if a.kernel_size.as_ref().is_some_and(|k| pair(k, "kernel_size").ok() != Some([kh, kw])) {
        return Err(bad("`kernel_size` differs from the weight"));
    }
    let strides = pair(&a.strides, "strides")?;
    let dilation = pair(&a.dilation, "dilation")?;
    let pad = padding4(&a.padding)?;
    let oh = out_extent(h, pad[0] + pad[2], kh, dilation[0], strides[0]);
    let ow = out_extent(w, pad[1] + pad[3], kw, dilation[1], strides[1]);
    let (Some(oh), Some(ow)) = (oh, ow) else {
        return Err(bad("the kernel is larger than the padded input"));
    };
    Ok(ConvPlan {
        data: [n, c, h, w],
        kernel: [o, ci, kh, kw],
        out: [n, o, oh, ow],
        strides,
        dilation,
        pad,
        groups,
    })
}

impl ConvPlan {
    /// The input coordinate that output coordinate `o` reads through kernel tap `k` on axis
    /// `axis` (0: height, 1: width), if it is not padding.
    fn input_at(&self, axis: usize, o: usize, k: usize) -> Option<usize> {
        let pos = (o * self.strides[axis] + k * self.dilation[axis]).checked_sub(self.pad[axis])?;
        (pos < self.data[2 + axis]).then_some(pos)
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

impl Kernel for Conv2d {
    const NAME: &'static str = "nn.conv2d";
    type Attrs = Conv2dAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &Conv2dAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [d, w] = args(inputs)?;
        Ok(vec![plan(d, w, attrs)?.out.to_vec()])
    }

    fn dtypes(inputs: &[DType], attrs: &Conv2dAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, w] = args(inputs)?;
        Ok(vec![product_dtype(d, w, attrs.out_dtype)?])
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &Conv2dAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [d, w] = args(inputs)?;
        let p = plan(d.shape(), w.shape(), attrs)?;
        let out = only_output(outputs)?;
        nums!(out.dtype(), O => {
            let (x, k) = (converted::<O>(d)?, converted::<O>(w)?);
            p.run(&x, &k, out.as_mut_slice::<O>()?);
            Ok(())
        })
    }
}
