//! The C-like text form of kernels (`relay-vm dump --kernels`).
//!
//! ```text
//! kernel softmax[n](x: float32[n, 10]) -> (y: float32[n, 10]) {
//!   local m: float32;
//!   for i in 0..n {
//!     m = -inf;
//!     for j in 0..10 vectorize {
//!       m = max(m, x[i * 10 + j]);
//!     }
//!     ...
//! ```
//!
//! Index `//` and `%` are floor division and modulo; `a[i]` is a flat element index;
//! `float32(e)` is a cast; `index(i)` is an index used as an `int64` value. Names that
//! occur more than once get a numeric suffix, so the text is unambiguous.

use super::{BinOp, BufferId, BufferRole, Expr, Extent, Index, IndexOp, Kernel, LoopKind, Stmt, UnOp};
use relay_devices::{DType, Scalar};
use std::collections::HashMap;
use std::fmt::{self, Write};

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut p = Printer::new(self);
        p.kernel();
        f.write_str(&p.out)
    }
}

struct Names {
    buffers: Vec<String>,
    syms: Vec<String>,
    locals: Vec<String>,
    vars: Vec<String>,
}

struct Printer<'k> {
    k: &'k Kernel,
    names: Names,
    out: String,
}

const P_OR: u8 = 1;
const P_AND: u8 = 2;
const P_CMP: u8 = 3;
const P_ADD: u8 = 4;
const P_MUL: u8 = 5;
const P_UNARY: u8 = 6;

impl<'k> Printer<'k> {
    fn new(k: &'k Kernel) -> Self {
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut unique = |name: &str| {
            let n = seen.entry(name.to_string()).or_insert(0);
            *n += 1;
            if *n == 1 {
                name.to_string()
            } else {
                format!("{name}_{}", *n - 1)
            }
        };
        let names = Names {
            syms: k.syms.iter().map(|s| unique(&s.name)).collect(),
            buffers: k.buffers.iter().map(|b| unique(&b.name)).collect(),
            locals: k.locals.iter().map(|l| unique(&l.name)).collect(),
            vars: k.vars.iter().map(|v| unique(&v.name)).collect(),
        };
        Printer { k, names, out: String::new() }
    }

    fn name(table: &[String], id: usize) -> &str {
        table.get(id).map_or("<undeclared>", String::as_str)
    }

    fn kernel(&mut self) {
        let k = self.k;
        self.out.push_str("kernel ");
        self.out.push_str(&k.name);
        if !k.syms.is_empty() {
            let syms = self.names.syms.join(", ");
            let _ = write!(self.out, "[{syms}]");
        }
        let params = |p: &Self, role| {
            k.buffers_with_role(role).map(|b| p.decl(b.index())).collect::<Vec<_>>().join(", ")
        };
        let (ins, outs) = (params(self, BufferRole::Input), params(self, BufferRole::Output));
        let _ = writeln!(self.out, "({ins}) -> ({outs}) {{");
        for t in k.buffers_with_role(BufferRole::Temp) {
            let decl = self.decl(t.index());
            let _ = writeln!(self.out, "  temp {decl};");
        }
        for (i, l) in k.locals.iter().enumerate() {
            let _ = writeln!(self.out, "  local {}: {};", self.names.locals[i], l.dtype);
        }
        self.stmts(&k.body, 1);
        self.out.push_str("}\n");
    }

    fn decl(&self, b: usize) -> String {
        let decl = &self.k.buffers[b];
        let dims: Vec<String> = decl
            .shape
            .iter()
            .map(|e| match e {
                Extent::Const(c) => c.to_string(),
                Extent::Sym(s) => Self::name(&self.names.syms, s.index()).to_string(),
            })
            .collect();
        format!("{}: {}[{}]", self.names.buffers[b], decl.dtype, dims.join(", "))
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn stmts(&mut self, body: &[Stmt], depth: usize) {
        for s in body {
            self.stmt(s, depth);
        }
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) {
        self.indent(depth);
        match s {
            Stmt::For { var, extent, kind, body } => {
                let _ = write!(self.out, "for {} in 0..", Self::name(&self.names.vars, var.index()));
                self.index(extent, P_ADD);
                self.out.push_str(match kind {
                    LoopKind::Serial => "",
                    LoopKind::Vectorize => " vectorize",
                    LoopKind::Unroll => " unroll",
                    LoopKind::Parallel => " parallel",
                });
                self.out.push_str(" {\n");
                self.stmts(body, depth + 1);
                self.indent(depth);
                self.out.push_str("}\n");
            }
            Stmt::Store { buf, index, value } => {
                self.out.push_str(Self::name(&self.names.buffers, buf.index()));
                self.out.push('[');
                self.index(index, 0);
                self.out.push_str("] = ");
                self.expr(value, 0);
                self.out.push_str(";\n");
            }
            Stmt::Gemm { out, a, b, b_offset, b_rows, m, n, k, trans_b } => {
                let name = |id: &BufferId| Self::name(&self.names.buffers, id.index());
                let (o, a, b) = (name(out), name(a), name(b));
                let _ = write!(self.out, "gemm({o}, {a}, {b}");
                // A whole `b` prints as before; a block of it with its offset and row stride, a
                // window with its `(extent, stride)` rows.
                if b_offset.as_const() != Some(0) || b_rows.ldb() != Some(super::gemm_b_row(*n, *k, *trans_b))
                {
                    self.out.push('[');
                    self.index(b_offset, 0);
                    self.out.push_str("..], ");
                    let _ = match b_rows.ldb() {
                        Some(ldb) => write!(self.out, "ldb={ldb}"),
                        None => write!(self.out, "rows={:?}", b_rows.dims()),
                    };
                }
                let _ = writeln!(self.out, ", m={m}, n={n}, k={k}, trans_b={trans_b});");
            }
            Stmt::Assign { local, value } => {
                let _ = write!(self.out, "{} = ", Self::name(&self.names.locals, local.index()));
                self.expr(value, 0);
                self.out.push_str(";\n");
            }
            Stmt::If { cond, then, otherwise } => {
                self.out.push_str("if ");
                self.expr(cond, 0);
                self.out.push_str(" {\n");
                self.stmts(then, depth + 1);
                self.indent(depth);
                if !otherwise.is_empty() {
                    self.out.push_str("} else {\n");
                    self.stmts(otherwise, depth + 1);
                    self.indent(depth);
                }
                self.out.push_str("}\n");
            }
        }
    }

    fn open(&mut self, prec: u8, ctx: u8) {
        if prec < ctx {
            self.out.push('(');
        }
    }

    fn close(&mut self, prec: u8, ctx: u8) {
        if prec < ctx {
            self.out.push(')');
        }
    }

    fn index(&mut self, i: &Index, ctx: u8) {
        match i {
            Index::Const(c) => {
                let _ = write!(self.out, "{c}");
            }
            Index::Var(v) => self.out.push_str(Self::name(&self.names.vars, v.index())),
            Index::Sym(s) => self.out.push_str(Self::name(&self.names.syms, s.index())),
            Index::Bin(op @ (IndexOp::Min | IndexOp::Max), a, b) => {
                self.out.push_str(if *op == IndexOp::Min { "min(" } else { "max(" });
                self.index(a, 0);
                self.out.push_str(", ");
                self.index(b, 0);
                self.out.push(')');
            }
            Index::Bin(op, a, b) => {
                let (prec, sym) = match op {
                    IndexOp::Add => (P_ADD, " + "),
                    IndexOp::Sub => (P_ADD, " - "),
                    IndexOp::Mul => (P_MUL, " * "),
                    IndexOp::FloorDiv => (P_MUL, " // "),
                    _ => (P_MUL, " % "),
                };
                self.open(prec, ctx);
                self.index(a, prec);
                self.out.push_str(sym);
                self.index(b, prec + 1);
                self.close(prec, ctx);
            }
            Index::Value(e) => self.expr(e, ctx),
        }
    }

    fn literal(&mut self, dtype: DType, v: Scalar) {
        let _ = match v {
            Scalar::Bool(b) => write!(self.out, "{b}"),
            Scalar::Float(x) if dtype == DType::F32 => write!(self.out, "{:?}", x as f32),
            Scalar::Int(x) if dtype == DType::I32 => write!(self.out, "{x}"),
            Scalar::Float(x) => write!(self.out, "{x:?}f64"),
            Scalar::Int(x) => write!(self.out, "{x}i{}", dtype.bits),
            Scalar::UInt(x) => write!(self.out, "{x}u{}", dtype.bits),
        };
    }

    fn call(&mut self, name: &str, args: &[&Expr]) {
        self.out.push_str(name);
        self.out.push('(');
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.expr(a, 0);
        }
        self.out.push(')');
    }

    fn expr(&mut self, e: &Expr, ctx: u8) {
        match e {
            Expr::Const(lit) => self.literal(lit.dtype(), lit.value()),
            Expr::Load { buf, index } => {
                self.out.push_str(Self::name(&self.names.buffers, buf.index()));
                self.out.push('[');
                self.index(index, 0);
                self.out.push(']');
            }
            Expr::Local(l) => self.out.push_str(Self::name(&self.names.locals, l.index())),
            Expr::Binary(op, a, b) => {
                let prec = match op {
                    BinOp::Or => P_OR,
                    BinOp::And => P_AND,
                    BinOp::Add | BinOp::Sub => P_ADD,
                    BinOp::Mul | BinOp::Div => P_MUL,
                    _ if op.is_comparison() => P_CMP,
                    _ => return self.call(op.name(), &[a, b]),
                };
                self.open(prec, ctx);
                let left = if op.is_comparison() { prec + 1 } else { prec };
                self.expr(a, left);
                let _ = write!(self.out, " {} ", op.symbol());
                self.expr(b, prec + 1);
                self.close(prec, ctx);
            }
            Expr::Unary(op @ (UnOp::Neg | UnOp::Not), a) => {
                self.open(P_UNARY, ctx);
                self.out.push(if *op == UnOp::Neg { '-' } else { '!' });
                self.expr(a, P_UNARY);
                self.close(P_UNARY, ctx);
            }
            Expr::Unary(op, a) => self.call(op.name(), &[a]),
            Expr::Select(c, a, b) => self.call("select", &[c, a, b]),
            Expr::Cast(d, a) => self.call(&d.to_string(), &[a]),
            Expr::Reinterpret(d, a) => self.call(&format!("reinterpret<{d}>"), &[a]),
            Expr::Index(i) => {
                self.out.push_str("index(");
                self.index(i, 0);
                self.out.push(')');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Expr, Extent, Index, KernelBuilder, LoopKind};
    use relay_devices::DType;

    #[test]
    fn prints_c_like_text() {
        let mut k = KernelBuilder::new("row_sum");
        let n = k.sym("n");
        let x = k.input("x", DType::F32, [Extent::Sym(n), Extent::Const(4)]);
        let y = k.output("y", DType::F32, [n]);
        let acc = k.local("acc", DType::F32);
        k.for_named("i", n, LoopKind::Parallel, |k, i| {
            k.assign(acc, Expr::f32(0.0));
            k.for_named("j", 4, LoopKind::Vectorize, |k, j| {
                let v = Expr::local(acc) + k.load(x, &[i.clone(), j]) * (Expr::f32(1.0) - Expr::f32(0.5));
                k.assign(acc, v);
            });
            let mean = Expr::local(acc) / Expr::index(Index::Const(4)).cast(DType::F32);
            k.if_then(mean.clone().gt(Expr::f32(0.0)), |k| k.store(y, i.clone().floor_div(1), -mean.exp()));
        });
        let text = k.finish().unwrap().to_string();
        let expected = "\
kernel row_sum[n](x: float32[n, 4]) -> (y: float32[n]) {
  local acc: float32;
  for i in 0..n parallel {
    acc = 0.0;
    for j in 0..4 vectorize {
      acc = acc + x[i * 4 + j] * (1.0 - 0.5);
    }
    if acc / float32(index(4)) > 0.0 {
      y[i] = -exp(acc / float32(index(4)));
    }
  }
}
";
        assert_eq!(text, expected);
    }
}
