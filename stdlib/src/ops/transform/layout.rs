//! `layout_transform`: a tensor moved between data layouts such as `NCHW`, `NHWC` and the
//! blocked `NCHW8c` (TVM `src/relay/op/tensor/transform.cc`, `src/tir/ir/data_layout.cc`'s
//! `BijectiveLayout`).

use super::same_as_input;
use crate::attrs::LayoutTransformAttrs;
use crate::compute::util::{lazy, tensors};
use crate::error::KernelError;
use crate::kernels::util::{args, only_output};
use crate::kernels::Checked;
use crate::operator::{shape_text, DTypeSet, Operator, ShapeDim};
use crate::ops::index::{copy_from_source, Coordinate};
use relay_compiler::kir::Index;
use relay_compiler::op::OpPattern;
use relay_compiler::op::{ComputeInput, OutType, TensorDef};
use relay_devices::{DType, Tensor};

/// One axis of a layout: a primal axis (`C`) or a sub-axis of `factor` (`8c`), both named by
/// the primal axis's upper-case letter.
#[derive(Clone, Copy, Debug, PartialEq)]
enum LayoutAxis {
    Primal(char),
    Sub(char, usize),
}

/// A parsed layout: its axes in order.
#[derive(Debug)]
struct Layout(Vec<LayoutAxis>);

impl Layout {
    /// Parses TVM's layout text: upper-case letters are primal axes, a number followed by a
    /// lower-case letter a sub-axis of that size; each appears once, and a sub-axis's primal
    /// axis is in the layout too.
    fn parse(text: &str) -> Result<Layout, KernelError> {
        let bad = |why: &str| KernelError::Attr(format!("invalid layout \"{text}\": {why}"));
        let mut axes = vec![];
        let mut factor: Option<usize> = None;
        for ch in text.chars() {
            match ch {
                '0'..='9' => {
                    let d = ch as usize - '0' as usize;
                    factor = Some(
                        factor
                            .unwrap_or(0)
                            .checked_mul(10)
                            .and_then(|f| f.checked_add(d))
                            .ok_or_else(|| bad("factor too large"))?,
                    );
                }
                'A'..='Z' if factor.is_none() => axes.push(LayoutAxis::Primal(ch)),
                'a'..='z' => match factor.take() {
                    Some(f) if f > 0 => axes.push(LayoutAxis::Sub(ch.to_ascii_uppercase(), f)),
                    _ => return Err(bad(&format!("sub-axis `{ch}` needs a positive size before it"))),
                },
                _ => return Err(bad(&format!("unexpected `{ch}`"))),
            }
        }
        if factor.is_some() {
            return Err(bad("a size without its axis"));
        }
        for (i, a) in axes.iter().enumerate() {
            if axes[..i].contains(a)
                || matches!(a, LayoutAxis::Sub(p, _) if axes[..i].iter().any(|b| matches!(b, LayoutAxis::Sub(q, _) if q == p)))
            {
                return Err(bad("an axis appears twice"));
            }
            if let LayoutAxis::Sub(p, _) = a {
                if !axes.contains(&LayoutAxis::Primal(*p)) {
                    return Err(bad(&format!("sub-axis of `{p}` without axis `{p}`")));
                }
            }
        }
        Ok(Layout(axes))
    }

    /// The primal axes, in order.
    fn primals(&self) -> Vec<char> {
        self.0.iter().filter_map(|a| if let LayoutAxis::Primal(p) = a { Some(*p) } else { None }).collect()
    }

    /// Where primal axis `p` is, and its sub-axis's position and size if it is split.
    fn find(&self, p: char) -> (usize, Option<(usize, usize)>) {
        let at = self.0.iter().position(|a| *a == LayoutAxis::Primal(p)).unwrap_or(0);
        let sub = self.0.iter().enumerate().find_map(|(i, a)| match a {
            LayoutAxis::Sub(q, f) if *q == p => Some((i, *f)),
            _ => None,
        });
        (at, sub)
    }
}

/// Both layouts of a call, checked to hold the same primal axes.
fn layouts(a: &LayoutTransformAttrs) -> Result<(Layout, Layout), KernelError> {
    let (src, dst) = (Layout::parse(&a.src_layout)?, Layout::parse(&a.dst_layout)?);
    let (mut p, mut q) = (src.primals(), dst.primals());
    p.sort_unstable();
    q.sort_unstable();
    if p != q {
        return Err(KernelError::Attr(format!(
            "cannot transform layout \"{}\" to \"{}\": their axes differ",
            a.src_layout, a.dst_layout
        )));
    }
    Ok((src, dst))
}

/// `layout_transform(data, src_layout, dst_layout)`: `data`, laid out as `src_layout`, in
/// `dst_layout`: each primal axis's full extent (`C` times `c` of `NCHW8c`) is kept and split
/// or joined as the destination says; a split must divide it. Every dtype.
#[derive(Debug)]
pub struct LayoutTransform;

impl Operator for LayoutTransform {
    const NAME: &'static str = "layout_transform";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "data moved from src_layout to dst_layout";
    type Attrs = LayoutTransformAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<LayoutTransformAttrs>> = Some(compute);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &LayoutTransformAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [x] = args(inputs)?;
        let (src, dst) = layouts(a)?;
        if x.len() != src.0.len() {
            return Err(KernelError::Shape(format!(
                "data of shape {} does not have layout \"{}\" (rank {})",
                shape_text(x),
                a.src_layout,
                src.0.len()
            )));
        }
        // The full extent of each primal axis in the source.
        let extent = |p: char| -> Result<Option<usize>, KernelError> {
            let (at, sub) = src.find(p);
            match sub {
                None => Ok(x[at].value()),
                Some((i, f)) => {
                    if x[i].value().is_some_and(|d| d != f) {
                        return Err(KernelError::Shape(format!(
                            "axis {i} of data {} must be {f} for layout \"{}\"",
                            shape_text(x),
                            a.src_layout
                        )));
                    }
                    Ok(x[at].value().map(|d| d * f))
                }
            }
        };
        let mut out = Vec::with_capacity(dst.0.len());
        for axis in &dst.0 {
            out.push(match *axis {
                LayoutAxis::Sub(_, f) => D::known(f),
                LayoutAxis::Primal(p) => match (extent(p)?, dst.find(p).1) {
                    // Unknown only where the source's axis is `?`: the result stays `?`.
                    (None, _) => x[src.find(p).0],
                    (Some(n), None) => D::known(n),
                    (Some(n), Some((_, f))) if n % f == 0 => D::known(n / f),
                    (Some(n), Some((_, f))) => {
                        return Err(KernelError::Shape(format!(
                            "axis `{p}` of size {n} cannot be split into blocks of {f} for layout \"{}\"",
                            a.dst_layout
                        )))
                    }
                },
            });
        }
        Ok(vec![out])
    }

    fn dtypes(inputs: &[DType], _: &LayoutTransformAttrs) -> Result<Vec<DType>, KernelError> {
        same_as_input(inputs)
    }

    fn reference(
        inputs: &[&Tensor],
        a: &LayoutTransformAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let moves = moves(a)?;
        copy_from_source(x, only_output(outputs)?, |q, s| source(&moves, q, s))
    }
}

/// Where one primal axis is in the source and in the destination layout: its position, and
/// its sub-axis's position and size if it is split there.
type Move = ((usize, Option<(usize, usize)>), (usize, Option<(usize, usize)>));

/// The [`Move`] of each primal axis of a call's layouts.
fn moves(a: &LayoutTransformAttrs) -> Result<Vec<Move>, KernelError> {
    let (src, dst) = layouts(a)?;
    Ok(src.primals().into_iter().map(|p| (src.find(p), dst.find(p))).collect())
}

/// Fills `s`, the source position of destination position `q`: each primal axis's full
/// coordinate is joined from the destination's axis and sub-axis, then split as the source
/// lays it out.
fn source<C: Coordinate>(moves: &[Move], q: &[C], s: &mut [C]) {
    for &((s_at, s_sub), (d_at, d_sub)) in moves {
        let coord = match d_sub {
            None => q[d_at].clone(),
            Some((i, f)) => q[d_at].clone().times(f).plus(q[i].clone()),
        };
        match s_sub {
            None => s[s_at] = coord,
            Some((i, f)) => {
                s[s_at] = coord.clone().over(f);
                s[i] = coord.modulo(f);
            }
        }
    }
}

/// `layout_transform`'s kir rule: each output element reads the source element [`source`]
/// names, so the transform fuses into its producer's and consumers' kernels.
fn compute(inputs: &[ComputeInput], a: &LayoutTransformAttrs, _: &OutType) -> Result<TensorDef, String> {
    let [x] = tensors(inputs)?;
    let moves = moves(a).map_err(|e| e.to_string())?;
    let x = x.clone();
    Ok(lazy(move |k, q| {
        let mut s = vec![Index::Const(0); x.shape.len()];
        source(&moves, q, &mut s);
        x.at(k, &s)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(src: &str, dst: &str) -> LayoutTransformAttrs {
        LayoutTransformAttrs { src_layout: src.into(), dst_layout: dst.into() }
    }

    #[test]
    fn blocked_layouts_split_and_join_the_channel_axis() {
        let s = |x: &[usize], a, b| LayoutTransform::shapes::<usize>(&[x], &attrs(a, b));
        assert_eq!(s(&[1, 16, 5, 6], "NCHW", "NCHW8c").unwrap(), vec![vec![1, 2, 5, 6, 8]]);
        assert_eq!(s(&[1, 2, 5, 6, 8], "NCHW8c", "NHWC").unwrap(), vec![vec![1, 5, 6, 16]]);
        assert_eq!(s(&[1, 2, 5, 6, 8], "NCHW8c", "NCHW4c").unwrap(), vec![vec![1, 4, 5, 6, 4]]);
        assert!(s(&[1, 12, 5, 6], "NCHW", "NCHW8c").unwrap_err().to_string().contains("blocks of 8"));
        assert!(s(&[1, 2, 5, 6, 4], "NCHW8c", "NCHW").is_err());
        assert!(s(&[1, 2, 5], "NCHW", "NHWC").is_err());
        assert!(Layout::parse("NCHW8").is_err());
        assert!(Layout::parse("NCHc").is_err());
        assert!(Layout::parse("NCHWW").is_err());
        assert!(layouts(&attrs("NCHW", "NCDW")).is_err());
    }
}
