//! Pooling (TVM `src/relay/op/nn/pooling.cc` `Pool1DRel`, `Pool2DRel`, `GlobalPool2DRel`,
//! `AdaptivePool2DRel`, `topi` `pool_impl_nd`): `nn.max_pool1d`, `nn.avg_pool1d`,
//! `nn.max_pool2d`, `nn.avg_pool2d`, `nn.global_avg_pool2d`, `nn.global_max_pool2d`,
//! `nn.adaptive_avg_pool2d`, `nn.adaptive_max_pool2d`, `nn.adaptive_avg_pool1d`,
//! `nn.adaptive_max_pool1d`. Any plain layout runs (`NCHW`, `NHWC`, ...): the reference
//! kernels loop over `NCW`/`NCHW` (a 1-d pool runs as a 2-d one of height one) and other
//! layouts are permuted in and out (`super::in_canonical`); the kir rules are `NCHW` only, so
//! other layouts run unfused.
//!
//! Window `(y, x)` covers input rows `y * stride - pad_top + i * dilation` for `i < kh`
//! (likewise columns). With `ceil_mode` the output size rounds up, which adds up to
//! `stride - 1` positions of implicit padding after the explicit `pad_bottom`/`pad_right`.

use super::{check_dtype, in_canonical, padding4, pair, window_out, Layout};
use crate::attrs::{
    AdaptivePool1dAttrs, AdaptivePool2dAttrs, AvgPool1dAttrs, AvgPool2dAttrs, GlobalPool2dAttrs,
    MaxPool1dAttrs, MaxPool2dAttrs,
};
use crate::compute;
use crate::error::KernelError;
use crate::kernels::num::{from_usize, Num};
use crate::kernels::util::{args, floats, nums, only_output};
use crate::kernels::Checked;
use crate::operator::{message, shape_text, ComputeRule, DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The pooling operators.
pub const POOL: &[OpEntry] = &[
    OpEntry::of::<MaxPool2d>(),
    OpEntry::of::<AvgPool2d>(),
    OpEntry::of::<MaxPool1d>(),
    OpEntry::of::<AvgPool1d>(),
    OpEntry::of::<GlobalAvgPool2d>(),
    OpEntry::of::<GlobalMaxPool2d>(),
    OpEntry::of::<AdaptiveAvgPool2d>(),
    OpEntry::of::<AdaptiveMaxPool2d>(),
    OpEntry::of::<AdaptiveAvgPool1d>(),
    OpEntry::of::<AdaptiveMaxPool1d>(),
];

/// The attributes max and average pooling share (the `MaxPool*Attrs` and `AvgPool*Attrs`
/// structs have the same window fields).
struct PoolAttrs<'a> {
    pool_size: &'a [i64],
    strides: &'a [i64],
    dilation: &'a [i64],
    padding: &'a [i64],
    layout: &'a str,
    out_layout: &'a str,
    ceil_mode: bool,
}

/// [`PoolAttrs`] borrowed from a max or average pooling attribute struct.
macro_rules! pool_attrs {
    ($a:expr) => {
        PoolAttrs {
            pool_size: &$a.pool_size,
            strides: &$a.strides,
            dilation: &$a.dilation,
            padding: &$a.padding,
            layout: &$a.layout,
            out_layout: &$a.out_layout,
            ceil_mode: $a.ceil_mode,
        }
    };
}

/// The data layout of a pooling call (a permutation of `canonical`); the output is in the
/// same layout, so `out_layout` may only repeat it.
fn pool_layout<const N: usize>(
    layout: &str,
    out_layout: &str,
    canonical: &str,
) -> Result<Layout<N>, KernelError> {
    if !out_layout.is_empty() && out_layout != layout {
        return Err(KernelError::Attr(format!(
            "out_layout {out_layout:?} differs from layout {layout:?}, which is not supported"
        )));
    }
    Layout::parse(layout, canonical)
}

/// The 2-d pooling shape function: `H` and `W` become window counts (see [`window_out`]).
fn pool2d_shape<D: ShapeDim>(inputs: &[&[D]], a: PoolAttrs) -> Result<Vec<Vec<D>>, KernelError> {
    let [x] = args(inputs)?;
    let layout = pool_layout::<4>(a.layout, a.out_layout, "NCHW")?;
    let [n, c, h, w] = layout.to_canonical(x, "data")?;
    let g = plan2d(&a)?;
    let (oh, ow) = (g.extent(0, h, x)?, g.extent(1, w, x)?);
    Ok(vec![layout.arrange([n, c, oh, ow])])
}

/// The 1-d pooling shape function: `W` becomes the window count.
fn pool1d_shape<D: ShapeDim>(inputs: &[&[D]], a: PoolAttrs) -> Result<Vec<Vec<D>>, KernelError> {
    let [x] = args(inputs)?;
    let layout = pool_layout::<3>(a.layout, a.out_layout, "NCW")?;
    let [n, c, w] = layout.to_canonical(x, "data")?;
    Ok(vec![layout.arrange([n, c, plan1d(&a)?.extent(1, w, x)?])])
}

/// One value, positive (a 1-d `pool_size`, `strides`, `dilation`).
fn single(v: &[i64], name: &str) -> Result<usize, KernelError> {
    match *v {
        [a] => pair(&[a], name).map(|[a, _]| a),
        _ => Err(KernelError::Attr(format!("attribute `{name}` must have 1 value, found {}", v.len()))),
    }
}

/// The window geometry of a 2-d pooling call, from its attributes.
fn plan2d(a: &PoolAttrs) -> Result<Window, KernelError> {
    Ok(Window {
        window: pair(a.pool_size, "pool_size")?,
        strides: pair(a.strides, "strides")?,
        dilation: pair(a.dilation, "dilation")?,
        pad: padding4(a.padding)?,
        ceil_mode: a.ceil_mode,
    })
}

/// The window geometry of a 1-d pooling call as a 2-d one of height 1: `padding` is `[p]`
/// or `[left, right]`.
fn plan1d(a: &PoolAttrs) -> Result<Window, KernelError> {
    let [left, right] = match *a.padding {
        [p] => [p, p],
        [l, r] => [l, r],
        _ => {
            return Err(KernelError::Attr(format!(
                "attribute `padding` must have 1 or 2 values, found {}",
                a.padding.len()
            )))
        }
    };
    Ok(Window {
        window: [1, single(a.pool_size, "pool_size")?],
        strides: [1, single(a.strides, "strides")?],
        dilation: [1, single(a.dilation, "dilation")?],
        pad: padding4(&[0, left, 0, right])?,
        ceil_mode: a.ceil_mode,
    })
}

/// A pooling window: its taps, steps and padding per spatial axis (0: height, 1: width).
struct Window {
    window: [usize; 2],
    strides: [usize; 2],
    dilation: [usize; 2],
    /// `[top, left, bottom, right]`.
    pad: [usize; 4],
    ceil_mode: bool,
}

impl Window {
    /// The output extent along spatial axis `axis` of an input of `size` (of shape `x`).
    fn extent<D: ShapeDim>(&self, axis: usize, size: D, x: &[D]) -> Result<D, KernelError> {
        let total = self.pad[axis].checked_add(self.pad[axis + 2]).ok_or_else(super::too_large)?;
        let name = ["H", "W"][axis];
        window_out(size, self.window[axis], self.strides[axis], self.dilation[axis], total, self.ceil_mode)
            .map_err(|e| KernelError::Shape(format!("{} along {name}: {}", message(e), shape_text(x))))
    }
}

/// Geometry of one pooling call over `NCHW` data.
struct Pool {
    data: [usize; 4],
    out: [usize; 4],
    window: [usize; 2],
    strides: [usize; 2],
    dilation: [usize; 2],
    /// `[top, left, bottom, right]`.
    pad: [usize; 4],
}

/// Runs a pooling call whose shapes passed its shape function: `run(data, output)` over
/// `NCW` or `NCHW` tensors (by the data's rank), the operands permuted from and to `layout`.
fn in_pool_layout(
    inputs: &[&Tensor],
    layout: &str,
    out_layout: &str,
    outputs: &mut [Tensor],
    run: impl FnOnce(&Tensor, &mut Tensor) -> Result<(), KernelError>,
) -> Result<(), KernelError> {
    let [x] = args(inputs)?;
    let order = match x.ndim() {
        3 => pool_layout::<3>(layout, out_layout, "NCW")?.pos.to_vec(),
        _ => pool_layout::<4>(layout, out_layout, "NCHW")?.pos.to_vec(),
    };
    in_canonical(inputs, &[&order], only_output(outputs)?, &order, |inputs, out| {
        let [x] = args(inputs)?;
        run(x, out)
    })
}

/// `[n, c, h, w]` of `NCHW`, or of `NCW` seen as `NCHW` of height 1.
fn as_nchw(s: &[usize]) -> Result<[usize; 4], KernelError> {
    match *s {
        [n, c, h, w] => Ok([n, c, h, w]),
        [n, c, w] => Ok([n, c, 1, w]),
        _ => Err(KernelError::Shape(format!("{} is not 3-d or 4-d", shape_text(s)))),
    }
}

/// Runs a max or average pooling call: `run(plan, data, output)` over `NCHW` tensors, or
/// `NCW` seen as `NCHW` of height 1 (a rank-3 input).
fn pool_reference(
    inputs: &[&Tensor],
    a: PoolAttrs,
    outputs: &mut [Tensor],
    run: impl FnOnce(Pool, &Tensor, &mut Tensor) -> Result<(), KernelError>,
) -> Result<(), KernelError> {
    let [x] = args(inputs)?;
    let g = if x.ndim() == 3 { plan1d(&a)? } else { plan2d(&a)? };
    in_pool_layout(inputs, a.layout, a.out_layout, outputs, |x, out| {
        let p = Pool {
            data: as_nchw(x.shape())?,
            out: as_nchw(out.shape())?,
            window: g.window,
            strides: g.strides,
            dilation: g.dilation,
            pad: g.pad,
        };
        run(p, x, out)
    })
}

impl Pool {
    /// For output coordinate `o` on axis `axis` (0: height, 1: width): the input coordinates
    /// of the window's real elements, and the window size counted with explicit padding but
    /// not the `ceil_mode` extension (the `count_include_pad` divisor).
    fn taps(&self, axis: usize, o: usize) -> (Vec<usize>, usize) {
        let dim = self.data[2 + axis] as i64;
        let (before, after) = (self.pad[axis] as i64, self.pad[axis + 2] as i64);
        let start = (o * self.strides[axis]) as i64 - before;
        let step = self.dilation[axis] as i64;
        let positions = (0..self.window[axis] as i64).map(|i| start + i * step);
        let real = positions.clone().filter(|p| (0..dim).contains(p)).map(|p| p as usize).collect();
        let counted = positions.filter(|&p| p < dim + after).count();
        (real, counted)
    }

    /// Calls `f(window elements, count_include_pad divisor)` per output element, in order.
    fn run<T: Copy>(&self, x: &[T], out: &mut [T], f: impl Fn(&mut dyn Iterator<Item = T>, usize) -> T) {
        let [n, c, h, w] = self.data;
        let [_, _, oh, ow] = self.out;
        let rows: Vec<_> = (0..oh).map(|y| self.taps(0, y)).collect();
        let cols: Vec<_> = (0..ow).map(|x| self.taps(1, x)).collect();
        let mut dst = out.iter_mut();
        for plane in 0..n * c {
            let base = plane * h * w;
            for (ys, ycount) in &rows {
                for (xs, xcount) in &cols {
                    let mut window =
                        ys.iter().flat_map(|&iy| xs.iter().map(move |&ix| x[base + iy * w + ix]));
                    if let Some(d) = dst.next() {
                        *d = f(&mut window, ycount * xcount);
                    }
                }
            }
        }
    }
}

/// Declares a max or average pooling operator: its attributes and shape function, its dtype
/// set and dispatch macro, its compute rule if any, its doc line, and
/// `|window elements, count_include_pad divisor| result`.
macro_rules! pool_op {
    ($(#[$doc:meta])* $name:ident = $op:literal, $attrs:ty, $shape:ident, $set:ident,
     $compute:expr, $line:literal, |$w:ident, $padded:ident, $a:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
            const NUM_INPUTS: usize = 1;
            const DTYPES: DTypeSet = crate::operator::dtype_set!($set);
            const DOC: &'static str = $line;
            type Attrs = $attrs;
            const COMPUTE: Option<ComputeRule<$attrs>> = $compute;

            fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &$attrs) -> Result<Vec<Vec<D>>, KernelError> {
                $shape(inputs, pool_attrs!(a))
            }

            fn dtypes(inputs: &[DType], _: &$attrs) -> Result<Vec<DType>, KernelError> {
                let [d] = args(inputs)?;
                Ok(vec![check_dtype(Self::DTYPES, d)?])
            }

            fn reference(
                inputs: &[&Tensor],
                $a: &$attrs,
                outputs: &mut [Tensor],
                _: Checked,
            ) -> Result<(), KernelError> {
                pool_reference(inputs, pool_attrs!($a), outputs, |p, x, out| {
                    $set!(x.dtype(), T => {
                        p.run(x.as_slice::<T>()?, out.as_mut_slice::<T>()?, |$w, $padded| $body);
                        Ok(())
                    })
                })
            }
        }
    };
}

/// The maximum of a window; padding never wins (a window of padding only gives the dtype's
/// lowest value).
fn window_max<T: Num>(w: &mut dyn Iterator<Item = T>) -> T {
    w.fold(T::LOWEST, |m, v| if v > m { v } else { m })
}

/// The mean of a window over its real elements or, with `count_include_pad`, over the
/// `padded` count (explicit padding, never the `ceil_mode` extension); 0 for padding only.
fn window_mean<T: crate::kernels::num::Float>(
    w: &mut dyn Iterator<Item = T>,
    padded: usize,
    count_include_pad: bool,
) -> T {
    let (sum, real) = w.fold((T::ZERO, 0usize), |(s, n), v| (s + v, n + 1));
    sum / from_usize::<T>(if count_include_pad { padded } else { real }.max(1))
}

pool_op! {
    /// `nn.max_pool2d`: the maximum of each window; padding never wins. Numeric dtypes.
    MaxPool2d = "nn.max_pool2d", MaxPool2dAttrs, pool2d_shape, nums, Some(compute::nn::max_pool2d),
    "2-d max pooling", |w, _p, _a| window_max(w)
}

pool_op! {
    /// `nn.avg_pool2d`: the mean of each window, over its real elements or, with
    /// `count_include_pad`, over the window including explicit padding (never the `ceil_mode`
    /// extension). A window of padding only gives 0. Float dtypes.
    AvgPool2d = "nn.avg_pool2d", AvgPool2dAttrs, pool2d_shape, floats, Some(compute::nn::avg_pool2d),
    "2-d average pooling", |w, padded, a| window_mean(w, padded, a.count_include_pad)
}

pool_op! {
    /// `nn.max_pool1d`: `nn.max_pool2d` along `W` of `NCW` data. Numeric dtypes. Reference
    /// kernel only.
    MaxPool1d = "nn.max_pool1d", MaxPool1dAttrs, pool1d_shape, nums, None,
    "1-d max pooling", |w, _p, _a| window_max(w)
}

pool_op! {
    /// `nn.avg_pool1d`: `nn.avg_pool2d` along `W` of `NCW` data. Float dtypes. Reference
    /// kernel only.
    AvgPool1d = "nn.avg_pool1d", AvgPool1dAttrs, pool1d_shape, floats, None,
    "1-d average pooling", |w, padded, a| window_mean(w, padded, a.count_include_pad)
}

/// The global pooling shape function: `H` and `W` become 1.
fn global_shape<D: ShapeDim>(inputs: &[&[D]], a: &GlobalPool2dAttrs) -> Result<Vec<Vec<D>>, KernelError> {
    let [x] = args(inputs)?;
    let layout = pool_layout::<4>(&a.layout, &a.out_layout, "NCHW")?;
    let [n, c, _, _] = layout.to_canonical(x, "data")?;
    Ok(vec![layout.arrange([n, c, D::known(1), D::known(1)])])
}

/// Writes `f(plane)` for each `H x W` plane of NCHW `x` into `out`, in order.
fn each_plane<T: Copy>(x: &[T], plane: usize, out: &mut [T], f: impl Fn(&[T]) -> T) {
    for (i, d) in out.iter_mut().enumerate() {
        *d = f(x.get(i * plane..(i + 1) * plane).unwrap_or_default());
    }
}

/// Declares a global pooling operator: name, dtype set and dispatch macro, compute rule if
/// any, doc line, and `|plane, plane size| result`.
macro_rules! global_pool {
    ($(#[$doc:meta])* $name:ident = $op:literal, $set:ident, $compute:expr, $line:literal,
     |$p:ident, $size:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
            const NUM_INPUTS: usize = 1;
            const DTYPES: DTypeSet = crate::operator::dtype_set!($set);
            const DOC: &'static str = $line;
            type Attrs = GlobalPool2dAttrs;
            const COMPUTE: Option<ComputeRule<GlobalPool2dAttrs>> = $compute;

            fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &GlobalPool2dAttrs) -> Result<Vec<Vec<D>>, KernelError> {
                global_shape(inputs, a)
            }

            fn dtypes(inputs: &[DType], _: &GlobalPool2dAttrs) -> Result<Vec<DType>, KernelError> {
                let [d] = args(inputs)?;
                Ok(vec![check_dtype(Self::DTYPES, d)?])
            }

            fn reference(
                inputs: &[&Tensor],
                a: &GlobalPool2dAttrs,
                outputs: &mut [Tensor],
                _: Checked,
            ) -> Result<(), KernelError> {
                in_pool_layout(inputs, &a.layout, &a.out_layout, outputs, |x, out| {
                    let &[_, _, h, w] = x.shape() else {
                        return Err(KernelError::Shape(format!("{} is not 4-d", shape_text(x.shape()))));
                    };
                    let $size = h * w;
                    $set!(x.dtype(), T => {
                        each_plane(x.as_slice::<T>()?, $size, out.as_mut_slice::<T>()?, |$p: &[T]| $body);
                        Ok(())
                    })
                })
            }
        }
    };
}

global_pool! {
    /// `nn.global_avg_pool2d`: `H` and `W` become 1, each the mean of its plane (`NaN` for an
    /// empty plane). Float dtypes.
    GlobalAvgPool2d = "nn.global_avg_pool2d", floats, Some(compute::nn::global_avg_pool2d),
    "mean over H and W", |p, plane| p.iter().fold(T::ZERO, |s, &v| s + v) / from_usize::<T>(plane)
}

global_pool! {
    /// `nn.global_max_pool2d`: `H` and `W` become 1, each the maximum of its plane (the dtype's
    /// lowest value for an empty plane). Numeric dtypes. Reference kernel only.
    GlobalMaxPool2d = "nn.global_max_pool2d", nums, None, "maximum over H and W",
    |p, _plane| p.iter().fold(T::LOWEST, |m, &v| if v > m { v } else { m })
}

/// The adaptive pooling shape function (TVM `AdaptivePool1DRel`, `AdaptivePool2DRel`) over
/// rank-`R` data in a permutation of `canonical`: the spatial axes become `output_size` (one
/// value applies to all; none keeps them).
fn adaptive_shape<D: ShapeDim, const R: usize>(
    inputs: &[&[D]],
    output_size: &[i64],
    [layout, out_layout, canonical]: [&str; 3],
) -> Result<Vec<Vec<D>>, KernelError> {
    let [x] = args(inputs)?;
    let layout = pool_layout::<R>(layout, out_layout, canonical)?;
    let mut dims = layout.to_canonical(x, "data")?;
    let size = |v: i64| {
        usize::try_from(v).ok().filter(|&s| s > 0).map(D::known).ok_or_else(|| {
            KernelError::Attr(format!("attribute `output_size` must be positive, found {output_size:?}"))
        })
    };
    let spatial = &mut dims[2..];
    match *output_size {
        [] => {}
        [s] => spatial.fill(size(s)?),
        _ if output_size.len() == spatial.len() => {
            for (d, &s) in spatial.iter_mut().zip(output_size) {
                *d = size(s)?;
            }
        }
        _ => {
            return Err(KernelError::Attr(format!(
                "attribute `output_size` must have 0, 1 or {} values, found {}",
                spatial.len(),
                output_size.len()
            )))
        }
    }
    Ok(vec![layout.arrange(dims)])
}

/// Output position `o` of `out` along an axis of `len` inputs reads inputs
/// `floor(o * len / out) .. ceil((o + 1) * len / out)` (TVM's adaptive windows).
fn adaptive_window(o: usize, out: usize, len: usize) -> std::ops::Range<usize> {
    (o * len / out)..((o + 1) * len).div_ceil(out)
}

/// Writes `f(window elements)` for each output element of an adaptive pooling of `NCHW` `x`
/// (or `NCW`, as height 1).
fn adaptive_run<T: Copy + relay_devices::Element>(
    x: &Tensor,
    out: &mut Tensor,
    f: impl Fn(&mut dyn Iterator<Item = T>) -> T,
) -> Result<(), KernelError> {
    let ([n, c, h, w], [_, _, oh, ow]) = (as_nchw(x.shape())?, as_nchw(out.shape())?);
    let src = x.as_slice::<T>()?;
    let mut dst = out.as_mut_slice::<T>()?.iter_mut();
    for plane in 0..n * c {
        let base = plane * h * w;
        for y in 0..oh {
            for xo in 0..ow {
                let (rows, cols) = (adaptive_window(y, oh, h), adaptive_window(xo, ow, w));
                let mut window = rows.flat_map(|iy| cols.clone().map(move |ix| src[base + iy * w + ix]));
                if let Some(d) = dst.next() {
                    *d = f(&mut window);
                }
            }
        }
    }
    Ok(())
}

/// Declares an adaptive pooling operator: name, attributes, rank and canonical layout, dtype
/// set and dispatch macro, doc, and `|window| result`.
macro_rules! adaptive_pool {
    ($(#[$doc:meta])* $name:ident = $op:literal, $attrs:ty, $rank:literal, $canonical:literal, $set:ident,
     $line:literal, |$w:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
            const NUM_INPUTS: usize = 1;
            const DTYPES: DTypeSet = crate::operator::dtype_set!($set);
            const DOC: &'static str = $line;
            type Attrs = $attrs;

            fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &$attrs) -> Result<Vec<Vec<D>>, KernelError> {
                adaptive_shape::<D, $rank>(inputs, &a.output_size, [&a.layout, &a.out_layout, $canonical])
            }

            fn dtypes(inputs: &[DType], _: &$attrs) -> Result<Vec<DType>, KernelError> {
                let [d] = args(inputs)?;
                Ok(vec![check_dtype(Self::DTYPES, d)?])
            }

            fn reference(
                inputs: &[&Tensor],
                a: &$attrs,
                outputs: &mut [Tensor],
                _: Checked,
            ) -> Result<(), KernelError> {
                in_pool_layout(inputs, &a.layout, &a.out_layout, outputs, |x, out| {
                    $set!(x.dtype(), T => adaptive_run::<T>(x, out, |$w| $body))
                })
            }
        }
    };
}

/// The mean of an adaptive window (0 for an empty one).
fn adaptive_mean<T: crate::kernels::num::Float>(w: &mut dyn Iterator<Item = T>) -> T {
    let (sum, count) = w.fold((T::ZERO, 0usize), |(s, n), v| (s + v, n + 1));
    sum / from_usize::<T>(count.max(1))
}

adaptive_pool! {
    /// `nn.adaptive_avg_pool2d`: output `(y, x)` is the mean of input rows
    /// `floor(y * H / OH) .. ceil((y + 1) * H / OH)` and the like columns. Float dtypes.
    /// Reference kernel only.
    AdaptiveAvgPool2d = "nn.adaptive_avg_pool2d", AdaptivePool2dAttrs, 4, "NCHW", floats,
    "mean over adaptive H x W windows", |w| adaptive_mean(w)
}

adaptive_pool! {
    /// `nn.adaptive_max_pool2d`: output `(y, x)` is the maximum of input rows
    /// `floor(y * H / OH) .. ceil((y + 1) * H / OH)` and the like columns. Numeric dtypes.
    /// Reference kernel only.
    AdaptiveMaxPool2d = "nn.adaptive_max_pool2d", AdaptivePool2dAttrs, 4, "NCHW", nums,
    "maximum over adaptive H x W windows", |w| window_max(w)
}

adaptive_pool! {
    /// `nn.adaptive_avg_pool1d`: output `x` is the mean of inputs
    /// `floor(x * W / OW) .. ceil((x + 1) * W / OW)` (`NCW` data). Float dtypes. Reference
    /// kernel only.
    AdaptiveAvgPool1d = "nn.adaptive_avg_pool1d", AdaptivePool1dAttrs, 3, "NCW", floats,
    "mean over adaptive W windows", |w| adaptive_mean(w)
}

adaptive_pool! {
    /// `nn.adaptive_max_pool1d`: output `x` is the maximum of inputs
    /// `floor(x * W / OW) .. ceil((x + 1) * W / OW)` (`NCW` data). Numeric dtypes. Reference
    /// kernel only.
    AdaptiveMaxPool1d = "nn.adaptive_max_pool1d", AdaptivePool1dAttrs, 3, "NCW", nums,
    "maximum over adaptive W windows", |w| window_max(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_shapes() {
        let a = MaxPool2dAttrs {
            pool_size: vec![2, 2],
            strides: vec![2, 2],
            ceil_mode: true,
            ..Default::default()
        };
        assert_eq!(MaxPool2d::shapes::<usize>(&[&[1, 2, 7, 7]], &a).unwrap(), vec![vec![1, 2, 4, 4]]);
        let floor = MaxPool2dAttrs { ceil_mode: false, ..a.clone() };
        assert_eq!(MaxPool2d::shapes::<usize>(&[&[1, 2, 7, 7]], &floor).unwrap(), vec![vec![1, 2, 3, 3]]);
        let nhwc = MaxPool2dAttrs { layout: "NHWC".into(), ..a };
        assert_eq!(MaxPool2d::shapes::<usize>(&[&[1, 7, 7, 2]], &nhwc).unwrap(), vec![vec![1, 4, 4, 2]]);
        let g = GlobalPool2dAttrs::default();
        assert_eq!(GlobalAvgPool2d::shapes::<usize>(&[&[1, 2, 7, 7]], &g).unwrap(), vec![vec![1, 2, 1, 1]]);
        assert!(GlobalAvgPool2d::shapes::<usize>(&[&[2, 7, 7]], &g).is_err());
        let adaptive = AdaptivePool2dAttrs { output_size: vec![3], ..Default::default() };
        assert_eq!(
            AdaptiveAvgPool2d::shapes::<usize>(&[&[1, 2, 7, 5]], &adaptive).unwrap(),
            vec![vec![1, 2, 3, 3]]
        );
        let same = AdaptivePool2dAttrs::default();
        assert_eq!(
            AdaptiveMaxPool2d::shapes::<usize>(&[&[1, 2, 7, 5]], &same).unwrap(),
            vec![vec![1, 2, 7, 5]]
        );
        assert_eq!(adaptive_window(1, 3, 7), 2..5);
    }
}
