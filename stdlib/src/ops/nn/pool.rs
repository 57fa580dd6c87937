//! Pooling (TVM `src/relay/op/nn/pooling.cc` `Pool1DRel`, `Pool2DRel`, `Pool3DRel`,
//! `GlobalPool2DRel`, `AdaptivePool{1,2,3}DRel`, `topi` `pool_impl_nd`): `nn.max_pool1d`,
//! `nn.avg_pool1d`, `nn.max_pool2d`, `nn.avg_pool2d`, `nn.max_pool3d`, `nn.avg_pool3d`,
//! `nn.global_avg_pool2d`, `nn.global_max_pool2d`, `nn.adaptive_avg_pool{1,2,3}d`,
//! `nn.adaptive_max_pool{1,2,3}d`. One shape function and one window loop serve every rank:
//! data of 1 or 2 spatial axes runs as 3-d with leading axes of size 1 (`super::lift`). Any
//! plain layout runs (`NCHW`, `NHWC`, `NDHWC`, ...): the reference kernels loop over canonical
//! `NCW`/`NCHW`/`NCDHW` and other layouts are permuted in and out (`super::in_canonical`).
//! Every operator here fuses through one kir rule, `compute::pool::pool`, in every rank and
//! layout.
//!
//! Window `(y, x)` covers input rows `y * stride - pad_top + i * dilation` for `i < kh`
//! (likewise columns). With `ceil_mode` the output size rounds up, which adds up to
//! `stride - 1` positions of implicit padding after the explicit `pad_bottom`/`pad_right`.

use super::{check_dtype, in_canonical, lift, lower, padding, per_axis, window_out, Layout, SPATIAL};
use crate::attrs::{
    AdaptivePool1dAttrs, AdaptivePool2dAttrs, AdaptivePool3dAttrs, AvgPool1dAttrs, AvgPool2dAttrs,
    AvgPool3dAttrs, GlobalPool2dAttrs, MaxPool1dAttrs, MaxPool2dAttrs, MaxPool3dAttrs,
};
use crate::compute::pool::{pool, Reduce, SlidingAxis, Windows};
use crate::error::KernelError;
use crate::kernels::num::{from_usize, Num};
use crate::kernels::util::{args, floats, nums, only_output};
use crate::kernels::Checked;
use crate::operator::{message, shape_text, ComputeRule, DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::op::{ComputeInput, OpPattern, OutType, TensorDef};
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
    OpEntry::of::<MaxPool3d>(),
    OpEntry::of::<AvgPool3d>(),
    OpEntry::of::<AdaptiveAvgPool3d>(),
    OpEntry::of::<AdaptiveMaxPool3d>(),
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

/// The pooling shape function of rank-`N` data in a permutation of `canonical` (`NCW`,
/// `NCHW`, `NCDHW`): the spatial axes become window counts (see [`window_out`]).
fn pool_shape<D: ShapeDim, const N: usize>(
    inputs: &[&[D]],
    a: PoolAttrs,
    canonical: &str,
) -> Result<Vec<Vec<D>>, KernelError> {
    let [x] = args(inputs)?;
    let layout = pool_layout::<N>(a.layout, a.out_layout, canonical)?;
    let dims = lift(&layout.to_canonical(x, "data")?)?;
    let g = Window::new(&a, N - 2)?;
    let mut out = dims;
    for axis in 0..SPATIAL {
        out[2 + axis] = g.extent(axis, dims[2 + axis], x)?;
    }
    Ok(vec![layout.arrange(lower::<D, N>(out))])
}

/// A pooling window over the three spatial axes (`D`, `H`, `W`; a lower rank has leading
/// axes of window 1 and no padding): its taps, steps and padding per axis.
struct Window {
    window: [usize; SPATIAL],
    strides: [usize; SPATIAL],
    dilation: [usize; SPATIAL],
    /// `[before, after]` per spatial axis.
    pad: [[usize; SPATIAL]; 2],
    ceil_mode: bool,
}

impl Window {
    /// The window of a pooling call over `rank` spatial axes, from its attributes.
    fn new(a: &PoolAttrs, rank: usize) -> Result<Window, KernelError> {
        Ok(Window {
            window: per_axis(a.pool_size, rank, "pool_size")?,
            strides: per_axis(a.strides, rank, "strides")?,
            dilation: per_axis(a.dilation, rank, "dilation")?,
            pad: padding(a.padding, rank)?,
            ceil_mode: a.ceil_mode,
        })
    }

    /// The output extent along spatial axis `axis` of an input of `size` (of shape `x`).
    fn extent<D: ShapeDim>(&self, axis: usize, size: D, x: &[D]) -> Result<D, KernelError> {
        let total = self.pad[0][axis].checked_add(self.pad[1][axis]).ok_or_else(super::too_large)?;
        let name = ["D", "H", "W"][axis];
        window_out(size, self.window[axis], self.strides[axis], self.dilation[axis], total, self.ceil_mode)
            .map_err(|e| KernelError::Shape(format!("{} along {name}: {}", message(e), shape_text(x))))
    }
}

/// Geometry of one pooling call over canonical data lifted to three spatial axes.
struct Pool {
    window: Window,
    data: [usize; 2 + SPATIAL],
    out: [usize; 2 + SPATIAL],
}

/// Runs a pooling call whose shapes passed its shape function: `run(data, output)` over
/// canonical tensors (a permutation of `canonical`, the data's rank `N`), the operands
/// permuted from and to `layout`.
fn in_pool_layout<const N: usize>(
    inputs: &[&Tensor],
    [layout, out_layout, canonical]: [&str; 3],
    outputs: &mut [Tensor],
    run: impl FnOnce(&Tensor, &mut Tensor) -> Result<(), KernelError>,
) -> Result<(), KernelError> {
    let order = pool_layout::<N>(layout, out_layout, canonical)?.pos;
    in_canonical(inputs, &[&order], only_output(outputs)?, &order, |inputs, out| {
        let [x] = args(inputs)?;
        run(x, out)
    })
}

/// Runs a max or average pooling call of rank-`N` data in a permutation of `canonical`:
/// `run(plan, data, output)` over canonical tensors.
fn pool_reference<const N: usize>(
    inputs: &[&Tensor],
    a: PoolAttrs,
    canonical: &str,
    outputs: &mut [Tensor],
    run: impl FnOnce(Pool, &Tensor, &mut Tensor) -> Result<(), KernelError>,
) -> Result<(), KernelError> {
    let window = Window::new(&a, N - 2)?;
    in_pool_layout::<N>(inputs, [a.layout, a.out_layout, canonical], outputs, |x, out| {
        let p = Pool { window, data: lift(x.shape())?, out: lift(out.shape())? };
        run(p, x, out)
    })
}

/// The kir rule of a max or average pooling call of rank-`N` data in a permutation of
/// `canonical` (the window of [`Window::new`], its spatial axes as `compute::pool` takes them).
fn fused_pool<const N: usize>(
    inputs: &[ComputeInput],
    a: PoolAttrs,
    canonical: &str,
    out: &OutType,
    reduce: Reduce,
) -> Result<TensorDef, String> {
    let layout = pool_layout::<N>(a.layout, a.out_layout, canonical).map_err(|e| e.to_string())?;
    let w = Window::new(&a, N - 2).map_err(|e| e.to_string())?;
    let size = |v: usize| i64::try_from(v).map_err(|_| "a window this large runs in the reference kernel");
    let axes = (SPATIAL + 2 - N..SPATIAL)
        .map(|s| {
            Ok(SlidingAxis {
                taps: size(w.window[s])?,
                stride: size(w.strides[s])?,
                dilation: size(w.dilation[s])?,
                pad: [size(w.pad[0][s])?, size(w.pad[1][s])?],
            })
        })
        .collect::<Result<_, &str>>()?;
    pool(inputs, out, &layout.pos, &Windows::Sliding(axes), reduce)
}

/// The kir rule of an adaptive (or global) pooling call of rank-`N` data in a permutation of
/// `canonical`.
fn fused_adaptive<const N: usize>(
    inputs: &[ComputeInput],
    [layout, out_layout, canonical]: [&str; 3],
    out: &OutType,
    reduce: Reduce,
) -> Result<TensorDef, String> {
    let layout = pool_layout::<N>(layout, out_layout, canonical).map_err(|e| e.to_string())?;
    pool(inputs, out, &layout.pos, &Windows::Adaptive, reduce)
}

impl Pool {
    /// For output coordinate `o` on spatial axis `axis`: the input coordinates of the window's
    /// real elements, and the window size counted with explicit padding but not the
    /// `ceil_mode` extension (the `count_include_pad` divisor).
    fn taps(&self, axis: usize, o: usize) -> (Vec<usize>, usize) {
        let g = &self.window;
        let dim = self.data[2 + axis] as i64;
        let (before, after) = (g.pad[0][axis] as i64, g.pad[1][axis] as i64);
        let start = (o * g.strides[axis]) as i64 - before;
        let step = g.dilation[axis] as i64;
        let positions = (0..g.window[axis] as i64).map(|i| start + i * step);
        let real = positions.clone().filter(|p| (0..dim).contains(p)).map(|p| p as usize).collect();
        let counted = positions.filter(|&p| p < dim + after).count();
        (real, counted)
    }

    /// Calls `f(window elements, count_include_pad divisor)` per output element, in order.
    fn run<T: Copy>(&self, x: &[T], out: &mut [T], f: impl Fn(&mut dyn Iterator<Item = T>, usize) -> T) {
        let [n, c, d, h, w] = self.data;
        let [depth, rows, cols] =
            [0, 1, 2].map(|axis| (0..self.out[2 + axis]).map(|o| self.taps(axis, o)).collect::<Vec<_>>());
        let mut dst = out.iter_mut();
        for plane in 0..n * c {
            let base = plane * d * h * w;
            for (zs, zcount) in &depth {
                for (ys, ycount) in &rows {
                    for (xs, xcount) in &cols {
                        let mut window = zs.iter().flat_map(|&iz| {
                            ys.iter().flat_map(move |&iy| {
                                xs.iter().map(move |&ix| x[base + (iz * h + iy) * w + ix])
                            })
                        });
                        if let Some(dst) = dst.next() {
                            *dst = f(&mut window, zcount * ycount * xcount);
                        }
                    }
                }
            }
        }
    }
}

/// Declares a max or average pooling operator: its attributes, data rank and canonical
/// layout, its dtype set and dispatch macro, its doc line, the [`Reduce`] of its kir rule
/// from its attributes, and `|window elements, count_include_pad divisor| result`.
macro_rules! pool_op {
    ($(#[$doc:meta])* $name:ident = $op:literal, $attrs:ty, $n:literal, $canonical:literal, $set:ident,
     $line:literal, fused: |$fa:ident| $reduce:expr, |$w:ident, $padded:ident, $a:ident| $body:expr) => {
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
            const COMPUTE: Option<ComputeRule<$attrs>> =
                Some(|i, $fa, o| fused_pool::<$n>(i, pool_attrs!($fa), $canonical, o, $reduce));

            fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &$attrs) -> Result<Vec<Vec<D>>, KernelError> {
                pool_shape::<D, $n>(inputs, pool_attrs!(a), $canonical)
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
                pool_reference::<$n>(inputs, pool_attrs!($a), $canonical, outputs, |p, x, out| {
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
    MaxPool2d = "nn.max_pool2d", MaxPool2dAttrs, 4, "NCHW", nums,
    "2-d max pooling", fused: |_a| Reduce::Max, |w, _p, _a| window_max(w)
}

pool_op! {
    /// `nn.avg_pool2d`: the mean of each window, over its real elements or, with
    /// `count_include_pad`, over the window including explicit padding (never the `ceil_mode`
    /// extension). A window of padding only gives 0. Float dtypes.
    AvgPool2d = "nn.avg_pool2d", AvgPool2dAttrs, 4, "NCHW", floats,
    "2-d average pooling", fused: |a| Reduce::Avg { count_include_pad: a.count_include_pad }, |w, padded, a| window_mean(w, padded, a.count_include_pad)
}

pool_op! {
    /// `nn.max_pool1d`: `nn.max_pool2d` along `W` of `NCW` data. Numeric dtypes.
    MaxPool1d = "nn.max_pool1d", MaxPool1dAttrs, 3, "NCW", nums,
    "1-d max pooling", fused: |_a| Reduce::Max, |w, _p, _a| window_max(w)
}

pool_op! {
    /// `nn.avg_pool1d`: `nn.avg_pool2d` along `W` of `NCW` data. Float dtypes.
    AvgPool1d = "nn.avg_pool1d", AvgPool1dAttrs, 3, "NCW", floats,
    "1-d average pooling", fused: |a| Reduce::Avg { count_include_pad: a.count_include_pad }, |w, padded, a| window_mean(w, padded, a.count_include_pad)
}

pool_op! {
    /// `nn.max_pool3d`: `nn.max_pool2d` over `D`, `H` and `W` of `NCDHW` data (any permutation
    /// runs, e.g. `NDHWC`); `padding` has 1, 3 or 6 values as for `nn.conv3d`. Numeric dtypes.
    ///
    MaxPool3d = "nn.max_pool3d", MaxPool3dAttrs, 5, "NCDHW", nums,
    "3-d max pooling", fused: |_a| Reduce::Max, |w, _p, _a| window_max(w)
}

pool_op! {
    /// `nn.avg_pool3d`: `nn.avg_pool2d` over `D`, `H` and `W` of `NCDHW` data (any permutation
    /// runs); `padding` has 1, 3 or 6 values as for `nn.conv3d`. Float dtypes.
    AvgPool3d = "nn.avg_pool3d", AvgPool3dAttrs, 5, "NCDHW", floats,
    "3-d average pooling", fused: |a| Reduce::Avg { count_include_pad: a.count_include_pad }, |w, padded, a| window_mean(w, padded, a.count_include_pad)
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

/// Declares a global pooling operator: name, dtype set and dispatch macro, the [`Reduce`] of
/// its kir rule, doc line, and `|plane, plane size| result`.
macro_rules! global_pool {
    ($(#[$doc:meta])* $name:ident = $op:literal, $set:ident, $reduce:expr, $line:literal,
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
            const COMPUTE: Option<ComputeRule<GlobalPool2dAttrs>> =
                Some(|i, a, o| fused_adaptive::<4>(i, [&a.layout, &a.out_layout, "NCHW"], o, $reduce));

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
                in_pool_layout::<4>(inputs, [&a.layout, &a.out_layout, "NCHW"], outputs, |x, out| {
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
    GlobalAvgPool2d = "nn.global_avg_pool2d", floats,
    Reduce::Avg { count_include_pad: false },
    "mean over H and W", |p, plane| p.iter().fold(T::ZERO, |s, &v| s + v) / from_usize::<T>(plane)
}

global_pool! {
    /// `nn.global_max_pool2d`: `H` and `W` become 1, each the maximum of its plane (the dtype's
    /// lowest value for an empty plane). Numeric dtypes.
    GlobalMaxPool2d = "nn.global_max_pool2d", nums, Reduce::Max, "maximum over H and W",
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
/// `floor(o * len / out) .. ceil((o + 1) * len / out)` (TVM's adaptive windows; the reference
/// kernels and `compute::pool` read them here).
pub(crate) fn adaptive_window(o: usize, out: usize, len: usize) -> std::ops::Range<usize> {
    (o * len / out)..((o + 1) * len).div_ceil(out)
}

/// Writes `f(window elements)` for each output element of an adaptive pooling of canonical
/// `x` (`NCW`, `NCHW` or `NCDHW`, lifted to three spatial axes).
fn adaptive_run<T: Copy + relay_devices::Element>(
    x: &Tensor,
    out: &mut Tensor,
    f: impl Fn(&mut dyn Iterator<Item = T>) -> T,
) -> Result<(), KernelError> {
    let ([n, c, d, h, w], [_, _, od, oh, ow]) = (lift(x.shape())?, lift(out.shape())?);
    let src = x.as_slice::<T>()?;
    let mut dst = out.as_mut_slice::<T>()?.iter_mut();
    for plane in 0..n * c {
        let base = plane * d * h * w;
        for z in 0..od {
            for y in 0..oh {
                for xo in 0..ow {
                    let (deps, rows) = (adaptive_window(z, od, d), adaptive_window(y, oh, h));
                    let cols = adaptive_window(xo, ow, w);
                    let mut window = deps.flat_map(|iz| {
                        let cols = cols.clone();
                        rows.clone().flat_map(move |iy| {
                            cols.clone().map(move |ix| src[base + (iz * h + iy) * w + ix])
                        })
                    });
                    if let Some(dst) = dst.next() {
                        *dst = f(&mut window);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Declares an adaptive pooling operator: name, attributes, rank and canonical layout, dtype
/// set and dispatch macro, doc, the [`Reduce`] of its kir rule, and `|window| result`.
macro_rules! adaptive_pool {
    ($(#[$doc:meta])* $name:ident = $op:literal, $attrs:ty, $rank:literal, $canonical:literal, $set:ident,
     $line:literal, $reduce:expr, |$w:ident| $body:expr) => {
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
            const COMPUTE: Option<ComputeRule<$attrs>> = Some(|i, a, o| {
                fused_adaptive::<$rank>(i, [&a.layout, &a.out_layout, $canonical], o, $reduce)
            });

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
                in_pool_layout::<$rank>(inputs, [&a.layout, &a.out_layout, $canonical], outputs, |x, out| {
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
    ///
    AdaptiveAvgPool2d = "nn.adaptive_avg_pool2d", AdaptivePool2dAttrs, 4, "NCHW", floats,
    "mean over adaptive H x W windows", Reduce::Avg { count_include_pad: false }, |w| adaptive_mean(w)
}

adaptive_pool! {
    /// `nn.adaptive_max_pool2d`: output `(y, x)` is the maximum of input rows
    /// `floor(y * H / OH) .. ceil((y + 1) * H / OH)` and the like columns. Numeric dtypes.
    ///
    AdaptiveMaxPool2d = "nn.adaptive_max_pool2d", AdaptivePool2dAttrs, 4, "NCHW", nums,
    "maximum over adaptive H x W windows", Reduce::Max, |w| window_max(w)
}

adaptive_pool! {
    /// `nn.adaptive_avg_pool1d`: output `x` is the mean of inputs
    /// `floor(x * W / OW) .. ceil((x + 1) * W / OW)` (`NCW` data). Float dtypes.
    AdaptiveAvgPool1d = "nn.adaptive_avg_pool1d", AdaptivePool1dAttrs, 3, "NCW", floats,
    "mean over adaptive W windows", Reduce::Avg { count_include_pad: false }, |w| adaptive_mean(w)
}

adaptive_pool! {
    /// `nn.adaptive_max_pool1d`: output `x` is the maximum of inputs
    /// `floor(x * W / OW) .. ceil((x + 1) * W / OW)` (`NCW` data). Numeric dtypes.
    AdaptiveMaxPool1d = "nn.adaptive_max_pool1d", AdaptivePool1dAttrs, 3, "NCW", nums,
    "maximum over adaptive W windows", Reduce::Max, |w| window_max(w)
}

adaptive_pool! {
    /// `nn.adaptive_avg_pool3d`: output `(z, y, x)` is the mean of the adaptive windows of `D`,
    /// `H` and `W` (`NCDHW` data). Float dtypes.
    AdaptiveAvgPool3d = "nn.adaptive_avg_pool3d", AdaptivePool3dAttrs, 5, "NCDHW", floats,
    "mean over adaptive D x H x W windows", Reduce::Avg { count_include_pad: false }, |w| adaptive_mean(w)
}

adaptive_pool! {
    /// `nn.adaptive_max_pool3d`: output `(z, y, x)` is the maximum of the adaptive windows of
    /// `D`, `H` and `W` (`NCDHW` data). Numeric dtypes.
    AdaptiveMaxPool3d = "nn.adaptive_max_pool3d", AdaptivePool3dAttrs, 5, "NCDHW", nums,
    "maximum over adaptive D x H x W windows", Reduce::Max, |w| window_max(w)
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

    #[test]
    fn pool3d_shapes() {
        let a = AvgPool3dAttrs {
            pool_size: vec![2, 3, 3],
            strides: vec![2],
            padding: vec![0, 1, 1, 1, 1, 0],
            ceil_mode: true,
            ..Default::default()
        };
        // D: (5 + 1 - 2) / 2 + 1 = 3; H: ceil((6 + 2 - 3) / 2) + 1 = 4; W: ceil((7 + 1 - 3) / 2) + 1 = 4.
        assert_eq!(AvgPool3d::shapes::<usize>(&[&[1, 2, 5, 6, 7]], &a).unwrap(), vec![vec![1, 2, 3, 4, 4]]);
        let ndhwc = AvgPool3dAttrs { layout: "NDHWC".into(), ..a };
        assert_eq!(
            AvgPool3d::shapes::<usize>(&[&[1, 5, 6, 7, 2]], &ndhwc).unwrap(),
            vec![vec![1, 3, 4, 4, 2]]
        );
        let too_small = MaxPool3dAttrs { pool_size: vec![3], ..Default::default() };
        let err = MaxPool3d::shapes::<usize>(&[&[1, 1, 2, 4, 4]], &too_small).unwrap_err();
        assert!(err.to_string().contains("along D"), "{err}");
        let adaptive = AdaptivePool3dAttrs { output_size: vec![1, 2, 3], ..Default::default() };
        assert_eq!(
            AdaptiveMaxPool3d::shapes::<usize>(&[&[1, 2, 4, 5, 6]], &adaptive).unwrap(),
            vec![vec![1, 2, 1, 2, 3]]
        );
    }
}
