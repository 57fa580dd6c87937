//! The instruction set, defined once: the [`instructions!`] table below generates the
//! [`Instr`] enum, its binary encoder and decoder, operand verification, the disassembler, the
//! one-line documentation of every instruction ([`INSTRUCTION_DOCS`]) and the facts analyses
//! need: which registers an instruction reads and writes, where control goes next, whether it
//! may trap (as Cranelift's instruction definitions carry `branches()`/`terminates_block()`).
//!
//! Each row declares its control flow ([`ControlFlow`]), whether it may trap and its class
//! ([`InstrClass`], what `relay-vm profile` sums time by), and each
//! operand its role: `read`, `write` or `readwrite` registers, `kill` (registers emptied, not
//! read), `target` (jump targets) or `imm` (anything else). A role is checked against the
//! operand's type (a register declared `imm` does not compile), and a row's control flow
//! against its targets, so an instruction cannot be added without its facts.
//!
//! Registers are frame-relative: a call's arguments land in the callee's registers `0..n`
//! of a new window on the VM's value stack. Relay scalars (0-d tensors) live unboxed in
//! registers; `Bin`/`Un`/`Cast` compute on them without touching a kernel.

use crate::bytes::{ByteReader, ByteWriter, FormatError};
use crate::operand::{ConstIdx, FuncIdx, Imm, Init, KernelIdx, Operand, Reg, StrIdx, Target, VerifyCtx};
use crate::scalar::ScalarValue;
use relay_devices::arith::{BinOp, UnOp};
use relay_devices::DType;
use std::fmt;

/// Where control goes after an instruction: the fact control-flow graphs, block boundaries
/// and the verifier's "no falling off the end" check are built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlFlow {
    /// Continues with the next instruction; has no jump targets.
    Next,
    /// Continues with the next instruction or jumps to its target (`If`).
    Branch,
    /// Jumps to one of its targets, never to the next instruction (`Goto`, `SwitchTag`).
    Jump,
    /// Leaves the frame: returns, calls in its place or traps (`Ret`, `TailCall`, `Fatal`);
    /// has no successor in the function.
    Exit,
}

impl ControlFlow {
    /// Whether the next instruction may run after this one.
    pub const fn falls_through(self) -> bool {
        matches!(self, ControlFlow::Next | ControlFlow::Branch)
    }

    /// Whether instructions of this kind have jump targets (checked against each row's
    /// `target` operands when the table compiles).
    const fn has_targets(self) -> bool {
        matches!(self, ControlFlow::Branch | ControlFlow::Jump)
    }
}

macro_rules! instr_classes {
    ($( $(#[doc = $doc:literal])+ $class:ident $name:literal, )*) => {
        /// What kind of work an instruction does: the rows `relay-vm profile` sums the
        /// interpreter's time and instruction counts by. Each row of the instruction table
        /// names its class.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum InstrClass {
            $( $(#[doc = $doc])+ $class, )*
        }

        impl InstrClass {
            /// Every class, in declaration order (`class as usize` indexes it).
            pub const ALL: &'static [InstrClass] = &[ $( InstrClass::$class, )* ];

            /// The class's name in profiles (`kernel call`).
            pub fn name(self) -> &'static str {
                match self { $( InstrClass::$class => $name, )* }
            }
        }
    };
}

instr_classes! {
    /// Calls and tail calls of global functions and closures (the frame set-up only).
    Call "call",
    /// Returns (`RetBin`'s arithmetic included) and `Fatal`.
    Return "return",
    /// Kernel calls (`InvokePacked`), the kernel's own time included.
    KernelCall "kernel call",
    /// Tensor allocation (`AllocTensor`, `AllocFrame`).
    Alloc "alloc",
    /// Building constructor values, tuples and closures (`AllocADT`, `AllocClosure`).
    AdtConstruct "adt construct",
    /// Taking constructor values apart (`GetField`, `GetTag`, `SwitchTag`).
    AdtMatch "adt match",
    /// Jumps, conditional or not (`If`, `IfCmp`, `IfCmpImm`, `Goto`).
    Branch "branch",
    /// Register copies and loads (`Move`, `LoadConst`, `LoadImm`, `DeviceCopy`).
    Move "move",
    /// Arithmetic on unboxed scalars (`Bin`, `BinImm`, `Un`, `Cast`).
    Scalar "scalar",
    /// Reference cells (`RefNew`, `RefRead`, `RefWrite`).
    Ref "ref",
    /// Emptying dead registers (`Kill`).
    Kill "kill",
}

/// Operands of the `read`, `write`, `readwrite` and `kill` roles: registers.
trait RegOperands {
    fn regs(&self) -> &[Reg];
    fn regs_mut(&mut self) -> &mut [Reg];
}

impl RegOperands for Reg {
    fn regs(&self) -> &[Reg] {
        std::slice::from_ref(self)
    }
    fn regs_mut(&mut self) -> &mut [Reg] {
        std::slice::from_mut(self)
    }
}

impl RegOperands for Box<[Reg]> {
    fn regs(&self) -> &[Reg] {
        self
    }
    fn regs_mut(&mut self) -> &mut [Reg] {
        self
    }
}

/// Operands of the `target` role: jump targets.
trait TargetOperands {
    fn targets(&self) -> &[Target];
    fn targets_mut(&mut self) -> &mut [Target];
}

impl TargetOperands for Target {
    fn targets(&self) -> &[Target] {
        std::slice::from_ref(self)
    }
    fn targets_mut(&mut self) -> &mut [Target] {
        std::slice::from_mut(self)
    }
}

impl TargetOperands for Box<[Target]> {
    fn targets(&self) -> &[Target] {
        self
    }
    fn targets_mut(&mut self) -> &mut [Target] {
        self
    }
}

/// Operands of the `imm` role: neither registers nor jump targets. Not implemented for
/// [`Reg`] and [`Target`], so a register or target declared `imm` (invisible to liveness and
/// to renumbering) is a compile error.
trait Immediate {}

impl Immediate for FuncIdx {}
impl Immediate for KernelIdx {}
impl Immediate for ConstIdx {}
impl Immediate for StrIdx {}
impl Immediate for Imm {}
impl Immediate for Init {}
impl Immediate for BinOp {}
impl Immediate for UnOp {}
impl Immediate for DType {}
impl Immediate for ScalarValue {}
impl Immediate for Box<[i64]> {}

/// Compiles only for an `imm` operand's type.
fn immediate<T: Immediate>(_: &T) {}

/// Checks at compile time that operand `$f` fits its role.
macro_rules! check_role {
    (read, $f:ident) => {
        let _: &[Reg] = RegOperands::regs($f);
    };
    (write, $f:ident) => {
        let _: &[Reg] = RegOperands::regs($f);
    };
    (readwrite, $f:ident) => {
        let _: &[Reg] = RegOperands::regs($f);
    };
    (kill, $f:ident) => {
        let _: &[Reg] = RegOperands::regs($f);
    };
    (target, $f:ident) => {
        let _: &[Target] = TargetOperands::targets($f);
    };
    (imm, $f:ident) => {
        immediate($f);
    };
}

/// The registers operand `$f` reads (`read`, `readwrite`), appended to `$out`.
macro_rules! role_uses {
    (read, $f:ident, $out:ident) => {
        $out.extend_from_slice(RegOperands::regs($f))
    };
    (readwrite, $f:ident, $out:ident) => {
        $out.extend_from_slice(RegOperands::regs($f))
    };
    ($other:ident, $f:ident, $out:ident) => {
        let _ = $f;
    };
}

/// The registers operand `$f` writes (`write`, `readwrite`), appended to `$out`.
macro_rules! role_defs {
    (write, $f:ident, $out:ident) => {
        $out.extend_from_slice(RegOperands::regs($f))
    };
    (readwrite, $f:ident, $out:ident) => {
        $out.extend_from_slice(RegOperands::regs($f))
    };
    ($other:ident, $f:ident, $out:ident) => {
        let _ = $f;
    };
}

/// Every register operand `$f` names, whatever its role, appended to `$out`.
macro_rules! role_regs_mut {
    (target, $f:ident, $out:ident) => {
        let _ = $f;
    };
    (imm, $f:ident, $out:ident) => {
        let _ = $f;
    };
    ($reg:ident, $f:ident, $out:ident) => {
        $out.extend(RegOperands::regs_mut($f).iter_mut())
    };
}

/// The jump targets of operand `$f` (`target` role), appended to `$out`.
macro_rules! role_targets {
    (target, $f:ident, $out:ident) => {
        $out.extend(TargetOperands::targets($f).iter().copied())
    };
    ($other:ident, $f:ident, $out:ident) => {
        let _ = $f;
    };
}

/// The jump targets of operand `$f` for rewriting, appended to `$out`.
macro_rules! role_targets_mut {
    (target, $f:ident, $out:ident) => {
        $out.extend(TargetOperands::targets_mut($f).iter_mut())
    };
    ($other:ident, $f:ident, $out:ident) => {
        let _ = $f;
    };
}

/// 1 for a `target` operand, 0 otherwise (to check a row's control flow).
macro_rules! is_target {
    (target) => {
        1
    };
    ($other:ident) => {
        0
    };
}

/// Whether a row declared `traps` or `total` may trap.
macro_rules! may_trap {
    (traps) => {
        true
    };
    (total) => {
        false
    };
}

macro_rules! instructions {
    ($( $(#[doc = $doc:literal])+ $opcode:literal $name:ident ($flow:ident, $trap:ident, $class:ident)
        { $($field:ident : $role:ident $ty:ty),* $(,)? } )*) => {
        /// One VM instruction (see [`INSTRUCTION_DOCS`] for the list).
        #[derive(Clone, Debug, PartialEq)]
        pub enum Instr {
            $( $(#[doc = $doc])+ $name { $( #[allow(missing_docs)] $field: $ty ),* }, )*
        }

        /// Every instruction's name and documentation, in opcode order.
        pub const INSTRUCTION_DOCS: &[(&str, &str)] = &[ $( (stringify!($name), concat!($($doc),+)), )* ];

        // A row's control flow has targets exactly when the row has `target` operands.
        $( const _: () = assert!(
            ControlFlow::$flow.has_targets() == (0 $(+ is_target!($role))* > 0),
            concat!("`", stringify!($name), "`: control flow and `target` operands disagree"),
        ); )*

        impl Instr {
            /// The instruction's name as the disassembler prints it.
            pub fn mnemonic(&self) -> &'static str {
                match self { $( Instr::$name { .. } => stringify!($name), )* }
            }

            /// Where control goes after the instruction.
            pub fn control_flow(&self) -> ControlFlow {
                match self { $( Instr::$name { .. } => ControlFlow::$flow, )* }
            }

            /// What kind of work the instruction does.
            #[inline]
            pub fn class(&self) -> InstrClass {
                match self { $( Instr::$name { .. } => InstrClass::$class, )* }
            }

            /// Whether running the instruction can end in a trap (a kernel or arithmetic
            /// fault, a failed allocation, a value of the wrong kind, a stack overflow) even in
            /// verified code; instructions that only move, build or jump cannot.
            pub fn may_trap(&self) -> bool {
                match self { $( Instr::$name { .. } => may_trap!($trap), )* }
            }

            /// Registers whose value the instruction may read (`read` and `readwrite`
            /// operands: kernel `outputs` may hold preallocated tensors).
            pub fn uses(&self) -> Vec<Reg> {
                let mut out = vec![];
                match self {
                    $( Instr::$name { $($field),* } => { $( role_uses!($role, $field, out); )* } )*
                }
                out
            }

            /// Registers the instruction writes (`write` and `readwrite` operands).
            pub fn defs(&self) -> Vec<Reg> {
                let mut out = vec![];
                match self {
                    $( Instr::$name { $($field),* } => { $( role_defs!($role, $field, out); )* } )*
                }
                out
            }

            /// Every register operand, whatever its role, for passes that renumber registers.
            pub fn regs_mut(&mut self) -> Vec<&mut Reg> {
                let mut out = vec![];
                match self {
                    $( Instr::$name { $($field),* } => { $( role_regs_mut!($role, $field, out); )* } )*
                }
                out
            }

            /// Every jump target operand.
            pub fn targets(&self) -> Vec<Target> {
                let mut out = vec![];
                match self {
                    $( Instr::$name { $($field),* } => { $( role_targets!($role, $field, out); )* } )*
                }
                out
            }

            /// Every jump target operand, for passes that move code around.
            pub fn targets_mut(&mut self) -> Vec<&mut Target> {
                let mut out = vec![];
                match self {
                    $( Instr::$name { $($field),* } => { $( role_targets_mut!($role, $field, out); )* } )*
                }
                out
            }

            /// Appends the binary encoding: opcode byte, then each operand.
            pub fn encode(&self, w: &mut ByteWriter) {
                match self {
                    $( Instr::$name { $($field),* } => {
                        w.u8($opcode);
                        $( check_role!($role, $field); Operand::encode($field, w); )*
                    } )*
                }
            }

            /// Reads one instruction.
            ///
            /// # Errors
            /// An unknown opcode, a truncated operand or an invalid operand value.
            pub fn decode(r: &mut ByteReader<'_>) -> Result<Instr, FormatError> {
                match r.u8()? {
                    $( $opcode => Ok(Instr::$name { $( $field: <$ty as Operand>::decode(r)? ),* }), )*
                    op => Err(FormatError::Invalid(format!("opcode {op:#04x}"))),
                }
            }

            /// Checks that every register, jump target and table index is in range.
            pub fn verify_operands(&self, ctx: &VerifyCtx) -> Result<(), String> {
                match self {
                    $( Instr::$name { $($field),* } => {
                        $( Operand::verify($field, ctx).map_err(|e| format!("{}.{}: {e}", stringify!($name), stringify!($field)))?; )*
                        Ok(())
                    } )*
                }
            }
        }

        impl Instr {
            /// The instruction in disassembly syntax, with function operands named from
            /// `functions` (the executable's function names by index).
            pub fn display<'a>(&'a self, functions: &'a [String]) -> impl fmt::Display + 'a {
                Listed { instr: self, functions }
            }

            fn show(&self, f: &mut fmt::Formatter<'_>, functions: &[String]) -> fmt::Result {
                match self {
                    $( Instr::$name { $($field),* } => {
                        f.write_str(stringify!($name))?;
                        let mut _first = true;
                        $(
                            f.write_str(if _first { " " } else { ", " })?;
                            _first = false;
                            f.write_str(concat!(stringify!($field), "="))?;
                            Operand::show($field, f, functions)?;
                        )*
                        Ok(())
                    } )*
                }
            }
        }
    };
}

/// An instruction with the function names its operands are shown by ([`Instr::display`]).
struct Listed<'a> {
    instr: &'a Instr,
    functions: &'a [String],
}

impl fmt::Display for Listed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.instr.show(f, self.functions)
    }
}

/// Without the executable at hand, functions show by index (`func#N`).
impl fmt::Display for Instr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.show(f, &[])
    }
}

instructions! {
    /// Copies register `src` to `dst`.
    0x01 Move (Next, total, Move) { dst: write Reg, src: read Reg }
    /// Returns `src` from the current function to its caller's destination register.
    0x02 Ret (Exit, total, Return) { src: read Reg }
    /// Calls global function `func` with `args`; the result goes to `dst`.
    0x03 Invoke (Next, traps, Call) { dst: write Reg, func: imm FuncIdx, args: read Box<[Reg]> }
    /// Calls `func` with `args` in place of the current frame (a loop costs no stack).
    0x04 TailCall (Exit, traps, Call) { func: imm FuncIdx, args: read Box<[Reg]> }
    /// Calls the closure in `closure` (captured values first, then `args`); result to `dst`.
    0x05 InvokeClosure (Next, traps, Call) { dst: write Reg, closure: read Reg, args: read Box<[Reg]> }
    /// Calls the closure in `closure` in place of the current frame.
    0x06 TailCallClosure (Exit, traps, Call) { closure: read Reg, args: read Box<[Reg]> }
    /// Runs `kernel` on `inputs`, writing into `outputs` (preallocated by `AllocTensor`, or
    /// allocated from the kernel's shape function when empty): destination passing.
    0x07 InvokePacked (Next, traps, KernelCall) {
        kernel: imm KernelIdx, inputs: read Box<[Reg]>, outputs: readwrite Box<[Reg]>
    }
    /// Allocates a tensor of `dtype` and static `shape` into `dst` from the VM's pool, zeroed
    /// or not as `init` says.
    0x08 AllocTensor (Next, traps, Alloc) {
        dst: write Reg, dtype: imm DType, shape: imm Box<[i64]>, init: imm Init
    }
    /// Builds a constructor value (tuples are tag 0) from `fields` into `dst`.
    0x09 AllocADT (Next, total, AdtConstruct) { dst: write Reg, tag: imm Imm, fields: read Box<[Reg]> }
    /// Builds a closure of `func` capturing `captured` (passed before the call's arguments).
    0x0a AllocClosure (Next, total, AdtConstruct) { dst: write Reg, func: imm FuncIdx, captured: read Box<[Reg]> }
    /// Loads field `index` of the ADT or tuple in `obj` into `dst`.
    0x0b GetField (Next, traps, AdtMatch) { dst: write Reg, obj: read Reg, index: imm Imm }
    /// Loads the constructor tag of `obj` into `dst` as an unboxed `int32`.
    0x0c GetTag (Next, traps, AdtMatch) { dst: write Reg, obj: read Reg }
    /// Jumps to `targets[tag]` for the constructor tag of `obj` (a `match` decision node).
    0x0d SwitchTag (Jump, traps, AdtMatch) { obj: read Reg, targets: target Box<[Target]> }
    /// Falls through when the bool in `cond` is true, jumps to `else_target` otherwise.
    0x0e If (Branch, traps, Branch) { cond: read Reg, else_target: target Target }
    /// Jumps to `target`.
    0x0f Goto (Jump, total, Branch) { target: target Target }
    /// Loads constant tensor `index` into `dst`.
    0x10 LoadConst (Next, total, Move) { dst: write Reg, index: imm ConstIdx }
    /// Loads an unboxed scalar into `dst`.
    0x11 LoadImm (Next, total, Move) { dst: write Reg, value: imm ScalarValue }
    /// Allocates a reference cell holding `value` into `dst`.
    0x12 RefNew (Next, total, Ref) { dst: write Reg, value: read Reg }
    /// Loads the contents of the reference in `cell` into `dst`.
    0x13 RefRead (Next, traps, Ref) { dst: write Reg, cell: read Reg }
    /// Stores `value` into the reference in `cell`.
    0x14 RefWrite (Next, traps, Ref) { cell: read Reg, value: read Reg }
    /// Stops with a trap carrying string `message` (e.g. no `match?` arm matched).
    0x15 Fatal (Exit, traps, Return) { message: imm StrIdx }
    /// `dst = lhs op rhs` on unboxed scalars of one dtype.
    0x16 Bin (Next, traps, Scalar) { op: imm BinOp, dst: write Reg, lhs: read Reg, rhs: read Reg }
    /// `dst = op src` on an unboxed scalar.
    0x17 Un (Next, traps, Scalar) { op: imm UnOp, dst: write Reg, src: read Reg }
    /// Converts the unboxed scalar `src` to `dtype`.
    0x18 Cast (Next, traps, Scalar) { dst: write Reg, src: read Reg, dtype: imm DType }
    /// `dst = lhs op imm` with an immediate right operand (loop counters, constants).
    0x19 BinImm (Next, traps, Scalar) { op: imm BinOp, dst: write Reg, lhs: read Reg, imm: imm ScalarValue }
    /// Falls through when `lhs op rhs` is true, jumps to `else_target` otherwise: a `Bin`
    /// whose result only feeds an `If`, in one dispatch and without writing a register.
    0x1a IfCmp (Branch, traps, Branch) { op: imm BinOp, lhs: read Reg, rhs: read Reg, else_target: target Target }
    /// `IfCmp` with an immediate right operand (`if (%n == 0)`).
    0x1b IfCmpImm (Branch, traps, Branch) {
        op: imm BinOp, lhs: read Reg, imm: imm ScalarValue, else_target: target Target
    }
    /// Returns `lhs op rhs`: a `Bin` whose result is only returned (`fn (%a, %b) { %a + %b }`).
    0x1c RetBin (Exit, traps, Return) { op: imm BinOp, lhs: read Reg, rhs: read Reg }
    /// Returns `lhs op imm` (`1 + @f(%n - 1)`).
    0x1d RetBinImm (Exit, traps, Return) { op: imm BinOp, lhs: read Reg, imm: imm ScalarValue }
    /// Allocates a tensor of `dtype` and static `shape` into `dst` at byte `offset` of the
    /// frame's arena block (the memory plan gave tensors with disjoint live intervals
    /// overlapping bytes), zeroed or not as `init` says; from the VM's pool when those bytes
    /// are still held by a live tensor.
    0x1e AllocFrame (Next, traps, Alloc) {
        dst: write Reg, offset: imm Imm, dtype: imm DType, shape: imm Box<[i64]>, init: imm Init
    }
    /// Empties `regs`, whose values are dead: arena tensors free their bytes, other tensors
    /// go back to the VM's pool for reuse (the memory plan's kills at last use).
    0x1f Kill (Next, total, Kill) { regs: kill Box<[Reg]> }
    /// Copies `src` to `dst` with a device-resident tensor brought to the host (TVM's
    /// `device_copy`); any other value is copied as by `Move`. The device-planning pass puts
    /// it where a device kernel's output reaches the host: a host kernel, a return.
    0x20 DeviceCopy (Next, traps, Move) { dst: write Reg, src: read Reg }
}

impl Instr {
    /// Whether the next instruction may run after this one (verified code never ends on
    /// one that may).
    pub fn falls_through(&self) -> bool {
        self.control_flow().falls_through()
    }

    /// Whether the instruction leaves the frame, whose registers are then emptied.
    pub fn leaves_frame(&self) -> bool {
        self.control_flow() == ControlFlow::Exit
    }

    /// The instructions control may reach right after instruction `pc` (this one): the
    /// next, when it falls through, then its jump targets. Unchecked: a target may be out
    /// of the function's code.
    pub fn successors(&self, pc: usize) -> Vec<usize> {
        let next = self.falls_through().then_some(pc + 1);
        next.into_iter().chain(self.targets().into_iter().map(|t| t.0 as usize)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Instr> {
        vec![
            Instr::Move { dst: Reg(1), src: Reg(0) },
            Instr::Invoke { dst: Reg(2), func: FuncIdx(0), args: vec![Reg(0), Reg(1)].into() },
            Instr::SwitchTag { obj: Reg(0), targets: vec![Target(3), Target(5)].into() },
            Instr::LoadImm { dst: Reg(0), value: ScalarValue { dtype: DType::I32, bits: (-3i64) as u64 } },
            Instr::AllocTensor { dst: Reg(4), dtype: DType::F32, shape: vec![2, 3].into(), init: Init::Zero },
            Instr::Bin { op: BinOp::Lt, dst: Reg(3), lhs: Reg(1), rhs: Reg(2) },
            Instr::Ret { src: Reg(2) },
        ]
    }

    #[test]
    fn encode_decode_round_trip() {
        let mut w = ByteWriter::default();
        for i in sample() {
            i.encode(&mut w);
        }
        let mut r = ByteReader::new(&w.buf);
        let back: Vec<Instr> = (0..sample().len()).map(|_| Instr::decode(&mut r).unwrap()).collect();
        assert_eq!(back, sample());
        assert!(r.at_end());
    }

    #[test]
    fn disassembly() {
        let s: Vec<String> = sample().iter().map(|i| i.to_string()).collect();
        assert_eq!(s[1], "Invoke dst=$2, func=func#0, args=[$0, $1]");
        assert_eq!(s[3], "LoadImm dst=$0, value=-3:int32");
        assert_eq!(s[4], "AllocTensor dst=$4, dtype=float32, shape=[2, 3], init=zero");
        assert_eq!(s[5], "Bin op=lt, dst=$3, lhs=$1, rhs=$2");
        let names = ["main".to_string()];
        assert_eq!(sample()[1].display(&names).to_string(), "Invoke dst=$2, func=@main, args=[$0, $1]");
    }

    #[test]
    fn walkers_see_registers_and_targets() {
        let mut s = sample();
        assert_eq!(s[0].uses(), vec![Reg(0)]);
        assert_eq!(s[1].uses(), vec![Reg(0), Reg(1)]);
        assert_eq!(s[2].uses(), vec![Reg(0)]);
        assert_eq!(s[1].regs_mut().len(), 3);
        for t in s[2].targets_mut() {
            t.0 += 10;
        }
        assert_eq!(s[2], Instr::SwitchTag { obj: Reg(0), targets: vec![Target(13), Target(15)].into() });
        let mut cmp = Instr::IfCmpImm {
            op: BinOp::Eq,
            lhs: Reg(4),
            imm: ScalarValue::bool(true),
            else_target: Target(1),
        };
        assert_eq!(cmp.targets_mut().len(), 1);
        assert_eq!(cmp.uses(), vec![Reg(4)]);
    }

    #[test]
    fn facts_come_from_the_table() {
        let s = sample();
        assert_eq!(s[0].defs(), vec![Reg(1)]);
        assert_eq!(s[6].defs(), vec![]);
        let packed = Instr::InvokePacked {
            kernel: KernelIdx(0),
            inputs: vec![Reg(1)].into(),
            outputs: vec![Reg(2)].into(),
        };
        // Outputs are read too: they may hold preallocated tensors.
        assert_eq!((packed.uses(), packed.defs()), (vec![Reg(1), Reg(2)], vec![Reg(2)]));
        let kill = Instr::Kill { regs: vec![Reg(3)].into() };
        assert!(kill.uses().is_empty() && kill.defs().is_empty());
        assert_eq!(s[0].successors(4), vec![5]);
        assert_eq!(s[2].successors(4), vec![3, 5]);
        assert_eq!(s[6].successors(4), Vec::<usize>::new());
        let branch = Instr::If { cond: Reg(0), else_target: Target(9) };
        assert_eq!(branch.successors(1), vec![2, 9]);
        assert!(!s[2].falls_through() && branch.falls_through() && s[6].leaves_frame());
        assert!(!Instr::Goto { target: Target(0) }.may_trap() && s[1].may_trap());
        assert_eq!(
            s.iter().map(Instr::class).collect::<Vec<_>>(),
            [
                InstrClass::Move,
                InstrClass::Call,
                InstrClass::AdtMatch,
                InstrClass::Move,
                InstrClass::Alloc,
                InstrClass::Scalar,
                InstrClass::Return
            ]
        );
        assert!(InstrClass::ALL.iter().enumerate().all(|(i, c)| *c as usize == i));
    }

    #[test]
    fn bad_opcodes_are_errors() {
        assert!(Instr::decode(&mut ByteReader::new(&[0xff])).is_err());
        assert!(Instr::decode(&mut ByteReader::new(&[0x03, 1])).is_err());
        assert_eq!(INSTRUCTION_DOCS.len(), 32);
    }
}
