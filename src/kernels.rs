//! The kernel adapter: turns each of an executable's [`KernelDesc`]s into something the VM
//! can call behind its [`relay_runtime::PackedFunc`] trait — a descriptor carrying a kir kernel
//! becomes Cranelift machine code (one [`Jit`] and [`KernelCache`] per binding, so equal
//! kernels compile once) or, bound to an OpenCL device, an OpenCL program that the VM runs
//! on device-resident tensors ([`relay_runtime::DevicePackedFunc`]); any other descriptor the
//! stdlib's reference kernel of its operator, with its typed attributes parsed once at bind
//! time (reference kernels always run on the host).

use relay_compiler::ir::{AttrValue, Attrs, Interner};
use relay_compiler::op::AttrReader;
use relay_devices::opencl::OpenClDevice;
use relay_devices::{DType, Device, DeviceTensor, Tensor};
use relay_jit::{CompiledKernel, Jit, KernelCache, OpenClKernel};
use relay_kir::{infer_syms, BufferRole, Kernel};
use relay_runtime::{Attr, CancelHandle, Executable, KernelDesc, KernelTable, Limits};
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

/// A JIT-compiled kir kernel.
struct JitPackedFunc {
    compiled: Arc<CompiledKernel>,
}

impl JitPackedFunc {
    /// The sym values for these inputs (kernels FuseOps makes have none).
    fn syms(&self, inputs: &[&Tensor]) -> Result<Vec<i64>, String> {
        if self.compiled.kernel().syms.is_empty() {
            // No `?` dimensions: nothing to infer, and an empty `Vec` does not allocate.
            return Ok(Vec::new());
        }
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        infer_syms(self.compiled.kernel(), &shapes, &[]).map_err(|e| e.to_string())
    }
}

impl relay_runtime::PackedFunc for JitPackedFunc {
    fn output_types(&self, inputs: &[&Tensor]) -> Result<Vec<(DType, Vec<usize>)>, String> {
        let syms = self.syms(inputs)?;
        let k: &Kernel = self.compiled.kernel();
        k.buffers_with_role(BufferRole::Output)
            .map(|b| {
                let decl = &k.buffers[b.index()];
                let shape = relay_kir::buffer_shape(k, b, &syms)
                    .and_then(|s| s.into_iter().map(|d| usize::try_from(d).ok()).collect::<Option<Vec<_>>>())
                    .ok_or_else(|| format!("output `{}` has no valid shape", decl.name))?;
                Ok((decl.dtype, shape))
            })
            .collect()
    }

    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), String> {
        self.run_shared(inputs, &[], outputs, &CancelHandle::new())
    }

    fn run_shared(
        &self,
        inputs: &[&Tensor],
        handles: &[Option<&Arc<Tensor>>],
        outputs: &mut [Tensor],
        cancel: &CancelHandle,
    ) -> Result<(), String> {
        let syms = self.syms(inputs)?;
        let stop = cancel.as_atomic();
        self.compiled.run_shared(inputs, handles, outputs, &syms, stop).map_err(|e| e.to_string())
    }
}

/// A kir kernel built for an OpenCL device.
struct OpenClPackedFunc {
    compiled: Arc<OpenClKernel>,
    /// The kernel's device as the VM sees it.
    device: Arc<dyn Device>,
}

impl relay_runtime::PackedFunc for OpenClPackedFunc {
    fn output_types(&self, inputs: &[&Tensor]) -> Result<Vec<(DType, Vec<usize>)>, String> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        self.compiled.output_types(&shapes).map_err(|e| e.to_string())
    }

    /// On host tensors (the VM calls [`relay_runtime::DevicePackedFunc::run`] instead; this serves
    /// other callers of the table): copies in and out.
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), String> {
        let k = self.compiled.kernel();
        let syms = if k.syms.is_empty() {
            Vec::new()
        } else {
            let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
            infer_syms(k, &shapes, &[]).map_err(|e| e.to_string())?
        };
        self.compiled.run(inputs, outputs, &syms).map_err(|e| e.to_string())
    }

    fn on_device(&self) -> Option<&dyn relay_runtime::DevicePackedFunc> {
        Some(self)
    }
}

impl relay_runtime::DevicePackedFunc for OpenClPackedFunc {
    fn device(&self) -> &Arc<dyn Device> {
        &self.device
    }

    fn output_types(&self, input_shapes: &[&[usize]]) -> Result<Vec<(DType, Vec<usize>)>, String> {
        self.compiled.output_types(input_shapes).map_err(|e| e.to_string())
    }

    fn run(&self, inputs: &[&DeviceTensor], outputs: &[DeviceTensor]) -> Result<(), String> {
        self.compiled.run_device(inputs, outputs).map_err(|e| e.to_string())
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

/// [`bind_kernels`], with kir kernels built for the OpenCL `devices` when there are any (built
/// from source, each distinct kernel once per device; reference kernels stay on the host) and
/// checked against `limits` ([`Limits::UNBOUNDED`] for an executable this process compiled
/// itself). The kir kernels go to the devices round-robin in kernel-list order: the first to
/// `devices[0]`, the second to `devices[1 % n]`, ...
///
/// # Errors
/// As [`bind_kernels`]; an OpenCL build failure carries the build log.
pub fn bind_kernels_on(
    exe: &Executable,
    devices: &[Arc<OpenClDevice>],
    limits: &Limits,
) -> Result<KernelTable, (usize, String)> {
    let opencl_cache = KernelCache::new();
    let mut jit: Option<Jit> = None;
    let cache = KernelCache::new();
    let mut table = KernelTable::with_capacity(exe.kernels.len());
    let mut next_device = devices.iter().cycle();
    for (i, desc) in exe.kernels.iter().enumerate() {
        let device = if desc.kernel.is_some() { next_device.next() } else { None };
        let kernel = match (&desc.kernel, device) {
            (None, _) => bind(desc),
            (Some(bytes), Some(dev)) => compile_opencl(dev, &opencl_cache, bytes, limits),
            (Some(bytes), None) => {
                if jit.is_none() {
                    jit = Some(Jit::new().map_err(|e| (i, e.to_string()))?);
                }
                let jit = jit.as_ref().ok_or((i, "no JIT".to_string()))?;
                compile(jit, &cache, bytes, limits)
            }
        };
        table.push(kernel.map_err(|e| (i, e))?);
    }
    Ok(table)
}

fn compile(
    jit: &Jit,
    cache: &KernelCache<CompiledKernel>,
    bytes: &[u8],
    limits: &Limits,
) -> Result<Arc<dyn relay_runtime::PackedFunc>, String> {
    let kernel = Kernel::from_bytes_with(bytes, limits).map_err(|e| format!("kir payload: {e}"))?;
    jit_kernel(jit, cache, &kernel)
}

/// `kernel` JIT-compiled (once per structure in `cache`), callable by the VM.
///
/// # Errors
/// A message naming the kernel when it does not compile.
pub(crate) fn jit_kernel(
    jit: &Jit,
    cache: &KernelCache<CompiledKernel>,
    kernel: &Kernel,
) -> Result<Arc<dyn relay_runtime::PackedFunc>, String> {
    let compiled = jit.compile_cached(cache, kernel).map_err(|e| format!("`{}`: {e}", kernel.name))?;
    Ok(Arc::new(JitPackedFunc { compiled }))
}

fn compile_opencl(
    device: &Arc<OpenClDevice>,
    cache: &KernelCache<OpenClKernel>,
    bytes: &[u8],
    limits: &Limits,
) -> Result<Arc<dyn relay_runtime::PackedFunc>, String> {
    let kernel = Kernel::from_bytes_with(bytes, limits).map_err(|e| format!("kir payload: {e}"))?;
    let compiled = OpenClKernel::compile_cached(cache, device, &kernel)
        .map_err(|e| format!("`{}`: {e}", kernel.name))?;
    let device: Arc<dyn Device> = compiled.device().clone();
    Ok(Arc::new(OpenClPackedFunc { compiled, device }))
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
