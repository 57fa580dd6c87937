//! Type terms under inference: a union-find over inference variables (paper §3.2's
//! Hindley–Milner core), with unification and an occurs check.
//!
//! Terms live in their own arena rather than in the module's hash-consed [`TypeInterner`]
//! (`crate::ir::TypeInterner`) because inference variables are mutable (bound as solving
//! progresses); finished types are interned into the module at the end.

use crate::ir::{Dim, Module, Symbol, TypeId, TypeKind, TypeParamId};
use crate::op::{RelType, TensorType};
use relay_devices::DType;
use rustc_hash::FxHashMap as HashMap;

/// A type term in the inference arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Tv(u32);

/// The structure of a term; mirrors [`TypeKind`] plus inference variables and an error
/// sentinel.
#[derive(Clone, Debug)]
pub(crate) enum Term {
    /// An inference variable; bound through [`Terms::bind`].
    Var,
    /// Stands for a type already reported as wrong: unifies with everything, so one mistake
    /// yields one diagnostic.
    Error,
    Tensor(TensorType),
    Tuple(Vec<Tv>),
    Func {
        type_params: Vec<TypeParamId>,
        params: Vec<Tv>,
        ret: Tv,
    },
    Adt {
        name: Symbol,
        args: Vec<Tv>,
    },
    Ref(Tv),
    /// A rigid type parameter in scope (only equal to itself).
    Param(TypeParamId),
}

/// Why two terms did not unify.
#[derive(Debug)]
pub(crate) enum UnifyError {
    /// The innermost pair of terms that differ.
    Mismatch(Tv, Tv),
    /// Binding the variable would make an infinite type.
    Occurs(Tv, Tv),
}

/// The arena of terms and the union-find bindings of its variables.
#[derive(Default)]
pub(crate) struct Terms {
    terms: Vec<Term>,
    binding: Vec<Option<Tv>>,
    /// [`Terms::finish`]'s result per representative. A finished term has no unbound
    /// variable left, so it can no longer change; without this, finishing every node of a
    /// `depth`-deep nested tuple walks `depth²` terms.
    /// Indexed by the representative's [`Tv`]; shorter than `terms` until needed.
    finished: Vec<Option<TypeId>>,
    /// [`Terms::term_of`]'s result per written type without holes: such a term has no
    /// variable, so one copy serves every use (a deep annotated type is built once, not once
    /// per annotation).
    written: HashMap<TypeId, Tv>,
}

impl Terms {
    pub fn add(&mut self, t: Term) -> Tv {
        self.terms.push(t);
        self.binding.push(None);
        Tv(self.terms.len() as u32 - 1)
    }

    pub fn fresh(&mut self) -> Tv {
        self.add(Term::Var)
    }

    pub fn error(&mut self) -> Tv {
        self.add(Term::Error)
    }

    pub fn scalar(&mut self, dtype: DType) -> Tv {
        self.add(Term::Tensor(TensorType::scalar(dtype)))
    }

    pub fn unit(&mut self) -> Tv {
        self.add(Term::Tuple(vec![]))
    }

    /// The representative of `t`: follows variable bindings, compressing the path.
    pub fn find(&mut self, t: Tv) -> Tv {
        let mut root = t;
        while let Some(next) = self.binding[root.0 as usize] {
            root = next;
        }
        let mut cur = t;
        while let Some(next) = self.binding[cur.0 as usize] {
            self.binding[cur.0 as usize] = Some(root);
            cur = next;
        }
        root
    }

    /// The structure of `t`'s representative.
    pub fn get(&mut self, t: Tv) -> (Tv, Term) {
        let r = self.find(t);
        (r, self.terms[r.0 as usize].clone())
    }

    fn bind(&mut self, var: Tv, to: Tv) {
        self.binding[var.0 as usize] = Some(to);
    }

    /// Makes `a` and `b` the same type. Tensor dimensions unify when equal or when either is
    /// `?` (checked at run time).
    pub fn unify(&mut self, a: Tv, b: Tv) -> Result<(), UnifyError> {
        let mut work = vec![(a, b)];
        while let Some((a, b)) = work.pop() {
            let (a, ta) = self.get(a);
            let (b, tb) = self.get(b);
            if a == b {
                continue;
            }
            match (ta, tb) {
                // A variable unified with an error becomes the error, so that whatever waits
                // on it (a relation, a projection) knows it was already reported.
                (Term::Var, _) => self.bind_checked(a, b)?,
                (_, Term::Var) => self.bind_checked(b, a)?,
                (Term::Error, _) | (_, Term::Error) => {}
                (Term::Tensor(x), Term::Tensor(y)) => {
                    let dims_ok = x.shape.len() == y.shape.len()
                        && x.shape.iter().zip(&y.shape).all(|(p, q)| dims_compatible(*p, *q));
                    if x.dtype != y.dtype || !dims_ok {
                        return Err(UnifyError::Mismatch(a, b));
                    }
                }
                (Term::Tuple(xs), Term::Tuple(ys)) if xs.len() == ys.len() => {
                    work.extend(xs.into_iter().zip(ys));
                }
                (Term::Ref(x), Term::Ref(y)) => work.push((x, y)),
                (Term::Adt { name: n1, args: a1 }, Term::Adt { name: n2, args: a2 })
                    if n1 == n2 && a1.len() == a2.len() =>
                {
                    work.extend(a1.into_iter().zip(a2));
                }
                (Term::Param(p), Term::Param(q)) if p == q => {}
                (
                    Term::Func { type_params: tp1, params: p1, ret: r1 },
                    Term::Func { type_params: tp2, params: p2, ret: r2 },
                ) if tp1.len() == tp2.len() && p1.len() == p2.len() => {
                    // Alpha-rename the second function's type parameters to the first's.
                    let subst: HashMap<TypeParamId, Tv> =
                        tp2.iter().zip(&tp1).map(|(&q, &p)| (q, self.add(Term::Param(p)))).collect();
                    for (x, y) in p1.into_iter().zip(p2) {
                        let y = self.substitute(y, &subst);
                        work.push((x, y));
                    }
                    let r2 = self.substitute(r2, &subst);
                    work.push((r1, r2));
                }
                // A polymorphic function where a monomorphic one is expected (TVM's
                // `test_higher_order_return`): instantiated with fresh variables, as TVM's
                // unifier does when the type parameter counts differ.
                (
                    Term::Func { type_params: tp1, params: p1, .. },
                    Term::Func { type_params: tp2, params: p2, .. },
                ) if tp1.len() != tp2.len() && p1.len() == p2.len() => {
                    work.push(self.instantiate_mismatched(a, b));
                }
                _ => return Err(UnifyError::Mismatch(a, b)),
            }
        }
        Ok(())
    }

    fn bind_checked(&mut self, var: Tv, to: Tv) -> Result<(), UnifyError> {
        if self.occurs(var, to) {
            return Err(UnifyError::Occurs(var, to));
        }
        self.bind(var, to);
        Ok(())
    }

    fn occurs(&mut self, var: Tv, t: Tv) -> bool {
        let mut work = vec![t];
        while let Some(t) = work.pop() {
            let (r, term) = self.get(t);
            if r == var {
                return true;
            }
            work.extend(children(&term));
        }
        false
    }

    /// A copy of `t` with type parameters replaced per `subst`; unbound variables are shared,
    /// not copied (no implicit generalisation, as in TVM).
    pub fn substitute(&mut self, t: Tv, subst: &HashMap<TypeParamId, Tv>) -> Tv {
        if subst.is_empty() {
            return t;
        }
        crate::stack::grow(|| {
            let (r, term) = self.get(t);
            match term {
                Term::Var | Term::Error | Term::Tensor(_) => r,
                Term::Param(p) => subst.get(&p).copied().unwrap_or(r),
                Term::Tuple(xs) => {
                    let xs = xs.into_iter().map(|x| self.substitute(x, subst)).collect();
                    self.add(Term::Tuple(xs))
                }
                Term::Ref(x) => {
                    let x = self.substitute(x, subst);
                    self.add(Term::Ref(x))
                }
                Term::Adt { name, args } => {
                    let args = args.into_iter().map(|x| self.substitute(x, subst)).collect();
                    self.add(Term::Adt { name, args })
                }
                Term::Func { type_params, params, ret } => {
                    // Inner binders shadow: drop them from the substitution.
                    let mut inner = subst.clone();
                    for p in &type_params {
                        inner.remove(p);
                    }
                    let params = params.into_iter().map(|x| self.substitute(x, &inner)).collect();
                    let ret = self.substitute(ret, &inner);
                    self.add(Term::Func { type_params, params, ret })
                }
            }
        })
    }

    /// Instantiates a polymorphic function term with fresh variables for its type parameters;
    /// other terms are returned as they are.
    pub fn instantiate(&mut self, t: Tv) -> Tv {
        let (r, term) = self.get(t);
        match term {
            Term::Func { type_params, params, ret } if !type_params.is_empty() => {
                let subst: HashMap<TypeParamId, Tv> =
                    type_params.iter().map(|&p| (p, self.fresh())).collect();
                let params = params.into_iter().map(|x| self.substitute(x, &subst)).collect();
                let ret = self.substitute(ret, &subst);
                self.add(Term::Func { type_params: vec![], params, ret })
            }
            _ => r,
        }
    }

    /// `a` and `b`, both instantiated when they are functions with different numbers of type
    /// parameters (a polymorphic function literal beside a monomorphic one): the pair then
    /// unifies into one monomorphic type, which both sides share.
    pub fn instantiate_mismatched(&mut self, a: Tv, b: Tv) -> (Tv, Tv) {
        match (self.get(a).1, self.get(b).1) {
            (Term::Func { type_params: x, .. }, Term::Func { type_params: y, .. }) if x.len() != y.len() => {
                (self.instantiate(a), self.instantiate(b))
            }
            _ => (a, b),
        }
    }

    /// The term for a written type; each `_` becomes a fresh variable.
    pub fn term_of(&mut self, m: &Module, t: TypeId) -> Tv {
        self.written_term(m, t).0
    }

    /// [`Terms::term_of`], and whether the type is free of holes (then the term is shared).
    fn written_term(&mut self, m: &Module, t: TypeId) -> (Tv, bool) {
        if let Some(&done) = self.written.get(&t) {
            return (done, true);
        }
        let (term, ground) = crate::stack::grow(|| match m.types.kind(t).clone() {
            TypeKind::Tensor { shape, dtype } => (self.add(Term::Tensor(TensorType { shape, dtype })), true),
            TypeKind::Tuple(xs) => {
                let (xs, ground) = self.written_terms(m, xs);
                (self.add(Term::Tuple(xs)), ground)
            }
            TypeKind::Func { type_params, params, ret } => {
                let (params, ground) = self.written_terms(m, params);
                let (ret, ret_ground) = self.written_term(m, ret);
                (self.add(Term::Func { type_params, params, ret }), ground && ret_ground)
            }
            TypeKind::Param(p) => (self.add(Term::Param(p)), true),
            TypeKind::Adt { name, args } => {
                let (args, ground) = self.written_terms(m, args);
                (self.add(Term::Adt { name, args }), ground)
            }
            TypeKind::Ref(x) => {
                let (x, ground) = self.written_term(m, x);
                (self.add(Term::Ref(x)), ground)
            }
            TypeKind::Hole => (self.fresh(), false),
        });
        if ground {
            self.written.insert(t, term);
        }
        (term, ground)
    }

    fn written_terms(&mut self, m: &Module, ts: Vec<TypeId>) -> (Vec<Tv>, bool) {
        let mut ground = true;
        let terms = ts
            .into_iter()
            .map(|t| {
                let (term, g) = self.written_term(m, t);
                ground &= g;
                term
            })
            .collect();
        (terms, ground)
    }

    /// The finished type of `t`, interned in `m`; `None` if a variable is still unbound.
    pub fn finish(&mut self, m: &mut Module, t: Tv) -> Option<TypeId> {
        crate::stack::grow(|| {
            let r = self.find(t);
            if let Some(&Some(done)) = self.finished.get(r.0 as usize) {
                return Some(done);
            }
            let kind = match self.terms[r.0 as usize].clone() {
                Term::Var | Term::Error => return None,
                Term::Tensor(TensorType { shape, dtype }) => TypeKind::Tensor { shape, dtype },
                Term::Tuple(xs) => TypeKind::Tuple(self.finish_all(m, xs)?),
                Term::Func { type_params, params, ret } => {
                    let params = self.finish_all(m, params)?;
                    let ret = self.finish(m, ret)?;
                    TypeKind::Func { type_params, params, ret }
                }
                Term::Adt { name, args } => TypeKind::Adt { name, args: self.finish_all(m, args)? },
                Term::Ref(x) => TypeKind::Ref(self.finish(m, x)?),
                Term::Param(p) => TypeKind::Param(p),
            };
            let done = m.types.intern(kind);
            let at = r.0 as usize;
            if self.finished.len() <= at {
                self.finished.resize(self.terms.len(), None);
            }
            self.finished[at] = Some(done);
            Some(done)
        })
    }

    fn finish_all(&mut self, m: &mut Module, ts: Vec<Tv>) -> Option<Vec<TypeId>> {
        ts.into_iter().map(|t| self.finish(m, t)).collect()
    }

    /// The term as a type relation sees it: unbound variables are [`RelType::Unknown`].
    pub fn rel_view(&mut self, m: &Module, t: Tv) -> RelType {
        crate::stack::grow(|| {
            let (_, term) = self.get(t);
            match term {
                Term::Var | Term::Error => RelType::Unknown,
                Term::Tensor(tt) => RelType::Tensor(tt),
                Term::Tuple(xs) => RelType::Tuple(xs.into_iter().map(|x| self.rel_view(m, x)).collect()),
                _ => RelType::Other(self.display(m, t)),
            }
        })
    }

    /// The term for a relation's output type.
    pub fn term_of_rel(&mut self, r: &RelType) -> Tv {
        crate::stack::grow(|| match r {
            RelType::Tensor(tt) => self.add(Term::Tensor(tt.clone())),
            RelType::Tuple(xs) => {
                let xs = xs.iter().map(|x| self.term_of_rel(x)).collect();
                self.add(Term::Tuple(xs))
            }
            RelType::Unknown | RelType::Other(_) => self.fresh(),
        })
    }

    /// Whether `t` contains an error sentinel (already reported).
    pub fn has_error(&mut self, t: Tv) -> bool {
        let mut work = vec![t];
        while let Some(t) = work.pop() {
            let (_, term) = self.get(t);
            if matches!(term, Term::Error) {
                return true;
            }
            work.extend(children(&term));
        }
        false
    }

    /// The unbound inference variables in `t` (representatives, possibly repeated).
    pub fn unbound_vars(&mut self, t: Tv) -> Vec<Tv> {
        let mut vars = vec![];
        let mut work = vec![t];
        while let Some(t) = work.pop() {
            let (r, term) = self.get(t);
            if matches!(term, Term::Var) {
                vars.push(r);
            }
            work.extend(children(&term));
        }
        vars
    }

    /// Relay text for `t`, with `_` for what is not inferred yet.
    pub fn display(&mut self, m: &Module, t: Tv) -> String {
        let mut out = String::new();
        self.write(m, t, &mut out);
        out
    }

    fn write(&mut self, m: &Module, t: Tv, out: &mut String) {
        crate::stack::grow(|| {
            let (_, term) = self.get(t);
            match term {
                Term::Var => out.push('_'),
                Term::Error => out.push_str("<error>"),
                Term::Tensor(tt) => out.push_str(&tt.to_string()),
                Term::Tuple(xs) => {
                    out.push('(');
                    self.write_list(m, &xs, out);
                    if xs.len() == 1 {
                        out.push(',');
                    }
                    out.push(')');
                }
                Term::Func { type_params, params, ret } => {
                    out.push_str("fn ");
                    if !type_params.is_empty() {
                        out.push('[');
                        let names: Vec<&str> =
                            type_params.iter().map(|p| m.name(m.type_params[p.index()].name)).collect();
                        out.push_str(&names.join(", "));
                        out.push(']');
                    }
                    out.push('(');
                    self.write_list(m, &params, out);
                    out.push_str(") -> ");
                    self.write(m, ret, out);
                }
                Term::Adt { name, args } => {
                    out.push_str(m.name(name));
                    if !args.is_empty() {
                        out.push('[');
                        self.write_list(m, &args, out);
                        out.push(']');
                    }
                }
                Term::Ref(x) => {
                    out.push_str("ref(");
                    self.write(m, x, out);
                    out.push(')');
                }
                Term::Param(p) => out.push_str(m.name(m.type_params[p.index()].name)),
            }
        })
    }

    fn write_list(&mut self, m: &Module, ts: &[Tv], out: &mut String) {
        for (i, &t) in ts.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            self.write(m, t, out);
        }
    }
}

fn dims_compatible(a: Dim, b: Dim) -> bool {
    match (a, b) {
        (Dim::Known(x), Dim::Known(y)) => x == y,
        _ => true,
    }
}

fn children(term: &Term) -> Vec<Tv> {
    match term {
        Term::Var | Term::Error | Term::Tensor(_) | Term::Param(_) => vec![],
        Term::Tuple(xs) => xs.clone(),
        Term::Adt { args, .. } => args.clone(),
        Term::Ref(x) => vec![*x],
        Term::Func { params, ret, .. } => params.iter().copied().chain([*ret]).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(terms: &mut Terms, shape: &[Dim]) -> Tv {
        terms.add(Term::Tensor(TensorType::new(shape.to_vec(), DType::F32)))
    }

    #[test]
    fn variables_bind_through_structure() {
        let m = Module::default();
        let mut t = Terms::default();
        let (a, b) = (t.fresh(), t.fresh());
        let x = tensor(&mut t, &[Dim::Known(2)]);
        let pair1 = t.add(Term::Tuple(vec![a, x]));
        let pair2 = t.add(Term::Tuple(vec![x, b]));
        t.unify(pair1, pair2).unwrap();
        assert_eq!(t.display(&m, a), "Tensor[(2), float32]");
        assert_eq!(t.display(&m, pair1), "(Tensor[(2), float32], Tensor[(2), float32])");
    }

    #[test]
    fn any_dims_unify_with_known_ones() {
        let mut t = Terms::default();
        let a = tensor(&mut t, &[Dim::Any, Dim::Known(3)]);
        let b = tensor(&mut t, &[Dim::Known(5), Dim::Known(3)]);
        let c = tensor(&mut t, &[Dim::Known(5), Dim::Known(4)]);
        assert!(t.unify(a, b).is_ok());
        assert!(matches!(t.unify(b, c), Err(UnifyError::Mismatch(..))));
    }

    #[test]
    fn occurs_check_rejects_infinite_types() {
        let mut t = Terms::default();
        let a = t.fresh();
        let r = t.add(Term::Ref(a));
        assert!(matches!(t.unify(a, r), Err(UnifyError::Occurs(..))));
    }

    #[test]
    fn error_terms_unify_with_anything() {
        let mut t = Terms::default();
        let e = t.error();
        let x = tensor(&mut t, &[]);
        assert!(t.unify(e, x).is_ok());
    }
}
