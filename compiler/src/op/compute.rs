//! Compute rules: an operator's meaning as kir, composable across a fused group
//! (ARCHITECTURE.md §3 "Fusion"; TVM's `FTVMCompute` over `te.compute`).
//!
//! A rule sees its inputs as [`LazyTensor`]s — a static shape, a dtype and a function from
//! element indices to a kir [`Expr`] — and returns a [`TensorDef`]:
//! - [`TensorDef::Lazy`] for elementwise, broadcast and injective ops: the element function
//!   of the output, built from the inputs' element functions. Composing such rules inlines
//!   every intermediate into its consumer, so it never touches memory.
//! - [`TensorDef::Nest`] for anchors (products, convolution, softmax, reductions): a loop nest
//!   emitter that computes each output element and hands it to a *sink* together with its
//!   indices. The group lowering chooses the sink: a store into a temp or output buffer, or
//!   the group's elementwise tail applied to the value before the store (the epilogue).
//!
//! Shapes are static: FuseOps leaves ops with `?` dimensions to their reference kernels.

use super::AttrReader;
use crate::kir::{BufferId, Expr, Index, KernelBuilder, LoopKind};
use relay_devices::DType;
use std::fmt;
use std::rc::Rc;

/// An element function: the value at `indices` (one per dimension, outermost first).
pub type ElemFn = Rc<dyn Fn(&KernelBuilder, &[Index]) -> Expr>;

/// Where an anchor delivers each output element: `sink(builder, indices, value)`.
pub type Sink<'a> = &'a mut dyn FnMut(&mut KernelBuilder, &[Index], Expr);

/// A loop-nest emitter: writes the anchor's loops into the builder, calling the sink once
/// per output element.
pub type NestFn = Rc<dyn Fn(&mut KernelBuilder, Sink<'_>)>;

/// A tensor value inside a kernel under construction.
#[derive(Clone)]
pub struct LazyTensor {
    /// Element type.
    pub dtype: DType,
    /// Static dimensions, outermost first.
    pub shape: Vec<i64>,
    elem: ElemFn,
    /// The kernel buffer holding the tensor row-major, when it is one (a kernel input).
    buffer: Option<BufferId>,
}

impl fmt::Debug for LazyTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LazyTensor({:?}, {})", self.shape, self.dtype)
    }
}

impl LazyTensor {
    /// A tensor whose element at `indices` is `elem(builder, indices)`.
    pub fn new(dtype: DType, shape: Vec<i64>, elem: ElemFn) -> LazyTensor {
        LazyTensor { dtype, shape, elem, buffer: None }
    }

    /// The tensor held row-major in buffer `buf` of the kernel under construction.
    pub fn from_buffer(buf: BufferId, dtype: DType, shape: Vec<i64>) -> LazyTensor {
        LazyTensor { dtype, shape, elem: Rc::new(move |k, idx| k.load(buf, idx)), buffer: Some(buf) }
    }

    /// The buffer holding the tensor row-major, if it is a kernel input rather than computed
    /// (rules may then hand the whole buffer to an intrinsic such as [`crate::kir::Stmt::Gemm`]).
    pub fn buffer(&self) -> Option<BufferId> {
        self.buffer
    }

    /// The element at `indices` (exactly one index per dimension).
    pub fn at(&self, k: &KernelBuilder, indices: &[Index]) -> Expr {
        (self.elem)(k, indices)
    }

    /// The element that broadcasts to output element `out` (NumPy rules: trailing
    /// dimensions aligned, size-1 dimensions read at 0).
    pub fn at_broadcast(&self, k: &KernelBuilder, out: &[Index]) -> Expr {
        let skip = out.len().saturating_sub(self.shape.len());
        let idx: Vec<Index> = self
            .shape
            .iter()
            .zip(out.iter().skip(skip))
            .map(|(&d, i)| if d == 1 { Index::Const(0) } else { i.clone() })
            .collect();
        self.at(k, &idx)
    }

    /// Number of elements.
    pub fn size(&self) -> i64 {
        self.shape.iter().product()
    }
}

/// What a compute rule produces for its (single) output.
#[derive(Clone)]
pub enum TensorDef {
    /// An element function: nothing is emitted until a consumer reads it.
    Lazy(ElemFn),
    /// A loop nest that must run before the value can be read.
    Nest(NestFn),
}

impl fmt::Debug for TensorDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TensorDef::Lazy(_) => "Lazy",
            TensorDef::Nest(_) => "Nest",
        })
    }
}

/// An input of a compute rule: a tensor, or a tuple of tensors (`concatenate`).
#[derive(Clone, Debug)]
pub enum ComputeInput {
    /// A tensor argument.
    Tensor(LazyTensor),
    /// A tuple argument, field by field.
    Tuple(Vec<LazyTensor>),
}

/// The static output type a compute rule must produce (from type inference).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutType {
    /// Element type.
    pub dtype: DType,
    /// Static dimensions.
    pub shape: Vec<i64>,
}

/// A compute rule: `(inputs, attributes, output type) -> definition`, or a message saying
/// why this call cannot be computed in kir (the op then runs its reference kernel).
pub type ComputeFn = fn(&[ComputeInput], &AttrReader, &OutType) -> Result<TensorDef, String>;

/// Emits loops over `shape` (outermost first; the innermost of kind `innermost`, the others
/// serial; none for an outer dimension of extent 1, whose index is 0) and calls `body` with
/// the indices of each element.
pub fn for_each_index(
    k: &mut KernelBuilder,
    shape: &[i64],
    innermost: LoopKind,
    body: &mut dyn FnMut(&mut KernelBuilder, &[Index]),
) {
    fn go(
        k: &mut KernelBuilder,
        shape: &[i64],
        innermost: LoopKind,
        idx: &mut Vec<Index>,
        body: &mut dyn FnMut(&mut KernelBuilder, &[Index]),
    ) {
        match shape.split_first() {
            None => body(k, idx),
            // An outer dimension of extent 1 (the batch of one of a recurrent cell) gets no
            // loop: the body sits directly in the loop nest around it, so the innermost loop
            // is outermost where it can be (OpenCL parallelises outermost loops).
            Some((1, rest)) if !rest.is_empty() => {
                idx.push(Index::Const(0));
                go(k, rest, innermost, idx, body);
                idx.pop();
            }
            Some((&n, rest)) => {
                let kind = if rest.is_empty() { innermost } else { LoopKind::Serial };
                k.for_(n, kind, |k, i| {
                    idx.push(i);
                    go(k, rest, innermost, idx, body);
                    idx.pop();
                });
            }
        }
    }
    go(k, shape, innermost, &mut Vec::with_capacity(shape.len()), body);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kir::interp;
    use relay_devices::Tensor;

    #[test]
    fn broadcast_reads_align_right_and_pin_unit_dims() {
        let mut k = KernelBuilder::new("t");
        let b = k.input("b", DType::F32, [1, 3]);
        let out = k.output("y", DType::F32, [2, 3]);
        let bt = LazyTensor::new(DType::F32, vec![1, 3], Rc::new(move |k, idx| k.load(b, idx)));
        for_each_index(&mut k, &[2, 3], LoopKind::Vectorize, &mut |k, idx| {
            let v = bt.at_broadcast(k, idx);
            k.store_at(out, idx, v);
        });
        let kernel = k.finish().unwrap();
        let x = Tensor::from_vec(vec![1, 3], vec![1f32, 2.0, 3.0]).unwrap();
        let mut outs = vec![Tensor::zeros(DType::F32, vec![2, 3]).unwrap()];
        interp::run(&kernel, &[&x], &mut outs, &[]).unwrap();
        assert_eq!(outs[0].as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    }
}
