//! `unique` (TVM `src/relay/op/algorithm/unique.cc`, `topi/unique.py`): the distinct elements
//! of a 1-d tensor, with where they first occur, where each element went and how often each
//! occurs. As in TVM the results keep the input's length (static shapes); only the first
//! `num_unique` entries are meaningful.

use crate::attrs::UniqueAttrs;
use crate::error::KernelError;
use crate::kernels::util::{args, ints};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// `unique` alone.
pub const UNIQUE: &[OpEntry] = &[OpEntry::of::<Unique>()];

/// `unique(data, sorted, return_counts)` on a 1-d integer tensor of length `n`: the tuple
/// `(output, indices, inverse_indices, num_unique[, counts])`. `output` (data dtype, `(n)`)
/// holds the distinct values, ascending when `sorted`, else in order of first occurrence;
/// `indices` (`int32`, `(n)`) the position of each one's first occurrence in `data`;
/// `inverse_indices` (`int32`, `(n)`) the position in `output` of each element of `data`;
/// `num_unique` (`int32`, `(1)`) their number; `counts` (`int32`, `(n)`) how often each
/// occurs. Past `num_unique`, TVM leaves the entries undefined; here `output` and `counts`
/// hold 0 and `indices` holds `n` (TVM's first-occurrence initial value), so results are
/// deterministic. The results match NumPy's `unique` (`return_index`, `return_inverse`,
/// `return_counts`), reordered by first occurrence when not `sorted`, as TVM's tests check.
#[derive(Debug)]
pub struct Unique;

/// One distinct value: where it first occurs and how often.
struct Group {
    first: usize,
    count: usize,
}

impl Operator for Unique {
    const NAME: &'static str = "unique";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Ints;
    const DOC: &'static str = "distinct elements, first occurrences, inverse indices, count[, counts]";
    type Attrs = UniqueAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &UniqueAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        let [n] = x else {
            return Err(KernelError::Shape(format!(
                "unique expects a 1-d tensor, found shape {}",
                shape_text(x)
            )));
        };
        let mut outs = vec![vec![*n], vec![*n], vec![*n], vec![D::known(1)]];
        if a.return_counts {
            outs.push(vec![*n]);
        }
        Ok(outs)
    }

    fn dtypes(inputs: &[DType], a: &UniqueAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        let mut outs = vec![Self::DTYPES.check(d)?, DType::I32, DType::I32, DType::I32];
        if a.return_counts {
            outs.push(DType::I32);
        }
        Ok(outs)
    }

    fn reference(
        inputs: &[&Tensor],
        a: &UniqueAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let n = x.len();
        let int = |v: usize| {
            i32::try_from(v)
                .map_err(|_| KernelError::Shape(format!("{n} elements do not fit unique's int32 results")))
        };
        let n32 = int(n)?;
        ints!(x.dtype(), T => {
            let data = x.as_slice::<T>()?;
            // A stable sort keeps equal values in input order: each run's first is its first
            // occurrence.
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&i, &j| data[i].cmp(&data[j]));
            let mut groups: Vec<Group> = Vec::new();
            let mut group_of = vec![0usize; n];
            for (k, &i) in order.iter().enumerate() {
                match groups.last_mut() {
                    Some(g) if k > 0 && data[order[k - 1]] == data[i] => g.count += 1,
                    _ => groups.push(Group { first: i, count: 1 }),
                }
                group_of[i] = groups.len() - 1;
            }
            // Position of each group in the output.
            let mut rank: Vec<usize> = (0..groups.len()).collect();
            if !a.sorted {
                let mut by_first: Vec<usize> = (0..groups.len()).collect();
                by_first.sort_by_key(|&g| groups[g].first);
                for (pos, &g) in by_first.iter().enumerate() {
                    rank[g] = pos;
                }
            }
            let mut output = vec![T::default(); n];
            let mut indices = vec![n32; n];
            let mut counts = vec![0i32; n];
            for (g, group) in groups.iter().enumerate() {
                output[rank[g]] = data[group.first];
                indices[rank[g]] = int(group.first)?;
                counts[rank[g]] = int(group.count)?;
            }
            let inverse = group_of.iter().map(|&g| int(rank[g])).collect::<Result<Vec<i32>, _>>()?;
            let num = [int(groups.len())?];
            let results: [&[i32]; 4] = [&indices, &inverse, &num, &counts];
            let [first, rest @ ..] = outputs else {
                return Err(KernelError::OutputCount { expected: 4, actual: 0 });
            };
            first.as_mut_slice::<T>()?.copy_from_slice(&output);
            for (out, values) in rest.iter_mut().zip(results) {
                out.as_mut_slice::<i32>()?.copy_from_slice(values);
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::eval;

    fn run(data: Vec<i32>, sorted: bool) -> Vec<Vec<i32>> {
        let x = Tensor::from_vec(vec![data.len()], data).unwrap();
        let out = eval::<Unique>(&[&x], &UniqueAttrs { sorted, return_counts: true }).unwrap();
        out.iter().map(|t| t.as_slice::<i32>().unwrap().to_vec()).collect()
    }

    #[test]
    fn tvm_examples() {
        let data = vec![4, 5, 1, 2, 3, 3, 4, 5];
        assert_eq!(
            run(data.clone(), true),
            vec![
                vec![1, 2, 3, 4, 5, 0, 0, 0],
                vec![2, 3, 4, 0, 1, 8, 8, 8],
                vec![3, 4, 0, 1, 2, 2, 3, 4],
                vec![5],
                vec![1, 1, 2, 2, 2, 0, 0, 0],
            ]
        );
        assert_eq!(
            run(data, false),
            vec![
                vec![4, 5, 1, 2, 3, 0, 0, 0],
                vec![0, 1, 2, 3, 4, 8, 8, 8],
                vec![0, 1, 2, 3, 4, 4, 0, 1],
                vec![5],
                vec![2, 2, 1, 1, 2, 0, 0, 0],
            ]
        );
    }
}
