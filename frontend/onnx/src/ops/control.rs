//! Control flow: `If` becomes Relay's `if`, its branches blocks of their own.

use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;

/// `If(cond)`: `if (cond) { then_branch } else { else_branch }`; several outputs are a tuple
/// and one projection each. Where the branches' shapes differ the output's size is `?`.
pub fn if_(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let cond = cx.input(node, 0)?;
    // Relay's `if` tests a 0-d bool; ONNX's condition is any one-element tensor.
    let test = if cond.dims.is_empty() { cond.expr } else { format!("reshape({}, newshape=[])", cond.expr) };
    let (then_text, then_out) = cx.block(node.graph("then_branch")?)?;
    let (else_text, else_out) = cx.block(node.graph("else_branch")?)?;
    if then_out.len() != else_out.len() {
        return Err(node.error(format!(
            "the branches have {} and {} outputs",
            then_out.len(),
            else_out.len()
        )));
    }
    let mut outputs = vec![];
    for (t, e) in then_out.iter().zip(&else_out) {
        if t.dtype != e.dtype || t.dims.len() != e.dims.len() {
            return Err(node.error("the branches' outputs differ in element type or rank"));
        }
        let dims = t.dims.iter().zip(&e.dims).map(|(a, b)| if a == b { *a } else { None }).collect();
        outputs.push(Value::new(String::new(), t.dtype, dims));
    }
    let whole = format!("if ({test}) {then_text} else {else_text}");
    if let [one] = &mut outputs[..] {
        one.expr = whole;
        return Ok(outputs);
    }
    let tuple = cx.bind(&node.proto.output[0], Value::new(whole, then_out[0].dtype, vec![]));
    for (i, v) in outputs.iter_mut().enumerate() {
        v.expr = format!("{}.{i}", tuple.expr);
    }
    Ok(outputs)
}
