//! The operator library: every operator, by family, in one list ([`operators`]) from which the
//! registry ([`register_all`]), the reference-kernel table ([`crate::reference_ops`]), the
//! fusion test cases and `relay-vm ops` are built. TVM's names, so TVM programs run
//! unchanged.
//!
//! Every operator is an [`Operator`](crate::operator::Operator) item: elementwise, broadcast,
//! reductions, scans, the transforms (`transform/`), the nn operators (`nn/`),
//! gather/scatter, tile/repeat/reverse, sorting, creation, `trilu`, `nn.prelu`, the sub-pixel
//! and the normalisation operators, `einsum`, the quantized operators (`qnn/`), and the
//! operators whose result shapes depend on input values: `argwhere` and the `dyn.*` operators
//! (`dynamic/`).

mod activation;
mod adv_index;
mod algorithm;
mod argwhere;
mod broadcast;
mod create;
pub mod dynamic;
pub(crate) mod einsum;
mod elemwise;
mod fast_math;
mod gather_scatter;
pub(crate) mod image;
pub(crate) mod index;
mod nn;
mod normalization;
mod qnn;
pub(crate) mod reduce;
mod reinterpret;
mod replicate;
mod scan;
mod shape;
mod sub_pixel;
pub(crate) mod transform;
mod triangle;
mod unique;
mod vision;

pub use activation::*;
pub use adv_index::*;
pub use algorithm::*;
pub use argwhere::*;
pub use broadcast::*;
pub use create::*;
pub use einsum::*;
pub use elemwise::*;
pub use gather_scatter::*;
pub use image::*;
pub use nn::*;
pub use normalization::*;
pub use qnn::*;
pub use reduce::*;
pub use reinterpret::*;
pub use replicate::*;
pub use scan::*;
pub use sub_pixel::*;
pub use transform::*;
pub use triangle::*;
pub use unique::*;
pub use vision::*;

use crate::operator::OpEntry;
use relay_compiler::op::OpRegistry;

/// Every family's operators, in listing order.
const FAMILIES: [&[OpEntry]; 38] = [
    elemwise::UNARY,
    elemwise::PREDICATES,
    &[OpEntry::of::<Cast>()],
    broadcast::BINARY,
    &[OpEntry::of::<Where>()],
    reduce::REDUCE,
    reduce::MOMENTS,
    scan::SCAN,
    transform::TRANSFORM,
    nn::DENSE,
    nn::CONV,
    nn::WINOGRAD,
    nn::POOL,
    nn::NORM,
    nn::SOFTMAX,
    nn::DROPOUT,
    gather_scatter::GATHER_SCATTER,
    replicate::REPLICATE,
    algorithm::ALGORITHM,
    create::CREATE,
    triangle::TRIANGLE,
    activation::ACTIVATION,
    sub_pixel::SUB_PIXEL,
    normalization::NORMALIZATION,
    image::IMAGE,
    nn::UPSAMPLING,
    nn::CONV_TRANSPOSE,
    nn::DEFORMABLE,
    nn::LOSS,
    qnn::QNN,
    nn::SPACE_BATCH,
    einsum::EINSUM,
    argwhere::ARGWHERE,
    unique::UNIQUE,
    dynamic::DYNAMIC,
    adv_index::ADV_INDEX,
    reinterpret::REINTERPRET,
    vision::VISION,
];

/// Every operator of the library, family by family.
pub fn operators() -> impl Iterator<Item = &'static OpEntry> {
    FAMILIES.into_iter().flatten()
}

/// The operator named `name` (TVM's name), every facet of it: how a run-time caller that
/// holds only a name (an executable's kernel descriptor, the interpreter, compile-time
/// folding) reaches its reference kernel.
pub fn operator(name: &str) -> Option<&'static OpEntry> {
    operators().find(|e| e.def.name == name)
}

/// Registers every operator of the library into `registry`.
///
/// # Errors
/// The name of an operator that is already registered.
pub fn register_all(registry: &mut OpRegistry) -> Result<(), &'static str> {
    for entry in operators() {
        registry.register(entry.def.clone()).map_err(|_| entry.def.name)?;
    }
    registry.set_evaluator(crate::kernels::table::evaluate);
    Ok(())
}

/// A registry holding exactly the library's operators.
pub fn op_registry() -> OpRegistry {
    let mut r = OpRegistry::default();
    // The library's names are distinct (tested below), so registration cannot fail.
    let _ = register_all(&mut r);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_registered() {
        let mut r = OpRegistry::default();
        assert_eq!(register_all(&mut r), Ok(()));
        assert_eq!(r.iter().count(), operators().count());
    }

    #[test]
    fn the_scalar_forms_are_those_of_the_vm() {
        let r = op_registry();
        let scalar = |name| r.lookup(name).and_then(|id| r.get(id).scalar);
        use relay_compiler::op::scalar::{BinOp, UnOp};
        use relay_compiler::op::ScalarForm;
        assert_eq!(scalar("add"), Some(ScalarForm::Bin(BinOp::Add)));
        assert_eq!(scalar("logical_not"), Some(ScalarForm::Un(UnOp::Not)));
        assert_eq!(scalar("cast"), Some(ScalarForm::Cast));
        assert_eq!(scalar("sin"), None);
    }
}
