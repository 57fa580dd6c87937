//! Operator calls through the stdlib's reference kernels: the call's attributes parsed by
//! the operator's `parse_attrs`, outputs sized by its `shapes` and `dtypes`, then its
//! kernel. Scalars go in as 0-d tensors and come out as scalars again, as the VM keeps them;
//! a binary operator on two scalars (`%n - 1`, `%i == 0`) uses the VM's unboxed scalar
//! arithmetic instead, as compiled code does: a kernel call per loop counter update would
//! make loops of millions of iterations take minutes.

use relay_compiler::ir::{Attrs, Interner};
use relay_compiler::op::{AttrReader, ScalarForm};
use relay_devices::Tensor;
use relay_runtime::{BinOp, Value};
use relay_stdlib::attrs::AnyAttrs;
use relay_stdlib::RefOp;
use std::sync::Arc;

/// An operator with the attributes of one call site, parsed.
#[derive(Clone, Debug)]
pub(super) struct BoundOp {
    op: &'static RefOp,
    attrs: Arc<dyn AnyAttrs>,
    /// The VM's scalar operation for a binary operator.
    scalar: Option<BinOp>,
}

impl BoundOp {
    /// Operator `name` with the attributes `attrs` (names interned in `symbols`).
    ///
    /// # Errors
    /// An operator without a reference kernel, or attributes it rejects.
    pub fn new(name: &str, symbols: &Interner, attrs: &Attrs) -> Result<BoundOp, String> {
        let entry = relay_stdlib::ops::operator(name)
            .ok_or_else(|| format!("operator `{name}` has no reference kernel"))?;
        let op = &entry.reference;
        let attrs =
            (op.parse_attrs)(&AttrReader::new(symbols, attrs)).map_err(|e| format!("`{name}`: {e}"))?;
        let scalar = match entry.def.scalar {
            Some(ScalarForm::Bin(op)) => Some(op),
            _ => None,
        };
        Ok(BoundOp { op, attrs, scalar })
    }

    /// Runs the kernel on `args`, a tuple argument (`concatenate`, `stack`) standing for its
    /// fields. Returns the outputs: one value, or a tuple of them when `tuple_result` (the
    /// call's type is a tuple, as `split`'s is).
    ///
    /// # Errors
    /// An argument that is not a tensor, or what the shape function or kernel reports (a
    /// reshape to an impossible shape).
    pub fn call(&self, args: &[Value], tuple_result: bool) -> Result<Value, String> {
        if let (Some(op), [Value::Scalar(a), Value::Scalar(b)]) = (self.scalar, args) {
            return relay_runtime::binary(op, *a, *b)
                .map(Value::Scalar)
                .map_err(|e| format!("`{}`: {e}", self.op.name));
        }
        let mut inputs: Vec<Arc<Tensor>> = Vec::with_capacity(args.len());
        for a in args {
            match a {
                Value::Adt(t) if t.tag == 0 => {
                    for f in &t.fields {
                        inputs.push(tensor(f)?);
                    }
                }
                other => inputs.push(tensor(other)?),
            }
        }
        let inputs: Vec<&Tensor> = inputs.iter().map(|t| &**t).collect();
        let name = self.op.name;
        let outputs = self.op.evaluate(&inputs, self.attrs.as_ref()).map_err(|e| format!("`{name}`: {e}"))?;
        let mut values: Vec<Value> = outputs.into_iter().map(Value::from_tensor).collect();
        match (tuple_result, values.len()) {
            (true, _) => Ok(Value::tuple(values)),
            (false, 1) => Ok(values.swap_remove(0)),
            (false, n) => Err(format!("`{name}` made {n} outputs where its type has one")),
        }
    }
}

/// The tensor a kernel reads for value `v` (a scalar becomes a 0-d tensor).
fn tensor(v: &Value) -> Result<Arc<Tensor>, String> {
    match v {
        Value::Scalar(s) => Ok(Arc::new(s.to_tensor()?)),
        Value::Tensor(t) => Ok(t.clone()),
        other => Err(format!("an operator argument is a {}, not a tensor", other.kind())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::AttrValue;
    use relay_devices::DType;
    use relay_runtime::ScalarValue;

    #[test]
    fn runs_kernels_with_parsed_attributes() {
        let mut symbols = Interner::default();
        let attrs = Attrs(vec![(symbols.intern("axis"), AttrValue::List(vec![AttrValue::Int(1)]))]);
        let sum = BoundOp::new("sum", &symbols, &attrs).unwrap();
        let x = Value::from_tensor(Tensor::from_vec(vec![2, 2], vec![1f32, 2.0, 3.0, 4.0]).unwrap());
        let Value::Tensor(out) = sum.call(&[x], false).unwrap() else { panic!("not a tensor") };
        assert_eq!(out.as_slice::<f32>().unwrap(), &[3.0, 7.0]);
        assert!(BoundOp::new("no.such_op", &symbols, &Attrs::default()).is_err());
    }

    #[test]
    fn scalars_stay_scalars_and_faults_are_errors() {
        let add = BoundOp::new("add", &Interner::default(), &Attrs::default()).unwrap();
        let two = Value::Scalar(ScalarValue::int(DType::I32, 2));
        let sum = add.call(&[two.clone(), two.clone()], false).unwrap();
        assert!(matches!(sum, Value::Scalar(s) if s.as_i64() == 4));
        let divide = BoundOp::new("divide", &Interner::default(), &Attrs::default()).unwrap();
        let zero = Value::Scalar(ScalarValue::int(DType::I32, 0));
        // Integer division by zero is 0 (`relay_devices::arith`), as on every other path.
        let quotient = divide.call(&[two.clone(), zero], false).unwrap();
        assert!(matches!(quotient, Value::Scalar(s) if s.as_i64() == 0));
        assert!(add.call(&[two, Value::tuple(vec![])], false).is_err());
    }
}
