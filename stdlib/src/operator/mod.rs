//! The operator item: one Rust type per operator carries every facet of it — TVM's name, the
//! fusion pattern, the typed attributes, ONE shape function (used by the type relation over
//! symbolic dimensions and by the reference kernel over concrete ones), the dtype rule, the
//! reference kernel, the optional kir compute rule, the optional canonical form (a rewrite into
//! ordinary operators) and the optional scalar VM instruction.
//! [`OpEntry::of`] derives from it the compiler's [`OpDef`] (relation, compute rule, scalar
//! form) and the runtime's [`RefOp`], so no facet is written twice or joined by name.
//!
//! Facets still to come (a gradient rule, a quantized realization) become trait items with a
//! default here, not another folder.

mod dim;
mod dtypes;

pub use dim::{broadcast, shape_text, ShapeDim};
pub(crate) use dtypes::dtype_set;
pub use dtypes::DTypeSet;

use crate::attrs::OpAttrs;
use crate::error::KernelError;
use crate::kernels::{half_float, Checked, ReferenceKernel};
use crate::RefOp;
use relay_compiler::ir::Dim;
use relay_compiler::ir::ExprId;
use relay_compiler::op::{
    AttrReader, Builder, CanonicalizeFn, ComputeFn, ComputeInput, OpDef, OpPattern, OutType, ProjectFn,
    RelType, RelationResult, ScalarForm, TensorDef, TensorType,
};
use relay_devices::{DType, Tensor};

/// A compute rule over the operator's typed attributes: `(inputs, attributes, output type) ->
/// kir definition`, or why this call cannot be computed in kir (it then runs the reference
/// kernel).
pub type ComputeRule<A> = fn(&[ComputeInput], &A, &OutType) -> Result<TensorDef, String>;

/// A canonical form over the operator's typed attributes (TVM's `FTVMQnnCanonicalize`, and
/// `CanonicalizeOps`' rewrites for ordinary operators):
/// `(builder, arguments, argument types, attributes) -> the call as ordinary operators`, or
/// why this call stays (it then runs the reference kernel). It must compute exactly what the
/// reference kernel computes. A static form ([`Operator::TO_STATIC`]) has the same shape.
pub type CanonicalizeRule<A> = fn(&mut Builder<'_>, &[ExprId], &[RelType], &A) -> Result<ExprId, String>;

/// An `AlterOpLayout` rule over the operator's typed attributes (TVM's `FTVMAlterOpLayout`):
/// the call rewritten into operators this backend computes faster (a convolution into its
/// Winograd form), with [`CanonicalizeRule`]'s signature and contract, or why it stays.
pub type AlterOpLayoutRule<A> = CanonicalizeRule<A>;

/// One operator, every facet in one item. Implemented by a zero-sized type per operator,
/// usually through a family macro (`unary!`, `binary!`) that makes each operator one line.
pub trait Operator: 'static {
    /// TVM's name (`add`, `nn.conv2d`).
    const NAME: &'static str;
    /// How it fuses (TVM's `TOpPattern`).
    const PATTERN: OpPattern;
    /// Number of value inputs.
    const NUM_INPUTS: usize;
    /// Whether the first argument is a tuple whose fields are the inputs (`concatenate`,
    /// `stack`): the relation unpacks it, and any further tuple argument (`qnn.concatenate`'s
    /// scales), and the runtime passes the fields in order.
    const TUPLE_INPUT: bool = false;
    /// Whether the result is a tuple even when it has one field (`split` into one part); by
    /// default one output is a tensor and several a tuple.
    const TUPLE_OUTPUT: bool = false;
    /// The operand dtypes it accepts, for listings (the dtype rule is [`Operator::dtypes`]).
    const DTYPES: DTypeSet;
    /// One line for listings: what it computes.
    const DOC: &'static str;
    /// The typed attributes (TVM names and defaults, declared once with `op_attrs!`).
    type Attrs: OpAttrs;
    /// The kir compute rule for fused kernels; `None`: the reference kernel only.
    const COMPUTE: Option<ComputeRule<Self::Attrs>> = None;
    /// The canonical form, which the `QnnCanonicalize` pass (quantized `qnn.*` operators) or
    /// the `CanonicalizeOps` pass (the rest) puts in place of each call; `None`: calls stay.
    const CANONICALIZE: Option<CanonicalizeRule<Self::Attrs>> = None;
    /// The layout rewrite, which the `AlterOpLayout` pass puts in place of each call; `None`:
    /// calls stay.
    const ALTER_OP_LAYOUT: Option<AlterOpLayoutRule<Self::Attrs>> = None;
    /// The static form (TVM's `DynamicToStatic`, the `dyn.*` operators): a call whose shape
    /// operands are constants rewritten into its static operator, the values read into its
    /// attributes; `None`: calls stay.
    const TO_STATIC: Option<CanonicalizeRule<Self::Attrs>> = None;
    /// The unboxed VM instruction of a call on 0-d operands; `None`: a kernel call.
    const SCALAR: Option<ScalarForm> = None;
    /// How to compute one field of a tuple result on its own (`split(x).i` as a slice), so
    /// that each field fuses with its consumers; `None`: the whole call.
    const PROJECT: Option<ProjectFn> = None;
    /// Whether the reference kernel computes half floats as `float32` (rounding each result
    /// once, as TVM's CPU target legalises them: `kernels/half_float.rs`); `false` for an
    /// operator that reads their bits (`reinterpret`), whose kernel then takes `float16` and
    /// `bfloat16` tensors as they are.
    const WIDENS_HALF_FLOATS: bool = true;

    /// Output shapes from input shapes, over concrete sizes (the reference kernel, sizing
    /// outputs at run time) and symbolic dimensions (the type relation, `?` allowed).
    ///
    /// # Errors
    /// Input ranks, dimensions or attribute values the operator rejects.
    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &Self::Attrs) -> Result<Vec<Vec<D>>, KernelError>;

    /// The output shapes of a call on these input tensors at run time: [`Operator::shapes`] on
    /// their shapes. An operator whose output shapes depend on input *values* (TVM's
    /// data-dependent shape functions: `argwhere`, and the `dyn.*` operators, whose shapes
    /// and sizes are operands) overrides it, feeding the sizes it reads from the values to
    /// the same shape function the relation runs with `?` in their place.
    ///
    /// # Errors
    /// As [`Operator::shapes`], and values that describe no shape.
    fn output_shapes(inputs: &[&Tensor], attrs: &Self::Attrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        <Self as Operator>::shapes(&shapes, attrs)
    }

    /// Output dtypes from input dtypes.
    ///
    /// # Errors
    /// Unsupported or mismatched dtypes.
    fn dtypes(inputs: &[DType], attrs: &Self::Attrs) -> Result<Vec<DType>, KernelError>;

    /// The reference kernel: writes the outputs, which [`crate::kernels::run`] has checked
    /// against [`Operator::shapes`] and [`Operator::dtypes`].
    ///
    /// # Errors
    /// Data-dependent failures (integer division by zero, an index out of range).
    fn reference(
        inputs: &[&Tensor],
        attrs: &Self::Attrs,
        outputs: &mut [Tensor],
        checked: Checked,
    ) -> Result<(), KernelError>;
}

impl<T: Operator> ReferenceKernel for T {
    const NAME: &'static str = <T as Operator>::NAME;
    type Attrs = <T as Operator>::Attrs;
    const WIDENS_HALF_FLOATS: bool = <T as Operator>::WIDENS_HALF_FLOATS;

    fn shapes(inputs: &[&Tensor], attrs: &Self::Attrs) -> Result<Vec<Vec<usize>>, KernelError> {
        <T as Operator>::output_shapes(inputs, attrs)
    }

    fn dtypes(inputs: &[DType], attrs: &Self::Attrs) -> Result<Vec<DType>, KernelError> {
        half_float::output_dtypes(inputs, |d| <T as Operator>::dtypes(d, attrs))
    }

    fn compute(
        inputs: &[&Tensor],
        attrs: &Self::Attrs,
        outputs: &mut [Tensor],
        checked: Checked,
    ) -> Result<(), KernelError> {
        T::reference(inputs, attrs, outputs, checked)
    }
}

/// One operator as the library lists it: its compiler facets and its reference kernel.
#[derive(Clone, Debug)]
pub struct OpEntry {
    /// The registration: name, arity, attribute names, relation, pattern, compute rule,
    /// canonical form, static form, projection, scalar form.
    pub def: OpDef,
    /// The reference kernel behind type-erased entry points.
    pub reference: RefOp,
    /// The operand dtypes, for listings.
    pub dtypes: DTypeSet,
}

impl OpEntry {
    /// The entry of operator item `T`: every facet derived from it.
    pub const fn of<T: Operator>() -> OpEntry {
        OpEntry {
            def: OpDef {
                name: <T as Operator>::NAME,
                num_inputs: T::NUM_INPUTS,
                attrs: <<T as Operator>::Attrs as OpAttrs>::NAMES,
                relation: relation::<T>,
                pattern: T::PATTERN,
                compute: match T::COMPUTE {
                    Some(_) => Some(compute::<T> as ComputeFn),
                    None => None,
                },
                canonicalize: match T::CANONICALIZE {
                    Some(_) => Some(canonicalize::<T> as CanonicalizeFn),
                    None => None,
                },
                alter_op_layout: match T::ALTER_OP_LAYOUT {
                    Some(_) => Some(alter_op_layout::<T> as CanonicalizeFn),
                    None => None,
                },
                to_static: match T::TO_STATIC {
                    Some(_) => Some(to_static::<T> as CanonicalizeFn),
                    None => None,
                },
                project: T::PROJECT,
                scalar: T::SCALAR,
                doc: T::DOC,
            },
            reference: RefOp::of::<T>(),
            dtypes: T::DTYPES,
        }
    }
}

/// The type relation of `T`: its shape function over symbolic dimensions and its dtype rule,
/// on the parsed attributes.
fn relation<T: Operator>(args: &[RelType], reader: &AttrReader) -> RelationResult {
    typed_relation::<T>(args, &<T as Operator>::Attrs::from_attrs(reader)?)
}

/// The type relation of `T` on typed attributes (also how a rewrite checks that the call it
/// writes will type, `DynamicToStatic`).
pub(crate) fn typed_relation<T: Operator>(args: &[RelType], attrs: &T::Attrs) -> RelationResult {
    let fields = if T::TUPLE_INPUT { flattened_args(args)? } else { tensor_args(args)? };
    let Some(inputs) = fields else { return Ok(None) };
    let dtypes: Vec<DType> = inputs.iter().map(|t| t.dtype).collect();
    let shapes: Vec<&[Dim]> = inputs.iter().map(|t| t.shape.as_slice()).collect();
    let out_dtypes =
        half_float::output_dtypes(&dtypes, |d| <T as Operator>::dtypes(d, attrs)).map_err(unnamed::<T>)?;
    let out_shapes = <T as Operator>::shapes(&shapes, attrs).map_err(unnamed::<T>)?;
    let mut outs: Vec<RelType> =
        out_shapes.into_iter().zip(out_dtypes).map(|(shape, dtype)| RelType::tensor(shape, dtype)).collect();
    Ok(Some(if outs.len() == 1 && !T::TUPLE_OUTPUT { outs.remove(0) } else { RelType::Tuple(outs) }))
}

/// Input `i` as a tensor: `Ok(None)` while its type is unknown, an error if it is not a tensor.
fn tensor_arg(args: &[RelType], i: usize) -> Result<Option<&TensorType>, String> {
    match args.get(i) {
        Some(RelType::Tensor(t)) => Ok(Some(t)),
        Some(RelType::Unknown) => Ok(None),
        Some(other) => Err(format!("argument {} must be a tensor, found `{other}`", i + 1)),
        None => Err(format!("missing argument {}", i + 1)),
    }
}

/// Every argument as a tensor: `Ok(None)` while any is unknown.
fn tensor_args(args: &[RelType]) -> Result<Option<Vec<&TensorType>>, String> {
    let mut inputs = Vec::with_capacity(args.len());
    for i in 0..args.len() {
        match tensor_arg(args, i)? {
            Some(t) => inputs.push(t),
            None => return Ok(None),
        }
    }
    Ok(Some(inputs))
}

/// The first argument's fields, then each further argument's fields if it is a tuple, else
/// itself (`qnn.concatenate`'s tuples of scales and zero points): the order in which the
/// runtime passes them to the kernel. `Ok(None)` while any is unknown.
fn flattened_args(args: &[RelType]) -> Result<Option<Vec<&TensorType>>, String> {
    let Some(mut inputs) = tensor_tuple_arg(args, 0)? else { return Ok(None) };
    for i in 1..args.len() {
        let fields = match &args[i] {
            RelType::Tuple(_) => tensor_tuple_arg(args, i)?,
            _ => tensor_arg(args, i)?.map(|t| vec![t]),
        };
        match fields {
            Some(fields) => inputs.extend(fields),
            None => return Ok(None),
        }
    }
    Ok(Some(inputs))
}

/// Argument `i` as a non-empty tuple of tensors: `Ok(None)` while any field is unknown.
fn tensor_tuple_arg(args: &[RelType], i: usize) -> Result<Option<Vec<&TensorType>>, String> {
    let fields = match args.get(i) {
        Some(RelType::Tuple(fields)) => fields,
        Some(RelType::Unknown) => return Ok(None),
        Some(other) => return Err(format!("expects a tuple of tensors, found `{other}`")),
        None => return Err(format!("missing argument {}", i + 1)),
    };
    if fields.is_empty() {
        return Err("expects at least one tensor, found `()`".to_string());
    }
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        match f {
            RelType::Tensor(t) => out.push(t),
            RelType::Unknown => return Ok(None),
            other => return Err(format!("expects a tuple of tensors, found a field of type `{other}`")),
        }
    }
    Ok(Some(out))
}

/// A kernel error as a type error: the message without the kernel's category prefix.
pub(crate) fn message(e: KernelError) -> String {
    match e {
        KernelError::DType(m) | KernelError::Shape(m) | KernelError::Attr(m) => m,
        other => other.to_string(),
    }
}

/// A relation error's text without a leading operator name: the type checker's diagnostic
/// names the operator already, and kernel messages that start with it (written to read well
/// in a run-time trap as well) would otherwise say it twice.
fn unnamed<T: Operator>(e: KernelError) -> String {
    let m = message(e);
    let rest = m.strip_prefix(<T as Operator>::NAME);
    match rest.and_then(|r| r.strip_prefix(": ").or_else(|| r.strip_prefix(' '))) {
        Some(r) => r.to_string(),
        None => m,
    }
}

/// The compute rule of `T` behind the compiler's untyped signature.
fn compute<T: Operator>(
    inputs: &[ComputeInput],
    reader: &AttrReader,
    out: &OutType,
) -> Result<TensorDef, String> {
    let attrs = <T as Operator>::Attrs::from_attrs(reader)?;
    match T::COMPUTE {
        Some(rule) => rule(inputs, &attrs, out),
        None => Err(format!("`{}` has no compute rule", <T as Operator>::NAME)),
    }
}

/// The canonical form of `T` behind the compiler's untyped signature.
fn canonicalize<T: Operator>(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
) -> Result<ExprId, String> {
    rewrite::<T>(T::CANONICALIZE, "canonical form", b, args, types)
}

/// The static form of `T` behind the compiler's untyped signature.
fn to_static<T: Operator>(b: &mut Builder<'_>, args: &[ExprId], types: &[RelType]) -> Result<ExprId, String> {
    rewrite::<T>(T::TO_STATIC, "static form", b, args, types)
}

/// Rewrite `rule` of `T` (its facet `what`) on a call, its attributes parsed.
fn rewrite<T: Operator>(
    rule: Option<CanonicalizeRule<T::Attrs>>,
    what: &str,
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
) -> Result<ExprId, String> {
    let attrs = <T as Operator>::Attrs::from_attrs(&b.attrs())?;
    match rule {
        Some(rule) => rule(b, args, types, &attrs),
        None => Err(format!("`{}` has no {what}", <T as Operator>::NAME)),
    }
}

/// The `AlterOpLayout` rule of `T` behind the compiler's untyped signature.
fn alter_op_layout<T: Operator>(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
) -> Result<ExprId, String> {
    rewrite::<T>(T::ALTER_OP_LAYOUT, "layout rewrite", b, args, types)
}
