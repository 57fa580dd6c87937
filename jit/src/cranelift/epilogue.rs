//! Recognising a product's epilogue: the loop nest right after a `gemm` that reads the
//! product's temp element by element, adds loads to it and clamps it into an output, which
//! then runs natively at AVX-512 width (`blas/epilogue.rs`) instead of at Cranelift's four
//! lanes. kir is unchanged (the OpenCL backend and the interpreter run the loops).
//!
//! The nest must be perfect, of constant extents, and its innermost body one of
//! ```text
//! anchor = gemm[g]; out[o] = act(anchor + x[a] + y[b]);
//! out[o] = act(gemm[g] + x[a]);
//! ```
//! with up to two addends (either side of each `+`), and `act` a chain of selects against
//! float constants: `select(v cmp c, v, d)` with either arm a constant, `max(v, c)`,
//! `min(v, c)` (ReLU, ReLU6's clip). Every index is affine in the nest's variables, with
//! the output, the product and contiguous addends at stride 1 in the innermost loop and
//! broadcast addends (a per-row bias) at stride 0. Anything else is emitted as loops.

use super::vector::{affine, index_mentions_local, index_mentions_var, mentions_local, Affine};
use crate::blas::epilogue::{Arm, Cmp, Plan, Step, MAX_ADDENDS, MAX_STEPS};
use relay_devices::{DType, Scalar};
use relay_kir::{BinOp, BufferId, Expr, Index, Kernel, LocalId, Stmt, VarId};
use std::collections::HashSet;

/// A recognised epilogue.
pub(crate) struct Epilogue {
    /// The nest as the native routine runs it.
    pub plan: Plan,
    /// The buffers of the output, the product and the addends, each with the part of its
    /// index that is not of the nest's variables (its element in the nest's first iteration,
    /// a function of the enclosing loops' variables and of syms).
    pub operands: Vec<(BufferId, Affine)>,
}

/// The epilogue `s` is, when it follows a `gemm` into `product` in `kernel` (see the module
/// documentation); `None` otherwise.
pub(crate) fn recognise(kernel: &Kernel, product: BufferId, s: &Stmt) -> Option<Epilogue> {
    let (vars, extents, body) = perfect_nest(s)?;
    let (out, out_index, value, anchor_local) = match body {
        [Stmt::Assign { local, value: Expr::Load { buf, index } }, Stmt::Store { buf: out, index: at, value }]
            if *buf == product =>
        {
            (*out, at, value, Some((*local, index)))
        }
        [Stmt::Store { buf, index, value }] => (*buf, index, value, None),
        _ => return None,
    };
    let is_anchor = |e: &Expr| match (e, anchor_local) {
        (Expr::Local(l), Some((local, _))) => *l == local,
        (Expr::Load { buf, .. }, None) => *buf == product,
        _ => false,
    };
    let (sum, steps) = activation(value)?;
    let (anchor, loads) = addends(sum, &is_anchor)?;
    let product_index = match (anchor, anchor_local) {
        (_, Some((local, index))) => {
            // The nest's last value of the local must not matter after it.
            if !assigned_before_read(&kernel.body, local, false)
                || kernel.locals.get(local.index())?.dtype != DType::F32
            {
                return None;
            }
            index
        }
        (Expr::Load { index, .. }, None) => index,
        _ => return None,
    };
    if loads.len() > MAX_ADDENDS || steps.len() > MAX_STEPS {
        return None;
    }
    let mut buffers = vec![(out, out_index), (product, product_index)];
    buffers.extend(loads);
    let distinct: HashSet<BufferId> = buffers.iter().map(|(b, _)| *b).collect();
    let f32s = buffers.iter().all(|(b, _)| kernel.buffer(*b).is_some_and(|d| d.dtype == DType::F32));
    if distinct.len() != buffers.len() || !f32s {
        return None;
    }
    let mut operands = Vec::with_capacity(buffers.len());
    let mut strides = Vec::with_capacity(buffers.len());
    for (buf, index) in buffers {
        let (base, s) = split(index, &vars)?;
        operands.push((buf, base));
        strides.push(s);
    }
    let (extents, strides) = merged(extents, strides);
    Some(Epilogue { plan: Plan::new(&extents, &strides, &steps)?, operands })
}

/// A perfect nest of loops of constant positive extents: its variables and extents, outer
/// to inner, and the innermost body.
fn perfect_nest(mut s: &Stmt) -> Option<(Vec<VarId>, Vec<i64>, &[Stmt])> {
    let (mut vars, mut extents) = (Vec::new(), Vec::new());
    loop {
        let Stmt::For { var, extent, body, .. } = s else { return None };
        vars.push(*var);
        extents.push(extent.as_const().filter(|&e| e >= 1)?);
        match body.as_slice() {
            [inner @ Stmt::For { .. }] => s = inner,
            body => return Some((vars, extents, body)),
        }
    }
}

/// `e` as `steps(v)`: the expression `v` the selects apply to and the selects, innermost
/// first.
fn activation(mut e: &Expr) -> Option<(&Expr, Vec<Step>)> {
    let mut steps = Vec::new();
    loop {
        if let Some((inner, step)) = select_step(e) {
            steps.push(step);
            e = inner;
        } else if let Some((inner, [outer, first])) = clip(e) {
            steps.extend([outer, first]);
            e = inner;
        } else {
            break;
        }
    }
    steps.reverse();
    Some((e, steps))
}

/// Relay's `clip` (`compute::clip`): `select(v < lo, lo, select(v > hi, hi, v))` with `lo <=
/// hi`, as the steps `v > hi ? hi : v`, then `w < lo ? lo : w` (outer first). The outer
/// select compares `v`, the step `w`; they differ only where `v > hi`, and there `w = hi`:
/// neither `v < lo` nor `hi < lo` holds.
fn clip(e: &Expr) -> Option<(&Expr, [Step; 2])> {
    let Expr::Select(cond, low, inner) = e else { return None };
    let Expr::Binary(BinOp::Lt, v, bound) = &**cond else { return None };
    let lo = constant(bound)?;
    let (w, high) = select_step(inner)?;
    let Step { cmp: Cmp::Gt, c: hi, then: Arm::Const(top), otherwise: Arm::Value } = high else {
        return None;
    };
    if w != &**v || constant(low) != Some(lo) || top != hi || lo > hi {
        return None;
    }
    let outer = Step { cmp: Cmp::Lt, c: lo, then: Arm::Const(lo), otherwise: Arm::Value };
    Some((w, [outer, high]))
}

/// `e` as one select against float constants of an inner value `v`: `select(v cmp c, a, b)`
/// (or `c cmp v`) with `a` and `b` each `v` or a constant, `max(v, c)` (`v > c ? v : c`),
/// `min(v, c)` (`v < c ? v : c`), either operand order.
fn select_step(e: &Expr) -> Option<(&Expr, Step)> {
    match e {
        Expr::Select(cond, a, b) => {
            let Expr::Binary(op, l, r) = &**cond else { return None };
            let cmp = comparison(*op)?;
            let (v, cmp, c) = match (constant(l), constant(r)) {
                (None, Some(c)) => (&**l, cmp, c),
                (Some(c), None) => (&**r, flipped(cmp), c),
                _ => return None,
            };
            let arm = |x: &Expr| if x == v { Some(Arm::Value) } else { constant(x).map(Arm::Const) };
            Some((v, Step { cmp, c, then: arm(a)?, otherwise: arm(b)? }))
        }
        Expr::Binary(op @ (BinOp::Max | BinOp::Min), l, r) => {
            let cmp = if *op == BinOp::Max { Cmp::Gt } else { Cmp::Lt };
            match (constant(l), constant(r)) {
                (None, Some(c)) => Some((&**l, Step { cmp, c, then: Arm::Value, otherwise: Arm::Const(c) })),
                // `c op v ? c : v` is `v op' c ? c : v`, `op'` the mirrored comparison.
                (Some(c), None) => {
                    Some((&**r, Step { cmp: flipped(cmp), c, then: Arm::Const(c), otherwise: Arm::Value }))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// `e` as `anchor + x[a] + ...` (each `+` with its load on either side), the loads in the
/// order they are added.
fn addends<'e>(
    e: &'e Expr,
    is_anchor: &dyn Fn(&Expr) -> bool,
) -> Option<(&'e Expr, Vec<(BufferId, &'e Index)>)> {
    if is_anchor(e) {
        return Some((e, Vec::new()));
    }
    let Expr::Binary(BinOp::Add, l, r) = e else { return None };
    [(l, r), (r, l)].into_iter().find_map(|(inner, load)| {
        let Expr::Load { buf, index } = &**load else { return None };
        let (anchor, mut loads) = addends(inner, is_anchor)?;
        loads.push((*buf, index));
        Some((anchor, loads))
    })
}

/// The value of a `float32` literal.
fn constant(e: &Expr) -> Option<f32> {
    match e {
        // A `float32` literal holds an `f32` exactly (`Literal::new`).
        Expr::Const(lit) if lit.dtype() == DType::F32 => match lit.value() {
            Scalar::Float(v) => Some(v as f32),
            _ => None,
        },
        _ => None,
    }
}

fn comparison(op: BinOp) -> Option<Cmp> {
    Some(match op {
        BinOp::Gt => Cmp::Gt,
        BinOp::Ge => Cmp::Ge,
        BinOp::Lt => Cmp::Lt,
        BinOp::Le => Cmp::Le,
        _ => return None,
    })
}

/// The comparison with its operands swapped: `c > v` is `v < c`.
fn flipped(cmp: Cmp) -> Cmp {
    match cmp {
        Cmp::Gt => Cmp::Lt,
        Cmp::Ge => Cmp::Le,
        Cmp::Lt => Cmp::Gt,
        Cmp::Le => Cmp::Ge,
    }
}

/// `index` as a base (terms free of the nest's variables and of loads) and a stride per
/// variable of the nest.
fn split(index: &Index, vars: &[VarId]) -> Option<(Affine, Vec<i64>)> {
    let mut a = affine(index)?;
    let stride = |v: &VarId| a.terms.iter().find(|(t, _)| *t == Index::Var(*v)).map_or(0, |(_, c)| *c);
    let strides = vars.iter().map(stride).collect();
    a.terms.retain(|(t, _)| !matches!(t, Index::Var(v) if vars.contains(v)));
    let nest: HashSet<VarId> = vars.iter().copied().collect();
    let loads = |t: &Index| {
        let mut any = false;
        t.visit_exprs(&mut |_| any = true);
        any
    };
    if a.terms.iter().any(|(t, _)| index_mentions_var(t, &nest) || loads(t)) {
        return None;
    }
    Some((a, strides))
}

/// The nest with dimensions of one iteration dropped and each pair of adjacent dimensions
/// that every operand walks contiguously (outer stride = inner stride × inner extent)
/// merged into one: a 1×1 convolution's tile rows become one long row.
fn merged(extents: Vec<i64>, strides: Vec<Vec<i64>>) -> (Vec<i64>, Vec<Vec<i64>>) {
    let keep: Vec<usize> = (0..extents.len()).filter(|&d| extents[d] > 1).collect();
    let mut e: Vec<i64> = keep.iter().map(|&d| extents[d]).collect();
    let mut s: Vec<Vec<i64>> = strides.iter().map(|s| keep.iter().map(|&d| s[d]).collect()).collect();
    if e.is_empty() {
        // One element: a nest of one dimension of extent 1.
        return (vec![1], strides.iter().map(|_| vec![1]).collect());
    }
    let mut d = e.len() - 1;
    while d > 0 {
        let joins = s.iter().all(|s| Some(s[d - 1]) == s[d].checked_mul(e[d]));
        if let (true, Some(joined)) = (joins, e[d - 1].checked_mul(e[d])) {
            e[d - 1] = joined;
            e.remove(d);
            for s in &mut s {
                s.remove(d - 1);
            }
        }
        d -= 1;
    }
    (e, s)
}

/// Whether every read of local `l` in `body` comes after an assignment to it earlier in the
/// same statement list or in an enclosing one (`assigned`): then no read sees the value a
/// loop's assignment leaves behind, and a nest that assigns it may run without it.
fn assigned_before_read(body: &[Stmt], l: LocalId, mut assigned: bool) -> bool {
    for s in body {
        let reads = match s {
            Stmt::For { extent, body, .. } => {
                index_mentions_local(extent, l) || !assigned_before_read(body, l, assigned)
            }
            Stmt::Store { index, value, .. } => index_mentions_local(index, l) || mentions_local(value, l),
            Stmt::Assign { value, .. } => mentions_local(value, l),
            Stmt::If { cond, then, otherwise } => {
                mentions_local(cond, l)
                    || !assigned_before_read(then, l, assigned)
                    || !assigned_before_read(otherwise, l, assigned)
            }
            Stmt::Gemm { .. } => false,
        };
        if reads && !assigned {
            return false;
        }
        assigned |= matches!(s, Stmt::Assign { local, .. } if *local == l);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_kir::{KernelBuilder, LoopKind};

    /// A tiled 1×1 convolution's tile (`rows` output rows of width 28 over `o` channels into
    /// a `[o, 28, 28]` output from row `first`) with `epilogue` over the anchor, a per-channel
    /// bias and the residual at the output's element.
    fn conv_tile(epilogue: fn(Expr, Expr, Expr) -> Expr) -> Kernel {
        let (o, rows, first) = (8, 3, 10);
        let mut k = KernelBuilder::new("tile");
        let x = k.input("x", DType::F32, [4, 28, 28]);
        let w = k.input("w", DType::F32, [o, 4]);
        let bias = k.input("bias", DType::F32, [o]);
        let res = k.input("res", DType::F32, [o, 28, 28]);
        let out = k.output("out", DType::F32, [o, 28, 28]);
        let gemm = k.temp("gemm", DType::F32, [o * rows * 28]);
        let anchor = k.local("anchor", DType::F32);
        let rows_of_x = relay_kir::RowOffsets::uniform(4, 784);
        k.gemm_block(gemm, w, (x, Index::Const(first * 28), rows_of_x), o, rows * 28, 4);
        k.for_(o, LoopKind::Serial, |k, c| {
            k.for_(rows, LoopKind::Serial, |k, r| {
                k.for_(28, LoopKind::Vectorize, |k, j| {
                    k.assign(anchor, Expr::load(gemm, c.clone() * (rows * 28) + r.clone() * 28 + j.clone()));
                    let at = (c.clone() * 28 + (r + first)) * 28 + j;
                    let v = epilogue(
                        Expr::local(anchor),
                        Expr::load(bias, c.clone()),
                        Expr::load(res, at.clone()),
                    );
                    k.store(out, at, v)
                })
            })
        });
        k.finish().unwrap()
    }

    fn recognised(k: &Kernel) -> Option<Epilogue> {
        let [Stmt::Gemm { out, .. }, nest, ..] = k.body.as_slice() else { panic!("{k}") };
        recognise(k, *out, nest)
    }

    #[test]
    fn a_convolution_tile_with_bias_residual_and_relu_is_one_plan() {
        let k = conv_tile(|g, b, r| {
            let v = g + b + r;
            Expr::select(v.clone().gt(Expr::f32(0.0)), v, Expr::f32(0.0))
        });
        let e = recognised(&k).expect("recognised");
        // Rows 28 apart in the output and the product merge: one row of 84 per channel.
        let relu = Step { cmp: Cmp::Gt, c: 0.0, then: Arm::Value, otherwise: Arm::Const(0.0) };
        let strides = [vec![784, 1], vec![84, 1], vec![1, 0], vec![784, 1]];
        assert_eq!(e.plan, Plan::new(&[8, 84], &strides, &[relu]).unwrap());
        let bases: Vec<i64> = e.operands.iter().map(|(_, a)| a.constant).collect();
        assert_eq!(bases, [280, 0, 0, 280]);
    }

    #[test]
    fn clips_as_selects_or_max_min_in_either_order_are_steps() {
        let clip = |g: Expr, b: Expr, _| {
            let v = b + g;
            let low = Expr::select(v.clone().ge(Expr::f32(0.0)), v, Expr::f32(0.0));
            Expr::select(Expr::f32(6.0).lt(low.clone()), Expr::f32(6.0), low)
        };
        let e = recognised(&conv_tile(clip)).expect("selects");
        let want = [
            Step { cmp: Cmp::Ge, c: 0.0, then: Arm::Value, otherwise: Arm::Const(0.0) },
            Step { cmp: Cmp::Gt, c: 6.0, then: Arm::Const(6.0), otherwise: Arm::Value },
        ];
        assert_eq!(e.plan, Plan::new(&[8, 84], &[vec![784, 1], vec![84, 1], vec![1, 0]], &want).unwrap());
        // Relay's `clip`: the outer select compares the value before the inner one.
        let relay_clip = |g: Expr, b: Expr, _| {
            let v = g + b;
            let high = Expr::select(v.clone().gt(Expr::f32(6.0)), Expr::f32(6.0), v.clone());
            Expr::select(v.lt(Expr::f32(0.0)), Expr::f32(0.0), high)
        };
        let e = recognised(&conv_tile(relay_clip)).expect("clip");
        let want = [
            Step { cmp: Cmp::Gt, c: 6.0, then: Arm::Const(6.0), otherwise: Arm::Value },
            Step { cmp: Cmp::Lt, c: 0.0, then: Arm::Const(0.0), otherwise: Arm::Value },
        ];
        assert_eq!(e.plan, Plan::new(&[8, 84], &[vec![784, 1], vec![84, 1], vec![1, 0]], &want).unwrap());
        let e =
            recognised(&conv_tile(|g, _, _| Expr::f32(6.0).min(g.max(Expr::f32(0.0))))).expect("max, min");
        let want = [
            Step { cmp: Cmp::Gt, c: 0.0, then: Arm::Value, otherwise: Arm::Const(0.0) },
            Step { cmp: Cmp::Gt, c: 6.0, then: Arm::Const(6.0), otherwise: Arm::Value },
        ];
        assert_eq!(e.plan, Plan::new(&[8, 84], &[vec![784, 1], vec![84, 1]], &want).unwrap());
    }

    #[test]
    fn other_epilogues_stay_loops() {
        let others: [fn(Expr, Expr, Expr) -> Expr; 6] = [
            // A `clip` whose bounds cross is not two steps.
            |g, _, _| {
                let high = Expr::select(g.clone().gt(Expr::f32(1.0)), Expr::f32(1.0), g.clone());
                Expr::select(g.lt(Expr::f32(2.0)), Expr::f32(2.0), high)
            },
            |g, b, _| (g + b).sigmoid(),
            |g, b, _| g * b,
            // Not the same value in the comparison and the arm.
            |g, b, r| Expr::select(g.clone().gt(Expr::f32(0.0)), g + b, r),
            |g, b, r| g + b + r.clone() + r,
            |g, _, _| Expr::select(g.clone().equal(Expr::f32(0.0)), g, Expr::f32(1.0)),
        ];
        for f in others {
            let k = conv_tile(f);
            assert!(recognised(&k).is_none(), "{k}");
        }
    }

    #[test]
    fn a_local_read_after_the_nest_keeps_the_loops() {
        let mut k = conv_tile(|g, b, _| g + b);
        let (anchor, out) = (relay_kir::LocalId(0), relay_kir::BufferId(4));
        k.body.push(Stmt::Store { buf: out, index: Index::Const(0), value: Expr::local(anchor) });
        assert!(recognised(&k).is_none());
    }
}
