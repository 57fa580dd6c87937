//! `vision.yolo_reorg` (TVM `src/relay/op/vision/yolo.cc` `YoloReorgRel`,
//! `topi.vision.reorg`): Darknet's reorg layer of YOLOv2, which moves `stride x stride`
//! blocks of the spatial axes into the channels.

use crate::attrs::YoloReorgAttrs;
use crate::error::KernelError;
use crate::kernels::util::{any_type, args, only_output, to_positive};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
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
        let [batch, c, h, w] = <[usize; 4]>::try_from(data.shape())
            .map_err(|_| KernelError::Shape(format!("{NAME}: data is not 4-d")))?;
        let oc = c / (s * s);
        let out = only_output(outputs)?;
        any_type!(data.dtype(), T => {
            let x = data.as_slice::<T>()?;
            let mut values = out.as_mut_slice::<T>()?.iter_mut();
            for b in 0..batch {
                for k in 0..c {
                    let (c2, offset) = (k % oc, k / oc);
                    for j in 0..h {
                        let h2 = j * s + offset / s;
                        for i in 0..w {
                            let w2 = i * s + offset % s;
                            let from = w2 + w * s * (h2 + h * s * (c2 + oc * b));
                            if let (Some(d), Some(&v)) = (values.next(), x.get(from)) {
                                *d = v;
                            }
                        }
                    }
                }
            }
            Ok(())
        })
    }
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
