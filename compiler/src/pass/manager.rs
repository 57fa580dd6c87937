//! The pass manager: runs a sequence of registered passes ([`super::registry`]), re-inferring
//! types after each pass that changed the module (inference is the verifier: a pass that
//! breaks typing fails at once, with the diagnostics), and reports each pass to an
//! [`Instrument`] (`relay-vm opt`'s `--print-after`, `--time-passes`).
//!
//! Why not re-infer after every pass: inference is linear but costs as much as a pass, and
//! most passes of the default pipeline leave most programs as they were (a let chain of
//! additions has no batch norm, constant, reshape pair or closure). Skipping those inferences
//! halves the compile time of large programs (issue 17, `benches/scaling.md`).

use super::registry::{lookup, PassInfo, PASSES};
use super::util::walk::preorder;
use super::{FuseOptions, InlineOptions};
use crate::diagnostics::CompileError;
use crate::ir::{Function, Module, Symbol, TypeId};
use crate::op::OpRegistry;
use crate::ty::{infer_types, reinfer_types, TypeMap};
use rustc_hash::FxHashSet as HashSet;
use std::time::{Duration, Instant};

/// What every pass may read besides the module: the operators and the options of the passes
/// that take some.
#[derive(Clone, Copy)]
pub struct PassContext<'a> {
    /// The operator registry (relations, compute rules, the evaluator).
    pub ops: &'a OpRegistry,
    /// Options of `FuseOps`.
    pub fuse: FuseOptions,
    /// Options of `InlineClosures`.
    pub inline: InlineOptions,
    /// The functions callers may invoke (`DeadCodeElimination` removes the globals they do
    /// not reach); empty: every global may be invoked.
    pub entries: &'a [&'a str],
}

/// A registered pass: rewrites the module in place, given the types of the module as it is.
pub type PassFn = fn(&mut Module, &TypeMap, &PassContext) -> Result<(), CompileError>;

/// Told about each pass as it finishes.
pub trait Instrument {
    /// Pass `pass` took `elapsed` and left `module`; the inference after it took `inferred`
    /// (`None`: the pass changed nothing, so there was none).
    fn after(&mut self, pass: &PassInfo, module: &Module, elapsed: Duration, inferred: Option<Duration>);
}

/// An [`Instrument`] that does nothing.
pub struct Silent;

impl Instrument for Silent {
    fn after(&mut self, _: &PassInfo, _: &Module, _: Duration, _: Option<Duration>) {}
}

/// The passes named in `names`, each preceded by the passes it requires (transitively) that
/// are not already earlier in the list.
///
/// # Errors
/// The first name that is not a registered pass, with the list of those that are.
pub fn resolve(names: &[&str]) -> Result<Vec<&'static PassInfo>, String> {
    let mut out: Vec<&'static PassInfo> = vec![];
    for name in names {
        let pass = lookup(name).ok_or_else(|| {
            let known: Vec<&str> = PASSES.iter().map(|p| p.name).collect();
            format!("unknown pass `{name}` (passes: {})", known.join(", "))
        })?;
        push_with_requirements(pass, &mut out);
    }
    Ok(out)
}

/// Appends `pass` after what it requires that `out` lacks. Requirements come earlier in
/// the registry (a unit test checks), so the walk ends.
fn push_with_requirements(pass: &'static PassInfo, out: &mut Vec<&'static PassInfo>) {
    for r in pass.required.iter().filter_map(|r| lookup(r)) {
        if !out.iter().any(|p| p.name == r.name) {
            push_with_requirements(r, out);
        }
    }
    out.push(pass);
}

/// Runs `passes` in order on `module`: types are inferred first and again after each pass
/// that changed the module (its arena lengths, globals or variable annotations differ), and
/// `instrument` hears of each. Returns the types of the final module.
///
/// # Errors
/// The program's type errors (from the first inference), a pass's error, or the diagnostics
/// of an inference after a pass (which means the pass produced an ill-typed program).
pub fn run_passes(
    module: &mut Module,
    passes: &[&PassInfo],
    cx: &PassContext,
    instrument: &mut dyn Instrument,
) -> Result<TypeMap, CompileError> {
    let mut types = infer_types(module, cx.ops)?;
    for pass in passes {
        let before = Revision::of(module);
        let start = Instant::now();
        (pass.run)(module, &types, cx)?;
        let elapsed = start.elapsed();
        let after = Revision::of(module);
        let mut inferred = None;
        if after != before {
            let start = Instant::now();
            types = match after.changed_functions(&before) {
                Some(changed) => {
                    let types = reinfer_types(module, cx.ops, types, &changed)?;
                    if cfg!(debug_assertions) {
                        check_types_agree(
                            module,
                            cx,
                            &types,
                            pass,
                            "re-inferring what it changed disagrees with a whole inference",
                        )?;
                    }
                    types
                }
                None => infer_types(module, cx.ops)?,
            };
            inferred = Some(start.elapsed());
        } else if cfg!(debug_assertions) {
            // Test builds check the premise of the skip: an unchanged revision means
            // unchanged types.
            check_types_agree(module, cx, &types, pass, "changed the module unseen")?;
        }
        instrument.after(pass, module, elapsed, inferred);
    }
    Ok(types)
}

/// A test-build check of the types after `pass`: each expression and variable that a whole
/// inference types has the same type in `types` (which may also hold stale entries for nodes
/// the pass made unreachable, [`reinfer_types`]).
///
/// # Errors
/// The whole inference's diagnostics, where it finds the module ill-typed.
fn check_types_agree(
    module: &mut Module,
    cx: &PassContext,
    types: &TypeMap,
    pass: &PassInfo,
    what: &str,
) -> Result<(), CompileError> {
    let whole = infer_types(module, cx.ops)?;
    let agrees = |whole: &[Option<TypeId>], part: &[Option<TypeId>]| {
        whole.len() == part.len() && whole.iter().zip(part).all(|(w, p)| w.is_none() || w == p)
    };
    assert!(agrees(&whole.exprs, &types.exprs) && agrees(&whole.vars, &types.vars), "{} {what}", pass.name);
    Ok(())
}

/// What inference reads of a module, in a form cheap to compare: whether a pass changed it.
///
/// Passes never edit an expression node in place: a rewrite adds new nodes and points the
/// functions at them ([`rewrite`](super::util::rewrite)), so the arena lengths and the
/// global functions (parameters, body, attributes) show every structural change. Variable
/// annotations are the one thing passes do edit in place (specialising a parameter's type),
/// so they are compared whole. Comparing costs a copy of one id per variable and global,
/// far less than an inference.
#[derive(PartialEq)]
pub(crate) struct Revision {
    exprs: usize,
    patterns: usize,
    constants: usize,
    type_defs: usize,
    functions: Vec<(Symbol, Function)>,
    var_types: Vec<Option<TypeId>>,
}

impl Revision {
    /// The revision of `m` as it is now.
    pub(crate) fn of(m: &Module) -> Revision {
        Revision {
            exprs: m.exprs.len(),
            patterns: m.patterns.len(),
            constants: m.constants.len(),
            type_defs: m.type_defs.len(),
            functions: m.functions.iter().map(|f| (f.name, f.func.clone())).collect(),
            var_types: m.vars.iter().map(|v| v.ty).collect(),
        }
    }

    /// The globals of `self` that are new or differ from those of `before`, where only
    /// functions changed: `None` if a type definition was added or a variable that existed
    /// before changed its annotation (then every function may type differently).
    fn changed_functions(&self, before: &Revision) -> Option<HashSet<Symbol>> {
        let old_vars = before.var_types.len();
        if self.type_defs != before.type_defs
            || self.var_types.len() < old_vars
            || self.var_types[..old_vars] != before.var_types[..]
        {
            return None;
        }
        let old: rustc_hash::FxHashMap<Symbol, &Function> =
            before.functions.iter().map(|(g, f)| (*g, f)).collect();
        Some(self.functions.iter().filter(|(g, f)| old.get(g) != Some(&f)).map(|(g, _)| *g).collect())
    }
}

/// The expression nodes reachable from the module's global functions (each shared node
/// once): the size `--time-passes` reports.
pub fn node_count(m: &Module) -> usize {
    let mut seen = HashSet::default();
    for f in &m.functions {
        seen.extend(preorder(m, f.func.body, |_| true));
    }
    seen.len()
}
