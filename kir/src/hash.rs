//! Structural identity of kernels: equal modulo names and the numbering of loop variables
//! and locals. Kernel caches key on it, so that the same fused group compiled twice (in two
//! functions, or two modules) is compiled once.

use super::{BufferRole, Expr, Extent, Index, Kernel, LocalId, Stmt, VarId};
use relay_devices::{DType, DTypeCode};
use rustc_hash::FxHasher;
use std::collections::HashMap;
use std::hash::Hasher;

/// A canonical encoding of a kernel's structure. Two kernels have equal keys exactly when
/// they differ only in names (kernel, buffers, syms, locals, loop variables) and in which
/// ids their loop variables and locals got. Comparing keys is exact (no collisions).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StructuralKey(Vec<u64>);

impl Kernel {
    /// The structural key (see [`StructuralKey`]).
    pub fn structural_key(&self) -> StructuralKey {
        let mut c = Canon { out: Vec::new(), vars: HashMap::new(), locals: HashMap::new(), kernel: self };
        c.header();
        c.stmts(&self.body);
        StructuralKey(c.out)
    }

    /// A 64-bit hash of the structural key: equal for structurally equal kernels, and the
    /// same in every build. It names files (`manifest.json`'s `kir_hash`, OpenCL binaries),
    /// so it must not change with the Rust release: `std`'s `DefaultHasher` may, and its
    /// `Hash` impls for slices may feed a hasher differently. Hence FxHash, fed each word
    /// explicitly.
    pub fn structural_hash(&self) -> u64 {
        let key = self.structural_key();
        let mut h = FxHasher::default();
        h.write_u64(key.0.len() as u64);
        for &word in &key.0 {
            h.write_u64(word);
        }
        h.finish()
    }
}

// Node tags keep encodings of different node kinds from running into each other.
const T_FOR: u64 = 1;
const T_STORE: u64 = 2;
const T_ASSIGN: u64 = 3;
const T_IF: u64 = 4;
const T_END: u64 = 5;
const T_GEMM: u64 = 6;
const T_CONST: u64 = 10;
const T_LOAD: u64 = 11;
const T_LOCAL: u64 = 12;
const T_BIN: u64 = 13;
const T_UN: u64 = 14;
const T_SELECT: u64 = 15;
const T_CAST: u64 = 16;
const T_INDEX: u64 = 17;
const T_REINTERPRET: u64 = 18;
const I_CONST: u64 = 20;
const I_VAR: u64 = 21;
const I_SYM: u64 = 22;
const I_BIN: u64 = 23;
const I_VALUE: u64 = 24;

struct Canon<'k> {
    out: Vec<u64>,
    vars: HashMap<VarId, u64>,
    locals: HashMap<LocalId, u64>,
    kernel: &'k Kernel,
}

fn dtype_code(d: DType) -> u64 {
    let code = match d.code {
        DTypeCode::Int => 0,
        DTypeCode::UInt => 1,
        DTypeCode::Float => 2,
        DTypeCode::Bool => 3,
        DTypeCode::BFloat => 4,
    };
    code | u64::from(d.bits) << 8 | u64::from(d.lanes) << 16
}

impl Canon<'_> {
    fn header(&mut self) {
        self.out.push(self.kernel.syms.len() as u64);
        self.out.push(self.kernel.buffers.len() as u64);
        for b in &self.kernel.buffers {
            let role = match b.role {
                BufferRole::Input => 0,
                BufferRole::Output => 1,
                BufferRole::Temp => 2,
            };
            self.out.extend([role, dtype_code(b.dtype), b.shape.len() as u64]);
            for e in &b.shape {
                match e {
                    Extent::Const(c) => self.out.extend([0, *c as u64]),
                    Extent::Sym(s) => self.out.extend([1, u64::from(s.0)]),
                }
            }
        }
    }

    fn stmts(&mut self, body: &[Stmt]) {
        for s in body {
            self.stmt(s);
        }
        self.out.push(T_END);
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::For { var, extent, kind, body } => {
                let id = self.vars.len() as u64;
                self.vars.insert(*var, id);
                self.out.extend([T_FOR, *kind as u64]);
                self.index(extent);
                self.stmts(body);
            }
            Stmt::Store { buf, index, value } => {
                self.out.extend([T_STORE, u64::from(buf.0)]);
                self.index(index);
                self.expr(value);
            }
            Stmt::Assign { local, value } => {
                self.out.push(T_ASSIGN);
                self.local(*local);
                self.expr(value);
            }
            Stmt::If { cond, then, otherwise } => {
                self.out.push(T_IF);
                self.expr(cond);
                self.stmts(then);
                self.stmts(otherwise);
            }
            Stmt::Gemm { out, a, b, b_offset, b_rows, m, n, k, trans_b } => {
                self.out.extend([T_GEMM, u64::from(out.0), u64::from(a.0), u64::from(b.0)]);
                self.index(b_offset);
                self.out.push(b_rows.dims().len() as u64);
                self.out.extend(b_rows.dims().iter().flat_map(|&(e, s)| [e as u64, s as u64]));
                self.out.extend([*m as u64, *n as u64, *k as u64, u64::from(*trans_b)]);
            }
        }
    }

    fn local(&mut self, l: LocalId) {
        let next = self.locals.len() as u64;
        let id = *self.locals.entry(l).or_insert(next);
        let dtype = self.kernel.locals.get(l.index()).map_or(u64::MAX, |d| dtype_code(d.dtype));
        self.out.extend([id, dtype]);
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Const(lit) => self.out.extend([T_CONST, dtype_code(lit.dtype()), lit.bits()]),
            Expr::Load { buf, index } => {
                self.out.extend([T_LOAD, u64::from(buf.0)]);
                self.index(index);
            }
            Expr::Local(l) => {
                self.out.push(T_LOCAL);
                self.local(*l);
            }
            Expr::Binary(op, a, b) => {
                self.out.extend([T_BIN, *op as u64]);
                self.expr(a);
                self.expr(b);
            }
            Expr::Unary(op, a) => {
                self.out.extend([T_UN, *op as u64]);
                self.expr(a);
            }
            Expr::Select(c, a, b) => {
                self.out.push(T_SELECT);
                self.expr(c);
                self.expr(a);
                self.expr(b);
            }
            Expr::Cast(d, a) => {
                self.out.extend([T_CAST, dtype_code(*d)]);
                self.expr(a);
            }
            Expr::Reinterpret(d, a) => {
                self.out.extend([T_REINTERPRET, dtype_code(*d)]);
                self.expr(a);
            }
            Expr::Index(i) => {
                self.out.push(T_INDEX);
                self.index(i);
            }
        }
    }

    fn index(&mut self, i: &Index) {
        match i {
            Index::Const(c) => self.out.extend([I_CONST, *c as u64]),
            // Loop variables are numbered in binding order; an unbound one (in an unverified
            // kernel) keeps a distinct code.
            Index::Var(v) => {
                let id = self.vars.get(v).copied().unwrap_or(u64::MAX - u64::from(v.0));
                self.out.extend([I_VAR, id]);
            }
            Index::Sym(s) => self.out.extend([I_SYM, u64::from(s.0)]),
            Index::Bin(op, a, b) => {
                self.out.extend([I_BIN, *op as u64]);
                self.index(a);
                self.index(b);
            }
            Index::Value(e) => {
                self.out.push(I_VALUE);
                self.expr(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BufferId, KernelBuilder, LocalDecl, LoopKind, VarDecl};

    fn scale(name: &str, factor: f32) -> Kernel {
        let mut k = KernelBuilder::new(name);
        let x = k.input(format!("{name}_x"), DType::F32, [8]);
        let y = k.output("y", DType::F32, [8]);
        let acc = k.local(format!("{name}_acc"), DType::F32);
        k.for_named(name, 8, LoopKind::Vectorize, |k, i| {
            k.assign(acc, Expr::load(x, i.clone()) * Expr::f32(factor));
            k.store(y, i, Expr::local(acc));
        });
        k.finish().unwrap()
    }

    #[test]
    fn names_do_not_matter_but_values_do() {
        let a = scale("a", 2.0);
        let b = scale("b", 2.0);
        assert_ne!(a, b);
        assert_eq!(a.structural_key(), b.structural_key());
        assert_eq!(a.structural_hash(), b.structural_hash());
        assert_ne!(a.structural_key(), scale("a", 3.0).structural_key());
    }

    #[test]
    fn the_hash_is_pinned() {
        // File names and manifests written by one build are read by the next: this value must
        // never change (a changed encoding or hash function needs a new file-format version).
        assert_eq!(format!("{:016x}", scale("a", 2.0).structural_hash()), "ebe43609a2eebfe7");
    }

    #[test]
    fn numbering_of_vars_and_locals_does_not_matter() {
        let a = scale("a", 2.0);
        // The same kernel with loop variable 1 and local 1 (0 of each is unused).
        let (v, l) = (VarId(1), LocalId(1));
        let mut b = a.clone();
        b.vars.insert(0, VarDecl { name: "unused".into() });
        b.locals.insert(0, LocalDecl { name: "unused".into(), dtype: DType::I8 });
        b.body = vec![Stmt::For {
            var: v,
            extent: Index::Const(8),
            kind: LoopKind::Vectorize,
            body: vec![
                Stmt::Assign { local: l, value: Expr::load(BufferId(0), v) * Expr::f32(2.0) },
                Stmt::Store { buf: BufferId(1), index: v.into(), value: Expr::Local(l) },
            ],
        }];
        assert_eq!(b.verify(), Ok(()));
        assert_eq!(a.structural_key(), b.structural_key());
    }
}
