//! Constant folding of fused kernels (`FoldFusedConstants`, the kernel-level half of TVM's
//! `FoldConstant`; [`super::fold_constant()`] is the Relay-level pass): a kernel call whose arguments are all constants
//! (or that has none, like `zeros(shape=[1, 150])`) is computed once, at compile time, and
//! replaced by the constant it produces.
//!
//! Runs after [`fuse_ops`](super::fuse_ops), on the primitive calls of ANF let chains: each
//! foldable call is lowered to kir ([`crate::lower_kir::primitive_kernel`]) and run by the kir
//! interpreter, the oracle the JIT is tested against. A call inside a recursive closure
//! (TreeLSTM's leaves start from a zero memory cell) otherwise launches a kernel every time
//! it is reached. Results larger than [`MAX_FOLDED_ELEMENTS`] stay calls, so executables do
//! not grow by what a kernel could compute at run time; so do kernels that would take more
//! than [`MAX_FOLD_WORK`] steps or temp elements (`sum(zeros(shape=[100000, 100000]))` is
//! left to run, and fail on the VM's memory budget, rather than spin in the compiler).

use super::util::builder::is_primitive;
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use crate::codegen::constant_tensor;
use crate::diagnostics::CompileError;
use crate::ir::{ConstantData, Dim, ExprId, ExprKind, Function, Module, TypeKind, VarId};
use crate::kir;
use crate::lower_kir::primitive_kernel;
use crate::op::OpRegistry;
use crate::ty::TypeMap;
use relay_devices::{DType, Scalar, Tensor};
use rustc_hash::FxHashMap as HashMap;

/// The most elements a folded result may have.
pub const MAX_FOLDED_ELEMENTS: i64 = 1 << 16;

/// The most work a folded kernel may take: loop iterations of its statements (each `gemm`
/// multiply-add counts one) plus the elements of its temps. About a second of the kir
/// interpreter at most.
pub(super) const MAX_FOLD_WORK: u64 = 1 << 24;

/// Folds every primitive call on constants outside `Primitive=1` functions (see the module
/// docs). Calls that cannot be lowered to kir or evaluated are left as they are.
///
/// # Errors
/// None today; the signature matches the other passes.
pub fn fold_fused_constants(m: &mut Module, types: &TypeMap, ops: &OpRegistry) -> Result<(), CompileError> {
    for i in 0..m.functions.len() {
        if is_primitive(m, &m.functions[i].func) {
            continue;
        }
        let body = m.functions[i].func.body;
        let mut fold = Fold { types, ops, primitives: HashMap::default() };
        m.functions[i].func.body = rewrite(m, body, &mut fold)?;
    }
    Ok(())
}

struct Fold<'a> {
    types: &'a TypeMap,
    ops: &'a OpRegistry,
    /// Variables bound to primitive `fn` literals (calls may go through them), recorded as
    /// their `let` is entered: a variable is only used in its `let`'s body, which is
    /// rewritten after that. Collected on the way rather than by a walk of its own, since
    /// that walk cost more than the rest of the pass on programs with nothing to fold.
    primitives: HashMap<VarId, ExprId>,
}

impl Fold<'_> {
    /// The primitive function `callee` calls, if it is one.
    fn primitive(&self, m: &Module, callee: ExprId) -> Option<Function> {
        let literal = match m.expr(callee).kind {
            ExprKind::Var(v) => *self.primitives.get(&v)?,
            _ => callee,
        };
        match &m.expr(literal).kind {
            ExprKind::Function(f) if is_primitive(m, f) => Some((**f).clone()),
            _ => None,
        }
    }

    /// The value of `prim(args)`, computed now, or `None` if it cannot or should not be.
    fn evaluate(&self, m: &Module, prim: &Function, args: &[ExprId], call: ExprId) -> Option<ConstantData> {
        let TypeKind::Tensor { shape, dtype } = m.types.kind(self.types.expr(call)?) else { return None };
        let shape: Vec<i64> = shape
            .iter()
            .map(|d| if let Dim::Known(d) = d { Some(*d) } else { None })
            .collect::<Option<_>>()?;
        let count = shape.iter().try_fold(1i64, |n, &d| n.checked_mul(d))?;
        if count > MAX_FOLDED_ELEMENTS || !exact_in_f64(*dtype) {
            return None;
        }
        let inputs = args
            .iter()
            .map(|&a| match m.expr(a).kind {
                ExprKind::Constant(i) => constant_tensor(m.constants.get(i as usize)?).ok(),
                _ => None,
            })
            .collect::<Option<Vec<Tensor>>>()?;
        let kernel = primitive_kernel(m, self.types, self.ops, prim).ok()?;
        bounded_work(&kernel)?;
        let dims = shape.iter().map(|&d| usize::try_from(d).ok()).collect::<Option<Vec<_>>>()?;
        let mut out = [Tensor::zeros(*dtype, dims).ok()?];
        let refs: Vec<&Tensor> = inputs.iter().collect();
        kir::interp::run(&kernel, &refs, &mut out, &[]).ok()?;
        let [out] = out;
        constant_data(&out)
    }
}

impl Rewrite for Fold<'_> {
    fn enter(&mut self, m: &Module, e: ExprId) -> bool {
        match &m.expr(e).kind {
            ExprKind::Function(f) => !is_primitive(m, f),
            ExprKind::Let { var, value, .. } => {
                if matches!(&m.expr(*value).kind, ExprKind::Function(f) if is_primitive(m, f)) {
                    self.primitives.insert(*var, *value);
                }
                true
            }
            _ => true,
        }
    }

    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        // In ANF a call's arguments are atoms, which this rewrite keeps: `old`'s are `kids`'.
        if let ExprKind::Call { callee, args, .. } = &m.expr(old).kind {
            if !args.iter().all(|&a| matches!(m.expr(a).kind, ExprKind::Constant(_))) {
                return Ok(rebuild(m, old, kids));
            }
            let (callee, args) = (*callee, args.clone());
            if let Some(prim) = self.primitive(m, callee) {
                if let Some(c) = self.evaluate(m, &prim, &args, old) {
                    m.constants.push(c);
                    let index = (m.constants.len() - 1) as u32;
                    return Ok(m.add_expr(ExprKind::Constant(index), m.expr(old).span));
                }
            }
        }
        Ok(rebuild(m, old, kids))
    }
}

/// The work of running `kernel` once (see [`MAX_FOLD_WORK`]), if it is known (constant loop
/// extents and temp shapes) and within the cap.
fn bounded_work(kernel: &kir::Kernel) -> Option<u64> {
    let mut work = 0u64;
    for b in kernel.buffers.iter().filter(|b| b.role == kir::BufferRole::Temp) {
        let elements =
            b.shape.iter().try_fold(1u64, |n, d| n.checked_mul(u64::try_from(d.resolve(&[])?).ok()?))?;
        work = work.checked_add(elements)?;
    }
    // (statements, iterations of each) still to count; kir nesting is at most
    // `kir::MAX_DEPTH` deep, but the walk needs no recursion anyway.
    let mut pending: Vec<(&[kir::Stmt], u64)> = vec![(&kernel.body, 1)];
    while let Some((stmts, times)) = pending.pop() {
        for stmt in stmts {
            work = work.checked_add(times)?;
            match stmt {
                kir::Stmt::For { extent, body, .. } => {
                    let n = u64::try_from(extent.as_const()?.max(0)).ok()?;
                    pending.push((body, times.checked_mul(n)?));
                }
                kir::Stmt::If { then, otherwise, .. } => {
                    pending.push((then, times));
                    pending.push((otherwise, times));
                }
                kir::Stmt::Gemm { m, n, k, .. } => {
                    let macs =
                        [*m, *n, *k].iter().try_fold(1u64, |p, &d| p.checked_mul(u64::try_from(d).ok()?))?;
                    work = work.checked_add(times.checked_mul(macs)?)?;
                }
                kir::Stmt::DepthwiseConv2d { window, .. } => {
                    let [out, ..] = window.lens()?;
                    let macs = [out, window.kernel[0], window.kernel[1]]
                        .iter()
                        .try_fold(1u64, |p, &d| p.checked_mul(u64::try_from(d).ok()?))?;
                    work = work.checked_add(times.checked_mul(macs)?)?;
                }
                kir::Stmt::Store { .. } | kir::Stmt::Assign { .. } => {}
            }
            if work > MAX_FOLD_WORK {
                return None;
            }
        }
    }
    Some(work)
}

/// Whether every element of `dtype` survives a round trip through `f64` (how
/// [`ConstantData`] stores elements).
pub(super) fn exact_in_f64(dtype: DType) -> bool {
    dtype.bits <= 32
}

/// `t` as a metadata constant, if its elements are exact in `f64` ([`exact_in_f64`]).
pub(super) fn constant_data(t: &Tensor) -> Option<ConstantData> {
    if !exact_in_f64(t.dtype()) {
        return None;
    }
    let data = (0..t.len()).map(|i| t.get(i).map(widen)).collect::<Option<Vec<f64>>>()?;
    let shape = t.shape().iter().map(|&d| i64::try_from(d).ok()).collect::<Option<Vec<i64>>>()?;
    Some(ConstantData { dtype: t.dtype(), shape, data })
}

fn widen(s: Scalar) -> f64 {
    match s {
        Scalar::Bool(b) => f64::from(u8::from(b)),
        Scalar::Int(i) => i as f64,
        Scalar::UInt(u) => u as f64,
        Scalar::Float(f) => f,
    }
}
