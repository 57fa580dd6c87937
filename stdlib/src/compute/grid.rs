//! Grid rules, the `COMPUTE` of `image.affine_grid` and `image.grid_sample` (TVM registers
//! them injective; reference kernels: `crate::ops::image::grid`). The coordinate, padding and
//! weight formulas are the reference's own (generic over
//! [`Real`](crate::ops::image::sample::Real)), evaluated in `float64` in the reference's
//! order; a tap outside the image adds nothing and reads a clamped, in-bounds pixel.

use super::image::{clamped_index, real_of};
use super::util::{lazy, tensors};
use crate::attrs::{AffineGridAttrs, GridSampleAttrs};
use crate::ops::image::sample::Real;
use relay_compiler::kir::{Expr, Index};
use relay_compiler::op::{ComputeInput, OutType, TensorDef};
use relay_devices::DType;
use std::ops::Add;

/// `image.affine_grid(data)`: output `[b, k, i, j]` is `data[b, k, 0] * x + data[b, k, 1] *
/// y + data[b, k, 2]` at `y = -1 + i * 2 / (h - 1)`, `x = -1 + j * 2 / (w - 1)`.
pub(crate) fn affine_grid(
    inputs: &[ComputeInput],
    _: &AffineGridAttrs,
    out: &OutType,
) -> Result<TensorDef, String> {
    let [theta] = tensors(inputs)?;
    let &[_, _, h, w] = out.shape.as_slice() else { return Err("affine_grid makes a 4-d grid".into()) };
    let (theta, dtype) = (theta.clone(), out.dtype);
    Ok(lazy(move |k, idx| {
        let step = |size: i64| Expr::real(2.0) / (Expr::real(size as f64) - Expr::real(1.0));
        let coordinate = |i: &Index, size: i64| Expr::real(-1.0) + real_of(i.clone()) * step(size);
        let (y, x) = (coordinate(&idx[2], h), coordinate(&idx[3], w));
        let row = |j: i64| theta.at(k, &[idx[0].clone(), idx[1].clone(), Index::Const(j)]).cast(DType::F64);
        (row(0) * x + row(1) * y + row(2)).cast(dtype)
    }))
}

/// `image.grid_sample(data, grid)` (`NCHW`): output `[b, c, i, j]` samples `data[b, c]` at
/// `grid[b, :, i, j]`, the sum over the product of the two axes' taps of the weighted pixels
/// inside the image.
///
/// # Errors
/// An empty image (the reference kernel handles it).
pub(crate) fn grid_sample(
    inputs: &[ComputeInput],
    a: &GridSampleAttrs,
    out: &OutType,
) -> Result<TensorDef, String> {
    let [data, grid] = tensors(inputs)?;
    let &[_, _, h, w] = data.shape.as_slice() else { return Err("grid_sample samples 4-d data".into()) };
    if h == 0 || w == 0 {
        return Err("sampling an empty image runs in the reference kernel".into());
    }
    let (data, grid, a, dtype) = (data.clone(), grid.clone(), a.clone(), out.dtype);
    Ok(lazy(move |k, idx| {
        let field = |f: i64| {
            grid.at(k, &[idx[0].clone(), Index::Const(f), idx[2].clone(), idx[3].clone()]).cast(DType::F64)
        };
        // Each tap: whether it is inside the image, its clamped pixel, its weight.
        let taps = |g: Expr, size: i64| -> Vec<(Expr, Index, Expr)> {
            a.axis_points(g, size as usize)
                .into_iter()
                .map(|(p, weight)| {
                    let inside =
                        p.clone().ge(Expr::real(0.0)).and(p.clone().cast(DType::I64).lt(Expr::i64(size)));
                    (inside, clamped_index(p, 0, size - 1), weight)
                })
                .collect()
        };
        let (ys, xs) = (taps(field(1), h), taps(field(0), w));
        let data = &data;
        let terms = ys.iter().flat_map(|(in_y, iy, wy)| {
            xs.iter().map(move |(in_x, ix, wx)| {
                let pixel = data.at(k, &[idx[0].clone(), idx[1].clone(), iy.clone(), ix.clone()]);
                let term = wy.clone() * wx.clone() * pixel.cast(DType::F64);
                Expr::select(in_y.clone().and(in_x.clone()), term, Expr::real(0.0))
            })
        });
        terms.reduce(Add::add).unwrap_or_else(|| Expr::real(0.0)).cast(dtype)
    }))
}
