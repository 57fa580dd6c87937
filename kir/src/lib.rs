//! kir: the kernel IR — loop nests over flat, row-major buffers.
//!
//! FuseOps turns each fused group of Relay operators into one kir [`Kernel`] by composing the
//! ops' compute rules, so intermediate tensors live in registers, never in memory
//! (ARCHITECTURE.md §3 "Kernels"). The VM calls the compiled kernel through `InvokePacked` in
//! destination-passing style: inputs and preallocated outputs are passed in, nothing is
//! returned. kir imports nothing from the Relay IR; its only outside vocabulary is
//! [`relay_devices::DType`] and [`relay_devices::Tensor`].
//!
//! # The shape of a kernel
//!
//! ```text
//! kernel fused_mul_add_sigmoid(a: float32[n], b: float32[n], c: float32[n]) -> (y: float32[n]) {
//!   for i0 in 0..n vectorize {
//!     y[i0] = sigmoid(a[i0] * b[i0] + c[i0]);
//!   }
//! }
//! ```
//!
//! - **Buffers** ([`BufferDecl`], [`BufferId`]) have a dtype and a shape of [`Extent`]s
//!   (constants or runtime size parameters). They are contiguous and row-major; a kernel
//!   addresses them with one flat element [`Index`] (see [`KernelBuilder::at`] for row-major
//!   flattening). Each buffer is an input (read-only), an output (read/write, owned by the
//!   caller) or a temp (a scratch buffer the runtime allocates, zero-filled, per call).
//!   Parameters are passed as all inputs in declaration order, then all outputs.
//! - **Syms** ([`SymId`]) are runtime `i64` size parameters, one per `?` dimension; callers pass
//!   them (or derive them from tensor shapes with [`infer_syms`]); they must be `>= 0`.
//! - **Locals** ([`LocalId`]) are typed scalar variables (accumulators), zero at kernel entry.
//! - **Loop vars** ([`VarId`]) are bound by exactly one `for` each and range over `0..extent`.
//! - **Statements** ([`Stmt`]): `for`, `store`, `assign` (to a local), `if`, and one intrinsic,
//!   `gemm` (a float32 matrix product over whole buffers), which backends may run
//!   natively and which otherwise means its loops ([`Kernel::expand_intrinsics`]).
//! - **Index** expressions ([`Index`]) are `i64` arithmetic on constants, loop vars and syms:
//!   `+ - *`, floor division and floor modulo by a positive divisor, `min`, `max`, and the
//!   value of an integer scalar expression ([`Index::Value`], for gathers such as `take`).
//! - **Scalar expressions** ([`Expr`]) are typed; see the typing table below.
//!
//! # Typing (checked by [`Kernel::verify`])
//!
//! There is no implicit promotion: both operands of a binary op have the same dtype; use
//! [`Expr::cast`]. "num" is any int, uint or float dtype; "f32" ops exist only for `float32`.
//!
//! | expression | operands | result |
//! |---|---|---|
//! | `+ - * max min` | num, num | same |
//! | `/` | num, num | same (ints truncate toward zero) |
//! | `floordiv floormod` | num, num | same (quotient rounded toward -inf) |
//! | `pow` | float, float | same |
//! | `== != < <= > >=` | same dtype (not bool for ordering) | bool |
//! | `and or` | bool or int | same (logical for bool, bitwise for ints) |
//! | `neg abs sign` | num | same (wrapping for ints) |
//! | `not` | bool or int | same (bitwise for ints) |
//! | `sqrt rsqrt floor ceil round` | float | same (`round`: ties away from zero) |
//! | `exp log tanh sigmoid erf` | f32 | f32 |
//! | `select(c, a, b)` | bool, T, T | T (both arms are evaluated) |
//! | `cast<T>(e)` | any | T (Rust `as` semantics, see below; to or from a half float only from or to float32) |
//! | `load`, `local`, literal | — | declared dtype |
//! | `index(i)` | index | int64 |
//!
//! The operators and their meaning are the workspace's one scalar arithmetic,
//! [`relay_devices::arith`], which the VM and the reference kernels share. Integer `/`,
//! `floordiv` and `floormod` by 0 give 0 (no trap); `floormod` has the sign of the divisor. Casts follow Rust's `as`: ints wrap, float→int saturates and maps NaN to 0,
//! anything non-zero becomes `true`.
//!
//! Float `max(a, b)` is `a > b ? a : b` and `min(a, b)` is `a < b ? a : b` (the forms x86
//! lowers to `maxps`/`minps`): if either is NaN the result is `b`. Integer arithmetic wraps at the dtype's width. Storable
//! dtypes are those a [`relay_devices::Tensor`] can hold: bool, int8–64, uint8–64, float16,
//! bfloat16, float32/64. The half floats are storage only ([`half`]): a buffer may hold them,
//! but no local, literal or operator: loads are widened to float32 with a cast, and a cast
//! from float32 rounds a result back, to nearest even, once per Relay operator.
//!
//! # Memory safety
//!
//! Kernels are called from safe Rust. Before a kernel runs, [`check_args`] checks the tensors
//! against the declarations and [`check_bounds`] proves, by interval arithmetic over loop
//! ranges and sym values, that every load and store index is inside its buffer and every
//! index divisor is positive. Conditions of `if` and `select` are not used by the proof: a
//! guarded access must still be in bounds, so clamp it ([`Index::clamp`]), e.g. for padding.
//! Kernels whose accesses cannot be proved are rejected with an error, by the interpreter and
//! by every backend alike.
//!
//! # Numerics contract for backends
//!
//! Backends must reproduce the interpreter ([`interp`]) exactly for integer and boolean code.
//! For floats they may contract `a * b + c` into a fused multiply-add, reassociate reductions
//! in `vectorize` loops, and use approximations for `exp log tanh sigmoid erf` with the error
//! bounds they document.

pub mod affine;
mod batch;
mod bounds;
mod builder;
mod call;
mod copies;
pub mod coverage;
mod expr;
pub mod half;
mod hash;
pub mod interp;
mod intrinsics;
mod print;
mod resources;
mod rows;
mod serialize;
mod simplify;
mod stmt;
mod verify;

pub use batch::{batched, per_request_inputs, BatchError};
pub use bounds::{check_bounds, BoundsError};
pub use builder::KernelBuilder;
pub use call::{buffer_shape, check_args, infer_syms, CallError};
pub use copies::eliminate_copies;
pub use expr::{Expr, Index, IndexOp, Literal};
pub use hash::StructuralKey;
pub use relay_devices::arith::{cast, eval_binary, eval_unary, BinOp, UnOp};
pub use rows::{RowOffsets, MAX_ROW_PAIRS};
pub use simplify::simplify_indices;
pub use stmt::{gemm_b_row, gemm_b_span, LoopKind, Stmt};
pub use verify::{VerifyError, MAX_DEPTH};

use relay_devices::DType;

macro_rules! kir_id {
    ($(#[doc = $doc:literal] $name:ident;)*) => {$(
        #[doc = $doc]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            /// The position of the declaration in its kernel's table.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    )*};
}

kir_id! {
    /// A buffer of a kernel: an index into [`Kernel::buffers`].
    BufferId;
    /// A runtime size parameter: an index into [`Kernel::syms`].
    SymId;
    /// A scalar local variable: an index into [`Kernel::locals`].
    LocalId;
    /// A loop variable: an index into [`Kernel::vars`].
    VarId;
}

/// One dimension of a buffer: a constant or a runtime size parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extent {
    /// A size known when the kernel is built (`>= 0`).
    Const(i64),
    /// A size passed at run time.
    Sym(SymId),
}

impl Extent {
    /// The size, given the sym values of a call; `None` for a sym past `syms`.
    pub fn resolve(self, syms: &[i64]) -> Option<i64> {
        match self {
            Extent::Const(c) => Some(c),
            Extent::Sym(s) => syms.get(s.index()).copied(),
        }
    }
}

impl From<i64> for Extent {
    fn from(c: i64) -> Self {
        Extent::Const(c)
    }
}

impl From<SymId> for Extent {
    fn from(s: SymId) -> Self {
        Extent::Sym(s)
    }
}

impl From<Extent> for Index {
    fn from(e: Extent) -> Self {
        match e {
            Extent::Const(c) => Index::Const(c),
            Extent::Sym(s) => Index::Sym(s),
        }
    }
}

/// What a buffer is to the kernel's caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferRole {
    /// A parameter the kernel only reads (stores to it are rejected by the verifier).
    Input,
    /// A parameter the kernel writes (destination-passing style); it may also read it.
    Output,
    /// Scratch memory allocated zero-filled for each call and dropped after it.
    Temp,
}

/// A buffer: name (for printing only), role, dtype and row-major shape.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferDecl {
    /// Name used by the printer; not part of the kernel's structure.
    pub name: String,
    /// Input, output or temp.
    pub role: BufferRole,
    /// Element type; must be storable in a [`relay_devices::Tensor`].
    pub dtype: DType,
    /// Dimensions, outermost first; `[]` is a scalar (one element).
    pub shape: Vec<Extent>,
}

/// A runtime size parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct SymDecl {
    /// Name used by the printer.
    pub name: String,
}

/// A scalar local variable.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalDecl {
    /// Name used by the printer.
    pub name: String,
    /// Its dtype (any storable dtype).
    pub dtype: DType,
}

/// A loop variable.
#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    /// Name used by the printer.
    pub name: String,
}

/// A kernel: declarations and a statement list. Build one with [`KernelBuilder`]; a kernel
/// built by hand must pass [`Kernel::verify`] before it is interpreted or compiled.
///
/// Equality (`==`) compares everything including names; [`Kernel::structural_key`] compares
/// structure only (names ignored, loop vars and locals renamed canonically).
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// Name used by the printer and in symbol names of generated code.
    pub name: String,
    /// All buffers: parameters (by role) and temps, in declaration order.
    pub buffers: Vec<BufferDecl>,
    /// Runtime size parameters, in the order callers pass them.
    pub syms: Vec<SymDecl>,
    /// Scalar locals.
    pub locals: Vec<LocalDecl>,
    /// Loop variables (each bound by exactly one `for`).
    pub vars: Vec<VarDecl>,
    /// The statements.
    pub body: Vec<Stmt>,
}

impl Kernel {
    /// The buffers of `role`, in declaration order (for inputs and outputs, parameter order).
    pub fn buffers_with_role(&self, role: BufferRole) -> impl Iterator<Item = BufferId> + '_ {
        self.buffers.iter().enumerate().filter(move |(_, b)| b.role == role).map(|(i, _)| BufferId(i as u32))
    }

    /// Number of input parameters.
    pub fn num_inputs(&self) -> usize {
        self.buffers_with_role(BufferRole::Input).count()
    }

    /// Number of output parameters.
    pub fn num_outputs(&self) -> usize {
        self.buffers_with_role(BufferRole::Output).count()
    }

    /// The declaration of `buf`, if it exists.
    pub fn buffer(&self, buf: BufferId) -> Option<&BufferDecl> {
        self.buffers.get(buf.index())
    }
}
