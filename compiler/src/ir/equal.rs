//! Structural equality of two modules' definitions, up to renaming of ids.
//!
//! Ids of different modules are unrelated, so the comparison maps them: variables pairwise at
//! their binding sites (with equal names), type parameters by binding position, globals,
//! ADTs, constructors and attribute keys by name, tensor constants by content. Spans are
//! ignored; floats compare by bit pattern. A node shared in one module may be unfolded in
//! the other (a DAG equals its tree); visited pairs are memoised so DAGs stay linear. The
//! walk is iterative over expressions, so 100,000-deep `let` chains are fine on any stack.

use super::{
    AttrValue, Attrs, ExprId, ExprKind, FileId, Function, LiteralValue, Module, PatId, PatternKind, TypeId,
    TypeKind, TypeParamId, VarId,
};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Compares the definitions of `fa` in `a` (all of them for `None`) with those of `fb` in `b`:
/// type definitions and global functions in definition order, with everything they reach.
/// The error describes the first difference: where it is and what each side has there.
pub fn structurally_equal(
    a: &Module,
    fa: Option<FileId>,
    b: &Module,
    fb: Option<FileId>,
) -> Result<(), String> {
    let in_file = |want: Option<FileId>, f: FileId| want.is_none_or(|w| w == f);
    let types_a: Vec<_> = a.type_defs.iter().filter(|d| in_file(fa, d.span.file)).collect();
    let types_b: Vec<_> = b.type_defs.iter().filter(|d| in_file(fb, d.span.file)).collect();
    let funcs_a: Vec<_> = a.functions.iter().filter(|g| in_file(fa, g.span.file)).collect();
    let funcs_b: Vec<_> = b.functions.iter().filter(|g| in_file(fb, g.span.file)).collect();
    if types_a.len() != types_b.len() {
        return Err(format!("{} type definitions vs {}", types_a.len(), types_b.len()));
    }
    if funcs_a.len() != funcs_b.len() {
        return Err(format!("{} global functions vs {}", funcs_a.len(), funcs_b.len()));
    }
    let mut cmp = Compare::new(a, b);
    for (da, db) in types_a.into_iter().zip(types_b) {
        let (na, nb) = (a.name(da.name), b.name(db.name));
        let root = cmp.step(NO_PARENT, Label::Item(format!("type {na}")));
        cmp.check(root, na == nb, || (format!("type {na}"), format!("type {nb}")))?;
        cmp.check(root, da.is_extern == db.is_extern, || {
            (extern_text(da.is_extern), extern_text(db.is_extern))
        })?;
        cmp.bind_type_params(root, &da.type_params, &db.type_params)?;
        cmp.check(root, da.constructors.len() == db.constructors.len(), || {
            (
                format!("{} constructors", da.constructors.len()),
                format!("{} constructors", db.constructors.len()),
            )
        })?;
        for (&ca, &cb) in da.constructors.iter().zip(&db.constructors) {
            let (ta, tb) = (a.name(ca), b.name(cb));
            let at = cmp.step(root, Label::Item(format!("constructor {ta}")));
            cmp.check(at, ta == tb, || (ta.to_string(), tb.to_string()))?;
            let fields_a = a.constructor(ca).map(|c| c.fields.as_slice()).unwrap_or_default();
            let fields_b = b.constructor(cb).map(|c| c.fields.as_slice()).unwrap_or_default();
            cmp.check(at, fields_a.len() == fields_b.len(), || {
                (format!("{} fields", fields_a.len()), format!("{} fields", fields_b.len()))
            })?;
            for (i, (&x, &y)) in fields_a.iter().zip(fields_b).enumerate() {
                cmp.push(at, Label::Index("field", i as u32), Item::Type(x, y));
            }
        }
        cmp.run()?;
    }
    for (ga, gb) in funcs_a.into_iter().zip(funcs_b) {
        let (na, nb) = (a.name(ga.name), b.name(gb.name));
        let root = cmp.step(NO_PARENT, Label::Item(format!("def @{na}")));
        cmp.check(root, na == nb, || (format!("@{na}"), format!("@{nb}")))?;
        cmp.function(root, &ga.func, &gb.func)?;
        cmp.run()?;
    }
    Ok(())
}

fn extern_text(is_extern: bool) -> String {
    if is_extern { "extern type" } else { "type with constructors" }.to_string()
}

/// A pair of nodes still to compare.
#[derive(Clone, Copy)]
enum Item {
    Expr(ExprId, ExprId),
    Type(TypeId, TypeId),
    Pat(PatId, PatId),
}

/// One step of the path from a definition to a node, for error messages.
enum Label {
    Item(String),
    Field(&'static str),
    Index(&'static str, u32),
}

const NO_PARENT: u32 = u32::MAX;

struct Compare<'m> {
    a: &'m Module,
    b: &'m Module,
    vars: HashMap<VarId, VarId>,
    vars_back: HashMap<VarId, VarId>,
    tparams: HashMap<TypeParamId, TypeParamId>,
    tparams_back: HashMap<TypeParamId, TypeParamId>,
    seen: HashSet<(u32, u32, u8)>,
    work: Vec<(Item, u32)>,
    /// Path steps: parent step and label.
    trail: Vec<(u32, Label)>,
}

type Res = Result<(), String>;

impl<'m> Compare<'m> {
    fn new(a: &'m Module, b: &'m Module) -> Self {
        Compare {
            a,
            b,
            vars: HashMap::default(),
            vars_back: HashMap::default(),
            tparams: HashMap::default(),
            tparams_back: HashMap::default(),
            seen: HashSet::default(),
            work: Vec::new(),
            trail: Vec::new(),
        }
    }

    fn step(&mut self, parent: u32, label: Label) -> u32 {
        self.trail.push((parent, label));
        self.trail.len() as u32 - 1
    }

    fn push(&mut self, parent: u32, label: Label, item: Item) {
        let at = self.step(parent, label);
        self.work.push((item, at));
    }

    /// Fails at `at` with both sides' descriptions unless `ok`.
    fn check(&self, at: u32, ok: bool, sides: impl FnOnce() -> (String, String)) -> Res {
        if ok {
            return Ok(());
        }
        let (x, y) = sides();
        Err(format!("{}: {x} vs {y}", self.path(at)))
    }

    /// `def @main: body.value.arg[1]`, runs of three or more equal labels collapsed (`body×3`).
    fn path(&self, mut at: u32) -> String {
        let mut labels = Vec::new();
        while let Some((parent, label)) = self.trail.get(at as usize) {
            labels.push(match label {
                Label::Item(s) => s.clone(),
                Label::Field(f) => f.to_string(),
                Label::Index(f, i) => format!("{f}[{i}]"),
            });
            at = *parent;
        }
        labels.reverse();
        let mut text = labels.first().cloned().unwrap_or_default();
        text.push(':');
        let mut rest = labels.iter().skip(1).peekable();
        let mut sep = " ";
        while let Some(l) = rest.next() {
            let mut n = 1;
            while rest.peek() == Some(&l) {
                rest.next();
                n += 1;
            }
            text.push_str(sep);
            text.push_str(l);
            match n {
                1 => {}
                2 => {
                    text.push('.');
                    text.push_str(l);
                }
                _ => text.push_str(&format!("×{n}")),
            }
            sep = ".";
        }
        text
    }

    fn run(&mut self) -> Res {
        while let Some((item, at)) = self.work.pop() {
            let key = match item {
                Item::Expr(x, y) => (x.0, y.0, 0),
                Item::Type(x, y) => (x.0, y.0, 1),
                Item::Pat(x, y) => (x.0, y.0, 2),
            };
            if !self.seen.insert(key) {
                continue;
            }
            match item {
                Item::Expr(x, y) => self.expr(at, x, y)?,
                Item::Type(x, y) => self.ty(at, x, y)?,
                Item::Pat(x, y) => self.pattern(at, x, y)?,
            }
        }
        Ok(())
    }

    fn function(&mut self, at: u32, fa: &Function, fb: &Function) -> Res {
        self.bind_type_params(at, &fa.type_params, &fb.type_params)?;
        self.attrs(at, &fa.attrs, &fb.attrs)?;
        let (na, nb) = (fa.params.len(), fb.params.len());
        self.check(at, na == nb, || (format!("{na} parameters"), format!("{nb} parameters")))?;
        for (i, (&x, &y)) in fa.params.iter().zip(&fb.params).enumerate() {
            let p = self.step(at, Label::Index("param", i as u32));
            self.bind_var(p, x, y)?;
        }
        match (fa.ret_type, fb.ret_type) {
            (Some(x), Some(y)) => self.push(at, Label::Field("ret"), Item::Type(x, y)),
            (None, None) => {}
            (x, y) => self.check(at, false, || (annotation(x), annotation(y)))?,
        }
        self.push(at, Label::Field("body"), Item::Expr(fa.body, fb.body));
        Ok(())
    }

    fn bind_type_params(&mut self, at: u32, xs: &[TypeParamId], ys: &[TypeParamId]) -> Res {
        self.check(at, xs.len() == ys.len(), || {
            (format!("{} type parameters", xs.len()), format!("{} type parameters", ys.len()))
        })?;
        for (&x, &y) in xs.iter().zip(ys) {
            self.tparams.insert(x, y);
            self.tparams_back.insert(y, x);
        }
        Ok(())
    }

    fn bind_var(&mut self, at: u32, x: VarId, y: VarId) -> Res {
        let (dx, dy) = (self.a.var(x), self.b.var(y));
        let (nx, ny) = (self.a.name(dx.name), self.b.name(dy.name));
        self.check(at, nx == ny, || (format!("binder %{nx}"), format!("binder %{ny}")))?;
        self.vars.insert(x, y);
        self.vars_back.insert(y, x);
        match (dx.ty, dy.ty) {
            (Some(tx), Some(ty)) => self.push(at, Label::Item(format!("%{nx}")), Item::Type(tx, ty)),
            (None, None) => {}
            (tx, ty) => self.check(at, false, || (annotation(tx), annotation(ty)))?,
        }
        Ok(())
    }

    /// A use of `x` must refer to the binder paired with `y`'s, or both be free with one name.
    fn use_var(&mut self, at: u32, x: VarId, y: VarId) -> Res {
        let (nx, ny) = (self.a.name(self.a.var(x).name), self.b.name(self.b.var(y).name));
        let ok = match (self.vars.get(&x), self.vars_back.get(&y)) {
            (Some(&my), Some(&mx)) => my == y && mx == x,
            (None, None) if nx == ny => {
                self.vars.insert(x, y);
                self.vars_back.insert(y, x);
                true
            }
            _ => false,
        };
        self.check(at, ok, || (format!("variable %{nx}"), format!("variable %{ny} (bound elsewhere)")))
    }

    fn expr(&mut self, at: u32, x: ExprId, y: ExprId) -> Res {
        let (a, b) = (self.a, self.b);
        let (kx, ky) = (&a.expr(x).kind, &b.expr(y).kind);
        let differ = || (describe(a, kx), describe(b, ky));
        match (kx, ky) {
            (ExprKind::Var(vx), ExprKind::Var(vy)) => self.use_var(at, *vx, *vy)?,
            (ExprKind::Global(gx), ExprKind::Global(gy))
            | (ExprKind::Constructor(gx), ExprKind::Constructor(gy))
            | (ExprKind::Op(gx), ExprKind::Op(gy)) => self.check(at, a.name(*gx) == b.name(*gy), differ)?,
            (ExprKind::Literal(lx), ExprKind::Literal(ly)) => {
                let same_value = match (lx.value, ly.value) {
                    (LiteralValue::Float(p), LiteralValue::Float(q)) => p.to_bits() == q.to_bits(),
                    (p, q) => p == q,
                };
                self.check(at, lx.dtype == ly.dtype && same_value, differ)?;
            }
            (ExprKind::Constant(cx), ExprKind::Constant(cy)) => self.constant(at, *cx, *cy)?,
            (ExprKind::Tuple(fx), ExprKind::Tuple(fy)) => {
                self.check(at, fx.len() == fy.len(), differ)?;
                for (i, (&p, &q)) in fx.iter().zip(fy).enumerate() {
                    self.push(at, Label::Index("field", i as u32), Item::Expr(p, q));
                }
            }
            (ExprKind::Proj { tuple: tx, index: ix }, ExprKind::Proj { tuple: ty, index: iy }) => {
                self.check(at, ix == iy, differ)?;
                self.push(at, Label::Field("tuple"), Item::Expr(*tx, *ty));
            }
            (
                ExprKind::Call { callee: cx, args: ax, attrs: tx },
                ExprKind::Call { callee: cy, args: ay, attrs: ty },
            ) => {
                self.check(at, ax.len() == ay.len(), differ)?;
                self.attrs(at, tx, ty)?;
                self.push(at, Label::Field("callee"), Item::Expr(*cx, *cy));
                for (i, (&p, &q)) in ax.iter().zip(ay).enumerate() {
                    self.push(at, Label::Index("arg", i as u32), Item::Expr(p, q));
                }
            }
            (
                ExprKind::Let { var: vx, value: ex, body: bx },
                ExprKind::Let { var: vy, value: ey, body: by },
            ) => {
                self.bind_var(at, *vx, *vy)?;
                self.push(at, Label::Field("body"), Item::Expr(*bx, *by));
                self.push(at, Label::Field("value"), Item::Expr(*ex, *ey));
            }
            (
                ExprKind::If { cond: cx, then_branch: tx, else_branch: ex },
                ExprKind::If { cond: cy, then_branch: ty, else_branch: ey },
            ) => {
                self.push(at, Label::Field("else"), Item::Expr(*ex, *ey));
                self.push(at, Label::Field("then"), Item::Expr(*tx, *ty));
                self.push(at, Label::Field("cond"), Item::Expr(*cx, *cy));
            }
            (
                ExprKind::Match { scrutinee: sx, arms: rx, complete: cx },
                ExprKind::Match { scrutinee: sy, arms: ry, complete: cy },
            ) => {
                self.check(at, cx == cy && rx.len() == ry.len(), differ)?;
                for (i, (p, q)) in rx.iter().zip(ry).enumerate().rev() {
                    let arm = self.step(at, Label::Index("arm", i as u32));
                    // Popped first, the pattern binds its variables before the body is compared.
                    self.push(arm, Label::Field("body"), Item::Expr(p.body, q.body));
                    self.push(arm, Label::Field("pattern"), Item::Pat(p.pattern, q.pattern));
                }
                self.push(at, Label::Field("scrutinee"), Item::Expr(*sx, *sy));
            }
            (ExprKind::Function(fx), ExprKind::Function(fy)) => {
                let at = self.step(at, Label::Field("fn"));
                self.function(at, fx, fy)?;
            }
            (ExprKind::RefNew(p), ExprKind::RefNew(q)) | (ExprKind::RefRead(p), ExprKind::RefRead(q)) => {
                self.push(at, Label::Field("ref"), Item::Expr(*p, *q));
            }
            (ExprKind::RefWrite { cell: cx, value: vx }, ExprKind::RefWrite { cell: cy, value: vy }) => {
                self.push(at, Label::Field("value"), Item::Expr(*vx, *vy));
                self.push(at, Label::Field("ref"), Item::Expr(*cx, *cy));
            }
            _ => self.check(at, false, differ)?,
        }
        Ok(())
    }

    fn pattern(&mut self, at: u32, x: PatId, y: PatId) -> Res {
        let (a, b) = (self.a, self.b);
        let (kx, ky) = (&a.pattern(x).kind, &b.pattern(y).kind);
        match (kx, ky) {
            (PatternKind::Wildcard, PatternKind::Wildcard) => Ok(()),
            (PatternKind::Var(vx), PatternKind::Var(vy)) => self.bind_var(at, *vx, *vy),
            (
                PatternKind::Constructor { name: nx, args: ax },
                PatternKind::Constructor { name: ny, args: ay },
            ) => {
                let ok = a.name(*nx) == b.name(*ny) && ax.len() == ay.len();
                self.check(at, ok, || (describe_pattern(a, kx), describe_pattern(b, ky)))?;
                for (i, (&p, &q)) in ax.iter().zip(ay).enumerate().rev() {
                    self.push(at, Label::Index("field", i as u32), Item::Pat(p, q));
                }
                Ok(())
            }
            (PatternKind::Tuple(ax), PatternKind::Tuple(ay)) if ax.len() == ay.len() => {
                for (i, (&p, &q)) in ax.iter().zip(ay).enumerate().rev() {
                    self.push(at, Label::Index("field", i as u32), Item::Pat(p, q));
                }
                Ok(())
            }
            _ => self.check(at, false, || (describe_pattern(a, kx), describe_pattern(b, ky))),
        }
    }

    fn ty(&mut self, at: u32, x: TypeId, y: TypeId) -> Res {
        let (a, b) = (self.a, self.b);
        let (kx, ky) = (a.types.kind(x), b.types.kind(y));
        let differ = || (format!("{kx:?}"), format!("{ky:?}"));
        match (kx, ky) {
            (TypeKind::Tensor { shape: sx, dtype: dx }, TypeKind::Tensor { shape: sy, dtype: dy }) => {
                self.check(at, sx == sy && dx == dy, differ)
            }
            (TypeKind::Tuple(fx), TypeKind::Tuple(fy)) if fx.len() == fy.len() => {
                for (i, (&p, &q)) in fx.iter().zip(fy).enumerate() {
                    self.push(at, Label::Index("field", i as u32), Item::Type(p, q));
                }
                Ok(())
            }
            (
                TypeKind::Func { type_params: tx, params: px, ret: rx },
                TypeKind::Func { type_params: ty, params: py, ret: ry },
            ) if px.len() == py.len() => {
                self.bind_type_params(at, tx, ty)?;
                self.push(at, Label::Field("ret"), Item::Type(*rx, *ry));
                for (i, (&p, &q)) in px.iter().zip(py).enumerate() {
                    self.push(at, Label::Index("param", i as u32), Item::Type(p, q));
                }
                Ok(())
            }
            (TypeKind::Param(px), TypeKind::Param(py)) => {
                let (nx, ny) =
                    (a.name(a.type_params[px.index()].name), b.name(b.type_params[py.index()].name));
                let ok = match (self.tparams.get(px), self.tparams_back.get(py)) {
                    (Some(q), Some(p)) => q == py && p == px,
                    (None, None) => nx == ny,
                    _ => false,
                };
                self.check(at, ok, || (format!("type parameter {nx}"), format!("type parameter {ny}")))
            }
            (TypeKind::Adt { name: nx, args: ax }, TypeKind::Adt { name: ny, args: ay })
                if a.name(*nx) == b.name(*ny) && ax.len() == ay.len() =>
            {
                for (i, (&p, &q)) in ax.iter().zip(ay).enumerate() {
                    self.push(at, Label::Index("arg", i as u32), Item::Type(p, q));
                }
                Ok(())
            }
            (TypeKind::Ref(p), TypeKind::Ref(q)) => {
                self.push(at, Label::Field("ref"), Item::Type(*p, *q));
                Ok(())
            }
            (TypeKind::Hole, TypeKind::Hole) => Ok(()),
            _ => self.check(at, false, differ),
        }
    }

    fn attrs(&self, at: u32, x: &Attrs, y: &Attrs) -> Res {
        let keys = |m: &Module, attrs: &Attrs| {
            attrs.0.iter().map(|(k, _)| m.name(*k).to_string()).collect::<Vec<_>>()
        };
        let (kx, ky) = (keys(self.a, x), keys(self.b, y));
        self.check(at, kx == ky, || (format!("attributes {kx:?}"), format!("attributes {ky:?}")))?;
        for ((k, vx), (_, vy)) in x.0.iter().zip(&y.0) {
            let ok = self.attr_value(vx, vy);
            let key = self.a.name(*k);
            self.check(at, ok, || (format!("{key}={vx:?}"), format!("{key}={vy:?}")))?;
        }
        Ok(())
    }

    fn attr_value(&self, x: &AttrValue, y: &AttrValue) -> bool {
        stacker::maybe_grow(64 * 1024, 4 * 1024 * 1024, || match (x, y) {
            (AttrValue::Float(p), AttrValue::Float(q)) => p.to_bits() == q.to_bits(),
            (AttrValue::List(p), AttrValue::List(q)) => {
                p.len() == q.len() && p.iter().zip(q).all(|(u, v)| self.attr_value(u, v))
            }
            (AttrValue::Meta { kind: kp, index: ip }, AttrValue::Meta { kind: kq, index: iq })
                if kp == "relay.Constant" && kq == kp =>
            {
                self.same_constant(*ip, *iq)
            }
            (p, q) => p == q,
        })
    }

    fn constant(&self, at: u32, x: u32, y: u32) -> Res {
        self.check(at, self.same_constant(x, y), || {
            let show = |m: &Module, i: u32| match m.constants.get(i as usize) {
                Some(c) => format!("constant {i} ({} {:?})", c.dtype, c.shape),
                None => format!("missing constant {i}"),
            };
            (show(self.a, x), show(self.b, y))
        })
    }

    fn same_constant(&self, x: u32, y: u32) -> bool {
        match (self.a.constants.get(x as usize), self.b.constants.get(y as usize)) {
            (Some(p), Some(q)) => {
                p.dtype == q.dtype
                    && p.shape == q.shape
                    && p.data.len() == q.data.len()
                    && p.data.iter().zip(&q.data).all(|(u, v)| u.to_bits() == v.to_bits())
            }
            _ => false,
        }
    }
}

fn annotation(t: Option<TypeId>) -> String {
    if t.is_some() { "a type annotation" } else { "no type annotation" }.to_string()
}

/// A one-line description of an expression node's head.
fn describe(m: &Module, kind: &ExprKind) -> String {
    match kind {
        ExprKind::Var(v) => format!("variable %{}", m.name(m.var(*v).name)),
        ExprKind::Global(g) => format!("global @{}", m.name(*g)),
        ExprKind::Constructor(c) => format!("constructor {}", m.name(*c)),
        ExprKind::Op(o) => format!("operator {}", m.name(*o)),
        ExprKind::Literal(l) => format!("literal {:?} of {}", l.value, l.dtype),
        ExprKind::Constant(i) => format!("constant {i}"),
        ExprKind::Tuple(f) => format!("tuple of {}", f.len()),
        ExprKind::Proj { index, .. } => format!("projection .{index}"),
        ExprKind::Call { args, .. } => format!("call with {} arguments", args.len()),
        ExprKind::Let { var, .. } => format!("let %{}", m.name(m.var(*var).name)),
        ExprKind::If { .. } => "if".to_string(),
        ExprKind::Match { arms, complete, .. } => {
            format!("{} with {} arms", if *complete { "match" } else { "match?" }, arms.len())
        }
        ExprKind::Function(f) => format!("fn with {} parameters", f.params.len()),
        ExprKind::RefNew(_) => "ref".to_string(),
        ExprKind::RefRead(_) => "ref_read".to_string(),
        ExprKind::RefWrite { .. } => "ref_write".to_string(),
    }
}

fn describe_pattern(m: &Module, kind: &PatternKind) -> String {
    match kind {
        PatternKind::Wildcard => "_".to_string(),
        PatternKind::Var(v) => format!("%{}", m.name(m.var(*v).name)),
        PatternKind::Constructor { name, args } => format!("{} with {} fields", m.name(*name), args.len()),
        PatternKind::Tuple(items) => format!("tuple pattern of {}", items.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_module;

    fn parse(text: &str) -> Module {
        parse_module("t.relay", text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    fn compare(a: &str, b: &str) -> Result<(), String> {
        structurally_equal(&parse(a), None, &parse(b), None)
    }

    #[test]
    fn a_dag_equals_its_tree() {
        let dag = "def @main(%x) { %0 = add(%x, %x); %1 = fn (%y) { %y }; (multiply(%0, %0), %1, %1) }";
        let tree = "def @main(%x) { (multiply(add(%x, %x), add(%x, %x)), fn (%y) { %y }, fn (%y) { %y }) }";
        assert_eq!(compare(dag, tree), Ok(()));
    }

    #[test]
    fn the_first_difference_is_reported_with_its_path() {
        let err =
            compare("def @main(%x) { let %y = add(%x, 1); %y }", "def @main(%x) { let %y = add(%x, 2); %y }")
                .unwrap_err();
        assert_eq!(err, "def @main: body.value.arg[1]: literal Int(1) of int32 vs literal Int(2) of int32");
        let err = compare("def @main(%x) { %x }", "def @main(%z) { %z }").unwrap_err();
        assert!(err.contains("param[0]: binder %x vs binder %z"), "{err}");
        let err = compare("def @f() { () } def @g() { () }", "def @f() { () }").unwrap_err();
        assert_eq!(err, "2 global functions vs 1");
    }

    #[test]
    fn uses_must_refer_to_paired_binders() {
        let text = "def @main(%x) { let %x = 1; %x }";
        let a = parse(text);
        let mut b = parse(text);
        // Point the use at the parameter: same name, other binder.
        let param = b.functions[0].func.params[0];
        let ExprKind::Let { body, .. } = b.expr(b.functions[0].func.body).kind else { panic!() };
        b.exprs[body.index()].kind = ExprKind::Var(param);
        let err = structurally_equal(&a, None, &b, None).unwrap_err();
        assert!(err.contains("body.body: variable %x vs variable %x (bound elsewhere)"), "{err}");
    }

    #[test]
    fn type_parameters_map_by_position() {
        assert_eq!(compare("def @f[A](%x: A) -> A { %x }", "def @f[B](%x: B) -> B { %x }"), Ok(()));
        assert!(compare("def @f[A, B](%x: A) { %x }", "def @f[A, B](%x: B) { %x }").is_err());
    }

    #[test]
    fn floats_compare_by_bits_and_constants_by_content() {
        assert_eq!(compare("def @main() { nanf }", "def @main() { nanf }"), Ok(()));
        assert!(compare("def @main() { 0f }", "def @main() { -0f }").is_err());
        let meta = |order: &str| {
            format!(
                "def @main() {{ meta[relay.Constant][{order}] }}\n#[metadata]\n{{\"relay.Constant\": [\
                 {{\"dtype\": \"int8\", \"shape\": [1], \"data\": [3]}}, \
                 {{\"dtype\": \"float32\", \"shape\": [1], \"data\": [3]}}]}}"
            )
        };
        assert_eq!(compare(&meta("0"), &meta("0")), Ok(()));
        assert!(compare(&meta("0"), &meta("1"))
            .unwrap_err()
            .contains("constant 0 (int8 [1]) vs constant 1 (float32 [1])"));
    }
}
