//! `adv_index` (TVM `src/relay/op/tensor/transform.cc`, `topi::adv_index`): NumPy's advanced
//! indexing of the leading axes by integer tensors, as PyTorch's `x[i, j]` converts.

use crate::attrs::NoAttrs;
use crate::compute::util::lazy;
use crate::error::KernelError;
use crate::kernels::util::{any_type, for_each_index};
use crate::kernels::Checked;
use crate::operator::{broadcast, shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use crate::ops::index::{copy_from_offsets, index_values, strides, wrap_index};
use relay_compiler::kir::Index;
use relay_compiler::op::{ComputeInput, LazyTensor, OpPattern, OutType, TensorDef};
use relay_devices::{DType, Tensor};

/// `adv_index` alone.
pub const ADV_INDEX: &[OpEntry] = &[OpEntry::of::<AdvIndex>()];

/// `adv_index((data, i0, i1, ..., ik-1))`: `data[i0, i1, ..., ik-1]` in NumPy's advanced
/// indexing, `k` at most `data`'s rank. The index tensors (integers) broadcast together to a
/// shape `B`; the result has shape `B` followed by `data`'s axes from `k` on, and element
/// `[b, rest]` is `data[i0[b], ..., ik-1[b], rest]`. Negative indices count from the end, as
/// in NumPy; one outside `-size..size` is an error. The data may have any dtype.
#[derive(Debug)]
pub struct AdvIndex;

/// `(data, indices)` of a call's flattened inputs.
fn parts<T: Copy>(inputs: &[T]) -> Result<(T, &[T]), KernelError> {
    match inputs {
        [data, indices @ ..] if !indices.is_empty() => Ok((*data, indices)),
        _ => Err(KernelError::Arity {
            expected: "at least 2 (data and one index)".into(),
            actual: inputs.len(),
        }),
    }
}

impl Operator for AdvIndex {
    const NAME: &'static str = "adv_index";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const TUPLE_INPUT: bool = true;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "data indexed by broadcast integer tensors on its leading axes";
    type Attrs = NoAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<NoAttrs>> = Some(compute);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &NoAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let (data, indices) = parts(inputs)?;
        if indices.len() > data.len() {
            return Err(KernelError::Shape(format!(
                "{} index tensors for data of shape {}",
                indices.len(),
                shape_text(data)
            )));
        }
        let mut out = broadcast(indices)?;
        out.extend_from_slice(&data[indices.len()..]);
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &NoAttrs) -> Result<Vec<DType>, KernelError> {
        let (data, indices) = parts(inputs)?;
        for &d in indices {
            DTypeSet::Ints
                .check(d)
                .map_err(|_| KernelError::DType(format!("indices must be integers, found `{d}`")))?;
        }
        Ok(vec![DTypeSet::Any.check(data)?])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &NoAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let (data, indices) = parts(inputs)?;
        let out = crate::kernels::util::only_output(outputs)?;
        let k = indices.len();
        let b_rank = out.ndim() + k - data.ndim();
        let values = indices.iter().map(|t| index_values(t)).collect::<Result<Vec<_>, _>>()?;
        // Each index tensor's strides into the broadcast shape `B` (0 along its size-1 and
        // missing axes).
        let index_strides: Vec<Vec<usize>> = indices
            .iter()
            .map(|t| {
                let own = strides(t.shape());
                let pad = b_rank - t.ndim();
                (0..b_rank)
                    .map(|a| match a.checked_sub(pad) {
                        Some(i) if t.shape()[i] != 1 => own[i],
                        _ => 0,
                    })
                    .collect()
            })
            .collect();
        let data_strides = strides(data.shape());
        let mut offsets = Vec::with_capacity(out.len());
        for_each_index(out.shape(), |at| {
            let (b, rest) = at.split_at(b_rank);
            let mut offset = 0;
            for (axis, (v, s)) in values.iter().zip(&index_strides).enumerate() {
                let flat: usize = b.iter().zip(s).map(|(i, s)| i * s).sum();
                let i = v.get(flat).copied().unwrap_or(i64::MAX);
                offset += wrap_index(i, data.shape()[axis])? * data_strides[axis];
            }
            offset += rest.iter().zip(&data_strides[k..]).map(|(i, s)| i * s).sum::<usize>();
            offsets.push(offset);
            Ok(())
        })?;
        any_type!(data.dtype(), T => copy_from_offsets::<T>(data, &offsets, out))
    }
}

/// The kir rule: `out[b, rest] = data[i0[b], ..., ik-1[b], rest]`, each index tensor read at
/// `b` broadcast to its own shape (0 along its size-1 axes, its leading axes dropped), each
/// index wrapped into its axis (the reference kernel's `-n..n`, and any other value kept in
/// bounds, as `gather`'s: a fused kernel cannot fail).
fn compute(inputs: &[ComputeInput], _: &NoAttrs, out: &OutType) -> Result<TensorDef, String> {
    let [ComputeInput::Tuple(parts)] = inputs else { return Err("adv_index takes one tuple".into()) };
    let (data, indices) = parts.split_first().ok_or("adv_index takes data and indices")?;
    let k = indices.len();
    let b_rank =
        (out.shape.len() + k).checked_sub(data.shape.len()).ok_or("adv_index: ranks do not agree")?;
    if data.shape.iter().take(k).any(|&n| n <= 0) || indices.iter().any(|i| !i.dtype.is_int()) {
        return Err("an adv_index from an empty axis runs in the reference kernel".into());
    }
    let (data, indices): (LazyTensor, Vec<LazyTensor>) = (data.clone(), indices.to_vec());
    Ok(lazy(move |kb, idx| {
        let (b, rest) = idx.split_at(b_rank.min(idx.len()));
        let mut src: Vec<Index> = Vec::with_capacity(data.shape.len());
        for (index, &n) in indices.iter().zip(&data.shape) {
            let pad = b_rank - index.shape.len().min(b_rank);
            let own: Vec<Index> = index
                .shape
                .iter()
                .enumerate()
                .map(|(a, &size)| if size == 1 { Index::from(0i64) } else { b[pad + a].clone() })
                .collect();
            src.push(Index::value(index.at(kb, &own).cast(DType::I64)).floor_mod(n));
        }
        src.extend(rest.iter().cloned());
        data.at(kb, &src)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::eval;

    #[test]
    fn numpy_advanced_indexing() {
        let x = Tensor::from_vec(vec![3, 2], vec![0f32, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let rows = Tensor::from_vec(vec![2, 1], vec![2i64, -3]).unwrap();
        let cols = Tensor::from_vec(vec![3], vec![1i32, 0, 1]).unwrap();
        let out = eval::<AdvIndex>(&[&x, &rows, &cols], &NoAttrs::default()).unwrap();
        assert_eq!(out[0].shape(), &[2, 3]);
        assert_eq!(out[0].as_slice::<f32>().unwrap(), &[5.0, 4.0, 5.0, 1.0, 0.0, 1.0]);
        let bad = Tensor::from_vec(vec![1], vec![3i32]).unwrap();
        assert!(eval::<AdvIndex>(&[&x, &bad], &NoAttrs::default()).is_err());
    }
}
