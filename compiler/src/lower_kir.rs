//! Lowering a `Primitive=1` function to one kir [`Kernel`] by composing its operators'
//! compute rules (ARCHITECTURE.md §1; TVM's `LowerTE` over `te.compute` bodies).
//!
//! The function's parameters become input buffers (a tuple parameter one buffer per field),
//! its result the single output buffer. Walking the body's operator calls in dependency
//! order, each rule receives its inputs as lazy element functions:
//! - a [`TensorDef::Lazy`] result is inlined into whatever reads it;
//! - a [`TensorDef::Nest`] result (an anchor) is run into a temp buffer, or straight into the
//!   output when it is the result, except for the *epilogue anchor*: the last anchor whose
//!   every path to the result goes through elementwise/broadcast ops of the result's shape.
//!   Its loop nest runs last, and each value it produces is kept in a local and passed
//!   through the rest of the group before being stored, so `relu(bias_add(dense(..)))` is one
//!   loop nest with no intermediate buffer.
//!
//! Only static shapes are lowered (FuseOps keeps `?`-shaped ops on their reference kernels).

use crate::ir::{Dim, ExprId, ExprKind, Function, LiteralValue, Module, TypeId, TypeKind, VarId};
use crate::kir::{check_bounds, Expr, Extent, Kernel, KernelBuilder, LoopKind};
use crate::op::{
    for_each_index, AttrReader, ComputeInput, LazyTensor, NestFn, OpPattern, OpRegistry, OutType, TensorDef,
};
use crate::ty::TypeMap;
use relay_devices::Scalar;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// The longest kernel name made from op names; longer ones are cut (names are for printing).
const MAX_NAME: usize = 60;

/// Lowers primitive function `func` to a verified kir kernel whose bounds are proved.
///
/// # Errors
/// A message when a parameter or the result is not a statically shaped tensor (or tuple of
/// them), the body holds something other than operator calls on parameters and literals, an
/// operator has no compute rule or its rule refuses the call, or the composed kernel does
/// not verify.
pub fn lower_primitive(
    m: &Module,
    types: &TypeMap,
    ops: &OpRegistry,
    func: &Function,
) -> Result<Kernel, String> {
    let order = calls_in_order(m, func.body)?;
    let names: Vec<&str> = order.iter().filter_map(|&e| op_name(m, e)).collect();
    let mut name = format!("fused_{}", names.join("_").replace('.', "_"));
    name.truncate(MAX_NAME);
    let mut k = KernelBuilder::new(name);

    let mut values: HashMap<VarId, ComputeInput> = HashMap::new();
    let mut inputs = 0;
    for &p in &func.params {
        let ty = types.var(p).ok_or("an untyped parameter")?;
        let input = match m.types.kind(ty) {
            TypeKind::Tuple(fields) => {
                let ts = fields
                    .iter()
                    .map(|&f| input_buffer(m, &mut k, f, &mut inputs))
                    .collect::<Result<_, _>>()?;
                ComputeInput::Tuple(ts)
            }
            _ => ComputeInput::Tensor(input_buffer(m, &mut k, ty, &mut inputs)?),
        };
        values.insert(p, input);
    }
    let root = func.body;
    let out_ty = out_type(m, types.expr(root).ok_or("an untyped result")?)?;
    let out = k.output("out", out_ty.dtype, out_ty.shape.iter().map(|&d| Extent::Const(d)));

    // Definitions, before anything is emitted, so the epilogue anchor can be chosen.
    let mut defs: HashMap<ExprId, (OutType, TensorDef)> = HashMap::new();
    let mut nodes: HashMap<ExprId, LazyTensor> = HashMap::new();
    let epilogue = epilogue_anchor(m, types, ops, &order, root, &out_ty)?;
    let mut anchor: Option<(NestFn, crate::kir::LocalId)> = None;
    for &e in &order {
        let ExprKind::Call { callee, args, attrs } = &m.expr(e).kind else { continue };
        let ExprKind::Op(op) = m.expr(*callee).kind else { return Err("a call of a non-operator".into()) };
        let op_name = m.name(op);
        let def = ops
            .lookup(op_name)
            .map(|id| ops.get(id))
            .ok_or_else(|| format!("unknown operator `{op_name}`"))?;
        let rule = def.compute.ok_or_else(|| format!("`{op_name}` has no compute rule"))?;
        let inputs = args.iter().map(|&a| arg_value(m, &values, &nodes, a)).collect::<Result<Vec<_>, _>>()?;
        let ty = out_type(m, types.expr(e).ok_or("an untyped call")?)?;
        let result = rule(&inputs, &AttrReader::new(&m.symbols, attrs), &ty)
            .map_err(|why| format!("`{op_name}`: {why}"))?;
        let lazy = match result.clone() {
            TensorDef::Lazy(f) => LazyTensor::new(ty.dtype, ty.shape.clone(), f),
            TensorDef::Nest(nest) if Some(e) == epilogue => {
                let local = k.local("anchor", ty.dtype);
                anchor = Some((nest, local));
                LazyTensor::new(ty.dtype, ty.shape.clone(), Rc::new(move |_, _| Expr::local(local)))
            }
            TensorDef::Nest(nest) if e == root => {
                nest(&mut k, &mut |k, idx, v| k.store_at(out, idx, v));
                LazyTensor::new(ty.dtype, ty.shape.clone(), Rc::new(move |k, idx| k.load(out, idx)))
            }
            TensorDef::Nest(nest) => {
                let temp = k.temp("t", ty.dtype, ty.shape.iter().map(|&d| Extent::Const(d)));
                nest(&mut k, &mut |k, idx, v| k.store_at(temp, idx, v));
                LazyTensor::new(ty.dtype, ty.shape.clone(), Rc::new(move |k, idx| k.load(temp, idx)))
            }
        };
        defs.insert(e, (ty, result));
        nodes.insert(e, lazy);
    }
    let result = nodes.get(&root).cloned().ok_or("the result is not an operator call")?;
    match (anchor, defs.get(&root)) {
        (Some((nest, local)), _) => nest(&mut k, &mut |k, idx, v| {
            k.assign(local, v);
            let value = result.at(k, idx);
            k.store_at(out, idx, value);
        }),
        (None, Some((_, TensorDef::Lazy(_)))) => {
            for_each_index(&mut k, &out_ty.shape, LoopKind::Vectorize, &mut |k, idx| {
                let value = result.at(k, idx);
                k.store_at(out, idx, value);
            })
        }
        // The result was an anchor, already run into the output.
        (None, _) => {}
    }
    let kernel = k.finish().map_err(|e| e.to_string())?;
    check_bounds(&kernel, &[]).map_err(|e| e.to_string())?;
    Ok(kernel)
}

fn op_name(m: &Module, e: ExprId) -> Option<&str> {
    let ExprKind::Call { callee, .. } = &m.expr(e).kind else { return None };
    match m.expr(*callee).kind {
        ExprKind::Op(op) => Some(m.name(op)),
        _ => None,
    }
}

/// The static tensor type `ty`.
fn out_type(m: &Module, ty: TypeId) -> Result<OutType, String> {
    let TypeKind::Tensor { shape, dtype } = m.types.kind(ty) else {
        return Err("a non-tensor value in a kernel".into());
    };
    let shape = shape
        .iter()
        .map(|d| match d {
            Dim::Known(n) if *n >= 0 => Ok(*n),
            _ => Err("a `?` dimension in a kernel".to_string()),
        })
        .collect::<Result<_, _>>()?;
    Ok(OutType { dtype: *dtype, shape })
}

fn input_buffer(
    m: &Module,
    k: &mut KernelBuilder,
    ty: TypeId,
    count: &mut usize,
) -> Result<LazyTensor, String> {
    let t = out_type(m, ty)?;
    let buf = k.input(format!("in{count}"), t.dtype, t.shape.iter().map(|&d| Extent::Const(d)));
    *count += 1;
    Ok(LazyTensor::from_buffer(buf, t.dtype, t.shape))
}

/// The value of argument `a`: a parameter, an earlier call, a literal, or a tuple of those.
fn arg_value(
    m: &Module,
    params: &HashMap<VarId, ComputeInput>,
    nodes: &HashMap<ExprId, LazyTensor>,
    a: ExprId,
) -> Result<ComputeInput, String> {
    let tensor = |e: ExprId| -> Result<LazyTensor, String> {
        match &m.expr(e).kind {
            ExprKind::Var(v) => match params.get(v) {
                Some(ComputeInput::Tensor(t)) => Ok(t.clone()),
                _ => Err("a tuple parameter where a tensor was expected".into()),
            },
            ExprKind::Literal(lit) => {
                let (dtype, value) = (
                    lit.dtype,
                    match lit.value {
                        LiteralValue::Int(i) => Scalar::Int(i),
                        LiteralValue::Float(f) => Scalar::Float(f),
                        LiteralValue::Bool(b) => Scalar::Bool(b),
                    },
                );
                Ok(LazyTensor::new(dtype, vec![], Rc::new(move |_, _| Expr::lit(dtype, value))))
            }
            _ => nodes.get(&e).cloned().ok_or_else(|| "an unsupported expression in a kernel".to_string()),
        }
    };
    match &m.expr(a).kind {
        ExprKind::Var(v) if matches!(params.get(v), Some(ComputeInput::Tuple(_))) => {
            params.get(v).cloned().ok_or_else(|| "unbound parameter".to_string())
        }
        ExprKind::Tuple(fields) => {
            Ok(ComputeInput::Tuple(fields.iter().map(|&f| tensor(f)).collect::<Result<_, _>>()?))
        }
        _ => tensor(a).map(ComputeInput::Tensor),
    }
}

/// The operator calls under `body`, each after the calls it depends on (the body is a DAG).
fn calls_in_order(m: &Module, body: ExprId) -> Result<Vec<ExprId>, String> {
    let mut order = Vec::new();
    let mut done = HashSet::new();
    let mut stack = vec![(body, false)];
    while let Some((e, expanded)) = stack.pop() {
        if done.contains(&e) {
            continue;
        }
        let kids: Vec<ExprId> = match &m.expr(e).kind {
            ExprKind::Call { args, .. } => args.clone(),
            ExprKind::Tuple(fields) => fields.clone(),
            ExprKind::Var(_) | ExprKind::Literal(_) => vec![],
            _ => {
                return Err("a kernel body holds only operator calls, tuples, parameters and literals".into())
            }
        };
        if expanded || kids.is_empty() {
            done.insert(e);
            if matches!(m.expr(e).kind, ExprKind::Call { .. }) {
                order.push(e);
            }
            continue;
        }
        stack.push((e, true));
        stack.extend(kids.into_iter().filter(|k| !done.contains(k)).map(|k| (k, false)));
    }
    Ok(order)
}

/// The epilogue anchor (see the module docs): the last call whose rule is an anchor (by its
/// pattern) and whose every consumer, up to `root`, is an elementwise or broadcast call with
/// the result's shape.
fn epilogue_anchor(
    m: &Module,
    types: &TypeMap,
    ops: &OpRegistry,
    order: &[ExprId],
    root: ExprId,
    out: &OutType,
) -> Result<Option<ExprId>, String> {
    let mut consumers: HashMap<ExprId, Vec<ExprId>> = HashMap::new();
    for &e in order {
        if let ExprKind::Call { args, .. } = &m.expr(e).kind {
            for &a in args {
                consumers.entry(a).or_default().push(e);
            }
        }
    }
    let pattern = |e: ExprId| {
        op_name(m, e).and_then(|n| ops.lookup(n)).map_or(OpPattern::Opaque, |id| ops.get(id).pattern)
    };
    let shape_is_out =
        |e: ExprId| types.expr(e).and_then(|t| out_type(m, t).ok()).is_some_and(|t| t.shape == out.shape);
    // Whether every path from `e` to the root stays elementwise at the output shape.
    let mut tail_ok: HashMap<ExprId, bool> = HashMap::new();
    for &e in order.iter().rev() {
        let ok = if e == root {
            true
        } else {
            let cs = consumers.get(&e).map_or(&[][..], Vec::as_slice);
            !cs.is_empty()
                && cs.iter().all(|c| {
                    pattern(*c) <= OpPattern::Broadcast
                        && shape_is_out(*c)
                        && tail_ok.get(c).copied().unwrap_or(false)
                })
        };
        tail_ok.insert(e, ok);
    }
    Ok(order
        .iter()
        .rev()
        .find(|&&e| {
            e != root
                && matches!(pattern(e), OpPattern::CommReduce | OpPattern::OutEWiseFusable)
                && shape_is_out(e)
                && tail_ok.get(&e).copied().unwrap_or(false)
        })
        .copied())
}
