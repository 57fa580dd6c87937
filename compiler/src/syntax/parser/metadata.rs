//! The `#[metadata]` section and `meta[relay.Constant][i]` references.
//!
//! Two forms are read: ours, `{"relay.Constant": [{"dtype": "float32", "shape": [2, 2],
//! "data": [1, 2, 3, 4]}, ...]}` (what the printer writes), and TVM's node-serializer JSON
//! (`root`, `nodes`, `b64ndarrays`; see [`super::tvm_metadata`]). The file's constants are appended to `Module::constants`, so constant `i` of the file is
//! `Module::constants[offset + i]`.

use super::{tvm_metadata, PResult, Parser};
use crate::diagnostics::Diagnostic;
use crate::ir::{ConstantData, Span};
use crate::syntax::token::{TokenKind as K, TokenValue};
use relay_devices::{DType, DTypeCode};
use serde_json::Value;

/// The only kind of metadata entry we support.
const CONSTANT_KIND: &str = "relay.Constant";

/// Reads one constant object; the error says what is wrong with it.
fn constant(v: &Value) -> Result<ConstantData, String> {
    let obj = v.as_object().ok_or("expected an object with `dtype`, `shape` and `data`")?;
    if let Some(key) = obj.keys().find(|k| !matches!(k.as_str(), "dtype" | "shape" | "data")) {
        return Err(format!("unknown field `{key}`"));
    }
    let dtype_name = obj.get("dtype").and_then(Value::as_str).ok_or("`dtype` must be a string")?;
    let dtype: DType = dtype_name.parse().map_err(|_| format!("unknown dtype `{dtype_name}`"))?;
    let shape: Vec<i64> = obj
        .get("shape")
        .and_then(Value::as_array)
        .and_then(|dims| dims.iter().map(|d| d.as_i64().filter(|&n| n >= 0)).collect())
        .ok_or("`shape` must be a list of non-negative integers")?;
    let count = shape
        .iter()
        .try_fold(1usize, |acc, &d| usize::try_from(d).ok().and_then(|d| acc.checked_mul(d)))
        .ok_or("the shape has too many elements")?;
    let data = obj.get("data").and_then(Value::as_array).ok_or("`data` must be a list")?;
    if data.len() != count {
        return Err(format!("`data` has {} elements but shape {shape:?} needs {count}", data.len()));
    }
    let values: Vec<f64> = data
        .iter()
        .map(|x| match x {
            Value::Bool(b) if dtype.code == DTypeCode::Bool => Some(f64::from(u8::from(*b))),
            Value::Number(n) => n.as_f64().filter(|f| !dtype.is_int() || f.fract() == 0.0),
            _ => None,
        })
        .collect::<Option<_>>()
        .ok_or_else(|| {
            format!(
                "`data` must hold {} values of dtype {dtype}",
                if dtype.is_int() { "integer" } else { "numeric" }
            )
        })?;
    Ok(ConstantData { dtype, shape, data: values })
}

/// The constants of a metadata section, or the reason it is malformed.
fn constants(json: &str) -> Result<Vec<ConstantData>, (usize, String)> {
    let value: Value = serde_json::from_str(json).map_err(|e| {
        // The span shows where; serde's " at line L column C" counts from the JSON's start.
        let mut why = e.to_string();
        if let Some(i) = why.rfind(" at line ") {
            why.truncate(i);
        }
        (offset_of(json, e.line(), e.column()), why)
    })?;
    if tvm_metadata::is_tvm_json(&value) {
        return tvm_metadata::constants(&value, CONSTANT_KIND).map_err(|e| (0, e));
    }
    let obj =
        value.as_object().ok_or((0, format!("expected an object like {{\"{CONSTANT_KIND}\": [...]}}")))?;
    if let Some(key) = obj.keys().find(|k| *k != CONSTANT_KIND) {
        return Err((0, format!("unsupported metadata kind `{key}`; only `{CONSTANT_KIND}` is supported")));
    }
    let Some(list) = obj.get(CONSTANT_KIND) else { return Ok(vec![]) };
    let items = list.as_array().ok_or((0, format!("`{CONSTANT_KIND}` must be a list")))?;
    items
        .iter()
        .enumerate()
        .map(|(i, v)| constant(v).map_err(|e| (0, format!("constant {i}: {e}"))))
        .collect()
}

/// The byte offset of 1-based `line` and `column` (serde_json's error position) in `text`.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    let rest = &text[line_start.min(text.len())..];
    let col = rest.char_indices().nth(column.saturating_sub(1)).map_or(rest.len(), |(i, _)| i);
    (line_start + col).min(text.len())
}

impl Parser<'_> {
    /// Loads the file's `#[metadata]` section (the token before `Eof`), if any, into
    /// `Module::constants`.
    pub(super) fn load_metadata(&mut self) {
        let n = self.tokens.len();
        let Some(tok) = n.checked_sub(2).map(|i| &self.tokens[i]) else { return };
        let TokenValue::Metadata(start) = tok.value else { return };
        let header = Span::new(self.file, tok.lo, start);
        self.constants.present = true;
        let json = &self.text[start as usize..];
        match constants(json) {
            Ok(list) => {
                self.constants.count = list.len() as u32;
                self.module.constants.extend(list);
            }
            Err((offset, why)) => {
                self.constants.broken = true;
                let span = if offset == 0 {
                    header
                } else {
                    let at = start + offset as u32;
                    // A zero-width span at the error; clamped to the file and char boundaries.
                    Span::new(self.file, at, at)
                };
                self.report(Diagnostic::error(span, format!("invalid metadata section: {why}")));
            }
        }
    }

    /// `meta[KIND][i]`: the kind, its span, the index token and the whole span.
    fn parse_meta_ref(&mut self) -> PResult<(String, Span, usize, Span)> {
        let lo = self.bump_lo();
        self.expect(K::LBracket, "`[`")?;
        let (kind, kind_span) = self.dotted_name()?;
        self.expect(K::RBracket, "`]`")?;
        self.expect(K::LBracket, "`[`")?;
        let i = self.expect(K::Int, "an index")?;
        self.expect(K::RBracket, "`]`")?;
        Ok((kind, kind_span, i, self.span_from(lo)))
    }

    /// `meta[tir.SizeVar][i]` or `meta[tir.Var][i]` as a dimension: TVM's symbolic sizes,
    /// which are `?` here (a dimension has no name to keep).
    pub(super) fn parse_meta_dim(&mut self) -> PResult<()> {
        let (kind, kind_span, _, _) = self.parse_meta_ref()?;
        if !matches!(kind.as_str(), "tir.SizeVar" | "tir.Var") {
            let msg =
                format!("a dimension may be `meta[tir.SizeVar][i]` or `meta[tir.Var][i]`, not `{kind}`");
            return Err(self.error(kind_span, msg));
        }
        Ok(())
    }

    /// `meta[relay.Constant][i]`: the module-wide index of the constant and the span.
    pub(super) fn parse_meta_constant(&mut self) -> PResult<(u32, Span)> {
        let (kind, kind_span, i, span) = self.parse_meta_ref()?;
        if kind != CONSTANT_KIND {
            return Err(self.error(
                kind_span,
                format!("unsupported metadata kind `{kind}`; only `{CONSTANT_KIND}` is supported"),
            ));
        }
        let index = match self.tok(i).value {
            TokenValue::Int(lit) => lit.magnitude,
            _ => u64::MAX,
        };
        let c = self.constants;
        if !c.broken && index >= u64::from(c.count) {
            let msg = if c.present {
                format!(
                    "`meta[{kind}][{index}]` is out of range: the metadata section has {} constant{}",
                    c.count,
                    if c.count == 1 { "" } else { "s" }
                )
            } else {
                format!("`meta[{kind}][{index}]` refers to a `#[metadata]` section, but the file has none")
            };
            return Err(self.error(span, msg));
        }
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        Ok((c.offset.saturating_add(index), span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_constants() {
        let json = r#"{"relay.Constant": [{"dtype": "float32", "shape": [2, 2], "data": [1, 2, 3, 4.5]},
                       {"dtype": "bool", "shape": [], "data": [true]}]}"#;
        let cs = constants(json).unwrap();
        assert_eq!(cs.len(), 2);
        assert_eq!(cs[0].shape, vec![2, 2]);
        assert_eq!(cs[0].data, vec![1.0, 2.0, 3.0, 4.5]);
        assert_eq!(cs[1].data, vec![1.0]);
    }

    #[test]
    fn rejects_malformed_constants() {
        let bad = [
            r#"{"relay.Constant": [{"dtype": "float32", "shape": [2], "data": [1]}]}"#,
            r#"{"relay.Constant": [{"dtype": "flaot32", "shape": [], "data": [1]}]}"#,
            r#"{"relay.Constant": [{"dtype": "int32", "shape": [], "data": [1.5]}]}"#,
            r#"{"relay.Constant": [{"dtype": "int32", "shape": [-1], "data": []}]}"#,
            r#"{"relay.Foo": []}"#,
            r#"[1]"#,
        ];
        for json in bad {
            assert!(constants(json).is_err(), "{json}");
        }
        let (offset, _) = constants("{\n  \"relay.Constant\": [,]}").unwrap_err();
        assert_eq!(offset, 23);
    }
}
