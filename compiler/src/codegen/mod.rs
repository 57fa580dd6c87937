//! Bytecode emission (paper §4; TVM `src/relay/backend/vm/compiler.cc`): lowered, typed
//! Relay (after the lowering passes) becomes an [`Executable`].
//!
//! Input shape, as the passes leave it: every body is in A-normal form; closures are
//! `Closure=1` globals whose body is the inner `fn` (calling such a global *creates* the
//! closure, and `@lifted(caps)(args)` is a direct call); operator calls sit inside
//! `Primitive=1` functions. Each global becomes one VM function (a `Closure=1` global takes
//! its captured values first, then the inner function's parameters).

mod emit;
mod fused;
mod matching;
pub mod memory;
mod peephole;
pub mod plan_devices;
mod primitive;
mod types;

use crate::diagnostics::{CompileError, Diagnostic};
use crate::ir::{AttrValue, Attrs, ConstantData, ExprKind, Function, Module, Span, Symbol};
use crate::kir::Kernel;
use crate::op::OpRegistry;
use crate::ty::TypeMap;
pub use emit::literal_value;
use relay_devices::Tensor;
use relay_runtime::{Attr, Executable, KernelDesc, ScalarValue, SpanTable, VmFunction};
use rustc_hash::FxHashMap as HashMap;
pub use types::{adt_infos, value_type};

/// What [`compile`] does besides emitting bytecode. `Default` is the -O0 form: no fused
/// kernels, the memory plan on, every kernel on the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodegenOptions {
    /// Every primitive function that lowers to kir through the compute rules of the operator
    /// registry gets a JIT-able kernel in its descriptor ([`KernelDesc::kernel`]; all-scalar
    /// single operators keep their unboxed instructions). A primitive function of several
    /// operators that does not lower is then an error.
    pub fused: bool,
    /// Apply the memory plan ([`memory`]: frame arenas and kills at last use). Without it
    /// every tensor comes from the VM's pool and dies when its register is overwritten or its
    /// frame returns.
    pub memory_plan: bool,
    /// The kernels carrying kir will run on devices (the others stay on the host): the device
    /// plan runs after the memory plan ([`plan_devices`]: `DeviceCopy` where a device tensor
    /// must come to the host).
    pub kir_on_device: bool,
}

impl Default for CodegenOptions {
    fn default() -> CodegenOptions {
        CodegenOptions { fused: false, memory_plan: true, kir_on_device: false }
    }
}

/// Compiles every global function of a lowered, typed module to bytecode, as `options` say.
///
/// Operator calls on 0-d operands become the unboxed instruction of their operator's
/// [`ScalarForm`](crate::op::ScalarForm) in `ops`; the others call kernels.
///
/// # Errors
/// Constructs the emitter does not accept (a sign that the lowering passes were not run),
/// constants whose dtype has no tensor storage, and with [`CodegenOptions::fused`] a
/// primitive function of several operators that does not lower.
pub fn compile(
    m: &Module,
    types: &TypeMap,
    ops: &OpRegistry,
    options: &CodegenOptions,
) -> Result<Executable, CompileError> {
    let mut cx = ModuleCx::new(m, types, ops)?;
    cx.fused = options.fused;
    let mut functions = Vec::with_capacity(m.functions.len());
    let mut diags = vec![];
    for g in &m.functions {
        match compile_global(&mut cx, g.name, &g.func, g.span) {
            Ok(f) => functions.push(f),
            Err(d) => diags.push(d),
        }
    }
    if !diags.is_empty() {
        return Err(CompileError::new(diags));
    }
    let mut exe = Executable {
        functions,
        constants: cx.constants,
        kernels: cx.kernels,
        strings: cx.strings,
        adts: types::adt_infos(m),
    };
    if options.memory_plan {
        memory::plan_executable(&mut exe);
    }
    if options.kir_on_device {
        let on_device: Vec<bool> = exe.kernels.iter().map(|k| k.kernel.is_some()).collect();
        plan_devices::plan_executable(&mut exe, &on_device);
    }
    Ok(exe)
}

/// Module-wide tables shared by the function emitters.
pub(crate) struct ModuleCx<'a> {
    pub m: &'a Module,
    pub types: &'a TypeMap,
    /// VM function index of each global.
    pub func_index: HashMap<Symbol, u32>,
    /// Globals with `Closure=1`: calling them creates a closure.
    pub closure_globals: HashMap<Symbol, usize>,
    pub kernels: Vec<KernelDesc>,
    kernel_index: HashMap<String, u32>,
    pub strings: Vec<String>,
    pub constants: Vec<Tensor>,
    /// The operators: their scalar forms, and with `fused` their compute rules.
    pub ops: &'a OpRegistry,
    /// Whether primitives lower to kir through the compute rules; otherwise reference kernels.
    pub fused: bool,
}

impl<'a> ModuleCx<'a> {
    fn new(m: &'a Module, types: &'a TypeMap, ops: &'a OpRegistry) -> Result<ModuleCx<'a>, CompileError> {
        let func_index = m.functions.iter().enumerate().map(|(i, g)| (g.name, i as u32)).collect();
        let closure_globals = m
            .functions
            .iter()
            .filter(|g| is_flag(m, &g.func.attrs, "Closure"))
            .map(|g| (g.name, g.func.params.len()))
            .collect();
        let mut constants = Vec::with_capacity(m.constants.len());
        for c in &m.constants {
            let t = constant_tensor(c).map_err(|e| {
                CompileError::new(vec![Diagnostic::error(Span::default(), format!("constant: {e}"))])
            })?;
            constants.push(t);
        }
        Ok(ModuleCx {
            m,
            types,
            func_index,
            closure_globals,
            kernels: vec![],
            kernel_index: HashMap::default(),
            strings: vec![],
            constants,
            ops,
            fused: false,
        })
    }

    /// The kernel table index for this operator call, sharing identical descriptors.
    pub fn kernel(&mut self, op: &str, attrs: &Attrs, num_inputs: u32, num_outputs: u32) -> u32 {
        let attrs: Vec<(String, Attr)> =
            attrs.0.iter().map(|(k, v)| (self.m.name(*k).to_string(), convert_attr(v))).collect();
        let key = format!("{op}|{attrs:?}|{num_inputs}|{num_outputs}");
        if let Some(&i) = self.kernel_index.get(&key) {
            return i;
        }
        let i = self.kernels.len() as u32;
        self.kernels.push(KernelDesc { op: op.to_string(), attrs, num_inputs, num_outputs, kernel: None });
        self.kernel_index.insert(key, i);
        i
    }

    /// The kernel table index of a kir kernel, sharing structurally equal ones.
    pub fn fused_kernel(&mut self, kernel: &Kernel) -> u32 {
        let bytes = kernel.to_bytes();
        let key = format!("kir|{:016x}|{}", kernel.structural_hash(), bytes.len());
        if let Some(&i) = self.kernel_index.get(&key) {
            if self.kernels[i as usize].kernel.as_deref() == Some(&bytes[..]) {
                return i;
            }
        }
        let i = self.kernels.len() as u32;
        self.kernels.push(KernelDesc {
            op: kernel.name.clone(),
            attrs: vec![],
            num_inputs: kernel.num_inputs() as u32,
            num_outputs: kernel.num_outputs() as u32,
            kernel: Some(bytes),
        });
        self.kernel_index.insert(key, i);
        i
    }

    /// The string table index of `s`.
    pub fn string(&mut self, s: String) -> u32 {
        if let Some(i) = self.strings.iter().position(|x| *x == s) {
            return i as u32;
        }
        self.strings.push(s);
        self.strings.len() as u32 - 1
    }
}

/// Whether `attrs` sets `name=1` (or `True`).
pub(crate) fn is_flag(m: &Module, attrs: &Attrs, name: &str) -> bool {
    matches!(m.attr(attrs, name), Some(AttrValue::Int(1)) | Some(AttrValue::Bool(true)))
}

fn convert_attr(v: &AttrValue) -> Attr {
    match v {
        AttrValue::Int(i) => Attr::Int(*i),
        AttrValue::Float(f) => Attr::Float(*f),
        AttrValue::Bool(b) => Attr::Bool(*b),
        AttrValue::Str(s) => Attr::Str(s.clone()),
        AttrValue::List(xs) => Attr::List(xs.iter().map(convert_attr).collect()),
        AttrValue::Null => Attr::Null,
        AttrValue::Meta { kind, index } => Attr::Str(format!("meta[{kind}][{index}]")),
    }
}

fn compile_global(
    cx: &mut ModuleCx<'_>,
    name: Symbol,
    func: &Function,
    span: Span,
) -> Result<VmFunction, Diagnostic> {
    let m = cx.m;
    // A `Closure=1` global runs its inner function, with the captured values as leading
    // parameters.
    let (params, body, ret) = if is_flag(m, &func.attrs, "Closure") {
        match &m.expr(func.body).kind {
            ExprKind::Function(inner) => {
                let params: Vec<_> = func.params.iter().chain(&inner.params).copied().collect();
                (params, inner.body, inner.body)
            }
            _ => {
                return Err(Diagnostic::error(
                    span,
                    format!("internal: closure global `@{}` does not wrap a function", m.name(name)),
                ))
            }
        }
    } else {
        (func.params.clone(), func.body, func.body)
    };
    let param_types = params
        .iter()
        .map(|&p| cx.types.var(p).map(|t| value_type(m, t)))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            Diagnostic::error(span, format!("internal: untyped parameter in `@{}`", m.name(name)))
        })?;
    let ret_type =
        cx.types.expr(ret).map(|t| value_type(m, t)).ok_or_else(|| {
            Diagnostic::error(span, format!("internal: untyped body in `@{}`", m.name(name)))
        })?;
    let mut em = emit::FnEmitter::new(cx, m.name(name), span.file);
    let (mut code, mut positions) = em.function(&params, body)?;
    let num_regs = peephole::optimize(&mut code, &mut positions, params.len() as u32, em.num_regs());
    let file = m.sources.file(span.file).name.as_str();
    Ok(VmFunction {
        name: m.name(name).to_string(),
        source: m.sources.location(span).unwrap_or_default(),
        param_names: params.iter().map(|&p| m.name(m.var(p).name).to_string()).collect(),
        param_types,
        ret_type,
        num_regs,
        code,
        spans: SpanTable::from_positions(file, &positions),
    })
}

/// The tensor of a metadata constant (elements converted from their `f64` form to its dtype;
/// negative dimensions, which the parser rejects, count as 0).
///
/// # Errors
/// A dtype without tensor storage, or an element count that does not match the shape.
pub fn constant_tensor(c: &ConstantData) -> Result<Tensor, String> {
    let values: Vec<ScalarValue> =
        c.data.iter().map(|&v| ScalarValue::float(relay_devices::DType::F64, v)).collect();
    let shape = c.shape.iter().map(|&d| d.max(0) as usize).collect();
    relay_runtime::tensor_from_scalars(c.dtype, shape, &values)
}
