//! `nn.space_to_batch_nd` and `nn.batch_to_space_nd` (TVM `src/relay/op/nn/nn.cc`,
//! `SpaceToBatchNDAttrs`/`BatchToSpaceNDAttrs`; TensorFlow's operators of the same names): the
//! `M` spatial axes after the batch axis are cut into blocks of `block_shape`, and the offsets
//! within a block move into the batch axis (and back). Output batch `blk * N + n` holds sample
//! `n` at block offset `blk`, the offsets numbered row-major. Injective: each output element is
//! one input element or padding, so both have kir rules.

use crate::attrs::{BatchToSpaceNdAttrs, SpaceToBatchNdAttrs};
use crate::compute::util::{lazy, lit, tensors};
use crate::error::KernelError;
use crate::kernels::util::{any_type, args, for_each_index, only_output, to_positive, to_size};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use crate::ops::index::copy_from_source;
use crate::ops::sub_pixel::{divided, multiplied};
use relay_compiler::kir::{Expr, Index};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Element, Scalar, Tensor};

/// The space/batch operators.
pub const SPACE_BATCH: &[OpEntry] = &[OpEntry::of::<SpaceToBatchNd>(), OpEntry::of::<BatchToSpaceNd>()];

/// The block side of each spatial axis, and each axis's `[start, end]` pair.
type Blocks = (Vec<usize>, Vec<(usize, usize)>);

/// The block side of each spatial axis and its `[start, end]` pair (`what`: `paddings` or
/// `crops`), for an input of rank `rank`.
///
/// # Errors
/// No block axis, a rank below `M + 1`, a pair count other than `M`, a side below 1, a
/// negative or malformed pair.
fn blocks(
    op: &str,
    rank: usize,
    block_shape: &[i64],
    pairs: &[Vec<i64>],
    what: &str,
) -> Result<Blocks, KernelError> {
    let m = block_shape.len();
    if m == 0 {
        return Err(KernelError::Attr(format!("{op} needs at least one block_shape entry")));
    }
    if rank < m + 1 {
        return Err(KernelError::Shape(format!(
            "{op} with {m} block axes needs a tensor of rank {} or more (batch, spatial axes, rest), got rank {rank}",
            m + 1
        )));
    }
    if pairs.len() != m {
        return Err(KernelError::Attr(format!("{what} gives {} pair(s) for {m} block axes", pairs.len())));
    }
    let sides = block_shape.iter().map(|&b| to_positive(b, "block_shape")).collect::<Result<Vec<_>, _>>()?;
    let pairs = pairs
        .iter()
        .map(|p| match p.as_slice() {
            &[start, end] => Ok((to_size(start, what)?, to_size(end, what)?)),
            _ => Err(KernelError::Attr(format!("{what} entry {p:?} must be [start, end]"))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((sides, pairs))
}

/// The number of positions in a block.
fn block_area(sides: &[usize]) -> Result<usize, KernelError> {
    sides
        .iter()
        .try_fold(1usize, |n, &b| n.checked_mul(b))
        .ok_or_else(|| KernelError::Attr(format!("block_shape {sides:?} overflows")))
}

/// `nn.space_to_batch_nd(data, block_shape, paddings, pad_value)`: `(N, S_1..S_M, R..)` to
/// `(N * Π b_i, (S_i + before_i + after_i) / b_i .., R..)`; each padded spatial size must be a
/// multiple of its block side. Output `(blk * N + n, o_i.., r..)` reads `(n, o_i * b_i + k_i -
/// before_i.., r..)`, where `k` is block offset `blk`, or `pad_value` where that lies in the
/// padding. Any dtype.
#[derive(Debug)]
pub struct SpaceToBatchNd;

/// Writes the input position that element `o` of `nn.space_to_batch_nd`'s output reads into
/// `at`; `false` where it reads padding. `batch` (the input's) is not 0 when there is an `o`.
fn space_source(
    o: &[usize],
    batch: usize,
    sides: &[usize],
    pads: &[(usize, usize)],
    shape: &[usize],
    at: &mut [usize],
) -> bool {
    let m = sides.len();
    let mut block = o[0] / batch;
    at[0] = o[0] % batch;
    let mut inside = true;
    for i in (0..m).rev() {
        let offset = block % sides[i];
        block /= sides[i];
        let p = (o[1 + i] * sides[i] + offset) as i128 - pads[i].0 as i128;
        inside &= p >= 0 && p < shape[1 + i] as i128;
        at[1 + i] = p.max(0) as usize;
    }
    at[1 + m..].copy_from_slice(&o[1 + m..]);
    inside
}

impl Operator for SpaceToBatchNd {
    const NAME: &'static str = "nn.space_to_batch_nd";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "padded spatial blocks moved into the batch axis";
    type Attrs = SpaceToBatchNdAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<SpaceToBatchNdAttrs>> = Some(|inputs, a, _| {
        let [x] = tensors(inputs)?;
        let (sides, pads) = blocks(Self::NAME, x.shape.len(), &a.block_shape, &a.paddings, "paddings")
            .map_err(|e| e.to_string())?;
        if x.shape.contains(&0) {
            return Err("an empty nn.space_to_batch_nd runs in the reference kernel".into());
        }
        let (x, batch, pad_value) = (x.clone(), x.shape[0], a.pad_value);
        Ok(lazy(move |k, idx| {
            let mut block = idx[0].clone().floor_div(batch);
            let mut src = idx.to_vec();
            src[0] = idx[0].clone().floor_mod(batch);
            let mut inside = Expr::bool(true);
            for i in (0..sides.len()).rev() {
                let (b, n) = (sides[i] as i64, x.shape[1 + i]);
                let p = idx[1 + i].clone() * b + block.clone().floor_mod(b) - pads[i].0 as i64;
                block = block.floor_div(b);
                inside = inside
                    .and(Expr::index(p.clone()).ge(Expr::i64(0)))
                    .and(Expr::index(p.clone()).lt(Expr::i64(n)));
                // Clamped so that the load stays in bounds where the select picks the padding.
                src[1 + i] = p.clamp(0, n - 1);
            }
            Expr::select(inside, x.at(k, &src), lit(x.dtype, pad_value))
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &SpaceToBatchNdAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        let (sides, pads) = blocks(Self::NAME, x.len(), &a.block_shape, &a.paddings, "paddings")?;
        let mut out = vec![multiplied(x[0], block_area(&sides)?)?];
        for (i, (&b, &(before, after))) in sides.iter().zip(&pads).enumerate() {
            let padded = match x[1 + i].value() {
                None => x[1 + i],
                Some(n) => D::known(
                    n.checked_add(before)
                        .and_then(|n| n.checked_add(after))
                        .ok_or_else(|| KernelError::Attr("paddings overflow".into()))?,
                ),
            };
            out.push(divided(padded, b, &format!("padded spatial axis {} of size", i + 1))?);
        }
        out.extend_from_slice(&x[1 + sides.len()..]);
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &SpaceToBatchNdAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![Self::DTYPES.check(d)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &SpaceToBatchNdAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let (sides, pads) = blocks(Self::NAME, x.ndim(), &a.block_shape, &a.paddings, "paddings")?;
        let out = only_output(outputs)?;
        let out_shape = out.shape().to_vec();
        let shape = x.shape();
        any_type!(x.dtype(), T => {
            let pad = T::from_scalar(Scalar::Float(a.pad_value));
            let src = x.view::<T>()?;
            let mut dst = out.as_mut_slice::<T>()?.iter_mut();
            let mut at = vec![0; shape.len()];
            for_each_index(&out_shape, |o| {
                let inside = space_source(o, shape[0], &sides, &pads, shape, &mut at);
                let value = if inside { src.get(&at).unwrap_or(pad) } else { pad };
                if let Some(d) = dst.next() {
                    *d = value;
                }
                Ok(())
            })
        })
    }
}

/// `nn.batch_to_space_nd(data, block_shape, crops)`: `(N * Π b_i, S_i.., R..)` to
/// `(N, S_i * b_i − start_i − end_i.., R..)`, the inverse of `nn.space_to_batch_nd` with
/// `crops` removed where that added padding. Output `(n, q_i.., r..)` reads
/// `(blk * N + n, (q_i + start_i) / b_i.., r..)`, where `blk` numbers the block offsets
/// `k_i = (q_i + start_i) % b_i` row-major. Any dtype.
#[derive(Debug)]
pub struct BatchToSpaceNd;

impl Operator for BatchToSpaceNd {
    const NAME: &'static str = "nn.batch_to_space_nd";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "batch blocks moved back into the spatial axes, cropped";
    type Attrs = BatchToSpaceNdAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<BatchToSpaceNdAttrs>> = Some(|inputs, a, out| {
        let [x] = tensors(inputs)?;
        let (sides, crops) = blocks(Self::NAME, x.shape.len(), &a.block_shape, &a.crops, "crops")
            .map_err(|e| e.to_string())?;
        let (x, batch) = (x.clone(), out.shape[0]);
        Ok(lazy(move |k, idx| {
            let mut src = idx.to_vec();
            let mut block = Index::from(0i64);
            for (i, (&b, &(start, _))) in sides.iter().zip(&crops).enumerate() {
                let (b, q) = (b as i64, idx[1 + i].clone() + start as i64);
                block = block * b + q.clone().floor_mod(b);
                src[1 + i] = q.floor_div(b);
            }
            src[0] = block * batch + idx[0].clone();
            x.at(k, &src)
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &BatchToSpaceNdAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        let (sides, crops) = blocks(Self::NAME, x.len(), &a.block_shape, &a.crops, "crops")?;
        let mut out = vec![divided(x[0], block_area(&sides)?, "the batch size")?];
        for (i, (&b, &(start, end))) in sides.iter().zip(&crops).enumerate() {
            out.push(match x[1 + i].value() {
                None => x[1 + i],
                Some(n) => {
                    let full =
                        n.checked_mul(b).ok_or_else(|| KernelError::Shape(format!("{n} * {b} overflows")))?;
                    let kept = full.checked_sub(start).and_then(|k| k.checked_sub(end)).ok_or_else(|| {
                        KernelError::Shape(format!(
                            "crops [{start}, {end}] of spatial axis {} exceed its size {full} in {}",
                            i + 1,
                            shape_text(x)
                        ))
                    })?;
                    D::known(kept)
                }
            });
        }
        out.extend_from_slice(&x[1 + sides.len()..]);
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &BatchToSpaceNdAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![Self::DTYPES.check(d)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &BatchToSpaceNdAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let (sides, crops) = blocks(Self::NAME, x.ndim(), &a.block_shape, &a.crops, "crops")?;
        let out = only_output(outputs)?;
        let (batch, m) = (out.shape()[0], sides.len());
        copy_from_source(x, out, |p, src| {
            let mut block = 0;
            for i in 0..m {
                let q = p[1 + i] + crops[i].0;
                block = block * sides[i] + q % sides[i];
                src[1 + i] = q / sides[i];
            }
            src[0] = block * batch + p[0];
            src[1 + m..].copy_from_slice(&p[1 + m..]);
        })
    }
}
