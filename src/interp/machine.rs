//! The evaluator loop: a machine with an explicit stack of tasks (what to evaluate, and what
//! to do with values once they are there), a stack of values, and a stack of activations (one
//! per Relay function call in progress). The host stack never grows with the program: a
//! 1,000,000-deep recursion is 1,000,000 activations on the heap, a 100,000-deep `let` chain
//! one task at a time. A call in tail position replaces its caller's activation, so loops
//! written as tail recursion run in constant memory.
//!
//! Within one activation every expression node is evaluated at most once (there are no loops
//! but calls), so a node the IR shares between several parents (graph bindings `%0 = ...;`)
//! is evaluated once and remembered for the activation: effects and costs happen once, as
//! in the VM.

use super::callables::Callable;
use super::ops::BoundOp;
use super::pattern;
use super::{Fault, Interpreter};
use relay_compiler::codegen::literal_value;
use relay_compiler::ir::{ExprId, ExprKind, TypeKind, VarId};
use relay_runtime::{ClosureValue, Value};
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

/// What the machine does next.
#[derive(Debug)]
enum Task {
    /// Evaluate an expression, pushing its value.
    Eval(ExprId),
    /// Pop `n` values and push their tuple.
    Tuple(usize),
    /// Pop a tuple and push field `index`.
    Proj(u32),
    /// Pop `argc` arguments and the function value below them, and call it.
    Apply { argc: usize },
    /// Pop the arguments of operator call `call` and run its kernel.
    Op { call: ExprId, argc: usize },
    /// Pop `argc` fields and push the constructor value with tag `tag`.
    Construct { tag: u32, argc: usize },
    /// Pop a value, bind it to `var`, evaluate `body`.
    Bind { var: VarId, body: ExprId },
    /// Pop a condition and evaluate one branch.
    Branch { then_branch: ExprId, else_branch: ExprId },
    /// Pop the scrutinee of `match` expression `expr` and evaluate the first arm it matches.
    Match { expr: ExprId },
    /// Pop a value and push a new cell holding it.
    RefNew,
    /// Pop a cell and push its contents.
    RefRead,
    /// Pop a value and a cell, store the value, push `()`.
    RefWrite,
    /// Keep the value on top of the stack as the value of shared node `expr`.
    Remember(ExprId),
    /// The current activation's body is done: pop it.
    Return,
}

/// A Relay function call in progress.
#[derive(Debug)]
struct Activation {
    /// The callable it runs.
    func: u32,
    /// The values of the variables bound so far, by slot ([`Machine::slot`]).
    locals: Vec<Option<Value>>,
    /// The values of the shared nodes evaluated so far.
    shared: HashMap<ExprId, Value>,
}

/// One run of the interpreter.
pub(super) struct Machine<'i> {
    interp: &'i Interpreter,
    tasks: Vec<Task>,
    values: Vec<Value>,
    activations: Vec<Activation>,
    /// For each callable, the slot of each variable bound in it, numbered the first time the
    /// variable is bound (any activation of one function gives a variable the same slot).
    slots: Vec<HashMap<VarId, usize>>,
    /// The parsed operator of each operator call site evaluated so far.
    ops: HashMap<ExprId, BoundOp>,
}

impl<'i> Machine<'i> {
    pub fn new(interp: &'i Interpreter) -> Machine<'i> {
        Machine {
            interp,
            tasks: vec![],
            values: vec![],
            activations: vec![],
            slots: interp.callables.list.iter().map(|_| HashMap::default()).collect(),
            ops: HashMap::default(),
        }
    }

    /// Calls function value `f` on `args` and runs until it returns.
    ///
    /// # Errors
    /// A run-time fault, with the Relay call stack at the fault.
    pub fn run(mut self, f: Value, args: Vec<Value>) -> Result<Value, Fault> {
        let argc = args.len();
        self.values.push(f);
        self.values.extend(args);
        self.tasks.push(Task::Apply { argc });
        while let Some(task) = self.tasks.pop() {
            if let Err(message) = self.step(task) {
                return Err(self.fault(message));
            }
        }
        match (self.values.pop(), self.values.is_empty()) {
            (Some(v), true) => Ok(v),
            _ => Err(self.fault("internal: the value stack is unbalanced".to_string())),
        }
    }

    /// `message` with the names of the functions being called, innermost first.
    fn fault(&self, message: String) -> Fault {
        let stack = self.activations.iter().rev().map(|a| self.interp.callables.name(a.func).to_string());
        Fault { message, stack: stack.collect() }
    }

    fn pop(&mut self) -> Result<Value, String> {
        self.values.pop().ok_or_else(|| "internal: the value stack is empty".to_string())
    }

    /// The top `n` values, in the order they were pushed.
    fn pop_n(&mut self, n: usize) -> Result<Vec<Value>, String> {
        let at = self.values.len().checked_sub(n).ok_or("internal: the value stack is too short")?;
        Ok(self.values.split_off(at))
    }

    fn step(&mut self, task: Task) -> Result<(), String> {
        match task {
            Task::Eval(e) => self.eval(e)?,
            Task::Tuple(n) => {
                let fields = self.pop_n(n)?;
                self.values.push(Value::tuple(fields));
            }
            Task::Proj(index) => {
                let v = match self.pop()? {
                    Value::Adt(t) => t.fields.get(index as usize).cloned(),
                    _ => None,
                };
                self.values.push(v.ok_or_else(|| format!("projection `.{index}` of a value without it"))?);
            }
            Task::Apply { argc } => {
                let args = self.pop_n(argc)?;
                let f = self.pop()?;
                self.apply(f, args)?;
            }
            Task::Construct { tag, argc } => {
                let fields = self.pop_n(argc)?;
                self.values.push(Value::adt(tag, fields));
            }
            Task::Op { call, argc } => {
                let args = self.pop_n(argc)?;
                let v = self.call_op(call, &args)?;
                self.values.push(v);
            }
            Task::Bind { var, body } => {
                let v = self.pop()?;
                self.bind(var, v)?;
                self.tasks.push(Task::Eval(body));
            }
            Task::Branch { then_branch, else_branch } => {
                let taken = match self.pop()? {
                    Value::Scalar(s) => s.is_true(),
                    other => return Err(format!("an `if` condition is a {}", other.kind())),
                };
                self.tasks.push(Task::Eval(if taken { then_branch } else { else_branch }));
            }
            Task::Match { expr } => self.choose_arm(expr)?,
            Task::RefNew => {
                let v = self.pop()?;
                self.values.push(Value::reference(v));
            }
            Task::RefRead => {
                let v = match self.pop()? {
                    Value::Ref(cell) => cell.lock().clone(),
                    other => return Err(format!("`ref_read` of a {}", other.kind())),
                };
                self.values.push(v);
            }
            Task::RefWrite => {
                let v = self.pop()?;
                match self.pop()? {
                    Value::Ref(cell) => {
                        // The old contents drop after the lock is released.
                        let old = std::mem::replace(&mut *cell.lock(), v);
                        drop(old);
                    }
                    other => return Err(format!("`ref_write` to a {}", other.kind())),
                }
                self.values.push(Value::tuple(vec![]));
            }
            Task::Remember(e) => {
                let v = self.values.last().cloned().ok_or("internal: nothing to remember")?;
                self.current()?.shared.insert(e, v);
            }
            Task::Return => {
                self.activations.pop();
            }
        }
        Ok(())
    }

    /// Starts evaluating `e`: pushes its value, or the tasks that will.
    fn eval(&mut self, e: ExprId) -> Result<(), String> {
        let interp = self.interp;
        let m = &interp.checked.module;
        if interp.shared[e.index()] {
            if let Some(v) = self.current()?.shared.get(&e).cloned() {
                self.values.push(v);
                return Ok(());
            }
            self.tasks.push(Task::Remember(e));
        }
        match &m.expr(e).kind {
            ExprKind::Var(v) => {
                let value = self.lookup(*v)?;
                self.values.push(value);
            }
            ExprKind::Global(g) => {
                let func = *interp
                    .callables
                    .global
                    .get(g)
                    .ok_or_else(|| format!("no function `@{}`", m.name(*g)))?;
                self.values.push(closure(func, vec![]));
            }
            ExprKind::Constructor(c) => {
                let con = m.constructor(*c).ok_or_else(|| format!("no constructor `{}`", m.name(*c)))?;
                let v = match interp.callables.constructor.get(c) {
                    Some(&func) => closure(func, vec![]),
                    None => Value::adt(con.tag, vec![]),
                };
                self.values.push(v);
            }
            ExprKind::Op(op) => {
                return Err(format!(
                    "operator `{}` used as a value: the interpreter calls operators only",
                    m.name(*op)
                ))
            }
            ExprKind::Literal(lit) => self.values.push(Value::Scalar(literal_value(lit))),
            ExprKind::Constant(i) => {
                let c = interp.constants.get(*i as usize).ok_or_else(|| format!("no constant #{i}"))?;
                self.values.push(c.clone());
            }
            ExprKind::Tuple(fields) => {
                self.tasks.push(Task::Tuple(fields.len()));
                self.tasks.extend(fields.iter().rev().map(|&f| Task::Eval(f)));
            }
            ExprKind::Proj { tuple, index } => {
                self.tasks.push(Task::Proj(*index));
                self.tasks.push(Task::Eval(*tuple));
            }
            ExprKind::Call { callee, args, .. } => {
                // Operator and constructor calls take their arguments only; other callees
                // are evaluated (first) to a function value.
                let argc = args.len();
                let callee = match m.expr(*callee).kind {
                    ExprKind::Op(_) => {
                        self.tasks.push(Task::Op { call: e, argc });
                        None
                    }
                    ExprKind::Constructor(c) => {
                        let con =
                            m.constructor(c).ok_or_else(|| format!("no constructor `{}`", m.name(c)))?;
                        self.tasks.push(Task::Construct { tag: con.tag, argc });
                        None
                    }
                    _ => {
                        self.tasks.push(Task::Apply { argc });
                        Some(*callee)
                    }
                };
                self.tasks.extend(args.iter().rev().map(|&a| Task::Eval(a)));
                self.tasks.extend(callee.map(Task::Eval));
            }
            ExprKind::Let { var, value, body } => {
                self.tasks.push(Task::Bind { var: *var, body: *body });
                self.tasks.push(Task::Eval(*value));
            }
            ExprKind::If { cond, then_branch, else_branch } => {
                self.tasks.push(Task::Branch { then_branch: *then_branch, else_branch: *else_branch });
                self.tasks.push(Task::Eval(*cond));
            }
            ExprKind::Match { scrutinee, .. } => {
                self.tasks.push(Task::Match { expr: e });
                self.tasks.push(Task::Eval(*scrutinee));
            }
            ExprKind::Function(_) => {
                let func = *interp.callables.literal.get(&e).ok_or("internal: an unnumbered `fn`")?;
                let Some(Callable::Function { captures, .. }) = interp.callables.list.get(func as usize)
                else {
                    return Err("internal: a `fn` that is not a function".to_string());
                };
                let captured = captures.iter().map(|&v| self.lookup(v)).collect::<Result<Vec<_>, _>>()?;
                self.values.push(closure(func, captured));
            }
            ExprKind::RefNew(x) => {
                self.tasks.push(Task::RefNew);
                self.tasks.push(Task::Eval(*x));
            }
            ExprKind::RefRead(x) => {
                self.tasks.push(Task::RefRead);
                self.tasks.push(Task::Eval(*x));
            }
            ExprKind::RefWrite { cell, value } => {
                self.tasks.push(Task::RefWrite);
                self.tasks.push(Task::Eval(*value));
                self.tasks.push(Task::Eval(*cell));
            }
        }
        Ok(())
    }

    /// Calls function value `f` on `args`: builds a constructor value, or starts a function's
    /// body in a new activation (replacing the caller's when the call is in tail position).
    fn apply(&mut self, f: Value, args: Vec<Value>) -> Result<(), String> {
        let interp = self.interp;
        let Value::Closure(c) = &f else { return Err(format!("a call of a {}", f.kind())) };
        let callee = interp.callables.list.get(c.func as usize).ok_or("internal: an unknown function")?;
        let (params, body, captures, rec_var) = match callee {
            Callable::Constructor { name, tag, arity } => {
                if args.len() != *arity {
                    return Err(format!("`{name}` applied to {} value(s), it takes {arity}", args.len()));
                }
                self.values.push(Value::adt(*tag, args));
                return Ok(());
            }
            Callable::Function { params, body, captures, rec_var, .. } => (params, *body, captures, *rec_var),
        };
        if args.len() != params.len() {
            return Err(format!(
                "`{}` called with {} argument(s), it takes {}",
                interp.callables.name(c.func),
                args.len(),
                params.len()
            ));
        }
        let tail = matches!(self.tasks.last(), Some(Task::Return));
        if !tail && self.activations.len() >= interp.max_call_depth {
            return Err(format!("recursion deeper than {} calls", interp.max_call_depth));
        }
        let activation = Activation { func: c.func, locals: vec![], shared: HashMap::default() };
        if tail {
            // The caller has nothing left to do: its activation can go now.
            self.activations.pop();
        } else {
            self.tasks.push(Task::Return);
        }
        self.activations.push(activation);
        for (&v, value) in captures.iter().zip(c.captured.iter()) {
            self.bind(v, value.clone())?;
        }
        if let Some(v) = rec_var {
            self.bind(v, f.clone())?;
        }
        for (&v, value) in params.iter().zip(args) {
            self.bind(v, value)?;
        }
        self.tasks.push(Task::Eval(body));
        Ok(())
    }

    /// Runs the kernel of operator call `call` on its evaluated arguments.
    fn call_op(&mut self, call: ExprId, args: &[Value]) -> Result<Value, String> {
        let m = &self.interp.checked.module;
        let ExprKind::Call { callee, attrs, .. } = &m.expr(call).kind else {
            return Err("internal: an operator task for a non-call".to_string());
        };
        let ExprKind::Op(name) = m.expr(*callee).kind else {
            return Err("internal: an operator task for a non-operator".to_string());
        };
        let op = match self.ops.get(&call) {
            Some(op) => op,
            None => {
                let op = BoundOp::new(m.name(name), &m.symbols, attrs)?;
                self.ops.entry(call).or_insert(op)
            }
        };
        let ty = self.interp.checked.types.expr(call);
        let tuple_result = ty.is_some_and(|t| matches!(m.types.kind(t), TypeKind::Tuple(_)));
        op.call(args, tuple_result)
    }

    /// Pops the scrutinee of `match` expression `expr`, binds the first matching arm's
    /// variables and evaluates its body.
    fn choose_arm(&mut self, expr: ExprId) -> Result<(), String> {
        let m = &self.interp.checked.module;
        let ExprKind::Match { arms, complete, .. } = &m.expr(expr).kind else {
            return Err("internal: a match task for a non-match".to_string());
        };
        let v = self.pop()?;
        let mut bindings = vec![];
        for arm in arms {
            bindings.clear();
            if pattern::matches(m, arm.pattern, &v, &mut bindings)? {
                for (var, value) in bindings {
                    self.bind(var, value)?;
                }
                self.tasks.push(Task::Eval(arm.body));
                return Ok(());
            }
        }
        let what = if *complete { "match" } else { "match?" };
        Err(format!("no arm of this `{what}` matches the value"))
    }

    fn current(&mut self) -> Result<&mut Activation, String> {
        self.activations.last_mut().ok_or_else(|| "internal: no function is running".to_string())
    }

    /// Binds `var` to `v` in the current activation.
    fn bind(&mut self, var: VarId, v: Value) -> Result<(), String> {
        let a = self.activations.last_mut().ok_or("internal: no function is running")?;
        let slots = &mut self.slots[a.func as usize];
        let next = slots.len();
        let slot = *slots.entry(var).or_insert(next);
        if a.locals.len() <= slot {
            a.locals.resize(slot + 1, None);
        }
        a.locals[slot] = Some(v);
        Ok(())
    }

    /// The value of `var` in the current activation.
    fn lookup(&self, var: VarId) -> Result<Value, String> {
        let a = self.activations.last().ok_or("internal: no function is running")?;
        self.slots[a.func as usize]
            .get(&var)
            .and_then(|&slot| a.locals.get(slot).cloned().flatten())
            .ok_or_else(|| {
                let m = &self.interp.checked.module;
                format!("internal: `%{}` is not bound here", m.name(m.var(var).name))
            })
    }
}

/// A function value of callable `func` with `captured` values.
fn closure(func: u32, captured: Vec<Value>) -> Value {
    Value::Closure(Arc::new(ClosureValue { func, captured: captured.into() }))
}
