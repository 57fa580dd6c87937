//! Checking a call's tensors and syms against a kernel's declarations.

use super::{BufferId, BufferRole, Extent, Kernel};
use relay_devices::{DType, Tensor};

/// Why a call's arguments do not fit a kernel.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// Wrong number of tensors or syms.
    #[error("kernel `{kernel}` takes {expected} {what}, got {actual}")]
    Count {
        /// The kernel.
        kernel: String,
        /// `inputs`, `outputs` or `syms`.
        what: &'static str,
        /// Declared.
        expected: usize,
        /// Passed.
        actual: usize,
    },
    /// A tensor of the wrong dtype.
    #[error("buffer `{buffer}` is {expected}, the tensor is {actual}")]
    DType {
        /// The buffer.
        buffer: String,
        /// Declared.
        expected: DType,
        /// Passed.
        actual: DType,
    },
    /// A tensor of the wrong shape.
    #[error("buffer `{buffer}` has shape {expected:?} here, the tensor has {actual:?}")]
    Shape {
        /// The buffer.
        buffer: String,
        /// The declared shape with the call's syms.
        expected: Vec<i64>,
        /// The tensor's shape.
        actual: Vec<usize>,
    },
    /// A sym that is negative, or that shapes give two values for.
    #[error("sym `{sym}` cannot be {value}")]
    BadSym {
        /// The sym.
        sym: String,
        /// The offending value.
        value: i64,
    },
    /// A sym no buffer shape mentions, so [`infer_syms`] cannot find it.
    #[error("sym `{0}` does not appear in any parameter shape")]
    UnboundSym(String),
    /// A buffer whose element count overflows.
    #[error("buffer `{0}` is too large")]
    TooLarge(String),
}

/// The shape of `buf` for a call with `syms`; `None` if a sym is missing or the element
/// count overflows `i64`.
pub fn buffer_shape(kernel: &Kernel, buf: BufferId, syms: &[i64]) -> Option<Vec<i64>> {
    let decl = kernel.buffer(buf)?;
    let shape: Vec<i64> = decl.shape.iter().map(|e| e.resolve(syms)).collect::<Option<_>>()?;
    shape.iter().try_fold(1i64, |n, &d| n.checked_mul(d))?;
    Some(shape)
}

/// Checks a call: as many inputs, outputs and syms as declared, every sym `>= 0`, and each
/// tensor of its parameter's dtype and shape (with the syms substituted).
pub fn check_args(
    kernel: &Kernel,
    inputs: &[&Tensor],
    outputs: &[Tensor],
    syms: &[i64],
) -> Result<(), CallError> {
    let count = |what, expected, actual| {
        if expected == actual {
            Ok(())
        } else {
            Err(CallError::Count { kernel: kernel.name.clone(), what, expected, actual })
        }
    };
    count("syms", kernel.syms.len(), syms.len())?;
    if let Some((s, &value)) = syms.iter().enumerate().find(|(_, v)| **v < 0) {
        return Err(CallError::BadSym { sym: kernel.syms[s].name.clone(), value });
    }
    count("inputs", kernel.num_inputs(), inputs.len())?;
    count("outputs", kernel.num_outputs(), outputs.len())?;
    // Called before every kernel launch: compares in place, and allocates only to report.
    let (mut ins, mut outs) = (inputs.iter().copied(), outputs.iter());
    for (i, decl) in kernel.buffers.iter().enumerate() {
        let tensor = match decl.role {
            BufferRole::Input => ins.next(),
            BufferRole::Output => outs.next(),
            BufferRole::Temp => continue,
        };
        let Some(tensor) = tensor else { continue };
        if decl.dtype != tensor.dtype() {
            return Err(CallError::DType {
                buffer: decl.name.clone(),
                expected: decl.dtype,
                actual: tensor.dtype(),
            });
        }
        let mut same = decl.shape.len() == tensor.ndim();
        for (e, &a) in decl.shape.iter().zip(tensor.shape()) {
            match e.resolve(syms) {
                Some(e) => same &= i64::try_from(a) == Ok(e),
                None => return Err(CallError::TooLarge(decl.name.clone())),
            }
        }
        if !same {
            let buf = BufferId(i as u32);
            let expected =
                buffer_shape(kernel, buf, syms).ok_or_else(|| CallError::TooLarge(decl.name.clone()))?;
            return Err(CallError::Shape {
                buffer: decl.name.clone(),
                expected,
                actual: tensor.shape().to_vec(),
            });
        }
    }
    Ok(())
}

/// The syms of a call, read off the parameter shapes: the first dimension declared as a sym
/// gives its value, later ones must agree (else [`CallError::BadSym`]). Shapes of the wrong
/// rank are skipped here and reported by [`check_args`].
pub fn infer_syms(
    kernel: &Kernel,
    input_shapes: &[&[usize]],
    output_shapes: &[&[usize]],
) -> Result<Vec<i64>, CallError> {
    let mut syms: Vec<Option<i64>> = vec![None; kernel.syms.len()];
    let params = kernel
        .buffers_with_role(BufferRole::Input)
        .zip(input_shapes)
        .chain(kernel.buffers_with_role(BufferRole::Output).zip(output_shapes));
    for (buf, shape) in params {
        let decl = &kernel.buffers[buf.index()];
        if decl.shape.len() != shape.len() {
            continue;
        }
        for (extent, &dim) in decl.shape.iter().zip(shape.iter()) {
            let Extent::Sym(s) = *extent else { continue };
            let Some(slot) = syms.get_mut(s.index()) else { continue };
            let name = || kernel.syms[s.index()].name.clone();
            let value = i64::try_from(dim).map_err(|_| CallError::BadSym { sym: name(), value: i64::MAX })?;
            match *slot {
                Some(v) if v != value => return Err(CallError::BadSym { sym: name(), value }),
                _ => *slot = Some(value),
            }
        }
    }
    syms.iter()
        .enumerate()
        .map(|(i, v)| v.ok_or_else(|| CallError::UnboundSym(kernel.syms[i].name.clone())))
        .collect()
}
