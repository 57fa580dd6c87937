//! Typed `u32` indices into the module arenas.

macro_rules! define_id {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            /// The arena index this id stands for.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl super::id_map::ArenaId for $name {
            fn index(self) -> usize {
                $name::index(self)
            }
        }
    )*};
}

define_id! {
    /// An expression node in [`Module::exprs`](crate::ir::Module).
    ExprId;
    /// A local variable (`%x`) in [`Module::vars`](crate::ir::Module); one per binding site.
    VarId;
    /// A pattern node in [`Module::patterns`](crate::ir::Module).
    PatId;
    /// A hash-consed type in [`Module::types`](crate::ir::Module).
    TypeId;
    /// A type parameter (`A` in `def @id[A]`); one per binding site.
    TypeParamId;
}
