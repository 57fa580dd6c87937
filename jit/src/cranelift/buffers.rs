//! Which vector loops may end on an overlapping vector instead of a scalar tail (`emit.rs`),
//! from the buffers kir's statements touch (`relay_kir::coverage`'s walkers).

use relay_kir::coverage::accesses;
use relay_kir::Stmt;
use std::collections::HashSet;

/// Whether some buffer `body` stores to is also read in it: then an iteration may see what
/// another wrote, and iterations cannot be redone or reordered.
pub(crate) fn reads_what_it_writes(body: &[Stmt]) -> bool {
    let (mut stored, mut read) = (HashSet::new(), HashSet::new());
    for s in body {
        accesses(s, &mut stored, &mut read);
    }
    !stored.is_disjoint(&read)
}
