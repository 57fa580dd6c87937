//! Parameter binding (TVM's `bind_params_by_name`, which `relay.build(mod, params=...)`
//! runs first): the host's weights replace parameters of the entry function by constants,
//! so the passes after it see them. `FoldConstant` then computes what depends on weights
//! alone, and [`super::hoist_take`] turns lookups into weight-derived tables.
//!
//! Constants are held as `f64` elements in the module ([`ConstantData`]), so binding copies
//! each weight (twice its bytes for `float32`) until code generation, which stores it once
//! more in its dtype in the executable. Weights whose elements `f64` does not hold exactly
//! (`int64`, `float64`) stay parameters.

use super::fold_fused_constants::constant_data;
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use crate::diagnostics::CompileError;
use crate::ir::{ExprId, ExprKind, IdMap, Module, VarId};
use relay_devices::Tensor;

/// Replaces the parameters of global `func` named in `values` (without `%`) by constants of
/// their tensors, and removes them from its parameter list. Returns the names bound, in
/// parameter order; a tensor that binds no parameter, or whose dtype constants cannot hold
/// exactly, is left out (its parameter stays). The tensors must already fit the parameters'
/// types (the caller checks them as run-time binding does).
///
/// # Errors
/// A message when `func` is not a global function of `m`.
pub fn bind_params(m: &mut Module, func: &str, values: &[(String, &Tensor)]) -> Result<Vec<String>, String> {
    let index = m
        .symbols
        .get(func)
        .and_then(|s| m.functions.iter().position(|g| g.name == s))
        .ok_or_else(|| format!("no function `@{func}`"))?;
    let mut constants: IdMap<VarId, u32> = IdMap::new();
    let mut bound = vec![];
    let mut kept = vec![];
    for p in m.functions[index].func.params.clone() {
        let name = m.name(m.var(p).name).to_string();
        let data = values.iter().find(|(n, _)| *n == name).and_then(|(_, t)| constant_data(t));
        match data {
            Some(data) => {
                m.constants.push(data);
                constants.insert(p, (m.constants.len() - 1) as u32);
                bound.push(name);
            }
            None => kept.push(p),
        }
    }
    if bound.is_empty() {
        return Ok(bound);
    }
    let body = m.functions[index].func.body;
    let body = rewrite(m, body, &mut Substitute { constants }).map_err(|e| format!("{e:?}"))?;
    let f = &mut m.functions[index].func;
    f.params = kept;
    f.body = body;
    Ok(bound)
}

/// Replaces references to the bound parameters by their constants.
struct Substitute {
    constants: IdMap<VarId, u32>,
}

impl Rewrite for Substitute {
    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        if let ExprKind::Var(v) = m.expr(old).kind {
            if let Some(&c) = self.constants.get(v) {
                let span = m.expr(old).span;
                return Ok(m.add_expr(ExprKind::Constant(c), span));
            }
        }
        Ok(rebuild(m, old, kids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::util::test_util::{checked, print};

    #[test]
    fn bound_parameters_become_constants_and_leave_the_signature() {
        let (mut m, _) = checked(
            "def @main(%w: Tensor[(2), float32], %x: Tensor[(2), float32], %n: Tensor[(2), int64]) {
               (add(%w, %x), %n)
             }",
        );
        let w = relay_devices::Tensor::from_vec(vec![2], vec![1f32, 2.0]).unwrap();
        let n = relay_devices::Tensor::from_vec(vec![2], vec![1i64, 2]).unwrap();
        let values = [("w".to_string(), &w), ("n".to_string(), &n), ("nothing".to_string(), &w)];
        // int64 stays a parameter: f64 does not hold every int64 exactly.
        assert_eq!(bind_params(&mut m, "main", &values), Ok(vec!["w".to_string()]));
        let out = print(&mut m);
        assert!(out.contains("def @main(%x: Tensor[(2), float32], %n: Tensor[(2), int64])"), "{out}");
        assert!(out.contains("add(meta[relay.Constant][0], %x)"), "{out}");
        assert!(bind_params(&mut m, "nope", &values).is_err());
    }
}
