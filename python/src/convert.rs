//! Python objects ↔ VM values, directed by the types the executable records: tensors are
//! NumPy arrays (anything `numpy.asarray` takes in: numbers, nested lists, PyTorch tensors
//! through `__array__`; DLPack producers through `numpy.from_dlpack`), tuples are tuples, the prelude's `List` is a Python list, and any
//! other ADT value is a `relay_vm.Adt(con, *fields)`.

use numpy::{IntoPyArray, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{IntoPyDict, PyBool, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use relay::devices::{DType, Element, Scalar, SharedBuffer, SharedBytes, Storage, Tensor};
use relay::typed::{self, Node};
use relay::vm::{Executable, Value, ValueType};
use std::cell::RefCell;
use std::rc::Rc;
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
            DType::F16 => $f::<half::f16>($($args),*),
            DType::BF16 => $f::<half::bf16>($($args),*),
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

/// `(ADT type, constructor tag, the constructor's field types)`: one entry of
/// [`Converter`]'s memo.
type FieldTypes = (ValueType, u32, Rc<[ValueType]>);

/// Converts the Python inputs of one call into values of program `exe`, computing the field
/// types of each (ADT type, constructor) it meets once: a tree's hundred nodes share two or
/// three, and substituting type arguments anew at each node was most of a tree's conversion.
pub struct Converter<'e> {
    exe: &'e Executable,
    /// The field types met so far.
    field_types: RefCell<Vec<FieldTypes>>,
}

impl<'e> Converter<'e> {
    /// A converter for inputs of `exe`.
    pub fn new(exe: &'e Executable) -> Converter<'e> {
        Converter { exe, field_types: RefCell::new(vec![]) }
    }

    /// The field types of constructor `tag` of `ty`, which is `name[args]`.
    fn field_types(
        &self,
        ty: &ValueType,
        name: &str,
        args: &[ValueType],
        tag: u32,
    ) -> PyResult<Rc<[ValueType]>> {
        let known =
            self.field_types.borrow().iter().find(|(t, g, _)| *g == tag && t == ty).map(|e| e.2.clone());
        if let Some(types) = known {
            return Ok(types);
        }
        let (_, types) =
            typed::constructor_fields(self.exe, name, args, tag).map_err(PyTypeError::new_err)?;
        let types: Rc<[ValueType]> = types.into();
        self.field_types.borrow_mut().push((ty.clone(), tag, types.clone()));
        Ok(types)
    }

    /// `obj` as a value of type `ty`.
    ///
    /// # Errors
    /// `TypeError` for an object of the wrong kind (a float array for an integer tensor, a
    /// non-sequence for a tuple, an unknown constructor), `ValueError` for a wrong field count;
    /// shapes are checked by `Program::run`.
    pub fn to_value(&self, ty: &ValueType, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
        let exe = self.exe;
        stacker::maybe_grow(RED_ZONE, SEGMENT, || match ty {
            ValueType::Tensor { dtype, .. } => {
                // Formatted only for a dtype without storage: this is on every call's path.
                let unsupported =
                    || Err(PyTypeError::new_err(format!("tensors of {dtype} cannot be passed from Python")));
                with_element!(*dtype, unsupported(), tensor_from(obj, *dtype))
            }
            ValueType::Tuple(types) => {
                Ok(Value::tuple(self.fields(types, &sequence(obj, "a tuple")?, &|| "a tuple".to_string())?))
            }
            ValueType::Adt { name, args } if typed::is_list(exe, name) && !is_adt(obj) => {
                let fields = self.field_types(ty, name, args, 0)?;
                let mut list = Value::adt(1, vec![]);
                // Built from the back, so the loop is flat however long the list is.
                for item in sequence(obj, "a list")?.iter().rev() {
                    list = Value::adt(0, vec![self.to_value(&fields[0], item)?, list]);
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
                let con = obj.getattr(intern!(obj.py(), "con"))?;
                let con = con.cast::<PyString>()?.to_cow()?;
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
                let types = self.field_types(ty, name, args, tag as u32)?;
                let items = sequence(&obj.getattr(intern!(obj.py(), "fields"))?, "fields")?;
                Ok(Value::adt(tag as u32, self.fields(&types, &items, &|| format!("`{con}`"))?))
            }
            ValueType::Ref(_) | ValueType::Func | ValueType::Param(_) => Err(PyTypeError::new_err(format!(
                "a value of type `{}` cannot be passed from Python",
                typed::describe(ty)
            ))),
        })
    }

    /// `items` as the fields of `what()` (a tuple, a constructor: named only in an error), of
    /// types `types`.
    ///
    /// # Errors
    /// `ValueError` for a wrong field count; as [`Converter::to_value`] for each field.
    fn fields(
        &self,
        types: &[ValueType],
        items: &[Bound<'_, PyAny>],
        what: &dyn Fn() -> String,
    ) -> PyResult<Vec<Value>> {
        if items.len() != types.len() {
            return Err(PyValueError::new_err(format!(
                "{} takes {} field(s), {} given",
                what(),
                types.len(),
                items.len()
            )));
        }
        types.iter().zip(items).map(|(t, o)| self.to_value(t, o)).collect()
    }
}

/// `v`, of type `ty`, as a Python object: a NumPy array for a tensor of any rank (0-d
/// included), a tuple, a list for the prelude's `List`, a `relay_vm.Adt` otherwise. Taking
/// `v` by value lets a tensor nothing else holds move its elements into NumPy uncopied.
///
/// # Errors
/// `TypeError` for closures and references, which have no Python form, and for values that
/// do not have their type.
pub fn to_python<'py>(
    py: Python<'py>,
    exe: &Executable,
    ty: &ValueType,
    v: Value,
) -> PyResult<Bound<'py, PyAny>> {
    stacker::maybe_grow(RED_ZONE, SEGMENT, || {
        // `Some((constructor, fields))` for an ADT value (no constructor for a tuple), `None`
        // for a tensor; the node borrows `v`, so it ends here, before `v` is taken apart.
        let split = match typed::node(exe, &v, ty).map_err(PyTypeError::new_err)? {
            Node::Scalar(_) | Node::Tensor(_) => None,
            Node::Tuple(fields) => Some((None, fields)),
            Node::Con { name, fields } => Some((Some(name.to_string()), fields)),
            Node::Ref { .. } | Node::Closure(_) => {
                return Err(PyTypeError::new_err(format!(
                    "a `{}` result has no Python form",
                    typed::describe(ty)
                )))
            }
        };
        let Some((con, fields)) = split else {
            let t = v.to_tensor().ok_or_else(|| PyTypeError::new_err("a tensor the host cannot read"))?;
            // The tensor's only holder from here on, unless the VM shares it elsewhere.
            drop(v);
            let dtype = t.dtype();
            let unsupported =
                || Err(PyTypeError::new_err(format!("tensors of {dtype} cannot be returned to Python")));
            return with_element!(dtype, unsupported(), tensor_to(py, t));
        };
        // The fields' only holder from here on.
        drop(v);
        match con {
            None => {
                let items = fields.into_iter().map(|(f, t)| to_python(py, exe, &t, f));
                Ok(PyTuple::new(py, items.collect::<PyResult<Vec<_>>>()?)?.into_any())
            }
            Some(_) if matches!(ty, ValueType::Adt { name, .. } if typed::is_list(exe, name)) => {
                list_to_python(py, exe, fields)
            }
            Some(con) => {
                let mut args = vec![con.into_pyobject(py)?.into_any()];
                for (f, t) in fields {
                    args.push(to_python(py, exe, &t, f)?);
                }
                adt_class(py)?.call1(PyTuple::new(py, args)?)
            }
        }
    })
}

/// The prelude's `List`, given by the `fields` of its first cell (none for `Nil`), as a
/// Python list: walked in a loop, not recursively, however long it is.
fn list_to_python<'py>(
    py: Python<'py>,
    exe: &Executable,
    mut fields: Vec<(Value, ValueType)>,
) -> PyResult<Bound<'py, PyAny>> {
    let out = PyList::empty(py);
    loop {
        let mut cell = fields.into_iter();
        let (Some((head, head_ty)), Some((tail, tail_ty))) = (cell.next(), cell.next()) else { break };
        fields = match typed::node(exe, &tail, &tail_ty).map_err(PyTypeError::new_err)? {
            Node::Con { fields, .. } => fields,
            _ => vec![],
        };
        // The rest of the list is held by `fields` now, so the head may be its only holder.
        drop(tail);
        out.append(to_python(py, exe, &head_ty, head)?)?;
    }
    Ok(out.into_any())
}

/// `relay_vm.Adt`, the Python class of constructor values, looked up once.
fn adt_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static ADT: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    ADT.import(py, "relay_vm", "Adt")
}

/// Whether `obj` is a `relay_vm.Adt`.
fn is_adt(obj: &Bound<'_, PyAny>) -> bool {
    adt_class(obj.py()).and_then(|c| obj.is_instance(c)).unwrap_or(false)
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

/// `obj` as a tensor of `T` (`dtype`). A NumPy array of that dtype is read directly, and
/// borrowed without a copy when it is C-contiguous and aligned ([`borrowed`]); a Python
/// `bool`, `int` or `float` that converts exactly becomes a 0-d tensor without NumPy; a DLPack
/// producer (`__dlpack__`) goes through `numpy.from_dlpack`, anything else through
/// `numpy.asarray`, then a same-kind cast (float64 → float32 and int64 → int32 are fine, float
/// → int is not).
fn tensor_from<T: Element + numpy::Element>(obj: &Bound<'_, PyAny>, dtype: DType) -> PyResult<Value> {
    numpy_knows::<T>(obj.py())?;
    if let Some(x) = python_scalar::<T>(obj) {
        return Ok(Value::from_tensor(Tensor::scalar(x)));
    }
    let array = match obj.cast::<PyArrayDyn<T>>() {
        Ok(a) => a.clone(),
        Err(_) => via_numpy::<T>(obj, dtype)?,
    };
    if let Some(t) = borrowed(&array) {
        return Ok(Value::from_tensor(t));
    }
    let read = array.readonly();
    let data = match read.as_slice() {
        Ok(s) => s.to_vec(),
        Err(_) => read.as_array().iter().copied().collect(),
    };
    let t =
        Tensor::from_vec(read.shape().to_vec(), data).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(Value::from_tensor(t))
}

/// Whether NumPy has a dtype for `T`: every element type but `bfloat16`, which NumPy lacks and
/// the `ml_dtypes` package (JAX's, also TensorFlow's) registers when imported; the `numpy`
/// crate panics on a `half::bf16` array without it, so it is imported here first.
///
/// # Errors
/// `TypeError` for a `bfloat16` tensor when `ml_dtypes` is not installed.
fn numpy_knows<T: Element>(py: Python<'_>) -> PyResult<()> {
    if T::DTYPE == DType::BF16 && py.import("ml_dtypes").is_err() {
        return Err(PyTypeError::new_err(
            "bfloat16 tensors need the ml_dtypes package (pip install ml_dtypes): NumPy has no bfloat16",
        ));
    }
    Ok(())
}

/// A Python `bool`, `int` or `float` as a `T`, when NumPy's same-kind cast would give the
/// same element exactly (an `int` that fits `T`, a `float` for a float dtype, a `bool` for
/// any): the common scalar inputs (a word id, a flag) skip NumPy's three calls. `None` sends
/// `obj` the slow way, which also says why it does not fit.
fn python_scalar<T: Element>(obj: &Bound<'_, PyAny>) -> Option<T> {
    let s = if let Ok(b) = obj.cast_exact::<PyBool>() {
        Scalar::Bool(b.is_true())
    } else if obj.is_exact_instance_of::<PyInt>() {
        Scalar::Int(obj.extract::<i64>().ok()?)
    } else if let Ok(f) = obj.cast_exact::<PyFloat>() {
        Scalar::Float(f.value())
    } else {
        return None;
    };
    let x = T::from_scalar(s);
    let exact = match (s, x.to_scalar()) {
        (Scalar::Bool(_), _) => true,
        (Scalar::Float(_), Scalar::Float(_)) => true,
        (Scalar::Int(a), Scalar::Int(b)) => a == b,
        (Scalar::Int(a), Scalar::UInt(b)) => u64::try_from(a) == Ok(b),
        // An integer a float holds exactly converts back to it.
        (Scalar::Int(a), Scalar::Float(b)) => b == a as f64 && b as i64 == a,
        _ => false,
    };
    exact.then_some(x)
}

/// `obj`, which is not a NumPy array of `T`, as one: a DLPack producer (a PyTorch, JAX or
/// CuPy tensor in host memory) is viewed, not copied, by `numpy.from_dlpack`; anything else
/// goes through `numpy.asarray`; then a same-kind cast to `dtype`.
///
/// # Errors
/// `TypeError` when the elements are not of `dtype`'s kind (floats for an integer tensor).
fn via_numpy<'py, T: numpy::Element>(
    obj: &Bound<'py, PyAny>,
    dtype: DType,
) -> PyResult<Bound<'py, PyArrayDyn<T>>> {
    let py = obj.py();
    let np = py.import("numpy")?;
    let dlpack = obj.hasattr("__dlpack__")? && !obj.is_instance_of::<numpy::PyUntypedArray>();
    let any = np.call_method1(if dlpack { "from_dlpack" } else { "asarray" }, (obj,))?;
    let name = dtype.to_string();
    let fits: bool = np.call_method1("can_cast", (any.getattr("dtype")?, &name, "same_kind"))?.extract()?;
    if !fits {
        return Err(PyTypeError::new_err(format!(
            "expected {name} elements, found {}",
            any.getattr("dtype")?.str()?
        )));
    }
    // `asarray(order="C")`, not `ascontiguousarray`, which makes 0-d arrays 1-d.
    let kwargs = [("dtype", name.as_str()), ("order", "C")].into_py_dict(py)?;
    Ok(np.call_method("asarray", (any,), Some(&kwargs))?.cast_into::<PyArrayDyn<T>>()?)
}

/// A NumPy array's element bytes, kept alive by a reference to the array: the owner of a
/// tensor that borrows them ([`borrowed`]).
struct ArrayBytes {
    /// The array; holding it keeps its buffer allocated and unresizable (NumPy refuses to
    /// resize an array others reference).
    _array: Py<PyAny>,
    /// The address of the first element and the byte count, read once with the array in hand.
    data: usize,
    len: usize,
}

impl AsRef<[u8]> for ArrayBytes {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `data..data + len` is the buffer of `_array`, a C-contiguous array of `len`
        // bytes (checked in `borrowed`), which lives and stays put as long as this reference
        // to the array does. Python code writing the array while a call reads it races with
        // the call, as it does with any extension that reads NumPy memory.
        unsafe { std::slice::from_raw_parts(self.data as *const u8, self.len) }
    }
}

/// `array` as a tensor over its own buffer, without a copy: for a C-contiguous, aligned,
/// non-empty array of a dtype shared storage can hold (all but `bool`). The tensor keeps the
/// array alive and copies the elements before any write (copy-on-write storage), so the
/// program never changes the array; the array changing after the call cannot change a result,
/// which is copied out of shared storage. `None` when the array must be copied instead.
fn borrowed<T: Element + numpy::Element>(array: &Bound<'_, PyArrayDyn<T>>) -> Option<Tensor> {
    let len = array.len().checked_mul(std::mem::size_of::<T>())?;
    if len == 0 || !array.is_c_contiguous() || !array.is_aligned() {
        return None;
    }
    let owner = ArrayBytes { _array: array.clone().into_any().unbind(), data: array.data() as usize, len };
    let buffer = SharedBuffer::new(T::DTYPE, SharedBytes::new(owner))?;
    Tensor::from_storage(array.shape().to_vec(), Storage::Shared(buffer)).ok()
}

/// `t` as a NumPy array of `T`; the elements move into NumPy, without a copy, when `t` owns
/// them and no one else holds it (shared elements, borrowed from an input array, are copied).
fn tensor_to<T: Element + numpy::Element>(py: Python<'_>, t: Arc<Tensor>) -> PyResult<Bound<'_, PyAny>> {
    numpy_knows::<T>(py)?;
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
