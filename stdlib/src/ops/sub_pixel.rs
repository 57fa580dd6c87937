//! `nn.depth_to_space` and `nn.space_to_depth` (TVM `src/relay/op/nn/nn.cc`, `SubPixelAttrs`):
//! square blocks of pixels moved between the channel axis and the two spatial axes of an NCHW
//! tensor. Injective: each output element is one input element, so both have kir rules.

use super::index::copy_from_source;
use crate::attrs::{SubPixelAttrs, SubPixelMode};
use crate::compute::util::{lazy, tensors};
use crate::error::KernelError;
use crate::kernels::util::{args, only_output, to_positive};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::kir::Index;
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

/// The input channel of output channel `c` at block offsets `(bh, bw)`.
fn depth_channel(mode: SubPixelMode, b: usize, channels: usize, c: usize, bh: usize, bw: usize) -> usize {
    match mode {
        SubPixelMode::Dcr => (bh * b + bw) * channels + c,
        SubPixelMode::Crd => (c * b + bh) * b + bw,
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
        // The relation has checked the layout, rank and block size.
        let b = a.block_size;
        let (x, mode, c_out) = (x.clone(), a.mode, out.shape[1]);
        Ok(lazy(move |k, idx| {
            let (bh, bw) = (idx[2].clone().floor_mod(b), idx[3].clone().floor_mod(b));
            let c = idx[1].clone();
            let channel: Index = match mode {
                SubPixelMode::Dcr => (bh * b + bw) * c_out + c,
                SubPixelMode::Crd => (c * b + bh) * b + bw,
            };
            let src = [idx[0].clone(), channel, idx[2].clone().floor_div(b), idx[3].clone().floor_div(b)];
            x.at(k, &src)
        }))
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
        copy_from_source(x, out, |p, src| {
            let (bh, bw) = (p[2] % b, p[3] % b);
            src.copy_from_slice(&[
                p[0],
                depth_channel(a.mode, b, channels, p[1], bh, bw),
                p[2] / b,
                p[3] / b,
            ]);
        })
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
        // The relation has checked the layout, rank and block size.
        let b = a.block_size;
        let (x, c_in) = (x.clone(), x.shape[1]);
        Ok(lazy(move |k, idx| {
            let (c, off) = (idx[1].clone().floor_mod(c_in), idx[1].clone().floor_div(c_in));
            let h = idx[2].clone() * b + off.clone().floor_div(b);
            let w = idx[3].clone() * b + off.floor_mod(b);
            x.at(k, &[idx[0].clone(), c, h, w])
        }))
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
        copy_from_source(x, only_output(outputs)?, |p, src| {
            let (c, off) = (p[1] % c_in, p[1] / c_in);
            src.copy_from_slice(&[p[0], c, p[2] * b + off / b, p[3] * b + off % b]);
        })
    }
}
