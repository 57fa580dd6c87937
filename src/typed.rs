//! VM values seen through the types the executable records: what each field of a constructor
//! value is (ADT type arguments substituted into the constructor's field types), a one-level
//! decomposition of a value, and the walk over those that the JSON and text printers share:
//! it keeps its own stack, so that a list of a million elements never recurses on the host
//! stack, and leaves each printer to say only how a node looks (`Syntax`).

use crate::Error;
use relay_devices::Tensor;
use relay_runtime::{AdtInfo, Executable, ScalarValue, Value, ValueType, VmFunction};
use std::collections::HashSet;
use std::sync::Arc;

/// One level of a value: its leaves, or its children with their types.
#[derive(Debug)]
pub enum Node<'a> {
    /// A 0-d tensor.
    Scalar(ScalarValue),
    /// An n-d tensor (n ≥ 1).
    Tensor(&'a Tensor),
    /// A tuple's fields.
    Tuple(Vec<(Value, ValueType)>),
    /// A constructor (by name) and its fields.
    Con {
        /// The constructor's name.
        name: &'a str,
        /// The fields with their types.
        fields: Vec<(Value, ValueType)>,
    },
    /// A reference cell: its identity (for cycle detection) and its current contents.
    Ref {
        /// The cell's address, which identifies it while the value is alive.
        id: usize,
        /// What the cell holds now, and its type.
        inner: Box<(Value, ValueType)>,
    },
    /// A function value: the name of the VM function it runs.
    Closure(&'a str),
}

/// Splits `v`, of type `ty`, into one [`Node`].
///
/// Where the type is a parameter (a generic entry point, or an unconstrained type such as
/// the element type of a returned `Nil`), scalars, tensors, tuples of such and closures are
/// still understood from the value itself; constructor values are not.
///
/// # Errors
/// When the value does not have the type (a wrong kind, an unknown tag or field count), or
/// a constructor value whose ADT is unknown.
pub fn node<'a>(exe: &'a Executable, v: &'a Value, ty: &ValueType) -> Result<Node<'a>, String> {
    match (v, ty) {
        (Value::Scalar(s), ValueType::Tensor { dtype, shape }) if shape.is_empty() && s.dtype == *dtype => {
            Ok(Node::Scalar(*s))
        }
        (Value::Tensor(t), ValueType::Tensor { dtype, shape })
            if t.dtype() == *dtype && shape_fits(t.shape(), shape) =>
        {
            Ok(Node::Tensor(t))
        }
        (Value::Scalar(s), ValueType::Param(_)) => Ok(Node::Scalar(*s)),
        (Value::Tensor(t), ValueType::Param(_)) => Ok(Node::Tensor(t)),
        (Value::Adt(a), ValueType::Tuple(types)) if a.tag == 0 && a.fields.len() == types.len() => {
            Ok(Node::Tuple(a.fields.iter().cloned().zip(types.iter().cloned()).collect()))
        }
        (Value::Adt(a), ValueType::Adt { name, args }) => {
            let (con, types) = constructor_fields(exe, name, args, a.tag)?;
            if types.len() != a.fields.len() {
                return Err(format!(
                    "`{con}` value with {} field(s), expected {}",
                    a.fields.len(),
                    types.len()
                ));
            }
            Ok(Node::Con { name: con, fields: a.fields.iter().cloned().zip(types).collect() })
        }
        (Value::Adt(_), ValueType::Param(p)) => {
            Err(format!("a constructor value of unknown type `{p}` (a generic function's result)"))
        }
        (Value::Ref(r), ValueType::Ref(_) | ValueType::Param(_)) => {
            let inner_ty = match ty {
                ValueType::Ref(inner) => (**inner).clone(),
                other => other.clone(),
            };
            let contents = r.lock().clone();
            Ok(Node::Ref { id: Arc::as_ptr(r) as usize, inner: Box::new((contents, inner_ty)) })
        }
        (Value::Closure(c), ValueType::Func | ValueType::Param(_)) => {
            let f =
                exe.functions.get(c.func as usize).ok_or("a closure of a function the executable lacks")?;
            Ok(Node::Closure(&f.name))
        }
        (v, ty) => Err(format!("found {}, expected `{}`", describe_value(v), describe(ty))),
    }
}

/// The function of `functions` named `name` (a leading `@` is ignored).
///
/// # Errors
/// [`Error::Input`] when there is none.
pub(crate) fn function<'a>(functions: &'a [VmFunction], name: &str) -> Result<&'a VmFunction, Error> {
    let name = name.strip_prefix('@').unwrap_or(name);
    functions.iter().find(|f| f.name == name).ok_or_else(|| {
        Error::Input(format!("the program has no function `@{name}`{}", listing(name, functions)))
    })
}

/// For a message about function `name`, which the program lacks: the closest name, and the
/// functions it has, the last defined (the user's, after the prelude's) first, at most 24,
/// leaving out the closures lambda lifting made.
fn listing(name: &str, functions: &[VmFunction]) -> String {
    const MAX_LISTED: usize = 24;
    let named: Vec<&str> = functions
        .iter()
        .rev()
        .map(|f| f.name.as_str())
        .filter(|n| !n.contains(relay_compiler::pass::LIFTED_INFIX))
        .collect();
    let hint = relay_compiler::diagnostics::suggest::closest(name, named.iter().copied())
        .map(|c| format!("; did you mean `@{c}`?"))
        .unwrap_or_default();
    if named.is_empty() {
        return format!("{hint}; it has no named functions");
    }
    let listed: Vec<String> = named.iter().take(MAX_LISTED).map(|n| format!("@{n}")).collect();
    let more = named.len().saturating_sub(MAX_LISTED);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    format!("{hint} (it has {}{more})", listed.join(", "))
}

/// Checks the argument count of a call of `f` and each argument's outer shape against its
/// parameter type ([`node`]).
///
/// # Errors
/// [`Error::Input`] naming the first argument that does not fit.
pub(crate) fn check_arguments(exe: &Executable, f: &VmFunction, args: &[Value]) -> Result<(), Error> {
    if args.len() != f.param_types.len() {
        return Err(Error::Input(format!(
            "`@{}` takes {} argument(s), {} given",
            f.name,
            f.param_types.len(),
            args.len()
        )));
    }
    for (i, (a, t)) in args.iter().zip(&f.param_types).enumerate() {
        node(exe, a, t).map_err(|e| {
            Error::Input(format!("argument {} (`%{}`) of `@{}`: {e}", i + 1, f.param_names[i], f.name))
        })?;
    }
    Ok(())
}

/// How a printer writes each kind of [`Node`]; [`print`] does the walking.
pub(crate) trait Syntax {
    /// Between two fields of a tuple or constructor.
    const SEPARATOR: &'static str;
    /// Before and after a reference cell's contents.
    const REF: (&'static str, &'static str);
    /// In place of the contents of a cell that (through a constructor) holds itself.
    const CYCLE: &'static str;

    /// Writes a 0-d tensor.
    fn scalar(out: &mut String, s: ScalarValue);
    /// Writes an n-d tensor (n ≥ 1).
    fn tensor(out: &mut String, t: &Tensor);
    /// Opens a tuple of `fields` fields; returns what closes it.
    fn tuple(out: &mut String, fields: usize) -> &'static str;
    /// Opens constructor `name` with `fields` fields; returns what closes it.
    fn constructor(out: &mut String, name: &str, fields: usize) -> &'static str;
    /// Writes a function value running VM function `name`.
    fn closure(out: &mut String, name: &str);
    /// How a prelude `List` prints, if not as its constructors: what opens and closes the
    /// sequence of its elements.
    const LIST: Option<(&'static str, &'static str)> = None;
    /// Writes a 0-d tensor that is an element of a [`Syntax::LIST`] sequence, whose type
    /// fixes its dtype.
    fn list_scalar(out: &mut String, s: ScalarValue) {
        Self::scalar(out, s);
    }
}

/// Prints `v`, of type `ty`, in syntax `S`.
///
/// # Errors
/// When the value does not have the type, or holds a constructor value of unknown type.
pub(crate) fn print<S: Syntax>(exe: &Executable, ty: &ValueType, v: &Value) -> Result<String, String> {
    enum Task {
        /// A value, its type, and whether it is an element of a list sequence.
        Visit(Value, ValueType, bool),
        Text(&'static str),
        LeaveRef(usize),
    }
    let mut out = String::new();
    let mut stack = vec![Task::Visit(v.clone(), ty.clone(), false)];
    // References on the path from the root: a cell that holds itself prints as a marker
    // instead of forever.
    let mut open_refs = HashSet::new();
    // Children are pushed in reverse, with their separators, so they pop in order.
    let push_seq =
        |stack: &mut Vec<Task>, items: Vec<(Value, ValueType)>, close: &'static str, list: bool| {
            stack.push(Task::Text(close));
            for (i, (v, t)) in items.into_iter().enumerate().rev() {
                stack.push(Task::Visit(v, t, list));
                if i > 0 {
                    stack.push(Task::Text(S::SEPARATOR));
                }
            }
        };
    while let Some(task) = stack.pop() {
        let (v, ty, element) = match task {
            Task::Text(s) => {
                out.push_str(s);
                continue;
            }
            Task::LeaveRef(id) => {
                open_refs.remove(&id);
                continue;
            }
            Task::Visit(v, ty, element) => (v, ty, element),
        };
        if let (Some((open, close)), ValueType::Adt { name, .. }) = (S::LIST, &ty) {
            if is_list(exe, name) {
                out.push_str(open);
                push_seq(&mut stack, list_elements(exe, v, &ty)?, close, true);
                continue;
            }
        }
        match node(exe, &v, &ty)? {
            Node::Scalar(s) if element => S::list_scalar(&mut out, s),
            Node::Scalar(s) => S::scalar(&mut out, s),
            Node::Tensor(t) => S::tensor(&mut out, t),
            Node::Tuple(fields) => {
                let close = S::tuple(&mut out, fields.len());
                push_seq(&mut stack, fields, close, false);
            }
            Node::Con { name, fields } => {
                let close = S::constructor(&mut out, name, fields.len());
                push_seq(&mut stack, fields, close, false);
            }
            Node::Ref { id, inner } => {
                let (open, close) = S::REF;
                out.push_str(open);
                if open_refs.insert(id) {
                    stack.push(Task::LeaveRef(id));
                    stack.push(Task::Text(close));
                    let (v, t) = *inner;
                    stack.push(Task::Visit(v, t, false));
                } else {
                    out.push_str(S::CYCLE);
                    out.push_str(close);
                }
            }
            Node::Closure(name) => S::closure(&mut out, name),
        }
    }
    Ok(out)
}

/// The elements of `list`, a prelude `List` of type `ty`, with their type, in order: the
/// `Cons` cells are followed in a loop, so a list of any length takes no host stack.
///
/// # Errors
/// When a cell does not have the type.
fn list_elements(exe: &Executable, list: Value, ty: &ValueType) -> Result<Vec<(Value, ValueType)>, String> {
    let mut items = Vec::new();
    let mut cell = list;
    loop {
        let rest = match node(exe, &cell, ty)? {
            Node::Con { fields, .. } => {
                let mut fields = fields.into_iter();
                match (fields.next(), fields.next()) {
                    (Some(head), Some((tail, _))) => {
                        items.push(head);
                        tail
                    }
                    _ => return Ok(items),
                }
            }
            _ => return Err(format!("found {}, expected `{}`", describe_value(&cell), describe(ty))),
        };
        cell = rest;
    }
}

/// Whether a concrete shape matches a type's shape (`None` dims match anything).
pub(crate) fn shape_fits(shape: &[usize], ty: &[Option<i64>]) -> bool {
    shape.len() == ty.len()
        && shape.iter().zip(ty).all(|(&d, t)| t.is_none_or(|t| usize::try_from(t) == Ok(d)))
}

/// Whether `name` is the prelude's `List` (a `Cons` of two fields and a `Nil`), which hosts
/// read and write as a plain sequence (a JSON array, a Python list).
pub fn is_list(exe: &Executable, name: &str) -> bool {
    exe.adt(name).is_some_and(|a| {
        a.name == "List"
            && a.constructors.len() == 2
            && a.constructors[0].name == "Cons"
            && a.constructors[0].fields.len() == 2
            && a.constructors[1].name == "Nil"
            && a.constructors[1].fields.is_empty()
    })
}

/// The ADT named `name`.
///
/// # Errors
/// When the executable has no such ADT.
pub(crate) fn adt<'a>(exe: &'a Executable, name: &str) -> Result<&'a AdtInfo, String> {
    exe.adt(name).ok_or_else(|| format!("the program has no type `{name}`"))
}

/// The name and field types of constructor `tag` of `name[args]`.
///
/// # Errors
/// An unknown ADT or tag.
pub fn constructor_fields<'a>(
    exe: &'a Executable,
    name: &str,
    args: &[ValueType],
    tag: u32,
) -> Result<(&'a str, Vec<ValueType>), String> {
    let info = adt(exe, name)?;
    let con = info
        .constructors
        .get(tag as usize)
        .ok_or_else(|| format!("constructor tag {tag} of `{name}`, which has {}", info.constructors.len()))?;
    let fields = con.fields.iter().map(|f| substitute(f, &info.type_params, args)).collect();
    Ok((&con.name, fields))
}

/// `t` with the type parameters `params` replaced by `args` (missing arguments stay
/// parameters). Types are as deep as the program's annotations, which the executable loader
/// bounds, so this recursion is bounded too.
pub(crate) fn substitute(t: &ValueType, params: &[String], args: &[ValueType]) -> ValueType {
    let sub = |ts: &[ValueType]| ts.iter().map(|t| substitute(t, params, args)).collect();
    match t {
        ValueType::Param(p) => match params.iter().position(|q| q == p).and_then(|i| args.get(i)) {
            Some(a) => a.clone(),
            None => t.clone(),
        },
        ValueType::Tuple(fs) => ValueType::Tuple(sub(fs)),
        ValueType::Adt { name, args: inner } => ValueType::Adt { name: name.clone(), args: sub(inner) },
        ValueType::Ref(x) => ValueType::Ref(Box::new(substitute(x, params, args))),
        ValueType::Tensor { .. } | ValueType::Func => t.clone(),
    }
}

/// A type in Relay syntax, for error messages (`Tensor[(2, ?), float32]`, `List[int32]`).
pub fn describe(t: &ValueType) -> String {
    let list = |ts: &[ValueType]| ts.iter().map(describe).collect::<Vec<_>>().join(", ");
    match t {
        ValueType::Tensor { dtype, shape } if shape.is_empty() => dtype.to_string(),
        ValueType::Tensor { dtype, shape } => {
            let dims: Vec<String> =
                shape.iter().map(|d| d.map_or("?".to_string(), |d| d.to_string())).collect();
            format!("Tensor[({}), {dtype}]", dims.join(", "))
        }
        ValueType::Tuple(fs) => format!("({})", list(fs)),
        ValueType::Adt { name, args } if args.is_empty() => name.clone(),
        ValueType::Adt { name, args } => format!("{name}[{}]", list(args)),
        ValueType::Func => "fn".to_string(),
        ValueType::Ref(x) => format!("ref({})", describe(x)),
        ValueType::Param(p) => p.clone(),
    }
}

/// What a value is, for error messages (`a float32 scalar`, `a Tensor[(2), int32]`).
fn describe_value(v: &Value) -> String {
    match v {
        Value::Scalar(s) => format!("a {} scalar", s.dtype),
        Value::Tensor(t) => {
            let dims: Vec<String> = t.shape().iter().map(usize::to_string).collect();
            format!("a Tensor[({}), {}]", dims.join(", "), t.dtype())
        }
        other => format!("a {}", other.kind()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use relay_devices::DType;
    use relay_runtime::ConstructorInfo;

    /// An executable with only the prelude's `List[A]` (`Cons`, `Nil`).
    pub(crate) fn list_exe() -> Executable {
        let a = ValueType::Param("A".into());
        let list_a = ValueType::Adt { name: "List".into(), args: vec![a.clone()] };
        Executable {
            adts: vec![AdtInfo {
                name: "List".into(),
                type_params: vec!["A".into()],
                constructors: vec![
                    ConstructorInfo { name: "Cons".into(), fields: vec![a, list_a] },
                    ConstructorInfo { name: "Nil".into(), fields: vec![] },
                ],
            }],
            ..Executable::default()
        }
    }

    #[test]
    fn constructor_fields_substitute_type_arguments() {
        let exe = list_exe();
        let int = ValueType::Tensor { dtype: DType::I32, shape: vec![] };
        let (name, fields) = constructor_fields(&exe, "List", std::slice::from_ref(&int), 0).unwrap();
        assert_eq!(name, "Cons");
        assert_eq!(fields, vec![int.clone(), ValueType::Adt { name: "List".into(), args: vec![int] }]);
        assert!(constructor_fields(&exe, "List", &[], 2).is_err());
        assert!(constructor_fields(&exe, "Tree", &[], 0).is_err());
    }

    #[test]
    fn nodes_check_the_value_against_the_type() {
        let exe = list_exe();
        let int = ValueType::Tensor { dtype: DType::I32, shape: vec![] };
        let one = Value::Scalar(ScalarValue::int(DType::I32, 1));
        assert!(matches!(node(&exe, &one, &int), Ok(Node::Scalar(_))));
        let f32_ty = ValueType::Tensor { dtype: DType::F32, shape: vec![] };
        assert!(node(&exe, &one, &f32_ty).is_err());
        let list = ValueType::Adt { name: "List".into(), args: vec![int] };
        let bad = Value::adt(0, vec![one]);
        assert!(node(&exe, &bad, &list).unwrap_err().contains("1 field(s), expected 2"));
    }

    #[test]
    fn describes_types_in_relay_syntax() {
        let t = ValueType::Tensor { dtype: DType::F32, shape: vec![Some(2), None] };
        assert_eq!(describe(&t), "Tensor[(2, ?), float32]");
        let v = ValueType::Tensor { dtype: DType::F32, shape: vec![Some(3)] };
        assert_eq!(describe(&v), "Tensor[(3), float32]");
        let one = Value::Scalar(ScalarValue::float(DType::F32, 1.0));
        let err = node(&Executable::default(), &one, &ValueType::Tensor { dtype: DType::I32, shape: vec![] })
            .unwrap_err();
        assert_eq!(err, "found a float32 scalar, expected `int32`");
    }
}
