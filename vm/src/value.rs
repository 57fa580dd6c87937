//! Runtime values: unboxed scalars, tensors, ADT values (tuples are tag 0), closures and
//! references.

use crate::scalar::ScalarValue;
use parking_lot::Mutex;
use relay_devices::{DeviceTensor, Tensor};
use smallvec::SmallVec;
use std::cell::RefCell;
use std::sync::Arc;

/// The fields of an ADT value or the captures of a closure. Up to two sit inline, so a list
/// cell, a tree node, a pair or a one-capture closure is a single allocation.
pub type Fields = SmallVec<[Value; 2]>;

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
    /// A mutable reference cell ([`Value::reference`] makes one). Its lock does not poison:
    /// a panic on another thread holding it leaves the cell's last value readable.
    Ref(Arc<Mutex<Value>>),
    /// An n-d tensor (n ≥ 1) resident on a device ([`relay_devices::Device`]): produced by
    /// a device kernel and kept there while device kernels consume it. The VM copies it to the host before a
    /// host kernel, a `DeviceCopy` or the end of a run needs it, so a host never receives
    /// one from [`crate::Vm::invoke`]. (Without a device kernel this variant is never made.)
    Device(Arc<DeviceTensor>),
}

/// A constructor applied to its fields; tuples have tag 0.
#[derive(Debug)]
pub struct AdtValue {
    /// The constructor's index in its ADT (0 for tuples).
    pub tag: u32,
    /// The fields, in order.
    pub fields: Fields,
}

/// A function together with the values it captured.
#[derive(Debug)]
pub struct ClosureValue {
    /// Index of the (lambda-lifted) function in the executable.
    pub func: u32,
    /// Captured values, passed before the call's arguments.
    pub captured: Fields,
}

impl Value {
    /// A new reference cell holding `v` (Relay's `ref(v)`).
    pub fn reference(v: Value) -> Value {
        Value::Ref(Arc::new(Mutex::new(v)))
    }

    /// A tuple of `fields`.
    pub fn tuple(fields: impl Into<Fields>) -> Value {
        Value::adt(0, fields)
    }

    /// A constructor value with tag `tag`.
    pub fn adt(tag: u32, fields: impl Into<Fields>) -> Value {
        Value::Adt(Arc::new(AdtValue { tag, fields: fields.into() }))
    }

    /// A tensor value; 0-d tensors become unboxed scalars, as the VM keeps them.
    pub fn from_tensor(t: Tensor) -> Value {
        match ScalarValue::from_tensor(&t) {
            Some(s) => Value::Scalar(s),
            None => Value::Tensor(Arc::new(t)),
        }
    }

    /// The value as a tensor, whatever its rank: an unboxed scalar becomes a 0-d tensor.
    /// `None` for ADT values, closures, references and device tensors (which
    /// [`crate::Vm::invoke`] never returns).
    pub fn to_tensor(&self) -> Option<Arc<Tensor>> {
        match self {
            Value::Scalar(s) => s.to_tensor().ok().map(Arc::new),
            Value::Tensor(t) => Some(Arc::clone(t)),
            _ => None,
        }
    }

    /// Whether `self` and `other` are the same value, not just equal ones: the same
    /// allocation for boxed values, the same dtype and bits for scalars. Same values can
    /// stand for each other anywhere (values are immutable, references aside, and a reference
    /// is the same only if it is the same cell).
    pub fn is_same(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Scalar(a), Value::Scalar(b)) => a.dtype == b.dtype && a.bits == b.bits,
            (Value::Tensor(a), Value::Tensor(b)) => Arc::ptr_eq(a, b),
            (Value::Adt(a), Value::Adt(b)) => Arc::ptr_eq(a, b),
            (Value::Closure(a), Value::Closure(b)) => Arc::ptr_eq(a, b),
            (Value::Ref(a), Value::Ref(b)) => Arc::ptr_eq(a, b),
            (Value::Device(a), Value::Device(b)) => Arc::ptr_eq(a, b),
            _ => false,
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
            Value::Device(_) => "device tensor",
        }
    }
}

thread_local! {
    /// Values whose fields are being freed: one stack per thread, reused by every drop.
    static PENDING: RefCell<Vec<Value>> = const { RefCell::new(Vec::new()) };
}

/// Whether dropping `v` would free a value that itself holds values (so dropping it
/// recursively could go as deep as a list is long).
fn frees_nested(v: &Value) -> bool {
    match v {
        Value::Adt(a) => Arc::strong_count(a) == 1 && !a.fields.is_empty(),
        Value::Closure(c) => Arc::strong_count(c) == 1 && !c.captured.is_empty(),
        Value::Ref(r) => Arc::strong_count(r) == 1,
        Value::Scalar(_) | Value::Tensor(_) | Value::Device(_) => false,
    }
}

/// Frees `fields` in a loop instead of nested `drop` calls, so that dropping a
/// million-element list cannot overflow the stack. Shallow fields (the common case) are just
/// dropped.
fn drop_fields(fields: &mut Fields) {
    if !fields.iter().any(frees_nested) {
        return;
    }
    PENDING.with(|pending| match pending.try_borrow_mut() {
        // The outermost drop: it owns the loop; drops inside it find the stack borrowed and
        // leave their fields to it.
        Ok(mut stack) => {
            stack.extend(fields.drain(..));
            while let Some(v) = stack.pop() {
                take_nested(v, &mut stack);
            }
        }
        Err(_) => {
            let mut stack: Vec<Value> = fields.drain(..).collect();
            while let Some(v) = stack.pop() {
                take_nested(v, &mut stack);
            }
        }
    });
}

/// Moves the values `v` holds onto `stack` when `v` is their last owner, then drops `v`.
fn take_nested(v: Value, stack: &mut Vec<Value>) {
    match v {
        Value::Adt(a) => {
            if let Ok(mut a) = Arc::try_unwrap(a) {
                stack.extend(a.fields.drain(..));
            }
        }
        Value::Closure(c) => {
            if let Ok(mut c) = Arc::try_unwrap(c) {
                stack.extend(c.captured.drain(..));
            }
        }
        Value::Ref(r) => {
            if let Ok(m) = Arc::try_unwrap(r) {
                stack.push(m.into_inner());
            }
        }
        Value::Scalar(_) | Value::Tensor(_) | Value::Device(_) => {}
    }
}

impl Drop for AdtValue {
    fn drop(&mut self) {
        drop_fields(&mut self.fields);
    }
}

impl Drop for ClosureValue {
    fn drop(&mut self) {
        drop_fields(&mut self.captured);
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
