//! Operator and function attributes: `nn.conv2d(%x, %w, padding=[1, 1])`, `Primitive=1`.

use super::Symbol;

/// An attribute value as written in the text format.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    /// An integer (`1`, `-2`).
    Int(i64),
    /// A floating-point number (`1e-5`, `0.5f`).
    Float(f64),
    /// `True` or `False`.
    Bool(bool),
    /// A string (`"NCHW"`, `"float32"`).
    Str(String),
    /// A list (`[1, 1]`, `[]`).
    List(Vec<AttrValue>),
    /// `None` or `nullptr`: explicitly absent.
    Null,
    /// `meta[kind][index]`: an entry of the `#[metadata]` section.
    Meta { kind: String, index: u32 },
}

/// Named attributes in source order. Lookup is linear: ops carry a handful of attributes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attrs(pub Vec<(Symbol, AttrValue)>);

impl Attrs {
    /// The value of attribute `name`, if present.
    pub fn get(&self, name: Symbol) -> Option<&AttrValue> {
        self.0.iter().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// Whether there are no attributes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
