//! One JSONL input line, read as it is parsed: a JSON array of arguments, an object
//! `{"args": [...], "label": N}` (other keys ignored), or an object keyed by parameter name.
//!
//! The line's form is read once, here, for both ways of reading its arguments
//! ([`Arguments`]): as JSON trees ([`super::parse_named_input_line`]) or straight into values
//! of the entry's parameter types ([`TypedArguments`], what `relay-vm run --input` and `bench`
//! use, so that a Tree-LSTM input never becomes a `serde_json::Value` tree).

use super::{nesting_depth, MAX_JSON_DEPTH};
use crate::json::{skip_rest, Gathered, Reader, Text};
use relay_runtime::{Value, ValueType};
use serde::de::{self, DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value as Json;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

/// How [`read_line`] reads each argument.
pub trait Arguments<'de> {
    /// One argument as read.
    type Arg;
    /// What reads one argument.
    type Seed: DeserializeSeed<'de, Value = Self::Arg>;
    /// The seed of argument `i`, or `None` past the parameters that take one (such items
    /// are skipped and counted).
    fn seed(&self, i: usize) -> Option<Self::Seed>;
    /// Drops arguments that are not returned (a failed line's).
    fn discard(args: Vec<Self::Arg>);
    /// The message of a data error (not malformed JSON) while reading argument `i`.
    fn message(&self, i: usize, error: &serde_json::Error) -> String;
    /// Argument `i` from a gathered tree: an argument given by name, which is read only once
    /// the line turns out to have no `"args"` (beside which other keys are ignored, whatever
    /// they hold). The error is the whole message.
    fn read_tree(&self, i: usize, json: Json) -> Result<Self::Arg, String>;
}

/// The arguments of one input line, and the gold class when it carries one.
pub struct Line<T> {
    /// The arguments read, in parameter order.
    pub args: Vec<T>,
    /// How many the line gave (more than `args` holds when it gave more than there are
    /// parameters).
    pub given: usize,
    /// The expected class of a classifier's output (`"label"`).
    pub label: Option<i64>,
}

/// Reads one input line (module docs); `params` names the parameters the line fills, in
/// order, for lines that give arguments by name (`{"input.1": ...}` fills `%input_1`, as
/// [`crate::compiler::ir::sanitize_name`] turns names into parameter names); with no names,
/// only the array and `"args"` forms are accepted.
///
/// # Errors
/// Malformed JSON, nesting deeper than [`MAX_JSON_DEPTH`], a line of another form, an
/// argument `args` cannot read, a key that names no parameter or a parameter without a key.
pub fn read_line<'de, A: Arguments<'de>>(
    text: &'de str,
    params: &[&str],
    args: &A,
) -> Result<Line<A::Arg>, String> {
    let depth = nesting_depth(text);
    if depth > MAX_JSON_DEPTH {
        return Err(format!("JSON nested {depth} levels deep (at most {MAX_JSON_DEPTH})"));
    }
    let failed = Cell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let seed = LineSeed { params, args, failed: &failed };
    let line = seed.deserialize(serde_stacker::Deserializer::new(&mut de)).and_then(|line| match de.end() {
        Ok(()) => Ok(line),
        Err(e) => {
            A::discard(line.args);
            Err(e)
        }
    });
    line.map_err(|e| match failed.get() {
        _ if e.is_syntax() || e.is_eof() => format!("malformed JSON: {e}"),
        Some(i) => args.message(i, &e),
        None => {
            let (message, column) = without_position(&e);
            format!("{message}{column}")
        }
    })
}

/// `error`'s message without the position serde_json appends, and the position as it reads
/// after a path (`, at column 57 of the line`; empty where the error has none).
fn without_position(error: &serde_json::Error) -> (String, String) {
    let text = error.to_string();
    let at = format!(" at line {} column {}", error.line(), error.column());
    match text.strip_suffix(&at) {
        Some(m) => (m.to_string(), format!(", at column {} of the line", error.column())),
        None => (text, String::new()),
    }
}

/// Arguments as JSON trees, whatever the parameters' types.
pub struct JsonArguments;

impl<'de> Arguments<'de> for JsonArguments {
    type Arg = Json;
    type Seed = PhantomData<Json>;

    fn seed(&self, _: usize) -> Option<Self::Seed> {
        Some(PhantomData)
    }

    fn discard(args: Vec<Json>) {
        args.into_iter().for_each(crate::json::dismantle);
    }

    fn message(&self, _: usize, error: &serde_json::Error) -> String {
        error.to_string()
    }

    fn read_tree(&self, _: usize, json: Json) -> Result<Json, String> {
        Ok(json)
    }
}

/// Arguments read straight into values of the parameters' types.
pub struct TypedArguments<'s, 'a> {
    reader: &'s Reader<'a>,
    /// Each parameter's name (without `%`) and type.
    params: &'s [(&'s str, &'s ValueType)],
}

impl<'s, 'a> TypedArguments<'s, 'a> {
    /// Reads the arguments of `params` (name without `%`, type) with `reader`.
    pub fn new(reader: &'s Reader<'a>, params: &'s [(&'s str, &'s ValueType)]) -> Self {
        TypedArguments { reader, params }
    }
}

impl<'de, 's, 'a> Arguments<'de> for TypedArguments<'s, 'a> {
    type Arg = Value;
    type Seed = crate::json::ValueSeed<'s, 'a>;

    fn seed(&self, i: usize) -> Option<Self::Seed> {
        self.params.get(i).map(|(_, ty)| self.reader.seed(ty))
    }

    fn discard(args: Vec<Value>) {
        drop(args);
    }

    fn message(&self, i: usize, error: &serde_json::Error) -> String {
        // serde_json appends the position; it reads better after the path.
        let (message, column) = without_position(error);
        let name = self.params.get(i).map_or("?", |(n, _)| n);
        format!("argument `%{name}`: {}{column}", self.reader.message(&message))
    }

    fn read_tree(&self, i: usize, json: Json) -> Result<Value, String> {
        let (name, ty) = self.params.get(i).ok_or("an argument past the parameters")?;
        let read = self.reader.seed(ty).deserialize(serde_stacker::Deserializer::new(&json));
        crate::json::dismantle(json);
        read.map_err(|e| format!("argument `%{name}`: {}", self.reader.message(e)))
    }
}

/// Arguments collected so far, discarded (not dropped recursively) when reading fails.
struct Collected<'de, A: Arguments<'de>>(Vec<A::Arg>);

impl<'de, A: Arguments<'de>> Drop for Collected<'de, A> {
    fn drop(&mut self) {
        A::discard(std::mem::take(&mut self.0));
    }
}

/// The whole line.
struct LineSeed<'x, A> {
    params: &'x [&'x str],
    args: &'x A,
    /// The argument whose reading failed.
    failed: &'x Cell<Option<usize>>,
}

impl<'x, A> Clone for LineSeed<'x, A> {
    fn clone(&self) -> Self {
        LineSeed { params: self.params, args: self.args, failed: self.failed }
    }
}

impl<'de, A: Arguments<'de>> DeserializeSeed<'de> for LineSeed<'_, A> {
    type Value = Line<A::Arg>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, A: Arguments<'de>> LineSeed<'_, A> {
    /// Reads argument `i` with `read`, noting it as the failed one if it fails.
    fn argument<T, E>(&self, i: usize, read: Result<T, E>) -> Result<T, E> {
        if read.is_err() {
            self.failed.set(Some(i));
        }
        read
    }

    /// An array of arguments; items past the parameters are skipped and counted.
    fn arguments<S: SeqAccess<'de>>(&self, mut seq: S) -> Result<Line<A::Arg>, S::Error> {
        let mut args = Collected::<A>(Vec::new());
        while let Some(seed) = self.args.seed(args.0.len()) {
            match self.argument(args.0.len(), seq.next_element_seed(seed))? {
                Some(arg) => args.0.push(arg),
                None => {
                    return Ok(Line { given: args.0.len(), args: std::mem::take(&mut args.0), label: None })
                }
            }
        }
        let given = args.0.len() + skip_rest(&mut seq)?;
        Ok(Line { args: std::mem::take(&mut args.0), given, label: None })
    }
}

impl<'de, A: Arguments<'de>> Visitor<'de> for LineSeed<'_, A> {
    type Value = Line<A::Arg>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of arguments or {\"args\": [...], \"label\": N}")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, seq: S) -> Result<Self::Value, S::Error> {
        self.arguments(seq)
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut listed: Option<(Collected<'de, A>, usize)> = None;
        let mut label = None;
        // Arguments by name, in parameter order, gathered until the line's form is known, and
        // keys that name no parameter.
        let mut named: Vec<Option<Gathered>> =
            std::iter::repeat_with(|| None).take(self.params.len()).collect();
        let mut unknown: Vec<String> = vec![];
        while let Some(Text(key)) = map.next_key::<Text>()? {
            let read = match &*key {
                "args" if listed.is_none() => map
                    .next_value_seed(ListedSeed(self.clone()))
                    .map(|l| listed = Some((Collected::<A>(l.args), l.given))),
                "label" => map.next_value::<Label>().map(|l| label = l.0),
                key => {
                    let sanitized = crate::compiler::ir::sanitize_name(key);
                    match self.params.iter().position(|p| *p == key || *p == sanitized) {
                        Some(i) if named[i].is_none() => {
                            map.next_value::<Json>().map(|j| named[i] = Some(Gathered(j)))
                        }
                        _ => {
                            unknown.push(key.to_string());
                            map.next_value::<IgnoredAny>().map(drop)
                        }
                    }
                }
            };
            read?;
        }
        if let Some((mut args, given)) = listed {
            return Ok(Line { args: std::mem::take(&mut args.0), given, label });
        }
        // An object of nothing but a label (or nothing) still asks for "args".
        let problem = if self.params.is_empty() || (unknown.is_empty() && named.iter().all(Option::is_none)) {
            "an input object needs \"args\": [...]".to_string()
        } else if !unknown.is_empty() {
            format!("`{}` names no parameter (expected {})", unknown.join("`, `"), self.params.join(", "))
        } else if named.iter().any(Option::is_none) {
            let missing: Vec<String> = self
                .params
                .iter()
                .zip(&named)
                .filter(|(_, a)| a.is_none())
                .map(|(p, _)| format!("%{p}"))
                .collect();
            format!("no argument for {}", missing.join(", "))
        } else {
            let mut args = Collected::<A>(Vec::with_capacity(named.len()));
            for (i, mut json) in named.into_iter().flatten().enumerate() {
                args.0.push(self.args.read_tree(i, std::mem::take(&mut json.0)).map_err(M::Error::custom)?);
            }
            let args = std::mem::take(&mut args.0);
            return Ok(Line { given: args.len(), args, label });
        };
        Err(M::Error::custom(problem))
    }
}

/// The `"args"` array of an input object.
struct ListedSeed<'x, A>(LineSeed<'x, A>);

impl<'de, A: Arguments<'de>> DeserializeSeed<'de> for ListedSeed<'_, A> {
    type Value = Line<A::Arg>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, A: Arguments<'de>> Visitor<'de> for ListedSeed<'_, A> {
    type Value = Line<A::Arg>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("\"args\" as an array")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, seq: S) -> Result<Self::Value, S::Error> {
        self.0.arguments(seq)
    }
}

/// A `"label"`: an integer, or `null` for none.
struct Label(Option<i64>);

impl<'de> de::Deserialize<'de> for Label {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Label;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"label\" as an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Label, E> {
                Ok(Label(Some(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Label, E> {
                i64::try_from(v)
                    .map(|v| Label(Some(v)))
                    .map_err(|_| E::custom("\"label\" must be an integer"))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Label, E> {
                Ok(Label(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typed::tests::list_exe;
    use relay_devices::DType;

    fn int() -> ValueType {
        ValueType::Tensor { dtype: DType::I32, shape: vec![] }
    }

    fn list() -> ValueType {
        ValueType::Adt { name: "List".into(), args: vec![int()] }
    }

    /// `[1, [2, 3]]` read as `(%x: int32, %xs: List[int32])`, printed.
    fn want_args() -> Vec<String> {
        vec![r#"{"dtype":"int32","shape":[],"data":[1]}"#.to_string(), "[2,3]".to_string()]
    }

    /// Reads `text` into values of `(name, type)` parameters; the values printed as JSON.
    fn typed(text: &str, params: &[(&str, &ValueType)]) -> Result<(Vec<String>, usize, Option<i64>), String> {
        let exe = list_exe();
        let reader = Reader::new(&exe);
        let names: Vec<&str> = params.iter().map(|(n, _)| *n).collect();
        let line = read_line(text, &names, &TypedArguments::new(&reader, params))?;
        let printed =
            line.args.iter().zip(params).map(|(v, (_, t))| crate::json::to_json(&exe, t, v).unwrap());
        Ok((printed.collect(), line.given, line.label))
    }

    #[test]
    fn every_line_form_reads_typed_values() {
        let (i, l) = (int(), list());
        let params = [("x", &i), ("xs", &l)];
        let want = want_args();
        assert_eq!(typed("[1, [2, 3]]", &params).unwrap(), (want.clone(), 2, None));
        assert_eq!(
            typed(r#"{"note": 0, "args": [1, [2, 3]], "label": 4}"#, &params).unwrap(),
            (want.clone(), 2, Some(4))
        );
        assert_eq!(
            typed(r#"{"xs": [2, 3], "label": null, "x": 1}"#, &params).unwrap(),
            (want.clone(), 2, None)
        );
        // A constructor's keys in either order, and `Nil` without fields.
        let cons = r#"[1, {"fields": [2, {"fields": [3, {"con": "Nil"}], "con": "Cons"}], "con": "Cons"}]"#;
        assert_eq!(typed(cons, &params).unwrap(), (want, 2, None));
        // Beside "args", a key that names a parameter is ignored like any other
        // (CharRNN's lines carry `"category": "Arabic"` for a `%category` index).
        let line = r#"{"args": [1, [2, 3]], "x": "not an int32", "xs": {"deep": []}}"#;
        assert_eq!(typed(line, &params).unwrap().0, want_args());
        // More arguments than parameters are counted, not read.
        assert_eq!(typed(r#"[1, [], "extra", {"deep": [[]]}]"#, &params).unwrap().1, 4);
    }

    #[test]
    fn errors_name_the_argument_the_path_and_the_column() {
        let (i, l) = (int(), list());
        let params = [("x", &i), ("xs", &l)];
        let e = typed("[1, [2, 3, true]]", &params).unwrap_err();
        assert!(
            e.starts_with("argument `%xs`: expected an integer in the range of int32, found true (at [2]"),
            "{e}"
        );
        assert!(e.ends_with("at column 15 of the line"), "{e}");
        let e = typed(r#"[1, {"con": "Cons", "fields": [2]}]"#, &params).unwrap_err();
        assert!(e.contains("`Cons` takes 2 field(s), 1 given"), "{e}");
        let e = typed(r#"[1, {"con": "Some"}]"#, &params).unwrap_err();
        assert!(e.contains("`Some` is not a constructor of `List` (Cons, Nil)"), "{e}");
        let e = typed(r#"[1, {"con": "Nil", "extra": 1}]"#, &params).unwrap_err();
        assert!(e.contains("found an object with key `extra`"), "{e}");
        let e = typed(r#"[3000000000, []]"#, &params).unwrap_err();
        assert!(e.contains("range of int32"), "{e}");
        assert!(typed("[1, [2]", &params).unwrap_err().starts_with("malformed JSON"));
        let e = typed(r#"{"x": 1, "y": 2}"#, &params).unwrap_err();
        assert_eq!(e, "`y` names no parameter (expected x, xs), at column 16 of the line");
        let e = typed(r#"{"x": 1}"#, &params).unwrap_err();
        assert!(e.contains("no argument for %xs"), "{e}");
        assert!(typed(r#"{"label": 1}"#, &params).unwrap_err().contains("needs \"args\""));
        assert!(typed(r#"{"args": [1, []], "label": 1.5}"#, &params)
            .unwrap_err()
            .contains("\"label\" as an integer"));
        assert!(typed("7", &params).unwrap_err().contains("a JSON array of arguments"));
    }

    #[test]
    fn deep_values_read_on_a_small_stack_in_either_key_order() {
        for fields_first in [false, true] {
            let mut text = r#"{"con": "Nil"}"#.to_string();
            for i in 0..20_000 {
                text = match fields_first {
                    false => format!(r#"{{"con": "Cons", "fields": [{i}, {text}]}}"#),
                    true => format!(r#"{{"fields": [{i}, {text}], "con": "Cons"}}"#),
                };
            }
            let line = format!("[{text}]");
            let read = std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || typed(&line, &[("xs", &list())]).map(|(printed, ..)| printed[0].len()))
                .unwrap()
                .join()
                .unwrap();
            assert!(read.unwrap() > 20_000 * 2, "fields first: {fields_first}");
        }
    }
}
