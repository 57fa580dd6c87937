//! The instruction set, defined once: the [`instructions!`] table below generates the
//! [`Instr`] enum, its binary encoder and decoder, operand verification, the disassembler and
//! the one-line documentation of every instruction ([`INSTRUCTION_DOCS`]).
//!
//! Registers are frame-relative: a call's arguments land in the callee's registers `0..n`
//! of a new window on the VM's value stack. Relay scalars (0-d tensors) live unboxed in
//! registers; `Bin`/`Un`/`Cast` compute on them without touching a kernel.

use crate::bytes::{ByteReader, ByteWriter, FormatError};
use crate::operand::{
    BinOp, ConstIdx, FuncIdx, Imm, KernelIdx, Operand, Reg, StrIdx, Target, UnOp, VerifyCtx,
};
use crate::scalar::ScalarValue;
use relay_devices::DType;
use std::fmt;

macro_rules! instructions {
    ($( $(#[doc = $doc:literal])+ $opcode:literal $name:ident { $($field:ident : $ty:ty),* $(,)? } )*) => {
        /// One VM instruction (see [`INSTRUCTION_DOCS`] for the list).
        #[derive(Clone, Debug, PartialEq)]
        pub enum Instr {
            $( $(#[doc = $doc])+ $name { $( #[allow(missing_docs)] $field: $ty ),* }, )*
        }

        /// Every instruction's name and documentation, in opcode order.
        pub const INSTRUCTION_DOCS: &[(&str, &str)] = &[ $( (stringify!($name), concat!($($doc),+)), )* ];

        impl Instr {
            /// The instruction's name as the disassembler prints it.
            pub fn mnemonic(&self) -> &'static str {
                match self { $( Instr::$name { .. } => stringify!($name), )* }
            }

            /// Appends the binary encoding: opcode byte, then each operand.
            pub fn encode(&self, w: &mut ByteWriter) {
                match self {
                    $( Instr::$name { $($field),* } => {
                        w.u8($opcode);
                        $( Operand::encode($field, w); )*
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

            /// Every jump target operand, for passes that move code around.
            pub fn targets_mut(&mut self) -> Vec<&mut Target> {
                let mut out = vec![];
                match self {
                    $( Instr::$name { $($field),* } => {
                        $( Visit::targets($field, &mut out); )*
                    } )*
                }
                out
            }

            /// Every register operand, read or written, for passes that renumber registers.
            pub fn regs_mut(&mut self) -> Vec<&mut Reg> {
                let mut out = vec![];
                match self {
                    $( Instr::$name { $($field),* } => {
                        $( Visit::regs_mut($field, &mut out); )*
                    } )*
                }
                out
            }

            /// Registers whose value the instruction may read: every register operand except
            /// a `dst` (kernel `outputs` count, as they may hold preallocated tensors).
            pub fn uses(&self) -> Vec<Reg> {
                let mut out = vec![];
                match self {
                    $( Instr::$name { $($field),* } => {
                        $( if stringify!($field) != "dst" { Visit::regs($field, &mut out); } )*
                    } )*
                }
                out
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

        impl fmt::Display for Instr {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( Instr::$name { $($field),* } => {
                        f.write_str(stringify!($name))?;
                        let mut _first = true;
                        $(
                            f.write_str(if _first { " " } else { ", " })?;
                            _first = false;
                            f.write_str(concat!(stringify!($field), "="))?;
                            Operand::show($field, f)?;
                        )*
                        Ok(())
                    } )*
                }
            }
        }
    };
}

instructions! {
    /// Copies register `src` to `dst`.
    0x01 Move { dst: Reg, src: Reg }
    /// Returns `src` from the current function to its caller's destination register.
    0x02 Ret { src: Reg }
    /// Calls global function `func` with `args`; the result goes to `dst`.
    0x03 Invoke { dst: Reg, func: FuncIdx, args: Box<[Reg]> }
    /// Calls `func` with `args` in place of the current frame (a loop costs no stack).
    0x04 TailCall { func: FuncIdx, args: Box<[Reg]> }
    /// Calls the closure in `closure` (captured values first, then `args`); result to `dst`.
    0x05 InvokeClosure { dst: Reg, closure: Reg, args: Box<[Reg]> }
    /// Calls the closure in `closure` in place of the current frame.
    0x06 TailCallClosure { closure: Reg, args: Box<[Reg]> }
    /// Runs `kernel` on `inputs`, writing into `outputs` (preallocated by `AllocTensor`, or
    /// allocated from the kernel's shape function when empty): destination passing.
    0x07 InvokePacked { kernel: KernelIdx, inputs: Box<[Reg]>, outputs: Box<[Reg]> }
    /// Allocates an uninitialised tensor of `dtype` and static `shape` into `dst`.
    0x08 AllocTensor { dst: Reg, dtype: DType, shape: Box<[i64]> }
    /// Builds a constructor value (tuples are tag 0) from `fields` into `dst`.
    0x09 AllocADT { dst: Reg, tag: Imm, fields: Box<[Reg]> }
    /// Builds a closure of `func` capturing `captured` (passed before the call's arguments).
    0x0a AllocClosure { dst: Reg, func: FuncIdx, captured: Box<[Reg]> }
    /// Loads field `index` of the ADT or tuple in `obj` into `dst`.
    0x0b GetField { dst: Reg, obj: Reg, index: Imm }
    /// Loads the constructor tag of `obj` into `dst` as an unboxed `int32`.
    0x0c GetTag { dst: Reg, obj: Reg }
    /// Jumps to `targets[tag]` for the constructor tag of `obj` (a `match` decision node).
    0x0d SwitchTag { obj: Reg, targets: Box<[Target]> }
    /// Falls through when the bool in `cond` is true, jumps to `else_target` otherwise.
    0x0e If { cond: Reg, else_target: Target }
    /// Jumps to `target`.
    0x0f Goto { target: Target }
    /// Loads constant tensor `index` into `dst`.
    0x10 LoadConst { dst: Reg, index: ConstIdx }
    /// Loads an unboxed scalar into `dst`.
    0x11 LoadImm { dst: Reg, value: ScalarValue }
    /// Allocates a reference cell holding `value` into `dst`.
    0x12 RefNew { dst: Reg, value: Reg }
    /// Loads the contents of the reference in `cell` into `dst`.
    0x13 RefRead { dst: Reg, cell: Reg }
    /// Stores `value` into the reference in `cell`.
    0x14 RefWrite { cell: Reg, value: Reg }
    /// Stops with a trap carrying string `message` (e.g. no `match?` arm matched).
    0x15 Fatal { message: StrIdx }
    /// `dst = lhs op rhs` on unboxed scalars of one dtype.
    0x16 Bin { op: BinOp, dst: Reg, lhs: Reg, rhs: Reg }
    /// `dst = op src` on an unboxed scalar.
    0x17 Un { op: UnOp, dst: Reg, src: Reg }
    /// Converts the unboxed scalar `src` to `dtype`.
    0x18 Cast { dst: Reg, src: Reg, dtype: DType }
    /// `dst = lhs op imm` with an immediate right operand (loop counters, constants).
    0x19 BinImm { op: BinOp, dst: Reg, lhs: Reg, imm: ScalarValue }
    /// Falls through when `lhs op rhs` is true, jumps to `else_target` otherwise: a `Bin`
    /// whose result only feeds an `If`, in one dispatch and without writing a register.
    0x1a IfCmp { op: BinOp, lhs: Reg, rhs: Reg, else_target: Target }
    /// `IfCmp` with an immediate right operand (`if (%n == 0)`).
    0x1b IfCmpImm { op: BinOp, lhs: Reg, imm: ScalarValue, else_target: Target }
    /// Returns `lhs op rhs`: a `Bin` whose result is only returned (`fn (%a, %b) { %a + %b }`).
    0x1c RetBin { op: BinOp, lhs: Reg, rhs: Reg }
    /// Returns `lhs op imm` (`1 + @f(%n - 1)`).
    0x1d RetBinImm { op: BinOp, lhs: Reg, imm: ScalarValue }
    /// Allocates a zeroed tensor of `dtype` and static `shape` into `dst` from slot `slot` of
    /// the frame arena: the buffer the slot's previous occupant used when that one is dead
    /// (the memory plan put tensors with disjoint live intervals in one slot).
    0x1e AllocFrame { dst: Reg, slot: Imm, dtype: DType, shape: Box<[i64]> }
    /// Empties `regs`, whose values are dead: tensors go back to their frame slot or the
    /// VM's pool for reuse (the memory plan's kills at last use).
    0x1f Kill { regs: Box<[Reg]> }
    /// Copies `src` to `dst` with a device-resident tensor brought to the host (TVM's
    /// `device_copy`); any other value is copied as by `Move`. The device-planning pass puts
    /// it where a device kernel's output reaches the host: a host kernel, a return.
    0x20 DeviceCopy { dst: Reg, src: Reg }
}

/// How the generic instruction walkers ([`Instr::targets_mut`], [`Instr::uses`]) see each
/// operand kind: only registers and jump targets contribute.
trait Visit {
    fn targets<'a>(&'a mut self, _out: &mut Vec<&'a mut Target>) {}
    fn regs_mut<'a>(&'a mut self, _out: &mut Vec<&'a mut Reg>) {}
    fn regs(&self, _out: &mut Vec<Reg>) {}
}

impl Visit for Reg {
    fn regs_mut<'a>(&'a mut self, out: &mut Vec<&'a mut Reg>) {
        out.push(self);
    }
    fn regs(&self, out: &mut Vec<Reg>) {
        out.push(*self);
    }
}

impl Visit for Target {
    fn targets<'a>(&'a mut self, out: &mut Vec<&'a mut Target>) {
        out.push(self);
    }
}

impl<T: Visit> Visit for Box<[T]> {
    fn targets<'a>(&'a mut self, out: &mut Vec<&'a mut Target>) {
        self.iter_mut().for_each(|t| t.targets(out));
    }
    fn regs_mut<'a>(&'a mut self, out: &mut Vec<&'a mut Reg>) {
        self.iter_mut().for_each(|r| r.regs_mut(out));
    }
    fn regs(&self, out: &mut Vec<Reg>) {
        self.iter().for_each(|r| r.regs(out));
    }
}

impl Visit for FuncIdx {}
impl Visit for KernelIdx {}
impl Visit for ConstIdx {}
impl Visit for StrIdx {}
impl Visit for Imm {}
impl Visit for BinOp {}
impl Visit for UnOp {}
impl Visit for DType {}
impl Visit for ScalarValue {}
impl Visit for i64 {}

impl Instr {
    /// Registers the instruction writes.
    pub fn defs(&self) -> Vec<Reg> {
        match self {
            Instr::Move { dst, .. }
            | Instr::Invoke { dst, .. }
            | Instr::InvokeClosure { dst, .. }
            | Instr::AllocTensor { dst, .. }
            | Instr::AllocFrame { dst, .. }
            | Instr::AllocADT { dst, .. }
            | Instr::AllocClosure { dst, .. }
            | Instr::GetField { dst, .. }
            | Instr::GetTag { dst, .. }
            | Instr::LoadConst { dst, .. }
            | Instr::LoadImm { dst, .. }
            | Instr::RefNew { dst, .. }
            | Instr::RefRead { dst, .. }
            | Instr::Bin { dst, .. }
            | Instr::BinImm { dst, .. }
            | Instr::Un { dst, .. }
            | Instr::Cast { dst, .. }
            | Instr::DeviceCopy { dst, .. } => vec![*dst],
            Instr::InvokePacked { outputs, .. } => outputs.to_vec(),
            _ => vec![],
        }
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
            Instr::AllocTensor { dst: Reg(4), dtype: DType::F32, shape: vec![2, 3].into() },
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
        assert_eq!(s[5], "Bin op=lt, dst=$3, lhs=$1, rhs=$2");
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
    fn bad_opcodes_are_errors() {
        assert!(Instr::decode(&mut ByteReader::new(&[0xff])).is_err());
        assert!(Instr::decode(&mut ByteReader::new(&[0x03, 1])).is_err());
        assert_eq!(INSTRUCTION_DOCS.len(), 32);
    }
}
