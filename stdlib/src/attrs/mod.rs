//! Typed operator attributes, with TVM's attribute names and defaults
//! (`include/tvm/relay/attrs/*.h`, v0.16).
//!
//! Each struct is declared once with `op_attrs!`, which derives the struct, its `Default`
//! (TVM's defaults), the list of accepted names and the parser from a call's keyword
//! attributes ([`AttrReader`]). Attributes TVM requires (`clip`'s `a_min`) are errors when
//! absent; their `Default` value only serves Rust callers that build the struct directly.

mod algorithm;
mod dynamic;
mod image;
mod indexing;
mod nn;
mod qnn;
mod replicate;
mod tensor;
mod vision;

pub use algorithm::*;
pub use dynamic::*;
pub use image::*;
pub use indexing::*;
pub use nn::*;
pub use qnn::*;
pub use replicate::*;
pub use tensor::*;
pub use vision::*;

use relay_compiler::ir::AttrValue;
use relay_compiler::op::{describe, AttrReader};
use relay_devices::DType;
use std::any::Any;
use std::fmt::Debug;

/// A typed attribute struct of one operator.
pub trait OpAttrs: Clone + Debug + Default + PartialEq + Send + Sync + 'static {
    /// The attribute names the operator accepts, in TVM's order.
    const NAMES: &'static [&'static str];

    /// Reads the attributes of a call, applying defaults to absent ones.
    ///
    /// # Errors
    /// A message naming the attribute that is missing or has the wrong kind of value.
    fn from_attrs(reader: &AttrReader) -> Result<Self, String>;

    /// Each attribute's name and default value as text (`None`: required), in TVM's order,
    /// for listings such as `relay-vm ops`.
    fn defaults() -> Vec<(&'static str, Option<String>)>;

    /// The attributes of a call that [`OpAttrs::from_attrs`] reads back as `self`: the
    /// required ones and those that differ from their defaults, in TVM's order.
    fn to_attrs(&self) -> Vec<(&'static str, AttrValue)>;
}

/// Type-erased attributes, as stored next to a call in a kernel table: any [`OpAttrs`],
/// recovered with `(attrs as &dyn Any).downcast_ref::<A>()`.
pub trait AnyAttrs: Any + Debug + Send + Sync {}

impl<A: OpAttrs> AnyAttrs for A {}

/// A Rust value an attribute can be read as.
pub trait FromAttr: Sized {
    /// Converts a present, non-null attribute value; `Err` holds what was expected.
    fn from_attr(v: &AttrValue) -> Result<Self, &'static str>;

    /// The value of an absent or null attribute: `None` for optional types, otherwise the
    /// attribute is required.
    fn absent() -> Option<Self> {
        None
    }

    /// The value as Relay's text format writes it (`"float32"`, `[1, 1]`, `True`), for
    /// listings of defaults such as `relay-vm ops`.
    fn text(&self) -> String;

    /// The value as a call's attribute, which [`FromAttr::from_attr`] reads back (`None` as
    /// [`AttrValue::Null`], read as absent), for passes that write a call from typed
    /// attributes (`DynamicToStatic`).
    fn to_attr(&self) -> AttrValue;
}

/// Reads attribute `name` as `T`, or `default` when absent (`None` means required).
///
/// # Errors
/// A message naming the attribute.
pub fn read_attr<T: FromAttr>(r: &AttrReader, name: &str, default: Option<T>) -> Result<T, String> {
    match r.get(name) {
        Some(v) => T::from_attr(v)
            .map_err(|expected| format!("attribute `{name}` must be {expected}, found {}", describe(v))),
        None => default.or_else(T::absent).ok_or_else(|| format!("attribute `{name}` is required")),
    }
}

impl FromAttr for i64 {
    fn from_attr(v: &AttrValue) -> Result<Self, &'static str> {
        match v {
            AttrValue::Int(i) => Ok(*i),
            _ => Err("an integer"),
        }
    }
    fn text(&self) -> String {
        self.to_string()
    }
    fn to_attr(&self) -> AttrValue {
        AttrValue::Int(*self)
    }
}

impl FromAttr for f64 {
    fn from_attr(v: &AttrValue) -> Result<Self, &'static str> {
        match v {
            AttrValue::Float(x) => Ok(*x),
            AttrValue::Int(i) => Ok(*i as f64),
            _ => Err("a number"),
        }
    }
    fn text(&self) -> String {
        format!("{self:?}")
    }
    fn to_attr(&self) -> AttrValue {
        AttrValue::Float(*self)
    }
}

impl FromAttr for bool {
    fn from_attr(v: &AttrValue) -> Result<Self, &'static str> {
        match v {
            AttrValue::Bool(b) => Ok(*b),
            AttrValue::Int(i @ (0 | 1)) => Ok(*i == 1),
            _ => Err("a boolean"),
        }
    }
    fn text(&self) -> String {
        (if *self { "True" } else { "False" }).to_string()
    }
    fn to_attr(&self) -> AttrValue {
        AttrValue::Bool(*self)
    }
}

impl FromAttr for String {
    fn from_attr(v: &AttrValue) -> Result<Self, &'static str> {
        match v {
            AttrValue::Str(s) => Ok(s.clone()),
            _ => Err("a string"),
        }
    }
    fn text(&self) -> String {
        format!("{self:?}")
    }
    fn to_attr(&self) -> AttrValue {
        AttrValue::Str(self.clone())
    }
}

impl FromAttr for DType {
    fn from_attr(v: &AttrValue) -> Result<Self, &'static str> {
        match v {
            AttrValue::Str(s) => s.parse().map_err(|_| "a dtype name"),
            _ => Err("a dtype name"),
        }
    }
    fn text(&self) -> String {
        format!("\"{self}\"")
    }
    fn to_attr(&self) -> AttrValue {
        AttrValue::Str(self.to_string())
    }
}

/// A list of integers; a single integer is a one-element list, as TVM's Python API converts
/// `axis=1` to `[1]`.
impl FromAttr for Vec<i64> {
    fn from_attr(v: &AttrValue) -> Result<Self, &'static str> {
        const WHAT: &str = "a list of integers";
        match v {
            AttrValue::Int(i) => Ok(vec![*i]),
            AttrValue::List(items) => items.iter().map(|x| i64::from_attr(x).map_err(|_| WHAT)).collect(),
            _ => Err(WHAT),
        }
    }
    fn text(&self) -> String {
        list_text(self)
    }
    fn to_attr(&self) -> AttrValue {
        list_attr(self)
    }
}

/// A list of numbers (`roi=[0f, 0f, 1f, 1f]`); one number is a list of one.
impl FromAttr for Vec<f64> {
    fn from_attr(v: &AttrValue) -> Result<Self, &'static str> {
        const WHAT: &str = "a list of numbers";
        match v {
            AttrValue::Int(_) | AttrValue::Float(_) => f64::from_attr(v).map(|x| vec![x]),
            AttrValue::List(items) => items.iter().map(|x| f64::from_attr(x).map_err(|_| WHAT)).collect(),
            _ => Err(WHAT),
        }
    }
    fn text(&self) -> String {
        list_text(self)
    }
    fn to_attr(&self) -> AttrValue {
        list_attr(self)
    }
}

/// A list of integer lists (`pad_width=[[0, 0], [1, 2]]`).
impl FromAttr for Vec<Vec<i64>> {
    fn from_attr(v: &AttrValue) -> Result<Self, &'static str> {
        const WHAT: &str = "a list of integer lists";
        match v {
            AttrValue::List(items) => items
                .iter()
                .map(|x| match x {
                    AttrValue::List(_) => Vec::<i64>::from_attr(x).map_err(|_| WHAT),
                    _ => Err(WHAT),
                })
                .collect(),
            _ => Err(WHAT),
        }
    }
    fn text(&self) -> String {
        list_text(self)
    }
    fn to_attr(&self) -> AttrValue {
        list_attr(self)
    }
}

impl FromAttr for Option<i64> {
    fn from_attr(v: &AttrValue) -> Result<Self, &'static str> {
        i64::from_attr(v).map(Some)
    }
    fn absent() -> Option<Self> {
        Some(None)
    }
    fn text(&self) -> String {
        option_text(self)
    }
    fn to_attr(&self) -> AttrValue {
        option_attr(self)
    }
}

impl FromAttr for Option<Vec<i64>> {
    fn from_attr(v: &AttrValue) -> Result<Self, &'static str> {
        Vec::<i64>::from_attr(v).map(Some)
    }
    fn absent() -> Option<Self> {
        Some(None)
    }
    fn text(&self) -> String {
        option_text(self)
    }
    fn to_attr(&self) -> AttrValue {
        option_attr(self)
    }
}

/// `out_dtype` and friends: TVM prints an unset dtype as `""`.
impl FromAttr for Option<DType> {
    fn from_attr(v: &AttrValue) -> Result<Self, &'static str> {
        match v {
            AttrValue::Str(s) if s.is_empty() => Ok(None),
            _ => DType::from_attr(v).map(Some),
        }
    }
    fn absent() -> Option<Self> {
        Some(None)
    }
    fn text(&self) -> String {
        option_text(self)
    }
    fn to_attr(&self) -> AttrValue {
        option_attr(self)
    }
}

/// A list as Relay text: `[a, b]`, each item in its own text form.
fn list_text<T: FromAttr>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(T::text).collect();
    format!("[{}]", items.join(", "))
}

/// An optional value as Relay text: `None` or the value's own text.
fn option_text<T: FromAttr>(value: &Option<T>) -> String {
    value.as_ref().map_or_else(|| "None".to_string(), T::text)
}

/// A list as an attribute, each item its own attribute value.
fn list_attr<T: FromAttr>(items: &[T]) -> AttrValue {
    AttrValue::List(items.iter().map(T::to_attr).collect())
}

/// An optional value as an attribute: `Null` (absent) or the value's own.
fn option_attr<T: FromAttr>(value: &Option<T>) -> AttrValue {
    value.as_ref().map_or(AttrValue::Null, T::to_attr)
}

/// Declares string-valued attribute enums (`mode="clip"`) with their TVM spellings.
macro_rules! attr_enum {
    ($(#[$doc:meta])* $name:ident, $what:literal { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
        }

        impl FromAttr for $name {
            fn from_attr(v: &AttrValue) -> Result<Self, &'static str> {
                match v {
                    $(AttrValue::Str(s) if s == $text => Ok($name::$variant),)+
                    _ => Err($what),
                }
            }

            fn text(&self) -> String {
                match self {
                    $($name::$variant => format!("{:?}", $text),)+
                }
            }

            fn to_attr(&self) -> AttrValue {
                match self {
                    $($name::$variant => AttrValue::Str($text.to_string()),)+
                }
            }
        }
    };
}

pub(crate) use attr_enum;

attr_enum! {
    /// How `take` treats out-of-range indices.
    TakeMode, "one of \"clip\", \"wrap\", \"fast\"" {
        /// Clamp to `[0, n - 1]` (TVM's default).
        #[default]
        Clip = "clip",
        /// Wrap modulo `n`.
        Wrap = "wrap",
        /// No adjustment: TVM leaves out-of-range behaviour undefined; here it is an error.
        Fast = "fast",
    }
}

attr_enum! {
    /// How `strided_slice` reads `end`.
    SliceMode, "\"end\" or \"size\"" {
        /// `end` is an exclusive end index (TVM's default).
        #[default]
        End = "end",
        /// `end` is a slice length (`-1`: to the end) and strides are ignored.
        Size = "size",
    }
}

attr_enum! {
    /// What `nn.pad` fills the border with.
    PadMode, "one of \"constant\", \"edge\", \"reflect\"" {
        /// The `pad_value` input (TVM's default).
        #[default]
        Constant = "constant",
        /// The nearest edge element.
        Edge = "edge",
        /// The mirror image, not repeating the edge (NumPy's `reflect`).
        Reflect = "reflect",
    }
}

/// `split`'s `indices_or_sections`: a number of equal sections or the split points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndicesOrSections {
    /// Split into this many equal parts.
    Sections(i64),
    /// Split before each of these (strictly increasing) indices.
    Indices(Vec<i64>),
}

impl Default for IndicesOrSections {
    fn default() -> Self {
        IndicesOrSections::Sections(1)
    }
}

impl FromAttr for IndicesOrSections {
    fn from_attr(v: &AttrValue) -> Result<Self, &'static str> {
        match v {
            AttrValue::Int(n) => Ok(IndicesOrSections::Sections(*n)),
            AttrValue::List(_) => Vec::<i64>::from_attr(v)
                .map(IndicesOrSections::Indices)
                .map_err(|_| "an integer or a list of integers"),
            _ => Err("an integer or a list of integers"),
        }
    }
    fn text(&self) -> String {
        match self {
            IndicesOrSections::Sections(n) => n.text(),
            IndicesOrSections::Indices(list) => list.text(),
        }
    }
    fn to_attr(&self) -> AttrValue {
        match self {
            IndicesOrSections::Sections(n) => n.to_attr(),
            IndicesOrSections::Indices(list) => list.to_attr(),
        }
    }
}

/// Declares an attribute struct: fields as `name: Type = default`, where `default` is one token
/// tree of type `Type` (wrap longer expressions in parentheses) or `required`.
macro_rules! op_attrs {
    ($(#[$doc:meta])* pub struct $name:ident { $($(#[$fdoc:meta])* $field:ident : $ty:ty = $default:tt,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            $($(#[$fdoc])* pub $field: $ty,)*
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $($field: $crate::attrs::attr_default!($ty, $default),)* }
            }
        }

        impl $crate::attrs::OpAttrs for $name {
            const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];

            #[allow(unused_variables)]
            fn from_attrs(reader: &relay_compiler::op::AttrReader) -> Result<Self, String> {
                Ok($name {
                    $($field: $crate::attrs::read_attr::<$ty>(
                        reader,
                        stringify!($field),
                        $crate::attrs::attr_fallback!($default),
                    )?,)*
                })
            }

            fn defaults() -> Vec<(&'static str, Option<String>)> {
                #[allow(unused_variables)]
                let d = Self::default();
                vec![$((stringify!($field), $crate::attrs::attr_text!(d.$field, $default)),)*]
            }

            fn to_attrs(&self) -> Vec<(&'static str, relay_compiler::ir::AttrValue)> {
                #[allow(unused_variables)]
                let d = Self::default();
                #[allow(unused_mut)]
                let mut out = vec![];
                $(if $crate::attrs::attr_written!(self.$field, d.$field, $default) {
                    out.push((stringify!($field), $crate::attrs::FromAttr::to_attr(&self.$field)));
                })*
                out
            }
        }
    };
}

/// The default of one attribute as text, `None` when it is required.
macro_rules! attr_text {
    ($value:expr, required) => {
        None
    };
    ($value:expr, $default:tt) => {
        Some($crate::attrs::FromAttr::text(&$value))
    };
}

/// Whether `to_attrs` writes one attribute: always when it is required, else when its value
/// differs from the default.
macro_rules! attr_written {
    ($value:expr, $default_value:expr, required) => {
        true
    };
    ($value:expr, $default_value:expr, $default:tt) => {
        $value != $default_value
    };
}

macro_rules! attr_default {
    ($ty:ty, required) => {
        <$ty>::default()
    };
    ($ty:ty, $default:tt) => {
        $default
    };
}

macro_rules! attr_fallback {
    (required) => {
        None
    };
    ($default:tt) => {
        Some($default)
    };
}

pub(crate) use {attr_default, attr_fallback, attr_text, attr_written, op_attrs};

op_attrs! {
    /// For operators without attributes.
    pub struct NoAttrs {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::{Attrs, Interner};

    fn reader_test(pairs: Vec<(&str, AttrValue)>, check: impl FnOnce(&AttrReader)) {
        let mut sy = Interner::default();
        let attrs = Attrs(pairs.into_iter().map(|(k, v)| (sy.intern(k), v)).collect());
        check(&AttrReader::new(&sy, &attrs));
    }

    #[test]
    fn defaults_required_and_wrong_kinds() {
        reader_test(vec![("a_min", AttrValue::Int(0))], |r| {
            let err = ClipAttrs::from_attrs(r).unwrap_err();
            assert!(err.contains("`a_max` is required"), "{err}");
        });
        reader_test(vec![("axis", AttrValue::Int(1)), ("keepdims", AttrValue::Bool(true))], |r| {
            let a = ReduceAttrs::from_attrs(r).unwrap();
            assert_eq!(a, ReduceAttrs { axis: Some(vec![1]), keepdims: true, exclude: false });
        });
        reader_test(vec![("mode", AttrValue::Str("nearest".into()))], |r| {
            assert!(TakeAttrs::from_attrs(r).unwrap_err().contains("\"clip\""));
        });
        reader_test(vec![("out_dtype", AttrValue::Str(String::new())), ("units", AttrValue::Null)], |r| {
            assert_eq!(DenseAttrs::from_attrs(r).unwrap(), DenseAttrs::default());
        });
        reader_test(vec![("pad_width", AttrValue::List(vec![AttrValue::Int(1)]))], |r| {
            assert!(PadAttrs::from_attrs(r).is_err());
        });
    }

    #[test]
    fn names_and_defaults_follow_tvm() {
        assert_eq!(Conv2dAttrs::NAMES.len(), 10);
        let c = Conv2dAttrs::default();
        assert_eq!(
            (c.strides, c.padding, c.groups, c.data_layout),
            (vec![1, 1], vec![0, 0], 1, "NCHW".to_string())
        );
        assert_eq!(LeakyReluAttrs::default().alpha, 0.25);
        assert!(!BatchMatmulAttrs::default().transpose_b);
        assert_eq!(ClipAttrs::defaults(), vec![("a_min", None), ("a_max", None)]);
        assert_eq!(LeakyReluAttrs::defaults(), vec![("alpha", Some("0.25".to_string()))]);
    }

    #[test]
    fn written_attributes_read_back() {
        let resize = Resize2dAttrs {
            size: vec![3, 4],
            roi: vec![0.0, 0.5, 1.0, 1.0],
            layout: "NHWC".into(),
            method: ResizeMethod::Cubic,
            out_dtype: Some(DType::F32),
            ..Resize2dAttrs::default()
        };
        let written = resize.to_attrs();
        // The defaults are left out; `size` is required, so always written.
        let names: Vec<&str> = written.iter().map(|(k, _)| *k).collect();
        assert_eq!(names, ["roi", "size", "layout", "method", "out_dtype"]);
        reader_test(written, |r| assert_eq!(Resize2dAttrs::from_attrs(r), Ok(resize.clone())));
        let pad = PadAttrs { pad_width: vec![vec![1, 0], vec![0, 2]], pad_mode: PadMode::Edge };
        reader_test(pad.to_attrs(), |r| assert_eq!(PadAttrs::from_attrs(r), Ok(pad.clone())));
        let topk = TopkAttrs { k: Some(2), ..TopkAttrs::default() };
        reader_test(topk.to_attrs(), |r| assert_eq!(TopkAttrs::from_attrs(r), Ok(topk.clone())));
        assert_eq!(ReshapeAttrs::default().to_attrs(), vec![("newshape", AttrValue::List(vec![]))]);
    }

    #[test]
    fn defaults_print_as_relay_text() {
        let text = |pairs: Vec<(&'static str, Option<String>)>| -> Vec<(&'static str, String)> {
            pairs.into_iter().map(|(k, v)| (k, v.unwrap_or_default())).collect()
        };
        assert_eq!(text(ShapeOfAttrs::defaults()), vec![("dtype", "\"int32\"".to_string())]);
        assert_eq!(
            text(TakeAttrs::defaults()),
            vec![
                ("batch_dims", "0".to_string()),
                ("axis", "None".to_string()),
                ("mode", "\"clip\"".to_string())
            ]
        );
        assert_eq!(Some(DType::F32).text(), "\"float32\"");
        assert_eq!(Some(vec![1i64, 2]).text(), "[1, 2]");
        assert_eq!(
            (true.text(), IndicesOrSections::Sections(2).text()),
            ("True".to_string(), "2".to_string())
        );
    }
}
