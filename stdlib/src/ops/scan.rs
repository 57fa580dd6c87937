//! Scans (TVM `src/relay/op/tensor/transform.cc`, `ScanopAttrs`): `cumsum` and `cumprod`
//! along one axis, or over the flattened input when `axis` is absent, accumulating in `dtype`
//! (the input's by default), inclusive or `exclusive`. Each is one line of `scan!`; TVM fuses
//! neither (`OpPattern::Opaque`), so they have no kir compute rule.

use crate::attrs::ScanopAttrs;
use crate::error::KernelError;
use crate::kernels::num::{cast, Num};
use crate::kernels::util::{args, normalize_axis, nums, only_output};
use crate::kernels::Checked;
use crate::operator::{DTypeSet, Operator, ShapeDim};
use relay_compiler::op::OpPattern;
use relay_devices::{DType, Tensor};

/// Scans the rows of `data` (laid out `[outer, n, inner]`, the scanned axis in the middle)
/// with `step`, starting from `identity`; `exclusive` shifts each row by one.
fn scan_rows<U: Num>(
    data: &mut [U],
    n: usize,
    inner: usize,
    identity: U,
    exclusive: bool,
    step: fn(U, U) -> U,
) {
    if n == 0 || inner == 0 {
        return;
    }
    for block in data.chunks_exact_mut(n * inner) {
        for i in 0..inner {
            let mut acc = identity;
            for k in 0..n {
                let slot = &mut block[k * inner + i];
                let next = step(acc, *slot);
                *slot = if exclusive { acc } else { next };
                acc = next;
            }
        }
    }
}

/// Declares scans, one per line: `Name = "tvm.name", identity, step, "doc";` (`step` combines
/// the running value with the next element, in the output dtype, integers wrapping).
macro_rules! scan {
    ($(#[$ldoc:meta])* list $list:ident; $($(#[$doc:meta])* $name:ident = $op:literal, $identity:ident, $step:ident, $summary:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl Operator for $name {
            const NAME: &'static str = $op;
            const PATTERN: OpPattern = OpPattern::Opaque;
            const NUM_INPUTS: usize = 1;
            const DTYPES: DTypeSet = DTypeSet::Nums;
            const DOC: &'static str = $summary;
            type Attrs = ScanopAttrs;

            fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &ScanopAttrs) -> Result<Vec<Vec<D>>, KernelError> {
                scan_shape(inputs, attrs)
            }

            fn dtypes(inputs: &[DType], attrs: &ScanopAttrs) -> Result<Vec<DType>, KernelError> {
                let [d] = args(inputs)?;
                Self::DTYPES.check(d)?;
                Ok(vec![Self::DTYPES.check(attrs.dtype.unwrap_or(d))?])
            }

            fn reference(inputs: &[&Tensor], attrs: &ScanopAttrs, outputs: &mut [Tensor], _: Checked) -> Result<(), KernelError> {
                let [x] = args(inputs)?;
                let out = only_output(outputs)?;
                let (n, inner) = match attrs.axis {
                    None => (x.len(), 1),
                    Some(a) => {
                        let axis = normalize_axis(a, x.ndim())?;
                        (x.shape()[axis], x.shape()[axis + 1..].iter().product())
                    }
                };
                let exclusive = attrs.exclusive;
                nums!(x.dtype(), T => {
                    let values = x.view::<T>()?.to_vec();
                    nums!(out.dtype(), U => {
                        let dst = out.as_mut_slice::<U>()?;
                        for (d, &v) in dst.iter_mut().zip(&values) {
                            *d = cast::<T, U>(v);
                        }
                        scan_rows::<U>(dst, n, inner, U::$identity, exclusive, |a, b| a.$step(b));
                        Ok(())
                    })
                })
            }
        }
    )*
        $(#[$ldoc])*
        pub const $list: &[crate::operator::OpEntry] = &[$(crate::operator::OpEntry::of::<$name>()),*];
    };
}

/// The output shape of a scan: the input's, or its flattened length without `axis`.
fn scan_shape<D: ShapeDim>(inputs: &[&[D]], attrs: &ScanopAttrs) -> Result<Vec<Vec<D>>, KernelError> {
    let [x] = args(inputs)?;
    match attrs.axis {
        Some(a) => {
            normalize_axis(a, x.len())?;
            Ok(vec![x.to_vec()])
        }
        None => Ok(vec![vec![D::product(x)?]]),
    }
}

scan! {
    /// The scans.
    list SCAN;
    /// `cumsum`: running sums.
    Cumsum = "cumsum", ZERO, add_wrapping, "running sum along axis (flattened without axis)";
    /// `cumprod`: running products.
    Cumprod = "cumprod", ONE, mul_wrapping, "running product along axis (flattened without axis)";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::eval;
    use relay_compiler::ir::Dim;

    #[test]
    fn exclusive_cumsum_along_an_axis_in_another_dtype() {
        let x = Tensor::from_vec(vec![2, 3], vec![1i32, 2, 3, 4, 5, 6]).unwrap();
        let a = ScanopAttrs { axis: Some(1), dtype: Some(DType::F32), exclusive: true };
        let y = eval::<Cumsum>(&[&x], &a).unwrap();
        assert_eq!(y[0].as_slice::<f32>().unwrap(), &[0.0, 1.0, 3.0, 0.0, 4.0, 9.0]);
        let flat = eval::<Cumprod>(&[&x], &ScanopAttrs::default()).unwrap();
        assert_eq!(flat[0].as_slice::<i32>().unwrap(), &[1, 2, 6, 24, 120, 720]);
        assert_eq!(
            scan_shape(&[&[Dim::Any, Dim::Known(2)]], &ScanopAttrs::default()).unwrap(),
            vec![vec![Dim::Any]]
        );
    }
}
