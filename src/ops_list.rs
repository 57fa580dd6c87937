//! `relay-vm ops`: every operator of the library with its fusion pattern, attributes and their
//! defaults, operand dtypes, and whether it has a fused (JIT/OpenCL) kernel — its own compute
//! rule, or the ordinary operators a pass rewrites it into (`QnnCanonicalize`,
//! `CanonicalizeOps`, `SimplifyInference`, `ProjectOutputs`, and `DynamicToStatic` where the static operator
//! fuses) — as a table for people or JSON for tools. Built from the library's
//! one operator list, so it cannot drift.

use crate::Format;
use relay::compiler::op::OpDef;
use relay::compiler::pass::{canonicalized_by, SIMPLIFIED_BY_INFERENCE};
use relay::stdlib::ops::operators;
use serde_json::{json, Value};

/// One operator as listed.
struct Row {
    name: &'static str,
    pattern: String,
    inputs: usize,
    dtypes: &'static str,
    fused: Fused,
    scalar: bool,
    attrs: Vec<(&'static str, Option<String>)>,
    doc: &'static str,
}

/// How an operator's calls run at the default level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fused {
    /// Its own compute rule: fused kernels.
    Yes,
    /// Rewritten by pass `.0` into ordinary operators, which fuse (a call the rewrite
    /// declines, such as a `qnn.requantize` with non-constant scales, runs the reference
    /// kernel).
    Via(&'static str),
    /// The reference kernel only.
    No,
}

impl Fused {
    /// How calls of `def` run; `has_compute` tells whether the operator of a name has a
    /// compute rule (a `dyn.*` operator's static form is the operator named without `dyn.`:
    /// TVM's naming, which `stdlib`'s tests check).
    fn of(def: &OpDef, has_compute: &dyn Fn(&str) -> bool) -> Fused {
        if def.compute.is_some() {
            Fused::Yes
        } else if def.canonicalize.is_some() {
            Fused::Via(canonicalized_by(def.name))
        } else if def.to_static.is_some() && def.name.strip_prefix("dyn.").is_some_and(has_compute) {
            Fused::Via("DynamicToStatic")
        } else if def.project.is_some() {
            // Each field read on its own (`split(x).1`) becomes a fusing call.
            Fused::Via("ProjectOutputs")
        } else if SIMPLIFIED_BY_INFERENCE.contains(&def.name) {
            Fused::Via("SimplifyInference")
        } else {
            Fused::No
        }
    }

    /// JSON: `true`, `false`, or `"via PassName"`.
    fn json(self) -> Value {
        match self {
            Fused::Yes => json!(true),
            Fused::No => json!(false),
            Fused::Via(pass) => json!(format!("via {pass}")),
        }
    }

    /// The table's column: `yes`, `-`, or `via PassName`.
    fn text(self) -> String {
        match self {
            Fused::Yes => "yes".into(),
            Fused::No => "-".into(),
            Fused::Via(pass) => format!("via {pass}"),
        }
    }
}

fn rows() -> Vec<Row> {
    let has_compute = |name: &str| operators().any(|e| e.def.name == name && e.def.compute.is_some());
    operators()
        .map(|entry| {
            let def = &entry.def;
            Row {
                name: def.name,
                pattern: format!("{:?}", def.pattern),
                inputs: def.num_inputs,
                dtypes: entry.dtypes.describe(),
                fused: Fused::of(def, &has_compute),
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
                        "fused": r.fused.json(), "scalar": r.scalar, "attrs": attrs, "doc": r.doc,
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
    let wf = width(&|r| r.fused.text().len()).max("fused".len());
    let mut out =
        format!("{:wn$}  {:wp$}  {:wd$}  {:wf$}  attributes\n", "operator", "pattern", "dtypes", "fused");
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
            "{:wn$}  {:wp$}  {:wd$}  {:wf$}  {}  # {}\n",
            r.name,
            r.pattern,
            r.dtypes,
            r.fused.text(),
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
        assert!(einsum.contains("Injective") && einsum.contains("yes"), "{einsum}");
        let sort = text.lines().find(|l| l.starts_with("sort ")).unwrap_or_default();
        assert!(sort.contains("Opaque") && !sort.contains("yes"), "{sort}");
    }

    #[test]
    fn json_carries_attributes_and_defaults() {
        let v: Value = serde_json::from_str(&report(Format::Json)).unwrap_or_default();
        let ops = v.as_array().cloned().unwrap_or_default();
        assert_eq!(ops.len(), relay::stdlib::op_registry().iter().count());
        let leaky = ops.iter().find(|o| o["name"] == "nn.leaky_relu").cloned().unwrap_or_default();
        assert_eq!(leaky["attrs"][0], json!({"name": "alpha", "default": "0.25", "required": false}));
        assert_eq!(leaky["fused"], json!(true));
        let requantize = ops.iter().find(|o| o["name"] == "qnn.requantize").cloned().unwrap_or_default();
        assert_eq!(requantize["fused"], json!("via QnnCanonicalize"));
        let norm = ops.iter().find(|o| o["name"] == "nn.instance_norm").cloned().unwrap_or_default();
        assert_eq!(norm["fused"], json!("via SimplifyInference"));
        let reshape = ops.iter().find(|o| o["name"] == "dyn.reshape").cloned().unwrap_or_default();
        assert_eq!(reshape["fused"], json!("via DynamicToStatic"));
        // `topk`, its static form, runs the reference kernel.
        let topk = ops.iter().find(|o| o["name"] == "dyn.topk").cloned().unwrap_or_default();
        assert_eq!(topk["fused"], json!(false));
        let split = ops.iter().find(|o| o["name"] == "split").cloned().unwrap_or_default();
        assert_eq!(split["fused"], json!("via ProjectOutputs"));
        // A compute rule has one output: `meshgrid`'s grids are its canonical form's calls.
        let meshgrid = ops.iter().find(|o| o["name"] == "meshgrid").cloned().unwrap_or_default();
        assert_eq!(meshgrid["fused"], json!("via CanonicalizeOps"));
        let reinterpret = ops.iter().find(|o| o["name"] == "reinterpret").cloned().unwrap_or_default();
        assert_eq!(reinterpret["fused"], json!(true));
        let add = ops.iter().find(|o| o["name"] == "add").cloned().unwrap_or_default();
        assert_eq!((add["pattern"].clone(), add["scalar"].clone()), (json!("Broadcast"), json!(true)));
    }
}
