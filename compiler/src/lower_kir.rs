//! Lowering a `Primitive=1` function to one kir [`Kernel`] by composing its operators'
//! compute rules (ARCHITECTURE.md §1; TVM's `LowerTE` over `te.compute` bodies).
//!
//! The function's parameters become input buffers (a tuple parameter one buffer per field),
//! its result the output buffer `out`, or, for a body that is a tuple of calls of one shape
//! (a FuseOps multi-output group), one buffer per field (`out0`, `out1`, ...) written by one
//! loop nest. Walking the body's operator calls in dependency order, each rule receives its
//! inputs as lazy element functions:
//! - a [`TensorDef::Lazy`] result is inlined into whatever reads it;
//! - a [`TensorDef::Nest`] result (an anchor) is run into a temp buffer, or straight into the
//!   output when it is the result, except for the *epilogue anchor*: the last anchor whose
//!   every path to the result goes through elementwise/broadcast ops of the result's shape.
//!   Its loop nest runs last, and each value it produces is kept in a local and passed
//!   through the rest of the group before being stored, so `relu(bias_add(dense(..)))` is one
//!   loop nest with no intermediate buffer.
//!
//! A result that later results read only through elementwise/broadcast calls of the results'
//! shape (the LSTM cell's `c` in `(c, o * tanh(c))`) is read at the loop nest's own index, so
//! each iteration computes it once into a local, stores it, and the later results read the
//! local. A result read at other indices is recomputed there (the read is of a value no
//! iteration may have stored yet).
//!
//! Only static shapes are lowered (FuseOps keeps `?`-shaped ops on their reference kernels).

use crate::ir::{Dim, ExprId, ExprKind, Function, LiteralValue, Module, TypeId, TypeKind, VarId};
use crate::kir::{check_bounds, BufferId, Expr, Extent, Index, Kernel, KernelBuilder, LocalId, LoopKind};
use crate::op::{
    for_each_index, AttrReader, ComputeInput, LazyTensor, NestFn, OpPattern, OpRegistry, OutType, TensorDef,
};
use crate::ty::TypeMap;
use relay_devices::{DType, Scalar};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
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
pub fn primitive_kernel(
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

    let mut values: HashMap<VarId, ComputeInput> = HashMap::default();
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
    // The results: the body, or the fields of a tuple body (FuseOps' multi-output groups),
    // one output buffer each, all of one shape so that one loop nest writes them.
    let results: Vec<ExprId> = match &m.expr(func.body).kind {
        ExprKind::Tuple(fields) => fields.clone(),
        _ => vec![func.body],
    };
    let out_types = results
        .iter()
        .map(|&r| out_type(m, types.expr(r).ok_or("an untyped result")?))
        .collect::<Result<Vec<_>, _>>()?;
    let shape = out_types.first().ok_or("a kernel without results")?.shape.clone();
    if out_types.iter().any(|t| t.shape != shape) {
        return Err("results of different shapes".into());
    }
    let outs: Vec<BufferId> = out_types
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let name = if results.len() == 1 { "out".to_string() } else { format!("out{i}") };
            k.output(name, t.dtype, t.shape.iter().map(|&d| Extent::Const(d)))
        })
        .collect();
    let output_of: HashMap<ExprId, usize> = results.iter().enumerate().map(|(i, &r)| (r, i)).collect();
    if output_of.len() != results.len() {
        return Err("a result listed twice".into());
    }

    // Definitions, before anything is emitted, so the epilogue anchor can be chosen.
    let consumers = consumers_of(m, &order);
    let tail = elementwise_tail(m, types, ops, &order, &consumers, &output_of, &shape);
    let epilogue = epilogue_anchor(m, types, ops, &order, &output_of, &tail, &shape);
    let mut defs: HashMap<ExprId, TensorDef> = HashMap::default();
    let mut nodes: HashMap<ExprId, LazyTensor> = HashMap::default();
    // Each result left for the final loop nest, with the local keeping its value for the
    // results that read it (in `order`, so a local is assigned before it is read).
    let mut pending: Vec<(ExprId, LazyTensor, Option<LocalId>)> = vec![];
    let mut anchor: Option<(NestFn, LocalId)> = None;
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
        let result_ty = out_type(m, types.expr(e).ok_or("an untyped call")?)?;
        // Rules compute half floats in `float32`; the result rounds once, here.
        let ty = OutType { dtype: computed_in(result_ty.dtype), shape: result_ty.shape.clone() };
        let result = rule(&inputs, &AttrReader::new(&m.symbols, attrs), &ty)
            .map_err(|why| format!("`{op_name}`: {why}"))?;
        let result = rounded_to(result_ty.dtype, result);
        let lazy = match (result.clone(), output_of.get(&e)) {
            // A result read by later results at the loop's own index (the `tail` property)
            // is computed once into a local, which they read: `tanh(%c)` does not
            // recompute `%c`.
            (TensorDef::Lazy(f), Some(_)) => {
                let computed = LazyTensor::new(ty.dtype, ty.shape.clone(), f);
                let shared = consumers.contains_key(&e) && tail.contains(&e);
                let local = shared.then(|| k.local("result", ty.dtype));
                pending.push((e, computed.clone(), local));
                match local {
                    Some(l) => {
                        LazyTensor::new(ty.dtype, ty.shape.clone(), Rc::new(move |_, _| Expr::local(l)))
                    }
                    None => computed,
                }
            }
            (TensorDef::Lazy(f), None) => LazyTensor::new(ty.dtype, ty.shape.clone(), f),
            (TensorDef::Nest(nest), _) if Some(e) == epilogue => {
                let local = k.local("anchor", ty.dtype);
                anchor = Some((nest, local));
                LazyTensor::new(ty.dtype, ty.shape.clone(), Rc::new(move |_, _| Expr::local(local)))
            }
            (TensorDef::Nest(nest), Some(&i)) => {
                let (out, dtype) = (outs[i], result_ty.dtype);
                nest(&mut k, &mut |k, idx, v| k.store_at(out, idx, narrowed(dtype, v)));
                LazyTensor::new(
                    ty.dtype,
                    ty.shape.clone(),
                    Rc::new(move |k, idx| widened(dtype, k.load(out, idx))),
                )
            }
            (TensorDef::Nest(nest), None) => {
                let temp = k.temp("t", ty.dtype, ty.shape.iter().map(|&d| Extent::Const(d)));
                nest(&mut k, &mut |k, idx, v| k.store_at(temp, idx, v));
                LazyTensor::new(ty.dtype, ty.shape.clone(), Rc::new(move |k, idx| k.load(temp, idx)))
            }
        };
        defs.insert(e, result);
        nodes.insert(e, lazy);
    }
    if results.iter().any(|r| !defs.contains_key(r)) {
        return Err("a result is not an operator call".into());
    }
    // Stores every pending result at `idx`.
    let store_results = |k: &mut KernelBuilder, idx: &[Index]| {
        for (e, computed, local) in &pending {
            let mut value = computed.at(k, idx);
            if let Some(l) = *local {
                k.assign(l, value);
                value = Expr::local(l);
            }
            if let Some(&i) = output_of.get(e) {
                k.store_at(outs[i], idx, narrowed(out_types[i].dtype, value));
            }
        }
    };
    match anchor {
        Some((nest, local)) => nest(&mut k, &mut |k, idx, v| {
            k.assign(local, v);
            store_results(k, idx);
        }),
        None if !pending.is_empty() => {
            for_each_index(&mut k, &shape, LoopKind::Vectorize, &mut |k, idx| store_results(k, idx))
        }
        // Every result was an anchor, already run into its output.
        None => {}
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
    if t.dtype.is_half_float() {
        let dtype = t.dtype;
        return Ok(LazyTensor::new(
            DType::F32,
            t.shape,
            Rc::new(move |k, idx| widened(dtype, k.load(buf, idx))),
        ));
    }
    Ok(LazyTensor::from_buffer(buf, t.dtype, t.shape))
}

/// The dtype compute rules work in for tensors of `dtype`: `float32` for the half floats,
/// whose arithmetic is `float32`'s rounded once per operator (TVM's CPU target; the reference
/// kernels' `kernels::half_float`; kir holds half floats only in buffers, `kir::half`).
fn computed_in(dtype: DType) -> DType {
    if dtype.is_half_float() {
        DType::F32
    } else {
        dtype
    }
}

/// A value read from a buffer of `dtype`, as rules see it (half floats widened, exactly).
fn widened(dtype: DType, v: Expr) -> Expr {
    if dtype.is_half_float() {
        v.cast(DType::F32)
    } else {
        v
    }
}

/// A value computed for a tensor of `dtype`, as a buffer of `dtype` holds it: a half float's
/// `float32` value rounded (a value [`rounded_to`] already rounded and widened is narrowed
/// without a second conversion).
fn narrowed(dtype: DType, v: Expr) -> Expr {
    if !dtype.is_half_float() {
        return v;
    }
    match v {
        Expr::Cast(DType::F32, inner) if matches!(*inner, Expr::Cast(d, _) if d == dtype) => *inner,
        v => v.cast(dtype),
    }
}

/// The definition of a call whose result is of `dtype`, each value rounded to it and widened
/// back when it is a half float: one rounding per operator, whatever reads the value next.
fn rounded_to(dtype: DType, def: TensorDef) -> TensorDef {
    if !dtype.is_half_float() {
        return def;
    }
    let round = move |v: Expr| widened(dtype, v.cast(dtype));
    match def {
        TensorDef::Lazy(f) => TensorDef::Lazy(Rc::new(move |k, idx| round(f(k, idx)))),
        TensorDef::Nest(nest) => {
            TensorDef::Nest(Rc::new(move |k, sink| nest(k, &mut |k, idx, v| sink(k, idx, round(v)))))
        }
    }
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
                // A half-float literal is its rounded value, in `float32`.
                let (dtype, value) = (computed_in(dtype), relay_devices::arith::cast(value, dtype));
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
    let mut done = HashSet::default();
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

/// The calls of `order` that read each call.
fn consumers_of(m: &Module, order: &[ExprId]) -> HashMap<ExprId, Vec<ExprId>> {
    let mut consumers: HashMap<ExprId, Vec<ExprId>> = HashMap::default();
    for &e in order {
        if let ExprKind::Call { args, .. } = &m.expr(e).kind {
            for &a in args {
                consumers.entry(a).or_default().push(e);
            }
        }
    }
    consumers
}

fn pattern_of(m: &Module, ops: &OpRegistry, e: ExprId) -> OpPattern {
    op_name(m, e).and_then(|n| ops.lookup(n)).map_or(OpPattern::Opaque, |id| ops.get(id).pattern)
}

/// The calls whose every path to the results goes through elementwise or broadcast calls of
/// the results' shape `shape` only. Those calls read the value at the index they compute,
/// so inside the loop nest over `shape` it is read at the loop's own index.
fn elementwise_tail(
    m: &Module,
    types: &TypeMap,
    ops: &OpRegistry,
    order: &[ExprId],
    consumers: &HashMap<ExprId, Vec<ExprId>>,
    results: &HashMap<ExprId, usize>,
    shape: &[i64],
) -> HashSet<ExprId> {
    let mut tail = HashSet::default();
    for &e in order.iter().rev() {
        let ok = match consumers.get(&e) {
            None => results.contains_key(&e),
            Some(cs) => cs.iter().all(|c| {
                pattern_of(m, ops, *c) <= OpPattern::Broadcast
                    && shape_is(m, types, *c, shape)
                    && tail.contains(c)
            }),
        };
        if ok {
            tail.insert(e);
        }
    }
    tail
}

/// Whether call `e` has shape `shape`.
fn shape_is(m: &Module, types: &TypeMap, e: ExprId, shape: &[i64]) -> bool {
    types.expr(e).and_then(|t| out_type(m, t).ok()).is_some_and(|t| t.shape == shape)
}

/// The epilogue anchor (see the module docs): the last call that is not a result, whose rule
/// is an anchor (by its pattern), of the results' shape, and in their elementwise `tail`.
fn epilogue_anchor(
    m: &Module,
    types: &TypeMap,
    ops: &OpRegistry,
    order: &[ExprId],
    results: &HashMap<ExprId, usize>,
    tail: &HashSet<ExprId>,
    shape: &[i64],
) -> Option<ExprId> {
    order
        .iter()
        .rev()
        .find(|&&e| {
            !results.contains_key(&e)
                && matches!(pattern_of(m, ops, e), OpPattern::CommReduce | OpPattern::OutEWiseFusable)
                && shape_is(m, types, e, shape)
                && tail.contains(&e)
        })
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kir::{interp, BinOp, Stmt, UnOp};
    use crate::op::{OpDef, RelType, RelationResult};
    use crate::syntax::parse_module;
    use crate::ty::infer_types;
    use relay_devices::Tensor;

    fn same_as_first(args: &[RelType], _: &AttrReader) -> RelationResult {
        match args.first() {
            Some(t) if t.is_known() => Ok(Some(t.clone())),
            _ => Ok(None),
        }
    }

    fn tensor(inputs: &[ComputeInput], i: usize) -> Result<LazyTensor, String> {
        match inputs.get(i) {
            Some(ComputeInput::Tensor(t)) => Ok(t.clone()),
            _ => Err("expected a tensor".into()),
        }
    }

    fn unary(inputs: &[ComputeInput], op: UnOp) -> Result<TensorDef, String> {
        let x = tensor(inputs, 0)?;
        Ok(TensorDef::Lazy(Rc::new(move |k, idx| x.at(k, idx).unary(op))))
    }

    fn binary(inputs: &[ComputeInput], op: BinOp) -> Result<TensorDef, String> {
        let (a, b) = (tensor(inputs, 0)?, tensor(inputs, 1)?);
        Ok(TensorDef::Lazy(Rc::new(move |k, idx| a.at_broadcast(k, idx).binary(op, b.at_broadcast(k, idx)))))
    }

    fn sigmoid(i: &[ComputeInput], _: &AttrReader, _: &OutType) -> Result<TensorDef, String> {
        unary(i, UnOp::Sigmoid)
    }

    fn tanh(i: &[ComputeInput], _: &AttrReader, _: &OutType) -> Result<TensorDef, String> {
        unary(i, UnOp::Tanh)
    }

    fn add(i: &[ComputeInput], _: &AttrReader, _: &OutType) -> Result<TensorDef, String> {
        binary(i, BinOp::Add)
    }

    fn multiply(i: &[ComputeInput], _: &AttrReader, _: &OutType) -> Result<TensorDef, String> {
        binary(i, BinOp::Mul)
    }

    /// The elements of a vector in reverse order: reads its input at another index.
    fn reverse(i: &[ComputeInput], _: &AttrReader, out: &OutType) -> Result<TensorDef, String> {
        let x = tensor(i, 0)?;
        let last = out.shape.first().copied().ok_or("a vector")? - 1;
        Ok(TensorDef::Lazy(Rc::new(move |k, idx| x.at(k, &[Index::Const(last) - idx[0].clone()]))))
    }

    fn registry() -> OpRegistry {
        let mut r = OpRegistry::default();
        let rules: [(&'static str, usize, OpPattern, crate::op::ComputeFn); 5] = [
            ("sigmoid", 1, OpPattern::ElemWise, sigmoid),
            ("tanh", 1, OpPattern::ElemWise, tanh),
            ("add", 2, OpPattern::Broadcast, add),
            ("multiply", 2, OpPattern::Broadcast, multiply),
            ("reverse", 1, OpPattern::Injective, reverse),
        ];
        for (name, num_inputs, pattern, rule) in rules {
            let def = OpDef {
                name,
                num_inputs,
                attrs: &[],
                relation: same_as_first,
                pattern,
                compute: Some(rule),
                canonicalize: None,
                alter_op_layout: None,
                to_static: None,
                project: None,
                scalar: None,
                doc: "",
            };
            assert!(r.register(def).is_ok());
        }
        r
    }

    /// The kernel of the primitive function `@f` of `text` calls.
    fn lower(text: &str) -> Result<Kernel, String> {
        let mut m = parse_module("t.relay", text).map_err(|e| e.render(&Default::default(), false)).unwrap();
        let ops = registry();
        let types = infer_types(&mut m, &ops).map_err(|e| e.render(&m.sources, false)).unwrap();
        let body = m.function_by_name("f").unwrap().func.body;
        let ExprKind::Call { callee, .. } = &m.expr(body).kind else { panic!("@f is not a call") };
        let ExprKind::Function(func) = &m.expr(*callee).kind else { panic!("@f calls no function") };
        primitive_kernel(&m, &types, &ops, func)
    }

    /// How many `op` nodes the statements hold.
    fn count(stmts: &[Stmt], op: UnOp) -> usize {
        fn expr(e: &Expr, op: UnOp) -> usize {
            match e {
                Expr::Unary(o, a) => usize::from(*o == op) + expr(a, op),
                Expr::Binary(_, a, b) => expr(a, op) + expr(b, op),
                Expr::Select(c, a, b) => expr(c, op) + expr(a, op) + expr(b, op),
                Expr::Cast(_, a) | Expr::Reinterpret(_, a) => expr(a, op),
                Expr::Const(_) | Expr::Load { .. } | Expr::Local(_) | Expr::Index(_) => 0,
            }
        }
        stmts
            .iter()
            .map(|s| match s {
                Stmt::For { body, .. } => count(body, op),
                Stmt::If { cond, then, otherwise } => expr(cond, op) + count(then, op) + count(otherwise, op),
                Stmt::Store { value, .. } | Stmt::Assign { value, .. } => expr(value, op),
                Stmt::Gemm { .. } => 0,
            })
            .sum()
    }

    fn run(kernel: &Kernel, inputs: &[Vec<f32>]) -> Vec<Vec<f32>> {
        let n = inputs[0].len();
        let ins: Vec<Tensor> = inputs.iter().map(|v| Tensor::from_vec(vec![n], v.clone()).unwrap()).collect();
        let refs: Vec<&Tensor> = ins.iter().collect();
        let mut outs: Vec<Tensor> = (0..kernel.num_outputs())
            .map(|_| Tensor::zeros(relay_devices::DType::F32, vec![n]).unwrap())
            .collect();
        interp::run(kernel, &refs, &mut outs, &[]).unwrap();
        outs.iter().map(|t| t.as_slice::<f32>().unwrap().to_vec()).collect()
    }

    fn close(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-6)
    }

    fn sig(x: f32) -> f32 {
        1.0 / (1.0 + (-x).exp())
    }

    #[test]
    fn a_tuple_of_results_is_one_loop_nest_computing_each_op_once() {
        // The LSTM cell's `(c, o * tanh(c))`.
        let kernel = lower(
            "#[version = \"0.0.5\"]
            def @f(%g: Tensor[(5), float32], %fc: Tensor[(5), float32]) {
              (fn (%p0: Tensor[(5), float32], %p1: Tensor[(5), float32], Primitive=1) {
                %0 = add(tanh(%p0), %p1);
                (%0, multiply(sigmoid(%p0), tanh(%0)))
              })(%g, %fc)
            }",
        )
        .unwrap();
        assert_eq!(kernel.num_outputs(), 2);
        assert_eq!(kernel.body.len(), 1, "one loop nest");
        assert_eq!((count(&kernel.body, UnOp::Tanh), count(&kernel.body, UnOp::Sigmoid)), (2, 1));
        let (g, fc): (Vec<f32>, Vec<f32>) =
            (vec![-2.0, -0.5, 0.0, 0.7, 3.0], vec![0.1, -0.2, 0.3, 0.4, -0.5]);
        let c: Vec<f32> = g.iter().zip(&fc).map(|(g, f)| g.tanh() + f).collect();
        let h: Vec<f32> = g.iter().zip(&c).map(|(g, c)| sig(*g) * c.tanh()).collect();
        let outs = run(&kernel, &[g, fc]);
        assert!(close(&outs[0], &c) && close(&outs[1], &h), "{outs:?}");
    }

    #[test]
    fn a_result_read_at_other_indices_is_recomputed_there() {
        let kernel = lower(
            "#[version = \"0.0.5\"]
            def @f(%x: Tensor[(4), float32]) {
              (fn (%p0: Tensor[(4), float32], Primitive=1) {
                %0 = tanh(%p0);
                (%0, add(reverse(%0), %0))
              })(%x)
            }",
        )
        .unwrap();
        assert_eq!(kernel.num_outputs(), 2);
        let x: Vec<f32> = vec![-1.0, 0.25, 0.5, 2.0];
        let c: Vec<f32> = x.iter().map(|x| x.tanh()).collect();
        let sum: Vec<f32> = (0..4).map(|i| c[3 - i] + c[i]).collect();
        let outs = run(&kernel, &[x]);
        assert!(close(&outs[0], &c) && close(&outs[1], &sum), "{outs:?}");
    }

    #[test]
    fn results_of_different_shapes_are_refused() {
        let refused = lower(
            "#[version = \"0.0.5\"]
            def @f(%x: Tensor[(4), float32], %y: Tensor[(2, 4), float32]) {
              (fn (%p0: Tensor[(4), float32], %p1: Tensor[(2, 4), float32], Primitive=1) {
                (tanh(%p0), tanh(%p1))
              })(%x, %y)
            }",
        );
        assert!(refused.is_err_and(|e| e.contains("shapes")));
    }
}
