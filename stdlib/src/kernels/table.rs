//! Reference kernels behind type-erased entry points, so that the operator list and the VM can
//! hold them in one table: attributes are parsed once into an [`Arc<dyn AnyAttrs>`]
//! and handed back to the entry points, which downcast them to the operator's struct.

use super::{run, ReferenceKernel};
use crate::attrs::{AnyAttrs, OpAttrs};
use crate::error::KernelError;
use relay_compiler::op::AttrReader;
use relay_devices::{DType, Tensor};
use std::any::Any;
use std::sync::Arc;

/// Parses a call's attributes into the operator's attribute struct.
pub type ParseFn = fn(&AttrReader) -> Result<Arc<dyn AnyAttrs>, KernelError>;
/// Output shapes of a call on these inputs ([`ReferenceKernel::shapes`]: from their shapes,
/// and their values for a data-dependent operator).
pub type ShapeFn = fn(&[&Tensor], &dyn AnyAttrs) -> Result<Vec<Vec<usize>>, KernelError>;
/// Output dtypes from input dtypes ([`ReferenceKernel::dtypes`]).
pub type DTypeFn = fn(&[DType], &dyn AnyAttrs) -> Result<Vec<DType>, KernelError>;
/// Validates preallocated outputs and computes into them ([`run`]).
pub type KernelFn = fn(&[&Tensor], &dyn AnyAttrs, &mut [Tensor]) -> Result<(), KernelError>;

/// One operator's reference implementation behind type-erased entry points.
#[derive(Clone, Copy, Debug)]
pub struct RefOp {
    /// TVM's name (`nn.conv2d`).
    pub name: &'static str,
    /// Accepted attribute names, TVM's spelling and order.
    pub attr_names: &'static [&'static str],
    /// Each attribute's name and default as text (`None`: required), for listings.
    pub attr_defaults: fn() -> Vec<(&'static str, Option<String>)>,
    /// Parses a call's attributes into the operator's attribute struct (TVM defaults applied).
    pub parse_attrs: ParseFn,
    /// [`ReferenceKernel::shapes`]: output shapes of a call on these inputs.
    pub shapes: ShapeFn,
    /// [`ReferenceKernel::dtypes`]: output dtypes from input dtypes.
    pub dtypes: DTypeFn,
    /// [`run`]: validates preallocated outputs and computes into them.
    pub kernel: KernelFn,
}

impl RefOp {
    /// The entry for kernel `K`.
    pub const fn of<K: ReferenceKernel>() -> RefOp {
        RefOp {
            name: K::NAME,
            attr_names: <K::Attrs as OpAttrs>::NAMES,
            attr_defaults: <K::Attrs as OpAttrs>::defaults,
            parse_attrs: parse::<K>,
            shapes: shapes::<K>,
            dtypes: dtypes::<K>,
            kernel: kernel::<K>,
        }
    }
}

impl RefOp {
    /// Runs the kernel on `inputs` with parsed attributes `attrs`: outputs sized by
    /// [`RefOp::shapes`] and [`RefOp::dtypes`], then computed.
    ///
    /// # Errors
    /// What the shape function, dtype rule or kernel reports (a reshape to an impossible
    /// shape), or an output too large to allocate.
    pub fn evaluate(&self, inputs: &[&Tensor], attrs: &dyn AnyAttrs) -> Result<Vec<Tensor>, KernelError> {
        let dtypes: Vec<DType> = inputs.iter().map(|t| t.dtype()).collect();
        let shapes = (self.shapes)(inputs, attrs)?;
        let dtypes = (self.dtypes)(&dtypes, attrs)?;
        let mut outputs = dtypes
            .into_iter()
            .zip(shapes)
            .map(|(dtype, shape)| Tensor::zeros(dtype, shape))
            .collect::<Result<Vec<_>, _>>()?;
        (self.kernel)(inputs, attrs, &mut outputs)?;
        Ok(outputs)
    }
}

/// Operator `op` on `inputs` with the attributes `attrs` (the compiler's
/// [`Evaluator`](relay_compiler::op::Evaluator), for compile-time folding).
///
/// # Errors
/// An operator without a reference kernel, attributes it rejects, or what
/// [`RefOp::evaluate`] reports.
pub fn evaluate(op: &str, attrs: &AttrReader, inputs: &[&Tensor]) -> Result<Vec<Tensor>, String> {
    let entry = crate::ops::operator(op)
        .map(|e| &e.reference)
        .ok_or_else(|| format!("operator `{op}` has no reference kernel"))?;
    let parsed = (entry.parse_attrs)(attrs).map_err(|e| format!("`{op}`: {e}"))?;
    entry.evaluate(inputs, parsed.as_ref()).map_err(|e| format!("`{op}`: {e}"))
}

fn attrs_of<K: ReferenceKernel>(attrs: &dyn AnyAttrs) -> Result<&K::Attrs, KernelError> {
    (attrs as &dyn Any)
        .downcast_ref::<K::Attrs>()
        .ok_or(KernelError::AttrsType { op: K::NAME, expected: std::any::type_name::<K::Attrs>() })
}

fn parse<K: ReferenceKernel>(reader: &AttrReader) -> Result<Arc<dyn AnyAttrs>, KernelError> {
    Ok(Arc::new(K::Attrs::from_attrs(reader).map_err(KernelError::Attr)?))
}

fn shapes<K: ReferenceKernel>(
    inputs: &[&Tensor],
    attrs: &dyn AnyAttrs,
) -> Result<Vec<Vec<usize>>, KernelError> {
    K::shapes(inputs, attrs_of::<K>(attrs)?)
}

fn dtypes<K: ReferenceKernel>(inputs: &[DType], attrs: &dyn AnyAttrs) -> Result<Vec<DType>, KernelError> {
    K::dtypes(inputs, attrs_of::<K>(attrs)?)
}

fn kernel<K: ReferenceKernel>(
    inputs: &[&Tensor],
    attrs: &dyn AnyAttrs,
    outputs: &mut [Tensor],
) -> Result<(), KernelError> {
    run::<K>(inputs, attrs_of::<K>(attrs)?, outputs)
}

/// Every reference kernel, in the library's listing order ([`crate::ops::operators`]).
pub fn reference_ops() -> impl ExactSizeIterator<Item = &'static RefOp> + Clone {
    let all: Vec<&'static RefOp> = crate::ops::operators().map(|e| &e.reference).collect();
    all.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::ReduceAttrs;
    use relay_compiler::ir::{AttrValue, Attrs, Interner};

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = reference_ops().map(|o| o.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), reference_ops().len());
    }

    #[test]
    fn attribute_names_agree_with_the_registry() {
        let registry = crate::op_registry();
        for (_, def) in registry.iter() {
            if let Some(op) = crate::ops::operator(def.name).map(|e| &e.reference) {
                let (mut a, mut b) = (def.attrs.to_vec(), op.attr_names.to_vec());
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b, "attributes of {}", def.name);
            }
        }
    }

    #[test]
    fn erased_entry_points_round_trip() {
        let mut sy = Interner::default();
        let attrs = Attrs(vec![(sy.intern("axis"), AttrValue::Int(0))]);
        let sum = &crate::ops::operator("sum").unwrap().reference;
        let parsed = (sum.parse_attrs)(&AttrReader::new(&sy, &attrs)).unwrap();
        let x = Tensor::from_vec(vec![2, 2], vec![1f32, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!((sum.shapes)(&[&x], parsed.as_ref()).unwrap(), vec![vec![2]]);
        let mut out = vec![Tensor::zeros(DType::F32, vec![2]).unwrap()];
        (sum.kernel)(&[&x], parsed.as_ref(), &mut out).unwrap();
        assert_eq!(out[0].as_slice::<f32>().unwrap(), &[4.0, 6.0]);
        let wrong = &crate::ops::operator("nn.softmax").unwrap().reference;
        assert!(matches!((wrong.shapes)(&[&x], &ReduceAttrs::default()), Err(KernelError::AttrsType { .. })));
        let mut bad_out = vec![Tensor::zeros(DType::F32, vec![3]).unwrap()];
        assert!(matches!(
            (sum.kernel)(&[&x], parsed.as_ref(), &mut bad_out),
            Err(KernelError::Output { .. })
        ));
    }
}
