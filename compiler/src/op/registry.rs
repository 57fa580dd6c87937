//! The table of registered operators.

use super::{AttrReader, CanonicalizeFn, ComputeFn, OpPattern, ProjectFn, Relation, ScalarForm};
use relay_devices::Tensor;
use rustc_hash::FxHashMap as HashMap;

/// Runs operator `op` once on tensors, with a call's attributes, returning its outputs (one,
/// or a tuple's fields): the reference kernels, which live above the compiler (in stdlib),
/// for compile-time evaluation (Relay-level `FoldConstant`). A tuple input (`concatenate`'s)
/// is passed as its fields.
///
/// # Errors
/// Attributes the operator rejects, or what its shape function or kernel reports.
pub type Evaluator = fn(op: &str, attrs: &AttrReader, inputs: &[&Tensor]) -> Result<Vec<Tensor>, String>;

/// Index of an operator in an [`OpRegistry`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpId(pub u32);

/// One operator's compile-time facets.
#[derive(Clone, Debug)]
pub struct OpDef {
    /// TVM's name: `add`, `nn.conv2d`, ...
    pub name: &'static str,
    /// Number of value inputs (a tuple input such as `concatenate`'s counts as one).
    pub num_inputs: usize,
    /// Accepted keyword attributes (TVM's attribute names); any other is an error.
    pub attrs: &'static [&'static str],
    /// The type relation: output type from input types and attributes (paper §3.2).
    pub relation: Relation,
    /// Fusion pattern kind.
    pub pattern: OpPattern,
    /// The compute rule over kir, for fused kernels; `None`: reference kernel only.
    pub compute: Option<ComputeFn>,
    /// The canonical form (TVM's `FTVMQnnCanonicalize`): the call rewritten into ordinary
    /// operators by the `QnnCanonicalize` pass; `None`: the call stays.
    pub canonicalize: Option<CanonicalizeFn>,
    /// The layout rewrite (TVM's `FTVMAlterOpLayout`): the call rewritten by the
    /// `AlterOpLayout` pass into operators this backend computes faster, with a canonical
    /// form's signature; `None`: the call stays.
    pub alter_op_layout: Option<CanonicalizeFn>,
    /// The static form (TVM's `DynamicToStatic`): a `dyn.*` call whose shape operands are
    /// constants rewritten into its static operator by that pass; `None`: the call stays.
    pub to_static: Option<CanonicalizeFn>,
    /// For operators returning a tuple: each field as a single-output call.
    pub project: Option<ProjectFn>,
    /// The unboxed VM instruction of a call on 0-d operands; `None`: a kernel call.
    pub scalar: Option<ScalarForm>,
    /// One line for `--help`-style listings.
    pub doc: &'static str,
}

/// Every operator known to the compiler, by name.
#[derive(Clone, Debug, Default)]
pub struct OpRegistry {
    ops: Vec<OpDef>,
    index: HashMap<&'static str, OpId>,
    evaluator: Option<Evaluator>,
}

impl OpRegistry {
    /// Adds an operator. Registering a name twice is a bug in the operator library, so it
    /// replaces nothing and returns the first registration's id as an error.
    pub fn register(&mut self, def: OpDef) -> Result<OpId, OpId> {
        if let Some(&id) = self.index.get(def.name) {
            return Err(id);
        }
        let id = OpId(self.ops.len() as u32);
        self.index.insert(def.name, id);
        self.ops.push(def);
        Ok(id)
    }

    /// Installs the evaluator of every operator (the library's reference kernels).
    pub fn set_evaluator(&mut self, evaluator: Evaluator) {
        self.evaluator = Some(evaluator);
    }

    /// How to run operators at compile time; `None` when the registry was built without
    /// kernels (then nothing is folded at Relay level).
    pub fn evaluator(&self) -> Option<Evaluator> {
        self.evaluator
    }

    /// The operator named `name`.
    pub fn lookup(&self, name: &str) -> Option<OpId> {
        self.index.get(name).copied()
    }

    /// The definition of operator `id`.
    pub fn get(&self, id: OpId) -> &OpDef {
        &self.ops[id.0 as usize]
    }

    /// All operators in registration order.
    pub fn iter(&self) -> impl Iterator<Item = (OpId, &OpDef)> {
        self.ops.iter().enumerate().map(|(i, d)| (OpId(i as u32), d))
    }

    /// The registered operator closest to `name` (for "did you mean" notes; see
    /// [`crate::diagnostics::suggest::closest`]).
    pub fn similar(&self, name: &str) -> Option<&'static str> {
        crate::diagnostics::suggest::closest(name, self.ops.iter().map(|d| d.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{RelType, RelationResult};

    fn ident(args: &[RelType], _: &crate::op::AttrReader) -> RelationResult {
        Ok(Some(args[0].clone()))
    }

    fn def(name: &'static str) -> OpDef {
        OpDef {
            name,
            num_inputs: 1,
            attrs: &[],
            relation: ident,
            pattern: OpPattern::ElemWise,
            compute: None,
            canonicalize: None,
            alter_op_layout: None,
            to_static: None,
            project: None,
            scalar: None,
            doc: "",
        }
    }

    #[test]
    fn lookup_and_duplicates() {
        let mut r = OpRegistry::default();
        let a = r.register(def("exp")).unwrap();
        assert_eq!(r.register(def("exp")), Err(a));
        assert_eq!(r.lookup("exp"), Some(a));
        assert_eq!(r.lookup("log"), None);
        r.register(def("nn.conv2d")).unwrap();
        assert_eq!(r.similar("nn.conv2"), Some("nn.conv2d"));
        assert_eq!(r.similar("tanh"), None);
    }
}
