//! Attribute readers and dimension arithmetic shared by the nn relations.
//!
//! Sizes come from user attributes, so every sum and product is checked: an absurd `shape` or
//! `padding` is an error message, never an overflow panic.

use relay_compiler::ir::Dim;
use relay_compiler::op::AttrReader;
use relay_devices::DType;

/// A dtype attribute (`dtype="int64"`, `out_dtype="int32"`): `default` when absent, `None` or
/// the empty string (TVM's unset dtype).
pub fn dtype_attr(attrs: &AttrReader, name: &str, default: DType) -> Result<DType, String> {
    let s = attrs.str(name, "")?;
    if s.is_empty() {
        return Ok(default);
    }
    s.parse().map_err(|e| format!("{e} in attribute `{name}`"))
}

/// A 2-d window attribute (`strides`, `dilation`, `pool_size`, `kernel_size`): one integer for
/// both spatial dimensions or two, each positive. `None` when absent.
pub fn pair_attr(attrs: &AttrReader, name: &str) -> Result<Option<[i64; 2]>, String> {
    let Some(v) = attrs.ints(name)? else { return Ok(None) };
    let pair = match v[..] {
        [a] => [a, a],
        [a, b] => [a, b],
        _ => return Err(format!("attribute `{name}` must have 1 or 2 values, found {}", v.len())),
    };
    if pair.iter().any(|&x| x <= 0) {
        return Err(format!("attribute `{name}` must be positive, found {v:?}"));
    }
    Ok(Some(pair))
}

/// Total padding of the two spatial dimensions from TVM's `padding` forms (TVM
/// `GetPaddingHeightWidth`): `[p]` pads every side by `p`, `[ph, pw]` pads top and bottom by
/// `ph` and left and right by `pw`, `[top, left, bottom, right]` pads each side. Absent means
/// no padding.
pub fn padding_hw(attrs: &AttrReader) -> Result<[i64; 2], String> {
    let Some(v) = attrs.ints("padding")? else { return Ok([0, 0]) };
    if v.iter().any(|&p| p < 0) {
        return Err(format!("attribute `padding` must not be negative, found {v:?}"));
    }
    let total = |a: i64, b: i64| a.checked_add(b).ok_or_else(too_large);
    match v[..] {
        [p] => Ok([total(p, p)?, total(p, p)?]),
        [h, w] => Ok([total(h, h)?, total(w, w)?]),
        [t, l, b, r] => Ok([total(t, b)?, total(l, r)?]),
        _ => Err(format!("attribute `padding` must have 1, 2 or 4 values, found {}", v.len())),
    }
}

/// The message for sizes beyond `i64`.
pub fn too_large() -> String {
    "the resulting size is too large".to_string()
}

/// The one dimension two compatible dimensions stand for: equal sizes, or the known one when
/// the other is `?`. `None` when both are known and differ.
pub fn merge_dims(a: Dim, b: Dim) -> Option<Dim> {
    match (a, b) {
        (Dim::Known(x), Dim::Known(y)) => (x == y).then_some(a),
        (Dim::Any, _) => Some(b),
        (_, Dim::Any) => Some(a),
    }
}

/// Whether two dimensions can be equal at run time.
pub fn dims_agree(a: Dim, b: Dim) -> bool {
    merge_dims(a, b).is_some()
}

/// A dimension as the text format writes it.
pub fn show_dim(d: Dim) -> String {
    match d {
        Dim::Known(n) => n.to_string(),
        Dim::Any => "?".to_string(),
    }
}

/// Runs relation `rel` on `args` with the attributes `pairs` (for the relations' unit tests).
#[cfg(test)]
pub fn run_rel(
    rel: relay_compiler::op::Relation,
    args: &[relay_compiler::op::RelType],
    pairs: &[(&str, relay_compiler::ir::AttrValue)],
) -> relay_compiler::op::RelationResult {
    let mut sy = relay_compiler::ir::Interner::default();
    let attrs = relay_compiler::ir::Attrs(pairs.iter().map(|(k, v)| (sy.intern(k), v.clone())).collect());
    rel(args, &AttrReader::new(&sy, &attrs))
}

/// `[a, b, ...]` as an attribute value (for the relations' unit tests).
#[cfg(test)]
pub fn int_list(v: &[i64]) -> relay_compiler::ir::AttrValue {
    relay_compiler::ir::AttrValue::List(v.iter().map(|&i| relay_compiler::ir::AttrValue::Int(i)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::{AttrValue, Attrs, Interner};

    fn reader_with<T>(pairs: &[(&str, AttrValue)], f: impl FnOnce(&AttrReader) -> T) -> T {
        let mut sy = Interner::default();
        let attrs = Attrs(pairs.iter().map(|(k, v)| (sy.intern(k), v.clone())).collect());
        f(&AttrReader::new(&sy, &attrs))
    }

    #[test]
    fn padding_forms() {
        assert_eq!(reader_with(&[], padding_hw), Ok([0, 0]));
        assert_eq!(reader_with(&[("padding", int_list(&[1]))], padding_hw), Ok([2, 2]));
        assert_eq!(reader_with(&[("padding", int_list(&[1, 2]))], padding_hw), Ok([2, 4]));
        assert_eq!(reader_with(&[("padding", int_list(&[1, 2, 3, 4]))], padding_hw), Ok([4, 6]));
        assert!(reader_with(&[("padding", int_list(&[1, 2, 3]))], padding_hw).is_err());
        assert!(reader_with(&[("padding", int_list(&[-1]))], padding_hw).is_err());
        assert!(reader_with(&[("padding", int_list(&[i64::MAX]))], padding_hw).is_err());
    }

    #[test]
    fn pairs_and_dtypes() {
        assert_eq!(
            reader_with(&[("strides", AttrValue::Int(2))], |r| pair_attr(r, "strides")),
            Ok(Some([2, 2]))
        );
        assert_eq!(reader_with(&[], |r| pair_attr(r, "strides")), Ok(None));
        assert!(reader_with(&[("strides", int_list(&[0, 1]))], |r| pair_attr(r, "strides")).is_err());
        assert_eq!(
            reader_with(&[("out_dtype", AttrValue::Str(String::new()))], |r| dtype_attr(
                r,
                "out_dtype",
                DType::F32
            )),
            Ok(DType::F32)
        );
        assert_eq!(
            reader_with(&[("dtype", AttrValue::Str("int64".into()))], |r| dtype_attr(r, "dtype", DType::I32)),
            Ok(DType::I64)
        );
        assert!(reader_with(&[("dtype", AttrValue::Str("float7".into()))], |r| dtype_attr(
            r,
            "dtype",
            DType::I32
        ))
        .is_err());
    }

    #[test]
    fn dim_arithmetic() {
        assert_eq!(merge_dims(Dim::Any, Dim::Known(4)), Some(Dim::Known(4)));
        assert_eq!(merge_dims(Dim::Known(3), Dim::Known(4)), None);
    }
}
