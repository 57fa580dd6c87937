//! The Relay operator library and the prelude.

/// The text of `prelude.relay`: List, Option, Tree and their combinators, in scope for every
/// program.
pub const PRELUDE: &str = include_str!("../../prelude.relay");
