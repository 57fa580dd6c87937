//! kir → host machine code with Cranelift.
//!
//! - **ABI.** Each kernel is one function `extern "C" fn(buffers: *const *mut u8, syms:
//!   *const i64, stop: *const u8) -> i32`: `buffers` holds one address per kir buffer in
//!   declaration order (inputs, outputs and temps interleaved as declared), then one per
//!   packable `gemm` weight operand (`blas/packed.rs`: its repacked copy, or null), `syms` the sym
//!   values; `stop` is a flag polled between iterations of outermost loops (`emit.rs`), and
//!   the result is 1 when the kernel stopped for it, else 0.
//!   [`CompiledKernel::run`] is the safe way to call it.
//! - **Packed weights.** A product of a few rows over `[n, k]` weights the calls keep passing
//!   (a dense layer's) reads them repacked into aligned panels, packed once enough calls
//!   passed the same tensor and kept while the tensor lives (`blas/pack_cache.rs`,
//!   [`CompiledKernel::run_shared`]).
//! - **Safety.** A kernel is verified before compilation, and its accesses are proved in
//!   bounds ([`relay_kir::check_bounds`]) at compile time when it has no syms, or
//!   before every call otherwise, so the generated loads and stores need no checks. Integer
//!   division never traps (`x / 0 == 0`). Inputs are passed read-only and never written.
//! - **SIMD.** Loops marked `vectorize` run 4 lanes at a time in 128-bit registers (`f32x4`,
//!   `i32x4`) with a scalar tail, when the plan of `vector.rs` accepts them: contiguous loads and
//!   stores become vector accesses, loop-invariant loads scalar loads broadcast to the lanes,
//!   other loads per-lane gathers; `max`/`min` and `select` of a comparison become
//!   `maxps`/`minps`/blends; reductions (`acc = acc + e`, `max`, `min`) keep one accumulator
//!   per lane. `a * b + c` on floats becomes a fused multiply-add when the CPU has FMA (in
//!   scalar code too, so vector bodies and tails agree). A straight-line loop evaluating
//!   `exp`/`tanh`/`sigmoid`/... whose iterations are independent runs four vectors per
//!   iteration with their instructions interleaved (`interleave.rs`), in a kernel compiled
//!   without the e-graph pass (`vector::has_chain_loop`).
//! - **Math.** `exp log tanh sigmoid erf` and `sin cos tan asin acos atan sinh cosh` are inline
//!   polynomial approximations (see `math.rs` and `trig.rs`
//!   for their error bounds), identical in scalar and vector code; `pow` calls Rust's `powf`
//!   and keeps its loop scalar.
//! - `unroll` loops with constant extent up to 16 are unrolled; `parallel` is serial.

mod buffers;
mod emit;
mod epilogue;
mod half;
mod interleave;
mod kernel;
mod math;
mod ops;
mod temps;
mod trig;
mod vector;

pub use kernel::{CompiledKernel, KernelStats};

use crate::{JitError, KernelCache, Target};
use cranelift_codegen::ir::types::{F32, F64, I32, I64};
use cranelift_codegen::ir::{AbiParam, Signature, UserFuncName};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Linkage, Module};
use relay_kir::{check_bounds, Kernel};
use std::sync::Arc;
use std::time::Instant;

extern "C" fn relay_jit_powf(a: f32, b: f32) -> f32 {
    a.powf(b)
}

extern "C" fn relay_jit_pow(a: f64, b: f64) -> f64 {
    a.powf(b)
}

/// A Cranelift code generator for the host CPU. Create one per process (it detects the CPU
/// once) and share it: it is `Send + Sync` and compiles concurrently.
pub struct Jit {
    isa: OwnedTargetIsa,
    /// The same host without Cranelift's e-graph pass (`opt_level=none`), for kernels whose
    /// vector loops `emit.rs` interleaves: the pass would regroup each interleaved chain
    /// (it places pure instructions anew, depth-first from their uses).
    in_order: OwnedTargetIsa,
    target: Target,
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jit").field("target", &self.target).finish()
    }
}

fn codegen_error(e: impl std::fmt::Display) -> JitError {
    JitError::Codegen(e.to_string())
}

impl Jit {
    /// A code generator for the host, with every ISA extension the CPU reports. Cranelift's
    /// IR verifier runs in debug builds only.
    pub fn new() -> Result<Jit, JitError> {
        let isa = host_isa("speed")?;
        let in_order = host_isa("none")?;
        let isa_flags: Vec<String> = isa.isa_flags().iter().map(ToString::to_string).collect();
        let target = Target::new(format!("cranelift:{}:{}", isa.triple(), isa_flags.join(",")));
        Ok(Jit { isa, in_order, target })
    }

    /// What this generator compiles for (the cache key component).
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Whether generated code uses fused multiply-add.
    pub fn has_fma(&self) -> bool {
        self.isa.has_native_fma()
    }

    /// Compiles `kernel` (verifying it first; a kernel without syms must also pass the
    /// bounds proof now).
    pub fn compile(&self, kernel: &Kernel) -> Result<CompiledKernel, JitError> {
        let start = Instant::now();
        kernel.verify()?;
        if kernel.syms.is_empty() {
            check_bounds(kernel, &[])?;
        }
        let interleave = vector::has_chain_loop(kernel);
        let isa = if interleave { &self.in_order } else { &self.isa };
        let mut builder = JITBuilder::with_isa(isa.clone(), default_libcall_names());
        builder.symbol("relay_jit_powf", relay_jit_powf as *const u8);
        builder.symbol("relay_jit_pow", relay_jit_pow as *const u8);
        builder.symbol("relay_jit_gemm", crate::blas::gemm::relay_jit_gemm as *const u8);
        builder.symbol("relay_jit_epilogue", crate::blas::epilogue::relay_jit_epilogue as *const u8);
        let mut module = JITModule::new(builder);
        let pointer = module.target_config().pointer_type();
        let mut sig = module.make_signature();
        sig.params.extend([AbiParam::new(pointer); 3]);
        sig.returns.push(AbiParam::new(I32));
        // The kernel's name is its symbol: cranelift-jit lists it in `/tmp/perf-<pid>.map`
        // when run under `perf record`, so profiles name each kernel.
        let id = module.declare_function(&kernel.name, Linkage::Local, &sig).map_err(codegen_error)?;
        let powf = declare_math(&mut module, "relay_jit_powf", F32)?;
        let pow = declare_math(&mut module, "relay_jit_pow", F64)?;
        let mut gemm_sig: Signature = module.make_signature();
        gemm_sig.params.extend([AbiParam::new(pointer); 5]);
        gemm_sig.params.extend([AbiParam::new(I64); 5]);
        let gemm =
            module.declare_function("relay_jit_gemm", Linkage::Import, &gemm_sig).map_err(codegen_error)?;
        let mut epilogue_sig: Signature = module.make_signature();
        epilogue_sig.params.extend([AbiParam::new(pointer); 5]);
        let epilogue = module
            .declare_function("relay_jit_epilogue", Linkage::Import, &epilogue_sig)
            .map_err(codegen_error)?;

        let mut ctx = module.make_context();
        ctx.func.signature = sig;
        ctx.func.name = UserFuncName::user(0, id.as_u32());
        let imports = emit::Imports {
            powf: module.declare_func_in_func(powf, &mut ctx.func),
            pow: module.declare_func_in_func(pow, &mut ctx.func),
            gemm: module.declare_func_in_func(gemm, &mut ctx.func),
            epilogue: module.declare_func_in_func(epilogue, &mut ctx.func),
        };
        let mut fctx = FunctionBuilderContext::new();
        let builder = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let vectorized_loops =
            emit::Emitter::new(builder, kernel, self.isa.has_native_fma(), interleave, imports)
                .finish(module.target_config())?;
        module.define_function(id, &mut ctx).map_err(codegen_error)?;
        let code_bytes = ctx.compiled_code().map_or(0, |c| c.code_info().total_size as usize);
        module.clear_context(&mut ctx);
        module.finalize_definitions().map_err(codegen_error)?;
        let code = module.get_finalized_function(id);
        let stats = KernelStats { compile_time: start.elapsed(), code_bytes, vectorized_loops };
        // SAFETY: `code` is the finalised function just defined with the signature
        // `(ptr, ptr, ptr) -> i32` in the platform's default (C) calling convention, and the
        // module that owns its memory moves into the `CompiledKernel` with it.
        Ok(unsafe { CompiledKernel::new(kernel.clone(), module, code, stats) })
    }

    /// The compiled kernel for `kernel` from `cache`, compiling it on a miss.
    pub fn compile_cached(
        &self,
        cache: &KernelCache<CompiledKernel>,
        kernel: &Kernel,
    ) -> Result<Arc<CompiledKernel>, JitError> {
        cache.get_or_compile(kernel, &self.target, |k| self.compile(k))
    }
}

/// A code generator for the host at Cranelift's `opt_level` (`speed` or `none`), with every
/// ISA extension the CPU reports. Cranelift's IR verifier runs in debug builds only.
fn host_isa(opt_level: &str) -> Result<OwnedTargetIsa, JitError> {
    let mut flags = settings::builder();
    let verifier = if cfg!(debug_assertions) { "true" } else { "false" };
    for (name, value) in [
        ("opt_level", opt_level),
        ("enable_verifier", verifier),
        ("use_colocated_libcalls", "false"),
        ("is_pic", "false"),
    ] {
        flags.set(name, value).map_err(codegen_error)?;
    }
    cranelift_native::builder()
        .map_err(|e| JitError::Host(e.to_string()))?
        .finish(settings::Flags::new(flags))
        .map_err(codegen_error)
}

/// Declares an imported `fn(T, T) -> T`.
fn declare_math(
    module: &mut JITModule,
    name: &str,
    ty: cranelift_codegen::ir::Type,
) -> Result<FuncId, JitError> {
    let mut sig: Signature = module.make_signature();
    sig.params.extend([AbiParam::new(ty), AbiParam::new(ty)]);
    sig.returns.push(AbiParam::new(ty));
    module.declare_function(name, Linkage::Import, &sig).map_err(codegen_error)
}
