//! Reading values from JSON as it is parsed: a `serde` seed per Relay type, so that an input
//! line becomes VM values without an intermediate `serde_json::Value` tree.
//!
//! Building the tree first and then walking it cost more than running the Tree-LSTM on it:
//! every `{"con": ..., "fields": [...]}` node was a `BTreeMap` with two key strings, a
//! constructor-name string and a vector, all allocated, walked and freed again (0.23 ms of
//! CPU per SST sentence against the model's 0.21 ms). The seed reads the same forms (the
//! module table of [`crate::json`]) straight from the parser, and the same seed reads an
//! already parsed tree (`&serde_json::Value` is a deserializer too), so each form is
//! defined once. Forms that are not on a hot path (tensors as nested arrays or as
//! `{"dtype", "shape", "data"}`, constructor fields given before `con`) are gathered into a
//! small tree and read from it.
//!
//! Nesting recurses once per level; callers wrap the deserializer in
//! [`serde_stacker::Deserializer`], which grows the stack as deep values need.

use super::{element, expected};
use crate::typed::{self, describe};
use relay_runtime::{Executable, Value, ValueType};
use serde::de::{self, DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value as Json;
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

/// Reads values of the executable's types and remembers where an error happened.
///
/// An error's place (`[0].fields[1]`) is collected while the error unwinds, one segment per
/// level, innermost first: `serde`'s errors are opaque and carry only a message.
pub struct Reader<'a> {
    exe: &'a Executable,
    trail: RefCell<Vec<String>>,
    /// Constructor field types already substituted: a tree's every node asks for the same few.
    fields: RefCell<Vec<FieldTypes>>,
}

/// The field types of constructor `tag` of `name[args]`.
struct FieldTypes {
    name: String,
    args: Vec<ValueType>,
    tag: u32,
    types: Rc<[ValueType]>,
}

/// How many constructors' field types a [`Reader`] keeps (a program has a few ADTs).
const FIELD_TYPES: usize = 32;

impl<'a> Reader<'a> {
    /// A reader of `exe`'s types.
    pub fn new(exe: &'a Executable) -> Self {
        Reader { exe, trail: RefCell::new(Vec::new()), fields: RefCell::new(Vec::new()) }
    }

    /// The seed that reads one value of type `ty`.
    pub fn seed<'s>(&'s self, ty: &'s ValueType) -> ValueSeed<'s, 'a> {
        ValueSeed { reader: self, ty }
    }

    /// `error`'s message with the place it happened (`... (at [0].fields[1])`), forgetting
    /// that place so that the reader can be used again.
    pub fn message(&self, error: impl fmt::Display) -> String {
        let trail = std::mem::take(&mut *self.trail.borrow_mut());
        if trail.is_empty() {
            return error.to_string();
        }
        let path: String = trail.into_iter().rev().collect();
        format!("{error} (at {path})")
    }

    /// The field types of constructor `tag` of `name[args]` ([`typed::constructor_fields`]).
    fn field_types(&self, name: &str, args: &[ValueType], tag: u32) -> Result<Rc<[ValueType]>, String> {
        let mut known = self.fields.borrow_mut();
        if let Some(f) = known.iter().find(|f| f.tag == tag && f.name == name && f.args == args) {
            return Ok(f.types.clone());
        }
        let (_, types) = typed::constructor_fields(self.exe, name, args, tag)?;
        let types: Rc<[ValueType]> = types.into();
        if known.len() < FIELD_TYPES {
            known.push(FieldTypes { name: name.to_string(), args: args.to_vec(), tag, types: types.clone() });
        }
        Ok(types)
    }

    /// `r`, noting `segment()` as the step into the value whose reading failed.
    fn within<T, E>(&self, r: Result<T, E>, segment: impl FnOnce() -> String) -> Result<T, E> {
        if r.is_err() {
            self.trail.borrow_mut().push(segment());
        }
        r
    }

    /// Item `i` of an array read as `types[i]` (`segment(i)` its step in error paths), and
    /// how many items the array has: more than `types` when it is too long (the rest are
    /// skipped), fewer when it is too short.
    fn items<'de, A: SeqAccess<'de>>(
        &self,
        seq: &mut A,
        types: &[ValueType],
        segment: impl Fn(usize) -> String,
    ) -> Result<(Vec<Value>, usize), A::Error> {
        let mut items = Vec::with_capacity(types.len());
        for (i, ty) in types.iter().enumerate() {
            match self.within(seq.next_element_seed(self.seed(ty)), || segment(i))? {
                Some(x) => items.push(x),
                None => return Ok((items, i)),
            }
        }
        let given = types.len() + skip_rest(seq)?;
        Ok((items, given))
    }

    /// An error of the module's own reading code (`super::element`, tensors) as a `serde`
    /// error, its path segments noted.
    fn fail<E: de::Error>(&self, e: super::InputError) -> E {
        self.trail.borrow_mut().extend(e.path);
        E::custom(e.message)
    }
}

/// Reads one value of a Relay type from a `serde` deserializer (see the module docs).
#[derive(Clone, Copy)]
pub struct ValueSeed<'s, 'a> {
    reader: &'s Reader<'a>,
    ty: &'s ValueType,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        match self.ty {
            ValueType::Func => Err(D::Error::custom("a function cannot be given as input")),
            ValueType::Param(p) => Err(D::Error::custom(format!(
                "a value of type parameter `{p}` cannot be read (the entry point is generic)"
            ))),
            _ => d.deserialize_any(self),
        }
    }
}

impl ValueSeed<'_, '_> {
    /// What this seed reads, as error messages say it.
    fn form(&self) -> String {
        match self.ty {
            ValueType::Tensor { .. } => format!("a `{}`", describe(self.ty)),
            ValueType::Tuple(types) => format!("a tuple of {} value(s) as a JSON array", types.len()),
            ValueType::Adt { name, .. } => {
                format!("a `{name}` value as {{\"con\": name, \"fields\": [...]}}")
            }
            ValueType::Ref(_) => "a reference as {\"ref\": value}".to_string(),
            ValueType::Func | ValueType::Param(_) => describe(self.ty),
        }
    }

    /// A number, string, boolean or null, or a gathered tensor: a tensor, or an error.
    fn leaf<E: de::Error>(self, json: Json) -> Result<Value, E> {
        let json = Gathered(json);
        match self.ty {
            ValueType::Tensor { dtype, shape } => {
                super::read_tensor(*dtype, shape, &json.0).map_err(|e| self.reader.fail(e))
            }
            _ => Err(self.reader.fail(expected(&self.form(), &json.0))),
        }
    }

    /// An array or object where this seed's type takes neither.
    fn mismatch<E: de::Error>(&self, found: &str) -> E {
        E::custom(format!("expected {}, found {found}", self.form()))
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.form())
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.leaf(Json::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        match self.ty {
            // The hot path of tree inputs (a word id per leaf): an integer element is exact,
            // so it needs no tensor to be converted through.
            ValueType::Tensor { dtype, shape } if shape.is_empty() && dtype.is_int() && dtype.lanes == 1 => {
                element(*dtype, &Json::from(v)).map(Value::Scalar).map_err(|e| self.reader.fail(e))
            }
            _ => self.leaf(Json::from(v)),
        }
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.leaf(Json::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.leaf(Json::from(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.leaf(Json::from(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.leaf(Json::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let r = self.reader;
        match self.ty {
            ValueType::Tensor { .. } => {
                self.leaf(Json::deserialize(de::value::SeqAccessDeserializer::new(seq))?)
            }
            ValueType::Tuple(types) => match r.items(&mut seq, types, |i| format!("[{i}]"))? {
                (items, given) if given == types.len() => Ok(Value::tuple(items)),
                (_, given) => Err(self.mismatch(&format!("an array of {given}"))),
            },
            ValueType::Adt { name, args } if typed::is_list(r.exe, name) => {
                let fields = r.field_types(name, args, 0).map_err(A::Error::custom)?;
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(x) =
                    r.within(seq.next_element_seed(r.seed(&fields[0])), || format!("[{}]", items.len()))?
                {
                    items.push(x);
                }
                // Built from the back, so the loop is flat however long the list is.
                Ok(items
                    .into_iter()
                    .rev()
                    .fold(Value::adt(1, vec![]), |list, x| Value::adt(0, vec![x, list])))
            }
            _ => Err(self.mismatch("an array")),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        let r = self.reader;
        match self.ty {
            ValueType::Tensor { .. } => {
                self.leaf(Json::deserialize(de::value::MapAccessDeserializer::new(map))?)
            }
            ValueType::Adt { name, args } => self.constructor(name, args, map),
            ValueType::Ref(inner) => {
                let mut map = map;
                let value = match map.next_key::<Text>()? {
                    Some(Text(k)) if k == "ref" => {
                        r.within(map.next_value_seed(r.seed(inner)), || ".ref".to_string())?
                    }
                    _ => return Err(self.mismatch("another object")),
                };
                if map.next_key::<IgnoredAny>()?.is_some() {
                    return Err(self.mismatch("an object with more keys"));
                }
                Ok(Value::reference(value))
            }
            _ => Err(self.mismatch("an object")),
        }
    }
}

impl ValueSeed<'_, '_> {
    /// `{"con": name, "fields": [...]}` of `name[args]`, the keys in either order.
    fn constructor<'de, A: MapAccess<'de>>(
        self,
        name: &str,
        args: &[ValueType],
        mut map: A,
    ) -> Result<Value, A::Error> {
        let r = self.reader;
        let info = typed::adt(r.exe, name).map_err(A::Error::custom)?;
        // The constructor's tag and field types once `con` is read.
        let mut con: Option<(u32, &str, Rc<[ValueType]>)> = None;
        let mut fields: Option<Vec<Value>> = None;
        // `fields` given before `con`: kept as a tree until the types are known.
        let mut early: Option<Gathered> = None;
        while let Some(Text(key)) = map.next_key::<Text>()? {
            match &*key {
                "con" if con.is_none() => {
                    let Text(given) = map.next_value::<Text>()?;
                    let tag = info.constructors.iter().position(|c| c.name == given).ok_or_else(|| {
                        let names: Vec<&str> = info.constructors.iter().map(|c| c.name.as_str()).collect();
                        A::Error::custom(format!(
                            "`{given}` is not a constructor of `{name}` ({})",
                            names.join(", ")
                        ))
                    })? as u32;
                    let types = r.field_types(name, args, tag).map_err(A::Error::custom)?;
                    con = Some((tag, &info.constructors[tag as usize].name, types));
                }
                "fields" if fields.is_none() && early.is_none() => match &con {
                    Some((_, given, types)) => {
                        fields = Some(map.next_value_seed(FieldsSeed {
                            reader: r,
                            con: given,
                            types: &types[..],
                        })?);
                    }
                    None => early = Some(Gathered(map.next_value::<Json>()?)),
                },
                _ => return Err(self.mismatch(&format!("an object with key `{key}`"))),
            }
        }
        let Some((tag, given, types)) = con else { return Err(self.mismatch("an object without `con`")) };
        let fields = match (fields, early) {
            (Some(fields), _) => fields,
            (None, Some(json)) => FieldsSeed { reader: r, con: given, types: &types }
                .deserialize(serde_stacker::Deserializer::new(&json.0))
                .map_err(A::Error::custom)?,
            (None, None) if types.is_empty() => vec![],
            (None, None) => {
                return Err(A::Error::custom(format!("`{given}` takes {} field(s), 0 given", types.len())))
            }
        };
        Ok(Value::adt(tag, fields))
    }
}

/// A constructor's `fields` array, one seed per field type.
struct FieldsSeed<'s, 'a> {
    reader: &'s Reader<'a>,
    con: &'s str,
    types: &'s [ValueType],
}

impl<'de> DeserializeSeed<'de> for FieldsSeed<'_, '_> {
    type Value = Vec<Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Value>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for FieldsSeed<'_, '_> {
    type Value = Vec<Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("`fields` as an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Value>, A::Error> {
        let (items, given) = self.reader.items(&mut seq, self.types, |i| format!(".fields[{i}]"))?;
        if given != self.types.len() {
            let (con, n) = (self.con, self.types.len());
            return Err(A::Error::custom(format!("`{con}` takes {n} field(s), {given} given")));
        }
        Ok(items)
    }
}

/// Skips what is left of an array, counting the items.
pub(crate) fn skip_rest<'de, A: SeqAccess<'de>>(seq: &mut A) -> Result<usize, A::Error> {
    let mut n = 0;
    while seq.next_element::<IgnoredAny>()?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// A gathered part of the input, dropped without recursion however deep it nests.
pub(crate) struct Gathered(pub Json);

impl Drop for Gathered {
    fn drop(&mut self) {
        super::dismantle(std::mem::take(&mut self.0));
    }
}

/// A string or object key, borrowed from the input where it has no escapes (so that reading
/// `"con"` and `"Cons"` allocates nothing).
pub(crate) struct Text<'de>(pub Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}
