//! Unary elementwise operators (TVM `src/relay/op/tensor/unary.cc`, `nn.relu`,
//! `nn.leaky_relu`, `cast`, `zeros_like`, `ones_like`): output `i` is a function of input `i`,
//! with the input's shape.

use super::num::{from_f64, Float, Num};
use super::util::{any_type, args, bools, floats, map_into, nums, only_output};
use super::{Checked, Kernel};
use crate::attrs::{CastAttrs, ClipAttrs, LeakyReluAttrs, NoAttrs};
use crate::error::KernelError;
use relay_devices::{DType, Element, Scalar, Storage, Tensor};

/// Declares unary kernels: `Name = "op", Attrs, dtype set, |element, attrs| body;`. The dtype
/// set is one of the dispatch macros (`floats`, `nums`, `bools`, `any_type`); the output has
/// the input's dtype and shape.
macro_rules! unary {
    ($($(#[$doc:meta])* $name:ident = $op:literal, $attrs:ty, $set:ident, |$x:ident, $a:ident| $body:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Kernel for $name {
            const NAME: &'static str = $op;
            type Attrs = $attrs;

            fn shapes(inputs: &[&[usize]], _: &$attrs) -> Result<Vec<Vec<usize>>, KernelError> {
                let [x] = args(inputs)?;
                Ok(vec![x.to_vec()])
            }

            fn dtypes(inputs: &[DType], _: &$attrs) -> Result<Vec<DType>, KernelError> {
                let [d] = args(inputs)?;
                $set!(d, T => Ok(vec![d]))
            }

            #[allow(unused_variables)]
            fn compute(inputs: &[&Tensor], $a: &$attrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                let [x] = args(inputs)?;
                let out = only_output(outputs)?;
                $set!(x.dtype(), T => map_into::<T, T>(x, out, |$x: T| $body))
            }
        }
    )*};
}

unary! {
    /// `negative`: `-x` (integers wrap). Numeric dtypes.
    Negative = "negative", NoAttrs, nums, |x, a| x.neg_wrapping();
    /// `abs`: `|x|` (integers wrap). Numeric dtypes.
    Abs = "abs", NoAttrs, nums, |x, a| x.abs_wrapping();
    /// `exp`: e^x. Float dtypes.
    Exp = "exp", NoAttrs, floats, |x, a| x.exp();
    /// `log`: natural logarithm. Float dtypes.
    Log = "log", NoAttrs, floats, |x, a| x.ln();
    /// `sqrt`. Float dtypes.
    Sqrt = "sqrt", NoAttrs, floats, |x, a| x.sqrt();
    /// `rsqrt`: `1 / sqrt(x)`. Float dtypes.
    Rsqrt = "rsqrt", NoAttrs, floats, |x, a| 1.0 / x.sqrt();
    /// `tanh`. Float dtypes.
    Tanh = "tanh", NoAttrs, floats, |x, a| x.tanh();
    /// `sigmoid`: `1 / (1 + e^-x)`. Float dtypes.
    Sigmoid = "sigmoid", NoAttrs, floats, |x, a| 1.0 / (1.0 + (-x).exp());
    /// `erf`: the Gauss error function. Float dtypes.
    Erf = "erf", NoAttrs, floats, |x, a| Float::erf(x);
    /// `floor`. Float dtypes.
    Floor = "floor", NoAttrs, floats, |x, a| x.floor();
    /// `ceil`. Float dtypes.
    Ceil = "ceil", NoAttrs, floats, |x, a| x.ceil();
    /// `round`: half away from zero, as TVM's `round` (C `round`). Float dtypes.
    Round = "round", NoAttrs, floats, |x, a| Float::round(x);
    /// `sign`: -1, 0 or 1. Numeric dtypes.
    Sign = "sign", NoAttrs, nums, |x, a| x.sign();
    /// `nn.relu`: `max(x, 0)`. Numeric dtypes.
    Relu = "nn.relu", NoAttrs, nums, |x, a| if x > T::ZERO { x } else { T::ZERO };
    /// `nn.leaky_relu`: `x` if positive, else `alpha * x`. Float dtypes.
    LeakyRelu = "nn.leaky_relu", LeakyReluAttrs, floats, |x, a| if x > 0.0 { x } else { x * from_f64::<T>(a.alpha) };
    /// `clip`: `x` clamped to `[a_min, a_max]`, the bounds converted to the dtype first.
    /// Numeric dtypes.
    Clip = "clip", ClipAttrs, nums, |x, a| {
        let (lo, hi) = (from_f64::<T>(a.a_min), from_f64::<T>(a.a_max));
        if x < lo { lo } else if x > hi { hi } else { x }
    };
    /// `copy`: the same values (named so as not to shadow the `Copy` trait). Every dtype.
    CopyOp = "copy", NoAttrs, any_type, |x, a| x;
    /// `logical_not`. `bool` only.
    LogicalNot = "logical_not", NoAttrs, bools, |x, a| !x;
    /// `zeros_like`: zeros (`false`) of the input's type. Every dtype.
    ZerosLike = "zeros_like", NoAttrs, any_type, |x, a| T::default();
    /// `ones_like`: ones (`true`) of the input's type. Every dtype.
    OnesLike = "ones_like", NoAttrs, any_type, |x, a| T::from_scalar(Scalar::Int(1));
}

/// `cast`: converts every element to `dtype` with C cast semantics (integers wrap, floats
/// truncate toward zero and saturate, non-zero is `true`). Every dtype to every dtype.
#[derive(Debug)]
pub struct Cast;

impl Kernel for Cast {
    const NAME: &'static str = "cast";
    type Attrs = CastAttrs;

    fn shapes(inputs: &[&[usize]], _: &CastAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [x] = args(inputs)?;
        Ok(vec![x.to_vec()])
    }

    fn dtypes(inputs: &[DType], attrs: &CastAttrs) -> Result<Vec<DType>, KernelError> {
        let [_] = args(inputs)?;
        if !Storage::supports(attrs.dtype) {
            return Err(KernelError::unsupported(attrs.dtype));
        }
        Ok(vec![attrs.dtype])
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &CastAttrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [x] = args(inputs)?;
        let out = only_output(outputs)?;
        any_type!(x.dtype(), A => any_type!(attrs.dtype, B => map_into::<A, B>(x, out, |v| B::from_scalar(v.to_scalar()))))
    }
}
