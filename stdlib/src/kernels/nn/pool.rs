//! 2-d pooling over `NCHW` data (TVM `src/relay/op/nn/pooling.cc`, `topi` `pool_impl_nd`):
//! `nn.max_pool2d`, `nn.avg_pool2d`, `nn.global_avg_pool2d`.
//!
//! Window `(y, x)` covers input rows `y * stride - pad_top + i * dilation` for `i < kh`
//! (likewise columns). With `ceil_mode` the output size rounds up, which adds up to
//! `stride - 1` positions of implicit padding after the explicit `pad_bottom`/`pad_right`.

use super::{check_nchw, nchw, padding4, pair};
use crate::attrs::{AvgPool2dAttrs, GlobalPool2dAttrs, MaxPool2dAttrs};
use crate::error::KernelError;
use crate::kernels::num::{from_usize, Num};
use crate::kernels::util::{args, floats, nums, only_output};
use crate::kernels::{Checked, Kernel};
use relay_devices::{DType, Tensor};

/// Geometry of one pooling call.
struct Pool {
    data: [usize; 4],
    out: [usize; 4],
    window: [usize; 2],
    strides: [usize; 2],
    dilation: [usize; 2],
    /// `[top, left, bottom, right]`.
    pad: [usize; 4],
}

/// The attributes shared by max and average pooling.
struct PoolAttrs<'a> {
    pool_size: &'a [i64],
    strides: &'a [i64],
    dilation: &'a [i64],
    padding: &'a [i64],
    layout: &'a str,
    out_layout: &'a str,
    ceil_mode: bool,
}

/// [`PoolAttrs`] borrowed from `MaxPool2dAttrs` or `AvgPool2dAttrs`, which share these fields.
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

fn pool_plan(inputs: &[&[usize]], a: PoolAttrs) -> Result<Pool, KernelError> {
    let [x] = args(inputs)?;
    check_nchw(a.layout, a.out_layout)?;
    let [n, c, h, w] = nchw(x)?;
    let window = pair(a.pool_size, "pool_size")?;
    let strides = pair(a.strides, "strides")?;
    let dilation = pair(a.dilation, "dilation")?;
    let pad = padding4(a.padding)?;
    let extent = |axis: usize, input: usize| {
        let span = (window[axis] - 1) * dilation[axis] + 1;
        let room = (input + pad[axis] + pad[axis + 2]).checked_sub(span).ok_or_else(|| {
            KernelError::Shape(format!(
                "pool window {window:?} (dilation {dilation:?}) exceeds padded input {x:?}"
            ))
        })?;
        let round_up = if a.ceil_mode { strides[axis] - 1 } else { 0 };
        Ok::<_, KernelError>((room + round_up) / strides[axis] + 1)
    };
    let out = [n, c, extent(0, h)?, extent(1, w)?];
    Ok(Pool { data: [n, c, h, w], out, window, strides, dilation, pad })
}

/// The plan of a max or average pooling call, its one input and its one output.
fn pool_io<'a>(
    inputs: &[&'a Tensor],
    a: PoolAttrs,
    outputs: &'a mut [Tensor],
) -> Result<(Pool, &'a Tensor, &'a mut Tensor), KernelError> {
    let [x] = args(inputs)?;
    let p = pool_plan(&[x.shape()], a)?;
    Ok((p, x, only_output(outputs)?))
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

/// `nn.max_pool2d`: the maximum of each window; padding never wins (a window of padding only
/// gives the dtype's lowest value). Numeric dtypes.
#[derive(Debug)]
pub struct MaxPool2d;

impl Kernel for MaxPool2d {
    const NAME: &'static str = "nn.max_pool2d";
    type Attrs = MaxPool2dAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &MaxPool2dAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        Ok(vec![pool_plan(inputs, pool_attrs!(attrs))?.out.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &MaxPool2dAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        nums!(d, T => Ok(vec![d]))
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &MaxPool2dAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let (p, x, out) = pool_io(inputs, pool_attrs!(attrs), outputs)?;
        nums!(x.dtype(), T => {
            p.run(x.as_slice::<T>()?, out.as_mut_slice::<T>()?, |w, _| w.fold(T::LOWEST, |m, v| if v > m { v } else { m }));
            Ok(())
        })
    }
}

/// `nn.avg_pool2d`: the mean of each window, over its real elements or, with
/// `count_include_pad`, over the window including explicit padding (never the `ceil_mode`
/// extension). A window of padding only gives 0. Float dtypes.
#[derive(Debug)]
pub struct AvgPool2d;

impl Kernel for AvgPool2d {
    const NAME: &'static str = "nn.avg_pool2d";
    type Attrs = AvgPool2dAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &AvgPool2dAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        Ok(vec![pool_plan(inputs, pool_attrs!(attrs))?.out.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &AvgPool2dAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        floats!(d, T => Ok(vec![d]))
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &AvgPool2dAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let (p, x, out) = pool_io(inputs, pool_attrs!(attrs), outputs)?;
        floats!(x.dtype(), T => {
            p.run(x.as_slice::<T>()?, out.as_mut_slice::<T>()?, |w, padded| {
                let (sum, real) = w.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
                let count = if attrs.count_include_pad { padded } else { real };
                sum / from_usize::<T>(count.max(1))
            });
            Ok(())
        })
    }
}

/// `nn.global_avg_pool2d`: `[n, c, h, w]` to `[n, c, 1, 1]`, the mean of each plane (`NaN` for
/// an empty plane). Float dtypes.
#[derive(Debug)]
pub struct GlobalAvgPool2d;

impl Kernel for GlobalAvgPool2d {
    const NAME: &'static str = "nn.global_avg_pool2d";
    type Attrs = GlobalPool2dAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &GlobalPool2dAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [x] = args(inputs)?;
        check_nchw(&attrs.layout, &attrs.out_layout)?;
        let [n, c, _, _] = nchw(x)?;
        Ok(vec![vec![n, c, 1, 1]])
    }

    fn dtypes(inputs: &[DType], _: &GlobalPool2dAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        floats!(d, T => Ok(vec![d]))
    }

    fn compute(
        inputs: &[&Tensor],
        _: &GlobalPool2dAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let [_, _, h, w] = nchw(x.shape())?;
        let out = only_output(outputs)?;
        floats!(x.dtype(), T => {
            let src = x.as_slice::<T>()?;
            let plane = h * w;
            for (i, d) in out.as_mut_slice::<T>()?.iter_mut().enumerate() {
                let sum = src.get(i * plane..(i + 1) * plane).unwrap_or_default().iter().fold(T::ZERO, |s, &v| s + v);
                *d = sum / from_usize::<T>(plane);
            }
            Ok(())
        })
    }
}
