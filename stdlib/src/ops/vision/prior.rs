//! `vision.multibox_prior` (TVM `src/relay/op/vision/multibox_op.cc` `MultiboxPriorRel`,
//! `topi.vision.ssd.multibox_prior`): the anchor boxes of an SSD feature map.

use crate::attrs::MultiBoxPriorAttrs;
use crate::error::KernelError;
use crate::kernels::util::{args, only_output};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use crate::ops::image::sample::write_values;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// `vision.multibox_prior(data)`: for data `[n, c, h, w]`, `[1, h * w * (s + r - 1), 4]` boxes
/// `(x1, y1, x2, y2)` of `s = len(sizes)` sizes and `r = len(ratios)` ratios around each
/// centre `((j + offset_w) * step_w, (i + offset_h) * step_h)`, in fractions of the image.
/// Box `k < s` has half-width `sizes[k] * h / w / 2` and half-height `sizes[k] / 2`; box
/// `s + m` those of `sizes[0]` with `ratios[m + 1]`: width times, height over its square
/// root. With `clip`, coordinates are clamped into `[0, 1]`. Float data; only its shape is
/// read; the boxes have its dtype.
#[derive(Debug)]
pub struct MultiBoxPrior;

/// The name, for messages.
const NAME: &str = "vision.multibox_prior";

/// The boxes per position: `len(sizes) + len(ratios) - 1`.
fn boxes_per_position(a: &MultiBoxPriorAttrs) -> Result<usize, KernelError> {
    if a.sizes.is_empty() || a.ratios.is_empty() {
        return Err(KernelError::Attr(format!("{NAME} needs at least one size and one ratio")));
    }
    for (name, v) in [("steps", &a.steps), ("offsets", &a.offsets)] {
        if v.len() != 2 {
            return Err(KernelError::Attr(format!(
                "attribute `{name}` must have 2 values ([h, w]), found {}",
                v.len()
            )));
        }
    }
    if let Some(r) = a.ratios.iter().find(|&&r| r.is_nan() || r <= 0.0) {
        return Err(KernelError::Attr(format!("attribute `ratios` must be positive, found {r}")));
    }
    Ok(a.sizes.len() + a.ratios.len() - 1)
}

impl Operator for MultiBoxPrior {
    const NAME: &'static str = NAME;
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "SSD anchor boxes of a feature map";
    type Attrs = MultiBoxPriorAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &MultiBoxPriorAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data] = args(inputs)?;
        let &[_, _, h, w] = data else {
            return Err(KernelError::Shape(format!(
                "{NAME} needs 4-d data [batch, channel, height, width], found {}",
                shape_text(data)
            )));
        };
        let count = D::product(&[h, w, D::known(boxes_per_position(a)?)])?;
        Ok(vec![vec![D::known(1), count, D::known(4)]])
    }

    fn dtypes(inputs: &[DType], _: &MultiBoxPriorAttrs) -> Result<Vec<DType>, KernelError> {
        let [d] = args(inputs)?;
        Ok(vec![Self::DTYPES.check(d)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &MultiBoxPriorAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [data] = args(inputs)?;
        let per = boxes_per_position(a)?;
        let (h, w) = match *data.shape() {
            [_, _, h, w] => (h, w),
            _ => return Err(KernelError::Shape(format!("{NAME}: data is not 4-d"))),
        };
        // TVM: a step <= 0 is the spacing that spreads the centres over the whole image.
        let step = |s: f64, size: usize| if s > 0.0 { s } else { 1.0 / size as f64 };
        let (step_h, step_w) = (step(a.steps[0], h), step(a.steps[1], w));
        let aspect = h as f64 / w as f64;
        let mut values = Vec::with_capacity(h * w * per * 4);
        for i in 0..h {
            let cy = (i as f64 + a.offsets[0]) * step_h;
            for j in 0..w {
                let cx = (j as f64 + a.offsets[1]) * step_w;
                for k in 0..per {
                    let (half_w, half_h) = match a.sizes.get(k) {
                        Some(&s) => (s * aspect / 2.0, s / 2.0),
                        None => {
                            let root = a.ratios[k + 1 - a.sizes.len()].sqrt();
                            (a.sizes[0] * aspect * root / 2.0, a.sizes[0] / root / 2.0)
                        }
                    };
                    for v in [cx - half_w, cy - half_h, cx + half_w, cy + half_h] {
                        values.push(if a.clip { v.clamp(0.0, 1.0) } else { v });
                    }
                }
            }
        }
        write_values(only_output(outputs)?, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::Dim::{Any, Known as K};

    #[test]
    fn shapes_and_errors() {
        let a =
            MultiBoxPriorAttrs { sizes: vec![0.3, 0.2], ratios: vec![1.0, 2.0, 0.5], ..Default::default() };
        assert_eq!(MultiBoxPrior::shapes::<usize>(&[&[1, 3, 4, 5]], &a).unwrap(), vec![vec![1, 80, 4]]);
        assert_eq!(
            MultiBoxPrior::shapes(&[&[K(1), K(3), Any, K(5)][..]], &a).unwrap(),
            vec![vec![K(1), Any, K(4)]]
        );
        assert!(MultiBoxPrior::shapes::<usize>(&[&[3, 4, 5]], &a).is_err());
        let empty = MultiBoxPriorAttrs { sizes: vec![], ..a.clone() };
        assert!(MultiBoxPrior::shapes::<usize>(&[&[1, 3, 4, 5]], &empty).is_err());
        let steps = MultiBoxPriorAttrs { steps: vec![0.1], ..a };
        let err = MultiBoxPrior::shapes::<usize>(&[&[1, 3, 4, 5]], &steps).unwrap_err();
        assert!(err.to_string().contains("`steps` must have 2 values"), "{err}");
    }
}
