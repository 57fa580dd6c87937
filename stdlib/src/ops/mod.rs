//! Operator registrations: one [`OpDef`] per operator, grouped by family, each with TVM's name
//! so TVM programs run unchanged. The accepted attribute names are not listed here: they come
//! from the operator's typed attribute struct (`crate::attrs`), through its reference kernel,
//! so the type checker and the kernel can never disagree about them.

mod math;
mod nn;
mod transform;

use relay_compiler::op::{OpDef, OpRegistry};

/// Declares an [`OpDef`] in one line: `op!("add", 2, broadcast_rel, Broadcast, "doc")`; its
/// attribute names, compute rule and projection are filled in by [`register_all`].
#[macro_export]
macro_rules! op {
    ($name:literal, $inputs:literal, $rel:expr, $pattern:ident, $doc:literal) => {
        relay_compiler::op::OpDef {
            name: $name,
            num_inputs: $inputs,
            attrs: &[],
            relation: $rel,
            pattern: relay_compiler::op::OpPattern::$pattern,
            compute: None,
            project: None,
            doc: $doc,
        }
    };
}

/// Every family's operators.
fn families() -> [&'static [OpDef]; 5] {
    [math::ELEMWISE, math::BROADCAST, math::REDUCE, transform::TRANSFORM, nn::NN]
}

/// Registers every operator of the library into `registry`, with the attribute names of its
/// reference kernel's attribute struct and its compute rule.
///
/// # Errors
/// The name of an operator that is already registered.
pub fn register_all(registry: &mut OpRegistry) -> Result<(), &'static str> {
    for family in families() {
        for def in family {
            let mut def = def.clone();
            let name = def.name;
            if let Some(kernel) = crate::reference_op(name) {
                def.attrs = kernel.attr_names;
            }
            def.compute = crate::compute::compute_rule(name);
            def.project = crate::compute::project_rule(name);
            registry.register(def).map_err(|_| name)?;
        }
    }
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
        let count: usize = families().iter().map(|f| f.len()).sum();
        assert_eq!(r.iter().count(), count);
    }
}
