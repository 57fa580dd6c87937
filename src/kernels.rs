//! The kernel adapter: turns each of an executable's [`KernelDesc`]s into something the VM
//! can call behind its [`relay_runtime::PackedFunc`] trait — a descriptor carrying a kir kernel
//! goes to a [`KernelBackend`] (the host's Cranelift JIT, or an OpenCL device whose kernels the
//! VM runs on device-resident tensors; one backend per binding, so equal kernels compile
//! once); any other descriptor becomes the stdlib's reference kernel of its operator, with its
//! typed attributes parsed once at bind time (reference kernels always run on the host).

use relay_compiler::ir::{AttrValue, Attrs, Interner};
use relay_compiler::op::AttrReader;
use relay_devices::{DType, Tensor};
use relay_jit::{CpuBackend, KernelBackend};
use relay_kir::Kernel;
use relay_runtime::{Attr, Executable, KernelDesc, KernelTable, Limits};
use relay_stdlib::attrs::AnyAttrs;
use relay_stdlib::kernels::table::RefOp;
use std::sync::Arc;

/// A reference kernel with its parsed attributes.
struct ReferencePackedFunc {
    op: &'static RefOp,
    attrs: Arc<dyn AnyAttrs>,
}

impl relay_runtime::PackedFunc for ReferencePackedFunc {
    fn output_types(&self, inputs: &[&Tensor]) -> Result<Vec<(DType, Vec<usize>)>, String> {
        let dtypes: Vec<DType> = inputs.iter().map(|t| t.dtype()).collect();
        let shapes = (self.op.shapes)(inputs, self.attrs.as_ref()).map_err(|e| e.to_string())?;
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

/// One kernel per entry of `exe.kernels`, in order: JIT-compiled for descriptors carrying
/// kir, reference kernels for the rest. Each kir kernel's resources are checked against the
/// default [`Limits`], as for an executable read from a file.
///
/// # Errors
/// `(kernel index, message)` for the first operator without a reference kernel or whose
/// attributes do not parse, or kir that does not decode, exceeds the limits or does not
/// compile.
pub fn bind_kernels(exe: &Executable) -> Result<KernelTable, (usize, String)> {
    bind_kernels_on(exe, &[], &Limits::default())
}

/// [`bind_kernels`], with the kir kernels compiled by `backends` when there are any (each
/// distinct kernel once per backend; reference kernels stay on the host), else by a
/// [`CpuBackend`] made at the first kir kernel, and checked against `limits`
/// ([`Limits::UNBOUNDED`] for an executable this process compiled itself). The kir kernels go
/// to the backends round-robin in kernel-list order: the first to `backends[0]`, the second
/// to `backends[1 % n]`, ...
///
/// # Errors
/// As [`bind_kernels`]; an OpenCL build failure carries the build log.
pub fn bind_kernels_on(
    exe: &Executable,
    backends: &[&dyn KernelBackend],
    limits: &Limits,
) -> Result<KernelTable, (usize, String)> {
    let mut cpu: Option<CpuBackend> = None;
    let mut table = KernelTable::with_capacity(exe.kernels.len());
    let mut next_backend = backends.iter().cycle();
    for (i, desc) in exe.kernels.iter().enumerate() {
        let kernel = match &desc.kernel {
            None => bind(desc),
            Some(bytes) => {
                let backend: &dyn KernelBackend = match next_backend.next() {
                    Some(b) => *b,
                    None => match &mut cpu {
                        Some(cpu) => cpu,
                        none => none.insert(CpuBackend::new().map_err(|e| (i, e.to_string()))?),
                    },
                };
                compile(backend, bytes, limits)
            }
        };
        table.push(kernel.map_err(|e| (i, e))?);
    }
    Ok(table)
}

/// The kir kernel of a descriptor's payload, compiled by `backend`.
fn compile(
    backend: &dyn KernelBackend,
    bytes: &[u8],
    limits: &Limits,
) -> Result<Arc<dyn relay_runtime::PackedFunc>, String> {
    let kernel = Kernel::from_bytes_with(bytes, limits).map_err(|e| format!("kir payload: {e}"))?;
    backend.compile(&kernel).map_err(|e| format!("`{}`: {e}", kernel.name))
}

fn bind(k: &KernelDesc) -> Result<Arc<dyn relay_runtime::PackedFunc>, String> {
    let op = relay_stdlib::ops::operator(&k.op)
        .map(|e| &e.reference)
        .ok_or_else(|| format!("no reference kernel for operator `{}`", k.op))?;
    let mut symbols = Interner::default();
    let attrs = Attrs(k.attrs.iter().map(|(name, v)| (symbols.intern(name), attr_value(v))).collect());
    let attrs =
        (op.parse_attrs)(&AttrReader::new(&symbols, &attrs)).map_err(|e| format!("`{}`: {e}", k.op))?;
    Ok(Arc::new(ReferencePackedFunc { op, attrs }))
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
            kernel: None,
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
        let (index, message) = bind_kernels(&exe).err().unwrap();
        assert_eq!(index, 1);
        assert!(message.contains("no.such_op"));
        assert!(bind(&desc("sum", vec![("axis", Attr::Str("x".into()))])).is_err());
    }
}
