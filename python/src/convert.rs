//! Python objects ↔ VM values, directed by the types the executable records: tensors are
//! NumPy arrays (anything `numpy.asarray` takes in: numbers, nested lists, PyTorch tensors
//! through `__array__`; DLPack producers through `numpy.from_dlpack`), tuples are tuples, the prelude's `List` is a Python list, and any
//! other ADT value is a `relay_vm.Adt(con, *fields)`.

use numpy::{IntoPyArray, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyList, PyTuple};
use relay::devices::{DType, Element, Tensor};
use relay::typed::{self, Node};
use relay::vm::{Executable, Value, ValueType};
use std::sync::Arc;

/// Calls `$f::<T>($args)` with `T` the Rust element type of `$dtype`, or evaluates `$other`
/// for a dtype tensors cannot hold: the one list of the dtypes the package converts.
macro_rules! with_element {
    ($dtype:expr, $other:expr, $f:ident($($args:expr),*)) => {
        match $dtype {
            DType::BOOL => $f::<bool>($($args),*),
            DType::I8 => $f::<i8>($($args),*),
            DType::I16 => $f::<i16>($($args),*),
            DType::I32 => $f::<i32>($($args),*),
            DType::I64 => $f::<i64>($($args),*),
            DType::U8 => $f::<u8>($($args),*),
            DType::U16 => $f::<u16>($($args),*),
            DType::U32 => $f::<u32>($($args),*),
            DType::U64 => $f::<u64>($($args),*),
            DType::F32 => $f::<f32>($($args),*),
            DType::F64 => $f::<f64>($($args),*),
            _ => $other,
        }
    };
}

/// Stack the converters may use before continuing on a fresh segment: values nest as deep as
/// their trees, which the host stack must not bound.
const RED_ZONE: usize = 64 * 1024;
/// The size of each fresh stack segment.
const SEGMENT: usize = 4 * 1024 * 1024;

/// `obj` as a value of type `ty` of program `exe`.
///
/// # Errors
/// `TypeError` for an object of the wrong kind (a float array for an integer tensor, a
/// non-sequence for a tuple, an unknown constructor), `ValueError` for a wrong field count;
/// shapes are checked by `Program::run`.
pub fn to_value(exe: &Executable, ty: &ValueType, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    stacker::maybe_grow(RED_ZONE, SEGMENT, || match ty {
        ValueType::Tensor { dtype, .. } => {
            let unsupported =
                Err(PyTypeError::new_err(format!("tensors of {dtype} cannot be passed from Python")));
            with_element!(*dtype, unsupported, tensor_from(obj, *dtype))
        }
        ValueType::Tuple(types) => {
            Ok(Value::tuple(fields(exe, types, &sequence(obj, "a tuple")?, "a tuple")?))
        }
        ValueType::Adt { name, args } if typed::is_list(exe, name) && !is_adt(obj) => {
            let (_, fields) = typed::constructor_fields(exe, name, args, 0).map_err(PyTypeError::new_err)?;
            let mut list = Value::adt(1, vec![]);
            // Built from the back, so the loop is flat however long the list is.
            for item in sequence(obj, "a list")?.iter().rev() {
                list = Value::adt(0, vec![to_value(exe, &fields[0], item)?, list]);
            }
            Ok(list)
        }
        ValueType::Adt { name, args } => {
            if !is_adt(obj) {
                return Err(PyTypeError::new_err(format!(
                    "expected a `{name}` value (relay_vm.Adt), found {}",
                    type_name(obj)
                )));
            }
            let con: String = obj.getattr("con")?.extract()?;
            let info = exe
                .adt(name)
                .ok_or_else(|| PyTypeError::new_err(format!("the program has no type `{name}`")))?;
            let tag = info.constructors.iter().position(|c| c.name == con).ok_or_else(|| {
                let names: Vec<&str> = info.constructors.iter().map(|c| c.name.as_str()).collect();
                PyTypeError::new_err(format!(
                    "`{con}` is not a constructor of `{name}` ({})",
                    names.join(", ")
                ))
            })?;
            let (_, types) =
                typed::constructor_fields(exe, name, args, tag as u32).map_err(PyTypeError::new_err)?;
            let items = sequence(&obj.getattr("fields")?, "fields")?;
            Ok(Value::adt(tag as u32, fields(exe, &types, &items, &format!("`{con}`"))?))
        }
        ValueType::Ref(_) | ValueType::Func | ValueType::Param(_) => Err(PyTypeError::new_err(format!(
            "a value of type `{}` cannot be passed from Python",
            typed::describe(ty)
        ))),
    })
}

/// `items` as the fields of `what` (a tuple, a constructor), of types `types`.
///
/// # Errors
/// `ValueError` for a wrong field count; as [`to_value`] for each field.
fn fields(
    exe: &Executable,
    types: &[ValueType],
    items: &[Bound<'_, PyAny>],
    what: &str,
) -> PyResult<Vec<Value>> {
    if items.len() != types.len() {
        return Err(PyValueError::new_err(format!(
            "{what} takes {} field(s), {} given",
            types.len(),
            items.len()
        )));
    }
    types.iter().zip(items).map(|(t, o)| to_value(exe, t, o)).collect()
}

/// `v`, of type `ty`, as a Python object: a NumPy array for a tensor of any rank (0-d
/// included), a tuple, a list for the prelude's `List`, a `relay_vm.Adt` otherwise.
///
/// # Errors
/// `TypeError` for closures and references, which have no Python form, and for values that
/// do not have their type.
pub fn to_python<'py>(
    py: Python<'py>,
    exe: &Executable,
    ty: &ValueType,
    v: &Value,
) -> PyResult<Bound<'py, PyAny>> {
    stacker::maybe_grow(RED_ZONE, SEGMENT, || {
        match typed::node(exe, v, ty).map_err(PyTypeError::new_err)? {
            Node::Scalar(_) | Node::Tensor(_) => {
                let t = v.to_tensor().ok_or_else(|| PyTypeError::new_err("a tensor the host cannot read"))?;
                let unsupported = Err(PyTypeError::new_err(format!(
                    "tensors of {} cannot be returned to Python",
                    t.dtype()
                )));
                with_element!(t.dtype(), unsupported, tensor_to(py, t))
            }
            Node::Tuple(fields) => {
                let items = fields.iter().map(|(f, t)| to_python(py, exe, t, f));
                Ok(PyTuple::new(py, items.collect::<PyResult<Vec<_>>>()?)?.into_any())
            }
            Node::Con { .. } if matches!(ty, ValueType::Adt { name, .. } if typed::is_list(exe, name)) => {
                let out = PyList::empty(py);
                let mut cell = (v.clone(), ty.clone());
                // A list is walked in a loop, not recursively, however long it is.
                while let Node::Con { fields, .. } =
                    typed::node(exe, &cell.0, &cell.1).map_err(PyTypeError::new_err)?
                {
                    let mut fields = fields.into_iter();
                    let (Some((head, head_ty)), Some(tail)) = (fields.next(), fields.next()) else { break };
                    out.append(to_python(py, exe, &head_ty, &head)?)?;
                    cell = tail;
                }
                Ok(out.into_any())
            }
            Node::Con { name, fields } => {
                let mut args = vec![name.into_pyobject(py)?.into_any()];
                for (f, t) in &fields {
                    args.push(to_python(py, exe, t, f)?);
                }
                adt_class(py)?.call1(PyTuple::new(py, args)?)
            }
            Node::Ref { .. } | Node::Closure(_) => {
                Err(PyTypeError::new_err(format!("a `{}` result has no Python form", typed::describe(ty))))
            }
        }
    })
}

/// `relay_vm.Adt`, the Python class of constructor values.
fn adt_class(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("relay_vm")?.getattr("Adt")
}

/// Whether `obj` is a `relay_vm.Adt`.
fn is_adt(obj: &Bound<'_, PyAny>) -> bool {
    adt_class(obj.py()).and_then(|c| obj.is_instance(&c)).unwrap_or(false)
}

/// The items of a Python list or tuple.
fn sequence<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if let Ok(t) = obj.cast::<PyTuple>() {
        return Ok(t.iter().collect());
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return Ok(l.iter().collect());
    }
    Err(PyTypeError::new_err(format!("expected {what} as a Python list or tuple, found {}", type_name(obj))))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map_or_else(|_| "an object".to_string(), |n| format!("`{n}`"))
}

/// `obj` as a tensor of `T` (`dtype`): a NumPy array of that dtype is read directly; a DLPack
/// producer (`__dlpack__`) through `numpy.from_dlpack`, anything else through `numpy.asarray`,
/// then a same-kind cast (float64 → float32 and int64 →
/// int32 are fine, float → int is not).
fn tensor_from<T: Element + numpy::Element>(obj: &Bound<'_, PyAny>, dtype: DType) -> PyResult<Value> {
    let py = obj.py();
    let array = match obj.cast::<PyArrayDyn<T>>() {
        Ok(a) => a.clone(),
        Err(_) => {
            let np = py.import("numpy")?;
            // A DLPack producer (a PyTorch, JAX or CuPy tensor in host memory) is viewed, not
            // copied, by `numpy.from_dlpack`; anything else goes through `numpy.asarray`.
            let dlpack = obj.hasattr("__dlpack__")? && !obj.is_instance_of::<numpy::PyUntypedArray>();
            let any = np.call_method1(if dlpack { "from_dlpack" } else { "asarray" }, (obj,))?;
            let name = dtype.to_string();
            let fits: bool =
                np.call_method1("can_cast", (any.getattr("dtype")?, &name, "same_kind"))?.extract()?;
            if !fits {
                return Err(PyTypeError::new_err(format!(
                    "expected {name} elements, found {}",
                    any.getattr("dtype")?.str()?
                )));
            }
            // `asarray(order="C")`, not `ascontiguousarray`, which makes 0-d arrays 1-d.
            let kwargs = [("dtype", name.as_str()), ("order", "C")].into_py_dict(py)?;
            np.call_method("asarray", (any,), Some(&kwargs))?.cast_into::<PyArrayDyn<T>>()?
        }
    };
    let read = array.readonly();
    let data = match read.as_slice() {
        Ok(s) => s.to_vec(),
        Err(_) => read.as_array().iter().copied().collect(),
    };
    let t =
        Tensor::from_vec(read.shape().to_vec(), data).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(Value::from_tensor(t))
}

/// `t` as a NumPy array of `T`; the elements move into NumPy when no one else holds them.
fn tensor_to<T: Element + numpy::Element>(py: Python<'_>, t: Arc<Tensor>) -> PyResult<Bound<'_, PyAny>> {
    let shape = t.shape().to_vec();
    let data: Vec<T> = match Arc::try_unwrap(t) {
        Ok(t) => t.into_vec(),
        Err(t) => t.as_slice().map(<[T]>::to_vec),
    }
    .map_err(|e| PyTypeError::new_err(e.to_string()))?;
    let array = numpy::ndarray::ArrayD::from_shape_vec(shape, data)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(array.into_pyarray(py).into_any())
}
