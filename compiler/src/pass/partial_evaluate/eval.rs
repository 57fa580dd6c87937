//! The evaluator: runs a function body on partially static values, leaving residual code
//! for what is not known (see the [module docs](super) for the rules and the bounds).

use super::residual::{closed, fresh, fresh_pattern, Block};
use super::value::{Closure, PValue, Static, Store};
use super::{MAX_UNFOLDS, MAX_UNFOLD_DEPTH};
use crate::diagnostics::CompileError;
use crate::ir::{
    Attrs, ExprId, ExprKind, Function, MatchArm, Module, PatId, PatternKind, Span, Symbol, VarId,
};
use crate::op::OpRegistry;
use crate::pass::fold_constant::{constant_condition, evaluate_op};
use crate::pass::util::builder::{is_primitive, var_ref, Types};
use crate::pass::util::copy::copy_fresh;
use crate::pass::util::free_vars::free_vars;
use crate::ty::TypeMap;
use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

/// The values of the variables in scope in one activation of a function body. Every binding
/// site has its own variable, so one map per activation needs no scoping.
type Env = HashMap<VarId, PValue>;

/// What a call unfolds: a global function or a `fn` literal of the program.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum FnKey {
    Global(Symbol),
    Literal(ExprId),
}

/// The state of partially evaluating one global function.
pub(super) struct Evaluator<'a> {
    types: &'a TypeMap,
    ops: &'a OpRegistry,
    /// The parameters and body of every global as the pass found it (unfolded calls read
    /// these, not the residual bodies of globals already done).
    globals: &'a HashMap<Symbol, (Vec<VarId>, ExprId)>,
    store: Store,
    /// The calls being unfolded (and closure bodies being residualised), innermost last,
    /// each with the dynamic depth at which it began.
    frames: Vec<(FnKey, usize)>,
    /// How many dynamic branches and residual closure bodies enclose the current point.
    dyn_depth: usize,
    /// Calls unfolded so far.
    unfolds: usize,
    /// Free variables of each `fn` literal met.
    free: HashMap<ExprId, Vec<VarId>>,
}

impl<'a> Evaluator<'a> {
    /// An evaluator reading the program's types and operators, and the original globals.
    pub fn new(
        types: &'a TypeMap,
        ops: &'a OpRegistry,
        globals: &'a HashMap<Symbol, (Vec<VarId>, ExprId)>,
    ) -> Self {
        Evaluator {
            types,
            ops,
            globals,
            store: Store::default(),
            frames: vec![],
            dyn_depth: 0,
            unfolds: 0,
            free: HashMap::default(),
        }
    }

    /// The residual body of global `name`, its parameters dynamic.
    pub fn global(&mut self, m: &mut Module, name: Symbol) -> Result<ExprId, CompileError> {
        let Some((params, body)) = self.globals.get(&name).cloned() else {
            let span = m.function(name).map(|f| f.span).unwrap_or_default();
            return Err(self.error(span, "a global has no body"));
        };
        let mut env = Env::default();
        for p in params {
            let atom = var_ref(m, p, m.var(p).span);
            env.insert(p, PValue::dynamic(atom));
        }
        self.frames.push((FnKey::Global(name), self.dyn_depth));
        let mut block = Block::default();
        let result = self.eval(m, body, &mut env, &mut block)?;
        self.frames.pop();
        let result = result.place(m);
        Ok(block.finish(m, result))
    }

    fn eval(
        &mut self,
        m: &mut Module,
        e: ExprId,
        env: &mut Env,
        block: &mut Block,
    ) -> Result<PValue, CompileError> {
        crate::stack::grow(|| self.eval_node(m, e, env, block))
    }

    fn eval_node(
        &mut self,
        m: &mut Module,
        e: ExprId,
        env: &mut Env,
        block: &mut Block,
    ) -> Result<PValue, CompileError> {
        let v = m.symbols.intern("v");
        Ok(match m.expr(e).kind.clone() {
            ExprKind::Var(x) => match env.get(&x) {
                Some(pv) => pv.clone(),
                None => return Err(self.error(m.expr(e).span, "a variable is not bound")),
            },
            ExprKind::Global(g) if self.globals.contains_key(&g) => PValue::known(e, Static::Global(g)),
            ExprKind::Literal(_) | ExprKind::Constant(_) => PValue::known(e, Static::Tensor),
            kind if kind.is_atom() => PValue::dynamic(e),
            ExprKind::Tuple(fields) => {
                let fields = self.eval_all(m, &fields, env, block)?;
                let value = ExprKind::Tuple(atoms(m, &fields));
                let value = m.add_expr(value, m.expr(e).span);
                PValue::known(block.bind(m, self.types, value, e, v), Static::Tuple(fields))
            }
            ExprKind::Proj { tuple, index } => {
                let t = self.eval(m, tuple, env, block)?;
                if let Some(Static::Tuple(fields)) = t.get() {
                    if let Some(f) = fields.get(index as usize) {
                        return Ok(f.clone());
                    }
                }
                let tuple = t.place(m);
                let value = m.add_expr(ExprKind::Proj { tuple, index }, m.expr(e).span);
                PValue::dynamic(block.bind(m, self.types, value, e, v))
            }
            ExprKind::Call { callee, args, attrs } => {
                let callee = self.eval(m, callee, env, block)?;
                let args = self.eval_all(m, &args, env, block)?;
                self.apply(m, e, callee, args, attrs, block)?
            }
            ExprKind::Let { .. } => self.let_chain(m, e, env, block)?,
            ExprKind::If { cond, then_branch, else_branch } => {
                let c = self.eval(m, cond, env, block)?;
                let known = c.get().and_then(|_| constant_condition(m, c.atom));
                if let Some(taken) = known {
                    let branch = if taken { then_branch } else { else_branch };
                    return self.eval(m, branch, env, block);
                }
                let before = self.store.clone();
                let then_branch = self.branch(m, then_branch, env, &before)?;
                let else_branch = self.branch(m, else_branch, env, &before)?;
                self.store.forget();
                let cond = c.place(m);
                let value = m.add_expr(ExprKind::If { cond, then_branch, else_branch }, m.expr(e).span);
                PValue::dynamic(block.bind(m, self.types, value, e, v))
            }
            ExprKind::Match { scrutinee, arms, complete } => {
                let s = self.eval(m, scrutinee, env, block)?;
                for arm in &arms {
                    let mut bound = vec![];
                    match matches(m, arm.pattern, &s, &mut bound) {
                        Some(true) => {
                            env.extend(bound);
                            return self.eval(m, arm.body, env, block);
                        }
                        Some(false) => continue,
                        None => break,
                    }
                }
                let before = self.store.clone();
                let mut residual = vec![];
                for arm in arms {
                    let mut bound = vec![];
                    let pattern = fresh_pattern(m, self.types, arm.pattern, &mut bound);
                    env.extend(bound);
                    residual.push(MatchArm { pattern, body: self.branch(m, arm.body, env, &before)? });
                }
                self.store.forget();
                let scrutinee = s.place(m);
                let value =
                    m.add_expr(ExprKind::Match { scrutinee, arms: residual, complete }, m.expr(e).span);
                PValue::dynamic(block.bind(m, self.types, value, e, v))
            }
            ExprKind::Function(f) if is_primitive(m, &f) => {
                // A kernel: kept whole, as a copy so that no variable is bound twice.
                let (copy, _) = copy_fresh(m, e)?;
                PValue::dynamic(block.bind(m, self.types, copy, e, v))
            }
            ExprKind::Function(_) => self.closure(m, e, None, env, block)?,
            ExprKind::RefNew(init) => {
                let init = self.eval(m, init, env, block)?;
                let atom = init.place(m);
                let value = m.add_expr(ExprKind::RefNew(atom), m.expr(e).span);
                let atom = block.bind(m, self.types, value, e, v);
                PValue::known(atom, Static::Ref(self.store.alloc(init)))
            }
            ExprKind::RefRead(cell) => {
                let r = self.eval(m, cell, env, block)?;
                let cell = match r.get() {
                    Some(Static::Ref(c)) => Some(*c),
                    _ => None,
                };
                if let Some(known) = cell.and_then(|c| self.store.read(c)) {
                    return Ok(known);
                }
                let atom = r.place(m);
                let value = m.add_expr(ExprKind::RefRead(atom), m.expr(e).span);
                let read = PValue::dynamic(block.bind(m, self.types, value, e, v));
                if let Some(c) = cell {
                    self.store.write(c, read.clone());
                }
                read
            }
            ExprKind::RefWrite { cell, value } => {
                let r = self.eval(m, cell, env, block)?;
                let x = self.eval(m, value, env, block)?;
                let (cell, value) = (r.place(m), x.place(m));
                let write = m.add_expr(ExprKind::RefWrite { cell, value }, m.expr(e).span);
                let atom = block.bind(m, self.types, write, e, v);
                match r.get() {
                    Some(Static::Ref(c)) => self.store.write(*c, x),
                    // Any cell may be the one written.
                    _ => self.store.forget(),
                }
                PValue::known(atom, Static::Tuple(vec![]))
            }
            kind => return Err(self.error(m.expr(e).span, format!("unexpected node {kind:?}"))),
        })
    }

    fn eval_all(
        &mut self,
        m: &mut Module,
        es: &[ExprId],
        env: &mut Env,
        block: &mut Block,
    ) -> Result<Vec<PValue>, CompileError> {
        es.iter().map(|&a| self.eval(m, a, env, block)).collect()
    }

    /// A `let` chain, walked in a loop. A residual binding made last for a `let`'s value
    /// takes the program variable's name.
    fn let_chain(
        &mut self,
        m: &mut Module,
        first: ExprId,
        env: &mut Env,
        block: &mut Block,
    ) -> Result<PValue, CompileError> {
        let mut cur = first;
        while let ExprKind::Let { var, value, body } = m.expr(cur).kind {
            let literal = matches!(&m.expr(value).kind, ExprKind::Function(f) if !is_primitive(m, f));
            let pv = if literal {
                self.closure(m, value, Some(var), env, block)?
            } else {
                let before = block.len();
                let pv = self.eval(m, value, env, block)?;
                let made = match m.expr(pv.atom).kind {
                    ExprKind::Var(made) if block.len() > before => block.last_var().filter(|&l| l == made),
                    _ => None,
                };
                if let Some(made) = made {
                    m.vars[made.index()].name = m.var(var).name;
                }
                pv
            };
            env.insert(var, pv);
            cur = body;
        }
        self.eval(m, cur, env, block)
    }

    /// One arm of a dynamic `if`/`match` as a residual block, starting from what was known
    /// before the branch.
    fn branch(
        &mut self,
        m: &mut Module,
        e: ExprId,
        env: &mut Env,
        before: &Store,
    ) -> Result<ExprId, CompileError> {
        self.store.restore(before.clone());
        self.dyn_depth += 1;
        let mut block = Block::default();
        let result = self.eval(m, e, env, &mut block);
        self.dyn_depth -= 1;
        let result = result?.place(m);
        Ok(block.finish(m, result))
    }

    /// The value of `fn` literal `func` (bound by `let %self_var` if given): a known closure,
    /// whose atom is a residual `fn` literal for the uses that stay calls or escape (its body
    /// evaluated with dynamic parameters and nothing known of the cells, as it runs later).
    fn closure(
        &mut self,
        m: &mut Module,
        func: ExprId,
        self_var: Option<VarId>,
        env: &Env,
        block: &mut Block,
    ) -> Result<PValue, CompileError> {
        let ExprKind::Function(f) = &m.expr(func).kind else {
            return Err(self.error(m.expr(func).span, "a closure is not a fn literal"));
        };
        let f: Function = (**f).clone();
        let free = match self.free.get(&func) {
            Some(free) => free.clone(),
            None => {
                let free = free_vars(m, func);
                self.free.insert(func, free.clone());
                free
            }
        };
        let mut captures = HashMap::default();
        for x in free.into_iter().filter(|&x| Some(x) != self_var) {
            let value = env
                .get(&x)
                .cloned()
                .ok_or_else(|| self.error(m.expr(func).span, "a capture is not bound"))?;
            captures.insert(x, value);
        }
        let span = m.expr(func).span;
        let name = match self_var {
            Some(s) => m.var(s).name,
            None => m.symbols.intern("f"),
        };
        let ty = closed(m, self.types.expr(func), &[]);
        let fvar = m.add_var(name, ty, span);
        let closure = Rc::new(Closure { func, captures, self_var });
        let value = PValue::known(var_ref(m, fvar, span), Static::Closure(closure.clone()));

        let mut inner = closure.captures.clone();
        if let Some(s) = self_var {
            inner.insert(s, value.clone());
        }
        let mut params = vec![];
        for &p in &f.params {
            let new = fresh(m, self.types, p, &f.type_params);
            let atom = var_ref(m, new, span);
            inner.insert(p, PValue::dynamic(atom));
            params.push(new);
        }
        let saved = self.store.clone();
        self.store.forget();
        self.dyn_depth += 1;
        self.frames.push((FnKey::Literal(func), self.dyn_depth));
        let mut body_block = Block::default();
        let result = self.eval(m, f.body, &mut inner, &mut body_block);
        self.frames.pop();
        self.dyn_depth -= 1;
        self.store.restore(saved);
        let result = result?.place(m);
        let body = body_block.finish(m, result);
        let ret_type = closed(m, f.ret_type, &f.type_params);
        let literal = Function { type_params: f.type_params, params, ret_type, body, attrs: f.attrs };
        let node = m.add_expr(ExprKind::Function(Box::new(literal)), span);
        block.bind_var(fvar, node);
        Ok(value)
    }

    /// `callee(args)`: unfolded when the callee is known and the bounds allow, a constructor
    /// value, an operator folded on known operands, else a residual call.
    fn apply(
        &mut self,
        m: &mut Module,
        call: ExprId,
        callee: PValue,
        args: Vec<PValue>,
        attrs: Attrs,
        block: &mut Block,
    ) -> Result<PValue, CompileError> {
        let v = m.symbols.intern("v");
        let target = match callee.get() {
            Some(Static::Closure(c)) => match &m.expr(c.func).kind {
                ExprKind::Function(f) => {
                    let mut env = c.captures.clone();
                    if let Some(s) = c.self_var {
                        env.insert(s, callee.clone());
                    }
                    Some((FnKey::Literal(c.func), f.params.clone(), f.body, env))
                }
                _ => None,
            },
            Some(Static::Global(g)) => {
                let primitive = m.function(*g).is_some_and(|f| is_primitive(m, &f.func));
                match self.globals.get(g) {
                    Some((params, body)) if !primitive => {
                        Some((FnKey::Global(*g), params.clone(), *body, Env::default()))
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some((key, params, body, mut env)) = target {
            if params.len() == args.len() && self.may_unfold(key) {
                env.extend(params.into_iter().zip(args));
                self.unfolds += 1;
                self.frames.push((key, self.dyn_depth));
                let result = self.eval(m, body, &mut env, block);
                self.frames.pop();
                return result;
            }
        }
        let span = m.expr(call).span;
        match m.expr(callee.atom).kind {
            ExprKind::Constructor(ctor) => {
                let (callee, args_atoms) = (callee.place(m), atoms(m, &args));
                let value = m.add_expr(ExprKind::Call { callee, args: args_atoms, attrs }, span);
                let atom = block.bind(m, self.types, value, call, v);
                Ok(PValue::known(atom, Static::Adt { ctor, fields: args }))
            }
            ExprKind::Op(_) => {
                let op = callee.place(m);
                Ok(self.operator(m, call, op, &args, attrs, block))
            }
            _ => {
                let (callee, args) = (callee.place(m), atoms(m, &args));
                let value = m.add_expr(ExprKind::Call { callee, args, attrs }, span);
                let atom = block.bind(m, self.types, value, call, v);
                // The callee may write any cell it can reach.
                self.store.forget();
                Ok(PValue::dynamic(atom))
            }
        }
    }

    /// Whether a call of `key` may be unfolded here: within [`MAX_UNFOLDS`] and
    /// [`MAX_UNFOLD_DEPTH`], and not a recursive call under a dynamic branch entered since
    /// the callee's outer activation began (that recursion has no static bound).
    fn may_unfold(&self, key: FnKey) -> bool {
        self.unfolds < MAX_UNFOLDS
            && self.frames.len() < MAX_UNFOLD_DEPTH
            && !self.frames.iter().any(|&(k, depth)| k == key && depth < self.dyn_depth)
    }

    /// An operator call: computed now by [`evaluate_op`] when every operand is a known
    /// tensor (or tuple of them), else residual.
    fn operator(
        &mut self,
        m: &mut Module,
        call: ExprId,
        op: ExprId,
        args: &[PValue],
        attrs: Attrs,
        block: &mut Block,
    ) -> PValue {
        let v = m.symbols.intern("v");
        let span = m.expr(call).span;
        let mut known = true;
        let mut operands = vec![];
        for a in args {
            match a.get() {
                // Operators taking tuples (`concatenate`) get the tuple written out, as written.
                Some(Static::Tuple(fields)) => {
                    known &= fields.iter().all(|f| matches!(f.get(), Some(Static::Tensor)));
                    let fields = ExprKind::Tuple(atoms(m, fields));
                    operands.push(m.add_expr(fields, span));
                }
                Some(Static::Tensor) => operands.push(a.atom),
                _ => {
                    known = false;
                    operands.push(a.place(m));
                }
            }
        }
        let value = m.add_expr(ExprKind::Call { callee: op, args: operands, attrs }, span);
        let folded = match (known, self.types.expr(call)) {
            (true, Some(ty)) => evaluate_op(m, self.ops, ty, value),
            _ => None,
        };
        match folded {
            Some(c) => match &m.expr(c).kind {
                ExprKind::Tuple(fields) => {
                    let fields = fields.iter().map(|&f| PValue::known(f, Static::Tensor)).collect();
                    PValue::known(block.bind(m, self.types, c, call, v), Static::Tuple(fields))
                }
                _ => PValue::known(c, Static::Tensor),
            },
            None => PValue::dynamic(block.bind(m, self.types, value, call, v)),
        }
    }

    fn error(&self, span: Span, what: impl AsRef<str>) -> CompileError {
        Types::new(self.types, "PartialEvaluate").error(span, what)
    }
}

/// The atoms of `values`.
fn atoms(m: &mut Module, values: &[PValue]) -> Vec<ExprId> {
    values.iter().map(|p| p.place(m)).collect()
}

/// Whether known value `value` matches pattern `p`: `Some(true)` (its variables' values
/// pushed to `bound`), `Some(false)`, or `None` when that depends on what is not known.
fn matches(m: &Module, p: PatId, value: &PValue, bound: &mut Vec<(VarId, PValue)>) -> Option<bool> {
    let (pats, fields) = match (&m.pattern(p).kind, value.get()) {
        (PatternKind::Wildcard, _) => return Some(true),
        (PatternKind::Var(x), _) => {
            bound.push((*x, value.clone()));
            return Some(true);
        }
        (PatternKind::Constructor { name, args }, Some(Static::Adt { ctor, fields })) => {
            if name != ctor || args.len() != fields.len() {
                return Some(false);
            }
            (args, fields)
        }
        (PatternKind::Tuple(ps), Some(Static::Tuple(fields))) if ps.len() == fields.len() => (ps, fields),
        _ => return None,
    };
    let mut result = Some(true);
    for (&p, f) in pats.iter().zip(fields) {
        match crate::stack::grow(|| matches(m, p, f, bound)) {
            Some(false) => return Some(false),
            None => result = None,
            Some(true) => {}
        }
    }
    result
}
