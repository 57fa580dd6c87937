//! Lowering a kir kernel body to one Cranelift function.
//!
//! The function is `extern "C" fn(buffers: *const *mut u8, syms: *const i64, stop: *const u8)
//! -> i32`: it loads every buffer address and sym once in the entry block, and returns 0 when
//! it ran to the end, 1 when it found the `stop` flag set. The flag is polled at the start of
//! every iteration of an outermost loop (a loop inside no other emitted loop), except in loops
//! too short to matter: a constant extent up to [`MAX_UNPOLLED`] over straight-line code. A
//! kernel thus outlives a cancel or a deadline (`relay_runtime::CancelHandle`) by at most one
//! iteration of its outermost loop. Loop variables and scalar locals are
//! Cranelift variables (SSA is built by the frontend). `vectorize` loops that
//! [`super::vector::plan`] accepts run a 4-lane body over `0..extent & !3` followed by a
//! scalar tail; inside the vector body every expression evaluates to a [`Val`]: a scalar
//! when it is uniform across lanes, a vector otherwise.
//!
//! Loads and stores are unchecked: [`relay_kir::check_bounds`] has proved them in
//! bounds before the code can run, and index divisors positive.

use super::buffers::reads_what_it_writes;
use super::epilogue::{recognise, Epilogue};
use super::interleave;
use super::ops::{scalar_type, vector_type, Ops};
use super::vector::{self, classify, Access, Affine, LocalMode, Plan, LANES};
use crate::blas::epilogue::PLAN_LEN;
use crate::blas::packed::{avx512, packable_operands, reads_packed, Packable};
use crate::JitError;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{F32X4, I32, I32X4, I64, I8};
use cranelift_codegen::ir::{
    Block, FuncRef, InstBuilder, InstructionData, MemFlagsData, StackSlotData, StackSlotKind, Value, ValueDef,
};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_frontend::{FunctionBuilder, Variable};
use relay_devices::{DType, DTypeCode, Scalar};
use relay_kir::{BinOp, BufferId, BufferRole, Expr, Index, IndexOp, Kernel, LocalId, LoopKind, Stmt, VarId};
use std::collections::HashMap;

/// How many vectors an interleaved loop (`Emitter::interleaved`) computes per iteration.
const INTERLEAVE: i64 = 4;

/// Loops with a constant extent up to this are unrolled when marked `unroll`.
const MAX_UNROLL: i64 = 16;

/// Outermost loops of a constant extent up to this whose body holds no loop and no `gemm`
/// do not poll the stop flag: they end in microseconds anyway, and the elementwise loops of
/// fused kernels stay as tight as before.
const MAX_UNPOLLED: i64 = 1024;

/// A value in a vectorised loop body: uniform (scalar) or one per lane (vector).
#[derive(Clone, Copy)]
enum Val {
    S(Value),
    V(Value),
}

/// The state of the vectorised loop being emitted.
struct Lanes {
    var: VarId,
    modes: HashMap<LocalId, LocalMode>,
    locals: HashMap<LocalId, Variable>,
    /// `(buf, index, base, displacement)`: `buf[index]` is at `base + var · size +
    /// displacement`, with `base` computed before the loop.
    bases: Vec<(BufferId, Index, Value, i32)>,
}

/// Imported helper functions.
pub(crate) struct Imports {
    /// `f32::powf`.
    pub powf: FuncRef,
    /// `f64::powf`.
    pub pow: FuncRef,
    /// The native matrix product (`gemm.rs`).
    pub gemm: FuncRef,
    /// The native epilogue of a product (`blas/epilogue.rs`).
    pub epilogue: FuncRef,
}

/// Emits one kernel into a function builder.
pub(crate) struct Emitter<'a, 'f> {
    b: FunctionBuilder<'f>,
    k: &'a Kernel,
    fma: bool,
    imports: Imports,
    ptrs: Vec<Value>,
    /// The packed-weights entries of the buffer table (`packed::packable_operands`): the
    /// operand and its loaded pointer (null when not packed).
    packed: Vec<(Packable, Value)>,
    syms: Vec<Value>,
    vars: Vec<Variable>,
    locals: Vec<Variable>,
    lanes: Option<Lanes>,
    /// The address of the stop flag.
    stop: Value,
    /// Whether the code being emitted is inside an emitted (not unrolled) loop.
    in_loop: bool,
    /// Whether the loop being emitted polls the stop flag in each iteration.
    poll: bool,
    /// The block that returns "stopped", once a poll needs it.
    stopped: Option<Block>,
    /// Whether qualifying vector loops interleave [`INTERLEAVE`] vectors (the function is
    /// compiled without the e-graph pass: `vector::has_chain_loop`).
    interleave: bool,
    /// While an interleaved body is emitted: each expression's value, so that a repeated
    /// subexpression (a GRU's `sigmoid(z)`, used twice) is computed once, as the e-graph pass
    /// would have done. Emptied at every assignment (a `Local` may change); the body reads no
    /// buffer it stores to, so loads stay valid.
    memo: Option<HashMap<Expr, (Val, DType)>>,
    /// How many loops were vectorised.
    pub vectorized: usize,
}

fn mem_flags(role: BufferRole) -> MemFlagsData {
    let flags = MemFlagsData::new().with_notrap();
    if role == BufferRole::Input {
        // Inputs are never written while the kernel runs (the verifier forbids stores).
        flags.with_readonly()
    } else {
        flags
    }
}

fn internal(what: &str) -> JitError {
    JitError::Internal(what.to_string())
}

/// Whether `body` runs without loops or matrix products (its time is bounded by its size).
fn straight_line(body: &[Stmt]) -> bool {
    body.iter().all(|s| match s {
        Stmt::For { .. } | Stmt::Gemm { .. } => false,
        Stmt::If { then, otherwise, .. } => straight_line(then) && straight_line(otherwise),
        Stmt::Store { .. } | Stmt::Assign { .. } => true,
    })
}

/// Whether `i` is `>= 0` whatever the loop variables and syms (which are `>= 0`) are.
fn non_negative(k: &Kernel, i: &Index) -> bool {
    match i {
        Index::Const(c) => *c >= 0,
        Index::Var(_) | Index::Sym(_) => true,
        Index::Bin(IndexOp::Sub, ..) => false,
        Index::Bin(IndexOp::Max, a, b) => non_negative(k, a) || non_negative(k, b),
        Index::Bin(_, a, b) => non_negative(k, a) && non_negative(k, b),
        Index::Value(e) => {
            k.dtype_of(e).is_ok_and(|d| d.code == DTypeCode::UInt && d.bits < 64 || d == DType::BOOL)
        }
    }
}

impl<'a, 'f> Emitter<'a, 'f> {
    /// Starts the function: entry block, buffer addresses, syms, zeroed locals.
    pub(crate) fn new(
        mut b: FunctionBuilder<'f>,
        k: &'a Kernel,
        fma: bool,
        interleave: bool,
        imports: Imports,
    ) -> Self {
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let params = b.block_params(entry);
        let (buffers, syms_ptr, stop) = (params[0], params[1], params[2]);
        let table = MemFlagsData::new().with_notrap().with_readonly();
        let ptrs = (0..k.buffers.len()).map(|i| b.ins().load(I64, table, buffers, (8 * i) as i32)).collect();
        let packed = packable_operands(k)
            .into_iter()
            .enumerate()
            .map(|(s, operand)| {
                let entry = (8 * (k.buffers.len() + s)) as i32;
                (operand, b.ins().load(I64, table, buffers, entry))
            })
            .collect();
        let syms = (0..k.syms.len()).map(|i| b.ins().load(I64, table, syms_ptr, (8 * i) as i32)).collect();
        let vars = k.vars.iter().map(|_| b.declare_var(I64)).collect();
        let mut locals = Vec::with_capacity(k.locals.len());
        for l in &k.locals {
            let var = b.declare_var(scalar_type(l.dtype));
            let zero = zero(&mut b, l.dtype);
            b.def_var(var, zero);
            locals.push(var);
        }
        Emitter {
            b,
            k,
            fma,
            imports,
            ptrs,
            packed,
            syms,
            vars,
            locals,
            lanes: None,
            stop,
            in_loop: false,
            poll: false,
            stopped: None,
            interleave,
            memo: None,
            vectorized: 0,
        }
    }

    /// Emits the body and the returns, and finalises the function.
    pub(crate) fn finish(mut self, config: TargetFrontendConfig) -> Result<usize, JitError> {
        self.stmts(&self.k.body)?;
        let ran = self.b.ins().iconst(I32, 0);
        self.b.ins().return_(&[ran]);
        if let Some(stopped) = self.stopped {
            self.b.switch_to_block(stopped);
            self.b.seal_block(stopped);
            let stop = self.b.ins().iconst(I32, 1);
            self.b.ins().return_(&[stop]);
        }
        self.b.finalize(config);
        Ok(self.vectorized)
    }

    /// Returns "stopped" when the stop flag is set (an atomic load: another thread writes it,
    /// and the load must not be hoisted out of the loop).
    fn poll_stop(&mut self) {
        let flags = MemFlagsData::new().with_notrap();
        let flag = self.b.ins().atomic_load(I8, flags, self.stop);
        let stopped = *self.stopped.get_or_insert_with(|| self.b.create_block());
        let go_on = self.b.create_block();
        self.b.ins().brif(flag, stopped, &[], go_on, &[]);
        self.b.switch_to_block(go_on);
        self.b.seal_block(go_on);
    }

    fn ops(&mut self) -> Ops<'_, 'f> {
        Ops { b: &mut self.b, fma: self.fma }
    }

    fn stmts(&mut self, body: &[Stmt]) -> Result<(), JitError> {
        let mut rest = body;
        while let Some((s, after)) = rest.split_first() {
            self.stmt(s)?;
            rest = after;
            // A product's epilogue runs natively at AVX-512 width (`epilogue.rs`), where the
            // CPU has it: at four lanes it took twice the product's time.
            if let (Stmt::Gemm { out, .. }, Some((next, after)), true) = (s, after.split_first(), avx512()) {
                if let Some(e) = recognise(self.k, *out, next) {
                    if self.native_epilogue(&e)? {
                        rest = after;
                    }
                }
            }
        }
        Ok(())
    }

    /// Calls the native epilogue `e` in place of its loop nest; `false` (nothing emitted that
    /// matters) when an operand's first element is too far for a displacement.
    fn native_epilogue(&mut self, e: &Epilogue) -> Result<bool, JitError> {
        let mut pointers = Vec::with_capacity(4);
        for (buf, base) in &e.operands {
            let Some((base, disp)) = self.hoisted_base(*buf, base)? else { return Ok(false) };
            pointers.push(self.b.ins().iadd_imm_s(base, i64::from(disp)));
        }
        while pointers.len() < 4 {
            pointers.push(self.b.ins().iconst(I64, 0));
        }
        let plan = e.plan.encode();
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (PLAN_LEN * 8) as u32,
            3,
        ));
        for (i, &v) in (0i32..).zip(&plan) {
            let v = self.b.ins().iconst(I64, v);
            self.b.ins().stack_store(I64, v, slot, i * 8);
        }
        pointers.push(self.b.ins().stack_addr(I64, slot, 0));
        self.b.ins().call(self.imports.epilogue, &pointers);
        Ok(true)
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), JitError> {
        match s {
            Stmt::For { var, extent, kind, body } => self.for_loop(*var, extent, *kind, body),
            Stmt::Store { buf, index, value } => {
                let decl = self.k.buffer(*buf).ok_or_else(|| internal("buffer"))?;
                let (v, _) = self.expr(value)?;
                let flags = mem_flags(decl.role);
                let (addr, disp) = self.element_address(*buf, index, 1)?;
                let v = match self.lanes.is_some() {
                    true => self.vector_of(v, decl.dtype),
                    false => self.scalar(v)?,
                };
                self.b.ins().store(flags, v, addr, disp);
                Ok(())
            }
            Stmt::Assign { local, value } => {
                let (v, dt) = self.expr(value)?;
                let lane_var = self.lanes.as_ref().and_then(|l| l.locals.get(local).copied());
                match lane_var {
                    Some(var) => {
                        let v = self.vector_of(v, dt);
                        self.b.def_var(var, v);
                    }
                    None => {
                        let v = self.scalar(v)?;
                        let var = *self.locals.get(local.index()).ok_or_else(|| internal("local"))?;
                        self.b.def_var(var, v);
                    }
                }
                if let Some(memo) = &mut self.memo {
                    memo.clear();
                }
                Ok(())
            }
            Stmt::Gemm { out, a, b, b_offset, b_rows, m, n, k, trans_b } => {
                let ptr =
                    |e: &Self, b: &BufferId| e.ptrs.get(b.index()).copied().ok_or_else(|| internal("buffer"));
                let (o, ap) = (ptr(self, out)?, ptr(self, a)?);
                let first = self.index(b_offset, 0)?;
                let bp = self.address(*b, first)?;
                // A packed copy holds the whole of `b`: a block of it reads the buffer.
                let packed = self.packed.iter().find(|(p, _)| {
                    p.buf == *b
                        && b_offset.as_const() == Some(0)
                        && reads_packed(*m, *trans_b)
                        && i64::try_from(p.n) == Ok(*n)
                        && i64::try_from(p.k) == Ok(*k)
                });
                let packed = match packed {
                    Some(&(_, ptr)) => ptr,
                    None => self.b.ins().iconst(I64, 0),
                };
                // The `(extent, stride)` row pairs, flat, in a stack slot the call reads.
                let dims: Vec<i64> = b_rows.dims().iter().flat_map(|&(e, s)| [e, s]).collect();
                let bytes = u32::try_from(dims.len() * 8).map_err(|_| internal("gemm rows"))?;
                let slot =
                    self.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, bytes, 3));
                for (i, &d) in (0i32..).zip(&dims) {
                    let v = self.b.ins().iconst(I64, d);
                    self.b.ins().stack_store(I64, v, slot, i * 8);
                }
                let rows = self.b.ins().stack_addr(I64, slot, 0);
                let sizes = [*m, *n, *k, b_rows.dims().len() as i64, i64::from(*trans_b)];
                let [m, n, k, pairs, trans_b] = sizes.map(|v| self.b.ins().iconst(I64, v));
                self.b.ins().call(self.imports.gemm, &[o, ap, bp, packed, rows, m, n, k, pairs, trans_b]);
                Ok(())
            }
            Stmt::If { cond, then, otherwise } => {
                let (c, _) = self.expr(cond)?;
                let c = self.scalar(c)?;
                let (then_b, else_b, merge) =
                    (self.b.create_block(), self.b.create_block(), self.b.create_block());
                self.b.ins().brif(c, then_b, &[], else_b, &[]);
                for (block, body) in [(then_b, then), (else_b, otherwise)] {
                    self.b.switch_to_block(block);
                    self.b.seal_block(block);
                    self.stmts(body)?;
                    self.b.ins().jump(merge, &[]);
                }
                self.b.switch_to_block(merge);
                self.b.seal_block(merge);
                Ok(())
            }
        }
    }

    fn for_loop(
        &mut self,
        var: VarId,
        extent: &Index,
        kind: LoopKind,
        body: &[Stmt],
    ) -> Result<(), JitError> {
        let v = *self.vars.get(var.index()).ok_or_else(|| internal("loop variable"))?;
        if kind == LoopKind::Unroll {
            if let Some(n) = extent.as_const().filter(|n| (0..=MAX_UNROLL).contains(n)) {
                for i in 0..n {
                    let i = self.b.ins().iconst(I64, i);
                    self.b.def_var(v, i);
                    self.stmts(body)?;
                }
                return Ok(());
            }
        }
        let end = self.index(extent, 0)?;
        let zero = self.b.ins().iconst(I64, 0);
        let short = extent.as_const().is_some_and(|n| n <= MAX_UNPOLLED) && straight_line(body);
        let outer = (self.in_loop, self.poll);
        (self.in_loop, self.poll) = (true, !self.in_loop && !short);
        let emitted = match (kind == LoopKind::Vectorize && self.lanes.is_none())
            .then(|| vector::plan(self.k, var, body))
            .flatten()
        {
            Some(plan) => self.vector_loop(var, end, extent.as_const(), plan, body),
            None => self.counted_loop(v, zero, end, 1, |e| e.stmts(body)),
        };
        (self.in_loop, self.poll) = outer;
        emitted
    }

    /// `for (v = start; v < end; v += step) body`, polling the stop flag first in each
    /// iteration when the loop being emitted polls.
    fn counted_loop(
        &mut self,
        v: Variable,
        start: Value,
        end: Value,
        step: i64,
        body: impl FnOnce(&mut Self) -> Result<(), JitError>,
    ) -> Result<(), JitError> {
        let (header, body_b, exit) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.def_var(v, start);
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(header);
        let i = self.b.use_var(v);
        let go = self.b.ins().icmp(IntCC::SignedLessThan, i, end);
        self.b.ins().brif(go, body_b, &[], exit, &[]);
        self.b.switch_to_block(body_b);
        self.b.seal_block(body_b);
        if self.poll {
            self.poll_stop();
        }
        body(self)?;
        let i = self.b.use_var(v);
        let next = self.b.ins().iadd_imm_s(i, step);
        self.b.def_var(v, next);
        self.b.ins().jump(header, &[]);
        self.b.seal_block(header);
        self.b.switch_to_block(exit);
        self.b.seal_block(exit);
        Ok(())
    }

    /// A `vectorize` loop to `end` (`extent` when it is a constant): `LANES` iterations at a
    /// time, then the rest one by one — or, for a constant extent of at least `LANES` whose
    /// iterations are independent (no reduction, no buffer both stored and read), one more
    /// vector ending at `end`, overlapping the last: redoing an iteration stores the same
    /// values again, and a scalar tail of the transcendental-heavy gate arithmetic costs as much
    /// as several vectors.
    fn vector_loop(
        &mut self,
        var: VarId,
        end: Value,
        extent: Option<i64>,
        plan: Plan,
        body: &[Stmt],
    ) -> Result<(), JitError> {
        let overlap = extent.filter(|&n| {
            n > LANES
                && n % LANES != 0
                && plan.locals.values().all(|m| *m == LocalMode::Private)
                && !body.iter().any(|s| matches!(s, Stmt::For { .. }))
                && !reads_what_it_writes(body)
        });
        let interleave = self.interleave && vector::interleavable(&plan, body);
        let v = *self.vars.get(var.index()).ok_or_else(|| internal("loop variable"))?;
        self.vectorized += 1;
        let zero = self.b.ins().iconst(I64, 0);
        let end = self.b.ins().smax(end, zero);
        let vector_end = self.b.ins().band_imm_s(end, -LANES);
        let mut lane_locals = HashMap::new();
        for (&l, &mode) in &plan.locals {
            let dt = self.local_dtype(l)?;
            let lane_var = self.b.declare_var(vector_type(dt));
            let current = self.b.use_var(self.locals[l.index()]);
            let init = self.vector_of(Val::S(current), dt);
            let init = if mode == LocalMode::Reduction(BinOp::Add) {
                // Lanes 1..4 start at the identity; the running value is in lane 0.
                let z = zero_vector(&mut self.b, dt);
                self.b.ins().insertlane(z, current, 0)
            } else {
                init
            };
            self.b.def_var(lane_var, init);
            lane_locals.insert(l, lane_var);
        }
        let mut bases = Vec::with_capacity(plan.bases.len());
        for (buf, index, offset) in &plan.bases {
            if let Some((base, disp)) = self.hoisted_base(*buf, offset)? {
                bases.push((*buf, index.clone(), base, disp));
            }
        }
        self.lanes = Some(Lanes { var, modes: plan.locals, locals: lane_locals, bases });
        let result = if body.iter().any(|s| matches!(s, Stmt::For { .. })) {
            self.counted_loop(v, zero, vector_end, LANES, |e| e.stmts(body))
        } else if interleave {
            // INTERLEAVE vectors per iteration, their instructions interleaved, then one at a
            // time.
            let step = INTERLEAVE * LANES;
            let group_end = self.b.ins().band_imm_s(end, -step);
            self.counted_loop(v, zero, group_end, step, |e| e.interleaved(v, body)).and_then(|()| {
                let i = self.b.use_var(v);
                self.counted_loop(v, i, vector_end, LANES, |e| e.stmts(body))
            })
        } else {
            // Two vectors per iteration, then at most one more: the loop's bookkeeping and
            // the moves of loop-carried accumulators are paid half as often (a GEMV row block
            // runs ~1.3x faster).
            let pair_end = self.b.ins().band_imm_s(end, -2 * LANES);
            self.counted_loop(v, zero, pair_end, LANES, |e| {
                e.stmts(body)?;
                let i = e.b.use_var(v);
                let next = e.b.ins().iadd_imm_s(i, LANES);
                e.b.def_var(v, next);
                e.stmts(body)
            })
            .and_then(|()| {
                let i = self.b.use_var(v);
                self.counted_loop(v, i, vector_end, LANES, |e| e.stmts(body))
            })
        };
        let result = result.and_then(|()| match overlap {
            Some(n) => {
                let last = self.b.ins().iconst(I64, n - LANES);
                self.b.def_var(v, last);
                self.stmts(body)
            }
            None => Ok(()),
        });
        let lanes = self.lanes.take().ok_or_else(|| internal("lanes"))?;
        result?;
        for (l, mode) in &lanes.modes {
            let dt = self.local_dtype(*l)?;
            let lane_var = *lanes.locals.get(l).ok_or_else(|| internal("lane local"))?;
            let vec = self.b.use_var(lane_var);
            let scalar = match mode {
                // The last iteration's value is the last lane's.
                LocalMode::Private => self.lane(vec, 3, dt),
                LocalMode::Reduction(op) => {
                    let parts: Vec<Value> = (0..4).map(|i| self.lane(vec, i, dt)).collect();
                    let mut ops = self.ops();
                    let lo = ops.binary(*op, dt, parts[0], parts[1]);
                    let hi = ops.binary(*op, dt, parts[2], parts[3]);
                    ops.binary(*op, dt, lo, hi)
                }
            };
            self.b.def_var(self.locals[l.index()], scalar);
        }
        if overlap.is_some() {
            return Ok(());
        }
        self.counted_loop(v, vector_end, end, 1, |e| e.stmts(body))
    }

    /// The straight-line vector body for [`INTERLEAVE`] consecutive vectors at `v`, `v + 4`,
    /// ...: emitted once for `v`, then replicated for the others instruction by instruction
    /// ([`interleave::replicate`]). The lane locals end holding the last vector's values.
    fn interleaved(&mut self, v: Variable, body: &[Stmt]) -> Result<(), JitError> {
        let block = self.b.current_block().ok_or_else(|| internal("interleaved block"))?;
        let i = self.b.use_var(v);
        let mut copies: Vec<HashMap<Value, Value>> =
            (1..INTERLEAVE).map(|k| HashMap::from([(i, self.b.ins().iadd_imm_s(i, k * LANES))])).collect();
        let start = self.b.func.layout.last_inst(block);
        self.memo = Some(HashMap::new());
        let emitted = self.stmts(body);
        self.memo = None;
        emitted?;
        interleave::replicate(self.b.func, block, start, &mut copies);
        let lanes = self.lanes.as_ref().ok_or_else(|| internal("lanes"))?;
        let locals: Vec<Variable> = lanes.locals.values().copied().collect();
        if let Some(last) = copies.last() {
            for var in locals {
                let value = self.b.use_var(var);
                self.b.def_var(var, last.get(&value).copied().unwrap_or(value));
            }
        }
        Ok(())
    }

    fn local_dtype(&self, l: LocalId) -> Result<DType, JitError> {
        self.k.locals.get(l.index()).map(|d| d.dtype).ok_or_else(|| internal("local"))
    }

    /// Lane `i` of a vector as the scalar form of `dt` (masks become 0/1).
    fn lane(&mut self, vec: Value, i: u8, dt: DType) -> Value {
        let x = self.b.ins().extractlane(vec, i);
        if dt == DType::BOOL {
            self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0)
        } else {
            x
        }
    }

    /// A value in vector form (uniform values are splatted; bools become lane masks).
    fn vector_of(&mut self, v: Val, dt: DType) -> Value {
        match v {
            Val::V(x) => x,
            Val::S(x) if dt == DType::BOOL => {
                let m = self.b.ins().bmask(I32, x);
                self.b.ins().splat(I32X4, m)
            }
            Val::S(x) => match self.b.func.dfg.value_def(x) {
                // A constant: one load from the constant pool (`Ops::fconst`), which the
                // e-graph pass would also have made of the splat.
                ValueDef::Result(inst, _) if dt == DType::F32 => match self.b.func.dfg.insts[inst] {
                    InstructionData::UnaryIeee32 { imm, .. } => {
                        self.ops().fconst(F32X4, f32::from_bits(imm.bits()))
                    }
                    _ => self.b.ins().splat(vector_type(dt), x),
                },
                _ => self.b.ins().splat(vector_type(dt), x),
            },
        }
    }

    fn scalar(&self, v: Val) -> Result<Value, JitError> {
        match v {
            Val::S(x) => Ok(x),
            Val::V(_) => Err(internal("vector value where a scalar is needed")),
        }
    }

    fn address(&mut self, buf: BufferId, index: Value) -> Result<Value, JitError> {
        let decl = self.k.buffer(buf).ok_or_else(|| internal("buffer"))?;
        let size = decl.dtype.size_bytes() as i64;
        let base = *self.ptrs.get(buf.index()).ok_or_else(|| internal("buffer"))?;
        let offset = self.scaled(index, size);
        Ok(self.b.ins().iadd(base, offset))
    }

    /// `v · bytes`: a shift where `bytes` is a power of two, which x86 folds into the
    /// address of the access (a kernel compiled without the e-graph pass keeps the multiply
    /// it is given).
    fn scaled(&mut self, v: Value, bytes: i64) -> Value {
        if bytes > 0 && bytes & (bytes - 1) == 0 {
            self.b.ins().ishl_imm_u(v, i64::from(bytes.trailing_zeros()))
        } else {
            self.b.ins().imul_imm_s(v, bytes)
        }
    }

    /// `buf + offset · size` as a base computed here (only terms that are not constant:
    /// Cranelift keeps such values out of the loop) and a displacement for the access, or
    /// `None` when a byte offset overflows.
    fn hoisted_base(&mut self, buf: BufferId, offset: &Affine) -> Result<Option<(Value, i32)>, JitError> {
        let size = self.k.buffer(buf).ok_or_else(|| internal("buffer"))?.dtype.size_bytes() as i64;
        let mut base = *self.ptrs.get(buf.index()).ok_or_else(|| internal("buffer"))?;
        for (term, coefficient) in &offset.terms {
            let Some(bytes) = coefficient.checked_mul(size) else { return Ok(None) };
            let t = self.index(term, 0)?;
            let scaled = self.b.ins().imul_imm_s(t, bytes);
            base = self.b.ins().iadd(base, scaled);
        }
        Ok(offset.constant.checked_mul(size).and_then(|d| i32::try_from(d).ok()).map(|d| (base, d)))
    }

    /// The address of `buf[index]` (lane 0 in a vectorised loop) and a displacement to add:
    /// from the base computed before the loop when the vector plan hoisted one, where the
    /// index grows by `stride` per step of the vectorised variable.
    fn element_address(
        &mut self,
        buf: BufferId,
        index: &Index,
        stride: i64,
    ) -> Result<(Value, i32), JitError> {
        let hoisted = self.lanes.as_ref().and_then(|l| {
            let (_, _, base, disp) = l.bases.iter().find(|(b, i, ..)| *b == buf && i == index)?;
            Some((*base, *disp, l.var))
        });
        match hoisted {
            Some((base, disp, var)) => {
                let v = self.b.use_var(*self.vars.get(var.index()).ok_or_else(|| internal("loop variable"))?);
                let size = self.k.buffer(buf).ok_or_else(|| internal("buffer"))?.dtype.size_bytes() as i64;
                let offset = self.scaled(v, size * stride);
                Ok((self.b.ins().iadd(base, offset), disp))
            }
            None => {
                let i = self.index(index, 0)?;
                Ok((self.address(buf, i)?, 0))
            }
        }
    }

    /// An index value, with the vectorised loop variable taken in lane `lane`.
    fn index(&mut self, i: &Index, lane: i64) -> Result<Value, JitError> {
        Ok(match i {
            Index::Const(c) => self.b.ins().iconst(I64, *c),
            Index::Var(var) => {
                let v = self.b.use_var(*self.vars.get(var.index()).ok_or_else(|| internal("loop variable"))?);
                match &self.lanes {
                    Some(l) if l.var == *var && lane != 0 => self.b.ins().iadd_imm_s(v, lane),
                    _ => v,
                }
            }
            Index::Sym(s) => *self.syms.get(s.index()).ok_or_else(|| internal("sym"))?,
            Index::Value(e) => {
                let (v, dt) = self.expr(e)?;
                let v = self.scalar(v)?;
                match dt.code {
                    _ if dt.bits >= 64 => v,
                    DTypeCode::Int => self.b.ins().sextend(I64, v),
                    _ => self.b.ins().uextend(I64, v),
                }
            }
            Index::Bin(op, a, b) => {
                let (x, y) = (self.index(a, lane)?, self.index(b, lane)?);
                match op {
                    IndexOp::Add => self.b.ins().iadd(x, y),
                    IndexOp::Sub => self.b.ins().isub(x, y),
                    IndexOp::Mul => self.b.ins().imul(x, y),
                    IndexOp::Min => self.b.ins().smin(x, y),
                    IndexOp::Max => self.b.ins().smax(x, y),
                    // Divisors are proved positive, so unsigned division is exact for a
                    // non-negative dividend; otherwise round the quotient toward -inf.
                    IndexOp::FloorDiv if non_negative(self.k, a) => self.b.ins().udiv(x, y),
                    IndexOp::FloorMod if non_negative(self.k, a) => self.b.ins().urem(x, y),
                    IndexOp::FloorDiv => {
                        let q = self.b.ins().sdiv(x, y);
                        let r = self.b.ins().srem(x, y);
                        let neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, r, 0);
                        let q1 = self.b.ins().iadd_imm_s(q, -1);
                        self.b.ins().select(neg, q1, q)
                    }
                    IndexOp::FloorMod => {
                        let r = self.b.ins().srem(x, y);
                        let neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, r, 0);
                        let r1 = self.b.ins().iadd(r, y);
                        self.b.ins().select(neg, r1, r)
                    }
                }
            }
        })
    }

    /// Emits `e` (or finds it in [`Emitter::memo`]); returns its value and dtype.
    fn expr(&mut self, e: &Expr) -> Result<(Val, DType), JitError> {
        if matches!(e, Expr::Const(_) | Expr::Local(_)) || self.memo.is_none() {
            return self.emit_expr(e);
        }
        if let Some(&hit) = self.memo.as_ref().and_then(|m| m.get(e)) {
            return Ok(hit);
        }
        let value = self.emit_expr(e)?;
        if let Some(memo) = &mut self.memo {
            memo.insert(e.clone(), value);
        }
        Ok(value)
    }

    fn emit_expr(&mut self, e: &Expr) -> Result<(Val, DType), JitError> {
        Ok(match e {
            Expr::Const(lit) => (Val::S(literal(&mut self.b, lit.dtype(), lit.value())), lit.dtype()),
            Expr::Load { buf, index } => self.load(*buf, index)?,
            Expr::Local(l) => {
                let dt = self.local_dtype(*l)?;
                match self.lanes.as_ref().and_then(|lanes| lanes.locals.get(l).copied()) {
                    Some(var) => (Val::V(self.b.use_var(var)), dt),
                    None => (Val::S(self.b.use_var(self.locals[l.index()])), dt),
                }
            }
            Expr::Binary(op, a, b) => self.binary(*op, a, b)?,
            Expr::Unary(op, a) => {
                let (v, dt) = self.expr(a)?;
                let v = match v {
                    Val::S(x) => Val::S(self.ops().unary(*op, dt, x)),
                    Val::V(x) => Val::V(self.ops().unary(*op, dt, x)),
                };
                (v, dt)
            }
            Expr::Select(c, a, b) => {
                let (c, _) = self.expr(c)?;
                let (x, dt) = self.expr(a)?;
                let (y, _) = self.expr(b)?;
                match (c, x, y) {
                    (Val::S(c), Val::S(x), Val::S(y)) => (Val::S(self.ops().select(c, x, y)), dt),
                    (c, x, y) => {
                        let (x, y) = (self.vector_of(x, dt), self.vector_of(y, dt));
                        let c = match c {
                            Val::S(c) => c,
                            Val::V(mask) => mask,
                        };
                        (Val::V(self.ops().select(c, x, y)), dt)
                    }
                }
            }
            Expr::Cast(to, a) => {
                let (v, from) = self.expr(a)?;
                let v = match v {
                    Val::S(x) => Val::S(self.ops().cast(from, *to, x)),
                    Val::V(x) => Val::V(self.ops().cast(from, *to, x)),
                };
                (v, *to)
            }
            Expr::Reinterpret(to, a) => {
                let (v, _) = self.expr(a)?;
                let v = match v {
                    Val::S(x) => Val::S(self.ops().reinterpret(*to, x)),
                    Val::V(x) => Val::V(self.ops().reinterpret(*to, x)),
                };
                (v, *to)
            }
            Expr::Index(i) => (Val::S(self.index(i, 0)?), DType::I64),
        })
    }

    fn load(&mut self, buf: BufferId, index: &Index) -> Result<(Val, DType), JitError> {
        let decl = self.k.buffer(buf).ok_or_else(|| internal("buffer"))?;
        let (dt, flags) = (decl.dtype, mem_flags(decl.role));
        let access = match &self.lanes {
            Some(l) => classify(index, l.var, &|e| vector::varying_expr(e, l.var, &l.modes)),
            None => Some(Access::Uniform),
        };
        let v = match access.ok_or_else(|| internal("unplanned vector access"))? {
            Access::Uniform => {
                let i = self.index(index, 0)?;
                let addr = self.address(buf, i)?;
                Val::S(self.b.ins().load(scalar_type(dt), flags, addr, 0))
            }
            Access::Contiguous => {
                let (addr, disp) = self.element_address(buf, index, 1)?;
                Val::V(self.b.ins().load(vector_type(dt), flags, addr, disp))
            }
            Access::Strided(stride) => {
                // Lanes `0, s, 2s, 3s` of the span from lane 0's element: the vector there
                // holds `0` and `s`, the one ending at `3s` holds `2s` and `3s`. Neither reads
                // outside the span, whose ends the bounds proof covered.
                let (addr, disp) = self.element_address(buf, index, stride)?;
                let size = dt.size_bytes() as i32;
                let back = (3 * stride - 3) as i32 * size;
                let (addr2, disp2) = match disp.checked_add(back) {
                    Some(d) => (addr, d),
                    None => (self.b.ins().iadd_imm_s(addr, i64::from(back)), disp),
                };
                let ty = vector_type(dt);
                let low = self.b.ins().load(ty, flags, addr, disp);
                let high = self.b.ins().load(ty, flags, addr2, disp2);
                let s = stride as u8;
                Val::V(self.ops().pick_lanes(low, high, [0, s, 7 - s, 7]))
            }
            Access::Gather => {
                let mut vec = None;
                for lane in 0..LANES {
                    let i = self.index(index, lane)?;
                    let addr = self.address(buf, i)?;
                    let x = self.b.ins().load(scalar_type(dt), flags, addr, 0);
                    vec = Some(match vec {
                        None => self.b.ins().scalar_to_vector(vector_type(dt), x),
                        Some(v) => self.b.ins().insertlane(v, x, lane as u8),
                    });
                }
                Val::V(vec.ok_or_else(|| internal("gather"))?)
            }
        };
        Ok((v, dt))
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> Result<(Val, DType), JitError> {
        if op == BinOp::Add && self.fma {
            let product = match (a, b) {
                (Expr::Binary(BinOp::Mul, x, y), c) | (c, Expr::Binary(BinOp::Mul, x, y)) => Some((x, y, c)),
                _ => None,
            };
            if let Some((x, y, c)) = product {
                let (vc, dt) = self.expr(c)?;
                if !dt.is_float() {
                    let (vp, _) = self.binary(BinOp::Mul, x, y)?;
                    return self.combine(BinOp::Add, dt, vp, vc);
                }
                let (vx, _) = self.expr(x)?;
                let (vy, _) = self.expr(y)?;
                let v = match (vx, vy, vc) {
                    (Val::S(x), Val::S(y), Val::S(c)) => Val::S(self.b.ins().fma(x, y, c)),
                    (x, y, c) => {
                        let [x, y, c] = [x, y, c].map(|v| self.vector_of(v, dt));
                        Val::V(self.b.ins().fma(x, y, c))
                    }
                };
                return Ok((v, dt));
            }
        }
        let (va, dt) = self.expr(a)?;
        let (vb, _) = self.expr(b)?;
        if op == BinOp::Pow {
            let (x, y) = (self.scalar(va)?, self.scalar(vb)?);
            let f = if dt == DType::F32 { self.imports.powf } else { self.imports.pow };
            let call = self.b.ins().call(f, &[x, y]);
            let r = *self.b.inst_results(call).first().ok_or_else(|| internal("pow result"))?;
            return Ok((Val::S(r), dt));
        }
        self.combine(op, dt, va, vb)
    }

    /// `op(a, b)` on operands of dtype `dt`, in vector form if either is.
    fn combine(&mut self, op: BinOp, dt: DType, a: Val, b: Val) -> Result<(Val, DType), JitError> {
        let result_dt = if op.is_comparison() { DType::BOOL } else { dt };
        let v = match (a, b) {
            (Val::S(x), Val::S(y)) => Val::S(self.ops().binary(op, dt, x, y)),
            (x, y) => {
                let (x, y) = (self.vector_of(x, dt), self.vector_of(y, dt));
                Val::V(self.ops().binary(op, dt, x, y))
            }
        };
        Ok((v, result_dt))
    }
}

fn zero(b: &mut FunctionBuilder<'_>, dt: DType) -> Value {
    literal(b, dt, Scalar::Int(0))
}

fn zero_vector(b: &mut FunctionBuilder<'_>, dt: DType) -> Value {
    let z = zero(b, dt);
    b.ins().splat(vector_type(dt), z)
}

/// A constant of kir dtype `dt` (the value is normalised to `dt` first).
fn literal(b: &mut FunctionBuilder<'_>, dt: DType, v: Scalar) -> Value {
    let v = relay_kir::cast(v, dt);
    let ty = scalar_type(dt);
    match v {
        Scalar::Float(x) if dt == DType::F32 => b.ins().f32const(x as f32),
        Scalar::Float(x) => b.ins().f64const(x),
        Scalar::Bool(x) => b.ins().iconst(I8, i64::from(x)),
        Scalar::Int(x) => {
            let bits = ty.bits();
            b.ins().iconst(ty, if bits < 64 { x & ((1i64 << bits) - 1) } else { x })
        }
        Scalar::UInt(x) => b.ins().iconst(ty, x as i64),
    }
}
