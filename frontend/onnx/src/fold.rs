//! Constant folding at import time: a node whose inputs are all known (initializers,
//! `Constant` outputs, the `Shape` of a static tensor) gets known outputs, so the
//! `Shape → Gather → Unsqueeze → Concat → Reshape` chains exporters write for shapes end in
//! the constant operand `Reshape`, `Expand` and the like require. The converter has already
//! checked the node and computed its output's shape; this computes the elements.

use crate::graph::Value;
use crate::node::Node;
use crate::ops::slice_ranges;
use crate::shape::{normalize_axis, ShapeElement};
use crate::tensor::Const;
use relay_devices::DType;
use std::rc::Rc;

/// The most elements a folded tensor may have: shape arithmetic is small, and a larger result
/// is better computed at run time than stored as a weight.
const MAX_FOLDED: usize = 1 << 16;

/// The operators whose outputs fold.
const FOLDABLE: &[&str] = &[
    "Add",
    "Cast",
    "Concat",
    "Div",
    "Equal",
    "Flatten",
    "Gather",
    "Greater",
    "Identity",
    "Less",
    "Mod",
    "Mul",
    "Neg",
    "Reshape",
    "Slice",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Unsqueeze",
];

/// Whether operator `op` folds when its inputs are known.
pub fn foldable(op: &str) -> bool {
    FOLDABLE.contains(&op)
}

/// The operators that only pick, move or retype the elements of their data inputs (the
/// first, or all of `Concat`'s): [`evaluate_elements`] follows a shape's elements through them.
const MOVES_ELEMENTS: &[&str] =
    &["Cast", "Concat", "Flatten", "Gather", "Identity", "Reshape", "Slice", "Squeeze", "Unsqueeze"];

/// Whether operator `op` only picks, moves or retypes elements.
pub fn moves_elements(op: &str) -> bool {
    MOVES_ELEMENTS.contains(&op)
}

/// The elements of the output of `node` (a [`moves_elements`] operator on integer shape
/// tensors) from its `inputs`: each data input a constant or a value with known
/// [`ShapeElement`]s, each other input (indices, bounds, axes) a constant. The data inputs'
/// elements are numbered, the numbers go through [`evaluate`], and the output's numbers name
/// its elements, so a `?` size stays a run-time size and the known ones fold. `None` when it
/// does not fold.
///
/// # Errors
/// As [`evaluate`].
pub fn evaluate_elements(
    node: &Node,
    inputs: &[Option<Value>],
    outputs: &[Value],
) -> Result<Option<Vec<ShapeElement>>, String> {
    // The numbers must come out as integers (a `Cast` of a shape to float is not followed).
    if !outputs.iter().all(|o| matches!(o.dtype, DType::I64 | DType::I32)) {
        return Ok(None);
    }
    let is_data = |i: usize| node.proto.op_type == "Concat" || i == 0;
    let mut elements: Vec<ShapeElement> = vec![];
    let mut numbered = vec![];
    for (i, v) in inputs.iter().enumerate() {
        let Some(v) = v else {
            numbered.push(None);
            continue;
        };
        if !is_data(i) {
            numbered.push(v.constant.clone());
            continue;
        }
        let own = match (&v.shape_elements, &v.constant) {
            (Some(e), _) => e.clone(),
            (None, Some(c)) => c.to_i64()?.into_iter().map(ShapeElement::Known).collect(),
            (None, None) => return Ok(None),
        };
        let Some(dims) = v.dims.iter().copied().collect::<Option<Vec<i64>>>() else { return Ok(None) };
        if !matches!(v.dtype, DType::I64 | DType::I32) || count(&dims) != own.len() {
            return Ok(None);
        }
        let numbers: Vec<i64> = (elements.len()..elements.len() + own.len()).map(|k| k as i64).collect();
        elements.extend(own);
        numbered.push(Some(Rc::new(Const::from_i64s(v.dtype, dims, &numbers))));
    }
    let Some(result) = evaluate(node, &numbered, outputs)? else { return Ok(None) };
    let picked =
        result.to_i64()?.into_iter().map(|k| usize::try_from(k).ok().and_then(|k| elements.get(k).cloned()));
    Ok(picked.collect())
}

/// The output of `node` (a [`foldable`] operator) from its known `inputs` (in input order,
/// `None` for an absent optional one), given `outputs`, the converter's result; `None` when
/// it does not fold (several outputs, a dynamic or large result).
///
/// # Errors
/// An index out of range (`Gather`), integer division by zero.
pub fn evaluate(
    node: &Node,
    inputs: &[Option<Rc<Const>>],
    outputs: &[Value],
) -> Result<Option<Const>, String> {
    let [out] = outputs else { return Ok(None) };
    let Some(dims) = out.dims.iter().copied().collect::<Option<Vec<i64>>>() else { return Ok(None) };
    let elements = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?));
    if elements.is_none_or(|n| n > MAX_FOLDED) {
        return Ok(None);
    }
    let input = |i: usize| inputs.get(i).and_then(Option::as_ref).ok_or(format!("input {i} is missing"));
    let op = node.proto.op_type.as_str();
    let axis = |rank: usize| -> Result<usize, String> {
        let a = node.int("axis", 0).map_err(|e| e.to_string())?;
        normalize_axis(a, rank)
    };
    Ok(Some(match op {
        "Identity" | "Reshape" | "Squeeze" | "Unsqueeze" | "Flatten" => {
            let x = input(0)?;
            if count(&dims) != count(&x.dims) {
                return Err(format!("{} elements cannot take shape {dims:?}", count(&x.dims)));
            }
            Const { dtype: out.dtype, dims, data: x.data.clone() }
        }
        "Cast" => cast(input(0)?, out.dtype, dims),
        "Concat" => {
            let parts: Vec<&Rc<Const>> = (0..inputs.len()).map(input).collect::<Result<_, _>>()?;
            let axis = axis(dims.len())?;
            let fits = |p: &&Rc<Const>| {
                p.dims.len() == dims.len() && (0..dims.len()).all(|a| a == axis || p.dims[a] == dims[a])
            };
            if !parts.iter().all(fits) {
                return Err("the inputs' shapes differ off the concatenation axis".into());
            }
            concat(&parts, axis, out.dtype, dims)
        }
        "Gather" => {
            let x = input(0)?;
            gather(x, &input(1)?.to_i64()?, axis(x.dims.len())?, dims)?
        }
        "Slice" => {
            let x = input(0)?;
            let operands: Vec<Option<Vec<i64>>> = (1..5)
                .map(|i| inputs.get(i).cloned().flatten().map(|c| c.to_i64()).transpose())
                .collect::<Result<_, _>>()?;
            let known: Vec<Option<i64>> = x.dims.iter().map(|&d| Some(d)).collect();
            let ranges = slice_ranges(&known, &operands)?;
            let mut begin = vec![0; x.dims.len()];
            let mut step = vec![1; x.dims.len()];
            for r in ranges {
                (begin[r.axis], step[r.axis]) = (r.begin, r.step);
            }
            strided(x, &begin, &step, dims)
        }
        "Sqrt" | "Neg" => {
            let x = input(0)?;
            if x.dtype.is_float() {
                let f = if op == "Sqrt" { f64::sqrt } else { |v: f64| -v };
                Const::from_f64s(out.dtype, dims, &x.to_f64().into_iter().map(f).collect::<Vec<_>>())
            } else if op == "Neg" {
                Const::from_i64s(
                    out.dtype,
                    dims,
                    &x.to_i64()?.into_iter().map(i64::wrapping_neg).collect::<Vec<_>>(),
                )
            } else {
                return Ok(None);
            }
        }
        _ => {
            let fmod = node.int("fmod", 0).map_err(|e| e.to_string())? != 0;
            binary(op, fmod, input(0)?, input(1)?, out.dtype, dims)?
        }
    }))
}

/// `x` converted to `dtype` (floats to integers truncate).
fn cast(x: &Const, dtype: DType, dims: Vec<i64>) -> Const {
    match x.to_i64() {
        Ok(ints) if !dtype.is_float() => Const::from_i64s(dtype, dims, &ints),
        _ => Const::from_f64s(dtype, dims, &x.to_f64()),
    }
}

/// The number of elements of `dims`.
fn count(dims: &[i64]) -> usize {
    dims.iter().map(|&d| d as usize).product()
}

/// `parts` joined along `axis` (their bytes, whatever the dtype).
fn concat(parts: &[&Rc<Const>], axis: usize, dtype: DType, dims: Vec<i64>) -> Const {
    let w = dtype.size_bytes();
    let outer = count(&dims[..axis]);
    let mut data = Vec::with_capacity(count(&dims) * w);
    for o in 0..outer {
        for p in parts {
            let chunk = count(&p.dims[axis..]) * w;
            data.extend_from_slice(&p.data[o * chunk..(o + 1) * chunk]);
        }
    }
    Const { dtype, dims, data }
}

/// `x`'s slices along `axis` at `indices` (negative ones count from the end).
fn gather(x: &Const, indices: &[i64], axis: usize, dims: Vec<i64>) -> Result<Const, String> {
    let w = x.dtype.size_bytes();
    let (outer, len, inner) = (count(&x.dims[..axis]), x.dims[axis], count(&x.dims[axis + 1..]) * w);
    let mut data = Vec::with_capacity(count(&dims) * w);
    for o in 0..outer {
        for &i in indices {
            let j = if i < 0 { i + len } else { i };
            if !(0..len).contains(&j) {
                return Err(format!("index {i} is out of range for an axis of {len}"));
            }
            let at = (o * len as usize + j as usize) * inner;
            data.extend_from_slice(&x.data[at..at + inner]);
        }
    }
    Ok(Const { dtype: x.dtype, dims, data })
}

/// The elements `begin + i * step` of `x` on every axis, for the output shape `dims`.
fn strided(x: &Const, begin: &[i64], step: &[i64], dims: Vec<i64>) -> Const {
    let w = x.dtype.size_bytes();
    let strides = row_major_strides(&x.dims);
    let mut data = Vec::with_capacity(count(&dims) * w);
    for index in MultiIndex::new(&dims) {
        let at: usize =
            (0..dims.len()).map(|a| (begin[a] + index[a] as i64 * step[a]) as usize * strides[a]).sum();
        data.extend_from_slice(&x.data[at * w..(at + 1) * w]);
    }
    Const { dtype: x.dtype, dims, data }
}

/// Each axis's stride, in elements, of a row-major tensor of shape `dims`.
fn row_major_strides(dims: &[i64]) -> Vec<usize> {
    let mut strides = vec![1; dims.len()];
    for a in (0..dims.len().saturating_sub(1)).rev() {
        strides[a] = strides[a + 1] * dims[a + 1] as usize;
    }
    strides
}

/// For each element of a tensor of shape `out`, the element of an operand of shape `input`
/// that NumPy broadcasting reads.
fn broadcast_sources(out: &[i64], input: &[i64]) -> Vec<usize> {
    let offset = out.len() - input.len();
    let own = row_major_strides(input);
    let strides: Vec<usize> = (0..out.len())
        .map(|a| if a < offset || input[a - offset] == 1 { 0 } else { own[a - offset] })
        .collect();
    MultiIndex::new(out).map(|index| index.iter().zip(&strides).map(|(i, s)| i * s).sum()).collect()
}

/// Binary operator `op` (arithmetic or comparison) on `a` and `b`, broadcast to `dims`, as
/// `dtype`; integers in 64-bit wrapping arithmetic, floats in `f64` (then rounded).
fn binary(op: &str, fmod: bool, a: &Const, b: &Const, dtype: DType, dims: Vec<i64>) -> Result<Const, String> {
    let (sa, sb) = (broadcast_sources(&dims, &a.dims), broadcast_sources(&dims, &b.dims));
    let compare = |x: f64, y: f64| match op {
        "Equal" => Some(x == y),
        "Less" => Some(x < y),
        "Greater" => Some(x > y),
        _ => None,
    };
    if !a.dtype.is_float() && !matches!(op, "Equal" | "Less" | "Greater") {
        let (x, y) = (a.to_i64()?, b.to_i64()?);
        let values = sa.iter().zip(&sb).map(|(&i, &j)| {
            let (x, y) = (x[i], y[j]);
            match op {
                "Add" => Ok(x.wrapping_add(y)),
                "Sub" => Ok(x.wrapping_sub(y)),
                "Mul" => Ok(x.wrapping_mul(y)),
                _ if y == 0 => Err("integer division by zero".to_string()),
                "Div" => Ok(x.wrapping_div(y)),
                // ONNX `Mod`: the sign of the divisor, or of the dividend with `fmod`.
                _ if fmod => Ok(x.wrapping_rem(y)),
                _ => Ok(x.wrapping_rem(y).wrapping_add(y).wrapping_rem(y)),
            }
        });
        return Ok(Const::from_i64s(dtype, dims, &values.collect::<Result<Vec<_>, _>>()?));
    }
    let (x, y) = (a.to_f64(), b.to_f64());
    let values: Vec<f64> = sa
        .iter()
        .zip(&sb)
        .map(|(&i, &j)| {
            let (x, y) = (x[i], y[j]);
            match op {
                "Add" => x + y,
                "Sub" => x - y,
                "Mul" => x * y,
                "Div" => x / y,
                "Mod" if fmod => x % y,
                "Mod" => x - (x / y).floor() * y,
                _ => f64::from(u8::from(compare(x, y).unwrap_or(false))),
            }
        })
        .collect();
    Ok(Const::from_f64s(dtype, dims, &values))
}

/// The multi-indices of a tensor of shape `dims`, in row-major order.
struct MultiIndex {
    dims: Vec<usize>,
    next: Option<Vec<usize>>,
}

impl MultiIndex {
    fn new(dims: &[i64]) -> MultiIndex {
        let dims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
        let next = (!dims.contains(&0)).then(|| vec![0; dims.len()]);
        MultiIndex { dims, next }
    }
}

impl Iterator for MultiIndex {
    type Item = Vec<usize>;

    fn next(&mut self) -> Option<Vec<usize>> {
        let current = self.next.take()?;
        let mut index = current.clone();
        for a in (0..index.len()).rev() {
            index[a] += 1;
            if index[a] < self.dims[a] {
                self.next = Some(index);
                break;
            }
            index[a] = 0;
        }
        Some(current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_reads_the_right_elements() {
        assert_eq!(broadcast_sources(&[2, 3], &[3]), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(broadcast_sources(&[2, 3], &[2, 1]), vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(MultiIndex::new(&[]).count(), 1);
        assert_eq!(MultiIndex::new(&[2, 0]).count(), 0);
    }

    #[test]
    fn integer_mod_takes_the_divisors_sign_unless_fmod() {
        let c = |v: i64| Const::from_i64s(DType::I64, vec![], &[v]);
        let m = |fmod| binary("Mod", fmod, &c(-7), &c(3), DType::I64, vec![]).unwrap().to_i64().unwrap();
        assert_eq!((m(false), m(true)), (vec![2], vec![-1]));
        assert!(binary("Div", false, &c(1), &c(0), DType::I64, vec![]).is_err());
    }

    #[test]
    fn gather_concat_and_slice_move_elements() {
        let x = Const::from_i64s(DType::I64, vec![2, 3], &[1, 2, 3, 4, 5, 6]);
        assert_eq!(gather(&x, &[-1], 1, vec![2, 1]).unwrap().to_i64().unwrap(), vec![3, 6]);
        assert!(gather(&x, &[3], 1, vec![2, 1]).is_err());
        let joined = concat(&[&Rc::new(x.clone()), &Rc::new(x.clone())], 1, DType::I64, vec![2, 6]);
        assert_eq!(joined.to_i64().unwrap(), vec![1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6]);
        assert_eq!(strided(&x, &[1, 0], &[1, 2], vec![1, 2]).to_i64().unwrap(), vec![4, 6]);
    }
}
