//! Printed names of local variables and type parameters.
//!
//! The printer walks a definition in text order and mirrors how the parser will resolve
//! names: every binder is pushed on a stack per printed name, every use must find its own
//! binder on top. When an inner binder would capture the use of an outer one with the same
//! name, the inner binder is renamed (`%x_1`) — after the fact, which is fine because names
//! are only filled into the text when the whole definition has been walked. Fresh names avoid
//! every string interned in the module, so a rename can never capture anything itself.

use crate::ir::Module;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::hash::Hash;

/// Whether `name` lexes back as one name after `%` (`fc1.weight` and `conv/1` do, `t.0` and
/// `a/` do not).
pub(super) fn is_identifier(name: &str) -> bool {
    !name.is_empty() && crate::syntax::lexer::sigil_name_len(name.as_bytes()) == name.len()
}

/// What [`Scopes::use_id`] found out about a use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Use {
    /// The binder is in scope.
    Bound,
    /// No binder is in scope: the first use of a free variable, now declared at the outer
    /// level (the caller prints `free_var` for it).
    NewFree,
}

/// The binders in scope for one kind of name (variables or type parameters).
pub(super) struct Scopes<'m, Id> {
    module: &'m Module,
    /// Whether an original name may be printed as is.
    valid: fn(&Module, &str) -> bool,
    /// The stem of fresh names for binders whose own name is unusable.
    stem: &'static str,
    /// Binders in scope per printed name, innermost last; `true` marks outer-level entries
    /// (definition parameters and free variables), which sit below every inner binder.
    stacks: HashMap<String, Vec<(Id, bool)>>,
    in_scope: HashSet<Id>,
    printed: HashMap<Id, String>,
    fresh: HashSet<String>,
}

impl<'m, Id: Copy + Eq + Hash> Scopes<'m, Id> {
    /// An empty environment; `valid` decides which original names print unchanged.
    pub(super) fn new(module: &'m Module, valid: fn(&Module, &str) -> bool, stem: &'static str) -> Self {
        Scopes {
            module,
            valid,
            stem,
            stacks: HashMap::default(),
            in_scope: HashSet::default(),
            printed: HashMap::default(),
            fresh: HashSet::default(),
        }
    }

    /// Brings binder `id` (originally called `name`) into scope, innermost.
    pub(super) fn bind(&mut self, id: Id, name: &str) {
        self.push(id, name, false);
    }

    /// Brings a definition parameter into scope at the outer level.
    pub(super) fn bind_outer(&mut self, id: Id, name: &str) {
        self.push(id, name, true);
    }

    fn push(&mut self, id: Id, name: &str, outer: bool) {
        let printed = self.printed_name(id, name);
        self.stacks.entry(printed).or_default().push((id, outer));
        self.in_scope.insert(id);
    }

    /// Ends the scope of binder `id`.
    pub(super) fn unbind(&mut self, id: Id) {
        if !self.in_scope.remove(&id) {
            return;
        }
        if let Some(stack) = self.printed.get(&id).and_then(|p| self.stacks.get_mut(p)) {
            if let Some(i) = stack.iter().rposition(|&(b, _)| b == id) {
                stack.remove(i);
            }
        }
    }

    /// Records a use of `id` (originally called `name`), renaming whatever binder would
    /// capture it.
    pub(super) fn use_id(&mut self, id: Id, name: &str) -> Use {
        let mut found = Use::Bound;
        if !self.in_scope.contains(&id) {
            // A free variable is declared before everything else of the definition body,
            // so it goes below every inner binder, just above the parameters.
            let printed = self.printed_name(id, name);
            let stack = self.stacks.entry(printed).or_default();
            let at = stack.iter().take_while(|&&(_, outer)| outer).count();
            stack.insert(at, (id, true));
            self.in_scope.insert(id);
            found = Use::NewFree;
        }
        loop {
            let stack = self.printed.get(&id).and_then(|p| self.stacks.get(p));
            match stack.and_then(|s| s.last()).map(|&(b, _)| b) {
                Some(b) if b != id => self.rename(b),
                _ => return found,
            }
        }
    }

    /// The printed name of `id`; `name` is its original name, used if `id` was never seen.
    pub(super) fn name<'a>(&'a self, id: Id, name: &'a str) -> &'a str {
        self.printed.get(&id).map_or(name, String::as_str)
    }

    fn printed_name(&mut self, id: Id, name: &str) -> String {
        if let Some(p) = self.printed.get(&id) {
            return p.clone();
        }
        let p = if (self.valid)(self.module, name) { name.to_string() } else { self.fresh_name(self.stem) };
        self.printed.insert(id, p.clone());
        p
    }

    fn rename(&mut self, id: Id) {
        let Some(old) = self.printed.get(&id).cloned() else { return };
        let mut outer = false;
        if let Some(stack) = self.stacks.get_mut(&old) {
            if let Some(i) = stack.iter().rposition(|&(b, _)| b == id) {
                outer = stack.remove(i).1;
            }
        }
        let stem = if (self.valid)(self.module, &old) { old } else { self.stem.to_string() };
        let new = self.fresh_name(&stem);
        self.stacks.entry(new.clone()).or_default().push((id, outer));
        self.printed.insert(id, new);
    }

    fn fresh_name(&mut self, stem: &str) -> String {
        let taken = |s: &Self, c: &str| {
            s.module.symbols.get(c).is_some() || s.fresh.contains(c) || !(s.valid)(s.module, c)
        };
        let name = (1u64..)
            .map(|n| format!("{stem}_{n}"))
            .find(|c| !taken(self, c))
            .unwrap_or_else(|| stem.to_string());
        self.fresh.insert(name.clone());
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert!(is_identifier("x"));
        assert!(is_identifier("_"));
        assert!(is_identifier("x_1"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("0"));
        assert!(is_identifier("a.b"));
        assert!(is_identifier("conv/1"));
        assert!(!is_identifier("a.0"));
        assert!(!is_identifier("a/"));
        assert!(!is_identifier("a b"));
    }

    #[test]
    fn inner_binder_that_captures_is_renamed() {
        let mut m = Module::default();
        m.symbols.intern("x");
        m.symbols.intern("x_1");
        let mut s: Scopes<'_, u32> = Scopes::new(&m, |_, n| is_identifier(n), "v");
        s.bind(0, "x");
        s.bind(1, "x");
        assert_eq!(s.use_id(1, "x"), Use::Bound);
        assert_eq!(s.use_id(0, "x"), Use::Bound);
        // `x_1` is interned, so the fresh name skips it.
        assert_eq!(s.name(1, "x"), "x_2");
        assert_eq!(s.name(0, "x"), "x");
        s.unbind(1);
        assert_eq!(s.use_id(7, "x"), Use::NewFree);
        assert_eq!(s.name(0, "x"), "x_3", "the free variable is declared outside `x`'s binder");
    }

    #[test]
    fn unusable_names_get_a_stem() {
        let m = Module::default();
        let mut s: Scopes<'_, u32> = Scopes::new(&m, |_, n| is_identifier(n), "v");
        s.bind(0, "0bad");
        assert_eq!(s.name(0, "0bad"), "v_1");
    }
}
