//! `einsum` (TVM `src/relay/op/tensor/math.cc` `EinsumRel`, `topi.einsum`, with NumPy
//! `einsum`'s equation grammar): the Einstein summation of a tuple of tensors. An equation
//! names each operand's axes by letters (`"ij,jk->ik"`); a letter repeated within a term
//! takes a diagonal, a letter absent from the output is summed over, and `...` stands for the
//! axes a term does not name, broadcast across the operands as NumPy broadcasts. Without
//! `->` the output is `...` (when an operand has it) followed by the letters used exactly
//! once, in alphabetical (ASCII) order. The loops of a call ([`Loops`]) are worked out once,
//! here, for the reference kernel and the compute rule (`crate::compute::einsum`) alike.

use crate::attrs::EinsumAttrs;
use crate::error::KernelError;
use crate::kernels::num::Num;
use crate::kernels::util::{nums, only_output, same_dtype};
use crate::kernels::Checked;
use crate::operator::{broadcast, shape_text, DTypeSet, OpEntry, Operator, ShapeDim};
use crate::ops::index::may_equal;
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};
use std::fmt::Display;

/// The operator's list.
pub const EINSUM: &[OpEntry] = &[OpEntry::of::<Einsum>()];

/// One subscript of a term: an axis label, or `...`, the axes the term does not name.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Subscript {
    /// A letter naming one axis.
    Label(u8),
    /// The broadcast axes.
    Ellipsis,
}

/// A parsed equation: one term per operand and the output term (the implicit one spelled
/// out).
#[derive(Debug)]
struct Equation {
    inputs: Vec<Vec<Subscript>>,
    output: Vec<Subscript>,
}

/// An error in equation `eq`.
fn bad(eq: &str, why: impl Display) -> KernelError {
    KernelError::Attr(format!("equation {eq:?}: {why}"))
}

/// The subscripts of one term of `eq`: letters, at most one `...`; spaces are skipped.
fn term(text: &str, eq: &str) -> Result<Vec<Subscript>, KernelError> {
    let mut out = Vec::new();
    let mut rest = text.as_bytes();
    while let Some((&c, tail)) = rest.split_first() {
        if c.is_ascii_alphabetic() {
            out.push(Subscript::Label(c));
        } else if rest.starts_with(b"...") {
            if out.contains(&Subscript::Ellipsis) {
                return Err(bad(eq, "a term has more than one `...`"));
            }
            out.push(Subscript::Ellipsis);
            rest = &rest[3..];
            continue;
        } else if c != b' ' {
            return Err(bad(eq, format!("unexpected character {:?}", char::from(c))));
        }
        rest = tail;
    }
    Ok(out)
}

/// Parses `eq` for `operands` operands.
fn parse(eq: &str, operands: usize) -> Result<Equation, KernelError> {
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq, None),
    };
    let inputs = lhs.split(',').map(|t| term(t, eq)).collect::<Result<Vec<_>, _>>()?;
    if inputs.len() != operands {
        return Err(bad(eq, format!("{} terms for {operands} operands", inputs.len())));
    }
    let uses = |l: u8| inputs.iter().flatten().filter(|&&s| s == Subscript::Label(l)).count();
    let output = match rhs {
        Some(r) => {
            let output = term(r, eq)?;
            for (i, &s) in output.iter().enumerate() {
                if output[..i].contains(&s) {
                    return Err(bad(eq, format!("{} appears twice in the output", subscript_text(s))));
                }
                if let Subscript::Label(l) = s {
                    if uses(l) == 0 {
                        return Err(bad(eq, format!("output label {:?} names no input axis", char::from(l))));
                    }
                }
            }
            output
        }
        None => {
            let once = (b'A'..=b'z').filter(|&l| l.is_ascii_alphabetic() && uses(l) == 1);
            let ellipsis = inputs.iter().flatten().any(|&s| s == Subscript::Ellipsis);
            ellipsis.then_some(Subscript::Ellipsis).into_iter().chain(once.map(Subscript::Label)).collect()
        }
    };
    Ok(Equation { inputs, output })
}

/// A subscript as written.
fn subscript_text(s: Subscript) -> String {
    match s {
        Subscript::Label(l) => format!("label {:?}", char::from(l)),
        Subscript::Ellipsis => "`...`".to_string(),
    }
}

/// The sizes an equation's operands give: each label's, and the broadcast shape of `...`.
struct Sizes<D> {
    labels: Vec<(u8, D)>,
    ellipsis: Vec<D>,
}

impl<D: ShapeDim> Sizes<D> {
    /// The size of label `l` (every label of a checked equation has one).
    fn of(&self, l: u8) -> Option<D> {
        self.labels.iter().find(|&&(m, _)| m == l).map(|&(_, d)| d)
    }
}

/// The axes of `shape` that term `term` of operand `i` names, in order: `Some(label)` per
/// labelled axis, `None` per axis of its `...`.
fn axis_labels<D: ShapeDim>(
    term: &[Subscript],
    shape: &[D],
    i: usize,
    eq: &str,
) -> Result<Vec<Option<u8>>, KernelError> {
    let named = term.iter().filter(|&&s| s != Subscript::Ellipsis).count();
    let ellipsis_rank = if term.contains(&Subscript::Ellipsis) {
        shape.len().checked_sub(named)
    } else {
        (shape.len() == named).then_some(0)
    };
    let Some(ellipsis_rank) = ellipsis_rank else {
        return Err(KernelError::Shape(format!(
            "operand {i} of shape {} has rank {}, but its term in {eq:?} names {named} axes",
            shape_text(shape),
            shape.len()
        )));
    };
    Ok(term
        .iter()
        .flat_map(|&s| match s {
            Subscript::Label(l) => vec![Some(l)],
            Subscript::Ellipsis => vec![None; ellipsis_rank],
        })
        .collect())
}

/// The label sizes and the `...` shape of operands of `shapes` under `eq`.
fn sizes<D: ShapeDim>(eq: &Equation, shapes: &[&[D]], text: &str) -> Result<Sizes<D>, KernelError> {
    let mut labels: Vec<(u8, D)> = Vec::new();
    let mut ellipses: Vec<Vec<D>> = Vec::new();
    for (i, (term, &shape)) in eq.inputs.iter().zip(shapes).enumerate() {
        let axes = axis_labels(term, shape, i, text)?;
        ellipses.push(axes.iter().zip(shape).filter(|(l, _)| l.is_none()).map(|(_, &d)| d).collect());
        for (&d, l) in shape.iter().zip(axes).filter_map(|(d, l)| l.map(|l| (d, l))) {
            match labels.iter_mut().find(|(m, _)| *m == l) {
                Some((_, known)) if !may_equal(*known, d) => {
                    return Err(KernelError::Shape(format!(
                        "label {:?} has sizes {} and {}: {}",
                        char::from(l),
                        dim_text(*known),
                        dim_text(d),
                        shapes.iter().map(|s| shape_text(s)).collect::<Vec<_>>().join(", ")
                    )))
                }
                Some((_, known)) if known.value().is_none() => *known = d,
                Some(_) => {}
                None => labels.push((l, d)),
            }
        }
    }
    let views: Vec<&[D]> = ellipses.iter().map(Vec::as_slice).collect();
    Ok(Sizes { labels, ellipsis: broadcast(&views)? })
}

/// One dimension as Relay writes it.
fn dim_text<D: ShapeDim>(d: D) -> String {
    d.value().map_or_else(|| "?".to_string(), |n| n.to_string())
}

/// The output shape of `eq` over `sizes`.
fn output_shape<D: ShapeDim>(eq: &Equation, sizes: &Sizes<D>, text: &str) -> Result<Vec<D>, KernelError> {
    if !sizes.ellipsis.is_empty() && !eq.output.contains(&Subscript::Ellipsis) {
        return Err(bad(
            text,
            format!("`...` covers {} axes, but the output term has no `...`", sizes.ellipsis.len()),
        ));
    }
    let mut out = Vec::new();
    for &s in &eq.output {
        match s {
            Subscript::Label(l) => out.extend(sizes.of(l)),
            Subscript::Ellipsis => out.extend_from_slice(&sizes.ellipsis),
        }
    }
    Ok(out)
}

/// `einsum(data)`: `data` is a tuple of tensors of one numeric dtype, one per term of
/// `equation`; each label's size must agree across the operands, `...` axes broadcast. The
/// result has the output term's axes and the operands' dtype; each element is the sum, over
/// every label not in the output, of the product of the operands' elements (integers wrap).
#[derive(Debug)]
pub struct Einsum;

impl Operator for Einsum {
    const NAME: &'static str = "einsum";
    const PATTERN: OpPattern = OpPattern::Injective;
    const NUM_INPUTS: usize = 1;
    const TUPLE_INPUT: bool = true;
    const DTYPES: DTypeSet = DTypeSet::Nums;
    const DOC: &'static str = "Einstein summation of a tuple of tensors (NumPy's equation grammar)";
    type Attrs = EinsumAttrs;

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &EinsumAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        let eq = parse(&a.equation, inputs.len())?;
        Ok(vec![output_shape(&eq, &sizes(&eq, inputs, &a.equation)?, &a.equation)?])
    }

    fn dtypes(inputs: &[DType], _: &EinsumAttrs) -> Result<Vec<DType>, KernelError> {
        Ok(vec![Self::DTYPES.check(same_dtype(inputs)?)?])
    }

    const COMPUTE: Option<crate::operator::ComputeRule<EinsumAttrs>> = Some(crate::compute::einsum::einsum);

    fn reference(
        inputs: &[&Tensor],
        a: &EinsumAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        let plan = Plan::new(Loops::new(&a.equation, &shapes)?, &shapes);
        let out = only_output(outputs)?;
        nums!(out.dtype(), T => {
            let xs = inputs.iter().map(|t| t.as_slice::<T>()).collect::<Result<Vec<_>, _>>()?;
            plan.run(&xs, out.as_mut_slice::<T>()?);
            Ok(())
        })
    }
}

/// The loops of one call: the output axes, then the summed axes (the labels not in the
/// output, in order of first appearance), each with its size; and, for each axis of each
/// operand, the loop it is read at (`None`: a `...` axis of size 1 that broadcasts, read at
/// 0). A label repeated within a term reads one loop on several axes: the diagonal.
pub(crate) struct Loops {
    /// The sizes of the output axes followed by those of the summed axes.
    pub(crate) sizes: Vec<usize>,
    /// The number of output axes.
    pub(crate) out_axes: usize,
    /// Per operand, per axis, the loop it is read at.
    pub(crate) reads: Vec<Vec<Option<usize>>>,
}

impl Loops {
    /// The loops of `equation` over operands of `shapes`.
    ///
    /// # Errors
    /// What the shape function reports: a bad equation, operands that do not fit it.
    pub(crate) fn new(equation: &str, shapes: &[&[usize]]) -> Result<Loops, KernelError> {
        let eq = parse(equation, shapes.len())?;
        let s = sizes(&eq, shapes, equation)?;
        let ellipsis = s.ellipsis.len();
        // Axis ids: the `...` axes `0..ellipsis`, then one per label in `s.labels` order.
        let label_id = |l: u8| s.labels.iter().position(|&(m, _)| m == l).map(|p| ellipsis + p);
        let mut order: Vec<usize> = Vec::new();
        for &sub in &eq.output {
            match sub {
                Subscript::Label(l) => order.extend(label_id(l)),
                Subscript::Ellipsis => order.extend(0..ellipsis),
            }
        }
        let out_axes = order.len();
        let summed: Vec<usize> =
            (ellipsis..ellipsis + s.labels.len()).filter(|id| !order.contains(id)).collect();
        order.extend(summed);
        let size_of = |id: usize| if id < ellipsis { s.ellipsis[id] } else { s.labels[id - ellipsis].1 };
        let mut reads = Vec::with_capacity(shapes.len());
        for (i, (term, &shape)) in eq.inputs.iter().zip(shapes).enumerate() {
            let axes = axis_labels(term, shape, i, equation)?;
            // `...` axes align at the right of the broadcast shape.
            let mut next_ellipsis_axis = ellipsis - axes.iter().filter(|l| l.is_none()).count();
            let read = axes.iter().zip(shape).map(|(&l, &d)| {
                let id = match l {
                    Some(l) => label_id(l),
                    None => {
                        next_ellipsis_axis += 1;
                        (d != 1).then_some(next_ellipsis_axis - 1)
                    }
                };
                id.and_then(|id| order.iter().position(|&o| o == id))
            });
            reads.push(read.collect::<Vec<_>>());
        }
        Ok(Loops { sizes: order.iter().map(|&id| size_of(id)).collect(), out_axes, reads })
    }
}

/// The reference kernel's walk over [`Loops`]: each operand's element stride along each loop
/// (0 where the operand does not read it; a diagonal adds its axes' strides).
struct Plan {
    loops: Loops,
    /// Per operand, its stride along each loop.
    strides: Vec<Vec<usize>>,
}

impl Plan {
    /// The walk of `loops` over row-major operands of `shapes`.
    fn new(loops: Loops, shapes: &[&[usize]]) -> Plan {
        let strides = loops
            .reads
            .iter()
            .zip(shapes)
            .map(|(reads, shape)| {
                let mut by_loop = vec![0; loops.sizes.len()];
                let mut stride = 1;
                for (&read, &d) in reads.iter().zip(shape.iter()).rev() {
                    if let Some(l) = read {
                        by_loop[l] += stride;
                    }
                    stride *= d;
                }
                by_loop
            })
            .collect();
        Plan { loops, strides }
    }

    /// Writes each output element, in row-major order, from operands `xs`.
    fn run<T: Num>(&self, xs: &[&[T]], out: &mut [T]) {
        let (sizes, out_axes) = (&self.loops.sizes, self.loops.out_axes);
        let summed: usize = sizes[out_axes..].iter().product();
        let mut index = vec![0; sizes.len()];
        for o in out.iter_mut() {
            let mut acc = T::ZERO;
            for _ in 0..summed {
                let mut product = T::ONE;
                for (x, strides) in xs.iter().zip(&self.strides) {
                    let at: usize = index.iter().zip(strides).map(|(i, s)| i * s).sum();
                    product = product.mul_wrapping(x.get(at).copied().unwrap_or(T::ZERO));
                }
                acc = acc.add_wrapping(product);
                advance(&mut index[out_axes..], &sizes[out_axes..]);
            }
            *o = acc;
            advance(&mut index[..out_axes], &sizes[..out_axes]);
        }
    }
}

/// Steps the row-major multi-index `index` over `sizes` by one, wrapping to all zeros.
fn advance(index: &mut [usize], sizes: &[usize]) {
    for (i, &n) in index.iter_mut().zip(sizes).rev() {
        *i += 1;
        if *i < n {
            return;
        }
        *i = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::Dim::{self, Any, Known as K};

    fn shape(eq: &str, inputs: &[&[usize]]) -> Result<Vec<usize>, String> {
        let a = EinsumAttrs { equation: eq.to_string() };
        Einsum::shapes(inputs, &a).map(|mut s| s.remove(0)).map_err(|e| e.to_string())
    }

    #[test]
    fn explicit_implicit_and_ellipsis_shapes() {
        assert_eq!(shape("ij,jk->ik", &[&[2, 3], &[3, 4]]).unwrap(), [2, 4]);
        assert_eq!(shape("ij,jk", &[&[2, 3], &[3, 4]]).unwrap(), [2, 4]);
        assert_eq!(shape("ba", &[&[2, 3]]).unwrap(), [3, 2]);
        assert_eq!(shape("ii->i", &[&[3, 3]]).unwrap(), [3]);
        assert_eq!(shape("ii", &[&[3, 3]]).unwrap(), Vec::<usize>::new());
        assert_eq!(shape("...ij,...jk->...ik", &[&[5, 1, 2, 3], &[4, 3, 6]]).unwrap(), [5, 4, 2, 6]);
        assert_eq!(shape("i...->...", &[&[2, 3, 4]]).unwrap(), [3, 4]);
        assert_eq!(shape(",->", &[&[], &[]]).unwrap(), Vec::<usize>::new());
        let sym = Einsum::shapes::<Dim>(
            &[&[Any, K(3)][..], &[K(3), Any]],
            &EinsumAttrs { equation: "ij,jk".into() },
        );
        assert_eq!(sym.unwrap(), vec![vec![Any, Any]]);
    }

    #[test]
    fn bad_equations_and_shapes_are_errors() {
        let err = |eq: &str, inputs: &[&[usize]]| shape(eq, inputs).unwrap_err();
        assert!(err("ij,jk->ik", &[&[2, 3], &[4, 4]]).contains("label 'j' has sizes 3 and 4"));
        assert!(err("ij->ik", &[&[2, 3]]).contains("'k' names no input axis"));
        assert!(err("ij->ii", &[&[2, 3]]).contains("appears twice"));
        assert!(err("ij,jk", &[&[2, 3]]).contains("2 terms for 1 operands"));
        assert!(err("ijk", &[&[2, 3]]).contains("names 3 axes"));
        assert!(err("i...->i", &[&[2, 3]]).contains("no `...`"));
        assert!(err("i1", &[&[2, 3]]).contains("unexpected character '1'"));
        assert!(err("i......", &[&[2, 3]]).contains("more than one `...`"));
        assert!(err("...i,...i", &[&[2, 3], &[4, 3]]).contains("cannot broadcast"));
    }

    #[test]
    fn contractions_diagonals_and_broadcasts() {
        let run = |eq: &str, xs: &[(&[usize], &[i32])]| {
            let shapes: Vec<&[usize]> = xs.iter().map(|x| x.0).collect();
            let e = parse(eq, xs.len()).unwrap();
            let out_shape = output_shape(&e, &sizes(&e, &shapes, eq).unwrap(), eq).unwrap();
            let mut out = vec![0; out_shape.iter().product()];
            let data: Vec<&[i32]> = xs.iter().map(|x| x.1).collect();
            Plan::new(Loops::new(eq, &shapes).unwrap(), &shapes).run(&data, &mut out);
            out
        };
        let m: &[i32] = &[1, 2, 3, 4, 5, 6];
        assert_eq!(run("ij,jk", &[(&[2, 3], m), (&[3, 2], m)]), [22, 28, 49, 64]);
        assert_eq!(run("ij->ji", &[(&[2, 3], m)]), [1, 4, 2, 5, 3, 6]);
        assert_eq!(run("ii->i", &[(&[2, 2], &[1, 2, 3, 4])]), [1, 4]);
        assert_eq!(run("ij->", &[(&[2, 3], m)]), [21]);
        assert_eq!(run("...j,j->...", &[(&[2, 3], m), (&[3], &[1, 0, -1])]), [-2, -2]);
        assert_eq!(run("i,...i->...i", &[(&[3], &[1, 2, 3]), (&[1, 3], &[1, 1, 1])]), [1, 2, 3]);
        assert_eq!(run("i...,i...->...", &[(&[2, 1], &[1, 2]), (&[2, 3], m)]), [9, 12, 15]);
    }
}
