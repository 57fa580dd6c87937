//! `vision.yolo_reorg` (TVM `src/relay/op/vision/yolo.cc` `YoloReorgRel`,
//! `topi.vision.reorg`): Darknet's reorg layer of YOLOv2, which moves `stride x stride`
//! blocks of the spatial axes into the channels.

use crate::attrs::YoloReorgAttrs;
use crate::compute::util::{lazy, tensors};
use crate::error::KernelError;
use crate::kernels::util::{args, only_output, to_positive};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use crate::ops::index::{coordinates, copy_from_source, flat_position, Coordinate};
use relay_compiler::op::OpPattern;
use relay_compiler::op::{ComputeInput, OutType, TensorDef};
use relay_devices::{DType, Tensor};

/// `vision.yolo_reorg(data)`: data `[n, c, h, w]` gives `[n, c * s * s, h / s, w / s]` (`s` the
/// stride), with Darknet's element order (TVM `topi.testing.reorg_python`): output element
/// `e` (counted row-major over the input's shape `(b, k, j, i)`) is the input's flat element
/// `w2 + w * s * (h2 + h * s * (k % oc + oc * b))`, where `oc = c / s^2`, `w2 = i * s + (k / oc) %
/// s` and `h2 = j * s + (k / oc) / s`. `c` must divide by `s^2` and `h`, `w` by `s`. Any dtype.
#[derive(Debug)]
pub struct YoloReorg;

/// The name, for messages.
const NAME: &str = "vision.yolo_reorg";

impl Operator for YoloReorg {
    const NAME: &'static str = NAME;
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "Darknet's reorg: stride x stride blocks into channels";
    type Attrs = YoloReorgAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<YoloReorgAttrs>> = Some(compute);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &YoloReorgAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data] = args(inputs)?;
        let s = to_positive(a.stride, "stride")?;
        let &[n, c, h, w] = data else {
            return Err(KernelError::Shape(format!(
                "{NAME} needs 4-d data (NCHW), found {}",
                shape_text(data)
            )));
        };
        let block = s.checked_mul(s).ok_or_else(|| KernelError::Attr(format!("stride {s} is too large")))?;
        let divided = |d: D, by: usize, what: &str| match d.value() {
            None => Ok(d),
            Some(v) if v % by == 0 => Ok(D::known(v / by)),
            Some(v) => Err(KernelError::Shape(format!(
                "{NAME}: the {what} {v} of {} does not divide by {by} (stride={s})",
                shape_text(data)
            ))),
        };
        divided(c, block, "channel count")?;
        let channels = match c.value() {
            Some(v) => {
                D::known(v.checked_mul(block).ok_or_else(|| KernelError::Shape("too many channels".into()))?)
            }
            None => c,
        };
        Ok(vec![vec![n, channels, divided(h, s, "height")?, divided(w, s, "width")?]])
    }

    fn dtypes(inputs: &[DType], _: &YoloReorgAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![Self::DTYPES.check(d)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &YoloReorgAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data] = args(inputs)?;
        let s = to_positive(a.stride, "stride")?;
        let shape = <[usize; 4]>::try_from(data.shape())
            .map_err(|_| KernelError::Shape(format!("{NAME}: data is not 4-d")))?;
        let out = only_output(outputs)?;
        let out_shape = out.shape().to_vec();
        copy_from_source(data, out, |p, src| src.clone_from_slice(&source(p, &out_shape, shape, s)))
    }
}

/// The input position that output position `q` (of `out_shape`) reads, for data of `shape`
/// and stride `s` (the relation has checked that `s^2` divides the channels): Darknet's order
/// of the type's doc, written once for the reference kernel and the kir rule.
fn source<C: Coordinate>(q: &[C], out_shape: &[usize], shape: [usize; 4], s: usize) -> Vec<C> {
    let [_, c, h, w] = shape;
    let oc = c / (s * s);
    let mut at: [C; 4] = std::array::from_fn(|_| C::constant(0));
    coordinates(&shape, &flat_position(out_shape, q), &mut at);
    let [b, k, j, i] = at;
    let (c2, offset) = (k.clone().modulo(oc), k.over(oc));
    let h2 = j.times(s).plus(offset.clone().over(s));
    let w2 = i.times(s).plus(offset.modulo(s));
    let from = w2.plus(h2.plus(c2.plus(b.times(oc)).times(h * s)).times(w * s));
    let mut source = vec![C::constant(0); 4];
    coordinates(&shape, &from, &mut source);
    source
}

/// `vision.yolo_reorg`'s kir rule: each output element reads the one [`source`] names.
fn compute(inputs: &[ComputeInput], a: &YoloReorgAttrs, out: &OutType) -> Result<TensorDef, String> {
    let [x] = tensors(inputs)?;
    let dims = |shape: &[i64]| shape.iter().map(|&d| usize::try_from(d).ok()).collect::<Option<Vec<usize>>>();
    let (Some(shape), Some(out_shape), Ok(s)) = (dims(&x.shape), dims(&out.shape), usize::try_from(a.stride))
    else {
        return Err("negative sizes".into());
    };
    let shape = <[usize; 4]>::try_from(shape).map_err(|_| format!("{NAME}: data is not 4-d"))?;
    if s == 0 || shape[1] % (s * s) != 0 {
        return Err(format!("{NAME}: stride {s} does not divide the channels"));
    }
    let x = x.clone();
    Ok(lazy(move |k, q| x.at(k, &source(q, &out_shape, shape, s))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_errors() {
        let a = YoloReorgAttrs { stride: 2 };
        assert_eq!(YoloReorg::shapes::<usize>(&[&[1, 8, 4, 6]], &a).unwrap(), vec![vec![1, 32, 2, 3]]);
        let err = YoloReorg::shapes::<usize>(&[&[1, 8, 5, 6]], &a).unwrap_err();
        assert!(err.to_string().contains("height 5"), "{err}");
        assert!(YoloReorg::shapes::<usize>(&[&[1, 6, 4, 6]], &a).is_err());
        assert!(YoloReorg::shapes::<usize>(&[&[1, 8, 4, 6]], &YoloReorgAttrs { stride: 0 }).is_err());
    }
}
