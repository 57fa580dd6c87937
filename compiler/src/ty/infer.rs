//! Constraint generation: walks every global function once, assigning each expression a
//! term, unifying as it goes and handing operator calls and tuple projections to the
//! deferred-constraint solver (paper §3.2; TVM `type_infer.cc`).

use super::solve::Deferred;
use super::term::{Term, Terms, Tv, UnifyError};
use crate::diagnostics::Diagnostic;
use crate::ir::{ExprId, ExprKind, Function, Module, PatId, PatternKind, Span, Symbol, TypeId, TypeParamId};
use crate::op::{OpRegistry, TensorType};
use crate::ty::TypeMap;
use rustc_hash::FxHashMap as HashMap;

/// The state of inference over one module.
pub(crate) struct Checker<'a> {
    pub m: &'a Module,
    pub ops: &'a OpRegistry,
    pub terms: Terms,
    pub expr_ty: Vec<Option<Tv>>,
    pub var_ty: Vec<Option<Tv>>,
    /// Each global's type; polymorphic ones are `Func` terms with type parameters.
    pub global_ty: HashMap<Symbol, Tv>,
    pub deferred: Vec<Deferred>,
    pub diags: Vec<Diagnostic>,
    /// `match` expressions to check for exhaustiveness once types are known.
    pub matches: Vec<ExprId>,
    /// Finished types known from an earlier inference of the same module, by expression and
    /// by variable (empty for a whole inference): a node found here is not visited again
    /// ([`super::reinfer_types`]).
    pub seed: &'a TypeMap,
}

impl<'a> Checker<'a> {
    pub fn new(m: &'a Module, ops: &'a OpRegistry, seed: &'a TypeMap) -> Checker<'a> {
        Checker {
            m,
            ops,
            terms: Terms::default(),
            expr_ty: vec![None; m.exprs.len()],
            var_ty: vec![None; m.vars.len()],
            global_ty: HashMap::default(),
            deferred: vec![],
            diags: vec![],
            matches: vec![],
            seed,
        }
    }

    /// Declares every global's signature (annotations, or fresh variables where none are
    /// written), then checks every body; globals may thus call each other in any order.
    ///
    /// A global in `kept` is taken as already checked: its signature is the finished type
    /// given there and its body is not visited (re-inference after a pass that left it as it
    /// was, [`super::reinfer_types`]).
    pub fn check_module(&mut self, kept: &HashMap<Symbol, TypeId>) {
        let m = self.m;
        for g in &m.functions {
            let t = match kept.get(&g.name) {
                Some(&ty) => self.terms.term_of(m, ty),
                None => self.declare_function(&g.func),
            };
            self.global_ty.insert(g.name, t);
        }
        for g in m.functions.iter().filter(|g| !kept.contains_key(&g.name)) {
            let Some(&sig) = self.global_ty.get(&g.name) else { continue };
            if let (_, Term::Func { ret, .. }) = self.terms.get(sig) {
                self.check_body(&g.func, ret);
            }
            self.solve();
        }
    }

    /// The function's type from its annotations; parameters get their terms here.
    fn declare_function(&mut self, f: &Function) -> Tv {
        let params = f.params.iter().map(|&p| self.declare_var(p)).collect();
        let ret = match f.ret_type {
            Some(t) => self.terms.term_of(self.m, t),
            None => self.terms.fresh(),
        };
        self.terms.add(Term::Func { type_params: f.type_params.clone(), params, ret })
    }

    fn declare_var(&mut self, v: crate::ir::VarId) -> Tv {
        // The earlier inference's finished type first: it is the annotation with its holes
        // (`_`) filled, which the seeded uses, not visited again, would otherwise not fill.
        let t = match self.seed.var(v).or(self.m.var(v).ty) {
            Some(ty) => self.terms.term_of(self.m, ty),
            None => self.terms.fresh(),
        };
        self.var_ty[v.index()] = Some(t);
        t
    }

    fn check_body(&mut self, f: &Function, ret: Tv) {
        let body = self.infer(f.body);
        self.expect(body, ret, self.m.expr(f.body).span, "the function's body");
    }

    /// Unifies `found` (the type of what is at `span`) with `expected`, reporting both.
    pub fn expect(&mut self, found: Tv, expected: Tv, span: Span, what: &str) {
        if let Err(e) = self.terms.unify(expected, found) {
            self.report_unify(e, expected, found, span, what);
        }
    }

    pub fn report_unify(&mut self, e: UnifyError, expected: Tv, found: Tv, span: Span, what: &str) {
        let m = self.m;
        let (exp, fnd) = (self.terms.display(m, expected), self.terms.display(m, found));
        let d = match e {
            UnifyError::Mismatch(a, b) => {
                let mut d = Diagnostic::error(
                    span,
                    format!("type mismatch in {what}: expected `{exp}`, found `{fnd}`"),
                );
                let (ia, ib) = (self.terms.display(m, a), self.terms.display(m, b));
                if (ia.as_str(), ib.as_str()) != (exp.as_str(), fnd.as_str()) {
                    d = d.with_note(format!("`{ia}` and `{ib}` differ"));
                }
                d
            }
            UnifyError::Occurs(a, b) => Diagnostic::error(
                span,
                format!(
                    "infinite type in {what}: `{}` would have to contain itself (`{}`)",
                    self.terms.display(m, a),
                    self.terms.display(m, b)
                ),
            ),
        };
        self.diags.push(d);
    }

    /// The term of expression `e`, inferring it on first visit (shared DAG nodes are typed
    /// once).
    pub fn infer(&mut self, e: ExprId) -> Tv {
        if let Some(t) = self.expr_ty[e.index()] {
            return t;
        }
        // A node the earlier inference typed has that type still: nodes are never edited in
        // place, and the caller has checked that the variables and globals it may refer to
        // kept their types. Its subtree is not visited (nor its relations solved again).
        let t = match self.seed.expr(e) {
            Some(ty) => self.terms.term_of(self.m, ty),
            None => crate::stack::grow(|| self.infer_uncached(e)),
        };
        self.expr_ty[e.index()] = Some(t);
        t
    }

    fn infer_uncached(&mut self, e: ExprId) -> Tv {
        let m = self.m;
        let span = m.expr(e).span;
        match &m.expr(e).kind {
            ExprKind::Var(v) => match self.var_ty[v.index()] {
                Some(t) => self.terms.instantiate(t),
                // A free variable: typed by its annotation, or inferred from its uses.
                None => {
                    let t = self.declare_var(*v);
                    self.terms.instantiate(t)
                }
            },
            ExprKind::Global(name) => match self.global_ty.get(name) {
                Some(&t) => self.terms.instantiate(t),
                None => self.terms.error(),
            },
            ExprKind::Constructor(name) => self.constructor_value(*name, span),
            ExprKind::Op(name) => {
                self.diags.push(Diagnostic::error(
                    span,
                    format!(
                        "operator `{}` must be called; wrap it in a `fn` to pass it as a value",
                        m.name(*name)
                    ),
                ));
                self.terms.error()
            }
            ExprKind::Literal(lit) => self.terms.scalar(lit.dtype),
            ExprKind::Constant(i) => match m.constants.get(*i as usize) {
                Some(c) => {
                    let shape = c.shape.iter().map(|&d| crate::ir::Dim::Known(d)).collect();
                    self.terms.add(Term::Tensor(TensorType::new(shape, c.dtype)))
                }
                None => {
                    self.diags
                        .push(Diagnostic::error(span, format!("no constant meta[relay.Constant][{i}]")));
                    self.terms.error()
                }
            },
            ExprKind::Tuple(fields) => {
                let fields = fields.iter().map(|&f| self.infer(f)).collect();
                self.terms.add(Term::Tuple(fields))
            }
            ExprKind::Proj { tuple, index } => {
                let t = self.infer(*tuple);
                let out = self.terms.fresh();
                self.defer(Deferred::Proj { tuple: t, index: *index, out, expr: e });
                out
            }
            ExprKind::Call { callee, args, attrs } => self.infer_call(e, *callee, args, attrs),
            ExprKind::Let { .. } => self.infer_let_chain(e),
            ExprKind::If { cond, then_branch, else_branch } => {
                let c = self.infer(*cond);
                let b = self.terms.scalar(relay_devices::DType::BOOL);
                self.expect(c, b, m.expr(*cond).span, "the condition of `if`");
                let t = self.infer(*then_branch);
                let f = self.infer(*else_branch);
                // `if (c) { fn [A](%x: A) { %x } } else { fn (%z) { %z } }` has the
                // monomorphic type both branches instantiate to (TVM's `test_higher_order_nested`).
                let (t, f) = self.terms.instantiate_mismatched(t, f);
                self.expect(
                    f,
                    t,
                    m.expr(*else_branch).span,
                    "the `else` branch (both branches must have one type)",
                );
                t
            }
            ExprKind::Match { scrutinee, arms, .. } => {
                let s = self.infer(*scrutinee);
                let result = self.terms.fresh();
                for arm in arms {
                    self.check_pattern(arm.pattern, s);
                    let b = self.infer(arm.body);
                    self.expect(
                        b,
                        result,
                        m.expr(arm.body).span,
                        "a `match` arm (all arms must have one type)",
                    );
                }
                self.matches.push(e);
                result
            }
            ExprKind::Function(f) => self.infer_function(f),
            ExprKind::RefNew(v) => {
                let t = self.infer(*v);
                self.terms.add(Term::Ref(t))
            }
            ExprKind::RefRead(r) => {
                let t = self.infer(*r);
                let inner = self.terms.fresh();
                let want = self.terms.add(Term::Ref(inner));
                self.expect(t, want, m.expr(*r).span, "the argument of `ref_read`");
                inner
            }
            ExprKind::RefWrite { cell, value } => {
                let c = self.infer(*cell);
                let v = self.infer(*value);
                let want = self.terms.add(Term::Ref(v));
                self.expect(c, want, m.expr(*cell).span, "the reference of `ref_write`");
                self.terms.unit()
            }
        }
    }

    /// `let` chains are walked in a loop: a 100,000-deep chain must not recurse.
    fn infer_let_chain(&mut self, first: ExprId) -> Tv {
        let m = self.m;
        let mut chain = vec![];
        let mut cur = first;
        while let ExprKind::Let { var, value, body } = &m.expr(cur).kind {
            if self.expr_ty[cur.index()].is_some() || self.seed.expr(cur).is_some() {
                break;
            }
            chain.push(cur);
            let vt = self.declare_var(*var);
            let val = self.infer(*value);
            self.expect(val, vt, m.expr(*value).span, "the bound value (it must match the annotation)");
            cur = *body;
        }
        let t = self.infer(cur);
        for e in chain {
            self.expr_ty[e.index()] = Some(t);
        }
        t
    }

    fn infer_function(&mut self, f: &Function) -> Tv {
        let sig = self.declare_function(f);
        if let (_, Term::Func { ret, .. }) = self.terms.get(sig) {
            self.check_body(f, ret);
        }
        sig
    }

    fn infer_call(&mut self, e: ExprId, callee: ExprId, args: &[ExprId], attrs: &crate::ir::Attrs) -> Tv {
        let m = self.m;
        let span = m.expr(e).span;
        if let ExprKind::Op(name) = m.expr(callee).kind {
            return self.infer_op_call(e, callee, name, args, attrs);
        }
        // Attributes of a call of a function or constructor (TVM's `Call.attrs`, e.g.
        // `attrs_type_key="..."`) are kept in the IR but mean nothing to typing or running.
        let arg_tys: Vec<Tv> = args.iter().map(|&a| self.infer(a)).collect();
        if let ExprKind::Constructor(name) = m.expr(callee).kind {
            if let Some(c) = m.constructor(name) {
                if c.fields.len() != arg_tys.len() {
                    self.diags.push(Diagnostic::error(
                        span,
                        format!(
                            "constructor `{}` takes {} field(s), found {}",
                            m.name(name),
                            c.fields.len(),
                            arg_tys.len()
                        ),
                    ));
                    return self.terms.error();
                }
            }
        }
        let f = self.infer(callee);
        let (_, fterm) = self.terms.get(f);
        if let Term::Func { params, ret, .. } = fterm {
            if params.len() != arg_tys.len() {
                let shown = self.terms.display(m, f);
                self.diags.push(Diagnostic::error(
                    span,
                    format!(
                        "this function takes {} argument(s), found {}: `{shown}`",
                        params.len(),
                        arg_tys.len()
                    ),
                ));
                return self.terms.error();
            }
            for ((&a, &p), &arg) in arg_tys.iter().zip(&params).zip(args) {
                self.expect(a, p, m.expr(arg).span, "a call argument");
            }
            return ret;
        }
        let ret = self.terms.fresh();
        let want = self.terms.add(Term::Func { type_params: vec![], params: arg_tys, ret });
        if let Err(err) = self.terms.unify(f, want) {
            self.report_unify(
                err,
                want,
                f,
                m.expr(callee).span,
                "the callee (it is not a function of these arguments)",
            );
        }
        ret
    }

    fn infer_op_call(
        &mut self,
        e: ExprId,
        callee: ExprId,
        name: Symbol,
        args: &[ExprId],
        attrs: &crate::ir::Attrs,
    ) -> Tv {
        let m = self.m;
        let span = m.expr(e).span;
        let text = m.name(name);
        let Some(op) = self.ops.lookup(text) else {
            let mut d = Diagnostic::error(m.expr(callee).span, format!("unknown operator `{text}`"));
            if let Some(s) = self.ops.similar(text) {
                d = d.with_note(format!("help: did you mean `{s}`?"));
            }
            self.diags.push(d);
            for &a in args {
                self.infer(a);
            }
            return self.terms.error();
        };
        let def = self.ops.get(op);
        let arg_tys: Vec<Tv> = args.iter().map(|&a| self.infer(a)).collect();
        if arg_tys.len() != def.num_inputs {
            self.diags.push(Diagnostic::error(
                span,
                format!("operator `{text}` takes {} argument(s), found {}", def.num_inputs, arg_tys.len()),
            ));
            return self.terms.error();
        }
        let mut bad_attr = false;
        for (key, _) in &attrs.0 {
            let k = m.name(*key);
            if !def.attrs.contains(&k) {
                bad_attr = true;
                let accepted = if def.attrs.is_empty() { "none".to_string() } else { def.attrs.join(", ") };
                self.diags.push(
                    Diagnostic::error(span, format!("operator `{text}` has no attribute `{k}`"))
                        .with_note(format!("accepted attributes: {accepted}")),
                );
            }
        }
        if bad_attr {
            return self.terms.error();
        }
        let out = self.terms.fresh();
        self.defer(Deferred::Rel { op, args: arg_tys, out, call: e });
        out
    }

    /// A constructor used as a value: a function of its fields to the ADT. A constructor
    /// without fields is a function of no arguments too: the parser makes both `Nil` and
    /// `Nil()` the call `Nil()`, as TVM does.
    fn constructor_value(&mut self, name: Symbol, span: Span) -> Tv {
        let m = self.m;
        let Some(c) = m.constructor(name) else {
            return self.terms.error();
        };
        let Some(adt) = m.type_def(c.adt) else {
            self.diags.push(Diagnostic::error(span, format!("no type defines `{}`", m.name(name))));
            return self.terms.error();
        };
        let subst: HashMap<TypeParamId, Tv> =
            adt.type_params.iter().map(|&p| (p, self.terms.fresh())).collect();
        let args = adt.type_params.iter().map(|p| subst[p]).collect();
        let result = self.terms.add(Term::Adt { name: adt.name, args });
        let params = c
            .fields
            .iter()
            .map(|&f| {
                let t = self.terms.term_of(m, f);
                self.terms.substitute(t, &subst)
            })
            .collect();
        self.terms.add(Term::Func { type_params: vec![], params, ret: result })
    }

    /// Checks pattern `p` against the scrutinee type `s`, typing the variables it binds.
    fn check_pattern(&mut self, p: PatId, s: Tv) {
        crate::stack::grow(|| {
            let m = self.m;
            let pat = m.pattern(p);
            match &pat.kind {
                PatternKind::Wildcard => {}
                PatternKind::Var(v) => {
                    let t = self.declare_var(*v);
                    self.expect(s, t, pat.span, "a pattern variable (it must match its annotation)");
                }
                PatternKind::Tuple(ps) => {
                    let fields: Vec<Tv> = ps.iter().map(|_| self.terms.fresh()).collect();
                    let want = self.terms.add(Term::Tuple(fields.clone()));
                    self.expect(s, want, pat.span, "a tuple pattern");
                    for (&q, &f) in ps.iter().zip(&fields) {
                        self.check_pattern(q, f);
                    }
                }
                PatternKind::Constructor { name, args } => {
                    let ctor = self.constructor_value(*name, pat.span);
                    let (params, result) = match self.terms.get(ctor) {
                        (_, Term::Func { params, ret, .. }) => (params, ret),
                        (r, Term::Adt { .. }) => (vec![], r),
                        (r, _) => (vec![], r),
                    };
                    if params.len() != args.len() {
                        self.diags.push(Diagnostic::error(
                            pat.span,
                            format!(
                                "constructor `{}` has {} field(s), but the pattern gives {}",
                                m.name(*name),
                                params.len(),
                                args.len()
                            ),
                        ));
                        return;
                    }
                    self.expect(s, result, pat.span, "a constructor pattern");
                    for (&q, &f) in args.iter().zip(&params) {
                        self.check_pattern(q, f);
                    }
                }
            }
        })
    }
}
