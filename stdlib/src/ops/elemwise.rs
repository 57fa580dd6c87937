//! Unary elementwise operators (TVM `src/relay/op/tensor/unary.cc`, `nn.relu`,
//! `nn.leaky_relu`, `cast`, `zeros_like`, `ones_like`, the `fast_*` approximations): output `i` is a function of input `i`,
//! with the input's shape. Each operator is one line of `unary!`.

use super::fast_math;
use super::shape::elementwise_shape;
use crate::attrs::{CastAttrs, ClipAttrs, LeakyReluAttrs};
use crate::compute::util::{lazy, lit, tensors, trunc};
use crate::error::KernelError;
use crate::kernels::num::{from_f64, Float, Num};
use crate::kernels::util::{any_type, args, bools, floats, ints_bools, map_into, nums, only_output};
use crate::kernels::Checked;
use crate::operator::{DTypeSet, Operator, ShapeDim};
use relay_compiler::kir::{Expr, UnOp as KirUnOp};
use relay_compiler::op::scalar::UnOp;
use relay_compiler::op::{OpPattern, ScalarForm};
use relay_devices::{DType, Element, Scalar, Storage, Tensor};

/// Declares unary operators, one per line:
/// `Name = "tvm.name" [[Attrs, a]], dtype set, "doc", |x| reference body
///  [, kir |dtype, x[, a]| compute body] [, vm scalar form];`
/// The dtype set is one of the dispatch macros (`floats`, `nums`, `ints_bools`, `bools`,
/// `any_type`); the output has the input's dtype and shape. Inside the bodies the element type
/// is `T` and the attributes (when declared) are `a`.
macro_rules! unary {
    ($(#[$ldoc:meta])* list $list:ident; $($(#[$doc:meta])* $name:ident = $op:literal $([$attrs:ty, $a:ident])?, $set:ident, $summary:literal,
        |$x:ident| $body:expr $(, kir |$d:ident, $kx:ident $(, $ka:ident)?| $kir:expr)? $(, vm $scalar:expr)?;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::ElemWise;
            const NUM_INPUTS: usize = 1;
            const DTYPES: DTypeSet = crate::operator::dtype_set!($set);
            const DOC: &'static str = $summary;
            type Attrs = unary!(@attrs $($attrs)?);
            $(const COMPUTE: Option<crate::operator::ComputeRule<Self::Attrs>> = Some(|inputs, attrs, _| {
                let [x] = tensors(inputs)?;
                // Operators without attributes leave them unread.
                #[allow(unused_variables)]
                let (x, attrs) = (x.clone(), attrs.clone());
                #[allow(unused_variables)]
                let def = lazy(move |k, idx| {
                    $(let $ka = &attrs;)?
                    let ($d, $kx) = (x.dtype, x.at(k, idx));
                    $kir
                });
                Ok(def)
            });)?
            $(const SCALAR: Option<ScalarForm> = Some($scalar);)?

            fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &Self::Attrs) -> Result<Vec<Vec<D>>, KernelError> {
                elementwise_shape(inputs)
            }

            fn dtypes(inputs: &[DType], _: &Self::Attrs) -> Result<Vec<DType>, KernelError> {
                let [d] = args(inputs)?;
                Ok(vec![Self::DTYPES.check(d)?])
            }

            // One body serves every dtype of the set.
            #[allow(unused_variables, clippy::bool_comparison)]
            fn reference(inputs: &[&Tensor], attrs: &Self::Attrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                let [x] = args(inputs)?;
                let out = only_output(outputs)?;
                $(let $a = attrs;)?
                $set!(x.dtype(), T => map_into::<T, T>(x, out, |$x: T| $body))
            }
        }
    )*
        $(#[$ldoc])*
        pub const $list: &[crate::operator::OpEntry] = &[$(crate::operator::OpEntry::of::<$name>()),*];
    };
    (@attrs) => { crate::attrs::NoAttrs };
    (@attrs $attrs:ty) => { $attrs };
}

/// Like `unary!` for predicates: `bool` results.
macro_rules! predicate {
    ($(#[$ldoc:meta])* list $list:ident; $($(#[$doc:meta])* $name:ident = $op:literal, $set:ident, $summary:literal, |$x:ident| $body:expr
        $(, kir |$kx:ident| $kir:expr)?;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::ElemWise;
            const NUM_INPUTS: usize = 1;
            const DTYPES: DTypeSet = crate::operator::dtype_set!($set);
            const DOC: &'static str = $summary;
            type Attrs = crate::attrs::NoAttrs;
            $(const COMPUTE: Option<crate::operator::ComputeRule<Self::Attrs>> = Some(|inputs, _, _| {
                let [x] = tensors(inputs)?;
                let x = x.clone();
                Ok(lazy(move |k, idx| {
                    let $kx = x.at(k, idx);
                    $kir
                }))
            });)?

            fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &Self::Attrs) -> Result<Vec<Vec<D>>, KernelError> {
                elementwise_shape(inputs)
            }

            fn dtypes(inputs: &[DType], _: &Self::Attrs) -> Result<Vec<DType>, KernelError> {
                let [d] = args(inputs)?;
                Self::DTYPES.check(d)?;
                Ok(vec![DType::BOOL])
            }

            fn reference(inputs: &[&Tensor], _: &Self::Attrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                let [x] = args(inputs)?;
                let out = only_output(outputs)?;
                $set!(x.dtype(), T => map_into::<T, bool>(x, out, |$x: T| $body))
            }
        }
    )*
        $(#[$ldoc])*
        pub const $list: &[crate::operator::OpEntry] = &[$(crate::operator::OpEntry::of::<$name>()),*];
    };
}

unary! {
    /// The unary arithmetic operators.
    list UNARY;
    /// `negative`: `-x` (integers wrap).
    Negative = "negative", nums, "-x", |x| x.neg_wrapping(), kir |d, x| x.unary(KirUnOp::Neg), vm ScalarForm::Un(UnOp::Neg);
    /// `abs`: `|x|` (integers wrap).
    Abs = "abs", nums, "|x|", |x| x.abs_wrapping(), kir |d, x| x.unary(KirUnOp::Abs), vm ScalarForm::Un(UnOp::Abs);
    /// `exp`: e^x.
    Exp = "exp", floats, "e^x", |x| Float::exp(x), kir |d, x| x.unary(KirUnOp::Exp);
    /// `log`: natural logarithm.
    Log = "log", floats, "natural logarithm", |x| x.ln(), kir |d, x| x.unary(KirUnOp::Log);
    /// `log2`: base-2 logarithm.
    Log2 = "log2", floats, "base-2 logarithm", |x| x.log2(),
        kir |d, x| x.unary(KirUnOp::Log) * lit(d, std::f64::consts::LOG2_E);
    /// `log10`: base-10 logarithm.
    Log10 = "log10", floats, "base-10 logarithm", |x| x.log10(),
        kir |d, x| x.unary(KirUnOp::Log) * lit(d, std::f64::consts::LOG10_E);
    /// `sqrt`.
    Sqrt = "sqrt", floats, "square root", |x| Float::sqrt(x), kir |d, x| x.unary(KirUnOp::Sqrt);
    /// `rsqrt`: `1 / sqrt(x)`.
    Rsqrt = "rsqrt", floats, "1 / sqrt(x)", |x| 1.0 / Float::sqrt(x), kir |d, x| x.unary(KirUnOp::Rsqrt);
    /// `sin`.
    Sin = "sin", floats, "sine", |x| x.sin(), kir |d, x| x.unary(KirUnOp::Sin);
    /// `cos`.
    Cos = "cos", floats, "cosine", |x| x.cos(), kir |d, x| x.unary(KirUnOp::Cos);
    /// `tan`.
    Tan = "tan", floats, "tangent", |x| x.tan(), kir |d, x| x.unary(KirUnOp::Tan);
    /// `asin`.
    Asin = "asin", floats, "arcsine", |x| x.asin(), kir |d, x| x.unary(KirUnOp::Asin);
    /// `acos`.
    Acos = "acos", floats, "arccosine", |x| x.acos(), kir |d, x| x.unary(KirUnOp::Acos);
    /// `atan`.
    Atan = "atan", floats, "arctangent", |x| x.atan(), kir |d, x| x.unary(KirUnOp::Atan);
    /// `sinh`.
    Sinh = "sinh", floats, "hyperbolic sine", |x| x.sinh(), kir |d, x| x.unary(KirUnOp::Sinh);
    /// `cosh`.
    Cosh = "cosh", floats, "hyperbolic cosine", |x| x.cosh(), kir |d, x| x.unary(KirUnOp::Cosh);
    /// `tanh`.
    Tanh = "tanh", floats, "hyperbolic tangent", |x| Float::tanh(x), kir |d, x| x.unary(KirUnOp::Tanh);
    /// `sigmoid`: `1 / (1 + e^-x)`.
    Sigmoid = "sigmoid", floats, "1 / (1 + e^-x)", |x| 1.0 / (1.0 + Float::exp(-x)), kir |d, x| x.unary(KirUnOp::Sigmoid);
    /// `erf`: the Gauss error function.
    Erf = "erf", floats, "Gauss error function", |x| Float::erf(x), kir |d, x| x.unary(KirUnOp::Erf);
    /// `fast_exp`: TVM's polynomial `e^x` for `float32` (relative error below 5e-6; exact for
    /// `float64`).
    FastExp = "fast_exp", floats, "approximate e^x", |x| fast_math::exp(x), kir |d, x| fast_math::exp_kir(d, x);
    /// `fast_tanh`: TVM's rational `tanh` for `float32` (absolute error below 1e-6).
    FastTanh = "fast_tanh", floats, "approximate tanh", |x| fast_math::tanh(x), kir |d, x| fast_math::tanh_kir(d, x);
    /// `fast_erf`: TVM's rational `erf` for `float32` (absolute error below 1e-6).
    FastErf = "fast_erf", floats, "approximate erf", |x| fast_math::erf(x), kir |d, x| fast_math::erf_kir(d, x);
    /// `floor`.
    Floor = "floor", floats, "round down", |x| Float::floor(x), kir |d, x| x.unary(KirUnOp::Floor);
    /// `ceil`.
    Ceil = "ceil", floats, "round up", |x| Float::ceil(x), kir |d, x| x.unary(KirUnOp::Ceil);
    /// `trunc`: round toward zero.
    Trunc = "trunc", floats, "round toward zero", |x| x.trunc(),
        kir |d, x| trunc(d, x);
    /// `round`: half away from zero, as TVM's `round` (C `round`).
    Round = "round", floats, "round half away from zero", |x| Float::round(x), kir |d, x| x.unary(KirUnOp::Round);
    /// `sign`: -1, 0 or 1.
    Sign = "sign", nums, "-1, 0 or 1", |x| x.sign(), kir |d, x| x.unary(KirUnOp::Sign);
    /// `nn.relu`: `max(x, 0)`.
    Relu = "nn.relu", nums, "max(x, 0)", |x| if x > T::ZERO { x } else { T::ZERO },
        kir |d, x| Expr::select(x.clone().gt(lit(d, 0.0)), x, lit(d, 0.0));
    /// `nn.leaky_relu`: `x` if positive, else `alpha * x`.
    LeakyRelu = "nn.leaky_relu" [LeakyReluAttrs, a], floats, "x if x > 0 else alpha * x",
        |x| if x > 0.0 { x } else { x * from_f64::<T>(a.alpha) },
        kir |d, x, a| Expr::select(x.clone().gt(lit(d, 0.0)), x.clone(), x * lit(d, a.alpha));
    /// `clip`: `x` clamped to `[a_min, a_max]`, the bounds converted to the dtype first.
    Clip = "clip" [ClipAttrs, a], nums, "min(max(x, a_min), a_max)",
        |x| {
            let (lo, hi) = (from_f64::<T>(a.a_min), from_f64::<T>(a.a_max));
            if x < lo { lo } else if x > hi { hi } else { x }
        },
        kir |d, x, a| {
            let (lo, hi) = (lit(d, a.a_min), lit(d, a.a_max));
            Expr::select(x.clone().lt(lo.clone()), lo, Expr::select(x.clone().gt(hi.clone()), hi, x))
        };
    /// `copy`: the same values (named so as not to shadow the `Copy` trait).
    CopyOp = "copy", any_type, "a copy of x", |x| x, kir |d, x| x, vm ScalarForm::Move;
    /// `logical_not`.
    LogicalNot = "logical_not", bools, "not x", |x| !x, kir |d, x| x.unary(KirUnOp::Not), vm ScalarForm::Un(UnOp::Not);
    /// `bitwise_not`: every bit flipped (`not` for `bool`).
    BitwiseNot = "bitwise_not", ints_bools, "~x", |x| !x, kir |d, x| x.unary(KirUnOp::Not);
    /// `zeros_like`: zeros (`false`) of the input's type.
    ZerosLike = "zeros_like", any_type, "zeros of x's type", |x| T::default(), kir |d, x| lit(d, 0.0);
    /// `ones_like`: ones (`true`) of the input's type.
    OnesLike = "ones_like", any_type, "ones of x's type", |x| T::from_scalar(Scalar::Int(1)), kir |d, x| lit(d, 1.0);
}

predicate! {
    /// The float classification predicates.
    list PREDICATES;
    /// `isnan`: whether `x` is NaN.
    IsNan = "isnan", floats, "x is NaN", |x| x.is_nan(), kir |x| x.clone().not_equal(x);
    /// `isinf`: whether `x` is infinite (not NaN, and `x - x` is NaN).
    IsInf = "isinf", floats, "x is +-inf", |x| x.is_infinite(),
        kir |x| x.clone().equal(x.clone()).and((x.clone() - x.clone()).not_equal(x.clone() - x));
    /// `isfinite`: whether `x` is neither infinite nor NaN (`x - x` is 0, not NaN).
    IsFinite = "isfinite", floats, "x is finite", |x| x.is_finite(), kir |x| (x.clone() - x.clone()).equal(x.clone() - x);
}

/// `cast`: converts every element to `dtype` with C cast semantics (integers wrap, floats
/// truncate toward zero and saturate, non-zero is `true`). Every dtype to every dtype.
#[derive(Debug)]
pub struct Cast;

impl Operator for Cast {
    const NAME: &'static str = "cast";
    const PATTERN: OpPattern = OpPattern::ElemWise;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Any;
    const DOC: &'static str = "convert to `dtype`";
    type Attrs = CastAttrs;
    const COMPUTE: Option<crate::operator::ComputeRule<CastAttrs>> = Some(|inputs, _, out| {
        let [x] = tensors(inputs)?;
        let (x, to) = (x.clone(), out.dtype);
        Ok(lazy(move |k, idx| x.at(k, idx).cast(to)))
    });
    const SCALAR: Option<ScalarForm> = Some(ScalarForm::Cast);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], _: &CastAttrs) -> Result<Vec<Vec<D>>, KernelError> {
        elementwise_shape(inputs)
    }

    fn dtypes(inputs: &[DType], attrs: &CastAttrs) -> Result<Vec<DType>, KernelError> {
        let [_] = args(inputs)?;
        if !Storage::supports(attrs.dtype) {
            return Err(KernelError::unsupported(attrs.dtype));
        }
        Ok(vec![attrs.dtype])
    }

    fn reference(
        inputs: &[&Tensor],
        _: &CastAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [_] = args(inputs)?;
        convert(inputs, only_output(outputs)?)
    }
}

/// Writes the first input converted (`as` semantics) to `out`'s dtype into `out`: `cast`'s
/// and `cast_like`'s kernel.
///
/// # Errors
/// No input, or a dtype the kernels do not store.
pub(crate) fn convert(inputs: &[&Tensor], out: &mut Tensor) -> Result<(), KernelError> {
    let x = inputs.first().ok_or(KernelError::Arity { expected: "at least 1".into(), actual: 0 })?;
    let to = out.dtype();
    any_type!(x.dtype(), A => any_type!(to, B => map_into::<A, B>(x, out, |v| B::from_scalar(v.to_scalar()))))
}
