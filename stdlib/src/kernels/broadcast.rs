//! Binary operators with NumPy broadcasting (TVM `src/relay/op/tensor/binary.cc`) and
//! `where`: operands are read through stride-0 views of the output shape, never expanded.

use super::num::Num;
use super::util::{any_type, args, bools, broadcast_shapes, floats, nums, only_output, same_dtype};
use super::{Checked, Kernel};
use crate::attrs::NoAttrs;
use crate::error::KernelError;
use relay_devices::{DType, Element, Tensor};

/// Writes `f(a[i], b[i])` for every index `i` of `out`, with `a` and `b` broadcast to `out`'s
/// shape.
pub(crate) fn zip_broadcast<A: Element, B: Element, O: Element>(
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

/// Declares broadcasting binary kernels: `Name = "op", dtype set -> output element type,
/// |a, b| fallible body;`. Both inputs must have the same dtype, from the set.
macro_rules! binary {
    ($($(#[$doc:meta])* $name:ident = $op:literal, $set:ident -> $out:ty, |$a:ident, $b:ident| $body:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Kernel for $name {
            const NAME: &'static str = $op;
            type Attrs = NoAttrs;

            fn shapes(inputs: &[&[usize]], _: &NoAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
                let [a, b] = args(inputs)?;
                Ok(vec![broadcast_shapes(&[a, b])?])
            }

            fn dtypes(inputs: &[DType], _: &NoAttrs) -> Result<Vec<DType>, KernelError> {
                let d = same_dtype(&args::<_, 2>(inputs)?)?;
                $set!(d, T => Ok(vec![<$out as Element>::DTYPE]))
            }

            // One body serves every dtype of the set, `bool` included.
            #[allow(clippy::bool_comparison)]
            fn compute(inputs: &[&Tensor], _: &NoAttrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                let [a, b] = args(inputs)?;
                let out = only_output(outputs)?;
                $set!(a.dtype(), T => zip_broadcast::<T, T, $out>(a, b, out, |$a, $b| $body))
            }
        }
    )*};
}

binary! {
    /// `add`: `a + b` (integers wrap). Numeric dtypes.
    Add = "add", nums -> T, |a, b| Ok(a.add_wrapping(b));
    /// `subtract`: `a - b` (integers wrap). Numeric dtypes.
    Subtract = "subtract", nums -> T, |a, b| Ok(a.sub_wrapping(b));
    /// `multiply`: `a * b` (integers wrap). Numeric dtypes.
    Multiply = "multiply", nums -> T, |a, b| Ok(a.mul_wrapping(b));
    /// `divide`: IEEE division for floats, truncating division for integers (`x / 0 == 0`).
    /// Numeric dtypes.
    Divide = "divide", nums -> T, |a, b| Ok(a.divide(b));
    /// `power`: `a ^ b`. Float dtypes.
    Power = "power", floats -> T, |a, b| Ok(a.powf(b));
    /// `maximum`. Numeric dtypes.
    Maximum = "maximum", nums -> T, |a, b| Ok(if a >= b { a } else { b });
    /// `minimum`. Numeric dtypes.
    Minimum = "minimum", nums -> T, |a, b| Ok(if a <= b { a } else { b });
    /// `floor_divide`: `floor(a / b)`. Numeric dtypes.
    FloorDivide = "floor_divide", nums -> T, |a, b| Ok(a.floor_divide(b));
    /// `floor_mod`: `a - floor(a / b) * b`, with the sign of `b`. Numeric dtypes.
    FloorMod = "floor_mod", nums -> T, |a, b| Ok(a.floor_mod(b));
    /// `equal` → `bool`. Every dtype.
    Equal = "equal", any_type -> bool, |a, b| Ok(a == b);
    /// `not_equal` → `bool`. Every dtype.
    NotEqual = "not_equal", any_type -> bool, |a, b| Ok(a != b);
    /// `less` → `bool`. Every dtype.
    Less = "less", any_type -> bool, |a, b| Ok(a < b);
    /// `less_equal` → `bool`. Every dtype.
    LessEqual = "less_equal", any_type -> bool, |a, b| Ok(a <= b);
    /// `greater` → `bool`. Every dtype.
    Greater = "greater", any_type -> bool, |a, b| Ok(a > b);
    /// `greater_equal` → `bool`. Every dtype.
    GreaterEqual = "greater_equal", any_type -> bool, |a, b| Ok(a >= b);
    /// `logical_and`. `bool` only.
    LogicalAnd = "logical_and", bools -> bool, |a, b| Ok(a && b);
    /// `logical_or`. `bool` only.
    LogicalOr = "logical_or", bools -> bool, |a, b| Ok(a || b);
}

/// `where(cond, x, y)`: `x` where `cond` is true, else `y`, all three broadcast together.
/// `cond` is `bool`; `x` and `y` share any dtype, which the output has.
#[derive(Debug)]
pub struct Where;

impl Kernel for Where {
    const NAME: &'static str = "where";
    type Attrs = NoAttrs;

    fn shapes(inputs: &[&[usize]], _: &NoAttrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let [c, x, y] = args(inputs)?;
        Ok(vec![broadcast_shapes(&[c, x, y])?])
    }

    fn dtypes(inputs: &[DType], _: &NoAttrs) -> Result<Vec<DType>, KernelError> {
        let [c, x, y] = args(inputs)?;
        if c != DType::BOOL {
            return Err(KernelError::DType(format!("`where` condition must be bool, got {c}")));
        }
        Ok(vec![same_dtype(&[x, y])?])
    }

    fn compute(
        inputs: &[&Tensor],
        _: &NoAttrs,
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
