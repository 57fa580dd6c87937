//! Runtime values: unboxed scalars, tensors, ADT values (tuples are tag 0), closures and
//! references.

use crate::scalar::ScalarValue;
use relay_devices::Tensor;
use std::sync::{Arc, Mutex};

/// A value the VM computes with and hands to the host.
///
/// Values are cheap to clone (reference counted) and `Send + Sync`, so a host may move
/// results to other threads.
#[derive(Clone, Debug)]
pub enum Value {
    /// A 0-d tensor, unboxed.
    Scalar(ScalarValue),
    /// An n-d tensor (n ≥ 1).
    Tensor(Arc<Tensor>),
    /// A constructor application or a tuple.
    Adt(Arc<AdtValue>),
    /// A function value.
    Closure(Arc<ClosureValue>),
    /// A mutable reference cell.
    Ref(Arc<Mutex<Value>>),
}

/// A constructor applied to its fields; tuples have tag 0.
#[derive(Debug)]
pub struct AdtValue {
    /// The constructor's index in its ADT (0 for tuples).
    pub tag: u32,
    /// The fields, in order.
    pub fields: Vec<Value>,
}

/// A function together with the values it captured.
#[derive(Debug)]
pub struct ClosureValue {
    /// Index of the (lambda-lifted) function in the executable.
    pub func: u32,
    /// Captured values, passed before the call's arguments.
    pub captured: Vec<Value>,
}

impl Value {
    /// A tuple of `fields`.
    pub fn tuple(fields: Vec<Value>) -> Value {
        Value::Adt(Arc::new(AdtValue { tag: 0, fields }))
    }

    /// A constructor value with tag `tag`.
    pub fn adt(tag: u32, fields: Vec<Value>) -> Value {
        Value::Adt(Arc::new(AdtValue { tag, fields }))
    }

    /// A tensor value; 0-d tensors become unboxed scalars, as the VM keeps them.
    pub fn from_tensor(t: Tensor) -> Value {
        match ScalarValue::from_tensor(&t) {
            Some(s) => Value::Scalar(s),
            None => Value::Tensor(Arc::new(t)),
        }
    }

    /// A short name of the value's kind, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Scalar(_) => "scalar",
            Value::Tensor(_) => "tensor",
            Value::Adt(_) => "ADT value",
            Value::Closure(_) => "closure",
            Value::Ref(_) => "reference",
        }
    }
}

/// Takes out the fields of values about to be freed, so that dropping a million-element list
/// runs in a loop instead of a million nested `drop` calls.
fn drop_iteratively(mut pending: Vec<Value>) {
    while let Some(v) = pending.pop() {
        match v {
            Value::Adt(a) => {
                if let Ok(mut a) = Arc::try_unwrap(a) {
                    pending.append(&mut a.fields);
                }
            }
            Value::Closure(c) => {
                if let Ok(mut c) = Arc::try_unwrap(c) {
                    pending.append(&mut c.captured);
                }
            }
            Value::Ref(r) => {
                if let Ok(m) = Arc::try_unwrap(r) {
                    if let Ok(inner) = m.into_inner() {
                        pending.push(inner);
                    }
                }
            }
            Value::Scalar(_) | Value::Tensor(_) => {}
        }
    }
}

impl Drop for AdtValue {
    fn drop(&mut self) {
        if !self.fields.is_empty() {
            drop_iteratively(std::mem::take(&mut self.fields));
        }
    }
}

impl Drop for ClosureValue {
    fn drop(&mut self) {
        if !self.captured.is_empty() {
            drop_iteratively(std::mem::take(&mut self.captured));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_a_long_list_does_not_overflow_the_stack() {
        let mut list = Value::adt(1, vec![]);
        for i in 0..1_000_000 {
            list = Value::adt(0, vec![Value::Scalar(ScalarValue::int(relay_devices::DType::I32, i)), list]);
        }
        drop(list);
    }

    /// Registers are `Option<Value>`: the scalar payload sits inline and the empty state
    /// lives in a niche of the dtype, so a register is two words and reading a scalar is one
    /// tag test (the interpreter's speed depends on it).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_register_is_two_words() {
        assert_eq!(std::mem::size_of::<Value>(), 16);
        assert_eq!(std::mem::size_of::<Option<Value>>(), 16);
    }

    #[test]
    fn values_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Value>();
    }
}
