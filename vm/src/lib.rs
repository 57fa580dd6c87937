//! The Relay bytecode virtual machine (paper §4): instruction set, executable format and
//! interpreter. This crate depends only on `relay-devices`: it runs an [`Executable`] against
//! a kernel table handed to it, and knows nothing of the compiler.

mod bytes;
mod cancel;
mod config;
mod executable;
mod format;
mod interp;
mod isa;
mod liveness;
mod memory;
mod operand;
mod packed_func;
mod scalar;
mod spans;
mod value;
mod verify;

pub use bytes::{ByteReader, ByteWriter, FormatError};
pub use cancel::{CancelHandle, StopReason};
pub use config::{VmConfig, DEFAULT_MEMORY_BYTES};
pub use executable::{AdtInfo, Attr, ConstructorInfo, Executable, KernelDesc, ValueType, VmFunction};
pub use format::{LoadError, FORMAT_VERSION, MAGIC};
pub use interp::{
    empties_at_last_use, CopyStats, InstrClassRow, InstrProfile, Step, Trap, TrapFrame, Vm, MAX_TRAP_FRAMES,
};
pub use isa::{ControlFlow, Instr, InstrClass, INSTRUCTION_DOCS};
pub use liveness::Liveness;
pub use memory::{MemoryStats, POOL_LIMIT_BYTES};
pub use operand::{ConstIdx, FuncIdx, Imm, Init, KernelIdx, Operand, Reg, StrIdx, Target, VerifyCtx};
pub use packed_func::{DevicePackedFunc, KernelTable, PackedFunc};
/// The scalar operators of `Bin`/`Un`, shared with kir and the kernels.
pub use relay_devices::arith::{BinOp, UnOp};
pub use scalar::{binary, tensor_from_scalars, unary, ScalarValue};
pub use spans::{SourcePos, SpanTable};
pub use value::{AdtValue, ClosureValue, Fields, Value};
pub use verify::{allocated_for, check_dtype, verify, verify_with, Limits, VerifyError};
