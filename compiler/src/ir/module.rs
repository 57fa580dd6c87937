//! A module: global functions, ADT definitions, metadata constants and the arenas they use.

use super::{
    Attrs, Expr, ExprId, ExprKind, Function, Interner, PatId, Pattern, SourceMap, Span, Symbol, TypeId,
    TypeInterner, TypeParamDecl, TypeParamId, VarDecl, VarId,
};
use relay_devices::DType;
use rustc_hash::FxHashMap as HashMap;

/// `def @name[...](...) { ... }`.
#[derive(Clone, Debug)]
pub struct GlobalFunction {
    /// The name without `@`.
    pub name: Symbol,
    /// The function.
    pub func: Function,
    /// The span of the name in the `def`.
    pub span: Span,
}

/// `type Name[A] { Ctor(A, ...), ... }` or `extern type Name[A]`.
#[derive(Clone, Debug)]
pub struct TypeDef {
    /// The ADT's name.
    pub name: Symbol,
    /// Its type parameters.
    pub type_params: Vec<TypeParamId>,
    /// Its constructors, in tag order (empty for `extern type`).
    pub constructors: Vec<Symbol>,
    /// `extern type`: an opaque type with no constructors.
    pub is_extern: bool,
    /// The span of the name.
    pub span: Span,
}

/// One constructor of an ADT.
#[derive(Clone, Debug)]
pub struct ConstructorDef {
    /// The constructor's name.
    pub name: Symbol,
    /// The ADT it builds.
    pub adt: Symbol,
    /// Field types, which may mention the ADT's type parameters.
    pub fields: Vec<TypeId>,
    /// Its index among the ADT's constructors (the runtime tag).
    pub tag: u32,
    /// The span of the name.
    pub span: Span,
}

/// A tensor constant from the `#[metadata]` section (`meta[relay.Constant][i]`).
#[derive(Clone, Debug, PartialEq)]
pub struct ConstantData {
    /// Element type.
    pub dtype: DType,
    /// Shape; the element count is the product.
    pub shape: Vec<i64>,
    /// Row-major elements, widened to `f64` (integers up to 2^53 and all float32 values are
    /// exact).
    pub data: Vec<f64>,
}

/// A Relay module (TVM's `IRModule`).
#[derive(Clone, Debug, Default)]
pub struct Module {
    /// Interned names.
    pub symbols: Interner,
    /// Hash-consed types.
    pub types: TypeInterner,
    /// The expression arena.
    pub exprs: Vec<Expr>,
    /// The variable arena.
    pub vars: Vec<VarDecl>,
    /// The pattern arena.
    pub patterns: Vec<Pattern>,
    /// The type-parameter arena.
    pub type_params: Vec<TypeParamDecl>,
    /// Global functions in definition order.
    pub functions: Vec<GlobalFunction>,
    /// ADTs in definition order.
    pub type_defs: Vec<TypeDef>,
    /// Constructors of all ADTs.
    pub constructors: Vec<ConstructorDef>,
    /// Tensor constants of the `#[metadata]` section.
    pub constants: Vec<ConstantData>,
    /// The source files the module was parsed from.
    pub sources: SourceMap,
    function_index: HashMap<Symbol, usize>,
    type_def_index: HashMap<Symbol, usize>,
    constructor_index: HashMap<Symbol, usize>,
}

impl Module {
    /// Adds an expression node.
    pub fn add_expr(&mut self, kind: ExprKind, span: Span) -> ExprId {
        self.exprs.push(Expr { kind, span });
        ExprId(self.exprs.len() as u32 - 1)
    }

    /// Adds a variable.
    pub fn add_var(&mut self, name: Symbol, ty: Option<TypeId>, span: Span) -> VarId {
        self.vars.push(VarDecl { name, ty, span });
        VarId(self.vars.len() as u32 - 1)
    }

    /// Adds a pattern node.
    pub fn add_pattern(&mut self, pattern: Pattern) -> PatId {
        self.patterns.push(pattern);
        PatId(self.patterns.len() as u32 - 1)
    }

    /// Adds a type parameter.
    pub fn add_type_param(&mut self, name: Symbol, span: Span) -> TypeParamId {
        self.type_params.push(TypeParamDecl { name, span });
        TypeParamId(self.type_params.len() as u32 - 1)
    }

    /// The expression node `id`.
    pub fn expr(&self, id: ExprId) -> &Expr {
        &self.exprs[id.index()]
    }

    /// The variable `id`.
    pub fn var(&self, id: VarId) -> &VarDecl {
        &self.vars[id.index()]
    }

    /// The pattern node `id`.
    pub fn pattern(&self, id: PatId) -> &Pattern {
        &self.patterns[id.index()]
    }

    /// The text of a name.
    pub fn name(&self, s: Symbol) -> &str {
        self.symbols.resolve(s)
    }

    /// Adds a global function. Returns the existing definition's span if the name is taken.
    pub fn add_function(&mut self, f: GlobalFunction) -> Result<(), Span> {
        if let Some(&i) = self.function_index.get(&f.name) {
            return Err(self.functions[i].span);
        }
        self.function_index.insert(f.name, self.functions.len());
        self.functions.push(f);
        Ok(())
    }

    /// Adds an ADT and its constructors. Returns the span of an existing ADT or constructor
    /// with a clashing name, adding nothing.
    pub fn add_type_def(&mut self, def: TypeDef, ctors: Vec<ConstructorDef>) -> Result<(), Span> {
        if let Some(&i) = self.type_def_index.get(&def.name) {
            return Err(self.type_defs[i].span);
        }
        for (k, c) in ctors.iter().enumerate() {
            if let Some(&i) = self.constructor_index.get(&c.name) {
                return Err(self.constructors[i].span);
            }
            if let Some(prev) = ctors[..k].iter().find(|p| p.name == c.name) {
                return Err(prev.span);
            }
        }
        self.type_def_index.insert(def.name, self.type_defs.len());
        self.type_defs.push(def);
        for c in ctors {
            self.constructor_index.insert(c.name, self.constructors.len());
            self.constructors.push(c);
        }
        Ok(())
    }

    /// Keeps the global functions for which `keep` holds, in definition order.
    pub fn retain_functions(&mut self, keep: impl Fn(&GlobalFunction) -> bool) {
        self.functions.retain(keep);
        self.function_index = self.functions.iter().enumerate().map(|(i, f)| (f.name, i)).collect();
    }

    /// The global function named `name`.
    pub fn function(&self, name: Symbol) -> Option<&GlobalFunction> {
        self.function_index.get(&name).map(|&i| &self.functions[i])
    }

    /// The ADT named `name`.
    pub fn type_def(&self, name: Symbol) -> Option<&TypeDef> {
        self.type_def_index.get(&name).map(|&i| &self.type_defs[i])
    }

    /// The constructor named `name`.
    pub fn constructor(&self, name: Symbol) -> Option<&ConstructorDef> {
        self.constructor_index.get(&name).map(|&i| &self.constructors[i])
    }

    /// Looks up a global function by its text name (without `@`).
    pub fn function_by_name(&self, name: &str) -> Option<&GlobalFunction> {
        self.symbols.get(name).and_then(|s| self.function(s))
    }

    /// An attribute list's value for `key`, looking the key up by text.
    pub fn attr<'a>(&self, attrs: &'a Attrs, key: &str) -> Option<&'a super::AttrValue> {
        self.symbols.get(key).and_then(|k| attrs.get(k))
    }
}
