//! Half-float operands (`float16`, `bfloat16`): every reference kernel computes in `float32`
//! and rounds each result to its 16-bit dtype once, to nearest even, as TVM's CPU target does
//! (it legalises `float16` and `bfloat16` arithmetic to `float32`). The kernels themselves
//! never see a half-float tensor, so each operator's semantics stays written once, over
//! `float32`.

use crate::error::KernelError;
use half::{bf16, f16};
use relay_devices::{DType, Element, Tensor};

/// The output dtypes `rule` (an operator's dtype rule) gives for `inputs`, with half-float
/// inputs the rule does not take itself (its dtype dispatch lists the types kernels compute
/// in) treated as floats: the rule runs with them as `float32` and as `float64`, and an output
/// that follows them (`float32`, then `float64`) is that half float; an output that does not
/// (a comparison's `bool`, `cast`'s attribute) keeps its dtype. When that fails too (a half
/// float mixed with another float, or `float16` with `bfloat16`), the rule's own error on the
/// real dtypes is returned.
///
/// # Errors
/// The rule's error for `inputs`.
pub(crate) fn output_dtypes(
    inputs: &[DType],
    rule: impl Fn(&[DType]) -> Result<Vec<DType>, KernelError>,
) -> Result<Vec<DType>, KernelError> {
    let direct = rule(inputs);
    let mut halves = inputs.iter().filter(|d| d.is_half_float());
    let Some(&half) = halves.next() else { return direct };
    if direct.is_ok() || halves.any(|&d| d != half) {
        return direct;
    }
    let with =
        |float: DType| -> Vec<DType> { inputs.iter().map(|&d| if d == half { float } else { d }).collect() };
    match (rule(&with(DType::F32)), rule(&with(DType::F64))) {
        (Ok(single), Ok(double)) if single.len() == double.len() => Ok(single
            .into_iter()
            .zip(double)
            .map(|(s, d)| if (s, d) == (DType::F32, DType::F64) { half } else { s })
            .collect()),
        _ => direct,
    }
}

/// Whether any operand or result of a call is a half float.
pub(super) fn involved(inputs: &[&Tensor], outputs: &[Tensor]) -> bool {
    inputs.iter().map(|t| t.dtype()).chain(outputs.iter().map(Tensor::dtype)).any(DType::is_half_float)
}

/// Runs `compute` on `float32` copies of the half-float inputs, into `float32` temporaries for
/// the half-float outputs, then rounds those into `outputs` (which keep their buffers: they
/// may be planned arena regions). Other operands are passed through untouched.
///
/// # Errors
/// What `compute` returns, or an allocation failure of a temporary.
pub(super) fn in_float32(
    inputs: &[&Tensor],
    outputs: &mut [Tensor],
    compute: impl FnOnce(&[&Tensor], &mut [Tensor]) -> Result<(), KernelError>,
) -> Result<(), KernelError> {
    let widened: Vec<Option<Tensor>> = inputs.iter().map(|t| widen(t)).collect::<Result<_, _>>()?;
    let wide_inputs: Vec<&Tensor> =
        inputs.iter().zip(&widened).map(|(t, w)| w.as_ref().unwrap_or(t)).collect();
    // Outputs of other dtypes are moved out and back, so the kernel writes them in place.
    let mut wide_outputs = Vec::with_capacity(outputs.len());
    for out in outputs.iter_mut() {
        let temp = if out.dtype().is_half_float() {
            Tensor::zeros(DType::F32, out.shape().to_vec())?
        } else {
            std::mem::replace(out, Tensor::scalar(false))
        };
        wide_outputs.push(temp);
    }
    let result = compute(&wide_inputs, &mut wide_outputs);
    for (out, wide) in outputs.iter_mut().zip(wide_outputs) {
        if out.dtype().is_half_float() {
            if result.is_ok() {
                narrow(&wide, out)?;
            }
        } else {
            *out = wide;
        }
    }
    result
}

/// A `float32` copy of a half-float tensor (exact), or `None` for any other dtype.
fn widen(t: &Tensor) -> Result<Option<Tensor>, KernelError> {
    fn each<T: Element>(t: &Tensor, to_f32: fn(T) -> f32) -> Result<Option<Tensor>, KernelError> {
        let wide = t.as_slice::<T>()?.iter().map(|&h| to_f32(h)).collect();
        Ok(Some(Tensor::from_vec(t.shape().to_vec(), wide)?))
    }
    match t.dtype() {
        DType::F16 => each(t, f16::to_f32),
        DType::BF16 => each(t, bf16::to_f32),
        _ => Ok(None),
    }
}

/// Rounds the `float32` tensor `wide` into the half-float tensor `out` of the same shape.
fn narrow(wide: &Tensor, out: &mut Tensor) -> Result<(), KernelError> {
    fn each<T: Element>(wide: &[f32], out: &mut Tensor, from_f32: fn(f32) -> T) -> Result<(), KernelError> {
        for (o, &v) in out.as_mut_slice::<T>()?.iter_mut().zip(wide) {
            *o = from_f32(v);
        }
        Ok(())
    }
    let src = wide.as_slice::<f32>()?;
    match out.dtype() {
        DType::F16 => each(src, out, f16::from_f32),
        DType::BF16 => each(src, out, bf16::from_f32),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn halves(shape: Vec<usize>, values: &[f32]) -> Tensor {
        Tensor::from_vec(shape, values.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn kernels_see_float32_and_results_round_once() {
        let x = halves(vec![3], &[1.0, 2048.0, 0.5]);
        let count = Tensor::scalar(7i32);
        let mut outputs = vec![Tensor::zeros(DType::F16, vec![3]).unwrap(), Tensor::scalar(0i32)];
        in_float32(&[&x, &count], &mut outputs, |inputs, outs| {
            assert_eq!(inputs[0].dtype(), DType::F32);
            assert_eq!(inputs[1].dtype(), DType::I32);
            assert_eq!((outs[0].dtype(), outs[1].dtype()), (DType::F32, DType::I32));
            let sums: Vec<f32> = inputs[0].as_slice::<f32>()?.iter().map(|v| v + 1.0).collect();
            outs[0].as_mut_slice::<f32>()?.copy_from_slice(&sums);
            outs[1].as_mut_slice::<i32>()?[0] = 9;
            Ok(())
        })
        .unwrap();
        // 2049 is exact in float32 and ties to even, 2048, in float16.
        assert_eq!(outputs[0], halves(vec![3], &[2.0, 2048.0, 1.5]));
        assert_eq!(outputs[1], Tensor::scalar(9i32));
    }

    #[test]
    fn dtype_rules_see_float16_as_a_float() {
        // A rule whose dispatch lists only f32/f64, as the kernels' do.
        let same_float = |d: &[DType]| match d {
            [a, b] if a == b && (*a == DType::F32 || *a == DType::F64) => {
                Ok(vec![*a, DType::BOOL, DType::I32])
            }
            _ => Err(KernelError::DType(format!("{d:?}"))),
        };
        let f16 = [DType::F16, DType::F16];
        assert_eq!(output_dtypes(&f16, same_float).unwrap(), [DType::F16, DType::BOOL, DType::I32]);
        assert_eq!(output_dtypes(&[DType::F32, DType::F32], same_float).unwrap()[0], DType::F32);
        // float16 mixed with float32 is the rule's error on the real dtypes.
        let err = output_dtypes(&[DType::F16, DType::F32], same_float).unwrap_err();
        assert_eq!(
            err.to_string(),
            KernelError::DType(format!("{:?}", [DType::F16, DType::F32])).to_string()
        );
    }

    #[test]
    fn bfloat16_goes_the_same_way_and_does_not_mix_with_float16() {
        let x = Tensor::from_vec(vec![2], vec![bf16::from_f32(256.0), bf16::from_f32(-1.0)]).unwrap();
        let mut outputs = vec![Tensor::zeros(DType::BF16, vec![2]).unwrap()];
        in_float32(&[&x], &mut outputs, |inputs, outs| {
            let plus_one: Vec<f32> = inputs[0].as_slice::<f32>()?.iter().map(|v| v + 1.0).collect();
            outs[0].as_mut_slice::<f32>()?.copy_from_slice(&plus_one);
            Ok(())
        })
        .unwrap();
        // 257 ties to even, 256, in bfloat16's 8-bit significand.
        let expected = Tensor::from_vec(vec![2], vec![bf16::from_f32(256.0), bf16::from_f32(0.0)]).unwrap();
        assert_eq!(outputs[0], expected);
        let same = |d: &[DType]| match d {
            [a, b] if a == b && *a != DType::F16 && *a != DType::BF16 => Ok(vec![*a]),
            _ => Err(KernelError::DType(format!("{d:?}"))),
        };
        assert_eq!(output_dtypes(&[DType::BF16, DType::BF16], same).unwrap(), [DType::BF16]);
        assert!(output_dtypes(&[DType::BF16, DType::F16], same).is_err());
    }

    #[test]
    fn a_failing_kernel_leaves_every_output_in_place() {
        let x = halves(vec![1], &[1.0]);
        let mut outputs = vec![Tensor::zeros(DType::F16, vec![1]).unwrap(), Tensor::scalar(5i32)];
        let err = in_float32(&[&x], &mut outputs, |_, _| Err(KernelError::Attr("no".into())));
        assert!(err.is_err());
        assert_eq!(outputs[1], Tensor::scalar(5i32));
        assert_eq!(outputs[0].dtype(), DType::F16);
    }
}
