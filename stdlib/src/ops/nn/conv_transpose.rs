//! `nn.conv1d_transpose`, `nn.conv2d_transpose` and `nn.conv3d_transpose` (TVM
//! `src/relay/op/nn/convolution.cc` `Conv1DTransposeRel`, `Conv2DTransposeRel`,
//! `Conv3DTransposeRel`, `topi.nn.conv3d_transpose_ncdhw`): the gradient of a convolution with
//! respect to its data — each input element scatters `x * w` over a window of the output —
//! with strides, padding (removed from the full output), `output_padding`, dilation and
//! groups. One shape function and one scatter loop over three spatial axes serve the three
//! ranks: a 1-d or 2-d call runs as a 3-d one whose leading spatial axes have size 1
//! (`super::lift`). Canonical layouts only (`NCW`/`IOW`, `NCHW`/`IOHW`, `NCDHW`/`IODHW`, weight
//! `[in, out / groups, k..]`); another layout is a type error.

use super::{converted, dim_text, lift, lower, padding, per_axis, product_dtype, SPATIAL};
use crate::attrs::{Conv1dTransposeAttrs, Conv2dTransposeAttrs, Conv3dTransposeAttrs};
use crate::error::KernelError;
use crate::kernels::num::Num;
use crate::kernels::util::{args, nums, only_output, to_positive};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use crate::ops::index::may_equal;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The transposed convolutions.
pub const CONV_TRANSPOSE: &[OpEntry] =
    &[OpEntry::of::<Conv2dTranspose>(), OpEntry::of::<Conv1dTranspose>(), OpEntry::of::<Conv3dTranspose>()];

/// The attributes every transposed-convolution rank has (TVM's `Conv{1,2,3}DTransposeAttrs`
/// share their names), borrowed from a call's attribute struct.
struct TransposeArgs<'a> {
    /// The number of spatial axes (1, 2 or 3).
    rank: usize,
    strides: &'a [i64],
    output_padding: &'a [i64],
    padding: &'a [i64],
    dilation: &'a [i64],
    groups: i64,
    channels: Option<i64>,
    kernel_size: Option<&'a [i64]>,
    /// The data, kernel and output layouts as written (`""` output: the data's).
    layouts: [&'a str; 3],
}

/// `output_padding` of a rank-`rank` call per spatial axis (one value applies to every axis),
/// led by 0s for a lower rank; each below its axis's stride.
fn output_padding(
    v: &[i64],
    rank: usize,
    strides: [usize; SPATIAL],
) -> Result<[usize; SPATIAL], KernelError> {
    if v.len() != 1 && v.len() != rank {
        let counts = if rank == 1 { "1 value".to_string() } else { format!("1 or {rank} values") };
        return Err(KernelError::Attr(format!(
            "attribute `output_padding` must have {counts}, found {}",
            v.len()
        )));
    }
    let mut out = [0; SPATIAL];
    for (i, o) in out[SPATIAL - rank..].iter_mut().enumerate() {
        let stride = strides[SPATIAL - rank + i];
        let p = v[if v.len() == 1 { 0 } else { i }];
        *o = usize::try_from(p).ok().filter(|&p| p < stride).ok_or_else(|| {
            KernelError::Attr(format!(
                "output_padding {v:?} must be non-negative and below the strides {:?}",
                &strides[SPATIAL - rank..]
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

/// Everything the scatter loop needs, over three spatial axes.
struct TransposePlan {
    strides: [usize; SPATIAL],
    dilation: [usize; SPATIAL],
    output_padding: [usize; SPATIAL],
    /// `[before, after]` per spatial axis.
    pad: [[usize; SPATIAL]; 2],
    groups: usize,
}

impl TransposePlan {
    /// The plan of a call's attributes, checked; canonical layouts only.
    fn new(a: &TransposeArgs, op: &str, canonical: [&str; 2]) -> Result<TransposePlan, KernelError> {
        let [data, weight] = canonical;
        let accepted = [("data_layout", data), ("kernel_layout", weight), ("out_layout", data)];
        for (i, ((name, accepted), given)) in accepted.into_iter().zip(a.layouts).enumerate() {
            // An empty output layout is the data's.
            if given != accepted && !(i == 2 && given.is_empty()) {
                return Err(KernelError::Attr(format!(
                    "{op} supports {name} {accepted:?} only, got {given:?}"
                )));
            }
        }
        let strides = per_axis(a.strides, a.rank, "strides")?;
        Ok(TransposePlan {
            strides,
            dilation: per_axis(a.dilation, a.rank, "dilation")?,
            output_padding: output_padding(a.output_padding, a.rank, strides)?,
            pad: padding(a.padding, a.rank)?,
            groups: to_positive(a.groups, "groups")?,
        })
    }

    /// The output shape from lifted canonical `[[n, c, d, h, w], [i, o / groups, kd, kh,
    /// kw]]` (`shapes` as written, for messages).
    fn shape<D: ShapeDim>(
        &self,
        [data, weight]: [&[D]; 2],
        [x, k]: [[D; 2 + SPATIAL]; 2],
        a: &TransposeArgs,
    ) -> Result<[D; 2 + SPATIAL], KernelError> {
        let (groups, c, og) = (self.groups, x[1], k[1]);
        if !may_equal(c, k[0]) {
            return Err(KernelError::Shape(format!(
                "the data has {} channels but the weight's first (input) axis is {}: {} and {}",
                dim_text(c),
                dim_text(k[0]),
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
        if let Some(size) = a.kernel_size {
            let size = per_axis(size, a.rank, "kernel_size")?;
            if size.iter().zip(&k[2..]).any(|(&s, &d)| !may_equal(D::known(s), d)) {
                return Err(KernelError::Shape(format!(
                    "kernel_size={:?} does not match the weight: {}",
                    &size[SPATIAL - a.rank..],
                    shape_text(weight)
                )));
            }
        }
        let mut out = [x[0], o, x[2], x[3], x[4]];
        for axis in 0..SPATIAL {
            let pad = self.pad[0][axis].checked_add(self.pad[1][axis]).ok_or_else(super::too_large)?;
            out[2 + axis] = transposed_out(
                x[2 + axis],
                k[2 + axis],
                self.strides[axis],
                self.dilation[axis],
                self.output_padding[axis],
                pad,
            )?;
        }
        Ok(out)
    }

    /// Scatters every input element times its weight window into `out` (zeroed first): input
    /// `i` through tap `k` lands on `i * stride + k * dilation - pad_before` along each axis.
    fn run<O: Num>(
        &self,
        [data, kernel, out_shape]: [[usize; 2 + SPATIAL]; 3],
        x: &[O],
        w: &[O],
        out: &mut [O],
    ) {
        let [n, c, ..] = data;
        let [_, og, ..] = kernel;
        let [_, oc, ..] = out_shape;
        let per_group = (c / self.groups).max(1);
        out.iter_mut().for_each(|v| *v = O::ZERO);
        // Per spatial axis, per input coordinate: the `(tap, output coordinate)` pairs that
        // land inside the output.
        let taps: [Vec<Vec<(usize, usize)>>; SPATIAL] = std::array::from_fn(|axis| {
            (0..data[2 + axis])
                .map(|i| {
                    (0..kernel[2 + axis])
                        .filter_map(|k| {
                            let at = (i * self.strides[axis] + k * self.dilation[axis])
                                .checked_sub(self.pad[0][axis]);
                            at.filter(|&p| p < out_shape[2 + axis]).map(|p| (k, p))
                        })
                        .collect()
                })
                .collect()
        });
        let [sd, sh, sw] = [2, 3, 4].map(|a| data[a]);
        let [kd, kh, kw] = [2, 3, 4].map(|a| kernel[a]);
        let [od, oh, ow] = [2, 3, 4].map(|a| out_shape[a]);
        for b in 0..n {
            for ch in 0..c {
                let g = ch / per_group;
                for (iz, tz) in taps[0].iter().enumerate() {
                    for (iy, ty) in taps[1].iter().enumerate() {
                        for (ix, tx) in taps[2].iter().enumerate() {
                            let xv = x[(((b * c + ch) * sd + iz) * sh + iy) * sw + ix];
                            for oo in 0..og {
                                let f = g * og + oo;
                                let w_base = (ch * og + oo) * kd;
                                let o_base = (b * oc + f) * od;
                                for &(kz, oz) in tz {
                                    for &(ky, oy) in ty {
                                        for &(kx, ox) in tx {
                                            let wv = w[((w_base + kz) * kh + ky) * kw + kx];
                                            let d = &mut out[((o_base + oz) * oh + oy) * ow + ox];
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
    }
}

/// The shape function of a rank-`N` transposed convolution in canonical layouts.
fn transpose_shapes<D: ShapeDim, const N: usize>(
    inputs: &[&[D]],
    a: &TransposeArgs,
    op: &str,
    canonical: [&str; 2],
) -> Result<Vec<Vec<D>>, KernelError> {
    let [data, weight] = args(inputs)?;
    let plan = TransposePlan::new(a, op, canonical)?;
    let rank_n = |s: &[D], what: &str| {
        if s.len() == N {
            lift(s)
        } else {
            Err(KernelError::Shape(format!("{what} must have rank {N}, found {}", shape_text(s))))
        }
    };
    let dims = [rank_n(data, "data")?, rank_n(weight, "weight")?];
    Ok(vec![lower::<D, N>(plan.shape([data, weight], dims, a)?).to_vec()])
}

/// Runs a checked rank-`N` call: operands lifted to three spatial axes, converted to the
/// output dtype and scattered.
fn transpose_reference(
    inputs: &[&Tensor],
    a: &TransposeArgs,
    op: &str,
    canonical: [&str; 2],
    outputs: &mut [Tensor],
) -> Result<(), KernelError> {
    let [d, w] = args(inputs)?;
    let out = only_output(outputs)?;
    let plan = TransposePlan::new(a, op, canonical)?;
    let shapes = [lift(d.shape())?, lift(w.shape())?, lift(out.shape())?];
    nums!(out.dtype(), O => {
        let (x, k) = (converted::<O>(d)?, converted::<O>(w)?);
        plan.run(shapes, &x, &k, out.as_mut_slice::<O>()?);
        Ok(())
    })
}

/// Declares a transposed convolution of one rank: its attributes, the rank of its operands
/// and their canonical `[data, weight]` layouts, and its doc line.
macro_rules! conv_transpose_op {
    ($(#[$doc:meta])* $name:ident = $op:literal, $attrs:ty, $n:literal, $canonical:expr, $line:literal) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl $attrs {
            /// The fields every transposed-convolution rank shares.
            fn transpose_args(&self) -> TransposeArgs<'_> {
                TransposeArgs {
                    rank: $n - 2,
                    strides: &self.strides,
                    output_padding: &self.output_padding,
                    padding: &self.padding,
                    dilation: &self.dilation,
                    groups: self.groups,
                    channels: self.channels,
                    kernel_size: self.kernel_size.as_deref(),
                    layouts: [&self.data_layout, &self.kernel_layout, &self.out_layout],
                }
            }
        }

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
            const NUM_INPUTS: usize = 2;
            const DTYPES: DTypeSet = DTypeSet::Nums;
            const DOC: &'static str = $line;
            type Attrs = $attrs;

            fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &$attrs) -> Result<Vec<Vec<D>>, KernelError> {
                transpose_shapes::<D, $n>(inputs, &a.transpose_args(), $op, $canonical)
            }

            fn dtypes(inputs: &[DType], a: &$attrs) -> Result<Vec<DType>, KernelError> {
                let [d, w] = args(inputs)?;
                Ok(vec![product_dtype(d, w, a.out_dtype)?])
            }

            fn reference(
                inputs: &[&Tensor],
                a: &$attrs,
                outputs: &mut [Tensor],
                _: Checked,
            ) -> Result<(), KernelError> {
                transpose_reference(inputs, &a.transpose_args(), $op, $canonical, outputs)
            }
        }
    };
}

conv_transpose_op! {
    /// `nn.conv2d_transpose(data, weight)`: data `[n, c, h, w]` and weight `[c, o / groups, kh,
    /// kw]` give `[n, o, oh, ow]` with `oh = (h - 1) * stride_h + dilation_h * (kh - 1) + 1 +
    /// output_padding_h - pad_top - pad_bottom` (likewise `ow`). Numeric dtypes, converted to
    /// and accumulated in `out_dtype` (else the data's).
    Conv2dTranspose = "nn.conv2d_transpose", Conv2dTransposeAttrs, 4, ["NCHW", "IOHW"],
    "2-d transposed convolution (NCHW data, IOHW weight)"
}

conv_transpose_op! {
    /// `nn.conv1d_transpose(data, weight)`: `nn.conv2d_transpose` along `W` only, over `NCW`
    /// data and `IOW` weights: `[n, c, w]` and `[c, o / groups, k]` give `[n, o, ow]`.
    Conv1dTranspose = "nn.conv1d_transpose", Conv1dTransposeAttrs, 3, ["NCW", "IOW"],
    "1-d transposed convolution (NCW data, IOW weight)"
}

conv_transpose_op! {
    /// `nn.conv3d_transpose(data, weight)`: `nn.conv2d_transpose` over `D`, `H` and `W` of
    /// `NCDHW` data and `IODHW` weights: `[n, c, d, h, w]` and `[c, o / groups, kd, kh, kw]`
    /// give `[n, o, od, oh, ow]`; `padding` has 1, 3 or 6 values (`[front, top, left, back,
    /// bottom, right]`).
    Conv3dTranspose = "nn.conv3d_transpose", Conv3dTransposeAttrs, 5, ["NCDHW", "IODHW"],
    "3-d transposed convolution (NCDHW data, IODHW weight)"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_of_every_rank() {
        let a3 =
            Conv3dTransposeAttrs { strides: vec![2], padding: vec![1, 0, 0, 0, 1, 0], ..Default::default() };
        let out = Conv3dTranspose::shapes::<usize>(&[&[1, 4, 2, 3, 4], &[4, 3, 3, 2, 2]], &a3).unwrap();
        assert_eq!(out, vec![vec![1, 3, 4, 5, 8]]);
        let a1 = Conv1dTransposeAttrs { strides: vec![3], output_padding: vec![2], ..Default::default() };
        assert_eq!(
            Conv1dTranspose::shapes::<usize>(&[&[1, 2, 4], &[2, 5, 3]], &a1).unwrap(),
            vec![vec![1, 5, 14]]
        );
        let high = Conv1dTransposeAttrs { output_padding: vec![3], ..a1 };
        assert!(Conv1dTranspose::shapes::<usize>(&[&[1, 2, 4], &[2, 5, 3]], &high).is_err());
        let bad = Conv3dTransposeAttrs { kernel_layout: "OIDHW".into(), ..Default::default() };
        let err = Conv3dTranspose::shapes::<usize>(&[&[1, 4, 2, 3, 4], &[4, 3, 3, 2, 2]], &bad).unwrap_err();
        assert!(err.to_string().contains("kernel_layout \"IODHW\" only"), "{err}");
        let a2 = Conv2dTransposeAttrs::default();
        assert!(Conv2dTranspose::shapes::<usize>(&[&[1, 4, 2, 3, 4], &[4, 3, 3, 2, 2]], &a2).is_err());
    }
}
