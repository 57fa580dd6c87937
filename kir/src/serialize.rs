//! A binary encoding of [`Kernel`]s, carried opaquely by the executable's kernel descriptors
//! (the VM never looks inside; the host decodes and verifies before compiling).
//!
//! Layout: name, buffers (name, role, dtype, shape), syms, locals, vars, then the statement
//! tree in prefix order, every list length-prefixed, every enum a one-byte tag. Decoding is
//! bounds-checked and nesting is limited to [`MAX_DEPTH`], so a corrupt payload is an error,
//! never a panic or a stack overflow; the decoded kernel is verified.

use super::{
    BinOp, BufferDecl, BufferId, BufferRole, Expr, Extent, Index, IndexOp, Kernel, Literal, LocalDecl,
    LocalId, LoopKind, RowOffsets, Stmt, SymDecl, SymId, UnOp, VarDecl, VarId, VerifyError, MAX_DEPTH,
};
use relay_devices::{DType, Scalar};
use relay_runtime::{ByteReader, ByteWriter, FormatError, Limits, Operand};

const INDEX_OPS: [IndexOp; 7] = [
    IndexOp::Add,
    IndexOp::Sub,
    IndexOp::Mul,
    IndexOp::FloorDiv,
    IndexOp::FloorMod,
    IndexOp::Min,
    IndexOp::Max,
];
const ROLES: [BufferRole; 3] = [BufferRole::Input, BufferRole::Output, BufferRole::Temp];
const LOOPS: [LoopKind; 4] = [LoopKind::Serial, LoopKind::Vectorize, LoopKind::Unroll, LoopKind::Parallel];

fn tag<T: PartialEq>(table: &[T], v: &T) -> u8 {
    table.iter().position(|x| x == v).unwrap_or(0) as u8
}

fn untag<T: Copy>(table: &[T], r: &mut ByteReader<'_>, what: &str) -> Result<T, FormatError> {
    let t = r.u8()?;
    table.get(usize::from(t)).copied().ok_or_else(|| FormatError::Invalid(format!("kir {what} tag {t}")))
}

fn list<T>(
    r: &mut ByteReader<'_>,
    mut item: impl FnMut(&mut ByteReader<'_>) -> Result<T, FormatError>,
) -> Result<Vec<T>, FormatError> {
    let n = r.len_prefix()?;
    (0..n).map(|_| item(r)).collect()
}

impl Kernel {
    /// The kernel's binary encoding (see the module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = ByteWriter::default();
        w.str(&self.name);
        w.u32(self.buffers.len() as u32);
        for b in &self.buffers {
            w.str(&b.name);
            w.u8(tag(&ROLES, &b.role));
            b.dtype.encode(&mut w);
            w.u32(b.shape.len() as u32);
            for e in &b.shape {
                match e {
                    Extent::Const(c) => {
                        w.u8(0);
                        w.u64(*c as u64);
                    }
                    Extent::Sym(s) => {
                        w.u8(1);
                        w.u32(s.0);
                    }
                }
            }
        }
        w.u32(self.syms.len() as u32);
        self.syms.iter().for_each(|s| w.str(&s.name));
        w.u32(self.locals.len() as u32);
        for l in &self.locals {
            w.str(&l.name);
            l.dtype.encode(&mut w);
        }
        w.u32(self.vars.len() as u32);
        self.vars.iter().for_each(|v| w.str(&v.name));
        write_block(&self.body, &mut w);
        w.buf
    }

    /// [`Kernel::from_bytes_with`] under the default [`Limits`].
    ///
    /// # Errors
    /// As [`Kernel::from_bytes_with`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Kernel, FormatError> {
        Kernel::from_bytes_with(bytes, &Limits::default())
    }

    /// Decodes a kernel written by [`Kernel::to_bytes`], verifies it and checks its
    /// resources ([`Kernel::check_resources`]) against `limits`.
    ///
    /// # Errors
    /// Truncated or malformed bytes, nesting deeper than [`MAX_DEPTH`], trailing bytes, a
    /// kernel that fails [`Kernel::verify`], or one that claims more than `limits` allow.
    pub fn from_bytes_with(bytes: &[u8], limits: &Limits) -> Result<Kernel, FormatError> {
        let kernel = Kernel::decode(bytes)?;
        kernel.check_resources(limits).map_err(|e| invalid(&kernel, e))?;
        Ok(kernel)
    }

    /// Decodes and verifies a kernel written by [`Kernel::to_bytes`], without bounding its
    /// resources (a test's kernel over syms round-trips through this).
    ///
    /// # Errors
    /// Truncated or malformed bytes, nesting deeper than [`MAX_DEPTH`], trailing bytes, or a
    /// kernel that fails [`Kernel::verify`].
    fn decode(bytes: &[u8]) -> Result<Kernel, FormatError> {
        let r = &mut ByteReader::new(bytes);
        let name = r.str()?;
        let buffers = list(r, |r| {
            let name = r.str()?;
            let role = untag(&ROLES, r, "buffer role")?;
            let dtype = DType::decode(r)?;
            let shape = list(r, |r| match r.u8()? {
                0 => Ok(Extent::Const(r.u64()? as i64)),
                1 => Ok(Extent::Sym(SymId(r.u32()?))),
                t => Err(FormatError::Invalid(format!("kir extent tag {t}"))),
            })?;
            Ok(BufferDecl { name, role, dtype, shape })
        })?;
        let syms = list(r, |r| Ok(SymDecl { name: r.str()? }))?;
        let locals = list(r, |r| Ok(LocalDecl { name: r.str()?, dtype: DType::decode(r)? }))?;
        let vars = list(r, |r| Ok(VarDecl { name: r.str()? }))?;
        let body = read_block(r, 0)?;
        if !r.at_end() {
            return Err(FormatError::Invalid("trailing bytes after a kir kernel".into()));
        }
        let kernel = Kernel { name, buffers, syms, locals, vars, body };
        kernel.verify().map_err(|e| invalid(&kernel, e))?;
        Ok(kernel)
    }
}

/// A decoded kernel's failure, naming the kernel.
fn invalid(kernel: &Kernel, e: VerifyError) -> FormatError {
    FormatError::Invalid(format!("kir kernel `{}`: {e}", kernel.name))
}

fn write_block(stmts: &[Stmt], w: &mut ByteWriter) {
    w.u32(stmts.len() as u32);
    for s in stmts {
        match s {
            Stmt::For { var, extent, kind, body } => {
                w.u8(0);
                w.u32(var.0);
                write_index(extent, w);
                w.u8(tag(&LOOPS, kind));
                write_block(body, w);
            }
            Stmt::Store { buf, index, value } => {
                w.u8(1);
                w.u32(buf.0);
                write_index(index, w);
                write_expr(value, w);
            }
            Stmt::Assign { local, value } => {
                w.u8(2);
                w.u32(local.0);
                write_expr(value, w);
            }
            Stmt::If { cond, then, otherwise } => {
                w.u8(3);
                write_expr(cond, w);
                write_block(then, w);
                write_block(otherwise, w);
            }
            Stmt::Gemm { out, a, b, b_offset, b_rows, m, n, k, trans_b } => {
                w.u8(4);
                w.u32(out.0);
                w.u32(a.0);
                w.u32(b.0);
                write_index(b_offset, w);
                w.u32(b_rows.dims().len() as u32);
                for &(extent, stride) in b_rows.dims() {
                    w.u64(extent as u64);
                    w.u64(stride as u64);
                }
                w.u64(*m as u64);
                w.u64(*n as u64);
                w.u64(*k as u64);
                w.u8(u8::from(*trans_b));
            }
        }
    }
}

fn write_index(i: &Index, w: &mut ByteWriter) {
    match i {
        Index::Const(c) => {
            w.u8(0);
            w.u64(*c as u64);
        }
        Index::Var(v) => {
            w.u8(1);
            w.u32(v.0);
        }
        Index::Sym(s) => {
            w.u8(2);
            w.u32(s.0);
        }
        Index::Bin(op, a, b) => {
            w.u8(3);
            w.u8(tag(&INDEX_OPS, op));
            write_index(a, w);
            write_index(b, w);
        }
        Index::Value(e) => {
            w.u8(4);
            write_expr(e, w);
        }
    }
}

fn write_expr(e: &Expr, w: &mut ByteWriter) {
    match e {
        Expr::Const(l) => {
            w.u8(0);
            l.dtype().encode(w);
            let (t, bits) = match l.value() {
                Scalar::Bool(b) => (0, u64::from(b)),
                Scalar::Int(v) => (1, v as u64),
                Scalar::UInt(v) => (2, v),
                Scalar::Float(v) => (3, v.to_bits()),
            };
            w.u8(t);
            w.u64(bits);
        }
        Expr::Load { buf, index } => {
            w.u8(1);
            w.u32(buf.0);
            write_index(index, w);
        }
        Expr::Local(l) => {
            w.u8(2);
            w.u32(l.0);
        }
        Expr::Binary(op, a, b) => {
            w.u8(3);
            w.u8(tag(&BinOp::ALL, op));
            write_expr(a, w);
            write_expr(b, w);
        }
        Expr::Unary(op, a) => {
            w.u8(4);
            w.u8(tag(&UnOp::ALL, op));
            write_expr(a, w);
        }
        Expr::Select(c, a, b) => {
            w.u8(5);
            write_expr(c, w);
            write_expr(a, w);
            write_expr(b, w);
        }
        Expr::Cast(d, a) => {
            w.u8(6);
            d.encode(w);
            write_expr(a, w);
        }
        Expr::Index(i) => {
            w.u8(7);
            write_index(i, w);
        }
        Expr::Reinterpret(d, a) => {
            w.u8(8);
            d.encode(w);
            write_expr(a, w);
        }
    }
}

fn deeper(depth: usize) -> Result<usize, FormatError> {
    if depth >= MAX_DEPTH {
        return Err(FormatError::Invalid(format!("kir nesting deeper than {MAX_DEPTH}")));
    }
    Ok(depth + 1)
}

fn read_block(r: &mut ByteReader<'_>, depth: usize) -> Result<Vec<Stmt>, FormatError> {
    let depth = deeper(depth)?;
    list(r, |r| {
        Ok(match r.u8()? {
            0 => Stmt::For {
                var: VarId(r.u32()?),
                extent: read_index(r, depth)?,
                kind: untag(&LOOPS, r, "loop kind")?,
                body: read_block(r, depth)?,
            },
            1 => Stmt::Store {
                buf: BufferId(r.u32()?),
                index: read_index(r, depth)?,
                value: read_expr(r, depth)?,
            },
            2 => Stmt::Assign { local: LocalId(r.u32()?), value: read_expr(r, depth)? },
            3 => Stmt::If {
                cond: read_expr(r, depth)?,
                then: read_block(r, depth)?,
                otherwise: read_block(r, depth)?,
            },
            4 => Stmt::Gemm {
                out: BufferId(r.u32()?),
                a: BufferId(r.u32()?),
                b: BufferId(r.u32()?),
                b_offset: read_index(r, depth)?,
                b_rows: RowOffsets::new(list(r, |r| Ok((r.u64()? as i64, r.u64()? as i64)))?),
                m: r.u64()? as i64,
                n: r.u64()? as i64,
                k: r.u64()? as i64,
                trans_b: match r.u8()? {
                    0 => false,
                    1 => true,
                    t => return Err(FormatError::Invalid(format!("gemm layout flag {t}"))),
                },
            },
            t => return Err(FormatError::Invalid(format!("kir statement tag {t}"))),
        })
    })
}

fn read_index(r: &mut ByteReader<'_>, depth: usize) -> Result<Index, FormatError> {
    let depth = deeper(depth)?;
    Ok(match r.u8()? {
        0 => Index::Const(r.u64()? as i64),
        1 => Index::Var(VarId(r.u32()?)),
        2 => Index::Sym(SymId(r.u32()?)),
        3 => {
            let op = untag(&INDEX_OPS, r, "index op")?;
            Index::Bin(op, Box::new(read_index(r, depth)?), Box::new(read_index(r, depth)?))
        }
        4 => Index::Value(Box::new(read_expr(r, depth)?)),
        t => return Err(FormatError::Invalid(format!("kir index tag {t}"))),
    })
}

fn read_expr(r: &mut ByteReader<'_>, depth: usize) -> Result<Expr, FormatError> {
    let depth = deeper(depth)?;
    Ok(match r.u8()? {
        0 => {
            let dtype = DType::decode(r)?;
            let (t, bits) = (r.u8()?, r.u64()?);
            let value = match t {
                0 => Scalar::Bool(bits != 0),
                1 => Scalar::Int(bits as i64),
                2 => Scalar::UInt(bits),
                3 => Scalar::Float(f64::from_bits(bits)),
                t => return Err(FormatError::Invalid(format!("kir literal tag {t}"))),
            };
            Expr::Const(Literal::new(dtype, value))
        }
        1 => Expr::Load { buf: BufferId(r.u32()?), index: read_index(r, depth)? },
        2 => Expr::Local(LocalId(r.u32()?)),
        3 => {
            let op = untag(&BinOp::ALL, r, "binary op")?;
            Expr::Binary(op, Box::new(read_expr(r, depth)?), Box::new(read_expr(r, depth)?))
        }
        4 => {
            let op = untag(&UnOp::ALL, r, "unary op")?;
            Expr::Unary(op, Box::new(read_expr(r, depth)?))
        }
        5 => Expr::Select(
            Box::new(read_expr(r, depth)?),
            Box::new(read_expr(r, depth)?),
            Box::new(read_expr(r, depth)?),
        ),
        6 => {
            let d = DType::decode(r)?;
            Expr::Cast(d, Box::new(read_expr(r, depth)?))
        }
        7 => Expr::Index(read_index(r, depth)?),
        8 => {
            let d = DType::decode(r)?;
            Expr::Reinterpret(d, Box::new(read_expr(r, depth)?))
        }
        t => return Err(FormatError::Invalid(format!("kir expression tag {t}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KernelBuilder;

    fn sample() -> Kernel {
        let mut k = KernelBuilder::new("t");
        let n = k.sym("n");
        let x = k.input("x", DType::F32, [Extent::Sym(n), Extent::Const(3)]);
        let ix = k.input("ix", DType::I32, [2]);
        let y = k.output("y", DType::F32, [Extent::Sym(n), Extent::Const(3)]);
        let acc = k.local("acc", DType::F32);
        k.for_(n, LoopKind::Serial, |k, i| {
            k.for_(3, LoopKind::Vectorize, |k, j| {
                let g = Index::value(k.load(ix, &[Index::Const(1)]).cast(DType::I64)).clamp(0, 2);
                let v = k.load(x, &[i.clone(), g]).exp().max(Expr::f32(-0.5));
                k.assign(acc, Expr::local(acc) + v);
                let c = Expr::index(j.clone()).lt(Expr::i64(2));
                k.if_else(
                    c,
                    |k| k.store_at(y, &[i.clone(), j.clone()], Expr::local(acc)),
                    |k| {
                        k.store_at(
                            y,
                            &[i.clone(), j.clone()],
                            Expr::select(Expr::bool(true), -Expr::f32(1.0), Expr::f32(2.0)),
                        )
                    },
                );
            });
        });
        k.finish().unwrap()
    }

    #[test]
    fn round_trips() {
        let k = sample();
        assert_eq!(Kernel::decode(&k.to_bytes()).unwrap(), k);
    }

    #[test]
    fn a_loop_over_a_sym_has_no_static_bound() {
        let err = Kernel::from_bytes(&sample().to_bytes()).unwrap_err().to_string();
        assert!(err.contains("kir kernel `t`: loop `") && err.contains("no static bound"), "{err}");
    }

    #[test]
    fn corrupt_bytes_are_errors() {
        let bytes = sample().to_bytes();
        for cut in 0..bytes.len() {
            assert!(Kernel::from_bytes(&bytes[..cut]).is_err());
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(Kernel::from_bytes(&extra).is_err());
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0xA5;
            let _ = Kernel::from_bytes(&b);
        }
    }
}
