//! Control flow: `If` becomes Relay's `if`, its branches blocks of their own; `Loop` becomes
//! a tail-recursive local function, so a loop runs as dynamic control flow, not unrolled.

use crate::dtype;
use crate::error::ImportError;
use crate::graph::{result_expr, Converter, Value};
use crate::node::Node;
use crate::shape::{tensor_type, Dims};
use relay_devices::DType;

/// `If(cond)`: `if (cond) { then_branch } else { else_branch }`; several outputs are a tuple
/// and one projection each. Where the branches' shapes differ the output's size is `?`.
pub fn if_(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let cond = cx.input(node, 0)?;
    let test = scalar(&cond);
    let (then_body, then_out) = cx.block(node.graph("then_branch")?, vec![])?;
    let (else_body, else_out) = cx.block(node.graph("else_branch")?, vec![])?;
    if then_out.len() != else_out.len() {
        return Err(node.error(format!(
            "the branches have {} and {} outputs",
            then_out.len(),
            else_out.len()
        )));
    }
    let mut outputs = vec![];
    for (t, e) in then_out.iter().zip(&else_out) {
        let dims = merge(node, t, e)?;
        outputs.push(Value::new(String::new(), t.dtype, dims));
    }
    let whole = format!(
        "if ({test}) {{\n{then_body}    {}\n  }} else {{\n{else_body}    {}\n  }}",
        result_expr(&then_out),
        result_expr(&else_out)
    );
    Ok(project(cx, node, whole, outputs))
}

/// `Loop(M, cond, v_initial...)` without scan outputs: a local function of the iteration
/// number, the condition and the loop-carried values that runs the body and calls itself
/// while the condition holds and fewer than `M` iterations ran, then returns the values.
pub fn loop_(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let trips = cx.optional_input(node, 0)?;
    let cond = cx.optional_input(node, 1)?;
    let initial: Vec<Value> =
        (2..node.proto.input.len()).map(|i| cx.input(node, i)).collect::<Result<_, _>>()?;
    let body = node.graph("body")?;
    if body.output.len() != 1 + initial.len() {
        return Err(node.error("scan outputs (body outputs after the loop-carried values) are not supported"));
    }
    let (f, i, c) =
        (cx.fresh_variable("loop"), cx.fresh_variable("iteration"), cx.fresh_variable("condition"));
    let carried: Vec<String> = initial.iter().map(|_| cx.fresh_variable("carried")).collect();
    // The carried values' types are the initial ones; if the body changes one, every size
    // becomes `?` and the body is converted again (a second pass cannot change them further;
    // `MAX_SUBGRAPH_DEPTH` bounds what nested loops cost).
    let mut dims: Vec<Dims> = initial.iter().map(|v| v.dims.clone()).collect();
    let (text, outputs) = loop {
        let mut inputs =
            vec![Value::new(i.clone(), DType::I64, vec![]), Value::new(c.clone(), DType::BOOL, vec![])];
        inputs.extend(
            initial
                .iter()
                .zip(&carried)
                .zip(&dims)
                .map(|((v, name), d)| Value::new(name.clone(), v.dtype, d.clone())),
        );
        let (text, outputs) = cx.block(body, inputs)?;
        let mut merged = vec![];
        for ((v, d), out) in initial.iter().zip(&dims).zip(&outputs[1..]) {
            merged.push(merge(node, &Value::new(String::new(), v.dtype, d.clone()), out)?);
        }
        if merged == dims {
            break (text, outputs);
        }
        dims = dims.iter().map(|d| vec![None; d.len()]).collect();
    };
    let types: Vec<String> = initial.iter().zip(&dims).map(|(v, d)| tensor_type(v.dtype, d)).collect();
    let mut params = vec![format!("{i}: int64"), format!("{c}: bool")];
    params.extend(carried.iter().zip(&types).map(|(name, ty)| format!("{name}: {ty}")));
    let ret = match &types[..] {
        [one] => one.clone(),
        _ => format!("({})", types.join(", ")),
    };
    let mut again = vec![format!("add({i}, 1i64)"), scalar(&outputs[0])];
    again.extend(outputs[1..].iter().map(|v| v.expr.clone()));
    let test = match &trips {
        Some(m) => format!("logical_and({c}, less({i}, {}))", scalar(m)),
        None => c.clone(),
    };
    let carried_values: Vec<Value> =
        carried.iter().zip(&initial).map(|(name, v)| Value::new(name.clone(), v.dtype, vec![])).collect();
    let definition = format!(
        "fn ({}) -> {ret} {{\n    if ({test}) {{\n  {}      {f}({})\n    }} else {{\n      {}\n    }}\n  }}",
        params.join(", "),
        text.replace('\n', "\n  ").trim_end_matches(' '),
        again.join(", "),
        result_expr(&carried_values)
    );
    cx.bind_as(&f, &definition);
    let mut start = vec![dtype::literal(DType::I64, 0.0), cond.as_ref().map_or("True".to_string(), scalar)];
    start.extend(initial.iter().map(|v| v.expr.clone()));
    let whole = format!("{f}({})", start.join(", "));
    let outputs = initial.iter().zip(dims).map(|(v, d)| Value::new(String::new(), v.dtype, d)).collect();
    Ok(project(cx, node, whole, outputs))
}

/// A one-element tensor as the 0-d value Relay's `if` and scalar arithmetic take.
fn scalar(v: &Value) -> String {
    if v.dims.is_empty() {
        v.expr.clone()
    } else {
        format!("reshape({}, newshape=[])", v.expr)
    }
}

/// The shape two values of one output share: `?` where their sizes differ.
fn merge(node: &Node, a: &Value, b: &Value) -> Result<Dims, ImportError> {
    if a.dtype != b.dtype || a.dims.len() != b.dims.len() {
        return Err(node.error("the subgraph's outputs differ in element type or rank"));
    }
    Ok(a.dims.iter().zip(&b.dims).map(|(x, y)| if x == y { *x } else { None }).collect())
}

/// The node's outputs from `whole`: the expression itself for one output, else a bound tuple
/// and one projection per output. `outputs` carry the types; their expressions are set here.
fn project(cx: &mut Converter, node: &Node, whole: String, mut outputs: Vec<Value>) -> Vec<Value> {
    if let [one] = &mut outputs[..] {
        one.expr = whole;
        return outputs;
    }
    let dtype = outputs.first().map_or(DType::BOOL, |v| v.dtype);
    let tuple = cx.bind(&node.name_hint(), Value::new(whole, dtype, vec![]));
    for (i, v) in outputs.iter_mut().enumerate() {
        v.expr = format!("{}.{i}", tuple.expr);
    }
    outputs
}
