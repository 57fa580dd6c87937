//! The reference interpreter (TVM's "debug" executor, `relay-vm run --executor interp`): it
//! evaluates the type-checked Relay IR directly, before any lowering pass, so it is the
//! specification the compiled path is checked against. Closures capture their free variables,
//! constructors and tuples are VM ADT values, `match` tries arms in order, references are
//! cells, operators run on the stdlib's reference kernels. Values in and out are VM
//! [`Value`]s, so [`crate::json`] and [`crate::text`] read and print them against
//! [`Interpreter::signature`] as they do a compiled program's.
//!
//! ```
//! let interp = relay::interp::Interpreter::compile("t.relay", "def @main(%n: int32) { %n * 2 }").unwrap();
//! let six = interp.invoke("main", vec![relay::scalar(3i32)]).unwrap();
//! let f = interp.function("main").unwrap();
//! assert_eq!(relay::text::to_text(interp.signature(), &f.ret_type, &six).unwrap(), "6");
//! ```

mod callables;
mod machine;
mod ops;
mod pattern;

use crate::{Checked, Error};
use callables::{Callable, Callables};
use relay_compiler::codegen::{adt_infos, constant_tensor, value_type};
use relay_compiler::ir::{Module, TypeKind};
use relay_compiler::pass::children;
use relay_runtime::{Executable, Value, ValueType, VmConfig, VmFunction};
use std::fmt;

/// A run-time fault of the interpreter (a kernel error, a `match?` without a matching arm,
/// recursion past the limit), with the Relay call stack where it happened.
#[derive(Debug, Clone, thiserror::Error)]
pub struct Fault {
    /// What went wrong.
    pub message: String,
    /// The functions being called, innermost first (`fn` literals by the `let` variable they
    /// are bound to); calls in tail position replace their caller, as in the VM.
    pub stack: Vec<String>,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.stack.first() {
            Some(inner) => write!(f, "trap in `{inner}`: {}", self.message)?,
            None => write!(f, "trap: {}", self.message)?,
        }
        // One line per call, innermost first, as the VM's traps print them (which add the
        // source position of each frame's expression).
        if self.stack.len() > 1 {
            for name in &self.stack {
                let sigil = if name.starts_with('%') { "" } else { "@" };
                write!(f, "\n  at {sigil}{name}")?;
            }
        }
        Ok(())
    }
}

/// A type-checked program ready to be interpreted.
pub struct Interpreter {
    checked: Checked,
    callables: Callables,
    /// The metadata constants as values.
    constants: Vec<Value>,
    /// Whether each expression node has several parents (and so is evaluated once per
    /// activation and remembered).
    shared: Vec<bool>,
    signature: Executable,
    max_call_depth: usize,
}

impl fmt::Debug for Interpreter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interpreter").field("functions", &self.callables.globals).finish()
    }
}

impl Interpreter {
    /// Parses and type-checks Relay source `source` (shown as `name` in diagnostics) with the
    /// prelude, for interpretation.
    ///
    /// # Errors
    /// [`Error::Compile`] with every syntax, name and type error.
    pub fn compile(name: &str, source: &str) -> Result<Interpreter, Error> {
        Interpreter::new(crate::check(name, source)?)
    }

    /// An interpreter of `checked`. Runs have the VM's default recursion limit.
    ///
    /// # Errors
    /// [`Error::Input`] when a metadata constant's data does not fit its dtype and shape.
    pub fn new(checked: Checked) -> Result<Interpreter, Error> {
        let m = &checked.module;
        let callables = Callables::new(m);
        let constants = m
            .constants
            .iter()
            .enumerate()
            .map(|(i, c)| {
                constant_tensor(c).map(Value::from_tensor).map_err(|e| format!("constant #{i}: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(Error::Input)?;
        let signature = signature(&checked, &callables);
        Ok(Interpreter {
            shared: shared_nodes(m),
            callables,
            constants,
            signature,
            checked,
            max_call_depth: VmConfig::default().max_call_depth,
        })
    }

    /// The same interpreter with runs limited to `depth` nested calls in progress (calls in
    /// tail position do not count); deeper recursion is a [`Fault`].
    pub fn with_max_call_depth(mut self, depth: usize) -> Interpreter {
        self.max_call_depth = depth;
        self
    }

    /// The program's types in the form a compiled [`Executable`] records them, without code:
    /// one function per global (first, in definition order), `fn` literal and constructor
    /// with fields, and every ADT. A function value's `func` indexes its functions, so
    /// [`crate::json`] and [`crate::text`] convert the interpreter's values with it.
    pub fn signature(&self) -> &Executable {
        &self.signature
    }

    /// The global function named `name` (a leading `@` is ignored), with its types.
    ///
    /// # Errors
    /// [`Error::Input`] when there is none.
    pub fn function(&self, name: &str) -> Result<&VmFunction, Error> {
        crate::typed::function(&self.signature.functions[..self.callables.globals], name)
    }

    /// Calls global function `name` on `args`, after checking them against its parameter
    /// types as [`crate::Program::invoke`] does.
    ///
    /// # Errors
    /// [`Error::Input`] for an unknown function or an argument that does not fit;
    /// [`Error::Fault`] for a run-time fault.
    pub fn invoke(&self, name: &str, args: Vec<Value>) -> Result<Value, Error> {
        let f = self.function(name)?;
        crate::typed::check_arguments(&self.signature, f, &args)?;
        let func = self.signature.function_index(&f.name).ok_or_else(|| Error::Input(f.name.clone()))?;
        let callee = Value::Closure(std::sync::Arc::new(relay_runtime::ClosureValue {
            func: func as u32,
            captured: Default::default(),
        }));
        Ok(machine::Machine::new(self).run(callee, args)?)
    }
}

/// The [`Interpreter::signature`] of `checked`.
fn signature(checked: &Checked, callables: &Callables) -> Executable {
    let m = &checked.module;
    let ty =
        |t: Option<relay_compiler::ir::TypeId>| t.map_or(ValueType::Param("_".into()), |t| value_type(m, t));
    let functions = callables
        .list
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let name = callables.name(i as u32).to_string();
            match c {
                Callable::Function { params, body, .. } => {
                    let (param_types, ret_type) = match i < callables.globals {
                        true => global_type(checked, m.functions[i].name),
                        false => (
                            params.iter().map(|&p| ty(checked.types.var(p))).collect(),
                            ty(checked.types.expr(*body)),
                        ),
                    };
                    VmFunction {
                        name,
                        source: String::new(),
                        param_names: params.iter().map(|&p| m.name(m.var(p).name).to_string()).collect(),
                        param_types,
                        ret_type,
                        num_regs: 0,
                        code: vec![],
                        spans: relay_runtime::SpanTable::default(),
                    }
                }
                Callable::Constructor { arity, .. } => VmFunction {
                    name,
                    source: String::new(),
                    param_names: (0..*arity).map(|k| format!("field{k}")).collect(),
                    param_types: vec![ValueType::Param("_".into()); *arity],
                    ret_type: ValueType::Param("_".into()),
                    num_regs: 0,
                    code: vec![],
                    spans: relay_runtime::SpanTable::default(),
                },
            }
        })
        .collect();
    Executable { functions, adts: adt_infos(m), ..Executable::default() }
}

/// The parameter and result types of global `name`, from its inferred function type.
fn global_type(checked: &Checked, name: relay_compiler::ir::Symbol) -> (Vec<ValueType>, ValueType) {
    let m = &checked.module;
    match checked.types.globals.get(&name).map(|&t| m.types.kind(t)) {
        Some(TypeKind::Func { params, ret, .. }) => {
            (params.iter().map(|&p| value_type(m, p)).collect(), value_type(m, *ret))
        }
        _ => (vec![], ValueType::Param("_".into())),
    }
}

/// For each expression node, whether more than one node or function refers to it.
fn shared_nodes(m: &Module) -> Vec<bool> {
    let mut parents = vec![0u8; m.exprs.len()];
    let roots = m.functions.iter().map(|g| g.func.body);
    let children = m.exprs.iter().flat_map(|e| children(&e.kind).into_iter().map(|(c, _)| c));
    for e in roots.chain(children) {
        if let Some(p) = parents.get_mut(e.index()) {
            *p = p.saturating_add(1);
        }
    }
    // Atoms are looked up, not computed: remembering them would gain nothing.
    parents.iter().zip(&m.exprs).map(|(&p, e)| p > 1 && !e.kind.is_atom()).collect()
}
