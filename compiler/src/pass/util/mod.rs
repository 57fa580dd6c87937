//! What the passes share and are not passes themselves: building typed nodes, copying with
//! fresh binders, free variables, rewriting calls by an operator facet, the iterative
//! rewriter and walkers, A-normal-form scopes, and the passes' unit-test helpers.

pub(crate) mod builder;
pub(crate) mod copy;
pub(crate) mod free_vars;
pub(crate) mod op_rewrite;
pub(crate) mod rewrite;
pub(crate) mod scope;
#[cfg(test)]
pub(crate) mod test_util;
pub(crate) mod walk;
