//! The executable file format: a versioned, checksummed binary.
//!
//! Layout: magic `RELAYVM\0`, format version (u32), body length (u64), body, CRC-32 of the
//! body (u32). Loading checks all of these, decodes with bounds-checked reads and runs the
//! [verifier](crate::verify): any malformed or truncated file is an error.

use crate::bytes::{ByteReader, ByteWriter, FormatError};
use crate::executable::{AdtInfo, Attr, ConstructorInfo, Executable, KernelDesc, ValueType, VmFunction};
use crate::isa::Instr;
use crate::operand::Operand;
use crate::scalar::ScalarValue;
use crate::spans::SpanTable;
use crate::verify::Limits;
use relay_devices::{DType, Scalar, Tensor};

/// The first bytes of every executable file: how a host tells one from Relay source.
pub const MAGIC: &[u8; 8] = b"RELAYVM\0";
/// Bumped on any change to the layout or meaning of what is stored (7: each function records
/// where it is defined; 8: and the source position of each instruction; 9: `AllocFrame`'s
/// immediate is a byte offset in the frame arena, no longer a slot number; 10: `AllocTensor`
/// and `AllocFrame` say whether the tensor is zeroed, `init`; 11: a kir `gemm`'s `ldb` is a
/// list of `(extent, stride)` row pairs, `b_rows`).
pub const FORMAT_VERSION: u32 = 11;

/// Why loading an executable failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    /// The bytes are not a well-formed executable.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// The bytecode does not pass verification.
    #[error(transparent)]
    Verify(#[from] crate::verify::VerifyError),
}

impl Executable {
    /// Serializes the executable.
    pub fn save(&self) -> Vec<u8> {
        let mut body = ByteWriter::default();
        write_body(self, &mut body);
        let mut w = ByteWriter::default();
        w.buf.extend_from_slice(MAGIC);
        w.u32(FORMAT_VERSION);
        w.u64(body.buf.len() as u64);
        w.buf.extend_from_slice(&body.buf);
        w.u32(crc32fast::hash(&body.buf));
        w.buf
    }

    /// Reads and verifies an executable written by [`Executable::save`], holding it to the
    /// default [`Limits`].
    ///
    /// # Errors
    /// As [`Executable::load_with`].
    pub fn load(bytes: &[u8]) -> Result<Executable, LoadError> {
        Executable::load_with(bytes, &Limits::default())
    }

    /// Reads an executable written by [`Executable::save`] and verifies it
    /// ([`crate::verify_with`]) against `limits`.
    ///
    /// # Errors
    /// A wrong magic number or version, a checksum mismatch, truncation, an invalid value, or
    /// bytecode that fails verification or claims more than `limits` allow.
    pub fn load_with(bytes: &[u8], limits: &Limits) -> Result<Executable, LoadError> {
        let mut r = ByteReader::new(bytes);
        let magic: Vec<u8> = (0..MAGIC.len()).map(|_| r.u8()).collect::<Result<_, _>>()?;
        if magic != MAGIC {
            return Err(FormatError::BadHeader("wrong magic number".into()).into());
        }
        let version = r.u32()?;
        if version != FORMAT_VERSION {
            return Err(FormatError::BadHeader(format!(
                "format version {version}, expected {FORMAT_VERSION}: compile the program again with this relay-vm"
            ))
            .into());
        }
        let len = usize::try_from(r.u64()?).map_err(|_| FormatError::Invalid("body length".into()))?;
        let start = MAGIC.len() + 12;
        let body = bytes.get(start..start.saturating_add(len)).ok_or(FormatError::Truncated {
            offset: start,
            needed: len.saturating_sub(bytes.len() - start),
        })?;
        let mut tail = ByteReader::new(&bytes[start + len..]);
        let stored = tail.u32()?;
        if !tail.at_end() {
            return Err(FormatError::Invalid("trailing bytes after the checksum".into()).into());
        }
        let computed = crc32fast::hash(body);
        if stored != computed {
            return Err(FormatError::Checksum { stored, computed }.into());
        }
        let mut r = ByteReader::new(body);
        let exe = read_body(&mut r)?;
        if !r.at_end() {
            return Err(FormatError::Invalid("trailing bytes in the body".into()).into());
        }
        crate::verify::verify_with(&exe, limits)?;
        Ok(exe)
    }
}

fn write_body(exe: &Executable, w: &mut ByteWriter) {
    w.u32(exe.strings.len() as u32);
    exe.strings.iter().for_each(|s| w.str(s));
    w.u32(exe.adts.len() as u32);
    for a in &exe.adts {
        w.str(&a.name);
        w.u32(a.type_params.len() as u32);
        a.type_params.iter().for_each(|p| w.str(p));
        w.u32(a.constructors.len() as u32);
        for c in &a.constructors {
            w.str(&c.name);
            write_types(&c.fields, w);
        }
    }
    w.u32(exe.constants.len() as u32);
    exe.constants.iter().for_each(|t| write_tensor(t, w));
    w.u32(exe.kernels.len() as u32);
    for k in &exe.kernels {
        w.str(&k.op);
        w.u32(k.attrs.len() as u32);
        for (name, v) in &k.attrs {
            w.str(name);
            write_attr(v, w);
        }
        w.u32(k.num_inputs);
        w.u32(k.num_outputs);
        match &k.kernel {
            None => w.u8(0),
            Some(bytes) => {
                w.u8(1);
                w.u32(bytes.len() as u32);
                w.buf.extend_from_slice(bytes);
            }
        }
    }
    w.u32(exe.functions.len() as u32);
    for f in &exe.functions {
        w.str(&f.name);
        w.str(&f.source);
        w.u32(f.param_names.len() as u32);
        f.param_names.iter().for_each(|p| w.str(p));
        write_types(&f.param_types, w);
        write_type(&f.ret_type, w);
        w.u32(f.num_regs);
        w.u32(f.code.len() as u32);
        f.code.iter().for_each(|i| i.encode(w));
        f.spans.write(w);
    }
}

fn read_body(r: &mut ByteReader<'_>) -> Result<Executable, FormatError> {
    let strings = read_vec(r, |r| r.str())?;
    let adts = read_vec(r, |r| {
        Ok(AdtInfo {
            name: r.str()?,
            type_params: read_vec(r, |r| r.str())?,
            constructors: read_vec(r, |r| Ok(ConstructorInfo { name: r.str()?, fields: read_types(r)? }))?,
        })
    })?;
    let constants = read_vec(r, read_tensor)?;
    let kernels = read_vec(r, |r| {
        Ok(KernelDesc {
            op: r.str()?,
            attrs: read_vec(r, |r| Ok((r.str()?, read_attr(r)?)))?,
            num_inputs: r.u32()?,
            num_outputs: r.u32()?,
            kernel: match r.u8()? {
                0 => None,
                1 => Some(read_vec(r, |r| r.u8())?),
                t => return Err(FormatError::Invalid(format!("kernel payload tag {t}"))),
            },
        })
    })?;
    let functions = read_vec(r, |r| {
        Ok(VmFunction {
            name: r.str()?,
            source: r.str()?,
            param_names: read_vec(r, |r| r.str())?,
            param_types: read_types(r)?,
            ret_type: read_type(r)?,
            num_regs: r.u32()?,
            code: read_vec(r, Instr::decode)?,
            spans: SpanTable::read(r)?,
        })
    })?;
    Ok(Executable { functions, constants, kernels, strings, adts })
}

/// A length-prefixed list. Collecting through `Result` reserves nothing up front (its size
/// hint has no lower bound), so a corrupt count costs only the items actually decoded.
fn read_vec<T>(
    r: &mut ByteReader<'_>,
    mut item: impl FnMut(&mut ByteReader<'_>) -> Result<T, FormatError>,
) -> Result<Vec<T>, FormatError> {
    let n = r.len_prefix()?;
    (0..n).map(|_| item(r)).collect()
}

fn write_types(ts: &[ValueType], w: &mut ByteWriter) {
    w.u32(ts.len() as u32);
    ts.iter().for_each(|t| write_type(t, w));
}

fn read_types(r: &mut ByteReader<'_>) -> Result<Vec<ValueType>, FormatError> {
    read_vec(r, read_type)
}

/// Types nest as deeply as the program's annotations; bounded so a corrupt file cannot
/// recurse without limit.
const MAX_TYPE_DEPTH: usize = 256;

fn write_type(t: &ValueType, w: &mut ByteWriter) {
    match t {
        ValueType::Tensor { dtype, shape } => {
            w.u8(0);
            dtype.encode(w);
            w.u32(shape.len() as u32);
            for d in shape {
                w.u64(d.map_or(u64::MAX, |d| d as u64));
            }
        }
        ValueType::Tuple(fs) => {
            w.u8(1);
            write_types(fs, w);
        }
        ValueType::Adt { name, args } => {
            w.u8(2);
            w.str(name);
            write_types(args, w);
        }
        ValueType::Func => w.u8(3),
        ValueType::Ref(x) => {
            w.u8(4);
            write_type(x, w);
        }
        ValueType::Param(p) => {
            w.u8(5);
            w.str(p);
        }
    }
}

fn read_type(r: &mut ByteReader<'_>) -> Result<ValueType, FormatError> {
    read_type_at(r, 0)
}

fn read_type_at(r: &mut ByteReader<'_>, depth: usize) -> Result<ValueType, FormatError> {
    if depth > MAX_TYPE_DEPTH {
        return Err(FormatError::Invalid("type nesting".into()));
    }
    let sub = |r: &mut ByteReader<'_>| read_vec(r, |r| read_type_at(r, depth + 1));
    Ok(match r.u8()? {
        0 => {
            let dtype = DType::decode(r)?;
            let shape = read_vec(r, |r| r.u64().map(|d| if d == u64::MAX { None } else { Some(d as i64) }))?;
            ValueType::Tensor { dtype, shape }
        }
        1 => ValueType::Tuple(sub(r)?),
        2 => ValueType::Adt { name: r.str()?, args: sub(r)? },
        3 => ValueType::Func,
        4 => ValueType::Ref(Box::new(read_type_at(r, depth + 1)?)),
        5 => ValueType::Param(r.str()?),
        t => return Err(FormatError::Invalid(format!("type tag {t}"))),
    })
}

fn write_attr(a: &Attr, w: &mut ByteWriter) {
    match a {
        Attr::Int(i) => {
            w.u8(0);
            w.u64(*i as u64);
        }
        Attr::Float(f) => {
            w.u8(1);
            w.u64(f.to_bits());
        }
        Attr::Bool(b) => {
            w.u8(2);
            w.u8(u8::from(*b));
        }
        Attr::Str(s) => {
            w.u8(3);
            w.str(s);
        }
        Attr::List(xs) => {
            w.u8(4);
            w.u32(xs.len() as u32);
            xs.iter().for_each(|x| write_attr(x, w));
        }
        Attr::Null => w.u8(5),
    }
}

fn read_attr(r: &mut ByteReader<'_>) -> Result<Attr, FormatError> {
    read_attr_at(r, 0)
}

fn read_attr_at(r: &mut ByteReader<'_>, depth: usize) -> Result<Attr, FormatError> {
    if depth > MAX_TYPE_DEPTH {
        return Err(FormatError::Invalid("attribute nesting".into()));
    }
    Ok(match r.u8()? {
        0 => Attr::Int(r.u64()? as i64),
        1 => Attr::Float(f64::from_bits(r.u64()?)),
        2 => Attr::Bool(r.u8()? != 0),
        3 => Attr::Str(r.str()?),
        4 => Attr::List(read_vec(r, |r| read_attr_at(r, depth + 1))?),
        5 => Attr::Null,
        t => return Err(FormatError::Invalid(format!("attribute tag {t}"))),
    })
}

fn write_tensor(t: &Tensor, w: &mut ByteWriter) {
    t.dtype().encode(w);
    w.u32(t.shape().len() as u32);
    t.shape().iter().for_each(|&d| w.u64(d as u64));
    for i in 0..t.len() {
        let bits = match t.get(i) {
            Some(Scalar::Bool(b)) => u64::from(b),
            Some(Scalar::Int(v)) => v as u64,
            Some(Scalar::UInt(v)) => v,
            Some(Scalar::Float(v)) => v.to_bits(),
            None => 0,
        };
        w.u64(bits);
    }
}

fn read_tensor(r: &mut ByteReader<'_>) -> Result<Tensor, FormatError> {
    let dtype = DType::decode(r)?;
    // Before any value is converted to it: scalar arithmetic assumes a real element type.
    crate::verify::check_dtype(dtype).map_err(FormatError::Invalid)?;
    let shape: Vec<usize> = read_vec(r, |r| {
        usize::try_from(r.u64()?).map_err(|_| FormatError::Invalid("tensor dimension".into()))
    })?;
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or(FormatError::Invalid("tensor size".into()))?;
    if n > r.remaining() / 8 {
        return Err(FormatError::Truncated {
            offset: 0,
            needed: n.saturating_mul(8).saturating_sub(r.remaining()),
        });
    }
    let values: Vec<ScalarValue> =
        (0..n).map(|_| r.u64().map(|bits| ScalarValue { dtype, bits })).collect::<Result<_, _>>()?;
    crate::scalar::tensor_from_scalars(dtype, shape, &values).map_err(FormatError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_of_more_elements_than_bytes_left_is_truncated_not_an_overflow() {
        let mut w = ByteWriter::default();
        DType::F32.encode(&mut w);
        w.u32(2);
        w.u64(1 << 62);
        w.u64(2);
        let err = read_tensor(&mut ByteReader::new(&w.buf)).unwrap_err();
        assert_eq!(err, FormatError::Truncated { offset: 0, needed: usize::MAX });
    }

    #[test]
    fn a_constant_of_dtype_int0_is_invalid() {
        let mut w = ByteWriter::default();
        DType { bits: 0, ..DType::I32 }.encode(&mut w);
        w.u32(0);
        w.u64(7);
        let err = read_tensor(&mut ByteReader::new(&w.buf)).unwrap_err();
        assert!(matches!(&err, FormatError::Invalid(m) if m.starts_with("dtype int0 ")), "{err}");
    }

    #[test]
    fn an_executable_of_the_previous_version_is_a_clear_error() {
        let mut bytes = Executable::default().save();
        assert_eq!(Executable::load(&bytes), Ok(Executable::default()));
        bytes[MAGIC.len()..MAGIC.len() + 4].copy_from_slice(&(FORMAT_VERSION - 1).to_le_bytes());
        let err = Executable::load(&bytes).unwrap_err().to_string();
        assert!(
            err.contains(&format!("format version {}, expected {FORMAT_VERSION}", FORMAT_VERSION - 1)),
            "{err}"
        );
    }
}
