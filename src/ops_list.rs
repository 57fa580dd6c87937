//! `relay-vm ops`: every operator of the library with its fusion pattern, attributes and their
//! defaults, operand dtypes, and whether it has a fused (JIT/OpenCL) kernel, as a table for
//! people or JSON for tools. Built from the library's one operator list, so it cannot drift.

use crate::Format;
use relay::stdlib::ops::operators;
use serde_json::{json, Value};

/// One operator as listed.
struct Row {
    name: &'static str,
    pattern: String,
    inputs: usize,
    dtypes: &'static str,
    fused: bool,
    scalar: bool,
    attrs: Vec<(&'static str, Option<String>)>,
    doc: &'static str,
}

fn rows() -> Vec<Row> {
    operators()
        .map(|entry| {
            let def = &entry.def;
            Row {
                name: def.name,
                pattern: format!("{:?}", def.pattern),
                inputs: def.num_inputs,
                dtypes: entry.dtypes.describe(),
                fused: def.compute.is_some(),
                scalar: def.scalar.is_some(),
                attrs: (entry.reference.attr_defaults)(),
                doc: def.doc,
            }
        })
        .collect()
}

/// The listing in `format`.
pub fn report(format: Format) -> String {
    let rows = rows();
    match format {
        Format::Json => {
            let ops: Vec<Value> = rows
                .iter()
                .map(|r| {
                    let attrs: Vec<Value> = r
                        .attrs
                        .iter()
                        .map(|(name, default)| json!({"name": name, "default": default, "required": default.is_none()}))
                        .collect();
                    json!({
                        "name": r.name, "pattern": r.pattern, "inputs": r.inputs, "dtypes": r.dtypes,
                        "fused": r.fused, "scalar": r.scalar, "attrs": attrs, "doc": r.doc,
                    })
                })
                .collect();
            format!("{}\n", Value::Array(ops))
        }
        Format::Text => text(&rows),
    }
}

/// One line per operator, columns aligned; attributes as `name=default` (`name` alone when
/// required).
fn text(rows: &[Row]) -> String {
    let width = |f: &dyn Fn(&Row) -> usize| rows.iter().map(f).max().unwrap_or(0);
    let (wn, wp, wd) = (width(&|r| r.name.len()), width(&|r| r.pattern.len()), width(&|r| r.dtypes.len()));
    let mut out = format!("{:wn$}  {:wp$}  {:wd$}  fused  attributes\n", "operator", "pattern", "dtypes");
    for r in rows {
        let attrs: Vec<String> = r
            .attrs
            .iter()
            .map(|(name, default)| match default {
                Some(v) => format!("{name}={v}"),
                None => name.to_string(),
            })
            .collect();
        out.push_str(&format!(
            "{:wn$}  {:wp$}  {:wd$}  {:5}  {}  # {}\n",
            r.name,
            r.pattern,
            r.dtypes,
            if r.fused { "yes" } else { "-" },
            attrs.join(", "),
            r.doc,
        ));
    }
    out.push_str(&format!("{} operators\n", rows.len()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_registered_operator_once() {
        let text = report(Format::Text);
        let registered = relay::stdlib::op_registry().iter().count();
        assert!(text.ends_with(&format!("{registered} operators\n")), "{text}");
        let clip = text.lines().find(|l| l.starts_with("clip ")).unwrap_or_default();
        assert!(clip.contains("ElemWise") && clip.contains("yes") && clip.contains("a_min, a_max"), "{clip}");
        let sin = text.lines().find(|l| l.starts_with("sin ")).unwrap_or_default();
        assert!(sin.contains("floating-point") && sin.contains("yes"), "{sin}");
        let einsum = text.lines().find(|l| l.starts_with("einsum ")).unwrap_or_default();
        assert!(einsum.contains("Injective") && !einsum.contains("yes"), "{einsum}");
    }

    #[test]
    fn json_carries_attributes_and_defaults() {
        let v: Value = serde_json::from_str(&report(Format::Json)).unwrap_or_default();
        let ops = v.as_array().cloned().unwrap_or_default();
        assert_eq!(ops.len(), relay::stdlib::op_registry().iter().count());
        let leaky = ops.iter().find(|o| o["name"] == "nn.leaky_relu").cloned().unwrap_or_default();
        assert_eq!(leaky["attrs"][0], json!({"name": "alpha", "default": "0.25", "required": false}));
        assert_eq!(leaky["fused"], json!(true));
        let add = ops.iter().find(|o| o["name"] == "add").cloned().unwrap_or_default();
        assert_eq!((add["pattern"].clone(), add["scalar"].clone()), (json!("Broadcast"), json!(true)));
    }
}
