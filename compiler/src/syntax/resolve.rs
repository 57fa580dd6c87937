//! Name checks that need the whole module: globals, ADT types and constructors may be used
//! before (or in another file than) their definition, so the parser records each use and
//! this pass checks them once every definition of the file is in the module.
//!
//! It also decides what a bare identifier in expression position is: a constructor if the
//! module has one of that name, otherwise an operator (kept by name; the operator registry
//! checks it later). A constructor without fields that is not called is wrapped in a call
//! with no arguments, as TVM's parser does, so `Nil` and `Nil()` are the same value.

use crate::diagnostics::suggest::closest;
use crate::diagnostics::{Diagnostic, MAX_SHOWN};
use crate::ir::{Attrs, ExprId, ExprKind, Module, Span, Symbol};
use rustc_hash::FxHashSet as HashSet;

/// `@name` in expression position.
#[derive(Debug)]
pub(crate) struct GlobalUse {
    /// The name without `@`.
    pub name: Symbol,
    /// Where it is used.
    pub span: Span,
}

/// A bare identifier in expression position, parsed as `ExprKind::Op(name)`.
#[derive(Debug)]
pub(crate) struct IdentUse {
    /// The `Op` node to rewrite if the name is a constructor.
    pub expr: ExprId,
    /// The identifier.
    pub name: Symbol,
    /// Where it is used.
    pub span: Span,
    /// Whether the identifier is directly the callee of a call (`Nil()` rather than `Nil`).
    pub called: bool,
}

/// An ADT named in a type (`List[A]`), with the number of type arguments written.
#[derive(Debug)]
pub(crate) struct AdtUse {
    /// The ADT's name.
    pub name: Symbol,
    /// How many type arguments were written.
    pub arity: usize,
    /// The whole application `List[A]`.
    pub span: Span,
}

/// A constructor pattern (`Cons(%h, %t)`), with the number of sub-patterns written.
#[derive(Debug)]
pub(crate) struct CtorPatternUse {
    /// The constructor's name.
    pub name: Symbol,
    /// How many sub-patterns were written.
    pub arity: usize,
    /// The whole pattern.
    pub span: Span,
    /// A variable of this name was in scope, or the name looks like one (lower case).
    pub looks_like_var: bool,
}

/// Everything the parser could not check on the spot.
#[derive(Debug, Default)]
pub(crate) struct Unresolved {
    /// `@name` uses.
    pub globals: Vec<GlobalUse>,
    /// Bare identifiers in expression position, in parse order.
    pub idents: Vec<IdentUse>,
    /// ADT names in types.
    pub adts: Vec<AdtUse>,
    /// Constructor patterns.
    pub ctor_patterns: Vec<CtorPatternUse>,
    /// Globals, types and constructors whose definitions failed: uses of them are not
    /// reported again.
    pub failed: HashSet<Symbol>,
}

/// Dtype names offered as suggestions for misspelt types.
pub(crate) const DTYPE_NAMES: &[&str] = &[
    "float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "bool",
];

/// Checks the recorded uses against `module` and rewrites bare identifiers that name
/// constructors. Returns one diagnostic per unknown name or wrong arity.
pub(crate) fn resolve(module: &mut Module, unresolved: Unresolved) -> Vec<Diagnostic> {
    let Unresolved { globals, idents, adts, ctor_patterns, failed } = unresolved;
    let mut diags = Vec::new();
    for g in globals {
        if module.function(g.name).is_some() || failed.contains(&g.name) {
            continue;
        }
        let name = module.name(g.name);
        let mut d = Diagnostic::error(g.span, format!("unknown global `@{name}`"));
        let candidates = module.functions.iter().map(|f| module.name(f.name));
        if let Some(s) = suggest(&diags, name, candidates) {
            d = d.with_note(format!("help: did you mean `@{s}`?"));
        }
        diags.push(d);
    }
    for a in adts {
        if failed.contains(&a.name) {
            continue;
        }
        let name = module.name(a.name);
        match module.type_def(a.name) {
            None => {
                let mut d = Diagnostic::error(a.span, format!("unknown type `{name}`"));
                let adt_names = module.type_defs.iter().map(|t| module.name(t.name));
                let candidates = adt_names.chain(DTYPE_NAMES.iter().copied()).chain(["Tensor"]);
                if let Some(s) = suggest(&diags, name, candidates) {
                    d = d.with_note(format!("help: did you mean `{s}`?"));
                }
                diags.push(d);
            }
            Some(def) if def.type_params.len() != a.arity => {
                let want = def.type_params.len();
                let msg = format!(
                    "type `{name}` expects {want} type argument{}, found {}",
                    if want == 1 { "" } else { "s" },
                    a.arity
                );
                diags.push(Diagnostic::error(a.span, msg).with_label(def.span, "defined here"));
            }
            Some(_) => {}
        }
    }
    for p in ctor_patterns.into_iter().filter(|p| !failed.contains(&p.name)) {
        let name = module.name(p.name);
        match module.constructor(p.name) {
            None => {
                let mut d = Diagnostic::error(p.span, format!("unknown constructor `{name}` in pattern"));
                if p.looks_like_var {
                    d = d.with_note(format!("help: did you mean the variable `%{name}`?"));
                } else if let Some(s) =
                    suggest(&diags, name, module.constructors.iter().map(|c| module.name(c.name)))
                {
                    d = d.with_note(format!("help: did you mean `{s}`?"));
                }
                diags.push(d);
            }
            Some(c) if c.fields.len() != p.arity => {
                let n = c.fields.len();
                let msg = format!(
                    "constructor `{name}` has {n} field{}, but the pattern has {}",
                    if n == 1 { "" } else { "s" },
                    p.arity
                );
                diags.push(Diagnostic::error(p.span, msg).with_label(c.span, "defined here"));
            }
            Some(_) => {}
        }
    }
    for u in idents {
        let nullary = match module.constructor(u.name) {
            Some(c) => c.fields.is_empty(),
            None => {
                // Operator names are lower case (`add`, `nn.conv2d`); a capitalised name is a
                // constructor that does not exist, reported now rather than as a missing op.
                let name = module.name(u.name);
                if name.starts_with(|c: char| c.is_ascii_uppercase()) && !failed.contains(&u.name) {
                    let mut d = Diagnostic::error(u.span, format!("unknown constructor `{name}`"));
                    let constructors = module.constructors.iter().map(|c| module.name(c.name));
                    if let Some(s) = suggest(&diags, name, constructors) {
                        d = d.with_note(format!("help: did you mean `{s}`?"));
                    }
                    diags.push(d);
                }
                continue;
            }
        };
        let ctor = ExprKind::Constructor(u.name);
        if nullary && !u.called {
            let callee = module.add_expr(ctor, u.span);
            module.exprs[u.expr.index()].kind =
                ExprKind::Call { callee, args: vec![], attrs: Attrs::default() };
        } else {
            module.exprs[u.expr.index()].kind = ctor;
        }
    }
    diags
}

/// The "did you mean" of an unknown name, while the stage has reported fewer than
/// [`MAX_SHOWN`] diagnostics: later ones would not be shown, and skipping them keeps a file
/// of many unknown names from costing errors × definitions.
fn suggest<'a>(
    diags: &[Diagnostic],
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    (diags.len() < MAX_SHOWN).then(|| closest(name, candidates)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_dtypes() {
        assert_eq!(closest("flaot32", DTYPE_NAMES.iter().copied()), Some("float32"));
    }
}
