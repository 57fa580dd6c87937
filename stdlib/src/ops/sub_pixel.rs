//! `nn.depth_to_space` and `nn.space_to_depth` (TVM `src/relay/op/nn/nn.cc`, `SubPixelAttrs`):
//! square blocks of pixels moved between the channel axis and the two spatial axes of an NCHW
//! tensor. Injective: each output element is one input element, so both have kir rules.

use super::index::{copy_from_source, Coordinate};
use crate::attrs::{SubPixelAttrs, SubPixelMode};
use crate::compute::util::{lazy, tensors};
use crate::error::KernelError;
use crate::kernels::util::{args, only_output, to_positive};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// The sub-pixel operators.
pub const SUB_PIXEL: &[OpEntry] = &[OpEntry::of::<DepthToSpace>(), OpEntry::of::<SpaceToDepth>()];

/// The block side, for an NCHW input of `shape`.
///
/// # Errors
/// Another layout, a rank other than 4, or a block size below 1.
fn block<D: ShapeDim>(op: &str, shape: &[D], a: &SubPixelAttrs) -> Result<usize, KernelError> {
    if a.layout != "NCHW" {
        return Err(KernelError::Attr(format!("{op} supports layout NCHW only, got `{}`", a.layout)));
    }
    if shape.len() != 4 {
        return Err(KernelError::Shape(format!("{op} needs a 4-d NCHW tensor, got {}", shape_text(shape))));
    }
    to_positive(a.block_size, "block_size")
}

/// `d / by`, `?` staying `?`.
///
/// # Errors
/// A known `d` that `by` does not divide (`what` names it).
pub(crate) fn divided<D: ShapeDim>(d: D, by: usize, what: &str) -> Result<D, KernelError> {
    match d.value() {
        None => Ok(d),
        Some(v) if v % by == 0 => Ok(D::known(v / by)),
        Some(v) => Err(KernelError::Shape(format!("{what} {v} is not a multiple of {by}"))),
    }
}

/// `d * by`, `?` staying `?`.
pub(crate) fn multiplied<D: ShapeDim>(d: D, by: usize) -> Result<D, KernelError> {
    match d.value() {
        None => Ok(d),
        Some(v) => v
            .checked_mul(by)
            .map(D::known)
            .ok_or_else(|| KernelError::Shape(format!("dimension {v} times {by} overflows"))),
    }
}

/// `nn.depth_to_space(data, block_size, layout, mode)`: `(N, C, H, W)` to `(N, C / b^2, H * b,
/// W * b)`; output `(n, c, h, w)` reads channel `((h % b) * b + w % b) * C / b^2 + c` (DCR) or
/// `(c * b + h % b) * b + w % b` (CRD) at `(h / b, w / b)`. Any dtype.
#[derive(Debug)]
pub struct DepthToSpace;

/// The input position that output position `p` reads, for `channels` output channels and
/// block side `b`: written once over [`Coordinate`] for the reference kernel and the kir rule.
fn depth_source<C: Coordinate>(mode: SubPixelMode, b: usize, channels: usize, p: &[C]) -> [C; 4] {
    let (bh, bw) = (p[2].clone().modulo(b), p[3].clone().modulo(b));
    let c = p[1].clone();
    let channel = match mode {
        SubPixelMode::Dcr => bh.times(b).plus(bw).times(channels).plus(c),
        SubPixelMode::Crd => c.times(b).plus(bh).times(b).plus(bw),
    };
    [p[0].clone(), channel, p[2].clone().over(b), p[3].clone().over(b)]
}

/// The input position that output position `p` of `nn.space_to_depth` reads, for `channels`
/// input channels and block side `b`.
fn space_source<C: Coordinate>(b: usize, channels: usize, p: &[C]) -> [C; 4] {
    let (c, off) = (p[1].clone().modulo(channels), p[1].clone().over(channels));
    let h = p[2].clone().times(b).plus(off.clone().over(b));
    let w = p[3].clone().times(b).plus(off.modulo(b));
    [p[0].clone(), c, h, w]
}

/// The block side and a channel count of a kir rule's call, as `usize` (the relation has
/// checked the layout, rank and block size).
fn rule_sizes(a: &SubPixelAttrs, channels: i64) -> Result<(usize, usize), String> {
    match (usize::try_from(a.block_size), usize::try_from(channels)) {
        (Ok(b), Ok(c)) if b > 0 => Ok((b, c)),
        _ => Err("block_size must be positive".into()),
    }
}

impl Operator for DepthToSpace {
    const NAME: &'static str = "nn.depth_to_space";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "channel blocks moved into space";
    type Attrs = SubPixelAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<SubPixelAttrs>> = Some(|inputs, a, out| {
        let [x] = tensors(inputs)?;
        let (b, channels) = rule_sizes(a, out.shape[1])?;
        let (x, mode) = (x.clone(), a.mode);
        Ok(lazy(move |k, idx| x.at(k, &depth_source(mode, b, channels, idx))))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &SubPixelAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        let b = block(Self::NAME, x, a)?;
        let area = b.checked_mul(b).ok_or_else(|| KernelError::Attr(format!("block_size {b} overflows")))?;
        Ok(vec![vec![
            x[0],
            divided(x[1], area, "the channel count")?,
            multiplied(x[2], b)?,
            multiplied(x[3], b)?,
        ]])
    }

    fn dtypes(inputs: &[DType], _: &SubPixelAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![Self::DTYPES.check(d)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &SubPixelAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let b = block(Self::NAME, x.shape(), a)?;
        let out = only_output(outputs)?;
        let channels = out.shape()[1];
        copy_from_source(x, out, |p, src| src.copy_from_slice(&depth_source(a.mode, b, channels, p)))
    }
}

/// `nn.space_to_depth(data, block_size, layout)`: `(N, C, H, W)` to `(N, C * b^2, H / b, W /
/// b)`, the inverse of `nn.depth_to_space` in DCR mode: output channel `(bh * b + bw) * C + c`
/// reads `(c, h * b + bh, w * b + bw)`. Any dtype.
#[derive(Debug)]
pub struct SpaceToDepth;

impl Operator for SpaceToDepth {
    const NAME: &'static str = "nn.space_to_depth";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "spatial blocks moved into channels";
    type Attrs = SubPixelAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<SubPixelAttrs>> = Some(|inputs, a, _| {
        let [x] = tensors(inputs)?;
        let (b, channels) = rule_sizes(a, x.shape[1])?;
        let x = x.clone();
        Ok(lazy(move |k, idx| x.at(k, &space_source(b, channels, idx))))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &SubPixelAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        let b = block(Self::NAME, x, a)?;
        let area = b.checked_mul(b).ok_or_else(|| KernelError::Attr(format!("block_size {b} overflows")))?;
        Ok(vec![vec![
            x[0],
            multiplied(x[1], area)?,
            divided(x[2], b, "the height")?,
            divided(x[3], b, "the width")?,
        ]])
    }

    fn dtypes(inputs: &[DType], _: &SubPixelAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![Self::DTYPES.check(d)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &SubPixelAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let b = block(Self::NAME, x.shape(), a)?;
        let c_in = x.shape()[1];
        copy_from_source(x, only_output(outputs)?, |p, src| src.copy_from_slice(&space_source(b, c_in, p)))
    }
}
