//! Relay types (paper §3.2), hash-consed: equal types share one [`TypeId`].

use super::{Symbol, TypeId, TypeParamId};
use relay_devices::DType;
use rustc_hash::FxHashMap as HashMap;

/// One dimension of a tensor shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A size known at compile time.
    Known(i64),
    /// `?`: unknown until run time (TVM's `Any`); checked when the tensor is produced.
    Any,
}

/// The structure of a type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeKind {
    /// `Tensor[(d0, d1, ...), dtype]`; a bare dtype such as `float32` is the 0-d tensor type.
    Tensor { shape: Vec<Dim>, dtype: DType },
    /// `(T1, T2, ...)`; `()` is the unit type.
    Tuple(Vec<TypeId>),
    /// `fn [A, B](T1, T2) -> R`.
    Func { type_params: Vec<TypeParamId>, params: Vec<TypeId>, ret: TypeId },
    /// A type parameter bound by a `def`, `fn`, `type` or function type.
    Param(TypeParamId),
    /// An algebraic data type applied to arguments: `List[Tree[A]]` (TVM's `TypeCall` of a
    /// `GlobalTypeVar`). The ADT is named, as TVM names it.
    Adt { name: Symbol, args: Vec<TypeId> },
    /// `ref(T)`: a mutable reference cell.
    Ref(TypeId),
    /// `_`: left for inference to fill in.
    Hole,
}

/// The hash-consing table of a module's types.
#[derive(Debug, Clone, Default)]
pub struct TypeInterner {
    kinds: Vec<TypeKind>,
    index: HashMap<TypeKind, TypeId>,
}

impl TypeInterner {
    /// The id of `kind`, adding it if no equal type exists yet.
    pub fn intern(&mut self, kind: TypeKind) -> TypeId {
        if let Some(&id) = self.index.get(&kind) {
            return id;
        }
        let id = TypeId(self.kinds.len() as u32);
        self.kinds.push(kind.clone());
        self.index.insert(kind, id);
        id
    }

    /// The structure of a type.
    pub fn kind(&self, id: TypeId) -> &TypeKind {
        &self.kinds[id.index()]
    }

    /// Number of distinct types.
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// Whether no type has been interned.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_types_share_an_id() {
        let mut t = TypeInterner::default();
        let a = t.intern(TypeKind::Tensor { shape: vec![Dim::Known(2), Dim::Any], dtype: DType::F32 });
        let b = t.intern(TypeKind::Tensor { shape: vec![Dim::Known(2), Dim::Any], dtype: DType::F32 });
        let c = t.intern(TypeKind::Tensor { shape: vec![Dim::Known(2)], dtype: DType::F32 });
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(t.intern(TypeKind::Tuple(vec![a, c])), t.intern(TypeKind::Tuple(vec![b, c])));
    }
}
