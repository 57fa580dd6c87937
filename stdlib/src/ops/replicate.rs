//! Operators that repeat or reorder a tensor's elements along axes (TVM
//! `src/relay/op/tensor/transform.cc`, `include/tvm/topi/transform.h`): `tile`, `repeat`,
//! `reverse`. Injective: each output element is one input element, so each has a kir rule.

use super::index::copy_from_source;
use crate::attrs::{RepeatAttrs, ReverseAttrs, TileAttrs};
use crate::compute::util::{lazy, tensors};
use crate::error::KernelError;
use crate::kernels::util::{args, normalize_axis, only_output, to_positive, to_size};
use crate::kernels::Checked;
use crate::operator::{DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::kir::Index;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The repeating and reordering operators.
pub const REPLICATE: &[OpEntry] = &[OpEntry::of::<Tile>(), OpEntry::of::<Repeat>(), OpEntry::of::<Reverse>()];

/// Any dtype in, the same dtype out.
fn same_as_input(inputs: &[DType]) -> Result<Vec<DType>, KernelError> {
    let [d] = args(inputs)?;
    Ok(vec![DTypeSet::Any.check(d)?])
}

/// `d * n`, `?` staying `?`.
///
/// # Errors
/// A size that does not fit a Relay dimension (`i64`; an attribute far past any tensor that
/// could exist).
fn times<D: ShapeDim>(d: D, n: usize) -> Result<D, KernelError> {
    match d.value() {
        None => Ok(d),
        // Relay's dimensions are `i64`s: a size past `i64::MAX` overflows too.
        Some(v) => v
            .checked_mul(n)
            .filter(|&p| i64::try_from(p).is_ok())
            .map(D::known)
            .ok_or_else(|| KernelError::Attr(format!("a dimension of {v} repeated {n} times overflows"))),
    }
}

/// `tile(data, reps)`: `data` repeated `reps[i]` times along axis `i` (NumPy `tile`); `reps`
/// and the shape are aligned at the right, the shorter padded with 1s. Output rank
/// `max(rank, len(reps))`, dimension `i` is `shape[i] * reps[i]`.
#[derive(Debug)]
pub struct Tile;

/// The copies per output axis: `reps` padded to `rank` (at least its own length).
fn tile_reps(a: &TileAttrs, rank: usize) -> Result<Vec<usize>, KernelError> {
    let reps: Vec<usize> = a.reps.iter().map(|&r| to_size(r, "tile reps")).collect::<Result<_, _>>()?;
    let n = reps.len().max(rank);
    Ok(std::iter::repeat_n(1, n - reps.len()).chain(reps).collect())
}

impl Operator for Tile {
    const NAME: &'static str = "tile";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "data repeated reps[i] times along axis i";
    type Attrs = TileAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<TileAttrs>> = Some(|inputs, _, out| {
        let [x] = tensors(inputs)?;
        let lead = out.shape.len() - x.shape.len();
        let x = x.clone();
        Ok(lazy(move |k, idx| {
            let src: Vec<Index> =
                x.shape.iter().zip(&idx[lead..]).map(|(&d, i)| i.clone().floor_mod(d)).collect();
            x.at(k, &src)
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &TileAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        let reps = tile_reps(a, x.len())?;
        let lead = reps.len() - x.len();
        let dims = std::iter::repeat_n(D::known(1), lead).chain(x.iter().copied());
        Ok(vec![dims.zip(reps).map(|(d, r)| times(d, r)).collect::<Result<_, _>>()?])
    }

    fn dtypes(inputs: &[DType], _: &TileAttrs) -> Result<Vec<DType>, KernelError> {
        same_as_input(inputs)
    }

    fn reference(
        inputs: &[&Tensor],
        _: &TileAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let out = only_output(outputs)?;
        let (shape, lead) = (x.shape().to_vec(), out.ndim() - x.ndim());
        copy_from_source(x, out, |p, src| {
            for ((s, &i), &d) in src.iter_mut().zip(&p[lead..]).zip(&shape) {
                *s = i % d;
            }
        })
    }
}

/// `repeat(data, repeats, axis)`: each element repeated `repeats` times along `axis` (NumPy
/// `repeat` with a scalar count). Dimension `axis` becomes `shape[axis] * repeats`.
#[derive(Debug)]
pub struct Repeat;

impl Operator for Repeat {
    const NAME: &'static str = "repeat";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "each element repeated along axis";
    type Attrs = RepeatAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<RepeatAttrs>> = Some(|inputs, a, _| {
        let [x] = tensors(inputs)?;
        let axis = normalize_axis(a.axis, x.shape.len()).map_err(|e| e.to_string())?;
        let repeats = a.repeats;
        let x = x.clone();
        Ok(lazy(move |k, idx| {
            let mut src = idx.to_vec();
            src[axis] = src[axis].clone().floor_div(repeats);
            x.at(k, &src)
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &RepeatAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        let axis = normalize_axis(a.axis, x.len())?;
        let repeats = to_positive(a.repeats, "repeats")?;
        let mut out = x.to_vec();
        out[axis] = times(x[axis], repeats)?;
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &RepeatAttrs) -> Result<Vec<DType>, KernelError> {
        same_as_input(inputs)
    }

    fn reference(
        inputs: &[&Tensor],
        a: &RepeatAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let axis = normalize_axis(a.axis, x.ndim())?;
        let repeats = to_positive(a.repeats, "repeats")?;
        copy_from_source(x, only_output(outputs)?, |p, src| {
            src.copy_from_slice(p);
            src[axis] /= repeats;
        })
    }
}

/// `reverse(data, axis)`: the elements in reverse order along `axis` (NumPy `flip`). Same
/// shape and dtype.
#[derive(Debug)]
pub struct Reverse;

impl Operator for Reverse {
    const NAME: &'static str = "reverse";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "elements in reverse order along axis";
    type Attrs = ReverseAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<ReverseAttrs>> = Some(|inputs, a, _| {
        let [x] = tensors(inputs)?;
        let axis = normalize_axis(a.axis, x.shape.len()).map_err(|e| e.to_string())?;
        let x = x.clone();
        Ok(lazy(move |k, idx| {
            let mut src = idx.to_vec();
            src[axis] = (x.shape[axis] - 1) - src[axis].clone();
            x.at(k, &src)
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &ReverseAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        normalize_axis(a.axis, x.len())?;
        Ok(vec![x.to_vec()])
    }

    fn dtypes(inputs: &[DType], _: &ReverseAttrs) -> Result<Vec<DType>, KernelError> {
        same_as_input(inputs)
    }

    fn reference(
        inputs: &[&Tensor],
        a: &ReverseAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let axis = normalize_axis(a.axis, x.ndim())?;
        let n = x.shape()[axis];
        copy_from_source(x, only_output(outputs)?, |p, src| {
            src.copy_from_slice(p);
            src[axis] = n - 1 - p[axis];
        })
    }
}
