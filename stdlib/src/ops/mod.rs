//! The operator library: every operator, by family, in one list ([`operators`]) from which the
//! registry ([`register_all`]), the reference-kernel table ([`crate::reference_op`]), the
//! fusion test cases and `relay-vm ops` are built. TVM's names, so TVM programs run
//! unchanged.
//!
//! Every family but nn is made of [`Operator`](crate::operator::Operator) items: elementwise,
//! broadcast, reductions, scans, the transforms (`transform/`), gather/scatter,
//! tile/repeat/reverse, sorting, creation, `trilu`, `nn.prelu`, the sub-pixel and the
//! normalisation operators. The nn operators are still registered the old way (`legacy!`): a
//! relation function of their own next to a separate reference kernel, with the compute rule
//! looked up by name.

mod activation;
mod algorithm;
mod broadcast;
mod create;
mod elemwise;
mod fast_math;
mod gather_scatter;
mod index;
mod nn;
mod normalization;
pub(crate) mod reduce;
mod replicate;
mod scan;
mod shape;
mod sub_pixel;
pub(crate) mod transform;
mod triangle;

pub use activation::*;
pub use algorithm::*;
pub use broadcast::*;
pub use create::*;
pub use elemwise::*;
pub use gather_scatter::*;
pub use normalization::*;
pub use reduce::*;
pub use replicate::*;
pub use scan::*;
pub use sub_pixel::*;
pub use transform::*;
pub use triangle::*;

use crate::operator::OpEntry;
use relay_compiler::op::OpRegistry;

/// Declares an operator registered the old way in one line:
/// `legacy!(Kernel, num_inputs, relation, Pattern, "doc")`. Its name is the kernel's `NAME`
/// (TVM's) and its attribute names those of the kernel's attribute struct, so neither is
/// written twice; its compute rule is filled in by name in [`register_all`].
macro_rules! legacy {
    ($kernel:ty, $inputs:literal, $rel:expr, $pattern:ident, $doc:literal $(,)?) => {
        $crate::operator::OpEntry::legacy(
            relay_compiler::op::OpDef {
                name: <$kernel as $crate::kernels::Kernel>::NAME,
                num_inputs: $inputs,
                attrs: <<$kernel as $crate::kernels::Kernel>::Attrs as $crate::attrs::OpAttrs>::NAMES,
                relation: $rel,
                pattern: relay_compiler::op::OpPattern::$pattern,
                compute: None,
                project: None,
                scalar: None,
                doc: $doc,
            },
            $crate::RefOp::of::<$kernel>(),
        )
    };
}

pub(crate) use legacy;

/// Every family's operators, in listing order.
const FAMILIES: [&[OpEntry]; 18] = [
    elemwise::UNARY,
    elemwise::PREDICATES,
    &[OpEntry::of::<Cast>()],
    broadcast::BINARY,
    &[OpEntry::of::<Where>()],
    reduce::REDUCE,
    reduce::MOMENTS,
    scan::SCAN,
    transform::TRANSFORM,
    nn::NN,
    gather_scatter::GATHER_SCATTER,
    replicate::REPLICATE,
    algorithm::ALGORITHM,
    create::CREATE,
    triangle::TRIANGLE,
    activation::ACTIVATION,
    sub_pixel::SUB_PIXEL,
    normalization::NORMALIZATION,
];

/// Every operator of the library, family by family.
pub fn operators() -> impl Iterator<Item = &'static OpEntry> {
    FAMILIES.into_iter().flatten()
}

/// Registers every operator of the library into `registry`; operators registered the old way
/// get their compute rule by name.
///
/// # Errors
/// The name of an operator that is already registered.
pub fn register_all(registry: &mut OpRegistry) -> Result<(), &'static str> {
    for entry in operators() {
        let mut def = entry.def.clone();
        let name = def.name;
        if def.compute.is_none() {
            def.compute = crate::compute::compute_rule(name);
        }
        registry.register(def).map_err(|_| name)?;
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
