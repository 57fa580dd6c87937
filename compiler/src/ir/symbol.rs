//! Interned names: comparing two names is comparing two integers.

use rustc_hash::FxHashMap as HashMap;

/// An interned string (a name without its sigil: `x` for `%x`, `map` for `@map`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Symbol(pub u32);

/// The table of interned strings of a module.
#[derive(Default, Debug, Clone)]
pub struct Interner {
    names: Vec<Box<str>>,
    index: HashMap<Box<str>, Symbol>,
}

impl Interner {
    /// Returns the symbol for `name`, adding it if it is new.
    pub fn intern(&mut self, name: &str) -> Symbol {
        if let Some(&s) = self.index.get(name) {
            return s;
        }
        let s = Symbol(self.names.len() as u32);
        self.names.push(name.into());
        self.index.insert(name.into(), s);
        s
    }

    /// The symbol for `name`, if it was ever interned.
    pub fn get(&self, name: &str) -> Option<Symbol> {
        self.index.get(name).copied()
    }

    /// The text of a symbol.
    pub fn resolve(&self, s: Symbol) -> &str {
        &self.names[s.0 as usize]
    }
}
