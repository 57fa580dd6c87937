//! `qnn.quantize`, `qnn.dequantize`, `qnn.requantize` (TVM `src/relay/qnn/op/quantize.cc`,
//! `dequantize.cc`, `requantize.cc`): between `float32` and integers, and between two integer
//! quantizations, per tensor or per channel of `axis`.

use super::canonical;
use super::{
    at, channels, check_dtype, check_qparam_shape, check_qparams, check_scalars, int_values, scale_values,
    store_saturated, ChannelWalk, Rescale, QUANTIZED,
};
use crate::attrs::{DequantizeAttrs, QnnComputeDtype, QuantizeAttrs, RequantizeAttrs};
use crate::error::KernelError;
use crate::kernels::util::{args, only_output, same_len};
use crate::kernels::Checked;
use crate::operator::{CanonicalizeRule, DTypeSet, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The data shape, after checking a scale and zero point (operands 1 and 2, named `names`)
/// against the data's channel axis.
fn per_channel_shape<D: ShapeDim>(
    inputs: &[&[D]],
    axis: i64,
    names: [&str; 2],
) -> Result<Vec<D>, KernelError> {
    let data = inputs.first().copied().unwrap_or(&[]);
    let per_channel = channels(data, axis)?;
    for (shape, name) in inputs.iter().skip(1).zip(names) {
        check_qparam_shape(shape, name, per_channel)?;
    }
    Ok(data.to_vec())
}

/// `qnn.quantize(data, output_scale, output_zero_point)`: `float32` data of any shape to
/// `out_dtype` (`int8`, `uint8`, `int16`, `int32`), elementwise
/// `clip(round(data / scale) + zero_point)`, in `float32` with `round` half away from zero
/// (TVM's `round`), saturating at the dtype's limits. Scale and zero point are scalars or have
/// one element per channel of `axis`.
#[derive(Debug)]
pub struct Quantize;

impl Operator for Quantize {
    const NAME: &'static str = "qnn.quantize";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 3;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "clip(round(data / output_scale) + output_zero_point), per tensor or channel";
    type Attrs = QuantizeAttrs;
    const CANONICALIZE: Option<CanonicalizeRule<QuantizeAttrs>> = Some(canonical::quantize);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &QuantizeAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let _: [&[D]; 3] = args(inputs)?;
        Ok(vec![per_channel_shape(inputs, a.axis, ["output_scale", "output_zero_point"])?])
    }

    fn dtypes(inputs: &[DType], a: &QuantizeAttrs) -> Result<Vec<DType>, KernelError> {
        let [data, s, z] = args(inputs)?;
        check_dtype(data, "data", &[DType::F32])?;
        check_qparams(&[s, z], &["output_scale", "output_zero_point"])?;
        Ok(vec![check_dtype(a.out_dtype, "out_dtype", &QUANTIZED)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &QuantizeAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data, s, z] = args(inputs)?;
        let (scales, zps) = (scale_values(s)?, int_values(z)?);
        let walk = ChannelWalk::new(data.shape(), a.axis)?;
        let x = data.as_slice::<f32>()?;
        let mut q = Vec::with_capacity(x.len());
        for (i, &v) in x.iter().enumerate() {
            let c = walk.channel(i);
            q.push(((v / at(&scales, c)?).round() + at(&zps, c)? as f32) as i64);
        }
        store_saturated(only_output(outputs)?, &q)
    }
}

/// `qnn.dequantize(data, input_scale, input_zero_point)`: `int8`/`uint8`/`int16`/`int32`
/// data to `float32`, elementwise `float32(int32(data) - zero_point) * scale`; scale and zero
/// point scalars or one per channel of `axis`.
#[derive(Debug)]
pub struct Dequantize;

impl Operator for Dequantize {
    const NAME: &'static str = "qnn.dequantize";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 3;
    const DTYPES: DTypeSet = DTypeSet::Ints;
    const DOC: &'static str = "(data - input_zero_point) * input_scale, per tensor or channel";
    type Attrs = DequantizeAttrs;
    const CANONICALIZE: Option<CanonicalizeRule<DequantizeAttrs>> = Some(canonical::dequantize);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &DequantizeAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let _: [&[D]; 3] = args(inputs)?;
        Ok(vec![per_channel_shape(inputs, a.axis, ["input_scale", "input_zero_point"])?])
    }

    fn dtypes(inputs: &[DType], a: &DequantizeAttrs) -> Result<Vec<DType>, KernelError> {
        let [data, s, z] = args(inputs)?;
        check_dtype(data, "data", &QUANTIZED)?;
        check_qparams(&[s, z], &["input_scale", "input_zero_point"])?;
        Ok(vec![check_dtype(a.out_dtype, "out_dtype", &[DType::F32])?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &DequantizeAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data, s, z] = args(inputs)?;
        let (scales, zps, x) = (scale_values(s)?, int_values(z)?, int_values(data)?);
        let walk = ChannelWalk::new(data.shape(), a.axis)?;
        let out = only_output(outputs)?.as_mut_slice::<f32>()?;
        same_len(out.len(), x.len())?;
        for (i, (o, &v)) in out.iter_mut().zip(&x).enumerate() {
            let c = walk.channel(i);
            // TVM subtracts in int32 (wrapping), then converts and scales in float32.
            *o = (v as i32).wrapping_sub(at(&zps, c)? as i32) as f32 * at(&scales, c)?;
        }
        Ok(())
    }
}

/// `qnn.requantize(data, input_scale, input_zero_point, output_scale, output_zero_point)`:
/// integer data (`int8`, `uint8`, `int16`, `int32`) to `out_dtype`, elementwise
/// `clip(output_zero_point + (input_scale / output_scale) * (data - input_zero_point))`, the
/// input scale and zero point per tensor or per channel of `axis`, the output's per tensor.
/// The multiplication is TVM's `compute_dtype="int64"` (its default) fixed point: the ratio as
/// a 31-bit significand and a shift, one rounding (`UPWARD`, TVM's default, or `TONEAREST`);
/// `compute_dtype="float32"`/`"float64"` are refused.
#[derive(Debug)]
pub struct Requantize;

impl Operator for Requantize {
    const NAME: &'static str = "qnn.requantize";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 5;
    const DTYPES: DTypeSet = DTypeSet::Ints;
    const DOC: &'static str = "output_zero_point + input_scale / output_scale * (data - input_zero_point)";
    type Attrs = RequantizeAttrs;
    const CANONICALIZE: Option<CanonicalizeRule<RequantizeAttrs>> = Some(canonical::requantize);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &RequantizeAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [_, _, _, os, oz] = args(inputs)?;
        check_scalars(&[os, oz], &["output_scale", "output_zero_point"])?;
        Ok(vec![per_channel_shape(&inputs[..3], a.axis, ["input_scale", "input_zero_point"])?])
    }

    fn dtypes(inputs: &[DType], a: &RequantizeAttrs) -> Result<Vec<DType>, KernelError> {
        let [data, is, iz, os, oz] = args(inputs)?;
        check_dtype(data, "data", &QUANTIZED)?;
        check_qparams(
            &[is, iz, os, oz],
            &["input_scale", "input_zero_point", "output_scale", "output_zero_point"],
        )?;
        if matches!(a.compute_dtype, QnnComputeDtype::Float32 | QnnComputeDtype::Float64) {
            return Err(KernelError::Attr(
                "compute_dtype=\"float32\"/\"float64\" is not supported; use \"int64\" (TVM's default)"
                    .into(),
            ));
        }
        Ok(vec![check_dtype(a.out_dtype, "out_dtype", &QUANTIZED)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &RequantizeAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data, is, iz, os, oz] = args(inputs)?;
        let (in_scales, in_zps) = (scale_values(is)?, int_values(iz)?);
        let out = (at(&scale_values(os)?, 0)?, at(&int_values(oz)?, 0)?);
        let walk = ChannelWalk::new(data.shape(), a.axis)?;
        let channels = in_scales.len().max(in_zps.len());
        let rescales = (0..channels)
            .map(|c| Rescale::new((at(&in_scales, c)?, at(&in_zps, c)?), out, a.rounding))
            .collect::<Result<Vec<_>, _>>()?;
        let x = int_values(data)?;
        let mut q = Vec::with_capacity(x.len());
        for (i, &v) in x.iter().enumerate() {
            q.push(at(&rescales, walk.channel(i))?.apply(v));
        }
        store_saturated(only_output(outputs)?, &q)
    }
}
