//! Round trip of random modules through the printer and the parser.
//!
//! Proptest generates a *sketch* (choices, with indices picking among whatever is in scope);
//! the builder below turns it into IR that is name-correct by construction: variables and
//! type parameters are picked by name among those in scope and resolve to the innermost
//! binder, globals and constructors are defined, shared nodes (the DAG case) are reused only
//! where every variable they mention still means the same binder. The module need not type
//! check. Each case checks `parse(print(m))` is structurally equal to `m` and that printing
//! the parsed module gives the same text; and, with comments added to the printed text, that
//! `fmt` keeps them all, its output parses to `m` again, and formatting that changes nothing.

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use relay_compiler::ir::structurally_equal;
use relay_compiler::ir::{
    AttrValue, Attrs, ConstantData, ConstructorDef, Dim, ExprId, ExprKind, Function, GlobalFunction, Literal,
    LiteralValue, MatchArm, Module, PatId, Pattern, PatternKind, Span, Symbol, TypeDef, TypeId, TypeKind,
    TypeParamId, VarId,
};
use relay_compiler::syntax::parse_module;
use relay_compiler::syntax::printer::{format_file, print_module, wrap};
use relay_devices::DType;
use std::collections::HashSet;

const VAR_NAMES: [&str; 6] = ["x", "y", "z", "acc", "fc1.weight", "conv/1"];
const TYPE_PARAM_NAMES: [&str; 3] = ["A", "B", "C"];
const OPS: [&str; 5] = ["add", "multiply", "nn.conv2d", "concatenate", "negative"];
const ATTR_KEYS: [&str; 5] = ["axis", "padding", "data_layout", "epsilon", "Primitive"];
const DTYPES: [&str; 7] = ["float32", "float16", "float64", "int8", "int64", "uint8", "bool"];

#[derive(Debug, Clone)]
enum Ty {
    /// Dims (`None` is `?`) and an index into [`DTYPES`].
    Tensor(Vec<Option<u8>>, usize),
    Tuple(Vec<Ty>),
    /// Number of type parameters, parameters, result.
    Func(usize, Vec<Ty>, Box<Ty>),
    Param(u8),
    Adt(u8, Vec<Ty>),
    Ref(Box<Ty>),
    Hole,
}

#[derive(Debug, Clone)]
enum Attr {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    List(Vec<Attr>),
    Null,
    Meta(u8),
}

#[derive(Debug, Clone)]
enum Pat {
    Wild,
    Var(u8, Option<Ty>),
    Ctor(u8, Vec<Pat>),
    Tuple(Vec<Pat>),
}

#[derive(Debug, Clone)]
struct Func {
    type_params: usize,
    params: Vec<(u8, Option<Ty>)>,
    ret: Option<Ty>,
    body: Ex,
    attrs: Vec<(u8, Attr)>,
}

#[derive(Debug, Clone)]
enum Ex {
    Var(u8),
    Global(u8),
    /// A constructor as a value (one with fields; a fieldless one is called).
    CtorValue(u8),
    Lit(LiteralValue, DType),
    Const(u8),
    /// Reuse an earlier node: the IR becomes a DAG.
    Share(u8),
    Ctor(u8, Vec<Ex>),
    Op(u8, Vec<Ex>, Vec<(u8, Attr)>),
    Tuple(Vec<Ex>),
    Proj(Box<Ex>, u32),
    Call(Box<Ex>, Vec<Ex>),
    Let(u8, Option<Ty>, Box<Ex>, Box<Ex>),
    If(Box<Ex>, Box<Ex>, Box<Ex>),
    Match(Box<Ex>, Vec<(Pat, Ex)>, bool),
    Fn(Box<Func>),
    RefNew(Box<Ex>),
    RefRead(Box<Ex>),
    RefWrite(Box<Ex>, Box<Ex>),
}

#[derive(Debug, Clone)]
struct Sketch {
    /// Per ADT: type parameter count and constructors' fields; `None` for `extern type`.
    adts: Vec<(usize, Option<Vec<Vec<Ty>>>)>,
    /// Per constant: dtype index and dims.
    constants: Vec<(usize, Vec<u8>)>,
    defs: Vec<Func>,
}

fn ty() -> impl Strategy<Value = Ty> {
    let leaf = prop_oneof![
        (vec(option::of(0u8..8), 0..3), 0..DTYPES.len()).prop_map(|(d, t)| Ty::Tensor(d, t)),
        any::<u8>().prop_map(Ty::Param),
        Just(Ty::Hole),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..3).prop_map(Ty::Tuple),
            (0..2usize, vec(inner.clone(), 0..3), inner.clone()).prop_map(|(n, p, r)| Ty::Func(
                n,
                p,
                Box::new(r)
            )),
            (any::<u8>(), vec(inner.clone(), 0..2)).prop_map(|(k, a)| Ty::Adt(k, a)),
            inner.prop_map(|t| Ty::Ref(Box::new(t))),
        ]
    })
}

fn attr() -> impl Strategy<Value = Attr> {
    let leaf =
        prop_oneof![
            any::<i64>().prop_map(Attr::Int),
            prop_oneof![any::<f64>(), Just(1e-5), Just(f64::INFINITY)]
                .prop_map(|f| Attr::Float(if f.is_nan() { f64::NAN } else { f })),
            any::<bool>().prop_map(Attr::Bool),
            "[a-zA-Z0-9 \"\\\\\n\t\ré_]{0,8}".prop_map(Attr::Str),
            Just(Attr::Null),
            any::<u8>().prop_map(Attr::Meta),
        ];
    leaf.prop_recursive(2, 8, 3, |inner| vec(inner, 0..3).prop_map(Attr::List))
}

fn attrs() -> impl Strategy<Value = Vec<(u8, Attr)>> {
    vec((any::<u8>(), attr()), 0..3)
}

fn literal() -> impl Strategy<Value = Ex> {
    let f32_range = prop_oneof![
        any::<f32>().prop_filter("finite", |f| f.is_finite()).prop_map(f64::from),
        -1e6..1e6f64,
        Just(1e-40),
        Just(f64::from(f32::MAX)),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::NAN),
    ];
    prop_oneof![
        any::<i32>().prop_map(|v| Ex::Lit(LiteralValue::Int(v.into()), DType::I32)),
        any::<i64>().prop_map(|v| Ex::Lit(LiteralValue::Int(v), DType::I64)),
        any::<i16>().prop_map(|v| Ex::Lit(LiteralValue::Int(v.into()), DType::I16)),
        any::<i8>().prop_map(|v| Ex::Lit(LiteralValue::Int(v.into()), DType::I8)),
        any::<u8>().prop_map(|v| Ex::Lit(LiteralValue::Int(v.into()), DType::U8)),
        f32_range.prop_map(|v| Ex::Lit(LiteralValue::Float(v), DType::F32)),
        (-65504.0..65504.0f64).prop_map(|v| Ex::Lit(LiteralValue::Float(v), DType::F16)),
        any::<f64>()
            .prop_map(|v| Ex::Lit(LiteralValue::Float(if v.is_nan() { f64::NAN } else { v }), DType::F64)),
        any::<bool>().prop_map(|v| Ex::Lit(LiteralValue::Bool(v), DType::BOOL)),
    ]
}

fn pattern() -> impl Strategy<Value = Pat> {
    let leaf =
        prop_oneof![Just(Pat::Wild), (any::<u8>(), option::of(ty())).prop_map(|(k, t)| Pat::Var(k, t))];
    leaf.prop_recursive(2, 6, 3, |inner| {
        prop_oneof![
            (any::<u8>(), vec(inner.clone(), 0..3)).prop_map(|(k, ps)| Pat::Ctor(k, ps)),
            vec(inner, 0..3).prop_map(Pat::Tuple),
        ]
    })
}

fn func(body: impl Strategy<Value = Ex>) -> impl Strategy<Value = Func> {
    (0..3usize, vec((any::<u8>(), option::of(ty())), 0..3), option::of(ty()), body, attrs())
        .prop_map(|(type_params, params, ret, body, attrs)| Func { type_params, params, ret, body, attrs })
}

fn expr() -> impl Strategy<Value = Ex> {
    let leaf = prop_oneof![
        3 => any::<u8>().prop_map(Ex::Var),
        1 => any::<u8>().prop_map(Ex::Global),
        1 => any::<u8>().prop_map(Ex::CtorValue),
        2 => literal(),
        1 => any::<u8>().prop_map(Ex::Const),
        2 => any::<u8>().prop_map(Ex::Share),
    ];
    leaf.prop_recursive(5, 48, 4, |inner| {
        let boxed = inner.clone().prop_map(Box::new);
        prop_oneof![
            1 => (any::<u8>(), vec(inner.clone(), 0..3)).prop_map(|(k, a)| Ex::Ctor(k, a)),
            1 => (any::<u8>(), vec(inner.clone(), 0..3), attrs()).prop_map(|(k, a, t)| Ex::Op(k, a, t)),
            1 => vec(inner.clone(), 0..4).prop_map(Ex::Tuple),
            1 => (boxed.clone(), 0..3u32).prop_map(|(e, i)| Ex::Proj(e, i)),
            1 => (boxed.clone(), vec(inner.clone(), 0..3)).prop_map(|(f, a)| Ex::Call(f, a)),
            2 => (any::<u8>(), option::of(ty()), boxed.clone(), boxed.clone())
                .prop_map(|(k, t, v, b)| Ex::Let(k, t, v, b)),
            // A local function, recursive: it sees its own variable.
            1 => (any::<u8>(), option::of(ty()), func(inner.clone()), boxed.clone())
                .prop_map(|(k, t, f, b)| Ex::Let(k, t, Box::new(Ex::Fn(Box::new(f))), b)),
            1 => (boxed.clone(), boxed.clone(), boxed.clone()).prop_map(|(c, t, e)| Ex::If(c, t, e)),
            1 => (boxed.clone(), vec((pattern(), inner.clone()), 1..3), any::<bool>())
                .prop_map(|(s, arms, c)| Ex::Match(s, arms, c)),
            1 => func(inner.clone()).prop_map(|f| Ex::Fn(Box::new(f))),
            1 => boxed.clone().prop_map(Ex::RefNew),
            1 => boxed.clone().prop_map(Ex::RefRead),
            1 => (boxed.clone(), boxed).prop_map(|(r, v)| Ex::RefWrite(r, v)),
        ]
    })
}

fn sketch() -> impl Strategy<Value = Sketch> {
    let adt = (0..3usize, option::of(vec(vec(ty(), 0..3), 1..4)));
    let constant = (0..DTYPES.len(), vec(0u8..3, 0..3));
    (vec(adt, 0..3), vec(constant, 0..3), vec(func(expr()), 1..4))
        .prop_map(|(adts, constants, defs)| Sketch { adts, constants, defs })
}

struct Adt {
    name: Symbol,
    arity: usize,
}

/// Turns a sketch into IR, tracking what is in scope.
#[derive(Default)]
struct Builder {
    m: Module,
    adts: Vec<Adt>,
    /// Constructors and their field counts.
    ctors: Vec<(Symbol, usize)>,
    globals: Vec<Symbol>,
    vars: Vec<VarId>,
    tparams: Vec<TypeParamId>,
    /// Nodes built so far that `Ex::Share` may reuse, with the type parameters in scope when
    /// each was built (a node may mention them, so it is only reused where they are visible).
    pool: Vec<(ExprId, Vec<TypeParamId>)>,
}

fn pick<T: Copy>(items: &[T], k: u8) -> Option<T> {
    (!items.is_empty()).then(|| items[k as usize % items.len()])
}

impl Builder {
    fn sym(&mut self, s: &str) -> Symbol {
        self.m.symbols.intern(s)
    }

    fn e(&mut self, kind: ExprKind) -> ExprId {
        // Names are not worth sharing, and a fieldless constructor used as a value would
        // read back as its call.
        let atomic = !matches!(
            kind,
            ExprKind::Tuple(_)
                | ExprKind::Proj { .. }
                | ExprKind::Call { .. }
                | ExprKind::Let { .. }
                | ExprKind::If { .. }
                | ExprKind::Match { .. }
                | ExprKind::Function(_)
                | ExprKind::RefNew(_)
                | ExprKind::RefRead(_)
                | ExprKind::RefWrite { .. }
        );
        let id = self.m.add_expr(kind, Span::default());
        if !atomic {
            self.pool.push((id, self.tparams.clone()));
        }
        id
    }

    fn zero(&mut self) -> ExprId {
        self.e(ExprKind::Literal(Literal { value: LiteralValue::Int(0), dtype: DType::I32 }))
    }

    fn module(mut self, s: &Sketch) -> Module {
        for (i, (arity, ctors)) in s.adts.iter().enumerate() {
            let name = self.sym(&format!("Tree{i}"));
            self.adts.push(Adt { name, arity: *arity });
            for (j, fields) in ctors.iter().flatten().enumerate() {
                let c = self.sym(&format!("Node{i}x{j}"));
                self.ctors.push((c, fields.len()));
            }
        }
        for (i, (arity, ctors)) in s.adts.iter().enumerate() {
            let type_params = self.bind_type_params(*arity);
            let name = self.adts[i].name;
            let mut defs = Vec::new();
            for (j, fields) in ctors.iter().flatten().enumerate() {
                let fields = fields.iter().map(|t| self.ty(t)).collect();
                let c = self.sym(&format!("Node{i}x{j}"));
                defs.push(ConstructorDef {
                    name: c,
                    adt: name,
                    fields,
                    tag: j as u32,
                    span: Span::default(),
                });
            }
            let def = TypeDef {
                name,
                type_params: type_params.clone(),
                constructors: defs.iter().map(|c| c.name).collect(),
                is_extern: ctors.is_none(),
                span: Span::default(),
            };
            self.m.add_type_def(def, defs).expect("distinct names");
            self.tparams.clear();
        }
        for (dtype, dims) in &s.constants {
            let dtype: DType = DTYPES[*dtype].parse().expect("dtype");
            let shape: Vec<i64> = dims.iter().map(|&d| i64::from(d)).collect();
            let n = shape.iter().product::<i64>() as usize;
            let data = (0..n)
                .map(|i| if dtype == DType::BOOL { (i % 2) as f64 } else { i as f64 * 0.5 })
                .map(|v| if dtype.is_int() { v.round() } else { v })
                .collect();
            self.m.constants.push(ConstantData { dtype, shape, data });
        }
        self.globals = (0..s.defs.len()).map(|i| self.sym(&format!("f{i}"))).collect();
        for (i, f) in s.defs.iter().enumerate() {
            // Nodes may mention the previous definition's variables and type parameters.
            self.pool.clear();
            let func = self.func(f);
            let name = self.globals[i];
            self.m
                .add_function(GlobalFunction { name, func, span: Span::default() })
                .expect("distinct names");
        }
        self.m
    }

    fn bind_type_params(&mut self, n: usize) -> Vec<TypeParamId> {
        let ids: Vec<_> = TYPE_PARAM_NAMES[..n]
            .iter()
            .map(|name| {
                let s = self.sym(name);
                self.m.add_type_param(s, Span::default())
            })
            .collect();
        self.tparams.extend(&ids);
        ids
    }

    fn ty(&mut self, t: &Ty) -> TypeId {
        let kind = match t {
            Ty::Tensor(dims, d) => TypeKind::Tensor {
                shape: dims.iter().map(|d| d.map_or(Dim::Any, |n| Dim::Known(n.into()))).collect(),
                dtype: DTYPES[*d].parse().expect("dtype"),
            },
            Ty::Tuple(fields) => TypeKind::Tuple(fields.iter().map(|f| self.ty(f)).collect()),
            Ty::Func(n, params, ret) => {
                let mark = self.tparams.len();
                let type_params = self.bind_type_params(*n);
                let params = params.iter().map(|p| self.ty(p)).collect();
                let ret = self.ty(ret);
                self.tparams.truncate(mark);
                TypeKind::Func { type_params, params, ret }
            }
            Ty::Param(k) => {
                let names: Vec<Symbol> = self.visible(&self.tparams, |m, p| m.type_params[p.index()].name);
                match pick(&names, *k) {
                    Some(name) => {
                        let p =
                            self.tparams.iter().rev().find(|p| self.m.type_params[p.index()].name == name);
                        TypeKind::Param(*p.expect("visible"))
                    }
                    None => TypeKind::Hole,
                }
            }
            Ty::Adt(k, args) => match pick(&(0..self.adts.len()).collect::<Vec<_>>(), *k) {
                Some(i) => {
                    let (name, arity) = (self.adts[i].name, self.adts[i].arity);
                    let mut args: Vec<TypeId> = args.iter().take(arity).map(|a| self.ty(a)).collect();
                    while args.len() < arity {
                        args.push(self.m.types.intern(TypeKind::Hole));
                    }
                    TypeKind::Adt { name, args }
                }
                None => TypeKind::Hole,
            },
            Ty::Ref(inner) => TypeKind::Ref(self.ty(inner)),
            Ty::Hole => TypeKind::Hole,
        };
        self.m.types.intern(kind)
    }

    fn opt_ty(&mut self, t: &Option<Ty>) -> Option<TypeId> {
        t.as_ref().map(|t| self.ty(t))
    }

    /// Distinct names among `ids`, each standing for its innermost binder.
    fn visible<Id: Copy>(&self, ids: &[Id], name: impl Fn(&Module, Id) -> Symbol) -> Vec<Symbol> {
        let mut seen = Vec::new();
        for &id in ids {
            let n = name(&self.m, id);
            if !seen.contains(&n) {
                seen.push(n);
            }
        }
        seen
    }

    fn lookup(&self, name: Symbol) -> Option<VarId> {
        self.vars.iter().rev().copied().find(|&v| self.m.var(v).name == name)
    }

    fn attrs(&mut self, list: &[(u8, Attr)]) -> Attrs {
        let mut out: Vec<(Symbol, AttrValue)> = Vec::new();
        for (k, a) in list {
            let key = self.sym(ATTR_KEYS[*k as usize % ATTR_KEYS.len()]);
            if out.iter().all(|(s, _)| *s != key) {
                let value = self.attr(a);
                out.push((key, value));
            }
        }
        Attrs(out)
    }

    fn attr(&self, a: &Attr) -> AttrValue {
        match a {
            Attr::Int(i) => AttrValue::Int(*i),
            Attr::Float(f) => AttrValue::Float(*f),
            Attr::Bool(b) => AttrValue::Bool(*b),
            Attr::Str(s) => AttrValue::Str(s.clone()),
            Attr::List(items) => AttrValue::List(items.iter().map(|i| self.attr(i)).collect()),
            Attr::Null => AttrValue::Null,
            Attr::Meta(k) => match self.m.constants.len() {
                0 => AttrValue::Null,
                n => AttrValue::Meta { kind: "relay.Constant".into(), index: u32::from(*k) % n as u32 },
            },
        }
    }

    fn func(&mut self, f: &Func) -> Function {
        let (var_mark, tparam_mark) = (self.vars.len(), self.tparams.len());
        let type_params = self.bind_type_params(f.type_params);
        let mut params: Vec<VarId> = Vec::new();
        for (k, t) in &f.params {
            let name = self.sym(VAR_NAMES[*k as usize % VAR_NAMES.len()]);
            if params.iter().all(|&p| self.m.var(p).name != name) {
                let ty = self.opt_ty(t);
                params.push(self.m.add_var(name, ty, Span::default()));
            }
        }
        let ret_type = self.opt_ty(&f.ret);
        self.vars.extend(&params);
        let body = self.expr(&f.body);
        let attrs = self.attrs(&f.attrs);
        self.vars.truncate(var_mark);
        self.tparams.truncate(tparam_mark);
        Function { type_params, params, ret_type, body, attrs }
    }

    fn ctor_call(&mut self, k: u8, args: &[Ex]) -> ExprId {
        let Some((c, arity)) = pick(&self.ctors, k) else { return self.zero() };
        let callee = self.e(ExprKind::Constructor(c));
        let mut built: Vec<ExprId> = args.iter().take(arity).map(|a| self.expr(a)).collect();
        while built.len() < arity {
            built.push(self.zero());
        }
        let call = self.e(ExprKind::Call { callee, args: built, attrs: Attrs::default() });
        if arity == 0 {
            // Not shared: the parser reads `%0 = Nil; %0(x)` as `Nil(x)` (it takes the call
            // of the graph variable for a call of the identifier bound to it).
            self.pool.pop();
        }
        call
    }

    fn expr(&mut self, x: &Ex) -> ExprId {
        match x {
            Ex::Var(k) => {
                let names = self.visible(&self.vars, |m, v| m.var(v).name);
                match pick(&names, *k).and_then(|n| self.lookup(n)) {
                    Some(v) => self.e(ExprKind::Var(v)),
                    None => self.zero(),
                }
            }
            Ex::Global(k) => match pick(&self.globals, *k) {
                Some(g) => self.e(ExprKind::Global(g)),
                None => self.zero(),
            },
            Ex::CtorValue(k) => match pick(&self.ctors, *k) {
                Some((c, n)) if n > 0 => self.e(ExprKind::Constructor(c)),
                _ => self.ctor_call(*k, &[]),
            },
            Ex::Lit(value, dtype) => self.e(ExprKind::Literal(Literal { value: *value, dtype: *dtype })),
            Ex::Const(k) => match self.m.constants.len() {
                0 => self.zero(),
                n => self.e(ExprKind::Constant(u32::from(*k) % n as u32)),
            },
            Ex::Share(k) => {
                let usable: Vec<ExprId> = self
                    .pool
                    .iter()
                    .filter(|(_, tparams)| self.tparams.starts_with(tparams))
                    .map(|&(e, _)| e)
                    .filter(|&e| {
                        free_vars(&self.m, e).iter().all(|&v| self.lookup(self.m.var(v).name) == Some(v))
                    })
                    .collect();
                pick(&usable, *k).unwrap_or_else(|| self.zero())
            }
            Ex::Ctor(k, args) => self.ctor_call(*k, args),
            Ex::Op(k, args, attrs) => {
                let op = self.sym(OPS[*k as usize % OPS.len()]);
                let callee = self.e(ExprKind::Op(op));
                let args = args.iter().map(|a| self.expr(a)).collect();
                let attrs = self.attrs(attrs);
                self.e(ExprKind::Call { callee, args, attrs })
            }
            Ex::Tuple(fields) => {
                let fields = fields.iter().map(|f| self.expr(f)).collect();
                self.e(ExprKind::Tuple(fields))
            }
            Ex::Proj(t, index) => {
                let tuple = self.expr(t);
                self.e(ExprKind::Proj { tuple, index: *index })
            }
            Ex::Call(f, args) => {
                let callee = self.expr(f);
                let args = args.iter().map(|a| self.expr(a)).collect();
                self.e(ExprKind::Call { callee, args, attrs: Attrs::default() })
            }
            Ex::Let(k, t, value, body) => {
                let name = self.sym(VAR_NAMES[*k as usize % VAR_NAMES.len()]);
                let ty = self.opt_ty(t);
                let var = self.m.add_var(name, ty, Span::default());
                // A `fn` on the right sees the variable (a local recursive function).
                let value = if matches!(**value, Ex::Fn(_)) {
                    self.vars.push(var);
                    let pool_mark = self.pool.len();
                    let v = self.expr(value);
                    // Nodes inside the function may mention it; sharing them after the `let`
                    // is the printer's documented limit.
                    self.pool.truncate(pool_mark);
                    v
                } else {
                    let v = self.expr(value);
                    self.vars.push(var);
                    v
                };
                let body = self.expr(body);
                self.vars.pop();
                self.e(ExprKind::Let { var, value, body })
            }
            Ex::If(c, t, e) => {
                let cond = self.expr(c);
                let then_branch = self.expr(t);
                let else_branch = self.expr(e);
                self.e(ExprKind::If { cond, then_branch, else_branch })
            }
            Ex::Match(s, arms, complete) => {
                let scrutinee = self.expr(s);
                let arms = arms
                    .iter()
                    .map(|(p, body)| {
                        let mut bound = Vec::new();
                        let pattern = self.pattern(p, &mut bound);
                        let mark = self.vars.len();
                        self.vars.extend(&bound);
                        let body = self.expr(body);
                        self.vars.truncate(mark);
                        MatchArm { pattern, body }
                    })
                    .collect();
                self.e(ExprKind::Match { scrutinee, arms, complete: *complete })
            }
            Ex::Fn(f) => {
                let func = self.func(f);
                self.e(ExprKind::Function(Box::new(func)))
            }
            Ex::RefNew(v) => {
                let v = self.expr(v);
                self.e(ExprKind::RefNew(v))
            }
            Ex::RefRead(r) => {
                let r = self.expr(r);
                self.e(ExprKind::RefRead(r))
            }
            Ex::RefWrite(r, v) => {
                let cell = self.expr(r);
                let value = self.expr(v);
                self.e(ExprKind::RefWrite { cell, value })
            }
        }
    }

    fn pattern(&mut self, p: &Pat, bound: &mut Vec<VarId>) -> PatId {
        let kind = match p {
            Pat::Wild => PatternKind::Wildcard,
            Pat::Var(k, t) => {
                let name = self.sym(VAR_NAMES[*k as usize % VAR_NAMES.len()]);
                // A name may be bound once per pattern.
                if bound.iter().any(|&v| self.m.var(v).name == name) {
                    PatternKind::Wildcard
                } else {
                    let ty = self.opt_ty(t);
                    let v = self.m.add_var(name, ty, Span::default());
                    bound.push(v);
                    PatternKind::Var(v)
                }
            }
            Pat::Ctor(k, args) => match pick(&self.ctors, *k) {
                Some((name, arity)) => {
                    let mut pats: Vec<PatId> =
                        args.iter().take(arity).map(|a| self.pattern(a, bound)).collect();
                    while pats.len() < arity {
                        pats.push(
                            self.m
                                .add_pattern(Pattern { kind: PatternKind::Wildcard, span: Span::default() }),
                        );
                    }
                    PatternKind::Constructor { name, args: pats }
                }
                None => PatternKind::Wildcard,
            },
            Pat::Tuple(items) => PatternKind::Tuple(items.iter().map(|i| self.pattern(i, bound)).collect()),
        };
        self.m.add_pattern(Pattern { kind, span: Span::default() })
    }
}

/// Variables `e` mentions that it does not bind itself.
fn free_vars(m: &Module, e: ExprId) -> Vec<VarId> {
    fn pattern_vars(m: &Module, p: PatId, out: &mut HashSet<VarId>) {
        match &m.pattern(p).kind {
            PatternKind::Var(v) => {
                out.insert(*v);
            }
            PatternKind::Constructor { args, .. } | PatternKind::Tuple(args) => {
                args.iter().for_each(|&a| pattern_vars(m, a, out))
            }
            PatternKind::Wildcard => {}
        }
    }
    let (mut bound, mut used) = (HashSet::new(), Vec::new());
    let mut stack = vec![e];
    let mut seen = HashSet::new();
    while let Some(e) = stack.pop() {
        if !seen.insert(e) {
            continue;
        }
        match &m.expr(e).kind {
            ExprKind::Var(v) => used.push(*v),
            ExprKind::Tuple(fs) => stack.extend(fs),
            ExprKind::Proj { tuple, .. } => stack.push(*tuple),
            ExprKind::Call { callee, args, .. } => {
                stack.push(*callee);
                stack.extend(args);
            }
            ExprKind::Let { var, value, body } => {
                bound.insert(*var);
                stack.extend([*value, *body]);
            }
            ExprKind::If { cond, then_branch, else_branch } => {
                stack.extend([*cond, *then_branch, *else_branch])
            }
            ExprKind::Match { scrutinee, arms, .. } => {
                stack.push(*scrutinee);
                for arm in arms {
                    pattern_vars(m, arm.pattern, &mut bound);
                    stack.push(arm.body);
                }
            }
            ExprKind::Function(f) => {
                bound.extend(&f.params);
                stack.push(f.body);
            }
            ExprKind::RefNew(x) | ExprKind::RefRead(x) => stack.push(*x),
            ExprKind::RefWrite { cell, value } => stack.extend([*cell, *value]),
            ExprKind::Global(_)
            | ExprKind::Constructor(_)
            | ExprKind::Op(_)
            | ExprKind::Literal(_)
            | ExprKind::Constant(_) => {}
        }
    }
    used.retain(|v| !bound.contains(v));
    used
}

/// `text` with a comment at each chosen line boundary (before `#[metadata]`): `(k, kind)`
/// picks the `k % n`-th newline and a trailing or own-line, `//` or `/* */` comment.
fn with_comments(text: &str, choices: &[(u16, u8)]) -> (String, Vec<String>) {
    let code = text.find("#[metadata]").unwrap_or(text.len());
    let newlines: Vec<usize> = text[..code].match_indices('\n').map(|(i, _)| i).collect();
    let mut inserts: Vec<(usize, String)> = choices
        .iter()
        .enumerate()
        .map(|(i, &(k, kind))| {
            let at = newlines[usize::from(k) % newlines.len()];
            match kind {
                0 => (at, format!(" // c{i}")),
                1 => (at, format!(" /* c{i} */")),
                2 => (at + 1, format!("// c{i}\n")),
                _ => (at + 1, format!("/* c{i}\n   more */\n")),
            }
        })
        .collect();
    // Stable: comments chosen for one place keep their order. Where a trailing comment and
    // an own-line one land at the same place (the line after an empty one starts where the
    // empty line ends), the own-line one goes first: a trailing `//` must end its line.
    inserts.sort_by_key(|(at, c)| (*at, c.starts_with(' ')));
    let mut out = String::new();
    let mut from = 0;
    for (at, comment) in &inserts {
        out.push_str(&text[from..*at]);
        out.push_str(comment);
        from = *at;
    }
    out.push_str(&text[from..]);
    (out, inserts.into_iter().map(|(_, c)| c.trim().to_string()).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn formatted_modules_keep_comments(s in sketch(), choices in vec((any::<u16>(), 0u8..4), 1..8)) {
        let m = Builder::default().module(&s);
        let (text, comments) = with_comments(&print_module(&m, None), &choices);
        let commented = parse_module("commented.relay", &text).map_err(|e| TestCaseError::fail(format!("{e:?}\n{text}")))?;
        let formatted = format_file(&commented, relay_compiler::ir::FileId(0));
        let mut from = 0;
        for c in &comments {
            match formatted[from..].find(c.as_str()) {
                Some(i) => from += i + c.len(),
                None => return Err(TestCaseError::fail(format!("lost `{c}`\n{text}\n---\n{formatted}"))),
            }
        }
        let parsed = parse_module("formatted.relay", &formatted).map_err(|e| TestCaseError::fail(format!("{e:?}\n{formatted}")))?;
        if let Err(diff) = structurally_equal(&m, None, &parsed, None) {
            return Err(TestCaseError::fail(format!("{diff}\n{text}\n---\n{formatted}")));
        }
        prop_assert_eq!(format_file(&parsed, relay_compiler::ir::FileId(0)), formatted);
    }

    #[test]
    fn wrapped_modules_parse_back_equal(s in sketch(), width in 8usize..60) {
        let m = Builder::default().module(&s);
        let wrapped = wrap(&print_module(&m, None), width);
        let parsed = parse_module("wrapped.relay", &wrapped).map_err(|e| TestCaseError::fail(format!("{e:?}\n{wrapped}")))?;
        if let Err(diff) = structurally_equal(&m, None, &parsed, None) {
            return Err(TestCaseError::fail(format!("{diff}\n---\n{wrapped}")));
        }
    }

    #[test]
    fn printed_modules_parse_back_equal(s in sketch()) {
        let m = Builder::default().module(&s);
        let text = print_module(&m, None);
        let parsed = match parse_module("printed.relay", &text) {
            Ok(p) => p,
            Err(e) => {
                let mut sources = relay_compiler::ir::SourceMap::default();
                sources.add("printed.relay", text.as_str());
                return Err(TestCaseError::fail(format!("{}\n{text}", e.render(&sources, false))));
            }
        };
        if let Err(diff) = structurally_equal(&m, None, &parsed, None) {
            return Err(TestCaseError::fail(format!("{diff}\n{text}")));
        }
        prop_assert_eq!(print_module(&parsed, None), text);
    }
}
