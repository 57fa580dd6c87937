//! Binary operators with NumPy broadcasting (TVM `src/relay/op/tensor/binary.cc`) and `where`:
//! operands are read through stride-0 views of the output shape, never expanded. Each binary
//! operator is one line of `binary!`.

use super::shape::broadcast_shape;
use crate::compute::util::{lazy, lit, tensors, trunc};
use crate::error::KernelError;
use crate::kernels::num::Num;
use crate::kernels::util::{any_type, args, bools, floats, ints, ints_bools, nums, only_output, same_dtype};
use crate::kernels::Checked;
use crate::operator::{dtype_set, DTypeSet, Operator, ShapeDim};
use relay_compiler::kir::{BinOp as KirBinOp, Expr};
use relay_compiler::op::scalar::BinOp;
use relay_compiler::op::{OpPattern, ScalarForm};
use relay_devices::arith::eval_binary_as;
use relay_devices::{DType, DTypeCode, Element, Tensor};

/// Writes `f(a[i], b[i])` for every index `i` of `out`, with `a` and `b` broadcast to `out`'s
/// shape.
fn zip_broadcast<A: Element, B: Element, O: Element>(
    a: &Tensor,
    b: &Tensor,
    out: &mut Tensor,
    f: impl Fn(A, B) -> Result<O, KernelError>,
) -> Result<(), KernelError> {
    let shape = out.shape().to_vec();
    let av = a.view::<A>()?.broadcast_to(&shape)?;
    let bv = b.view::<B>()?.broadcast_to(&shape)?;
    let dst = out.as_mut_slice::<O>()?;
    for ((d, x), y) in dst.iter_mut().zip(av.iter()).zip(bv.iter()) {
        *d = f(x, y)?;
    }
    Ok(())
}

/// Declares broadcasting binary operators, one per line:
/// `Name = "tvm.name", dtype set -> output element type, "doc", |a, b| fallible body
///  [, kir [[only this dtype set]] |a, b[, operand dtype]| compute body] [, vm scalar form];`
/// Both inputs must have one dtype, from the set; in the bodies its element type is `T`.
macro_rules! binary {
    ($(#[$ldoc:meta])* list $list:ident; $($(#[$doc:meta])* $name:ident = $op:literal, $set:ident -> $out:ty, $summary:literal, |$a:ident, $b:ident| $body:expr
        $(, kir $([$only:ident])? |$ka:ident, $kb:ident $(, $kd:ident)?| $kir:expr)? $(, vm $scalar:expr)?;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::Broadcast;
            const NUM_INPUTS: usize = 2;
            const DTYPES: DTypeSet = dtype_set!($set);
            const DOC: &'static str = $summary;
            type Attrs = crate::attrs::NoAttrs;
            $(const COMPUTE: Option<crate::operator::ComputeRule<Self::Attrs>> = Some(|inputs, _, out| {
                let _ = out;
                $(if !dtype_set!($only).contains(out.dtype) {
                    return Err(format!("`{}` on {} runs in the reference kernel", $op, out.dtype));
                })?
                let [a, b] = tensors(inputs)?;
                let (a, b) = (a.clone(), b.clone());
                $(let $kd = a.dtype;)?
                Ok(lazy(move |k, idx| {
                    let ($ka, $kb) = (a.at_broadcast(k, idx), b.at_broadcast(k, idx));
                    $kir
                }))
            });)?
            $(const SCALAR: Option<ScalarForm> = Some($scalar);)?

            fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &Self::Attrs) -> Result<Vec<Vec<D>>, KernelError> {
                broadcast_shape::<D, 2>(inputs)
            }

            fn dtypes(inputs: &[DType], _: &Self::Attrs) -> Result<Vec<DType>, KernelError> {
                let d = Self::DTYPES.check(same_dtype(&args::<_, 2>(inputs)?)?)?;
                $set!(d, T => Ok(vec![<$out as Element>::DTYPE]))
            }

            // One body serves every dtype of the set, `bool` included.
            #[allow(clippy::bool_comparison)]
            fn reference(inputs: &[&Tensor], _: &Self::Attrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                let [a, b] = args(inputs)?;
                let out = only_output(outputs)?;
                $set!(a.dtype(), T => zip_broadcast::<T, T, $out>(a, b, out, |$a, $b| $body))
            }
        }
    )*
        $(#[$ldoc])*
        pub const $list: &[crate::operator::OpEntry] = &[$(crate::operator::OpEntry::of::<$name>()),*];
    };
}

/// Truncating division and remainder (C's `/` and `%`, TVM's `truncdiv`/`truncmod`), with the
/// integer rules of `relay_devices::arith`: dividing by zero gives 0, and so does the remainder
/// (as `floor_mod`'s).
trait Truncating: Num {
    /// `trunc(a / b)`.
    fn trunc_divide(self, b: Self) -> Self;
    /// `a - trunc(a / b) * b` (the sign follows `a`).
    fn trunc_mod(self, b: Self) -> Self;
}

macro_rules! truncating {
    (ints: $($i:ty),*; floats: $($f:ty),*) => {
        $(impl Truncating for $i {
            // Integer division truncates already (and wraps `MIN / -1`).
            fn trunc_divide(self, b: Self) -> Self {
                self.divide(b)
            }
            fn trunc_mod(self, b: Self) -> Self {
                if b == 0 {
                    return 0;
                }
                self.sub_wrapping(self.divide(b).mul_wrapping(b))
            }
        })*
        $(impl Truncating for $f {
            fn trunc_divide(self, b: Self) -> Self {
                (self / b).trunc()
            }
            // C `fmod`: exact, unlike `a - trunc(a / b) * b`.
            fn trunc_mod(self, b: Self) -> Self {
                self % b
            }
        })*
    };
}

truncating!(ints: i8, i16, i32, i64, u8, u16, u32, u64; floats: f32, f64);

/// `trunc(a / b)` in kir: kir's integer `/` truncates already (dividing by zero gives 0, as
/// [`Truncating::trunc_divide`]); a float quotient is truncated.
fn trunc_divide_kir(dtype: DType, a: Expr, b: Expr) -> Expr {
    match dtype.code {
        DTypeCode::Float => trunc(dtype, a / b),
        _ => a / b,
    }
}

/// `a - trunc(a / b) * b` in kir, [`Truncating::trunc_mod`]'s rule: an integer remainder by
/// zero is 0 (the formula alone would give `a`). For floats this is the formula, not C's exact
/// `fmod`: the two differ by the rounding of `a / b` (within the fused kernels' tolerance
/// unless `a / b` rounds across an integer).
fn trunc_mod_kir(dtype: DType, a: Expr, b: Expr) -> Expr {
    let r = a.clone() - trunc_divide_kir(dtype, a, b.clone()) * b.clone();
    match dtype.code {
        DTypeCode::Float => r,
        _ => Expr::select(b.equal(lit(dtype, 0.0)), lit(dtype, 0.0), r),
    }
}

/// `op(a, b)` by the one scalar table (`relay_devices::arith`), so the bitwise operators and
/// shifts mean here what they mean in kir, the JIT, OpenCL C and the VM's scalar instructions.
fn table<T: Element>(op: BinOp, a: T, b: T) -> Result<T, KernelError> {
    eval_binary_as(op, a, b)
        .ok_or_else(|| KernelError::DType(format!("`{}` is not defined on {}", op.name(), T::DTYPE)))
}

binary! {
    /// The broadcasting binary operators.
    list BINARY;
    /// `add`: `a + b` (integers wrap).
    Add = "add", nums -> T, "a + b", |a, b| Ok(a.add_wrapping(b)), kir |a, b| a + b, vm ScalarForm::Bin(BinOp::Add);
    /// `subtract`: `a - b` (integers wrap).
    Subtract = "subtract", nums -> T, "a - b", |a, b| Ok(a.sub_wrapping(b)), kir |a, b| a - b, vm ScalarForm::Bin(BinOp::Sub);
    /// `multiply`: `a * b` (integers wrap).
    Multiply = "multiply", nums -> T, "a * b", |a, b| Ok(a.mul_wrapping(b)), kir |a, b| a * b, vm ScalarForm::Bin(BinOp::Mul);
    /// `divide`: IEEE division for floats, truncating division for integers (`x / 0 == 0`,
    /// the rule of `relay_devices::arith` that kir, the JIT and OpenCL C share).
    Divide = "divide", nums -> T, "a / b", |a, b| Ok(a.divide(b)), kir |a, b| a / b, vm ScalarForm::Bin(BinOp::Div);
    /// `power`: `a ^ b`.
    Power = "power", floats -> T, "a ^ b", |a, b| Ok(a.powf(b)), kir |a, b| a.pow(b), vm ScalarForm::Bin(BinOp::Pow);
    /// `maximum` (`a` on ties, as the kernel's `a >= b`).
    Maximum = "maximum", nums -> T, "max(a, b)", |a, b| Ok(if a >= b { a } else { b }),
        kir |a, b| Expr::select(a.clone().ge(b.clone()), a, b), vm ScalarForm::Bin(BinOp::Max);
    /// `minimum` (`a` on ties).
    Minimum = "minimum", nums -> T, "min(a, b)", |a, b| Ok(if a <= b { a } else { b }),
        kir |a, b| Expr::select(a.clone().le(b.clone()), a, b), vm ScalarForm::Bin(BinOp::Min);
    /// `floor_divide`: `floor(a / b)`.
    FloorDivide = "floor_divide", nums -> T, "floor(a / b)", |a, b| Ok(a.floor_divide(b)),
        kir |a, b| a.floor_div(b), vm ScalarForm::Bin(BinOp::FloorDiv);
    /// `floor_mod`: `a - floor(a / b) * b`, with the sign of `b`.
    FloorMod = "floor_mod", nums -> T, "a - floor(a / b) * b", |a, b| Ok(a.floor_mod(b)),
        kir |a, b| a.floor_mod(b), vm ScalarForm::Bin(BinOp::FloorMod);
    /// `trunc_divide`: `trunc(a / b)`.
    TruncDivide = "trunc_divide", nums -> T, "trunc(a / b)", |a, b| Ok(a.trunc_divide(b)),
        kir |a, b, d| trunc_divide_kir(d, a, b);
    /// `trunc_mod`: `a - trunc(a / b) * b`, with the sign of `a` (C `%`, `fmod`).
    TruncMod = "trunc_mod", nums -> T, "a - trunc(a / b) * b", |a, b| Ok(a.trunc_mod(b)),
        kir |a, b, d| trunc_mod_kir(d, a, b);
    /// `mod`: TVM's `mod` is the truncating remainder, as `trunc_mod`.
    Mod = "mod", nums -> T, "a - trunc(a / b) * b", |a, b| Ok(a.trunc_mod(b)),
        kir |a, b, d| trunc_mod_kir(d, a, b);
    /// `equal` → `bool`.
    Equal = "equal", any_type -> bool, "a == b", |a, b| Ok(a == b), kir |a, b| a.equal(b), vm ScalarForm::Bin(BinOp::Eq);
    /// `not_equal` → `bool`.
    NotEqual = "not_equal", any_type -> bool, "a != b", |a, b| Ok(a != b), kir |a, b| a.not_equal(b), vm ScalarForm::Bin(BinOp::Ne);
    /// `less` → `bool`.
    Less = "less", any_type -> bool, "a < b", |a, b| Ok(a < b), kir |a, b| a.lt(b), vm ScalarForm::Bin(BinOp::Lt);
    /// `less_equal` → `bool`.
    LessEqual = "less_equal", any_type -> bool, "a <= b", |a, b| Ok(a <= b), kir |a, b| a.le(b), vm ScalarForm::Bin(BinOp::Le);
    /// `greater` → `bool`.
    Greater = "greater", any_type -> bool, "a > b", |a, b| Ok(a > b), kir |a, b| a.gt(b), vm ScalarForm::Bin(BinOp::Gt);
    /// `greater_equal` → `bool`.
    GreaterEqual = "greater_equal", any_type -> bool, "a >= b", |a, b| Ok(a >= b), kir |a, b| a.ge(b), vm ScalarForm::Bin(BinOp::Ge);
    /// `logical_and`.
    LogicalAnd = "logical_and", bools -> bool, "a and b", |a, b| Ok(a && b), kir |a, b| a.and(b), vm ScalarForm::Bin(BinOp::And);
    /// `logical_or`.
    LogicalOr = "logical_or", bools -> bool, "a or b", |a, b| Ok(a || b), kir |a, b| a.or(b), vm ScalarForm::Bin(BinOp::Or);
    /// `logical_xor`.
    LogicalXor = "logical_xor", bools -> bool, "a xor b", |a, b| table(BinOp::Xor, a, b),
        kir |a, b| a.binary(KirBinOp::Xor, b), vm ScalarForm::Bin(BinOp::Xor);
    /// `bitwise_and` (`and` for `bool`).
    BitwiseAnd = "bitwise_and", ints_bools -> T, "a & b", |a, b| table(BinOp::And, a, b),
        kir |a, b| a.and(b), vm ScalarForm::Bin(BinOp::And);
    /// `bitwise_or` (`or` for `bool`).
    BitwiseOr = "bitwise_or", ints_bools -> T, "a | b", |a, b| table(BinOp::Or, a, b),
        kir |a, b| a.or(b), vm ScalarForm::Bin(BinOp::Or);
    /// `bitwise_xor` (`xor` for `bool`).
    BitwiseXor = "bitwise_xor", ints_bools -> T, "a ^ b", |a, b| table(BinOp::Xor, a, b),
        kir |a, b| a.binary(KirBinOp::Xor, b), vm ScalarForm::Bin(BinOp::Xor);
    /// `left_shift`: `a << b`, the shift amount taken modulo the bit width (the shared rule
    /// of `relay_devices::arith`; C leaves larger shifts undefined).
    LeftShift = "left_shift", ints -> T, "a << b", |a, b| table(BinOp::Shl, a, b),
        kir |a, b| a.binary(KirBinOp::Shl, b), vm ScalarForm::Bin(BinOp::Shl);
    /// `right_shift`: `a >> b` (arithmetic for signed types), the shift amount taken modulo the
    /// bit width.
    RightShift = "right_shift", ints -> T, "a >> b", |a, b| table(BinOp::Shr, a, b),
        kir |a, b| a.binary(KirBinOp::Shr, b), vm ScalarForm::Bin(BinOp::Shr);
}

/// `where(cond, x, y)`: `x` where `cond` is true, else `y`, all three broadcast together.
/// `cond` is `bool`; `x` and `y` share any dtype, which the output has.
#[derive(Debug)]
pub struct Where;

impl Operator for Where {
    const NAME: &'static str = "where";
    const PATTERN: OpPattern = OpPattern::Broadcast;
    const NUM_INPUTS: usize = 3;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "cond ? x : y, broadcast";
    type Attrs = crate::attrs::NoAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<Self::Attrs>> = Some(|inputs, _, _| {
        let [c, x, y] = tensors(inputs)?;
        let (c, x, y) = (c.clone(), x.clone(), y.clone());
        Ok(lazy(move |k, idx| {
            Expr::select(c.at_broadcast(k, idx), x.at_broadcast(k, idx), y.at_broadcast(k, idx))
        }))
    });

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &Self::Attrs) -> Result<Vec<Vec<D>>, KernelError> {
        broadcast_shape::<D, 3>(inputs)
    }

    fn dtypes(inputs: &[DType], _: &Self::Attrs) -> Result<Vec<DType>, KernelError> {
        let [c, x, y] = args(inputs)?;
        if c != DType::BOOL {
            return Err(KernelError::DType(format!("the condition must be a bool tensor, found `{c}`")));
        }
        Ok(vec![same_dtype(&[x, y])?])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &Self::Attrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [c, x, y] = args(inputs)?;
        let out = only_output(outputs)?;
        let shape = out.shape().to_vec();
        let cv = c.view::<bool>()?.broadcast_to(&shape)?;
        any_type!(x.dtype(), T => {
            let xv = x.view::<T>()?.broadcast_to(&shape)?;
            let yv = y.view::<T>()?.broadcast_to(&shape)?;
            let dst = out.as_mut_slice::<T>()?;
            for (((d, c), a), b) in dst.iter_mut().zip(cv.iter()).zip(xv.iter()).zip(yv.iter()) {
                *d = if c { a } else { b };
            }
            Ok(())
        })
    }
}
