//! The reference-kernel adapter: turns each of an executable's [`KernelDesc`]s into the
//! stdlib's reference kernel of that operator, with its typed attributes parsed once at bind
//! time, behind the VM's [`relay_vm::Kernel`] trait.

use relay_compiler::ir::{AttrValue, Attrs, Interner};
use relay_compiler::op::AttrReader;
use relay_devices::{DType, Tensor};
use relay_stdlib::attrs::AnyAttrs;
use relay_stdlib::kernels::table::{reference_op, RefOp};
use relay_vm::{Attr, Executable, KernelDesc, KernelTable};
use std::sync::Arc;

/// A reference kernel with its parsed attributes.
struct ReferenceKernel {
    op: &'static RefOp,
    attrs: Arc<dyn AnyAttrs>,
}

impl relay_vm::Kernel for ReferenceKernel {
    fn output_types(&self, inputs: &[&Tensor]) -> Result<Vec<(DType, Vec<usize>)>, String> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        let dtypes: Vec<DType> = inputs.iter().map(|t| t.dtype()).collect();
        let shapes = (self.op.shapes)(&shapes, self.attrs.as_ref()).map_err(|e| e.to_string())?;
        let dtypes = (self.op.dtypes)(&dtypes, self.attrs.as_ref()).map_err(|e| e.to_string())?;
        if shapes.len() != dtypes.len() {
            return Err(format!("{} output shapes but {} output dtypes", shapes.len(), dtypes.len()));
        }
        Ok(dtypes.into_iter().zip(shapes).collect())
    }

    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), String> {
        (self.op.kernel)(inputs, self.attrs.as_ref(), outputs).map_err(|e| e.to_string())
    }
}

/// One reference kernel per entry of `exe.kernels`, in order.
///
/// # Errors
/// `(kernel index, message)` for the first operator without a reference kernel or whose
/// attributes do not parse.
pub fn reference_kernels(exe: &Executable) -> Result<KernelTable, (usize, String)> {
    exe.kernels.iter().enumerate().map(|(i, k)| bind(k).map_err(|e| (i, e))).collect()
}

fn bind(k: &KernelDesc) -> Result<Arc<dyn relay_vm::Kernel>, String> {
    let op = reference_op(&k.op).ok_or_else(|| format!("no reference kernel for operator `{}`", k.op))?;
    let mut symbols = Interner::default();
    let attrs = Attrs(k.attrs.iter().map(|(name, v)| (symbols.intern(name), attr_value(v))).collect());
    let attrs =
        (op.parse_attrs)(&AttrReader::new(&symbols, &attrs)).map_err(|e| format!("`{}`: {e}", k.op))?;
    Ok(Arc::new(ReferenceKernel { op, attrs }))
}

/// The IR attribute an executable's attribute came from. Attribute lists are as deep as
/// written in the source, and a loaded executable's are bounded by its reader.
fn attr_value(a: &Attr) -> AttrValue {
    match a {
        Attr::Int(i) => AttrValue::Int(*i),
        Attr::Float(f) => AttrValue::Float(*f),
        Attr::Bool(b) => AttrValue::Bool(*b),
        Attr::Str(s) => AttrValue::Str(s.clone()),
        Attr::List(xs) => AttrValue::List(xs.iter().map(attr_value).collect()),
        Attr::Null => AttrValue::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(op: &str, attrs: Vec<(&str, Attr)>) -> KernelDesc {
        KernelDesc {
            op: op.to_string(),
            attrs: attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            num_inputs: 1,
            num_outputs: 1,
        }
    }

    #[test]
    fn binds_attributes_and_runs() {
        let k = bind(&desc("sum", vec![("axis", Attr::List(vec![Attr::Int(1)]))])).unwrap();
        let x = Tensor::from_vec(vec![2, 2], vec![1f32, 2.0, 3.0, 4.0]).unwrap();
        let types = k.output_types(&[&x]).unwrap();
        assert_eq!(types, vec![(DType::F32, vec![2])]);
        let mut out = vec![Tensor::zeros(DType::F32, vec![2]).unwrap()];
        k.run(&[&x], &mut out).unwrap();
        assert_eq!(out[0].as_slice::<f32>().unwrap(), &[3.0, 7.0]);
    }

    #[test]
    fn unknown_operators_and_bad_attributes_are_errors() {
        let exe = Executable {
            kernels: vec![desc("add", vec![]), desc("no.such_op", vec![])],
            ..Default::default()
        };
        let (index, message) = reference_kernels(&exe).err().unwrap();
        assert_eq!(index, 1);
        assert!(message.contains("no.such_op"));
        assert!(bind(&desc("sum", vec![("axis", Attr::Str("x".into()))])).is_err());
    }
}
