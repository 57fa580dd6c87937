//! The per-function emitter: registers for variables, A-normal-form `let` chains, calls
//! (direct, tail, closure, constructor, kernel), `if`, tuples and references.

use super::{is_flag, ModuleCx};
use crate::diagnostics::Diagnostic;
use crate::ir::{ExprId, ExprKind, FileId, Literal, LiteralValue, Span, Symbol, VarId};
use relay_runtime::{ConstIdx, FuncIdx, Imm, Instr, Reg, ScalarValue, SourcePos, StrIdx, Target};
use rustc_hash::FxHashMap as HashMap;

/// Where an expression's value goes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Dest {
    /// Return it from the function (calls become tail calls).
    Return,
    /// Write it to this register.
    Reg(Reg),
}

/// The unboxed value of a scalar literal.
pub fn literal_value(lit: &Literal) -> ScalarValue {
    match lit.value {
        LiteralValue::Int(i) if lit.dtype.is_float() => ScalarValue::float(lit.dtype, i as f64),
        LiteralValue::Int(i) => ScalarValue::int(lit.dtype, i),
        LiteralValue::Float(f) => ScalarValue::float(lit.dtype, f),
        LiteralValue::Bool(b) => ScalarValue::bool(b),
    }
}

/// Emits the code of one function.
pub(crate) struct FnEmitter<'c, 'a> {
    pub cx: &'c mut ModuleCx<'a>,
    pub name: String,
    pub code: Vec<Instr>,
    /// The source position of each instruction of `code`.
    pub positions: Vec<SourcePos>,
    /// The file of the function being emitted: positions are recorded only in it.
    file: FileId,
    /// The position of the expression being emitted.
    pos: SourcePos,
    next_reg: u32,
    var_reg: HashMap<VarId, Reg>,
    /// `let`-bound `Primitive=1` functions: called as kernels, never materialised.
    prim_fns: HashMap<VarId, ExprId>,
    /// `let %c = @lifted(caps)`: a closure whose calls become direct calls.
    closures: HashMap<VarId, (Symbol, Vec<Reg>)>,
    /// `let %t = fused(..)` of a multi-output kernel, or `let %t = (%a, %b)` of variables in
    /// registers: the registers of the tuple's fields (projections name them, a fused kernel
    /// takes them as inputs; the tuple is built only where used whole).
    tuples: HashMap<VarId, Vec<Reg>>,
    /// `let %x = %t.i` already emitted where the current expression is: (register of `%t`,
    /// `i`) to `%x`'s register. A second projection reuses it instead of cloning the field
    /// again. Scoped by [`FnEmitter::expr`], so a branch never sees another branch's.
    projections: HashMap<(Reg, u32), Reg>,
}

impl<'c, 'a> FnEmitter<'c, 'a> {
    /// An emitter for the function `name`, defined in `file`.
    pub fn new(cx: &'c mut ModuleCx<'a>, name: &str, file: FileId) -> FnEmitter<'c, 'a> {
        FnEmitter {
            cx,
            name: name.to_string(),
            code: vec![],
            positions: vec![],
            file,
            pos: SourcePos::UNKNOWN,
            next_reg: 0,
            var_reg: HashMap::default(),
            prim_fns: HashMap::default(),
            closures: HashMap::default(),
            tuples: HashMap::default(),
            projections: HashMap::default(),
        }
    }

    /// Registers used.
    pub fn num_regs(&self) -> u32 {
        self.next_reg
    }

    /// Emits a function whose parameters are `params` (registers `0..n`) and body `body`;
    /// returns its code and the source position of each instruction.
    pub fn function(
        &mut self,
        params: &[VarId],
        body: ExprId,
    ) -> Result<(Vec<Instr>, Vec<SourcePos>), Diagnostic> {
        for &p in params {
            let r = self.fresh();
            self.var_reg.insert(p, r);
        }
        self.expr(body, Dest::Return)?;
        Ok((std::mem::take(&mut self.code), std::mem::take(&mut self.positions)))
    }

    pub fn fresh(&mut self) -> Reg {
        self.next_reg += 1;
        Reg(self.next_reg - 1)
    }

    pub fn emit(&mut self, i: Instr) -> usize {
        self.code.push(i);
        self.positions.push(self.pos);
        self.code.len() - 1
    }

    /// Runs `f` with the instructions it emits attributed to `e`, when `e` has a position in
    /// the function's file; otherwise (a node a pass made up elsewhere) to the enclosing
    /// expression.
    fn at<T>(&mut self, e: ExprId, f: impl FnOnce(&mut Self) -> T) -> T {
        let span = self.cx.m.expr(e).span;
        let outer = self.pos;
        if span.file == self.file && span != Span::default() {
            let (line, col) = self.cx.m.sources.line_col(span.file, span.lo);
            self.pos = SourcePos { line: line as u32, col: col as u32 };
        }
        let result = f(self);
        self.pos = outer;
        result
    }

    /// The current position, as a jump target.
    pub fn here(&self) -> Target {
        Target(self.code.len() as u32)
    }

    /// Points the jump emitted at `at` to `target`.
    pub fn patch(&mut self, at: usize, target: Target) {
        match &mut self.code[at] {
            Instr::If { else_target, .. } => *else_target = target,
            Instr::Goto { target: t } => *t = target,
            _ => {}
        }
    }

    pub fn error(&self, e: ExprId, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.cx.m.expr(e).span, format!("in `@{}`: {}", self.name, message.into()))
    }

    /// Emits `e` (a `let` chain or a single value) into `dest`. Chains are walked in a loop.
    pub fn expr(&mut self, e: ExprId, dest: Dest) -> Result<(), Diagnostic> {
        let outer = self.projections.clone();
        let emitted = self.chain(e, dest);
        self.projections = outer;
        emitted
    }

    fn chain(&mut self, e: ExprId, dest: Dest) -> Result<(), Diagnostic> {
        let m = self.cx.m;
        let mut cur = e;
        while let ExprKind::Let { var, value, body } = &m.expr(cur).kind {
            // `let %x = v; %x` in tail position: `v` is the tail.
            if matches!(m.expr(*body).kind, ExprKind::Var(v) if v == *var) && !self.is_primitive(*value) {
                return self.value(*value, dest);
            }
            self.bind(*var, *value)?;
            cur = *body;
        }
        self.value(cur, dest)
    }

    fn is_primitive(&self, e: ExprId) -> bool {
        matches!(&self.cx.m.expr(e).kind, ExprKind::Function(f) if is_flag(self.cx.m, &f.attrs, "Primitive"))
    }

    /// The primitive `fn` literal a call of `callee` runs: `callee` itself or the literal
    /// its variable is bound to.
    fn primitive_callee(&self, callee: ExprId) -> Option<ExprId> {
        match &self.cx.m.expr(callee).kind {
            ExprKind::Var(v) => self.prim_fns.get(v).copied(),
            _ => self.is_primitive(callee).then_some(callee),
        }
    }

    /// Whether primitive `f`'s body is a tuple (a multi-output FuseOps group).
    fn returns_tuple(&self, f: ExprId) -> bool {
        let m = self.cx.m;
        matches!(&m.expr(f).kind, ExprKind::Function(func) if matches!(m.expr(func.body).kind, ExprKind::Tuple(_)))
    }

    /// The register of field `index` of tuple `tuple`, if it is a variable whose fields are
    /// in registers (a multi-output kernel's result, or a tuple of variables).
    fn tuple_field(&self, tuple: ExprId, index: u32) -> Option<Reg> {
        self.tuple_fields(tuple)?.get(index as usize).copied()
    }

    /// The registers of the fields of tuple `tuple`, if it is a variable whose fields are in
    /// registers.
    pub fn tuple_fields(&self, tuple: ExprId) -> Option<&[Reg]> {
        let ExprKind::Var(v) = self.cx.m.expr(tuple).kind else { return None };
        self.tuples.get(&v).map(Vec::as_slice)
    }

    /// The registers of `es` if every one is a variable held in a register.
    fn registers_of(&self, es: &[ExprId]) -> Option<Vec<Reg>> {
        es.iter()
            .map(|&e| match self.cx.m.expr(e).kind {
                ExprKind::Var(v) => self.var_reg.get(&v).copied(),
                _ => None,
            })
            .collect()
    }

    fn bind(&mut self, var: VarId, value: ExprId) -> Result<(), Diagnostic> {
        self.at(value, |em| em.bind_here(var, value))
    }

    fn bind_here(&mut self, var: VarId, value: ExprId) -> Result<(), Diagnostic> {
        let m = self.cx.m;
        match &m.expr(value).kind {
            _ if self.is_primitive(value) => {
                self.prim_fns.insert(var, value);
            }
            ExprKind::Var(v) if self.prim_fns.contains_key(v) => {
                let f = self.prim_fns[v];
                self.prim_fns.insert(var, f);
            }
            ExprKind::Var(v) if self.closures.contains_key(v) => {
                let c = self.closures[v].clone();
                self.closures.insert(var, c);
            }
            ExprKind::Call { callee, args, .. } if self.closure_global(*callee).is_some() => {
                if let Some(g) = self.closure_global(*callee) {
                    let regs = self.atoms(args)?;
                    // Built where it is used as a value; calls go direct.
                    self.closures.insert(var, (g, regs));
                }
            }
            ExprKind::Proj { tuple, index } if self.tuple_field(*tuple, *index).is_some() => {
                if let Some(r) = self.tuple_field(*tuple, *index) {
                    self.var_reg.insert(var, r);
                }
            }
            ExprKind::Proj { tuple, index } if self.tuple_field(*tuple, *index).is_none() => {
                let t = self.atom(*tuple)?;
                let r = match self.projections.get(&(t, *index)) {
                    Some(&r) => r,
                    None => {
                        let r = self.fresh();
                        self.emit(Instr::GetField { dst: r, obj: t, index: Imm(*index) });
                        self.projections.insert((t, *index), r);
                        r
                    }
                };
                self.var_reg.insert(var, r);
            }
            ExprKind::Tuple(fields) if !fields.is_empty() && self.registers_of(fields).is_some() => {
                if let Some(regs) = self.registers_of(fields) {
                    self.tuples.insert(var, regs);
                }
            }
            ExprKind::Call { callee, args, .. }
                if self.primitive_callee(*callee).is_some_and(|f| self.returns_tuple(f)) =>
            {
                let f = self.primitive_callee(*callee).unwrap_or(*callee);
                let regs = super::fused::fused_fields(self, f, args)?;
                self.tuples.insert(var, regs);
            }
            _ => {
                let r = self.fresh();
                self.value(value, Dest::Reg(r))?;
                self.var_reg.insert(var, r);
            }
        }
        Ok(())
    }

    fn closure_global(&self, callee: ExprId) -> Option<Symbol> {
        match self.cx.m.expr(callee).kind {
            ExprKind::Global(g) if self.cx.closure_globals.contains_key(&g) => Some(g),
            _ => None,
        }
    }

    fn func_index(&self, g: Symbol, at: ExprId) -> Result<FuncIdx, Diagnostic> {
        self.cx
            .func_index
            .get(&g)
            .map(|&i| FuncIdx(i))
            .ok_or_else(|| self.error(at, format!("unknown global `@{}`", self.cx.m.name(g))))
    }

    /// Writes register `r` to `dest`.
    pub fn finish(&mut self, r: Reg, dest: Dest) {
        match dest {
            Dest::Return => {
                self.emit(Instr::Ret { src: r });
            }
            Dest::Reg(d) if d != r => {
                self.emit(Instr::Move { dst: d, src: r });
            }
            Dest::Reg(_) => {}
        }
    }

    /// The register holding atom `e`, emitting a load for literals, constants and
    /// constructors.
    pub fn atom(&mut self, e: ExprId) -> Result<Reg, Diagnostic> {
        if let ExprKind::Var(v) = self.cx.m.expr(e).kind {
            if let Some(&r) = self.var_reg.get(&v) {
                return Ok(r);
            }
        }
        let r = self.fresh();
        self.value(e, Dest::Reg(r))?;
        Ok(r)
    }

    pub fn atoms(&mut self, es: &[ExprId]) -> Result<Vec<Reg>, Diagnostic> {
        es.iter().map(|&e| self.atom(e)).collect()
    }

    /// Emits a non-`let` expression into `dest`. Every recursion of the emitter (`if` and
    /// `match` arms, nested values) passes through here, so it runs under
    /// [`crate::stack::grow`]: nesting as deep as the parser accepts emits on any stack.
    fn value(&mut self, e: ExprId, dest: Dest) -> Result<(), Diagnostic> {
        crate::stack::grow(|| self.at(e, |em| em.value_here(e, dest)))
    }

    fn value_here(&mut self, e: ExprId, dest: Dest) -> Result<(), Diagnostic> {
        let m = self.cx.m;
        match &m.expr(e).kind {
            ExprKind::Let { .. } => self.expr(e, dest),
            ExprKind::Var(v) => {
                if let Some(&r) = self.var_reg.get(v) {
                    self.finish(r, dest);
                    return Ok(());
                }
                if let Some(fields) = self.tuples.get(v).cloned() {
                    let r = self.reg_for(dest);
                    self.emit(Instr::AllocADT { dst: r, tag: Imm(0), fields: fields.into() });
                    self.finish(r, dest);
                    return Ok(());
                }
                if let Some((g, caps)) = self.closures.get(v).cloned() {
                    let func = self.func_index(g, e)?;
                    let r = self.reg_for(dest);
                    self.emit(Instr::AllocClosure { dst: r, func, captured: caps.into() });
                    self.finish(r, dest);
                    return Ok(());
                }
                Err(self.error(e, format!("variable `%{}` has no value here", m.name(m.var(*v).name))))
            }
            ExprKind::Literal(lit) => {
                let value = literal_value(lit);
                let r = self.reg_for(dest);
                self.emit(Instr::LoadImm { dst: r, value });
                self.finish(r, dest);
                Ok(())
            }
            ExprKind::Constant(i) => {
                let r = self.reg_for(dest);
                self.emit(Instr::LoadConst { dst: r, index: ConstIdx(*i) });
                self.finish(r, dest);
                Ok(())
            }
            ExprKind::Global(g) => {
                if self.cx.closure_globals.contains_key(g) {
                    return Err(self.error(e, "a closure-creating global used as a value"));
                }
                let func = self.func_index(*g, e)?;
                let r = self.reg_for(dest);
                self.emit(Instr::AllocClosure { dst: r, func, captured: vec![].into() });
                self.finish(r, dest);
                Ok(())
            }
            ExprKind::Constructor(c) => self.construct(e, *c, &[], dest),
            ExprKind::Op(_) => Err(self.error(e, "an operator outside a primitive function")),
            ExprKind::Function(_) => Err(self.error(e, "internal: a closure that was not lambda-lifted")),
            ExprKind::Tuple(fields) => {
                let regs = self.atoms(fields)?;
                let r = self.reg_for(dest);
                self.emit(Instr::AllocADT { dst: r, tag: Imm(0), fields: regs.into() });
                self.finish(r, dest);
                Ok(())
            }
            ExprKind::Proj { tuple, index } => {
                if let Some(r) = self.tuple_field(*tuple, *index) {
                    self.finish(r, dest);
                    return Ok(());
                }
                let t = self.atom(*tuple)?;
                let r = self.reg_for(dest);
                self.emit(Instr::GetField { dst: r, obj: t, index: Imm(*index) });
                self.finish(r, dest);
                Ok(())
            }
            ExprKind::Call { callee, args, .. } => self.call(e, *callee, args, dest),
            ExprKind::If { cond, then_branch, else_branch } => {
                let c = self.atom(*cond)?;
                let at_if = self.emit(Instr::If { cond: c, else_target: Target(0) });
                match dest {
                    Dest::Return => {
                        self.expr(*then_branch, dest)?;
                        let here = self.here();
                        self.patch(at_if, here);
                        self.expr(*else_branch, dest)
                    }
                    Dest::Reg(_) => {
                        self.expr(*then_branch, dest)?;
                        let at_goto = self.emit(Instr::Goto { target: Target(0) });
                        let here = self.here();
                        self.patch(at_if, here);
                        self.expr(*else_branch, dest)?;
                        let end = self.here();
                        self.patch(at_goto, end);
                        Ok(())
                    }
                }
            }
            ExprKind::Match { scrutinee, arms, .. } => {
                let s = self.atom(*scrutinee)?;
                super::matching::compile_match(self, s, arms, dest)
            }
            ExprKind::RefNew(v) => {
                let v = self.atom(*v)?;
                let r = self.reg_for(dest);
                self.emit(Instr::RefNew { dst: r, value: v });
                self.finish(r, dest);
                Ok(())
            }
            ExprKind::RefRead(c) => {
                let c = self.atom(*c)?;
                let r = self.reg_for(dest);
                self.emit(Instr::RefRead { dst: r, cell: c });
                self.finish(r, dest);
                Ok(())
            }
            ExprKind::RefWrite { cell, value } => {
                let (c, v) = (self.atom(*cell)?, self.atom(*value)?);
                self.emit(Instr::RefWrite { cell: c, value: v });
                let r = self.reg_for(dest);
                self.emit(Instr::AllocADT { dst: r, tag: Imm(0), fields: vec![].into() });
                self.finish(r, dest);
                Ok(())
            }
        }
    }

    /// The register a value for `dest` should be computed into.
    pub fn reg_for(&mut self, dest: Dest) -> Reg {
        match dest {
            Dest::Reg(r) => r,
            Dest::Return => self.fresh(),
        }
    }

    fn construct(&mut self, e: ExprId, c: Symbol, args: &[ExprId], dest: Dest) -> Result<(), Diagnostic> {
        let m = self.cx.m;
        let Some(def) = m.constructor(c) else {
            return Err(self.error(e, format!("unknown constructor `{}`", m.name(c))));
        };
        if def.fields.len() != args.len() {
            return Err(
                self.error(e, format!("constructor `{}` used as a value: not eta-expanded", m.name(c)))
            );
        }
        let regs = self.atoms(args)?;
        let r = self.reg_for(dest);
        self.emit(Instr::AllocADT { dst: r, tag: Imm(def.tag), fields: regs.into() });
        self.finish(r, dest);
        Ok(())
    }

    fn call(&mut self, e: ExprId, callee: ExprId, args: &[ExprId], dest: Dest) -> Result<(), Diagnostic> {
        let m = self.cx.m;
        if let Some(f) = self.primitive_callee(callee) {
            return super::primitive::call_primitive(self, f, args, dest);
        }
        match &m.expr(callee).kind {
            ExprKind::Global(g) if self.cx.closure_globals.contains_key(g) => {
                let func = self.func_index(*g, callee)?;
                let caps = self.atoms(args)?;
                let r = self.reg_for(dest);
                self.emit(Instr::AllocClosure { dst: r, func, captured: caps.into() });
                self.finish(r, dest);
                Ok(())
            }
            ExprKind::Global(g) => {
                let func = self.func_index(*g, callee)?;
                let regs = self.atoms(args)?;
                self.direct_call(func, regs, dest);
                Ok(())
            }
            ExprKind::Constructor(c) => self.construct(e, *c, args, dest),
            ExprKind::Var(v) if self.closures.contains_key(v) && !self.var_reg.contains_key(v) => {
                let (g, caps) = self.closures[v].clone();
                let func = self.func_index(g, callee)?;
                let mut regs = caps;
                regs.extend(self.atoms(args)?);
                self.direct_call(func, regs, dest);
                Ok(())
            }
            ExprKind::Call { callee: inner, args: caps, .. } if self.closure_global(*inner).is_some() => {
                let Some(g) = self.closure_global(*inner) else { return Ok(()) };
                let func = self.func_index(g, callee)?;
                let mut regs = self.atoms(caps)?;
                regs.extend(self.atoms(args)?);
                self.direct_call(func, regs, dest);
                Ok(())
            }
            _ => {
                let c = self.atom(callee)?;
                let regs = self.atoms(args)?;
                match dest {
                    Dest::Return => {
                        self.emit(Instr::TailCallClosure { closure: c, args: regs.into() });
                    }
                    Dest::Reg(r) => {
                        self.emit(Instr::InvokeClosure { dst: r, closure: c, args: regs.into() });
                    }
                }
                Ok(())
            }
        }
    }

    fn direct_call(&mut self, func: FuncIdx, args: Vec<Reg>, dest: Dest) {
        match dest {
            Dest::Return => {
                self.emit(Instr::TailCall { func, args: args.into() });
            }
            Dest::Reg(r) => {
                self.emit(Instr::Invoke { dst: r, func, args: args.into() });
            }
        }
    }

    /// Makes `var` name register `r` (pattern variables).
    pub fn bind_var(&mut self, var: VarId, r: Reg) {
        self.var_reg.insert(var, r);
    }

    /// Emits a trap with `message`.
    pub fn fatal(&mut self, message: String) {
        let i = self.cx.string(message);
        self.emit(Instr::Fatal { message: StrIdx(i) });
    }
}
