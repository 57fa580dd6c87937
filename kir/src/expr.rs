//! Index and scalar expressions of kir, with constructors and operator overloads that make
//! compute rules read like the math they implement.

use super::{cast, BinOp, UnOp};
use super::{BufferId, LocalId, SymId, VarId};
use relay_devices::{DType, Scalar};
use std::hash::{Hash, Hasher};
use std::ops;

/// A binary operator on indices (all `i64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexOp {
    /// Wrapping is impossible: [`super::check_bounds`] rejects kernels whose index
    /// arithmetic may overflow.
    Add,
    /// Subtraction.
    Sub,
    /// Multiplication.
    Mul,
    /// Floor division; the divisor must be provably positive.
    FloorDiv,
    /// Floor modulo (result in `0..divisor`); the divisor must be provably positive.
    FloorMod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

/// An `i64` index expression: element offsets into flat buffers and loop extents.
///
/// Build with `From` conversions (`i64`, [`VarId`], [`SymId`], [`super::Extent`]) and the
/// operators `+ - *` (on `Index` and `i64`), [`Index::floor_div`], [`Index::floor_mod`],
/// [`Index::min`], [`Index::max`], [`Index::clamp`]. The constructors fold constants and
/// identities (`x + 0`, `x * 1`, `x % 1`), so generated kernels stay readable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Index {
    /// A constant.
    Const(i64),
    /// A loop variable, in `0..extent` of its loop.
    Var(VarId),
    /// A runtime size parameter.
    Sym(SymId),
    /// `op(lhs, rhs)`.
    Bin(IndexOp, Box<Index>, Box<Index>),
    /// The value of an integer or bool scalar expression, extended to `i64` (sign-extended
    /// for signed ints). Its range is the dtype's: clamp it before using it as an offset.
    Value(Box<Expr>),
}

impl Index {
    /// Calls `f` on every expression inside this index: its `Value` parts and everything
    /// under them (see [`Expr::visit`]).
    pub fn visit_exprs(&self, f: &mut dyn FnMut(&Expr)) {
        match self {
            Index::Value(e) => e.visit(f),
            Index::Bin(_, a, b) => {
                a.visit_exprs(f);
                b.visit_exprs(f);
            }
            Index::Const(_) | Index::Var(_) | Index::Sym(_) => {}
        }
    }

    /// The index `op(a, b)`, folded where both sides are constants or one is an identity.
    pub fn bin(op: IndexOp, a: Index, b: Index) -> Index {
        use Index::Const;
        match (op, &a, &b) {
            (_, Const(x), Const(y)) => {
                let folded = match op {
                    IndexOp::Add => x.checked_add(*y),
                    IndexOp::Sub => x.checked_sub(*y),
                    IndexOp::Mul => x.checked_mul(*y),
                    IndexOp::FloorDiv if *y > 0 => Some(x.div_euclid(*y)),
                    IndexOp::FloorMod if *y > 0 => Some(x.rem_euclid(*y)),
                    IndexOp::Min => Some(*x.min(y)),
                    IndexOp::Max => Some(*x.max(y)),
                    IndexOp::FloorDiv | IndexOp::FloorMod => None,
                };
                if let Some(c) = folded {
                    return Const(c);
                }
            }
            (IndexOp::Add, Const(0), _) | (IndexOp::Mul, Const(1), _) => return b,
            (IndexOp::Add | IndexOp::Sub, _, Const(0)) | (IndexOp::Mul | IndexOp::FloorDiv, _, Const(1)) => {
                return a
            }
            (IndexOp::Mul, Const(0), _) | (IndexOp::Mul, _, Const(0)) | (IndexOp::FloorMod, _, Const(1)) => {
                return Const(0)
            }
            _ => {}
        }
        Index::Bin(op, Box::new(a), Box::new(b))
    }

    /// Floor division by `d` (which must be provably positive when the kernel runs).
    pub fn floor_div(self, d: impl Into<Index>) -> Index {
        Index::bin(IndexOp::FloorDiv, self, d.into())
    }

    /// Floor modulo by `d` (which must be provably positive when the kernel runs).
    pub fn floor_mod(self, d: impl Into<Index>) -> Index {
        Index::bin(IndexOp::FloorMod, self, d.into())
    }

    /// The smaller of `self` and `o`.
    pub fn min(self, o: impl Into<Index>) -> Index {
        Index::bin(IndexOp::Min, self, o.into())
    }

    /// The larger of `self` and `o`.
    pub fn max(self, o: impl Into<Index>) -> Index {
        Index::bin(IndexOp::Max, self, o.into())
    }

    /// `self` limited to `lo..=hi`: the way to make a guarded access provably in bounds
    /// (e.g. `x[clamp(h - pad, 0, H - 1)]` under a padding test).
    pub fn clamp(self, lo: impl Into<Index>, hi: impl Into<Index>) -> Index {
        self.max(lo).min(hi)
    }

    /// The value of an integer or bool expression as an index.
    pub fn value(e: Expr) -> Index {
        Index::Value(Box::new(e))
    }

    /// The constant, if this index is one.
    pub fn as_const(&self) -> Option<i64> {
        match self {
            Index::Const(c) => Some(*c),
            _ => None,
        }
    }
}

impl From<i64> for Index {
    fn from(c: i64) -> Self {
        Index::Const(c)
    }
}

impl From<VarId> for Index {
    fn from(v: VarId) -> Self {
        Index::Var(v)
    }
}

impl From<SymId> for Index {
    fn from(s: SymId) -> Self {
        Index::Sym(s)
    }
}

macro_rules! index_ops {
    ($($trait:ident $method:ident $op:ident;)*) => {$(
        impl ops::$trait<Index> for Index {
            type Output = Index;
            fn $method(self, rhs: Index) -> Index {
                Index::bin(IndexOp::$op, self, rhs)
            }
        }
        impl ops::$trait<i64> for Index {
            type Output = Index;
            fn $method(self, rhs: i64) -> Index {
                Index::bin(IndexOp::$op, self, Index::Const(rhs))
            }
        }
        impl ops::$trait<Index> for i64 {
            type Output = Index;
            fn $method(self, rhs: Index) -> Index {
                Index::bin(IndexOp::$op, Index::Const(self), rhs)
            }
        }
    )*};
}

index_ops! {
    Add add Add;
    Sub sub Sub;
    Mul mul Mul;
}

/// A literal: a dtype and a value normalised to it (an `f32` literal holds an exactly
/// representable `f32`, an `int8` literal a value in `-128..=127`, ...).
///
/// Equality and hashing compare float values bit for bit, so `NaN == NaN` and `0.0 != -0.0`:
/// literals are compared as structure, not as numbers.
#[derive(Clone, Copy, Debug)]
pub struct Literal {
    dtype: DType,
    value: Scalar,
}

impl Literal {
    /// `value` converted to `dtype` with `as`-cast semantics.
    pub fn new(dtype: DType, value: Scalar) -> Literal {
        Literal { dtype, value: cast(value, dtype) }
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The value, normalised to the dtype.
    pub fn value(&self) -> Scalar {
        self.value
    }

    fn key(&self) -> (DType, u8, u64) {
        match self.value {
            Scalar::Bool(b) => (self.dtype, 0, u64::from(b)),
            Scalar::Int(v) => (self.dtype, 1, v as u64),
            Scalar::UInt(v) => (self.dtype, 2, v),
            Scalar::Float(v) => (self.dtype, 3, v.to_bits()),
        }
    }

    /// A stable 64-bit encoding of the value (with [`Literal::dtype`], it identifies the
    /// literal), for structural hashing.
    pub fn bits(&self) -> u64 {
        self.key().2
    }
}

impl PartialEq for Literal {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Literal {}

impl Hash for Literal {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

/// A typed scalar expression. Its dtype follows from its leaves (see [`super::Kernel::dtype_of`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    /// A literal.
    Const(Literal),
    /// Element `index` of a buffer.
    Load {
        /// The buffer.
        buf: BufferId,
        /// Flat row-major element index.
        index: Index,
    },
    /// The current value of a local.
    Local(LocalId),
    /// `op(lhs, rhs)`.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `op(arg)`.
    Unary(UnOp, Box<Expr>),
    /// `cond ? then : else`, both arms evaluated.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Conversion with `as` semantics.
    Cast(DType, Box<Expr>),
    /// The operand's bits read as a dtype of the same width (TVM's `tir.reinterpret`): no
    /// conversion, `float32` `1.0` is `int32` `0x3f80_0000`. Neither side is a half float or
    /// `bool` (the verifier checks).
    Reinterpret(DType, Box<Expr>),
    /// The value of an index, as `int64`.
    Index(Index),
}

impl Expr {
    /// Calls `f` on this expression and every expression under it, parents first, including
    /// those inside indices (a load's index, `Expr::Index`): the one walk the analyses that
    /// collect loads or locals share.
    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Load { index, .. } | Expr::Index(index) => index.visit_exprs(f),
            Expr::Binary(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Reinterpret(_, a) => a.visit(f),
            Expr::Select(c, a, b) => {
                c.visit(f);
                a.visit(f);
                b.visit(f);
            }
            Expr::Const(_) | Expr::Local(_) => {}
        }
    }

    /// A `float32` literal.
    pub fn f32(v: f32) -> Expr {
        Expr::lit(DType::F32, Scalar::Float(f64::from(v)))
    }

    /// An `int32` literal.
    pub fn i32(v: i32) -> Expr {
        Expr::lit(DType::I32, Scalar::Int(i64::from(v)))
    }

    /// An `int64` literal.
    pub fn i64(v: i64) -> Expr {
        Expr::lit(DType::I64, Scalar::Int(v))
    }

    /// A `bool` literal.
    pub fn bool(v: bool) -> Expr {
        Expr::lit(DType::BOOL, Scalar::Bool(v))
    }

    /// A literal of any dtype (`value` is converted with `as` semantics).
    pub fn lit(dtype: DType, value: Scalar) -> Expr {
        Expr::Const(Literal::new(dtype, value))
    }

    /// Element `index` of `buf`.
    pub fn load(buf: BufferId, index: impl Into<Index>) -> Expr {
        Expr::Load { buf, index: index.into() }
    }

    /// The value of a local.
    pub fn local(l: LocalId) -> Expr {
        Expr::Local(l)
    }

    /// An index as an `int64` value.
    pub fn index(i: impl Into<Index>) -> Expr {
        Expr::Index(i.into())
    }

    /// `op(self, rhs)`.
    pub fn binary(self, op: BinOp, rhs: Expr) -> Expr {
        Expr::Binary(op, Box::new(self), Box::new(rhs))
    }

    /// `op(self)`.
    pub fn unary(self, op: UnOp) -> Expr {
        Expr::Unary(op, Box::new(self))
    }

    /// `cond ? a : b`.
    pub fn select(cond: Expr, a: Expr, b: Expr) -> Expr {
        Expr::Select(Box::new(cond), Box::new(a), Box::new(b))
    }

    /// `self` converted to `dtype`.
    pub fn cast(self, dtype: DType) -> Expr {
        Expr::Cast(dtype, Box::new(self))
    }

    /// `self`'s bits as `dtype`, which must have the same width (see [`Expr::Reinterpret`]).
    pub fn reinterpret(self, dtype: DType) -> Expr {
        Expr::Reinterpret(dtype, Box::new(self))
    }
}

macro_rules! expr_binary_methods {
    ($($(#[doc = $doc:literal])* $name:ident $op:ident;)*) => {
        impl Expr {$(
            $(#[doc = $doc])*
            pub fn $name(self, rhs: Expr) -> Expr {
                self.binary(BinOp::$op, rhs)
            }
        )*}
    };
}

expr_binary_methods! {
    /// Maximum.
    max Max;
    /// Minimum.
    min Min;
    /// Power.
    pow Pow;
    /// Floor division.
    floor_div FloorDiv;
    /// Floor modulo.
    floor_mod FloorMod;
    /// `self == rhs` (named to avoid clashing with `PartialEq::eq`).
    equal Eq;
    /// `self != rhs`.
    not_equal Ne;
    /// `self < rhs`.
    lt Lt;
    /// `self <= rhs`.
    le Le;
    /// `self > rhs`.
    gt Gt;
    /// `self >= rhs`.
    ge Ge;
    /// Logical/bitwise and.
    and And;
    /// Logical/bitwise or.
    or Or;
}

macro_rules! expr_unary_methods {
    ($($name:ident $op:ident;)*) => {
        impl Expr {$(
            #[doc = concat!("`", stringify!($name), "(self)`; see [`UnOp::", stringify!($op), "`].")]
            pub fn $name(self) -> Expr {
                self.unary(UnOp::$op)
            }
        )*}
    };
}

expr_unary_methods! {
    abs Abs;
    exp Exp;
    log Log;
    sqrt Sqrt;
    rsqrt Rsqrt;
    tanh Tanh;
    sigmoid Sigmoid;
    erf Erf;
    sin Sin;
    cos Cos;
    tan Tan;
    asin Asin;
    acos Acos;
    atan Atan;
    sinh Sinh;
    cosh Cosh;
    floor Floor;
    ceil Ceil;
    round Round;
    sign Sign;
}

macro_rules! expr_ops {
    ($($trait:ident $method:ident $op:ident;)*) => {$(
        impl ops::$trait<Expr> for Expr {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                self.binary(BinOp::$op, rhs)
            }
        }
    )*};
}

expr_ops! {
    Add add Add;
    Sub sub Sub;
    Mul mul Mul;
    Div div Div;
}

impl ops::Not for Expr {
    type Output = Expr;
    fn not(self) -> Expr {
        self.unary(UnOp::Not)
    }
}

impl ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        self.unary(UnOp::Neg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_constructors_fold() {
        let i = Index::Var(VarId(0));
        assert_eq!(i.clone() * 1 + 0, i);
        assert_eq!(Index::Const(7) * 3 - 1, Index::Const(20));
        assert_eq!(Index::Const(-7).floor_div(2), Index::Const(-4));
        assert_eq!(Index::Const(-7).floor_mod(2), Index::Const(1));
        assert_eq!(i.clone().floor_mod(1), Index::Const(0));
        assert!(matches!(Index::Const(1).floor_div(0), Index::Bin(IndexOp::FloorDiv, ..)));
        assert!(matches!(Index::Const(i64::MAX) + 1, Index::Bin(IndexOp::Add, ..)));
    }

    #[test]
    fn visit_reaches_expressions_inside_indices() {
        let inner = Expr::load(BufferId(1), Index::Var(VarId(0)));
        let e = Expr::load(BufferId(0), Index::value(inner) + 2).exp() + Expr::local(LocalId(3));
        let mut seen = vec![];
        e.visit(&mut |x| match x {
            Expr::Load { buf, .. } => seen.push(format!("load {}", buf.index())),
            Expr::Local(l) => seen.push(format!("local {}", l.index())),
            _ => {}
        });
        assert_eq!(seen, ["load 0", "load 1", "local 3"]);
    }

    #[test]
    fn literals_are_normalised_and_compared_bitwise() {
        assert_eq!(Expr::lit(DType::I8, Scalar::Int(300)), Expr::lit(DType::I8, Scalar::Int(44)));
        assert_eq!(Expr::f32(0.1), Expr::lit(DType::F32, Scalar::Float(0.1)));
        assert_eq!(Expr::f32(f32::NAN), Expr::f32(f32::NAN));
        assert_ne!(Expr::f32(0.0), Expr::f32(-0.0));
        assert_ne!(Expr::i32(1), Expr::i64(1));
    }
}
