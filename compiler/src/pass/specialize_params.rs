//! Parameter shape specialisation: when the host binds some parameters of a function before
//! compiling (model weights from a safetensors file), their `?` dimensions are known. Writing
//! the bound shapes into the parameters' annotations makes every operator that reads them
//! statically shaped, so it fuses into a JIT kernel (TreeLSTM's `take` from its `[?, 300]`
//! embedding table, which otherwise runs its reference kernel on every leaf). TVM reaches the
//! same point by binding the parameters as constants (`bind_params_by_name`); here they stay
//! arguments, so the executable does not embed the weights.

use crate::ir::{Dim, Module, TypeKind};
use relay_devices::DType;

/// The static type of one bound parameter: its name (without `%`), dtype and shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundParam {
    /// The parameter's name.
    pub name: String,
    /// The bound tensor's dtype.
    pub dtype: DType,
    /// The bound tensor's shape.
    pub shape: Vec<i64>,
}

/// Annotates the parameters of global `func` named in `bound` with the bound tensors' shapes,
/// where their annotations have `?` dimensions. Returns how many parameters changed.
/// Parameters whose annotation disagrees with the bound tensor (dtype, rank or a known
/// dimension), or that are not tensors, are left alone: binding them reports the mismatch.
///
/// # Errors
/// A message when `func` is not a global function of `m`.
pub fn specialize_params(m: &mut Module, func: &str, bound: &[BoundParam]) -> Result<usize, String> {
    let params = m
        .function_by_name(func)
        .map(|g| g.func.params.clone())
        .ok_or_else(|| format!("no function `@{func}`"))?;
    let mut changed = 0;
    for p in params {
        let name = m.name(m.var(p).name).to_string();
        let Some(b) = bound.iter().find(|b| b.name == name) else { continue };
        let Some(ty) = m.var(p).ty else { continue };
        let TypeKind::Tensor { shape, dtype } = m.types.kind(ty) else { continue };
        let fits = binds(b.dtype, *dtype)
            && shape.len() == b.shape.len()
            && shape.iter().zip(&b.shape).all(|(d, &n)| matches!(d, Dim::Any) || *d == Dim::Known(n));
        if !fits || !shape.iter().any(|d| matches!(d, Dim::Any)) {
            continue;
        }
        let shape = b.shape.iter().map(|&n| Dim::Known(n)).collect();
        let static_ty = m.types.intern(TypeKind::Tensor { shape, dtype: *dtype });
        m.vars[p.index()].ty = Some(static_ty);
        changed += 1;
    }
    Ok(changed)
}

/// Whether a bound tensor of dtype `from` binds a parameter of dtype `to`: the same dtype, or
/// a float widening that is exact for every value (a `float16` checkpoint into a `float32`
/// model), which binding performs.
fn binds(from: DType, to: DType) -> bool {
    from == to
        || (from.is_float()
            && to.is_float()
            && from.lanes == 1
            && to.lanes == from.lanes
            && to.bits > from.bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::util::test_util::{checked, print};

    #[test]
    fn bound_shapes_replace_unknown_dimensions_only() {
        let (mut m, _) = checked(
            "def @main(%table: Tensor[(?, 3), float32], %w: Tensor[(2, 3), float32], %x: Tensor[(?), float32]) {
               (%table, %w, %x)
             }",
        );
        let bind =
            |name: &str, dtype, shape: &[i64]| BoundParam { name: name.into(), dtype, shape: shape.to_vec() };
        let bound = [
            // A float16 checkpoint binds a float32 parameter: the widening is exact.
            bind("table", DType::F16, &[10, 3]),
            bind("w", DType::F32, &[2, 3]),
            // Disagrees with the annotation's dtype: left for binding to report.
            bind("x", DType::I32, &[4]),
        ];
        assert_eq!(specialize_params(&mut m, "main", &bound), Ok(1));
        let out = print(&mut m);
        assert!(
            out.contains(
                "%table: Tensor[(10, 3), float32], %w: Tensor[(2, 3), float32], %x: Tensor[(?), float32]"
            ),
            "{out}"
        );
        assert!(specialize_params(&mut m, "nope", &bound).is_err());
    }
}
