//! Instruction operands: how each kind is encoded, decoded, printed and verified.

use crate::bytes::{ByteReader, ByteWriter, FormatError};
use crate::scalar::ScalarValue;
use relay_devices::arith::{BinOp, UnOp};
use relay_devices::{DType, DTypeCode};
use std::fmt;

/// A register of the current frame (parameters are registers `0..n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg(pub u32);

/// A position in the current function's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Target(pub u32);

/// An index into the executable's function table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FuncIdx(pub u32);

/// An index into the executable's kernel table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelIdx(pub u32);

/// An index into the executable's constant pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConstIdx(pub u32);

/// An index into the executable's string table (messages of `Fatal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StrIdx(pub u32);

/// A small unsigned immediate: a constructor tag, a field index, a count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Imm(pub u32);

/// What a tensor allocation (`AllocTensor`, `AllocFrame`) holds before the kernel call it is
/// made for: zeros, or whatever its bytes held before, when the compiler proved that the call
/// writes every element before reading any (`relay_kir::coverage::written_before_read`), so
/// zeroing them would be wasted stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Init {
    /// Filled with zeros (reference kernels, kernels that read their outputs, anything not
    /// proven).
    Zero,
    /// Left as it was: the next kernel call, which takes the tensor as an output, writes it
    /// whole first (the verifier checks that such a call follows, `verify.rs`).
    Kernel,
}

impl Init {
    /// Every value, in encoding order.
    pub const ALL: [Init; 2] = [Init::Zero, Init::Kernel];

    /// The name the disassembly shows (`init=zero`, `init=kernel`).
    pub fn name(self) -> &'static str {
        match self {
            Init::Zero => "zero",
            Init::Kernel => "kernel",
        }
    }
}

/// The parts of the executable an operand may point into, for the verifier.
pub struct VerifyCtx {
    /// Registers of the function being verified.
    pub num_regs: u32,
    /// Instructions of the function being verified.
    pub code_len: u32,
    /// Functions in the executable.
    pub num_funcs: u32,
    /// Kernels in the executable.
    pub num_kernels: u32,
    /// Constants in the executable.
    pub num_consts: u32,
    /// Strings in the executable.
    pub num_strings: u32,
}

/// What an instruction operand must support.
pub trait Operand: Sized {
    /// Appends the operand's encoding.
    fn encode(&self, w: &mut ByteWriter);
    /// Reads an operand back.
    fn decode(r: &mut ByteReader<'_>) -> Result<Self, FormatError>;
    /// Checks that the operand points inside the executable.
    fn verify(&self, _ctx: &VerifyCtx) -> Result<(), String> {
        Ok(())
    }
    /// Writes the operand in disassembly syntax. `functions` holds the executable's function
    /// names by index (empty where none are known): a function operand shows as `@name` when
    /// it names one, else as `func#N`.
    fn show(&self, f: &mut fmt::Formatter<'_>, functions: &[String]) -> fmt::Result;
}

fn bound(what: &str, i: u32, n: u32) -> Result<(), String> {
    if i < n {
        Ok(())
    } else {
        Err(format!("{what} {i} out of range (0..{n})"))
    }
}

/// An index operand: encoded as a `u32`, verified against its table's length in the
/// [`VerifyCtx`] field, shown as its prefix and number (or by the given function).
macro_rules! index_operand {
    ($t:ident, $field:ident, $what:literal, $prefix:literal) => {
        index_operand!($t, $field, $what, |i: u32, f: &mut fmt::Formatter<'_>, _: &[String]| {
            write!(f, concat!($prefix, "{}"), i)
        });
    };
    ($t:ident, $field:ident, $what:literal, $show:expr) => {
        impl Operand for $t {
            fn encode(&self, w: &mut ByteWriter) {
                w.u32(self.0);
            }
            fn decode(r: &mut ByteReader<'_>) -> Result<Self, FormatError> {
                Ok($t(r.u32()?))
            }
            fn verify(&self, ctx: &VerifyCtx) -> Result<(), String> {
                bound($what, self.0, ctx.$field)
            }
            fn show(&self, f: &mut fmt::Formatter<'_>, functions: &[String]) -> fmt::Result {
                ($show)(self.0, f, functions)
            }
        }
    };
}

index_operand!(Reg, num_regs, "register", "$");
index_operand!(Target, code_len, "jump target", "@");
// Functions show by name, as Relay writes a global (`@name`): listings then do not change
// when a function is added before another.
index_operand!(FuncIdx, num_funcs, "function", |i: u32, f: &mut fmt::Formatter<'_>, functions: &[String]| {
    match functions.get(i as usize) {
        Some(name) => write!(f, "@{name}"),
        None => write!(f, "func#{i}"),
    }
});
index_operand!(KernelIdx, num_kernels, "kernel", "kernel#");
index_operand!(ConstIdx, num_consts, "constant", "const#");
index_operand!(StrIdx, num_strings, "string", "str#");

impl Operand for Imm {
    fn encode(&self, w: &mut ByteWriter) {
        w.u32(self.0);
    }
    fn decode(r: &mut ByteReader<'_>) -> Result<Self, FormatError> {
        Ok(Imm(r.u32()?))
    }
    fn show(&self, f: &mut fmt::Formatter<'_>, _functions: &[String]) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl<T: Operand> Operand for Box<[T]> {
    fn encode(&self, w: &mut ByteWriter) {
        w.u32(self.len() as u32);
        for x in self.iter() {
            x.encode(w);
        }
    }
    fn decode(r: &mut ByteReader<'_>) -> Result<Self, FormatError> {
        let n = r.len_prefix()?;
        (0..n).map(|_| T::decode(r)).collect()
    }
    fn verify(&self, ctx: &VerifyCtx) -> Result<(), String> {
        self.iter().try_for_each(|x| x.verify(ctx))
    }
    fn show(&self, f: &mut fmt::Formatter<'_>, functions: &[String]) -> fmt::Result {
        f.write_str("[")?;
        for (i, x) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            x.show(f, functions)?;
        }
        f.write_str("]")
    }
}

impl Operand for DType {
    fn encode(&self, w: &mut ByteWriter) {
        w.u8(self.code as u8);
        w.u8(self.bits);
        w.u32(u32::from(self.lanes));
    }
    fn decode(r: &mut ByteReader<'_>) -> Result<Self, FormatError> {
        let code = match r.u8()? {
            0 => DTypeCode::Int,
            1 => DTypeCode::UInt,
            2 => DTypeCode::Float,
            3 => DTypeCode::Bool,
            4 => DTypeCode::BFloat,
            c => return Err(FormatError::Invalid(format!("dtype code {c}"))),
        };
        let bits = r.u8()?;
        let lanes = u16::try_from(r.u32()?).map_err(|_| FormatError::Invalid("dtype lanes".into()))?;
        Ok(DType { code, bits, lanes })
    }
    fn show(&self, f: &mut fmt::Formatter<'_>, _functions: &[String]) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl Operand for ScalarValue {
    fn encode(&self, w: &mut ByteWriter) {
        self.dtype.encode(w);
        w.u64(self.bits);
    }
    fn decode(r: &mut ByteReader<'_>) -> Result<Self, FormatError> {
        Ok(ScalarValue { dtype: DType::decode(r)?, bits: r.u64()? })
    }
    fn show(&self, f: &mut fmt::Formatter<'_>, _functions: &[String]) -> fmt::Result {
        match self.dtype.code {
            DTypeCode::Float | DTypeCode::BFloat => write!(f, "{}:{}", f64::from_bits(self.bits), self.dtype),
            DTypeCode::Bool => write!(f, "{}", self.bits != 0),
            DTypeCode::Int => write!(f, "{}:{}", self.bits as i64, self.dtype),
            DTypeCode::UInt => write!(f, "{}:{}", self.bits, self.dtype),
        }
    }
}

/// An operator is encoded as its index in `ALL` and shown by its mnemonic.
macro_rules! op_operand {
    ($t:ident) => {
        impl Operand for $t {
            fn encode(&self, w: &mut ByteWriter) {
                w.u8(*self as u8);
            }
            fn decode(r: &mut ByteReader<'_>) -> Result<Self, FormatError> {
                let b = r.u8()?;
                $t::ALL
                    .get(b as usize)
                    .copied()
                    .ok_or_else(|| FormatError::Invalid(format!(concat!(stringify!($t), " {}"), b)))
            }
            fn show(&self, f: &mut fmt::Formatter<'_>, _functions: &[String]) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

op_operand!(BinOp);
op_operand!(UnOp);
op_operand!(Init);

impl Operand for Box<[i64]> {
    fn encode(&self, w: &mut ByteWriter) {
        w.u32(self.len() as u32);
        for &x in self.iter() {
            w.u64(x as u64);
        }
    }
    fn decode(r: &mut ByteReader<'_>) -> Result<Self, FormatError> {
        let n = r.len_prefix()?;
        (0..n).map(|_| r.u64().map(|x| x as i64)).collect()
    }
    fn show(&self, f: &mut fmt::Formatter<'_>, _functions: &[String]) -> fmt::Result {
        write!(f, "{:?}", &self[..])
    }
}
