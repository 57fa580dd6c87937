//! Every registered operator carries all its facets: a type relation and a pattern kind (by
//! construction of `OpDef`), a reference kernel (which also supplies the attribute names), and
//! committed test vectors.

use std::path::Path;

#[test]
fn every_registered_op_has_a_kernel_and_vectors() {
    let registry = relay_stdlib::op_registry();
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/ops/vectors");
    let mut missing = vec![];
    for (_, def) in registry.iter() {
        if relay_stdlib::ops::operator(def.name).is_none() {
            missing.push(format!("{}: no reference kernel", def.name));
        }
        if !vectors.join(format!("{}.json", def.name)).is_file() {
            missing.push(format!("{}: no test vectors", def.name));
        }
    }
    assert!(missing.is_empty(), "operators missing facets:\n{}", missing.join("\n"));
    assert!(registry.iter().count() >= 75);
}

#[test]
fn every_reference_kernel_is_registered() {
    let registry = relay_stdlib::op_registry();
    let unregistered: Vec<&str> =
        relay_stdlib::reference_ops().map(|k| k.name).filter(|n| registry.lookup(n).is_none()).collect();
    assert!(unregistered.is_empty(), "kernels without a registration: {unregistered:?}");
}
