//! TVM's dynamic-shape operators (`src/relay/op/dyn/`): `dyn.reshape`, `dyn.broadcast_to`,
//! `dyn.full`, `dyn.zeros`, `dyn.ones`, `dyn.tile`, `dyn.strided_slice`, `dyn.topk`,
//! `dyn.one_hot`, `dyn.squeeze`, `dyn.expand_dims`, `dyn.nn.pad`, `dyn.nn.upsampling`,
//! `dyn.image.resize2d`.
//!
//! Each is its static operator with some attributes (a shape, sizes, scales, a count) passed
//! as tensor *operands* instead: a [`DynamicForm`] says which inputs those are and how their
//! values become the static operator's attributes, and [`Dyn`] makes the operator item. At
//! run time the static operator's shape function and reference kernel run on the attributes
//! read from the values, so no semantics are written twice. The relation is TVM's dynamic one
//! (the sizes that depend on the values are `?`), checked against the static relation where
//! TVM keeps sizes. A call whose operands are constants has a static form (TVM's
//! `DynamicToStatic`, [`Operator::TO_STATIC`]): the static operator with the attributes the
//! same [`DynamicForm::static_attrs`] reads from the constants.

mod forms;
mod operand;

pub use forms::*;

use crate::attrs::OpAttrs;
use crate::error::KernelError;
use crate::kernels::Checked;
use crate::operator::{message, typed_relation, CanonicalizeRule, DTypeSet, OpEntry, Operator, ShapeDim};
use relay_compiler::codegen::constant_tensor;
use relay_compiler::ir::ExprId;
use relay_compiler::op::{Builder, OpPattern, RelType};
use relay_devices::{DType, Tensor};
use std::marker::PhantomData;

/// Every `dyn.*` operator.
pub const DYNAMIC: &[OpEntry] = &[
    OpEntry::of::<Dyn<Reshape>>(),
    OpEntry::of::<Dyn<BroadcastTo>>(),
    OpEntry::of::<Dyn<Full>>(),
    OpEntry::of::<Dyn<Zeros>>(),
    OpEntry::of::<Dyn<Ones>>(),
    OpEntry::of::<Dyn<Tile>>(),
    OpEntry::of::<Dyn<StridedSlice>>(),
    OpEntry::of::<Dyn<Topk>>(),
    OpEntry::of::<Dyn<OneHot>>(),
    OpEntry::of::<Dyn<Squeeze>>(),
    OpEntry::of::<Dyn<ExpandDims>>(),
    OpEntry::of::<Dyn<Pad>>(),
    OpEntry::of::<Dyn<Upsampling>>(),
    OpEntry::of::<Dyn<Resize2d>>(),
];

/// The dynamic form of static operator [`DynamicForm::Static`]: which inputs are operands
/// and how their values become its attributes.
pub trait DynamicForm: 'static {
    /// TVM's name (`dyn.reshape`).
    const NAME: &'static str;
    /// One line for listings.
    const DOC: &'static str;
    /// The static operator it runs.
    type Static: Operator;
    /// The attributes that stay attributes.
    type Attrs: OpAttrs;
    /// The positions of the operands among the inputs, in order; the other inputs are the
    /// static operator's, in order.
    const OPERANDS: &'static [usize];
    /// The dtypes each operand may have, in the order of [`DynamicForm::OPERANDS`].
    const OPERAND_DTYPES: &'static [DTypeSet];
    /// TVM's pattern for the dynamic operator (FuseOps leaves `?`-shaped calls alone anyway).
    const PATTERN: OpPattern = <Self::Static as Operator>::PATTERN;

    /// The static operator's attributes: from the operands' values, or, while type
    /// checking (`operands` is `None`), with placeholders where the values go (the dtype rule
    /// and the relation's static checks read them; no size comes from them).
    ///
    /// # Errors
    /// Operand values or attributes that the static operator cannot take.
    fn static_attrs(
        attrs: &Self::Attrs,
        operands: Option<&[&Tensor]>,
    ) -> Result<<Self::Static as Operator>::Attrs, KernelError>;

    /// TVM's dynamic relation: the result shapes, `?` where they depend on operand values,
    /// from the static operator's inputs' shapes and the operands' shapes.
    ///
    /// # Errors
    /// Operands of the wrong rank or unknown length (TVM needs the result's rank), and what
    /// the static relation rejects.
    fn relation<D: ShapeDim>(
        data: &[&[D]],
        operands: &[&[D]],
        attrs: &Self::Attrs,
    ) -> Result<Vec<Vec<D>>, KernelError>;
}

/// The operator item of dynamic form `F` (see the module docs).
#[derive(Debug)]
pub struct Dyn<F>(PhantomData<F>);

/// `inputs` split into the static operator's inputs and the operands of `F`.
fn split<F: DynamicForm, T: Copy>(inputs: &[T]) -> Result<(Vec<T>, Vec<T>), KernelError> {
    let n = <Dyn<F> as Operator>::NUM_INPUTS;
    if inputs.len() != n {
        return Err(KernelError::Arity { expected: n.to_string(), actual: inputs.len() });
    }
    let (mut data, mut operands) = (Vec::with_capacity(n), Vec::with_capacity(F::OPERANDS.len()));
    for (i, &x) in inputs.iter().enumerate() {
        if F::OPERANDS.contains(&i) {
            operands.push(x);
        } else {
            data.push(x);
        }
    }
    Ok((data, operands))
}

impl<F: DynamicForm> Operator for Dyn<F> {
    const NAME: &'static str = F::NAME;
    const PATTERN: OpPattern = F::PATTERN;
    const NUM_INPUTS: usize = <F::Static as Operator>::NUM_INPUTS + F::OPERANDS.len();
    const TUPLE_OUTPUT: bool = <F::Static as Operator>::TUPLE_OUTPUT;
    const DTYPES: DTypeSet = <F::Static as Operator>::DTYPES;
    const DOC: &'static str = F::DOC;
    type Attrs = F::Attrs;
    const TO_STATIC: Option<CanonicalizeRule<F::Attrs>> = Some(to_static::<F>);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], attrs: &F::Attrs) -> Result<Vec<Vec<D>>, KernelError> {
        let (data, operands) = split::<F, _>(inputs)?;
        F::relation(&data, &operands, attrs)
    }

    fn output_shapes(inputs: &[&Tensor], attrs: &F::Attrs) -> Result<Vec<Vec<usize>>, KernelError> {
        let (data, operands) = split::<F, _>(inputs)?;
        let static_attrs = F::static_attrs(attrs, Some(operands.as_slice()))?;
        <F::Static as Operator>::output_shapes(&data, &static_attrs)
    }

    fn dtypes(inputs: &[DType], attrs: &F::Attrs) -> Result<Vec<DType>, KernelError> {
        let (data, operands) = split::<F, _>(inputs)?;
        for (&d, set) in operands.iter().zip(F::OPERAND_DTYPES) {
            set.check(d).map_err(|_| {
                KernelError::DType(format!("shape operands must be {} tensors, found `{d}`", set.describe()))
            })?;
        }
        <F::Static as Operator>::dtypes(&data, &F::static_attrs(attrs, None)?)
    }

    fn reference(
        inputs: &[&Tensor],
        attrs: &F::Attrs,
        outputs: &mut [Tensor],
        checked: Checked,
    ) -> Result<(), KernelError> {
        let (data, operands) = split::<F, _>(inputs)?;
        let static_attrs = F::static_attrs(attrs, Some(operands.as_slice()))?;
        <F::Static as Operator>::reference(&data, &static_attrs, outputs, checked)
    }
}

/// The static form of a call of `Dyn<F>` (TVM's `DynamicToStatic`): with every operand a
/// constant, the static operator on the other arguments, its attributes those
/// [`DynamicForm::static_attrs`] reads from the values (written back as the call's attributes,
/// defaults left out). Declined while an operand is not a constant, and where the static
/// relation rejects what the values say (the call keeps failing at run time, as TVM's rewrite
/// would fail to type).
fn to_static<F: DynamicForm>(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
    attrs: &F::Attrs,
) -> Result<ExprId, String> {
    let (data, operands) = split::<F, _>(args).map_err(message)?;
    let values = operands
        .iter()
        .map(|&e| constant_tensor(&b.value(e).ok_or("a shape operand is not a constant")?))
        .collect::<Result<Vec<Tensor>, String>>()?;
    let values: Vec<&Tensor> = values.iter().collect();
    let static_attrs = F::static_attrs(attrs, Some(&values)).map_err(message)?;
    let type_refs: Vec<&RelType> = types.iter().collect();
    let (data_types, _) = split::<F, _>(&type_refs).map_err(message)?;
    let data_types: Vec<RelType> = data_types.into_iter().cloned().collect();
    typed_relation::<F::Static>(&data_types, &static_attrs)?
        .ok_or("the static operator's argument types are not known")?;
    Ok(b.call(<F::Static as Operator>::NAME, data, static_attrs.to_attrs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `relay-vm ops` reports a `dyn.*` operator as fused when the operator named like it
    /// without `dyn.` (TVM's naming of the dynamic forms) has a compute rule: it must be the
    /// static operator its static form writes.
    #[test]
    fn each_form_is_named_after_its_static_operator() {
        fn static_name<F: DynamicForm>() -> (&'static str, &'static str) {
            (F::NAME, <F::Static as Operator>::NAME)
        }
        let forms = [
            static_name::<Reshape>(),
            static_name::<BroadcastTo>(),
            static_name::<Full>(),
            static_name::<Zeros>(),
            static_name::<Ones>(),
            static_name::<Tile>(),
            static_name::<StridedSlice>(),
            static_name::<Topk>(),
            static_name::<OneHot>(),
            static_name::<Squeeze>(),
            static_name::<ExpandDims>(),
            static_name::<Pad>(),
            static_name::<Upsampling>(),
            static_name::<Resize2d>(),
        ];
        assert_eq!(forms.len(), DYNAMIC.len());
        for (name, static_name) in forms {
            assert_eq!(name.strip_prefix("dyn."), Some(static_name));
        }
        assert!(DYNAMIC.iter().all(|e| e.def.to_static.is_some()));
    }
}
