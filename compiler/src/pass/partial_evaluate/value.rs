//! The static-value domain of the partial evaluator (TVM's `PStatic`): what is known at
//! compile time about a value, beside the residual atom that names it at run time.

use crate::ir::{ExprId, ExprKind, Module, Symbol, VarId};
use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

/// A partially static value: the residual atom (a variable, global, constructor, operator,
/// literal or constant) that holds it at run time, and what is known of it now.
///
/// The atom is bound in the residual block where the value was made, so static knowledge
/// travels only within that block and the blocks nested in it: a dynamic `if`/`match`
/// gives back a value with nothing known ([`PValue::dynamic`]).
#[derive(Clone, Debug)]
pub(super) struct PValue {
    /// The residual expression naming the value.
    pub atom: ExprId,
    /// What is known of it; `None`: nothing (a dynamic value).
    pub known: Option<Rc<Static>>,
}

impl PValue {
    /// A value known only by its atom.
    pub fn dynamic(atom: ExprId) -> Self {
        PValue { atom, known: None }
    }

    /// A value whose structure `known` is known.
    pub fn known(atom: ExprId, known: Static) -> Self {
        PValue { atom, known: Some(Rc::new(known)) }
    }

    /// The atom to write at one more place in residual code: a global, constructor or
    /// operator gets a node of its own, as each use may instantiate its type differently
    /// (inference gives each node one type).
    pub fn place(&self, m: &mut Module) -> ExprId {
        let node = m.expr(self.atom);
        match node.kind {
            ExprKind::Global(_) | ExprKind::Constructor(_) | ExprKind::Op(_) => {
                let (kind, span) = (node.kind.clone(), node.span);
                m.add_expr(kind, span)
            }
            _ => self.atom,
        }
    }

    /// What is known of the value, if anything.
    pub fn get(&self) -> Option<&Static> {
        self.known.as_deref()
    }
}

/// The known part of a value.
#[derive(Debug)]
pub(super) enum Static {
    /// A tensor constant: the atom is a literal or a metadata constant.
    Tensor,
    /// A tuple whose fields are these values.
    Tuple(Vec<PValue>),
    /// A constructor value `ctor(fields)`.
    Adt { ctor: Symbol, fields: Vec<PValue> },
    /// A closure whose code and captured values are known.
    Closure(Rc<Closure>),
    /// The global function `@name`.
    Global(Symbol),
    /// The reference cell made by one evaluation of a `ref(e)`.
    Ref(CellId),
}

/// A known closure: a `fn` literal of the program and the values of its free variables.
#[derive(Debug)]
pub(super) struct Closure {
    /// The `fn` literal node.
    pub func: ExprId,
    /// The values of the literal's free variables where it was evaluated.
    pub captures: HashMap<VarId, PValue>,
    /// The variable of `let %f = fn ...` when the literal may call itself through it.
    pub self_var: Option<VarId>,
}

/// A reference cell known to the evaluator (one per evaluated `ref(e)`).
pub(super) type CellId = usize;

/// What the evaluator knows of the contents of its cells at the current program point.
/// Forgotten ([`Store::forget`]) wherever unknown code may have run: a call of an unknown
/// function, a write through an unknown reference, the join after a dynamic branch.
#[derive(Clone, Debug, Default)]
pub(super) struct Store {
    cells: HashMap<CellId, PValue>,
    next: CellId,
}

impl Store {
    /// A new cell holding `value`.
    pub fn alloc(&mut self, value: PValue) -> CellId {
        let id = self.next;
        self.next += 1;
        self.cells.insert(id, value);
        id
    }

    /// The contents of `cell`, if known.
    pub fn read(&self, cell: CellId) -> Option<PValue> {
        self.cells.get(&cell).cloned()
    }

    /// `cell` now holds `value`.
    pub fn write(&mut self, cell: CellId, value: PValue) {
        self.cells.insert(cell, value);
    }

    /// Forgets every cell's contents (ids stay unique).
    pub fn forget(&mut self) {
        self.cells.clear();
    }

    /// Goes back to what `saved` knew (new cell ids keep counting up, so none is reused),
    /// after a residual block evaluated with other knowledge.
    pub fn restore(&mut self, saved: Store) {
        let next = self.next;
        *self = saved;
        self.next = next;
    }
}
