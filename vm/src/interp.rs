//! The interpreter: one dispatch loop over register windows on a single value stack
//! (ARCHITECTURE.md §3, "VM"). A call pushes a window and a small frame record — no heap
//! allocation — and a tail call reuses the window, so Relay's tail-recursive loops run in
//! constant space and deep non-tail recursion uses heap memory, never the host stack.
//!
//! The loop keeps the running function's registers as a slice (`window`) of the value stack
//! and re-derives it only when calls, tail calls and returns move the stack. Scalar
//! instructions take inline fast paths for the common dtypes ([`scalar::fast`]); writes of
//! scalars over scalars run no drop code; a self tail call whose arguments can move in
//! order (a loop) swaps them into place without a buffer.

mod device;
mod lane;
#[cfg(test)]
mod limit_tests;
mod liveness;
mod packed;
mod probe;
mod setup;
mod stack;
#[cfg(test)]
mod tests;
mod trap;

use crate::cancel::CancelHandle;
use crate::config::VmConfig;
use crate::executable::{Executable, VmFunction};
use crate::isa::Instr;
use crate::memory::{Arena, FrameLayout, Planned, Pool};
use crate::operand::Reg;
use crate::packed_func::PackedFunc;
use crate::scalar::{self, ScalarValue};
use crate::value::{ClosureValue, Fields, Value};
pub use device::CopyStats;
pub use lane::Step;
pub use liveness::empties_at_last_use;
use liveness::LastUses;
pub use probe::{InstrClassRow, InstrProfile};
use probe::{NoProbe, Probe};
use relay_devices::DType;
use stack::put;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use trap::{read_error, stopped, trap_at};
pub use trap::{Trap, TrapFrame, MAX_TRAP_FRAMES};

/// Constructors without fields and with a tag below this share one value per tag.
const MAX_SHARED_TAG: u32 = 256;

/// Where a suspended caller resumes.
#[derive(Clone, Copy)]
struct Frame<'e> {
    /// The caller's code (kept so that a return needs no function lookup).
    code: &'e [Instr],
    func: u32,
    pc: u32,
    base: usize,
    /// Where the caller's frame arenas begin in the VM's stack of them.
    arena_base: usize,
    /// The caller's register that receives the callee's result.
    ret_dst: u32,
}

/// Where a run continues: the running function, its next instruction, its register window
/// `base..top` and its frame arenas `arena_base..arena_top` (the callers' are in `frames`).
#[derive(Clone, Copy, Debug)]
struct Resume {
    func: u32,
    pc: usize,
    base: usize,
    top: usize,
    arena_base: usize,
    arena_top: usize,
}

/// How the dispatch loop stopped.
enum Exit {
    /// The entry function returned this.
    Done(Value),
    /// Paused before the kernel call just before `pc` (a lane run, `lane.rs`).
    Paused(Resume),
}

/// A virtual machine running one executable; one per thread (the executable is shared).
pub struct Vm<'e> {
    exe: &'e Executable,
    kernels: &'e [Arc<dyn PackedFunc>],
    constants: Vec<Value>,
    /// The value stack (see `stack`); between runs every slot is empty.
    regs: Vec<Option<Value>>,
    frames: Vec<Frame<'e>>,
    /// Set while a run is in progress: still set at the next `invoke` only if a kernel
    /// panicked through the last run, which then left the stack in an unknown state.
    running: bool,
    config: VmConfig,
    /// Stops runs from another thread or at the deadline (`cancel.rs`).
    cancel: CancelHandle,
    /// The most registers the value stack may hold (from the memory budget).
    max_regs: usize,
    /// Free tensor buffers and allocation statistics.
    pool: Pool,
    /// The frame arenas of every active call.
    arena: Arena,
    /// Per function: its frame arena's size.
    layouts: Vec<FrameLayout>,
    /// Per function: the registers each instruction reads for the last time.
    last_uses: Vec<LastUses>,
    /// Output tensors of the kernel call in progress (kept to avoid an allocation per call).
    scratch: packed::Scratch,
    /// Copy statistics and cached uploads of device kernels.
    device: device::DeviceState,
    /// One shared value per tag for constructors without fields (`Nil`, `None`): ADT values
    /// are immutable and carry no type, so every `Nil` can be the same allocation.
    nullary: Vec<Value>,
    /// Per function: the closure `AllocClosure` made last in this run. Making the same closure
    /// again (same function, the very same captured values) returns it instead of a new
    /// allocation — a recursive closure passing itself to `@map` on every tree node. Cleared
    /// after each run so that captured values do not outlive it.
    closures: Vec<Option<Arc<ClosureValue>>>,
    /// Counts by instruction class while profiling ([`Vm::start_instr_profile`]); `None`
    /// runs the dispatch loop compiled without the hook.
    instr_profile: Option<Box<InstrProfile>>,
    /// A lane run paused at a kernel call (`lane.rs`): where it continues and its entry's name.
    paused: Option<(Resume, String)>,
}

impl<'e> Vm<'e> {
    /// Runs the function named `name` with `args`.
    ///
    /// # Errors
    /// A [`Trap`] for an unknown function, a wrong argument count, any run-time fault, a
    /// memory limit exceeded, a cancelled run or a passed deadline
    /// ([`crate::StopReason`], which [`CancelHandle::stop_reason`] then tells).
    pub fn invoke(&mut self, name: &str, args: Vec<Value>) -> Result<Value, Trap> {
        let start = self.begin(name, args)?;
        // One check per run, none per instruction: the loop is compiled once with the
        // profiling hook and once without.
        let result = match self.instr_profile.take() {
            None => self.run(start, &mut NoProbe, None),
            Some(mut profile) => {
                let result = self.run(start, &mut *profile, None);
                profile.finish();
                self.instr_profile = Some(profile);
                result
            }
        };
        let value = result.and_then(|exit| match exit {
            Exit::Done(v) => Ok(v),
            // Neither probe pauses.
            Exit::Paused(at) => Err(trap_at(self.exe, std::iter::empty(), at.func, at.pc, "paused".into())),
        });
        self.end(name, value)
    }

    /// Checks the call of `name` with `args` and lays out its first frame: where a run starts.
    fn begin(&mut self, name: &str, args: Vec<Value>) -> Result<Resume, Trap> {
        let trap = Trap::outside;
        let func = self.exe.function_index(name).ok_or_else(|| trap(format!("no function `{name}`")))?;
        let f = &self.exe.functions[func];
        if args.len() != f.num_params() as usize {
            return Err(trap(format!("`{name}` takes {} argument(s), {} given", f.num_params(), args.len())));
        }
        if self.running {
            self.regs.clear();
            self.frames.clear();
            self.arena.clear();
        }
        let top = (f.num_regs as usize).max(args.len());
        if self.regs.len() < top {
            stack::grow(&mut self.regs, top, self.max_regs).map_err(|e| trap(e.message()))?;
        }
        self.pool.start_run();
        for (slot, v) in self.regs.iter_mut().zip(args) {
            *slot = Some(v);
        }
        self.running = true;
        let arena_top = self.layouts.get(func).map_or(0, |l| l.frames());
        Ok(Resume { func: func as u32, pc: 0, base: 0, top, arena_base: 0, arena_top })
    }

    /// Ends the run of `name` that gave `result`: drops what the run kept alive and brings
    /// device results home.
    fn end(&mut self, name: &str, mut result: Result<Value, Trap>) -> Result<Value, Trap> {
        for c in self.closures.iter_mut().filter_map(Option::take) {
            self.pool.recycle_value(Value::Closure(c));
        }
        if self.device.used {
            // The host receives host tensors only.
            let trap = |e| Trap::outside(format!("the result of `{name}`: {e}"));
            result = result.and_then(|v| self.device.bring_value_home(v).map_err(trap));
            self.device.end_run();
        }
        if result.is_err() {
            // A trap leaves the faulting frames and their registers behind; a return
            // leaves the stack empty.
            self.regs.clear();
            self.frames.clear();
            self.arena.clear();
        }
        self.running = false;
        result
    }

    /// Counts the instructions of every later run and their time, by class, starting from
    /// zero (again, if it was already counting); read them with [`Vm::instr_profile`].
    pub fn start_instr_profile(&mut self) {
        self.instr_profile = Some(Box::default());
    }

    /// The counts since [`Vm::start_instr_profile`], if it was called.
    pub fn instr_profile(&self) -> Option<&InstrProfile> {
        self.instr_profile.as_deref()
    }

    /// The dispatch loop, from `start` until the entry function returns or, for a probe that
    /// pauses ([`Probe::pauses_at`]), a kernel call it pauses at. `replace`, when given, first
    /// runs the kernel call a paused run stopped at (the instruction before `start.pc`) with
    /// that kernel instead of the table's.
    fn run<P: Probe>(
        &mut self,
        start: Resume,
        probe: &mut P,
        replace: Option<&dyn PackedFunc>,
    ) -> Result<Exit, Trap> {
        let exe = self.exe;
        let Vm {
            regs,
            frames,
            constants,
            kernels,
            config,
            cancel,
            max_regs,
            pool,
            arena,
            layouts,
            last_uses,
            scratch,
            device,
            nullary,
            closures,
            ..
        } = self;
        let (cancel, max_regs): (&CancelHandle, usize) = (cancel, *max_regs);
        // Polled at every call, tail call, kernel call and backward jump: a byte load, as
        // the clock is read by the deadline thread, not here.
        let stop: &AtomicU8 = cancel.as_atomic();
        let Resume { mut func, pc, mut base, mut top, mut arena_base, mut arena_top } = start;
        let entry = func;
        let mut code: &[Instr] = match exe.functions.get(func as usize) {
            Some(f) => &f.code,
            None => return Err(trap_at(exe, std::iter::empty(), func, 0, "no such function".into())),
        };
        let mut pc: usize = pc;
        if let Err(e) = arena.reserve(arena_top) {
            return Err(trap_at(exe, std::iter::empty(), entry, 0, e));
        }
        // The running function's registers: `regs[base..top]`, re-derived whenever the value
        // stack changes (calls, tail calls, returns).
        let mut window: &mut [Option<Value>] = &mut regs[base..top];
        // The running function's last uses, re-derived with `code`.
        let last_uses: &[LastUses] = last_uses;
        let mut dying: &LastUses = last_uses.get(func as usize).unwrap_or(&NO_LAST_USES);
        macro_rules! trap {
            ($($arg:tt)*) => {
                return Err(trap_at(
                    exe,
                    frames.iter().map(|f| (f.func, (f.pc as usize).saturating_sub(1))),
                    func,
                    pc - 1,
                    format!($($arg)*),
                ))
            };
        }
        // Traps when the run was cancelled or its deadline passed.
        macro_rules! poll {
            () => {
                let flag = stop.load(Ordering::Relaxed);
                if flag != 0 {
                    trap!("{}", stopped(flag));
                }
            };
        }
        // Continues at `$target`, polling first when that is a backward jump (a loop).
        macro_rules! jump {
            ($target:expr) => {{
                let target = $target as usize;
                if target < pc {
                    poll!();
                }
                pc = target;
            }};
        }
        // Makes room in the stack of frame arenas for entries up to `arena_top`.
        macro_rules! reserve_arenas {
            () => {
                if let Err(e) = arena.reserve(arena_top) {
                    trap!("{e}");
                }
            };
        }
        macro_rules! slot {
            ($r:expr) => {
                match window.get_mut($r.0 as usize) {
                    Some(slot) => slot,
                    None => trap!("register ${} outside the frame", $r.0),
                }
            };
        }
        macro_rules! reg {
            ($r:expr) => {
                match window.get($r.0 as usize) {
                    Some(Some(v)) => v,
                    _ => trap!("{}", read_error(window, Reg($r.0))),
                }
            };
        }
        // The value of register `$r`: moved out when operand `$i` of the instruction is the
        // register's last use, else cloned.
        macro_rules! read {
            ($r:expr, $mask:expr, $i:expr) => {
                if moves($mask, $i) {
                    match slot!($r).take() {
                        Some(v) => v,
                        None => trap!("read of empty register ${}", $r.0),
                    }
                } else {
                    reg!($r).clone()
                }
            };
        }
        macro_rules! set {
            ($r:expr, $v:expr) => {{
                let v = $v;
                if let Some(old) = put(slot!($r), v) {
                    pool.recycle_value(old);
                }
            }};
        }
        // Scalar over scalar is the common write in loops: it needs no drop of the old value.
        macro_rules! set_scalar {
            ($r:expr, $s:expr) => {{
                let s = $s;
                match slot!($r) {
                    Some(Value::Scalar(old)) => *old = s,
                    slot => *slot = Some(Value::Scalar(s)),
                }
            }};
        }
        macro_rules! scalar {
            ($r:expr) => {
                match window.get($r.0 as usize) {
                    Some(Some(Value::Scalar(s))) => *s,
                    _ => trap!("{}", read_error(window, Reg($r.0))),
                }
            };
        }
        // `a op b` on scalars: inline for the common dtypes, out of line for the rest.
        macro_rules! binary {
            ($op:expr, $a:expr, $b:expr) => {{
                let (op, a, b) = ($op, $a, $b);
                match scalar::fast(op, a, b) {
                    Some(v) => v,
                    None => match scalar::binary(op, a, b) {
                        Ok(v) => v,
                        Err(e) => trap!("{e}"),
                    },
                }
            }};
        }
        // Whether `a op b` holds, for `IfCmp`.
        macro_rules! truth {
            ($op:expr, $a:expr, $b:expr) => {{
                let (op, a, b) = ($op, $a, $b);
                match scalar::compare(op, a, b) {
                    Some(t) => t,
                    None => match scalar::binary(op, a, b) {
                        Ok(v) => v.is_true(),
                        Err(e) => trap!("{e}"),
                    },
                }
            }};
        }
        macro_rules! function {
            ($f:expr) => {
                match exe.functions.get($f as usize) {
                    Some(f) => f,
                    None => trap!("call of function #{}, which does not exist", $f),
                }
            };
        }
        macro_rules! closure {
            ($r:expr) => {
                match reg!($r) {
                    Value::Closure(c) => c,
                    other => trap!("called a {} as a function", other.kind()),
                }
            };
        }
        // Pushes a window for `callee` holding the values captured by the closure in
        // register `closure` (if any), then `args`, and enters it.
        macro_rules! enter {
            ($callee:expr, $f:expr, $closure:expr, $args:expr, $moves:expr, $ret_dst:expr) => {{
                poll!();
                if frames.len() >= config.max_call_depth {
                    trap!("recursion deeper than {} calls", config.max_call_depth);
                }
                let (callee, f): (u32, &VmFunction) = ($callee, $f);
                let num_regs = f.num_regs as usize;
                if let Err(e) = stack::enter(regs, base, top, num_regs, $closure, $args, $moves, max_regs) {
                    trap!("{}", e.message());
                }
                frames.push(Frame { code, func, pc: pc as u32, base, arena_base, ret_dst: $ret_dst });
                arena_base = arena_top;
                arena_top += layouts.get(callee as usize).map_or(0, |l| l.frames());
                reserve_arenas!();
                func = callee;
                pc = 0;
                base = top;
                top += num_regs;
                code = &f.code;
                dying = last_uses.get(callee as usize).unwrap_or(&NO_LAST_USES);
                window = &mut regs[base..top];
            }};
        }
        // Replaces the running function's window by the callee's, in place.
        macro_rules! replace {
            ($callee:expr, $f:expr, $captured:expr, $args:expr) => {{
                poll!();
                let (callee, f): (u32, &VmFunction) = ($callee, $f);
                match stack::reuse(regs, base, top, f.num_regs as usize, $captured, $args, pool, max_regs) {
                    Ok(t) => top = t,
                    Err(e) => trap!("{}", e.message()),
                }
                if callee != func {
                    arena.release(arena_base, arena_top);
                    arena_top = arena_base + layouts.get(callee as usize).map_or(0, |l| l.frames());
                    reserve_arenas!();
                }
                func = callee;
                pc = 0;
                code = &f.code;
                dying = last_uses.get(callee as usize).unwrap_or(&NO_LAST_USES);
                window = &mut regs[base..top];
            }};
        }
        // Returns `v` to the caller, or from the run when there is none.
        macro_rules! ret {
            ($v:expr) => {{
                let v = $v;
                stack::leave(regs, base, top, pool);
                arena.release(arena_base, arena_top);
                let Some(caller) = frames.pop() else { return Ok(Exit::Done(v)) };
                arena_top = arena_base;
                arena_base = caller.arena_base;
                func = caller.func;
                pc = caller.pc as usize;
                top = base;
                base = caller.base;
                code = caller.code;
                dying = last_uses.get(func as usize).unwrap_or(&NO_LAST_USES);
                window = &mut regs[base..top];
                set!(Reg(caller.ret_dst), v);
            }};
        }
        // The closure in register `$r` and its function, checked to take `$args`.
        macro_rules! closure_call {
            ($r:expr, $args:expr) => {{
                let c = closure!($r);
                let f = function!(c.func);
                if c.captured.len() + $args.len() != f.num_params() as usize {
                    trap!("closure of `{}` called with {} argument(s)", f.name, $args.len());
                }
                (c, f)
            }};
        }

        if let Some(k) = replace {
            match pc.checked_sub(1).and_then(|p| code.get(p)) {
                Some(Instr::InvokePacked { kernel, inputs, outputs }) => {
                    let call = packed::Call { exe, kernels, kernel: kernel.0, inputs, outputs, cancel };
                    if let Err(m) = call.run_with(k, window, pool, scratch, device) {
                        poll!();
                        trap!("{m}");
                    }
                }
                _ => trap!("resumed after an instruction that is not a kernel call"),
            }
        }
        loop {
            let Some(ins) = code.get(pc) else {
                pc += 1;
                trap!("control fell off the end of the function");
            };
            pc += 1;
            probe.before(ins);
            match ins {
                Instr::Move { dst, src } => {
                    let v = read!(src, dying.at(pc - 1), 0);
                    set!(dst, v);
                }
                Instr::Ret { src } => {
                    let v = match slot!(src).take() {
                        Some(v) => v,
                        None => trap!("return of empty register ${}", src.0),
                    };
                    ret!(v);
                }
                Instr::RetBin { op, lhs, rhs } => {
                    ret!(Value::Scalar(binary!(*op, scalar!(lhs), scalar!(rhs))))
                }
                Instr::RetBinImm { op, lhs, imm } => ret!(Value::Scalar(binary!(*op, scalar!(lhs), *imm))),
                Instr::Invoke { dst, func: callee, args } => {
                    enter!(callee.0, function!(callee.0), None, args, dying.at(pc - 1), dst.0)
                }
                Instr::TailCall { func: callee, args } => {
                    // A loop: a call of the running function whose arguments can move in
                    // order needs neither resizing nor a buffer.
                    if callee.0 == func && stack::moves_in_order(0, args) {
                        poll!();
                        for (j, &a) in args.iter().enumerate() {
                            match window.get(a.0 as usize) {
                                // In bounds: `j <= a` by `moves_in_order`.
                                Some(Some(_)) => window.swap(j, a.0 as usize),
                                _ => trap!("{}", read_error(window, a)),
                            }
                        }
                        stack::clear_from(window, args.len(), pool);
                        pc = 0;
                    } else {
                        replace!(callee.0, function!(callee.0), &[], args);
                    }
                }
                Instr::InvokeClosure { dst, closure, args } => {
                    let (c, f) = closure_call!(closure, args);
                    enter!(c.func, f, Some(*closure), args, dying.at(pc - 1), dst.0);
                }
                Instr::TailCallClosure { closure, args } => {
                    let (c, f) = closure_call!(closure, args);
                    // The captured values are read while the window they sit in is rebuilt,
                    // so the closure is held by a counted reference meanwhile.
                    if c.captured.is_empty() {
                        replace!(c.func, f, &[], args);
                    } else {
                        let c = c.clone();
                        replace!(c.func, f, &c.captured, args);
                    }
                }
                Instr::InvokePacked { kernel, inputs, outputs } => {
                    poll!();
                    if probe.pauses_at(kernel.0) {
                        return Ok(Exit::Paused(Resume { func, pc, base, top, arena_base, arena_top }));
                    }
                    let call = packed::Call { exe, kernels, kernel: kernel.0, inputs, outputs, cancel };
                    if let Err(m) = call.run(window, pool, scratch, device) {
                        // A kernel stopped by the flag says why in its own words; the trap
                        // says it as every other stop does.
                        poll!();
                        trap!("{m}");
                    }
                }
                Instr::AllocTensor { dst, dtype, shape, init } => match pool.alloc(*dtype, shape, *init) {
                    Ok(t) => set!(dst, Value::Tensor(t)),
                    Err(e) => trap!("{e}"),
                },
                Instr::AllocFrame { dst, offset, dtype, shape, init } => {
                    let size = layouts.get(func as usize).map_or(0, |l| l.arena_bytes);
                    if arena_base >= arena_top {
                        trap!("AllocFrame in a function without a frame arena");
                    }
                    let planned = Planned { offset: offset.0 as usize, dtype: *dtype, shape, init: *init };
                    match arena.alloc(arena_base, size, planned, pool) {
                        Ok(t) => set!(dst, Value::Tensor(t)),
                        Err(e) => trap!("{e}"),
                    }
                }
                Instr::Kill { regs: dead } => {
                    for r in dead.iter() {
                        if let Some(v) = slot!(r).take() {
                            pool.recycle_value(v);
                        }
                    }
                }
                Instr::AllocADT { dst, tag, fields } if fields.is_empty() && tag.0 < MAX_SHARED_TAG => {
                    let t = tag.0 as usize;
                    while nullary.len() <= t {
                        nullary.push(Value::adt(nullary.len() as u32, Fields::new()));
                    }
                    let v = nullary[t].clone();
                    set!(dst, v);
                }
                Instr::AllocADT { dst, tag, fields } => {
                    let mask = dying.at(pc - 1);
                    let mut vs = Fields::with_capacity(fields.len());
                    for (i, r) in fields.iter().enumerate() {
                        vs.push(read!(r, mask, i));
                    }
                    let v = pool.adt(tag.0, vs);
                    set!(dst, v);
                }
                Instr::AllocClosure { dst, func: target, captured } => {
                    let last = closures.get(target.0 as usize).and_then(Option::as_ref);
                    let again = last.filter(|c| {
                        c.captured.len() == captured.len()
                            && c.captured.iter().zip(captured.iter()).all(
                                |(v, r)| matches!(window.get(r.0 as usize), Some(Some(w)) if v.is_same(w)),
                            )
                    });
                    let c = match again {
                        Some(c) => c.clone(),
                        None => {
                            let mask = dying.at(pc - 1);
                            let mut vs = Fields::with_capacity(captured.len());
                            for (i, r) in captured.iter().enumerate() {
                                vs.push(read!(r, mask, i));
                            }
                            let c = pool.closure(target.0, vs);
                            if let Some(last) = closures.get_mut(target.0 as usize) {
                                *last = Some(c.clone());
                            }
                            c
                        }
                    };
                    set!(dst, Value::Closure(c));
                }
                Instr::GetField { dst, obj, index } if moves(dying.at(pc - 1), 0) => {
                    // The object dies here: its cell, when nothing else holds it, gives up
                    // the field and goes back to the pool.
                    let v = match slot!(obj).take() {
                        Some(Value::Adt(a)) => match pool.take_field(a, index.0 as usize) {
                            Ok(v) => v,
                            Err(n) => trap!("field {} of a value with {} fields", index.0, n),
                        },
                        Some(other) => trap!("field access on a {}", other.kind()),
                        None => trap!("read of empty register ${}", obj.0),
                    };
                    set!(dst, v);
                }
                Instr::GetField { dst, obj, index } => {
                    let v = match reg!(obj) {
                        Value::Adt(a) => match a.fields.get(index.0 as usize) {
                            Some(v) => v,
                            None => trap!("field {} of a value with {} fields", index.0, a.fields.len()),
                        },
                        other => trap!("field access on a {}", other.kind()),
                    };
                    match v {
                        Value::Scalar(s) => {
                            let s = *s;
                            set_scalar!(dst, s)
                        }
                        v => {
                            let v = v.clone();
                            set!(dst, v)
                        }
                    }
                }
                Instr::GetTag { dst, obj } => {
                    let tag = match reg!(obj) {
                        Value::Adt(a) => a.tag,
                        other => trap!("tag of a {}", other.kind()),
                    };
                    set_scalar!(dst, ScalarValue::int(DType::I32, i64::from(tag)));
                }
                Instr::SwitchTag { obj, targets } => {
                    let tag = match reg!(obj) {
                        Value::Adt(a) => a.tag,
                        other => trap!("match on a {}", other.kind()),
                    };
                    match targets.get(tag as usize) {
                        Some(t) => jump!(t.0),
                        None => trap!("constructor tag {tag} has no branch"),
                    }
                }
                Instr::If { cond, else_target } => {
                    if !scalar!(cond).is_true() {
                        jump!(else_target.0);
                    }
                }
                Instr::IfCmp { op, lhs, rhs, else_target } => {
                    if !truth!(*op, scalar!(lhs), scalar!(rhs)) {
                        jump!(else_target.0);
                    }
                }
                Instr::IfCmpImm { op, lhs, imm, else_target } => {
                    if !truth!(*op, scalar!(lhs), *imm) {
                        jump!(else_target.0);
                    }
                }
                Instr::Goto { target } => jump!(target.0),
                Instr::LoadConst { dst, index } => {
                    let v = match constants.get(index.0 as usize) {
                        Some(v) => v.clone(),
                        None => trap!("constant #{} does not exist", index.0),
                    };
                    set!(dst, v);
                }
                Instr::LoadImm { dst, value } => set_scalar!(dst, *value),
                Instr::RefNew { dst, value } => {
                    let v = reg!(value).clone();
                    set!(dst, Value::reference(v));
                }
                Instr::RefRead { dst, cell } => {
                    let v = match reg!(cell) {
                        Value::Ref(r) => r.lock().clone(),
                        other => trap!("ref_read of a {}", other.kind()),
                    };
                    set!(dst, v);
                }
                Instr::RefWrite { cell, value } => {
                    let v = reg!(value).clone();
                    match reg!(cell) {
                        Value::Ref(r) => *r.lock() = v,
                        other => trap!("ref_write to a {}", other.kind()),
                    }
                }
                Instr::Fatal { message } => {
                    let m = exe.strings.get(message.0 as usize).map_or("fatal", String::as_str);
                    trap!("{m}");
                }
                Instr::Bin { op, dst, lhs, rhs } => {
                    set_scalar!(dst, binary!(*op, scalar!(lhs), scalar!(rhs)))
                }
                Instr::BinImm { op, dst, lhs, imm } => set_scalar!(dst, binary!(*op, scalar!(lhs), *imm)),
                Instr::Un { op, dst, src } => match scalar::unary(*op, scalar!(src)) {
                    Ok(v) => set_scalar!(dst, v),
                    Err(e) => trap!("{e}"),
                },
                Instr::DeviceCopy { dst, src } => {
                    let v = match reg!(src) {
                        Value::Device(d) => match device.download_paired(d) {
                            Ok(v) => v,
                            Err(e) => trap!("{e}"),
                        },
                        v => v.clone(),
                    };
                    set!(dst, v);
                }
                Instr::Cast { dst, src, dtype } => {
                    let v = scalar!(src).cast(*dtype);
                    set_scalar!(dst, v);
                }
            }
        }
    }
}

/// The last uses of a function the VM has none for (only in a run that is about to trap).
static NO_LAST_USES: LastUses = LastUses::EMPTY;

/// Whether bit `i` of a last-use mask is set: operand `i` may be moved.
#[inline(always)]
fn moves(mask: u64, i: usize) -> bool {
    mask.checked_shr(i as u32).is_some_and(|m| m & 1 != 0)
}
