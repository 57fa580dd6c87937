//! The pass manager: runs a sequence of registered passes ([`super::registry`]), re-inferring
//! types after each (inference is the verifier: a pass that breaks typing fails at once, with
//! the diagnostics), and reports each pass to an [`Instrument`] (`relay-vm opt`'s
//! `--print-after`, `--time-passes`).

use super::registry::{lookup, PassInfo, PASSES};
use super::util::walk::preorder;
use super::{FuseOptions, InlineOptions};
use crate::diagnostics::CompileError;
use crate::ir::Module;
use crate::op::OpRegistry;
use crate::ty::{infer_types, TypeMap};
use std::collections::HashSet;
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
    /// Pass `pass` took `elapsed` (its inference afterwards not counted) and left `module`.
    fn after(&mut self, pass: &PassInfo, module: &Module, elapsed: Duration);
}

/// An [`Instrument`] that does nothing.
pub struct Silent;

impl Instrument for Silent {
    fn after(&mut self, _: &PassInfo, _: &Module, _: Duration) {}
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

/// Runs `passes` in order on `module`: types are inferred first and again after each pass,
/// and `instrument` hears of each. Returns the types of the final module.
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
        let start = Instant::now();
        (pass.run)(module, &types, cx)?;
        let elapsed = start.elapsed();
        types = infer_types(module, cx.ops)?;
        instrument.after(pass, module, elapsed);
    }
    Ok(types)
}

/// The expression nodes reachable from the module's global functions (each shared node
/// once): the size `--time-passes` reports.
pub fn node_count(m: &Module) -> usize {
    let mut seen = HashSet::new();
    for f in &m.functions {
        seen.extend(preorder(m, f.func.body, |_| true));
    }
    seen.len()
}
