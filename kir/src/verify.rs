//! The kir verifier: declarations, ids, scoping and types (the table in the module docs).

use super::{half, BinOp, BufferDecl, BufferId, BufferRole, Expr, Extent, Index, Kernel, Stmt, UnOp};
use relay_devices::{DType, Storage};

/// How deeply statements and expressions may nest. Walkers over kir recurse, and kernels
/// come from fusing operator chains whose length the fusion pass bounds well below this.
pub const MAX_DEPTH: usize = 1000;

/// Why a kernel is malformed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum VerifyError {
    /// An id with no declaration.
    #[error("{what} {id} is not declared")]
    Undeclared {
        /// `buffer`, `sym`, `local` or `loop variable`.
        what: &'static str,
        /// The id.
        id: u32,
    },
    /// A loop variable used outside the loop that binds it.
    #[error("loop variable `{0}` is used outside its loop")]
    VarOutOfScope(String),
    /// A loop variable bound by two loops.
    #[error("loop variable `{0}` is bound by more than one loop")]
    VarRebound(String),
    /// A store to an input buffer.
    #[error("buffer `{0}` is an input and cannot be stored to")]
    StoreToInput(String),
    /// Operands or a destination of the wrong dtype.
    #[error("{context}: expected {expected}, found {found}")]
    TypeMismatch {
        /// Where.
        context: String,
        /// The dtype required there.
        expected: DType,
        /// The dtype found.
        found: DType,
    },
    /// An operator applied to a dtype it is not defined for.
    #[error("`{op}` is not defined for {dtype}")]
    BadOperand {
        /// The operator's name.
        op: &'static str,
        /// The operand dtype.
        dtype: DType,
    },
    /// A dtype kir does not hold (vector types), or a half float where kir computes (a local,
    /// a literal).
    #[error("dtype {0} cannot be stored in a tensor")]
    UnsupportedDType(DType),
    /// A negative constant dimension.
    #[error("buffer `{buffer}` has a negative dimension {dim}")]
    NegativeExtent {
        /// The buffer.
        buffer: String,
        /// The dimension.
        dim: i64,
    },
    /// A constant index outside a buffer of constant shape.
    #[error("constant index {index} is out of bounds for buffer `{buffer}` of {len} elements")]
    ConstIndexOutOfBounds {
        /// The buffer.
        buffer: String,
        /// The index.
        index: i64,
        /// The buffer's element count.
        len: i64,
    },
    /// A `gemm` with a negative size, rows of `b` narrower than its row length, an offset
    /// into `b` that loads from a buffer, or whose output is also one of its operands.
    #[error("gemm into `{0}`: negative sizes, rows of `b` not matching its shape, a loaded offset, or the output is an operand")]
    BadGemm(String),
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("statements and expressions nest deeper than {MAX_DEPTH}")]
    TooDeep,
    /// A kernel that may claim more memory or time than [`relay_runtime::Limits`] allow, or whose
    /// claim has no static bound ([`Kernel::check_resources`]).
    #[error("{0}")]
    Resources(String),
}

impl Kernel {
    /// Checks that every id is declared, every loop variable is bound by one loop and used
    /// only inside it, inputs are never stored to, every dtype is storable, constant indices
    /// into constant-shaped buffers are in bounds, and every expression is well typed.
    pub fn verify(&self) -> Result<(), VerifyError> {
        for b in &self.buffers {
            storable(b.dtype)?;
            for e in &b.shape {
                match *e {
                    Extent::Const(dim) if dim < 0 => {
                        return Err(VerifyError::NegativeExtent { buffer: b.name.clone(), dim })
                    }
                    Extent::Const(_) => {}
                    Extent::Sym(s) if s.index() >= self.syms.len() => {
                        return Err(VerifyError::Undeclared { what: "sym", id: s.0 })
                    }
                    Extent::Sym(_) => {}
                }
            }
        }
        for l in &self.locals {
            computable(l.dtype)?;
        }
        let mut c = Checker::new(self, true);
        c.stmts(&self.body)
    }

    /// The dtype of `e`, checking its types and ids (but not loop-variable scoping).
    pub fn dtype_of(&self, e: &Expr) -> Result<DType, VerifyError> {
        Checker::new(self, false).expr(e)
    }
}

/// Whether a buffer may hold `dtype`: any with tensor storage, the half floats (`float16`,
/// `bfloat16`) included, which kernels only load, convert and store (`half.rs`).
fn storable(dtype: DType) -> Result<(), VerifyError> {
    if Storage::supports(dtype) {
        Ok(())
    } else {
        Err(VerifyError::UnsupportedDType(dtype))
    }
}

/// Whether a local or a literal may be of `dtype`: a storable one but the half floats, which
/// have no arithmetic in kir (it is `float32`'s, rounded by a cast: `half.rs`).
fn computable(dtype: DType) -> Result<(), VerifyError> {
    if dtype.is_half_float() {
        return Err(VerifyError::UnsupportedDType(dtype));
    }
    storable(dtype)
}

/// `Ok` unless operator `op` is applied to a half float, which only loads, stores and casts
/// to or from `float32` take.
fn not_half(op: &'static str, dtype: DType) -> Result<(), VerifyError> {
    if dtype.is_half_float() {
        Err(VerifyError::BadOperand { op, dtype })
    } else {
        Ok(())
    }
}

fn is_num(dt: DType) -> bool {
    dt.is_int() || dt.is_float()
}

fn binary_result(op: BinOp, dt: DType) -> Option<DType> {
    let ok = match op {
        BinOp::Add
        | BinOp::Sub
        | BinOp::Mul
        | BinOp::Div
        | BinOp::FloorDiv
        | BinOp::FloorMod
        | BinOp::Max
        | BinOp::Min
        | BinOp::Lt
        | BinOp::Le
        | BinOp::Gt
        | BinOp::Ge => is_num(dt),
        BinOp::Pow => dt.is_float(),
        BinOp::Eq | BinOp::Ne => true,
        BinOp::And | BinOp::Or | BinOp::Xor => dt == DType::BOOL || dt.is_int(),
        BinOp::Shl | BinOp::Shr => dt.is_int(),
    };
    ok.then_some(if op.is_comparison() { DType::BOOL } else { dt })
}

fn unary_ok(op: UnOp, dt: DType) -> bool {
    match op {
        // The transcendental functions: the JIT approximates them for `float32` only.
        _ if op.is_f32_only() => dt == DType::F32,
        UnOp::Neg | UnOp::Abs | UnOp::Sign => is_num(dt),
        UnOp::Not => dt == DType::BOOL || dt.is_int(),
        _ => dt.is_float(),
    }
}

struct Checker<'k> {
    k: &'k Kernel,
    check_scope: bool,
    bound: Vec<bool>,
    in_scope: Vec<bool>,
    depth: usize,
}

impl<'k> Checker<'k> {
    fn new(k: &'k Kernel, check_scope: bool) -> Self {
        let n = k.vars.len();
        Checker { k, check_scope, bound: vec![false; n], in_scope: vec![false; n], depth: 0 }
    }

    fn enter(&mut self) -> Result<(), VerifyError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(VerifyError::TooDeep);
        }
        Ok(())
    }

    fn stmts(&mut self, body: &[Stmt]) -> Result<(), VerifyError> {
        body.iter().try_for_each(|s| self.stmt(s))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), VerifyError> {
        self.enter()?;
        match s {
            Stmt::For { var, extent, body, .. } => {
                self.index(extent)?;
                let v = var.index();
                let name = |k: &Kernel| k.vars[v].name.clone();
                if v >= self.k.vars.len() {
                    return Err(VerifyError::Undeclared { what: "loop variable", id: var.0 });
                }
                if std::mem::replace(&mut self.bound[v], true) {
                    return Err(VerifyError::VarRebound(name(self.k)));
                }
                self.in_scope[v] = true;
                self.stmts(body)?;
                self.in_scope[v] = false;
            }
            Stmt::Store { buf, index, value } => {
                let decl = self.access(*buf, index)?;
                if decl.role == BufferRole::Input {
                    return Err(VerifyError::StoreToInput(decl.name.clone()));
                }
                let found = self.expr(value)?;
                expect(format!("store to `{}`", decl.name), decl.dtype, found)?;
            }
            Stmt::Assign { local, value } => {
                let decl = self
                    .k
                    .locals
                    .get(local.index())
                    .ok_or(VerifyError::Undeclared { what: "local", id: local.0 })?;
                let found = self.expr(value)?;
                expect(format!("assignment to `{}`", decl.name), decl.dtype, found)?;
            }
            Stmt::If { cond, then, otherwise } => {
                let found = self.expr(cond)?;
                expect("if condition".into(), DType::BOOL, found)?;
                self.stmts(then)?;
                self.stmts(otherwise)?;
            }
            Stmt::Gemm { out, a, b, b_offset, b_rows, m, n, k, trans_b } => {
                let decl =
                    |b: BufferId| self.k.buffer(b).ok_or(VerifyError::Undeclared { what: "buffer", id: b.0 });
                let (o, ad, bd) = (decl(*out)?, decl(*a)?, decl(*b)?);
                if o.role == BufferRole::Input {
                    return Err(VerifyError::StoreToInput(o.name.clone()));
                }
                // `b_rows` counts `b`'s rows as stored; window rows are a `[k, n]` form.
                let rows = if *trans_b { *n } else { *k };
                let malformed =
                    !b_rows.is_valid() || b_rows.rows() != Some(rows) || (*trans_b && b_rows.ldb().is_none());
                if *m < 0 || *n < 0 || *k < 0 || malformed || out == a || out == b || loads(b_offset) {
                    return Err(VerifyError::BadGemm(o.name.clone()));
                }
                self.index(b_offset)?;
                for (what, d) in [("gemm output", o), ("gemm left operand", ad), ("gemm right operand", bd)] {
                    expect(what.to_string(), DType::F32, d.dtype)?;
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }

    fn access(&mut self, buf: BufferId, index: &Index) -> Result<&'k BufferDecl, VerifyError> {
        let decl = self.k.buffer(buf).ok_or(VerifyError::Undeclared { what: "buffer", id: buf.0 })?;
        self.index(index)?;
        if let Some(i) = index.as_const() {
            let len = decl.shape.iter().try_fold(1i64, |n, e| match e {
                Extent::Const(d) => n.checked_mul(*d),
                Extent::Sym(_) => None,
            });
            if let Some(len) = len.filter(|&len| i < 0 || i >= len) {
                return Err(VerifyError::ConstIndexOutOfBounds { buffer: decl.name.clone(), index: i, len });
            }
        }
        Ok(decl)
    }

    fn index(&mut self, i: &Index) -> Result<(), VerifyError> {
        self.enter()?;
        match i {
            Index::Const(_) => {}
            Index::Var(v) => {
                let decl = self
                    .k
                    .vars
                    .get(v.index())
                    .ok_or(VerifyError::Undeclared { what: "loop variable", id: v.0 })?;
                if self.check_scope && !self.in_scope[v.index()] {
                    return Err(VerifyError::VarOutOfScope(decl.name.clone()));
                }
            }
            Index::Sym(s) => {
                if s.index() >= self.k.syms.len() {
                    return Err(VerifyError::Undeclared { what: "sym", id: s.0 });
                }
            }
            Index::Bin(_, a, b) => {
                self.index(a)?;
                self.index(b)?;
            }
            Index::Value(e) => {
                let dt = self.expr(e)?;
                if !(dt.is_int() || dt == DType::BOOL) {
                    return Err(VerifyError::BadOperand { op: "index value", dtype: dt });
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }

    fn expr(&mut self, e: &Expr) -> Result<DType, VerifyError> {
        self.enter()?;
        let dt = match e {
            Expr::Const(lit) => {
                computable(lit.dtype())?;
                lit.dtype()
            }
            Expr::Load { buf, index } => self.access(*buf, index)?.dtype,
            Expr::Local(l) => {
                self.k.locals.get(l.index()).ok_or(VerifyError::Undeclared { what: "local", id: l.0 })?.dtype
            }
            Expr::Binary(op, a, b) => {
                let (ta, tb) = (self.expr(a)?, self.expr(b)?);
                expect(format!("right operand of `{}`", op.name()), ta, tb)?;
                not_half(op.name(), ta)?;
                binary_result(*op, ta).ok_or(VerifyError::BadOperand { op: op.name(), dtype: ta })?
            }
            Expr::Unary(op, a) => {
                let ta = self.expr(a)?;
                not_half(op.name(), ta)?;
                if !unary_ok(*op, ta) {
                    return Err(VerifyError::BadOperand { op: op.name(), dtype: ta });
                }
                ta
            }
            Expr::Select(c, a, b) => {
                let tc = self.expr(c)?;
                expect("select condition".into(), DType::BOOL, tc)?;
                let (ta, tb) = (self.expr(a)?, self.expr(b)?);
                expect("second arm of select".into(), ta, tb)?;
                not_half("select", ta)?;
                ta
            }
            Expr::Cast(to, a) => {
                storable(*to)?;
                let from = self.expr(a)?;
                if !half::cast_allowed(from, *to) {
                    return Err(VerifyError::BadOperand { op: "cast", dtype: from });
                }
                *to
            }
            Expr::Reinterpret(to, a) => {
                computable(*to)?;
                let from = self.expr(a)?;
                let plain = |d: DType| d != DType::BOOL && !d.is_half_float();
                if from.bits != to.bits || !plain(from) || !plain(*to) {
                    return Err(VerifyError::BadOperand { op: "reinterpret", dtype: from });
                }
                *to
            }
            Expr::Index(i) => {
                self.index(i)?;
                DType::I64
            }
        };
        self.depth -= 1;
        Ok(dt)
    }
}

/// Whether `i` reads a buffer (it has an [`Index::Value`]): a `gemm`'s offset may not, so
/// that the statement's reads are its three operands.
fn loads(i: &Index) -> bool {
    let mut any = false;
    i.visit_exprs(&mut |_| any = true);
    any
}

fn expect(context: String, expected: DType, found: DType) -> Result<(), VerifyError> {
    if expected == found {
        Ok(())
    } else {
        Err(VerifyError::TypeMismatch { context, expected, found })
    }
}
