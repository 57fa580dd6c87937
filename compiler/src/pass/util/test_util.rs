//! Helpers for the passes' unit tests: a few operators, parsing with type inference, printing.

use crate::ir::Module;
use crate::op::{AttrReader, OpDef, OpPattern, OpRegistry, RelType, RelationResult, TensorType};
use crate::syntax::parse_module;
use crate::syntax::printer::print_module;
use crate::ty::{infer_types, TypeMap};
use relay_devices::DType;

/// The output has the type of the first input (waits until it is known).
fn same_as_first(args: &[RelType], _: &AttrReader) -> RelationResult {
    match args.first() {
        Some(t) if t.is_known() => Ok(Some(t.clone())),
        _ => Ok(None),
    }
}

/// A bool tensor of the first input's shape.
fn compare(args: &[RelType], _: &AttrReader) -> RelationResult {
    match args.first() {
        Some(RelType::Tensor(t)) => Ok(Some(RelType::Tensor(TensorType::new(t.shape.clone(), DType::BOOL)))),
        _ => Ok(None),
    }
}

fn op(
    name: &'static str,
    num_inputs: usize,
    attrs: &'static [&'static str],
    relation: fn(&[RelType], &AttrReader) -> RelationResult,
) -> OpDef {
    OpDef {
        name,
        num_inputs,
        attrs,
        relation,
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

/// `add`, `multiply`, `negative`, `less` and `clip(a_min, a_max)`, enough to exercise the passes.
pub(crate) fn ops() -> OpRegistry {
    let mut r = OpRegistry::default();
    for def in [
        op("add", 2, &[], same_as_first),
        op("multiply", 2, &[], same_as_first),
        op("negative", 1, &[], same_as_first),
        op("less", 2, &[], compare),
        op("clip", 1, &["a_min", "a_max"], same_as_first),
    ] {
        let _ = r.register(def);
    }
    r
}

/// Infers `m`'s types, panicking with the rendered diagnostics and the module's text.
pub(crate) fn infer(m: &mut Module) -> TypeMap {
    match infer_types(m, &ops()) {
        Ok(t) => t,
        Err(e) => panic!("{}\n{}", e.render(&m.sources, false), print_module(m, None)),
    }
}

/// Parses and type-checks `text`.
pub(crate) fn checked(text: &str) -> (Module, TypeMap) {
    let mut m = match parse_module("t.relay", text) {
        Ok(m) => m,
        Err(e) => {
            let mut sources = crate::ir::SourceMap::default();
            sources.add("t.relay", text);
            panic!("{}", e.render(&sources, false))
        }
    };
    let types = infer(&mut m);
    (m, types)
}

/// Checks that `m` still type-checks and prints it.
pub(crate) fn print(m: &mut Module) -> String {
    infer(m);
    print_module(m, None)
}
