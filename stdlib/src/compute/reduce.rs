//! Reductions as loop nests (reference: `crate::ops::reduce`): one loop nest over the
//! output, an inner nest over the reduced axes accumulating into a local.

use super::util::{flatten, lit, tensors};
use crate::attrs::{ArgReduceAttrs, VarianceAttrs};
use crate::ops::reduce::{reduced_axes, ReduceAxes};
use relay_compiler::kir::{Expr, Index, KernelBuilder, LoopKind};
use relay_compiler::op::{for_each_index, ComputeInput, LazyTensor, OutType, TensorDef};
use relay_devices::DType;
use std::rc::Rc;

/// The value reductions a loop nest computes.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Fold {
    Sum,
    Prod,
    Mean,
    Max,
    Min,
    All,
    Any,
}

/// A reduction's geometry: the input, which axes are reduced, which input axes have an output
/// axis (the unreduced ones, and with `keepdims` the reduced ones too), the output shape.
#[derive(Clone)]
struct Geometry {
    x: LazyTensor,
    mask: Vec<bool>,
    kept: Vec<bool>,
    out: Vec<i64>,
}

impl Geometry {
    fn reduced(&self) -> Vec<i64> {
        self.x.shape.iter().zip(&self.mask).filter(|(_, &r)| r).map(|(&d, _)| d).collect()
    }

    fn run(&self) -> i64 {
        self.reduced().iter().product()
    }

    /// The input indices for output element `out` and reduced-axis indices `red`.
    fn input_index(&self, out: &[Index], red: &[Index]) -> Vec<Index> {
        let (mut o, mut r) = (0, 0);
        let mut idx = Vec::with_capacity(self.mask.len());
        for (&reduced, &kept) in self.mask.iter().zip(&self.kept) {
            if reduced {
                idx.push(red[r].clone());
                r += 1;
            } else {
                idx.push(out[o].clone());
            }
            if kept {
                o += 1;
            }
        }
        idx
    }

    /// Loops over the reduced axes, innermost `inner`, calling `body` with their indices.
    fn for_reduced(
        &self,
        k: &mut KernelBuilder,
        inner: LoopKind,
        body: &mut dyn FnMut(&mut KernelBuilder, &[Index]),
    ) {
        fn go(
            k: &mut KernelBuilder,
            dims: &[i64],
            inner: LoopKind,
            idx: &mut Vec<Index>,
            body: &mut dyn FnMut(&mut KernelBuilder, &[Index]),
        ) {
            match dims.split_first() {
                None => body(k, idx),
                Some((&n, rest)) => {
                    let kind = if rest.is_empty() { inner } else { LoopKind::Serial };
                    k.for_(n, kind, |k, i| {
                        idx.push(i);
                        go(k, rest, inner, idx, body);
                        idx.pop();
                    })
                }
            }
        }
        go(k, &self.reduced(), inner, &mut Vec::new(), body);
    }
}

/// The geometry of reducing the one input by `attrs` (the axes the reference kernel reduces).
fn geometry(inputs: &[ComputeInput], attrs: &impl ReduceAxes, out: &OutType) -> Result<Geometry, String> {
    let [x] = tensors(inputs)?;
    let mask = reduced_axes(x.shape.len(), attrs).map_err(|e| e.to_string())?;
    let kept = mask.iter().map(|&r| !r || attrs.keepdims()).collect();
    Ok(Geometry { x: x.clone(), mask, kept, out: out.shape.clone() })
}

/// `collapse_sum_like(x, like)`: `x` summed to `like`'s shape (the output's), the inverse of
/// broadcasting: the leading axes `x` has beyond the output's rank are summed away, and the
/// axes where the output has size 1 and `x` not are summed in place (the reference kernel:
/// `crate::ops::transform::CollapseSumLike`).
pub(crate) fn collapse_sum(inputs: &[ComputeInput], out: &OutType) -> Result<TensorDef, String> {
    let [x, _] = tensors(inputs)?;
    let lead = x.shape.len().checked_sub(out.shape.len()).ok_or("the target has a higher rank")?;
    let mask =
        (0..x.shape.len()).map(|i| i < lead || (out.shape[i - lead] == 1 && x.shape[i] != 1)).collect();
    let kept = (0..x.shape.len()).map(|i| i >= lead).collect();
    fold_geometry(Geometry { x: x.clone(), mask, kept, out: out.shape.clone() }, Fold::Sum)
}

/// The loop nest of value reduction `f` (the rule of `sum`, `mean`, `max`, `min`, `prod`,
/// `all`, `any`).
pub(crate) fn fold(
    inputs: &[ComputeInput],
    a: &impl ReduceAxes,
    out: &OutType,
    f: Fold,
) -> Result<TensorDef, String> {
    fold_geometry(geometry(inputs, a, out)?, f)
}

/// The loop nest of value reduction `f` over geometry `g`.
fn fold_geometry(g: Geometry, f: Fold) -> Result<TensorDef, String> {
    let dtype = g.x.dtype;
    if (dtype == DType::BOOL) != matches!(f, Fold::All | Fold::Any) {
        return Err("numeric reductions take numbers, logical ones bools".into());
    }
    let run = g.run();
    if run == 0 && (matches!(f, Fold::Max | Fold::Min) || (f == Fold::Mean && !dtype.is_float())) {
        return Err("a reduction over no elements with no identity runs in the reference kernel".into());
    }
    Ok(TensorDef::Nest(Rc::new(move |k, sink| {
        let acc = k.local("acc", dtype);
        let g = g.clone();
        for_each_index(k, &g.out.clone(), LoopKind::Serial, &mut |k, oi| {
            let init = match f {
                Fold::Sum | Fold::Mean => lit(dtype, 0.0),
                Fold::Prod => lit(dtype, 1.0),
                Fold::All => Expr::bool(true),
                Fold::Any => Expr::bool(false),
                Fold::Max | Fold::Min => {
                    let first = vec![Index::Const(0); g.reduced().len()];
                    g.x.at(k, &g.input_index(oi, &first))
                }
            };
            k.assign(acc, init);
            let inner =
                if matches!(f, Fold::Sum | Fold::Mean) { LoopKind::Vectorize } else { LoopKind::Serial };
            g.for_reduced(k, inner, &mut |k, ri| {
                let v = g.x.at(k, &g.input_index(oi, ri));
                let a = Expr::local(acc);
                let next = match f {
                    Fold::Sum | Fold::Mean => a + v,
                    Fold::Prod => a * v,
                    Fold::Max => Expr::select(v.clone().gt(a.clone()), v, a),
                    Fold::Min => Expr::select(v.clone().lt(a.clone()), v, a),
                    Fold::All => a.and(v),
                    Fold::Any => a.or(v),
                };
                k.assign(acc, next);
            });
            let result = match f {
                Fold::Mean => Expr::local(acc) / lit(dtype, run as f64),
                _ => Expr::local(acc),
            };
            sink(k, oi, result);
        });
    })))
}

/// The loop nest of `variance(data, mean)` (`root` false: TVM's two-input form, the mean
/// given with `keepdims`) or `std(data)` (`root`: the mean computed by a first pass, the
/// square root taken): squared deviations from the mean summed over the reduced axes, over
/// `n` (`n - 1` with `unbiased`), as the reference kernels' `sum_squares_over`.
pub(crate) fn moment(
    inputs: &[ComputeInput],
    a: &VarianceAttrs,
    out: &OutType,
    root: bool,
) -> Result<TensorDef, String> {
    let g = geometry(inputs.get(..1).ok_or("no data")?, a, out)?;
    let mean = if root {
        None
    } else {
        let [_, m] = tensors(inputs)?;
        Some(m.clone())
    };
    let (dtype, run) = (g.x.dtype, g.run());
    let n = run - i64::from(a.unbiased && run > 0);
    Ok(TensorDef::Nest(Rc::new(move |k, sink| {
        let (acc, m) = (k.local("acc", dtype), k.local("mean", dtype));
        let g = g.clone();
        for_each_index(k, &g.out.clone(), LoopKind::Serial, &mut |k, oi| {
            let mv = match &mean {
                // The mean has the data's rank, size 1 on the reduced axes.
                Some(t) => t.at(k, &g.input_index(oi, &vec![Index::Const(0); g.reduced().len()])),
                None => {
                    k.assign(acc, lit(dtype, 0.0));
                    g.for_reduced(k, LoopKind::Vectorize, &mut |k, ri| {
                        let v = g.x.at(k, &g.input_index(oi, ri));
                        k.assign(acc, Expr::local(acc) + v);
                    });
                    Expr::local(acc) / lit(dtype, run as f64)
                }
            };
            k.assign(m, mv);
            k.assign(acc, lit(dtype, 0.0));
            g.for_reduced(k, LoopKind::Vectorize, &mut |k, ri| {
                let d = g.x.at(k, &g.input_index(oi, ri)) - Expr::local(m);
                k.assign(acc, Expr::local(acc) + d.clone() * d);
            });
            let v = Expr::local(acc) / lit(dtype, n as f64);
            sink(k, oi, if root { v.sqrt() } else { v });
        });
    })))
}

/// The loop nest of `argmax` (`is_max`) or `argmin`.
pub(crate) fn arg(
    inputs: &[ComputeInput],
    a: &ArgReduceAttrs,
    out: &OutType,
    is_max: bool,
) -> Result<TensorDef, String> {
    let g = geometry(inputs, a, out)?;
    let dtype = g.x.dtype;
    if g.run() == 0 || dtype == DType::BOOL || g.run() > i64::from(i32::MAX) {
        return Err("this arg-reduction runs in the reference kernel".into());
    }
    let last = a.select_last_index;
    Ok(TensorDef::Nest(Rc::new(move |k, sink| {
        let best = k.local("best", dtype);
        let pos = k.local("pos", DType::I32);
        let g = g.clone();
        let reduced = g.reduced();
        for_each_index(k, &g.out.clone(), LoopKind::Serial, &mut |k, oi| {
            let first = vec![Index::Const(0); reduced.len()];
            let init = g.x.at(k, &g.input_index(oi, &first));
            k.assign(best, init);
            k.assign(pos, Expr::i32(0));
            g.for_reduced(k, LoopKind::Serial, &mut |k, ri| {
                let v = g.x.at(k, &g.input_index(oi, ri));
                let b = Expr::local(best);
                let better = if is_max { v.clone().gt(b.clone()) } else { v.clone().lt(b.clone()) };
                let take = if last { better.or(v.clone().equal(b)) } else { better };
                let p = Expr::index(flatten(&reduced, ri)).cast(DType::I32);
                k.if_then(take, |k| {
                    k.assign(best, v);
                    k.assign(pos, p);
                });
            });
            sink(k, oi, Expr::local(pos));
        });
    })))
}
