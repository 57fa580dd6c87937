//! The operator registry *mechanism*: what an operator is to the compiler (ARCHITECTURE.md §2).
//!
//! Every operator (`add`, `nn.conv2d`, ...) is one [`OpDef`] carrying all its compile-time
//! facets: arity, accepted attributes, type relation, fusion pattern, compute rule,
//! canonical form, projection and scalar form. The operators
//! themselves are registered by the `relay-stdlib` crate; this module only defines the shape of
//! a registration and the registry that holds them.

mod attr_reader;
mod canonicalize;
mod compute;
mod pattern;
mod project;
mod registry;
mod relation;
pub mod scalar;

pub use attr_reader::{describe, AttrReader};
pub use canonicalize::{Builder, CanonicalizeFn};
pub use compute::{
    for_each_index, ComputeFn, ComputeInput, ElemFn, LazyTensor, NestFn, OutType, Sink, TensorDef,
};
pub use pattern::OpPattern;
pub use project::{ProjectFn, ProjectedCall};
pub use registry::{Evaluator, OpDef, OpId, OpRegistry};
pub use relation::{RelType, Relation, RelationResult, TensorType};
pub use scalar::ScalarForm;
