//! Matrix products and `nn.bias_add` (TVM `src/relay/op/nn/nn.cc`, `nn.h`). Products convert
//! both operands to the output dtype first and accumulate in it, so `int8` inputs with
//! `out_dtype="int32"` accumulate in `int32` (wrapping, as TVM's generated code does).

use super::{converted, product_dtype};
use crate::attrs::{BatchMatmulAttrs, BiasAddAttrs, DenseAttrs, MatmulAttrs};
use crate::error::KernelError;
use crate::kernels::num::Num;
use crate::kernels::util::{args, normalize_axis, nums, only_output, same_dtype};
use crate::kernels::{Checked, Kernel};
use relay_devices::{shape_size, DType, Layout, Tensor, TensorView};

/// One matrix product `out[m, n] = Σ_k a[m, k] * b[k, n]`, with `a` stored as `[k, m]` when
/// `a_t` and `b` stored as `[n, k]` when `b_t`.
#[derive(Clone, Copy)]
struct Gemm {
    m: usize,
    k: usize,
    n: usize,
    a_t: bool,
    b_t: bool,
}

impl Gemm {
    fn run<O: Num>(self, a: &[O], b: &[O], out: &mut [O]) {
        let Gemm { m, k, n, a_t, b_t } = self;
        for i in 0..m {
            for j in 0..n {
                let mut acc = O::ZERO;
                for p in 0..k {
                    let x = if a_t { a[p * m + i] } else { a[i * k + p] };
                    let y = if b_t { b[j * k + p] } else { b[p * n + j] };
                    acc = acc.add_wrapping(x.mul_wrapping(y));
                }
                out[i * n + j] = acc;
            }
        }
    }
}

/// Runs `batches` products; batch `i` reads `a` block `a_of(i)` and `b` block `b_of(i)`.
fn batched<O: Num>(
    a: &Tensor,
    b: &Tensor,
    out: &mut Tensor,
    g: Gemm,
    batches: usize,
    a_of: impl Fn(usize) -> usize,
    b_of: impl Fn(usize) -> usize,
) -> Result<(), KernelError> {
    let (a, b) = (converted::<O>(a)?, converted::<O>(b)?);
    let (sa, sb, so) = (g.m * g.k, g.k * g.n, g.m * g.n);
    let dst = out.as_mut_slice::<O>()?;
    for i in 0..batches {
        let block = |v: &[O], at: usize, len: usize| {
            v.get(at * len..(at + 1) * len)
                .map(<[O]>::to_vec)
                .ok_or_else(|| KernelError::Shape("operand too small".into()))
        };
        let (ab, bb) = (block(&a, a_of(i), sa)?, block(&b, b_of(i), sb)?);
        let ob =
            dst.get_mut(i * so..(i + 1) * so).ok_or_else(|| KernelError::Shape("output too small".into()))?;
        g.run(&ab, &bb, ob);
    }
    Ok(())
}

fn check_units(units: Option<i64>, actual: usize) -> Result<(), KernelError> {
    match units {
        Some(u) if u != actual as i64 => {
            Err(KernelError::Shape(format!("units={u} but the weight has {actual} rows")))
        }
        _ => Ok(()),
    }
}

/// `nn.dense(data[..., k], weight[units, k]) -> [..., units]`. Numeric dtypes; see the module
/// note on `out_dtype`.
#[derive(Debug)]
pub struct Dense;

/// `(rows, k, units)` of a dense layer.
fn dense_dims(
    data: &[usize],
    weight: &[usize],
    units: Option<i64>,
) -> Result<(usize, usize, usize), KernelError> {
    let (&k, lead) =
        data.split_last().ok_or_else(|| KernelError::Shape("nn.dense data must have rank >= 1".into()))?;
    match weight {
        &[u, wk] if wk == k => {
            check_units(units, u)?;
            let rows = shape_size(lead).ok_or_else(|| KernelError::Shape("data too large".into()))?;
            Ok((rows, k, u))
        }
        _ => Err(KernelError::Shape(format!("nn.dense weight {weight:?} does not match data {data:?}"))),
    }
}

impl Kernel for Dense {
    const NAME: &'static str = "nn.dense";
    type Attrs = DenseAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &DenseAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [d, w] = args(inputs)?;
        let (_, _, units) = dense_dims(d, w, attrs.units)?;
        let mut out = d.to_vec();
        if let Some(last) = out.last_mut() {
            *last = units;
        }
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], attrs: &DenseAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, w] = args(inputs)?;
        Ok(vec![product_dtype(d, w, attrs.out_dtype)?])
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &DenseAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [d, w] = args(inputs)?;
        let (m, k, n) = dense_dims(d.shape(), w.shape(), attrs.units)?;
        let out = only_output(outputs)?;
        let g = Gemm { m, k, n, a_t: false, b_t: true };
        nums!(out.dtype(), O => batched::<O>(d, w, out, g, 1, |_| 0, |_| 0))
    }
}

/// `nn.matmul(data, weight)`: `data[..., m, k]` (or `[..., k]`), or `[..., k, m]` with
/// `transpose_a`; `weight[k, units]`, or `[units, k]` with `transpose_b`. Numeric dtypes.
#[derive(Debug)]
pub struct Matmul;

/// `(batches, gemm, output shape)` of `nn.matmul`.
fn matmul_plan(
    data: &[usize],
    weight: &[usize],
    a: &MatmulAttrs,
) -> Result<(usize, Gemm, Vec<usize>), KernelError> {
    let bad = || KernelError::Shape(format!("nn.matmul shapes {data:?} and {weight:?} do not match"));
    let &[w0, w1] = weight else { return Err(bad()) };
    let (k, units) = if a.transpose_b { (w1, w0) } else { (w0, w1) };
    check_units(a.units, units)?;
    let size = |s: &[usize]| shape_size(s).ok_or_else(bad);
    let (batches, m, dk, mut out) = if a.transpose_a {
        let r = data.len().checked_sub(2).ok_or_else(bad)?;
        let mut out = data.to_vec();
        out[r] = data[r + 1];
        (size(&data[..r])?, data[r + 1], data[r], out)
    } else {
        let (&dk, lead) = data.split_last().ok_or_else(bad)?;
        (1, size(lead)?, dk, data.to_vec())
    };
    if dk != k {
        return Err(bad());
    }
    if let Some(last) = out.last_mut() {
        *last = units;
    }
    Ok((batches, Gemm { m, k, n: units, a_t: a.transpose_a, b_t: a.transpose_b }, out))
}

impl Kernel for Matmul {
    const NAME: &'static str = "nn.matmul";
    type Attrs = MatmulAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &MatmulAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [d, w] = args(inputs)?;
        Ok(vec![matmul_plan(d, w, attrs)?.2])
    }

    fn dtypes(inputs: &[DType], attrs: &MatmulAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, w] = args(inputs)?;
        Ok(vec![product_dtype(d, w, attrs.out_dtype)?])
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &MatmulAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [d, w] = args(inputs)?;
        let (batches, g, _) = matmul_plan(d.shape(), w.shape(), attrs)?;
        let out = only_output(outputs)?;
        nums!(out.dtype(), O => batched::<O>(d, w, out, g, batches, |i| i, |_| 0))
    }
}

/// `nn.batch_matmul(x[b, m, k], y[b, k, n]) -> [b, m, n]`, with `x` as `[b, k, m]` under
/// `transpose_a` and `y` as `[b, n, k]` under `transpose_b`; a batch of 1 broadcasts.
/// Numeric dtypes.
#[derive(Debug)]
pub struct BatchMatmul;

/// `(x batch, y batch, gemm)` of `nn.batch_matmul`.
fn batch_matmul_plan(
    x: &[usize],
    y: &[usize],
    a: &BatchMatmulAttrs,
) -> Result<(usize, usize, Gemm), KernelError> {
    let bad = || KernelError::Shape(format!("nn.batch_matmul shapes {x:?} and {y:?} do not match"));
    let (&[bx, x1, x2], &[by, y1, y2]) = (x, y) else { return Err(bad()) };
    let (m, k) = if a.transpose_a { (x2, x1) } else { (x1, x2) };
    let (yk, n) = if a.transpose_b { (y2, y1) } else { (y1, y2) };
    if k != yk || !(bx == by || bx == 1 || by == 1) {
        return Err(bad());
    }
    Ok((bx, by, Gemm { m, k, n, a_t: a.transpose_a, b_t: a.transpose_b }))
}

impl Kernel for BatchMatmul {
    const NAME: &'static str = "nn.batch_matmul";
    type Attrs = BatchMatmulAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &BatchMatmulAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [x, y] = args(inputs)?;
        let (bx, by, g) = batch_matmul_plan(x, y, attrs)?;
        Ok(vec![vec![if bx == 1 { by } else { bx }, g.m, g.n]])
    }

    fn dtypes(inputs: &[DType], attrs: &BatchMatmulAttrs) -> Result<Vec<DType>, KernelError> {
        let [x, y] = args(inputs)?;
        Ok(vec![product_dtype(x, y, attrs.out_dtype)?])
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &BatchMatmulAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, y] = args(inputs)?;
        let (bx, by, g) = batch_matmul_plan(x.shape(), y.shape(), attrs)?;
        let out = only_output(outputs)?;
        let batches = if bx == 1 { by } else { bx };
        let pick = |b: usize| move |i: usize| if b == 1 { 0 } else { i };
        nums!(out.dtype(), O => batched::<O>(x, y, out, g, batches, pick(bx), pick(by)))
    }
}

/// `nn.bias_add(data, bias)`: the 1-d `bias` added along `axis` of `data`. Numeric dtypes.
#[derive(Debug)]
pub struct BiasAdd;

impl Kernel for BiasAdd {
    const NAME: &'static str = "nn.bias_add";
    type Attrs = BiasAddAttrs;

    fn shapes(inputs: &[&[usize]], attrs: &BiasAddAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [d, b] = args(inputs)?;
        let axis = normalize_axis(attrs.axis, d.len())?;
        if b != [d[axis]] {
            return Err(KernelError::Shape(format!("bias {b:?} does not match axis {axis} of {d:?}")));
        }
        Ok(vec![d.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &BiasAddAttrs) -> Result<Vec<DType>, KernelError> {
        let d = same_dtype(&args::<_, 2>(inputs)?)?;
        nums!(d, T => Ok(vec![d]))
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &BiasAddAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [d, b] = args(inputs)?;
        let axis = normalize_axis(attrs.axis, d.ndim())?;
        let out = only_output(outputs)?;
        // The bias seen with the data's shape: stride 1 along `axis`, 0 elsewhere.
        let strides = (0..d.ndim()).map(|k| isize::from(k == axis)).collect();
        let layout = Layout::new(d.shape().to_vec(), strides, 0)?;
        nums!(d.dtype(), T => {
            let bias = TensorView::new(b.as_slice::<T>()?, layout)?;
            let dst = out.as_mut_slice::<T>()?;
            for ((o, &x), y) in dst.iter_mut().zip(d.as_slice::<T>()?).zip(bias.iter()) {
                *o = x.add_wrapping(y);
            }
            Ok(())
        })
    }
}
