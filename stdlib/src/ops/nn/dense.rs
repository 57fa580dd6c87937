//! Matrix products and `nn.bias_add` (TVM `src/relay/op/nn/nn.cc`, `nn.h`). Products convert
//! both operands to the output dtype first and accumulate in it, so `int8` inputs with
//! `out_dtype="int32"` accumulate in `int32` (wrapping, as TVM's generated code does).

use super::{axis_in, check_channel_vector, check_dtype, converted, dim_text, product_dtype};
use crate::attrs::{BatchMatmulAttrs, BiasAddAttrs, DenseAttrs, MatmulAttrs};
use crate::compute;
use crate::error::KernelError;
use crate::kernels::num::Num;
use crate::kernels::util::{args, normalize_axis, nums, only_output, same_dtype};
use crate::kernels::Checked;
use crate::operator::{shape_text, ComputeRule, DTypeSet, OpEntry, Operator, ShapeDim};
use crate::ops::index::may_equal;
use relay_compiler::op::OpPattern;
use relay_devices::{shape_size, DType, Layout, Tensor, TensorView};

/// The products and `nn.bias_add` (TVM's patterns: `bias_add` `Broadcast`, the products
/// `OutEWiseFusable`).
pub const DENSE: &[OpEntry] = &[
    OpEntry::of::<Dense>(),
    OpEntry::of::<Matmul>(),
    OpEntry::of::<BatchMatmul>(),
    OpEntry::of::<BiasAdd>(),
];

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
    /// Each output sums its `k` products in order `p = 0, 1, ..`, as the definition reads.
    /// The loops run `i`, `p`, `j`, a row of `n` sums at a time over `b` as `[k, n]` (copied
    /// so when `b_t`): each sum still adds its products in the same order, so the results are
    /// the same bits as the dot-product order, and the innermost loop — independent sums over
    /// contiguous rows — vectorises. (FoldConstant and HoistTake run this kernel on whole
    /// weight matrices at compile time: the Tree-LSTM's leaf table is 1.1 GFLOP.)
    fn run<O: Num>(self, a: &[O], b: &[O], out: &mut [O]) {
        let Gemm { m, k, n, a_t, b_t } = self;
        let b_rows: std::borrow::Cow<'_, [O]> = if b_t {
            (0..k * n).map(|q| b[(q % n) * k + q / n]).collect::<Vec<O>>().into()
        } else {
            b.into()
        };
        for (i, row) in out.chunks_exact_mut(n.max(1)).take(m).enumerate() {
            row.fill(O::ZERO);
            for (p, b_row) in b_rows.chunks_exact(n.max(1)).take(k).enumerate() {
                let x = if a_t { a[p * m + i] } else { a[i * k + p] };
                for (acc, &y) in row.iter_mut().zip(b_row) {
                    *acc = acc.add_wrapping(x.mul_wrapping(y));
                }
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

/// The number of elements of `dims`, a product's rows or batches.
fn count(dims: &[usize]) -> Result<usize, KernelError> {
    shape_size(dims).ok_or_else(|| KernelError::Shape(format!("{} is too large", shape_text(dims))))
}

/// TVM `MatmulRel`: `a` is `[..., k]` (`[..., k, m]` when `ta`), `b` is `[n, k]` when `tb`
/// else `[k, n]`; the output replaces the last dimension (last two, transposed) by
/// `[..., m, n]`. `units`, when given, must equal `n`. `names` name the operands in errors.
fn matmul_shape<D: ShapeDim>(
    a: &[D],
    b: &[D],
    (ta, tb): (bool, bool),
    units: Option<i64>,
    names: [&str; 2],
) -> Result<Vec<D>, KernelError> {
    let need = if ta { 2 } else { 1 };
    if a.len() < need {
        return Err(KernelError::Shape(format!(
            "{} must have rank at least {need}, found {}",
            names[0],
            shape_text(a)
        )));
    }
    let &[b0, b1] = b else {
        return Err(KernelError::Shape(format!("{} must have rank 2, found {}", names[1], shape_text(b))));
    };
    let r = a.len();
    let (k, m) = if ta { (a[r - 2], Some(a[r - 1])) } else { (a[r - 1], None) };
    let (bk, n) = if tb { (b1, b0) } else { (b0, b1) };
    if !may_equal(k, bk) {
        return Err(KernelError::Shape(format!(
            "{} dim {} does not match {} dim {}: {} and {}",
            names[0],
            dim_text(k),
            names[1],
            dim_text(bk),
            shape_text(a),
            shape_text(b)
        )));
    }
    if let Some(units) = units {
        if usize::try_from(units).map_or(true, |u| !may_equal(D::known(u), n)) {
            return Err(KernelError::Shape(format!(
                "units={units} does not match {} dim {}: {}",
                names[1],
                dim_text(n),
                shape_text(b)
            )));
        }
    }
    let mut shape = a.to_vec();
    if let Some(m) = m {
        shape[r - 2] = m;
    }
    shape[r - 1] = n;
    Ok(shape)
}

/// `nn.dense(data[..., k], weight[units, k]) -> [..., units]`. Numeric dtypes; see the module
/// note on `out_dtype`.
#[derive(Debug)]
pub struct Dense;

impl Operator for Dense {
    const NAME: &'static str = "nn.dense";
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "data [.., k] x weight [units, k]^T";
    type Attrs = DenseAttrs;
    const COMPUTE: Option<ComputeRule<DenseAttrs>> = Some(compute::nn::dense);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &DenseAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [d, w] = args(inputs)?;
        Ok(vec![matmul_shape(d, w, (false, true), a.units, ["input", "weight"])?])
    }

    fn dtypes(inputs: &[DType], a: &DenseAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, w] = args(inputs)?;
        Ok(vec![product_dtype(d, w, a.out_dtype)?])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &DenseAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [d, w] = args(inputs)?;
        let (Some((&k, lead)), &[n, _]) = (d.shape().split_last(), w.shape()) else {
            return Err(KernelError::Shape("nn.dense takes data of rank 1 or more and a matrix".into()));
        };
        let g = Gemm { m: count(lead)?, k, n, a_t: false, b_t: true };
        let out = only_output(outputs)?;
        nums!(out.dtype(), O => batched::<O>(d, w, out, g, 1, |_| 0, |_| 0))
    }
}

/// `nn.matmul(data, weight)`: `data[..., m, k]` (or `[..., k]`), or `[..., k, m]` with
/// `transpose_a`; `weight[k, units]`, or `[units, k]` with `transpose_b`. Numeric dtypes.
#[derive(Debug)]
pub struct Matmul;

impl Operator for Matmul {
    const NAME: &'static str = "nn.matmul";
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "tensor_a [.., k] x tensor_b [k, n], optionally transposed";
    type Attrs = MatmulAttrs;
    const COMPUTE: Option<ComputeRule<MatmulAttrs>> = Some(compute::nn::matmul);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &MatmulAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [d, w] = args(inputs)?;
        let transposes = (a.transpose_a, a.transpose_b);
        Ok(vec![matmul_shape(d, w, transposes, a.units, ["tensor_a", "tensor_b"])?])
    }

    fn dtypes(inputs: &[DType], a: &MatmulAttrs) -> Result<Vec<DType>, KernelError> {
        let [d, w] = args(inputs)?;
        Ok(vec![product_dtype(d, w, a.out_dtype)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &MatmulAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [d, w] = args(inputs)?;
        let (data, &[w0, w1]) = (d.shape(), w.shape()) else {
            return Err(KernelError::Shape("nn.matmul takes a matrix as tensor_b".into()));
        };
        let units = if a.transpose_b { w0 } else { w1 };
        // Transposed data is a batch of `[k, m]` matrices; otherwise all rows form one `[m, k]`.
        let (batches, m, k) = match (a.transpose_a, data) {
            (true, [lead @ .., k, m]) => (count(lead)?, *m, *k),
            (false, [lead @ .., k]) => (1, count(lead)?, *k),
            _ => return Err(KernelError::Shape(format!("nn.matmul data {}", shape_text(data)))),
        };
        let g = Gemm { m, k, n: units, a_t: a.transpose_a, b_t: a.transpose_b };
        let out = only_output(outputs)?;
        nums!(out.dtype(), O => batched::<O>(d, w, out, g, batches, |i| i, |_| 0))
    }
}

/// `nn.batch_matmul(x[b, m, k], y[b, k, n]) -> [b, m, n]`, with `x` as `[b, k, m]` under
/// `transpose_a` and `y` as `[b, n, k]` under `transpose_b`; a batch of 1 broadcasts, and a
/// `?` batch makes the output batch `?`. Numeric dtypes.
///
/// The defaults are TVM's C++ ones, which its text printer omits: Python's
/// `relay.nn.batch_matmul` passes `transpose_b=True` explicitly, so it appears in the text.
#[derive(Debug)]
pub struct BatchMatmul;

impl Operator for BatchMatmul {
    const NAME: &'static str = "nn.batch_matmul";
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "x [b, m, k] x y [b, k, n] per batch";
    type Attrs = BatchMatmulAttrs;
    const COMPUTE: Option<ComputeRule<BatchMatmulAttrs>> = Some(compute::nn::batch_matmul);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &BatchMatmulAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x, y] = args(inputs)?;
        let (&[bx, x1, x2], &[by, y1, y2]) = (x, y) else {
            return Err(KernelError::Shape(format!(
                "expects two tensors of rank 3, found {} and {}",
                shape_text(x),
                shape_text(y)
            )));
        };
        let (m, k) = if a.transpose_a { (x2, x1) } else { (x1, x2) };
        let (yk, n) = if a.transpose_b { (y2, y1) } else { (y1, y2) };
        let both = || format!("{} and {}", shape_text(x), shape_text(y));
        let batch = match (bx.value(), by.value()) {
            (Some(p), Some(q)) if p == q || q == 1 => bx,
            (Some(1), Some(_)) => by,
            (Some(p), Some(q)) => {
                return Err(KernelError::Shape(format!("batch sizes {p} and {q} differ: {}", both())))
            }
            // A `?` batch: the output batch is `?` too.
            (None, _) => bx,
            (_, None) => by,
        };
        if !may_equal(k, yk) {
            return Err(KernelError::Shape(format!(
                "x dim {} does not match y dim {}: {}",
                dim_text(k),
                dim_text(yk),
                both()
            )));
        }
        Ok(vec![vec![batch, m, n]])
    }

    fn dtypes(inputs: &[DType], a: &BatchMatmulAttrs) -> Result<Vec<DType>, KernelError> {
        let [x, y] = args(inputs)?;
        Ok(vec![product_dtype(x, y, a.out_dtype)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &BatchMatmulAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x, y] = args(inputs)?;
        let out = only_output(outputs)?;
        let (&[bx, x1, x2], &[by, ..], &[batches, m, n]) = (x.shape(), y.shape(), out.shape()) else {
            return Err(KernelError::Shape("nn.batch_matmul takes rank-3 tensors".into()));
        };
        let k = if a.transpose_a { x1 } else { x2 };
        let g = Gemm { m, k, n, a_t: a.transpose_a, b_t: a.transpose_b };
        let pick = |b: usize| move |i: usize| if b == 1 { 0 } else { i };
        nums!(out.dtype(), O => batched::<O>(x, y, out, g, batches, pick(bx), pick(by)))
    }
}

/// `nn.bias_add(data, bias)`: the 1-d `bias` (as long as `data`'s axis `axis`) added along
/// that axis. Numeric dtypes, both the same; the output has `data`'s shape and dtype.
#[derive(Debug)]
pub struct BiasAdd;

impl Operator for BiasAdd {
    const NAME: &'static str = "nn.bias_add";
    const PATTERN: OpPattern = OpPattern::Broadcast;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "add a [C] bias along axis";
    type Attrs = BiasAddAttrs;
    const COMPUTE: Option<ComputeRule<BiasAddAttrs>> = Some(compute::nn::bias_add);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &BiasAddAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [d, b] = args(inputs)?;
        let axis = axis_in(a.axis, d)?;
        check_channel_vector(d, axis, b, "bias")?;
        Ok(vec![d.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &BiasAddAttrs) -> Result<Vec<DType>, KernelError> {
        Ok(vec![check_dtype(Self::DTYPES, same_dtype(&args::<_, 2>(inputs)?)?)?])
    }

    fn reference(
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

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::Dim::{Any, Known as K};

    #[test]
    fn dense_shapes() {
        let a = DenseAttrs::default();
        assert_eq!(
            Dense::shapes(&[&[K(4), K(300)][..], &[K(10), K(300)]], &a).unwrap(),
            vec![vec![K(4), K(10)]]
        );
        assert_eq!(Dense::shapes(&[&[Any, K(8)][..], &[K(3), K(8)]], &a).unwrap(), vec![vec![Any, K(3)]]);
        let err = Dense::shapes::<usize>(&[&[1, 300], &[5, 150]], &a).unwrap_err().to_string();
        assert!(err.contains("input dim 300 does not match weight dim 150: (1, 300) and (5, 150)"), "{err}");
        let units = DenseAttrs { units: Some(4), ..a };
        assert!(Dense::shapes::<usize>(&[&[2, 8], &[3, 8]], &units)
            .unwrap_err()
            .to_string()
            .contains("units=4"));
    }

    #[test]
    fn matmul_transposes() {
        let a = MatmulAttrs { transpose_a: true, transpose_b: true, ..MatmulAttrs::default() };
        assert_eq!(Matmul::shapes::<usize>(&[&[5, 2], &[3, 5]], &a).unwrap(), vec![vec![2, 3]]);
    }

    #[test]
    fn batch_matmul_broadcasts_a_batch_of_one() {
        let tb = BatchMatmulAttrs { transpose_b: true, ..BatchMatmulAttrs::default() };
        assert_eq!(
            BatchMatmul::shapes::<usize>(&[&[1, 2, 4], &[6, 3, 4]], &tb).unwrap(),
            vec![vec![6, 2, 3]]
        );
        let plain = BatchMatmulAttrs::default();
        assert_eq!(
            BatchMatmul::shapes(&[&[Any, K(2), K(4)][..], &[K(6), K(4), K(3)]], &plain).unwrap(),
            vec![vec![Any, K(2), K(3)]]
        );
        let err = BatchMatmul::shapes::<usize>(&[&[5, 2, 4], &[6, 4, 3]], &plain).unwrap_err();
        assert!(err.to_string().contains("batch sizes 5 and 6"));
    }
}
