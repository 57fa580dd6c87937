//! `qnn.dense`, `qnn.batch_matmul`, `qnn.conv2d` (TVM `src/relay/qnn/op/dense.cc`,
//! `batch_matmul.cc`, `convolution.cc`): integer products with the zero points subtracted,
//! accumulated in `int32`. Each subtracts the zero points from its operands (which then fit
//! `int32`: TVM's padding with the input zero point becomes padding with 0) and runs its float
//! operator's shape function and reference kernel on them.

use super::canonical;
use super::{
    at, channels, check_dtype, check_qparam_shape, check_qparams, check_scalars, int_values, ChannelWalk,
};
use crate::attrs::{BatchMatmulAttrs, Conv2dAttrs, DenseAttrs};
use crate::error::KernelError;
use crate::kernels::util::args;
use crate::kernels::Checked;
use crate::operator::{message, CanonicalizeRule, DTypeSet, Operator, ShapeDim};
use crate::ops::{BatchMatmul, Conv2d, Dense};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The dtypes of a product's quantized operands.
const OPERANDS: [DType; 3] = [DType::I8, DType::U8, DType::I16];

/// The parameter operands of a product, after the data and the weight.
const PRODUCT_PARAMS: [&str; 4] = ["input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale"];

/// The dtype rule of the products: quantized operands, `int32` parameters and result
/// (`out_dtype`, `int32` when absent as in TVM's Python API).
fn product_dtype(inputs: &[DType], out_dtype: Option<DType>) -> Result<Vec<DType>, KernelError> {
    let [d, w, params @ ..]: [DType; 6] = args(inputs)?;
    check_dtype(d, "data", &OPERANDS)?;
    check_dtype(w, "weight", &OPERANDS)?;
    check_qparams(&params, &PRODUCT_PARAMS)?;
    Ok(vec![check_dtype(out_dtype.unwrap_or(DType::I32), "out_dtype", &[DType::I32])?])
}

/// The parameter shape rule of the products: the input's parameters scalars, the kernel's
/// scalars or one per output channel (`weight` axis `kernel_axis`, `None`: scalars only).
fn product_params<D: ShapeDim>(inputs: &[&[D]], kernel_axis: Option<usize>) -> Result<(), KernelError> {
    let [_, w, iz, kz, is, ks]: [&[D]; 6] = args(inputs)?;
    check_scalars(&[iz, is], &["input_zero_point", "input_scale"])?;
    let per_channel = match kernel_axis {
        Some(axis) => channels(w, axis as i64)?,
        None => None,
    };
    check_qparam_shape(kz, "kernel_zero_point", per_channel)?;
    check_qparam_shape(ks, "kernel_scale", per_channel)
}

/// `t - zero_point` as an `int32` tensor, the zero point per tensor or per channel of `axis`.
fn shifted(t: &Tensor, zero_point: &Tensor, axis: i64) -> Result<Tensor, KernelError> {
    let (zps, walk) = (int_values(zero_point)?, ChannelWalk::new(t.shape(), axis)?);
    let values = int_values(t)?
        .into_iter()
        .enumerate()
        .map(|(i, v)| Ok((v - at(&zps, walk.channel(i))?) as i32))
        .collect::<Result<Vec<i32>, KernelError>>()?;
    Ok(Tensor::from_vec(t.shape().to_vec(), values)?)
}

/// Runs float operator `T` on the zero-point-shifted operands: the data's zero point per
/// tensor, the weight's per tensor or per channel of `kernel_axis`.
fn run_shifted<T: Operator>(
    inputs: &[&Tensor],
    attrs: &T::Attrs,
    kernel_axis: i64,
    outputs: &mut [Tensor],
    checked: Checked,
) -> Result<(), KernelError> {
    let [d, w, iz, kz, _, _] = args(inputs)?;
    let (d, w) = (shifted(d, iz, 0)?, shifted(w, kz, kernel_axis)?);
    T::reference(&[&d, &w], attrs, outputs, checked)
}

/// `qnn.dense(data, weight, input_zero_point, kernel_zero_point, input_scale, kernel_scale)`:
/// `(data - input_zp)[.., k] x (weight - kernel_zp)[units, k]^T` in `int32`, shapes as
/// `nn.dense`; `int8`/`uint8`/`int16` operands; the kernel's zero point and scale scalars or
/// one per unit (the scales only type the call: the result's scale is their product).
#[derive(Debug)]
pub struct QnnDense;

impl Operator for QnnDense {
    const NAME: &'static str = "qnn.dense";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 6;
    const DTYPES: DTypeSet = DTypeSet::Ints;
    const DOC: &'static str = "(data - input_zero_point) x (weight - kernel_zero_point)^T in int32";
    type Attrs = DenseAttrs;
    const CANONICALIZE: Option<CanonicalizeRule<DenseAttrs>> =
        Some(|b, args, types, _| canonical::shifted_product(b, args, types, "nn.dense", 0));

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &DenseAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        product_params(inputs, Some(0))?;
        <Dense as Operator>::shapes(&inputs[..2], a)
    }

    fn dtypes(inputs: &[DType], a: &DenseAttrs) -> Result<Vec<DType>, KernelError> {
        product_dtype(inputs, a.out_dtype)
    }

    fn reference(
        inputs: &[&Tensor],
        a: &DenseAttrs,
        outputs: &mut [Tensor],
        c: Checked,
    ) -> Result<(), KernelError> {
        run_shifted::<Dense>(inputs, a, 0, outputs, c)
    }
}

/// `qnn.batch_matmul(x, y, x_zero_point, y_zero_point, x_scale, y_scale)`:
/// `(x - x_zp) x (y - y_zp)` per batch in `int32`, shapes and `transpose_a`/`transpose_b` as
/// `nn.batch_matmul` (TVM's C++ defaults, `False`; TVM's Python API passes
/// `transpose_b=True`, which its text printer writes out); scalar parameters.
#[derive(Debug)]
pub struct QnnBatchMatmul;

impl Operator for QnnBatchMatmul {
    const NAME: &'static str = "qnn.batch_matmul";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 6;
    const DTYPES: DTypeSet = DTypeSet::Ints;
    const DOC: &'static str = "(x - x_zero_point) x (y - y_zero_point) per batch in int32";
    type Attrs = BatchMatmulAttrs;
    const CANONICALIZE: Option<CanonicalizeRule<BatchMatmulAttrs>> =
        Some(|b, args, types, _| canonical::shifted_product(b, args, types, "nn.batch_matmul", 0));

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &BatchMatmulAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        product_params(inputs, None)?;
        <BatchMatmul as Operator>::shapes(&inputs[..2], a)
    }

    fn dtypes(inputs: &[DType], a: &BatchMatmulAttrs) -> Result<Vec<DType>, KernelError> {
        product_dtype(inputs, a.out_dtype)
    }

    fn reference(
        inputs: &[&Tensor],
        a: &BatchMatmulAttrs,
        outputs: &mut [Tensor],
        c: Checked,
    ) -> Result<(), KernelError> {
        run_shifted::<BatchMatmul>(inputs, a, 0, outputs, c)
    }
}

/// The output-channel axis of a convolution weight: the `O` of `kernel_layout`.
fn output_channel_axis(a: &Conv2dAttrs) -> Result<usize, KernelError> {
    a.kernel_layout
        .find('O')
        .ok_or_else(|| KernelError::Attr(format!("kernel_layout \"{}\" has no `O` axis", a.kernel_layout)))
}

/// `qnn.conv2d(data, weight, input_zero_point, kernel_zero_point, input_scale, kernel_scale)`:
/// `nn.conv2d` of `(data - input_zp)` and `(weight - kernel_zp)` in `int32` (padding holds the
/// input zero point, as TVM pads), attributes, layouts and shapes as `nn.conv2d`; the kernel's
/// zero point and scale scalars or one per output channel.
#[derive(Debug)]
pub struct QnnConv2d;

impl Operator for QnnConv2d {
    const NAME: &'static str = "qnn.conv2d";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 6;
    const DTYPES: DTypeSet = DTypeSet::Ints;
    const DOC: &'static str = "conv2d of (data - input_zero_point) and (weight - kernel_zero_point) in int32";
    type Attrs = Conv2dAttrs;
    const CANONICALIZE: Option<CanonicalizeRule<Conv2dAttrs>> = Some(|b, args, types, a| {
        canonical::shifted_product(b, args, types, "nn.conv2d", output_channel_axis(a).map_err(message)?)
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &Conv2dAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        product_params(inputs, Some(output_channel_axis(a)?))?;
        <Conv2d as Operator>::shapes(&inputs[..2], a)
    }

    fn dtypes(inputs: &[DType], a: &Conv2dAttrs) -> Result<Vec<DType>, KernelError> {
        product_dtype(inputs, a.out_dtype)
    }

    fn reference(
        inputs: &[&Tensor],
        a: &Conv2dAttrs,
        outputs: &mut [Tensor],
        c: Checked,
    ) -> Result<(), KernelError> {
        run_shifted::<Conv2d>(inputs, a, output_channel_axis(a)? as i64, outputs, c)
    }
}
