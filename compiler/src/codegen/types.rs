//! Relay types as the executable records them ([`ValueType`]), so a host can convert values
//! in and out.

use crate::ir::{Dim, Module, TypeId, TypeKind};
use relay_runtime::{AdtInfo, ConstructorInfo, ValueType};

/// The executable's view of type `t`.
pub fn value_type(m: &Module, t: TypeId) -> ValueType {
    crate::stack::grow(|| match m.types.kind(t) {
        TypeKind::Tensor { shape, dtype } => ValueType::Tensor {
            dtype: *dtype,
            shape: shape
                .iter()
                .map(|d| match d {
                    Dim::Known(n) => Some(*n),
                    Dim::Any => None,
                })
                .collect(),
        },
        TypeKind::Tuple(fs) => ValueType::Tuple(fs.iter().map(|&f| value_type(m, f)).collect()),
        TypeKind::Func { .. } => ValueType::Func,
        TypeKind::Adt { name, args } => ValueType::Adt {
            name: m.name(*name).to_string(),
            args: args.iter().map(|&a| value_type(m, a)).collect(),
        },
        TypeKind::Ref(x) => ValueType::Ref(Box::new(value_type(m, *x))),
        TypeKind::Param(p) => ValueType::Param(m.name(m.type_params[p.index()].name).to_string()),
        TypeKind::Hole => ValueType::Param("_".to_string()),
    })
}

/// Every ADT of the module, constructors in tag order.
pub fn adt_infos(m: &Module) -> Vec<AdtInfo> {
    m.type_defs
        .iter()
        .map(|d| AdtInfo {
            name: m.name(d.name).to_string(),
            type_params: d
                .type_params
                .iter()
                .map(|p| m.name(m.type_params[p.index()].name).to_string())
                .collect(),
            constructors: d
                .constructors
                .iter()
                .filter_map(|&c| m.constructor(c))
                .map(|c| ConstructorInfo {
                    name: m.name(c.name).to_string(),
                    fields: c.fields.iter().map(|&f| value_type(m, f)).collect(),
                })
                .collect(),
        })
        .collect()
}
