//! Joining and splitting along axes: `concatenate`, `stack`, `split`, and `meshgrid`, which
//! spreads a tuple of vectors over a grid (TVM `src/relay/op/tensor/transform.cc`). Relay
//! passes `concatenate`/`stack`/`meshgrid` one tuple; its fields are the inputs
//! (`Operator::TUPLE_INPUT`).

use crate::attrs::{
    ConcatenateAttrs, IndicesOrSections, MeshgridAttrs, MeshgridIndexing, SplitAttrs, StackAttrs,
};
use crate::compute::transform as rule;
use crate::error::KernelError;
use crate::kernels::util::{any_type, args, normalize_axis, only_output, same_dtype, to_positive};
use crate::kernels::Checked;
use crate::operator::{message, shape_text, CanonicalizeRule, DTypeSet, Operator, ShapeDim};
use crate::ops::index::copy_from_source;
use relay_compiler::ir::{AttrValue, ExprId};
use relay_compiler::op::{Builder, OpPattern, RelType};
use relay_devices::{DType, Tensor};

/// The fields' shapes, checked to share one rank: the first one, or an error for none.
fn alike<'a, D: ShapeDim>(inputs: &[&'a [D]]) -> Result<&'a [D], KernelError> {
    let first =
        inputs.first().copied().ok_or(KernelError::Arity { expected: "at least 1".into(), actual: 0 })?;
    if let Some(other) = inputs.iter().find(|s| s.len() != first.len()) {
        return Err(KernelError::Shape(format!(
            "tensor ranks differ: {} and {}",
            shape_text(first),
            shape_text(other)
        )));
    }
    Ok(first)
}

/// Dimension `i` shared by all of `inputs`: the known size if any is known (all known sizes
/// must agree), else `?`.
fn common_dim<D: ShapeDim>(inputs: &[&[D]], i: usize) -> Result<D, KernelError> {
    let mut d = inputs[0][i];
    for s in inputs {
        d = match (d.value(), s[i].value()) {
            (Some(a), Some(b)) if a != b => {
                return Err(KernelError::Shape(format!(
                    "dimension {i} differs: {} and {}",
                    shape_text(inputs[0]),
                    shape_text(s)
                )))
            }
            (None, _) => s[i],
            _ => d,
        };
    }
    Ok(d)
}

/// `concatenate`: the fields joined along `axis`; they must agree on dtype (any), rank and
/// every other dimension; the sizes along `axis` add up (`?` if any is `?`).
#[derive(Debug)]
pub struct Concatenate;

impl Operator for Concatenate {
    const NAME: &'static str = "concatenate";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const TUPLE_INPUT: bool = true;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "join a tuple of tensors along axis";
    type Attrs = ConcatenateAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<ConcatenateAttrs>> = Some(rule::concatenate);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &ConcatenateAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let first = alike(inputs)?;
        if first.is_empty() {
            return Err(KernelError::Shape("cannot concatenate scalars".into()));
        }
        let axis = normalize_axis(attrs.axis, first.len())?;
        let mut out = Vec::with_capacity(first.len());
        for i in 0..first.len() {
            out.push(if i == axis {
                let along: Vec<D> = inputs.iter().map(|s| s[axis]).collect();
                super::sum(&along)?
            } else {
                common_dim(inputs, i)?
            });
        }
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &ConcatenateAttrs) -> Result<Vec<DType>, KernelError> {
        Ok(vec![same_dtype(inputs)?])
    }

    fn reference(
        inputs: &[&Tensor],
        attrs: &ConcatenateAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let out = only_output(outputs)?;
        let axis = normalize_axis(attrs.axis, out.ndim())?;
        let mut start = 0;
        for x in inputs {
            let len = x.shape().get(axis).copied().unwrap_or(0);
            any_type!(x.dtype(), T => {
                let mut block = out.view_mut::<T>()?.slice_axis(axis, start, 1, len)?;
                block.copy_from(&x.view::<T>()?)?;
                Ok(())
            })?;
            start += len;
        }
        Ok(())
    }
}

/// `stack`: the fields (of one shape and dtype) joined along a new axis of size `n` at `axis`
/// (`-rank-1..=rank`).
#[derive(Debug)]
pub struct Stack;

/// `axis` for a new axis of a rank-`rank` input, in `[-rank - 1, rank]`.
fn new_axis(axis: i64, rank: usize) -> Result<usize, KernelError> {
    normalize_axis(axis, rank + 1).map_err(|_| {
        KernelError::Attr(format!("axis {axis} is out of range for stacking tensors of rank {rank}"))
    })
}

impl Operator for Stack {
    const NAME: &'static str = "stack";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const TUPLE_INPUT: bool = true;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "join a tuple of tensors along a new axis";
    type Attrs = StackAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<StackAttrs>> = Some(rule::stack);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &StackAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let first = alike(inputs)?;
        let at = new_axis(attrs.axis, first.len())?;
        let mut out = (0..first.len()).map(|i| common_dim(inputs, i)).collect::<Result<Vec<_>, _>>()?;
        out.insert(at, D::known(inputs.len()));
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &StackAttrs) -> Result<Vec<DType>, KernelError> {
        Ok(vec![same_dtype(inputs)?])
    }

    fn reference(
        inputs: &[&Tensor],
        attrs: &StackAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let out = only_output(outputs)?;
        let axis = new_axis(attrs.axis, out.ndim().saturating_sub(1))?;
        for (i, x) in inputs.iter().enumerate() {
            any_type!(x.dtype(), T => {
                let mut block = out.view_mut::<T>()?.slice_axis(axis, i, 1, 1)?;
                block.copy_from(&x.view::<T>()?)?;
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// `split`: the input cut along `axis` into equal sections or before each index (TVM
/// requires indices to be strictly increasing, positive and below the dimension). Any dtype.
#[derive(Debug)]
pub struct Split;

/// The sizes of the parts `split` cuts a dimension of size `dim` into: a number of equal
/// sections (which must divide `dim`; `?` parts of a `?`), or the strictly increasing positive
/// indices to cut before (the last below `dim`; the last part of a `?` is `?`).
///
/// # Errors
/// [`KernelError::Attr`] for sections or indices that do not fit `dim`.
pub(crate) fn split_sizes<D: ShapeDim>(dim: D, how: &IndicesOrSections) -> Result<Vec<D>, KernelError> {
    match how {
        IndicesOrSections::Sections(n) => {
            let n = to_positive(*n, "the number of sections")?;
            let part = match dim.value() {
                Some(d) if d.is_multiple_of(n) => D::known(d / n),
                Some(d) => {
                    return Err(KernelError::Attr(format!("{n} sections do not divide dimension {d} evenly")))
                }
                None => dim,
            };
            Ok(vec![part; n])
        }
        IndicesOrSections::Indices(indices) => {
            let mut sizes = Vec::with_capacity(indices.len() + 1);
            let mut begin = 0usize;
            for &at in indices {
                match usize::try_from(at) {
                    Ok(at) if at > begin => {
                        sizes.push(D::known(at - begin));
                        begin = at;
                    }
                    _ => {
                        return Err(KernelError::Attr(format!(
                            "split indices must be ascending and positive, found {at} after {begin}"
                        )))
                    }
                }
            }
            sizes.push(match dim.value() {
                Some(d) if begin < d => D::known(d - begin),
                Some(d) => {
                    return Err(KernelError::Attr(format!(
                        "split index {begin} is not below the dimension's size {d}"
                    )))
                }
                None => dim,
            });
            Ok(sizes)
        }
    }
}

impl Operator for Split {
    const NAME: &'static str = "split";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const TUPLE_OUTPUT: bool = true;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "cut along axis into a tuple";
    type Attrs = SplitAttrs;
    const PROJECT: Option<relay_compiler::op::ProjectFn> = Some(rule::split_field);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &SplitAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        if x.is_empty() {
            return Err(KernelError::Shape("cannot split a scalar".into()));
        }
        let axis = normalize_axis(attrs.axis, x.len())?;
        Ok(split_sizes(x[axis], &attrs.indices_or_sections)?
            .into_iter()
            .map(|len| {
                let mut s = x.to_vec();
                s[axis] = len;
                s
            })
            .collect())
    }

    fn dtypes(inputs: &[DType], attrs: &SplitAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        let n = match &attrs.indices_or_sections {
            IndicesOrSections::Sections(n) => to_positive(*n, "the number of sections")?,
            IndicesOrSections::Indices(list) => list.len() + 1,
        };
        Ok(vec![d; n])
    }

    fn reference(
        inputs: &[&Tensor],
        attrs: &SplitAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let axis = normalize_axis(attrs.axis, x.ndim())?;
        let mut start = 0;
        for out in outputs.iter_mut() {
            let len = out.shape()[axis];
            any_type!(x.dtype(), T => {
                let piece = x.view::<T>()?.slice_axis(axis, start, 1, len)?;
                out.view_mut::<T>()?.copy_from(&piece)?;
                Ok(())
            })?;
            start += len;
        }
        Ok(())
    }
}

/// `meshgrid((x0, x1, ...), indexing)`: for `n` vectors (0-d fields count as length 1), `n`
/// grids of one shape, grid `i` holding `x_i[p]` at every position whose coordinate along
/// `x_i`'s axis is `p`. With `"ij"` the grid is `(len0, len1, ...)`; with `"xy"` the first two
/// axes are swapped (NumPy's `meshgrid`). The fields share one dtype (any).
#[derive(Debug)]
pub struct Meshgrid;

/// The grid axis that runs along input `i` of `n` under `indexing`.
fn grid_axis(i: usize, n: usize, indexing: MeshgridIndexing) -> usize {
    match (indexing, i) {
        (MeshgridIndexing::Xy, 0) if n > 1 => 1,
        (MeshgridIndexing::Xy, 1) => 0,
        _ => i,
    }
}

impl Operator for Meshgrid {
    const NAME: &'static str = "meshgrid";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const TUPLE_INPUT: bool = true;
    const TUPLE_OUTPUT: bool = true;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "coordinate grids of a tuple of vectors";
    type Attrs = MeshgridAttrs;
    /// A compute rule has one output, so the grids are rewritten into operators that have
    /// one: see `meshgrid_broadcasts` below.
    const CANONICALIZE: Option<CanonicalizeRule<MeshgridAttrs>> = Some(meshgrid_broadcasts);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &MeshgridAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let n = inputs.len();
        let mut grid = vec![D::known(1); n];
        for (i, x) in inputs.iter().enumerate() {
            grid[grid_axis(i, n, a.indexing)] = match x {
                [] => D::known(1),
                [len] => *len,
                _ => {
                    return Err(KernelError::Shape(format!(
                        "field {i} must be a vector or a scalar, found shape {}",
                        shape_text(x)
                    )))
                }
            };
        }
        Ok(vec![grid; n])
    }

    fn dtypes(inputs: &[DType], _: &MeshgridAttrs) -> Result<Vec<DType>, KernelError> {
        let d = same_dtype(inputs)?;
        Ok(vec![Self::DTYPES.check(d)?; inputs.len()])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &MeshgridAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let n = inputs.len();
        for (i, (x, out)) in inputs.iter().zip(outputs.iter_mut()).enumerate() {
            let axis = grid_axis(i, n, a.indexing);
            copy_from_source(x, out, |p, src| src.iter_mut().for_each(|s| *s = p[axis]))?;
        }
        Ok(())
    }
}

/// [`Meshgrid`]'s canonical form: the tuple of grids, grid `i` as `broadcast_to` of field `i`
/// given size-1 axes after its own (`expand_dims`), the reference kernel's values by NumPy's
/// broadcasting; each grid is then an injective call that fuses with its consumers. Declines
/// grids with `?` sizes (`broadcast_to` takes a static shape).
fn meshgrid_broadcasts(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
    a: &MeshgridAttrs,
) -> Result<ExprId, String> {
    let (&[data], [RelType::Tuple(fields)]) = (args, types) else {
        return Err("meshgrid takes one tuple".into());
    };
    let shapes = fields
        .iter()
        .map(|f| match f {
            RelType::Tensor(t) => Ok(t.shape.as_slice()),
            _ => Err("a field is not a tensor".to_string()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let grid = Meshgrid::shapes(&shapes, a).map_err(message)?.into_iter().next().ok_or("no fields")?;
    let grid = grid
        .iter()
        .map(|d| d.value().map(|n| AttrValue::Int(n as i64)).ok_or("a grid of unknown size"))
        .collect::<Result<Vec<_>, _>>()?;
    let n = fields.len();
    let mut grids = Vec::with_capacity(n);
    for (i, shape) in shapes.iter().enumerate() {
        let mut x = b.field(data, i);
        let trailing = n - 1 - grid_axis(i, n, a.indexing);
        if shape.len() == 1 && trailing > 0 {
            let attrs = vec![("axis", AttrValue::Int(1)), ("num_newaxis", AttrValue::Int(trailing as i64))];
            x = b.call("expand_dims", vec![x], attrs);
        }
        grids.push(b.call("broadcast_to", vec![x], vec![("shape", AttrValue::List(grid.clone()))]));
    }
    Ok(b.tuple(grids))
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::Dim::{Any, Known as K};
    use IndicesOrSections::{Indices, Sections};

    #[test]
    fn split_sections() {
        assert_eq!(split_sizes(K(6), &Sections(3)).unwrap(), vec![K(2); 3]);
        assert_eq!(split_sizes(Any, &Sections(2)).unwrap(), vec![Any; 2]);
        assert!(split_sizes(K(7), &Sections(3)).unwrap_err().to_string().contains("evenly"));
        assert!(split_sizes(K(6), &Sections(0)).is_err());
    }

    #[test]
    fn split_indices() {
        assert_eq!(split_sizes(K(10), &Indices(vec![2, 5])).unwrap(), vec![K(2), K(3), K(5)]);
        assert_eq!(split_sizes(K(10), &Indices(vec![])).unwrap(), vec![K(10)]);
        assert_eq!(split_sizes(Any, &Indices(vec![1, 4])).unwrap(), vec![K(1), K(3), Any]);
        assert!(split_sizes(K(10), &Indices(vec![5, 2])).unwrap_err().to_string().contains("ascending"));
        assert!(split_sizes(K(10), &Indices(vec![0, 2])).is_err());
        assert!(split_sizes(K(4), &Indices(vec![2, 4])).unwrap_err().to_string().contains("not below"));
    }

    #[test]
    fn common_dims() {
        let (a, b, c) = ([K(2), Any], [Any, K(3)], [K(4), K(3)]);
        assert_eq!(common_dim(&[&a, &b], 0).unwrap(), K(2));
        assert_eq!(common_dim(&[&a, &b], 1).unwrap(), K(3));
        assert!(common_dim(&[&a, &c], 0).is_err());
    }

    #[test]
    fn meshgrid_swaps_the_first_two_axes_for_xy() {
        let xy = MeshgridAttrs { indexing: MeshgridIndexing::Xy };
        let out = Meshgrid::shapes::<usize>(&[&[2], &[3], &[]], &xy).unwrap();
        assert_eq!(out, vec![vec![3, 2, 1]; 3]);
        assert_eq!(Meshgrid::shapes::<usize>(&[&[4]], &xy).unwrap(), vec![vec![4]]);
        assert!(Meshgrid::shapes::<usize>(&[&[2, 2]], &MeshgridAttrs::default()).is_err());
    }
}
