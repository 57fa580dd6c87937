//! Typed access to a call's keyword attributes, with TVM's defaults applied by the caller.

use crate::ir::{AttrValue, Attrs, Interner};

/// Reads the attributes of one operator call by name.
///
/// Every getter returns `Err(message)` when the attribute is present with the wrong kind of
/// value, and the given default when it is absent (or `None`/`nullptr`).
pub struct AttrReader<'a> {
    symbols: &'a Interner,
    attrs: &'a Attrs,
}

impl<'a> AttrReader<'a> {
    /// A reader over `attrs`, whose keys are interned in `symbols`.
    pub fn new(symbols: &'a Interner, attrs: &'a Attrs) -> AttrReader<'a> {
        AttrReader { symbols, attrs }
    }

    /// The raw value, unless absent or null.
    pub fn get(&self, name: &str) -> Option<&'a AttrValue> {
        let key = self.symbols.get(name)?;
        self.attrs.get(key).filter(|v| !matches!(v, AttrValue::Null))
    }

    /// An integer attribute (`axis=1`). Bools are not integers here.
    pub fn int(&self, name: &str, default: i64) -> Result<i64, String> {
        match self.get(name) {
            None => Ok(default),
            Some(AttrValue::Int(v)) => Ok(*v),
            Some(v) => Err(wrong(name, "an integer", v)),
        }
    }

    /// A float attribute (`epsilon=1e-5`); integers are accepted.
    pub fn float(&self, name: &str, default: f64) -> Result<f64, String> {
        match self.get(name) {
            None => Ok(default),
            Some(AttrValue::Float(v)) => Ok(*v),
            Some(AttrValue::Int(v)) => Ok(*v as f64),
            Some(v) => Err(wrong(name, "a number", v)),
        }
    }

    /// A boolean attribute (`keepdims=True`); `0`/`1` are accepted as TVM does.
    pub fn bool(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.get(name) {
            None => Ok(default),
            Some(AttrValue::Bool(v)) => Ok(*v),
            Some(AttrValue::Int(v @ (0 | 1))) => Ok(*v == 1),
            Some(v) => Err(wrong(name, "a boolean", v)),
        }
    }

    /// A string attribute (`data_layout="NCHW"`).
    pub fn str(&self, name: &str, default: &'a str) -> Result<&'a str, String> {
        match self.get(name) {
            None => Ok(default),
            Some(AttrValue::Str(s)) => Ok(s),
            Some(v) => Err(wrong(name, "a string", v)),
        }
    }

    /// A list of integers (`padding=[1, 1]`); a single integer is read as a one-element list,
    /// as TVM's attribute conversion does. `None` when absent.
    pub fn ints(&self, name: &str) -> Result<Option<Vec<i64>>, String> {
        match self.get(name) {
            None => Ok(None),
            Some(AttrValue::Int(v)) => Ok(Some(vec![*v])),
            Some(AttrValue::List(items)) => items
                .iter()
                .map(|v| match v {
                    AttrValue::Int(i) => Ok(*i),
                    other => Err(wrong(name, "a list of integers", other)),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(v) => Err(wrong(name, "a list of integers", v)),
        }
    }
}

fn wrong(name: &str, expected: &str, got: &AttrValue) -> String {
    format!("attribute `{name}` must be {expected}, found {}", describe(got))
}

/// An attribute value in words for error messages: `integer 3`, `string "NCHW"`, `a list`.
pub fn describe(v: &AttrValue) -> String {
    match v {
        AttrValue::Int(i) => format!("integer {i}"),
        AttrValue::Float(x) => format!("float {x}"),
        AttrValue::Bool(b) => format!("boolean {}", if *b { "True" } else { "False" }),
        AttrValue::Str(s) => format!("string {s:?}"),
        AttrValue::List(_) => "a list".to_string(),
        AttrValue::Null => "None".to_string(),
        AttrValue::Meta { kind, index } => format!("meta[{kind}][{index}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_values_and_defaults() {
        let mut sy = Interner::default();
        let attrs = Attrs(vec![
            (sy.intern("axis"), AttrValue::Int(1)),
            (sy.intern("padding"), AttrValue::List(vec![AttrValue::Int(1), AttrValue::Int(2)])),
            (sy.intern("keepdims"), AttrValue::Bool(true)),
            (sy.intern("layout"), AttrValue::Str("NCHW".into())),
            (sy.intern("units"), AttrValue::Null),
        ]);
        let r = AttrReader::new(&sy, &attrs);
        assert_eq!(r.int("axis", 0), Ok(1));
        assert_eq!(r.int("missing", 7), Ok(7));
        assert_eq!(r.ints("padding"), Ok(Some(vec![1, 2])));
        assert_eq!(r.ints("axis"), Ok(Some(vec![1])));
        assert_eq!(r.ints("units"), Ok(None));
        assert_eq!(r.bool("keepdims", false), Ok(true));
        assert_eq!(r.str("layout", "NHWC"), Ok("NCHW"));
        assert!(r.int("layout", 0).unwrap_err().contains("must be an integer, found string \"NCHW\""));
    }
}
