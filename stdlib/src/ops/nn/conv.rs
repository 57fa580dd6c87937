//! `nn.conv1d`, `nn.conv2d` and `nn.conv3d` (TVM `src/relay/op/nn/convolution.cc`
//! `Conv1DRel`, `Conv2DRel`, `Conv3DRel`, `topi.nn.conv3d_ncdhw`): direct convolution with
//! strides, asymmetric zero padding, dilation and groups (depthwise when `groups` equals the
//! input channels). One shape function and one kernel loop serve the three ranks: a 1-d or
//! 2-d convolution runs as a 3-d one with leading spatial axes of size 1 (`super::lift`). Any
//! plain layout runs (`NCHW`/`OIHW`, `NHWC`/`HWIO`, `NDHWC`/`DHWIO` and every other
//! permutation): the reference kernel loops over canonical `NCDHW` data and `OIDHW` weights,
//! others are permuted in and out (`super::in_canonical`); the kir rule is `nn.conv2d`'s, in
//! `NCHW`/`OIHW` only, so other layouts and ranks run unfused.

use super::{
    converted, dim_text, in_canonical, lift, lower, padding, per_axis, product_dtype, window_out, Layout,
    SPATIAL,
};
use crate::attrs::{Conv1dAttrs, Conv2dAttrs, Conv3dAttrs};
use crate::compute;
use crate::error::KernelError;
use crate::kernels::num::Num;
use crate::kernels::util::{args, nums, only_output, to_positive};
use crate::kernels::Checked;
use crate::operator::{shape_text, AlterOpLayoutRule, ComputeRule, DTypeSet, OpEntry, Operator, ShapeDim};
use crate::ops::index::may_equal;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The convolutions.
pub const CONV: &[OpEntry] = &[OpEntry::of::<Conv2d>(), OpEntry::of::<Conv1d>(), OpEntry::of::<Conv3d>()];

/// The attributes every convolution rank has (TVM's `Conv1DAttrs`, `Conv2DAttrs` and
/// `Conv3DAttrs` share their names), borrowed from a call's attribute struct.
struct ConvArgs<'a> {
    /// The number of spatial axes (1, 2 or 3).
    rank: usize,
    strides: &'a [i64],
    padding: &'a [i64],
    dilation: &'a [i64],
    groups: i64,
    channels: Option<i64>,
    kernel_size: Option<&'a [i64]>,
    /// The data, kernel and output layouts as written (`""` output: the data's).
    layouts: [&'a str; 3],
}

/// The data, weight and output layouts of a rank-`N` call (`N = 2 + rank`), permutations of
/// the canonical `[data, weight]` letters.
fn layouts<const N: usize>(a: &ConvArgs, [data, weight]: [&str; 2]) -> Result<[Layout<N>; 3], KernelError> {
    let [dl, kl, ol] = a.layouts;
    let data_layout = Layout::parse(dl, data)?;
    let kernel_layout = Layout::parse(kl, weight)?;
    let out = match ol {
        "" => data_layout,
        l => Layout::parse(l, data)?,
    };
    Ok([data_layout, kernel_layout, out])
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

/// The shape function of a rank-`N` convolution: the operands in their layouts, the output in
/// `out_layout` (see [`conv_shape`]).
fn conv_shapes<D: ShapeDim, const N: usize>(
    inputs: &[&[D]],
    a: &ConvArgs,
    canonical: [&str; 2],
) -> Result<Vec<Vec<D>>, KernelError> {
    let [data, weight] = args(inputs)?;
    let [dl, kl, ol] = layouts::<N>(a, canonical)?;
    let dims = [lift(&dl.to_canonical(data, "data")?)?, lift(&kl.to_canonical(weight, "weight")?)?];
    Ok(vec![ol.arrange(lower::<D, N>(conv_shape([data, weight], dims, a)?))])
}

/// The convolution shape function over canonical dimensions lifted to three spatial axes,
/// `[[n, c, d, h, w], [o, i, kd, kh, kw]]` (`shapes` as written, for messages):
/// `[n, o, od, oh, ow]` with `od = (d + pad_front + pad_back - dilation_d * (kd - 1) - 1) /
/// stride_d + 1` (likewise `oh`, `ow`); `o` divides into `groups`, and `channels` and
/// `kernel_size`, when given, match the weight.
fn conv_shape<D: ShapeDim>(
    [data, weight]: [&[D]; 2],
    [x, k]: [[D; 2 + SPATIAL]; 2],
    a: &ConvArgs,
) -> Result<[D; 2 + SPATIAL], KernelError> {
    let groups = to_positive(a.groups, "groups")?;
    check_channels(data, weight, [x[1], k[0], k[1]], groups)?;
    if let Some(channels) = a.channels.filter(|&ch| !may_be(ch, k[0])) {
        return Err(KernelError::Shape(format!(
            "channels={channels} does not match the weight's {} output channels: {}",
            dim_text(k[0]),
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
    let strides = per_axis(a.strides, a.rank, "strides")?;
    let dilation = per_axis(a.dilation, a.rank, "dilation")?;
    let [before, after] = padding(a.padding, a.rank)?;
    let mut out = [x[0], k[0], x[2], x[3], x[4]];
    for axis in 0..SPATIAL {
        // A `?` window gives a `?` extent: the window itself.
        let Some(window) = k[2 + axis].value() else {
            out[2 + axis] = k[2 + axis];
            continue;
        };
        let total = before[axis].checked_add(after[axis]).ok_or_else(super::too_large)?;
        out[2 + axis] = window_out(x[2 + axis], window, strides[axis], dilation[axis], total, false)
            .map_err(|e| {
                KernelError::Shape(format!(
                    "{} along {}: {} and {}",
                    crate::operator::message(e),
                    ["D", "H", "W"][axis],
                    shape_text(data),
                    shape_text(weight)
                ))
            })?;
    }
    Ok(out)
}

/// Runs a rank-`N` convolution whose shapes passed [`conv_shapes`]: the operands permuted to
/// canonical order, lifted to three spatial axes, convolved, and the result permuted back.
fn conv_reference<const N: usize>(
    inputs: &[&Tensor],
    a: &ConvArgs,
    canonical: [&str; 2],
    outputs: &mut [Tensor],
) -> Result<(), KernelError> {
    let [dl, kl, ol] = layouts::<N>(a, canonical)?;
    in_canonical(inputs, &[&dl.pos, &kl.pos], only_output(outputs)?, &ol.pos, |inputs, out| {
        let [d, w] = args(inputs)?;
        plan(lift(d.shape())?, lift(w.shape())?, lift(out.shape())?, a)?.convolve(d, w, out)
    })
}

/// Declares a convolution of one rank: its attributes, the rank of its operands and their
/// canonical `[data, weight]` layouts, its compute rule if any, and its doc line.
macro_rules! conv_op {
    ($(#[$doc:meta])* $name:ident = $op:literal, $attrs:ty, $n:literal, $canonical:expr, $compute:expr,
     $alter:expr, $line:literal) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl $attrs {
            /// The fields every convolution rank shares.
            fn conv_args(&self) -> ConvArgs<'_> {
                ConvArgs {
                    rank: $n - 2,
                    strides: &self.strides,
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
            const COMPUTE: Option<ComputeRule<$attrs>> = $compute;
            const ALTER_OP_LAYOUT: Option<AlterOpLayoutRule<$attrs>> = $alter;

            fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &$attrs) -> Result<Vec<Vec<D>>, KernelError> {
                conv_shapes::<D, $n>(inputs, &a.conv_args(), $canonical)
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
                conv_reference::<$n>(inputs, &a.conv_args(), $canonical, outputs)
            }
        }
    };
}

conv_op! {
    /// `nn.conv2d(data, weight)`: in canonical layouts, data `[n, c, h, w]` and weight
    /// `[o, c / groups, kh, kw]` give `[n, o, oh, ow]` with
    /// `oh = (h + pad_top + pad_bottom - dilation_h * (kh - 1) - 1) / stride_h + 1` (likewise
    /// `ow`); `o` divides into `groups`, and `channels` and `kernel_size`, when given, match the
    /// weight. Numeric dtypes; both operands are converted to the output dtype (`out_dtype`, else
    /// the data's) and accumulated in it, so `int8`/`uint8` inputs take `out_dtype="int32"`.
    Conv2d = "nn.conv2d", Conv2dAttrs, 4, ["NCHW", "OIHW"], Some(compute::nn::conv2d),
    super::winograd::CONV2D_ALTER, "2-d convolution (NCHW data, OIHW weight by default)"
}

conv_op! {
    /// `nn.conv1d(data, weight)`: `nn.conv2d` along `W` only, over `NCW` data and `OIW` weights
    /// (any permutation runs): `[n, c, w]` and `[o, c / groups, k]` give `[n, o, ow]`. Numeric
    /// dtypes, `out_dtype` as for `nn.conv2d`. Reference kernel only.
    Conv1d = "nn.conv1d", Conv1dAttrs, 3, ["NCW", "OIW"], None, None,
    "1-d convolution (NCW data, OIW weight by default)"
}

conv_op! {
    /// `nn.conv3d(data, weight)`: `nn.conv2d` over `D`, `H` and `W` of `NCDHW` data and
    /// `OIDHW` weights (any permutation runs, e.g. `NDHWC`/`DHWIO`): `[n, c, d, h, w]` and
    /// `[o, c / groups, kd, kh, kw]` give `[n, o, od, oh, ow]`; `padding` has 1, 3 or 6 values
    /// (`[front, top, left, back, bottom, right]`). Numeric dtypes, `out_dtype` as for
    /// `nn.conv2d`. Reference kernel only.
    Conv3d = "nn.conv3d", Conv3dAttrs, 5, ["NCDHW", "OIDHW"], None, None,
    "3-d convolution (NCDHW data, OIDHW weight by default)"
}

/// Everything the kernel loop needs, from canonical shapes lifted to three spatial axes that
/// [`conv_shape`] has checked.
struct ConvPlan {
    data: [usize; 2 + SPATIAL],
    kernel: [usize; 2 + SPATIAL],
    out: [usize; 2 + SPATIAL],
    strides: [usize; SPATIAL],
    dilation: [usize; SPATIAL],
    /// The padding before each spatial axis (the padding after only sizes the output).
    pad: [usize; SPATIAL],
    groups: usize,
}

/// The plan of a call whose lifted canonical shapes passed [`conv_shape`] (its layout
/// attributes are not read: the operands are in canonical order by now).
fn plan(
    data: [usize; 2 + SPATIAL],
    kernel: [usize; 2 + SPATIAL],
    out: [usize; 2 + SPATIAL],
    a: &ConvArgs,
) -> Result<ConvPlan, KernelError> {
    Ok(ConvPlan {
        data,
        kernel,
        out,
        strides: per_axis(a.strides, a.rank, "strides")?,
        dilation: per_axis(a.dilation, a.rank, "dilation")?,
        pad: padding(a.padding, a.rank)?[0],
        groups: to_positive(a.groups, "groups")?,
    })
}

impl ConvPlan {
    /// Per output coordinate along spatial axis `axis`, the `(kernel tap, input coordinate)`
    /// pairs whose input is not padding.
    fn taps(&self, axis: usize) -> Vec<Vec<(usize, usize)>> {
        let input_at = |o: usize, k: usize| {
            let pos = (o * self.strides[axis] + k * self.dilation[axis]).checked_sub(self.pad[axis])?;
            (pos < self.data[2 + axis]).then_some((k, pos))
        };
        (0..self.out[2 + axis])
            .map(|o| (0..self.kernel[2 + axis]).filter_map(|k| input_at(o, k)).collect())
            .collect()
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
        let [n, c, d, h, wd] = self.data;
        let [oc, ci, kd, kh, kw] = self.kernel;
        let [depth, rows, cols] = [0, 1, 2].map(|axis| self.taps(axis));
        let (rows, cols) = (&rows, &cols);
        let positions: Vec<_> = depth
            .iter()
            .flat_map(|z| rows.iter().flat_map(move |y| cols.iter().map(move |c| (z, y, c))))
            .collect();
        let per_group = oc / self.groups;
        let mut dst = out.iter_mut();
        for b in 0..n {
            for f in 0..oc {
                let first_c = (f / per_group) * ci;
                for &(tz, ty, tx) in &positions {
                    let mut acc = O::ZERO;
                    for i in 0..ci {
                        let (xd, wk) = ((b * c + first_c + i) * d, (f * ci + i) * kd);
                        for &(kz, iz) in tz {
                            for &(ky, iy) in ty {
                                for &(kx, ix) in tx {
                                    let xv = x[((xd + iz) * h + iy) * wd + ix];
                                    let wv = w[((wk + kz) * kh + ky) * kw + kx];
                                    acc = acc.add_wrapping(xv.mul_wrapping(wv));
                                }
                            }
                        }
                    }
                    if let Some(slot) = dst.next() {
                        *slot = acc;
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

    #[test]
    fn conv3d_shapes_every_layout_and_padding_form() {
        let a = Conv3dAttrs { strides: vec![1, 2, 2], padding: vec![1, 0, 0, 0, 1, 0], ..Default::default() };
        let out = Conv3d::shapes::<usize>(&[&[2, 4, 5, 8, 8], &[6, 4, 3, 3, 3]], &a).unwrap();
        assert_eq!(out, vec![vec![2, 6, 4, 4, 3]]);
        let ndhwc = Conv3dAttrs {
            padding: vec![1],
            groups: 2,
            data_layout: "NDHWC".into(),
            kernel_layout: "DHWIO".into(),
            ..Default::default()
        };
        let out = Conv3d::shapes::<usize>(&[&[1, 4, 4, 4, 6], &[3, 3, 3, 3, 4]], &ndhwc).unwrap();
        assert_eq!(out, vec![vec![1, 4, 4, 4, 4]]);
        let err =
            |a: &Conv3dAttrs| Conv3d::shapes::<usize>(&[&[1, 1, 2, 4, 4], &[1, 1, 3, 3, 3]], a).unwrap_err();
        assert!(err(&Conv3dAttrs::default()).to_string().contains("along D"));
        let bad_pad = Conv3dAttrs { padding: vec![0, 0], ..Default::default() };
        assert!(err(&bad_pad).to_string().contains("must have 1, 3 or 6 values"));
    }
}
