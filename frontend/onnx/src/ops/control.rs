//! Control flow: `If` becomes Relay's `if`, its branches blocks of their own; `Loop` becomes
//! a tail-recursive local function, so a loop runs as dynamic control flow, not unrolled, and
//! so does `Scan`.

use super::{on, tuple};
use crate::dtype;
use crate::error::ImportError;
use crate::graph::{result_expr, Converter, Value};
use crate::node::Node;
use crate::shape::{known, list, normalize_axis, tensor_type, Dims};
use onnx_protobuf::GraphProto;
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

/// `Loop(M, cond, v_initial...)`: a local function of the iteration number, the condition,
/// the loop-carried values and one accumulator per scan output (the body outputs after the
/// carried values) that runs the body, appends its scan outputs to the accumulators and calls
/// itself while the condition holds and fewer than `M` iterations ran, then returns the
/// values and the accumulators: each scan output is its iterations' values stacked on a new
/// first axis of size `?`.
pub fn loop_(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let trips = cx.optional_input(node, 0)?;
    let cond = cx.optional_input(node, 1)?;
    let initial: Vec<Value> =
        (2..node.proto.input.len()).map(|i| cx.input(node, i)).collect::<Result<_, _>>()?;
    let body = node.graph("body")?;
    let (f, i, c) =
        (cx.fresh_variable("loop"), cx.fresh_variable("iteration"), cx.fresh_variable("condition"));
    let carried: Vec<String> = initial.iter().map(|_| cx.fresh_variable("carried")).collect();
    let fixed = vec![Value::new(i.clone(), DType::I64, vec![]), Value::new(c.clone(), DType::BOOL, vec![])];
    let (text, outputs, dims) = carried_block(cx, node, body, (fixed, 1), &initial, &carried, &[])?;
    let scanned = &outputs[1 + initial.len()..];
    let Accumulators { names: accumulators, empty, mut types } = accumulate(cx, node, scanned)?;
    types.splice(0..0, initial.iter().zip(&dims).map(|(v, d)| tensor_type(v.dtype, d)));
    let mut params = vec![format!("{i}: int64"), format!("{c}: bool")];
    params.extend(carried.iter().chain(&accumulators).zip(&types).map(|(name, ty)| format!("{name}: {ty}")));
    let mut again = vec![format!("add({i}, 1i64)"), scalar(&outputs[0])];
    again.extend(outputs[1..1 + initial.len()].iter().map(|v| v.expr.clone()));
    again.extend(appended(&accumulators, scanned));
    let test = match &trips {
        Some(m) => format!("logical_and({c}, less({i}, {}))", scalar(m)),
        None => c.clone(),
    };
    let finals: Vec<String> = carried.iter().chain(&accumulators).cloned().collect();
    let function = TailLoop {
        params: &params,
        ret: one_or_tuple(&types),
        test,
        prologue: "",
        body: &text,
        again: &again,
    };
    function.bind(cx, &f, &one_or_tuple(&finals));
    let mut start = vec![dtype::literal(DType::I64, 0.0), cond.as_ref().map_or("True".to_string(), scalar)];
    start.extend(initial.iter().map(|v| v.expr.clone()));
    start.extend(empty);
    let whole = format!("{f}({})", start.join(", "));
    let outputs = initial
        .iter()
        .zip(dims)
        .map(|(v, d)| Value::new(String::new(), v.dtype, d))
        .chain(scanned.iter().map(|y| Value::new(String::new(), y.dtype, [&[None], &y.dims[..]].concat())))
        .collect();
    Ok(project(cx, node, whole, outputs))
}

/// The tail-recursive local function `Loop` and `Scan` become: while `test` holds it runs
/// `prologue` and the converted `body`, then calls itself with `again`; otherwise it returns
/// its result.
struct TailLoop<'s> {
    /// Its parameters, `%name: type`.
    params: &'s [String],
    /// Its return type.
    ret: String,
    /// The condition to go on.
    test: String,
    /// Bindings before the body (`Scan`'s slices), indented for the loop's branch.
    prologue: &'s str,
    /// The converted body's bindings.
    body: &'s str,
    /// The arguments of the next call.
    again: &'s [String],
}

impl TailLoop<'_> {
    /// Binds the function to `f`, returning `result` when `test` fails.
    fn bind(&self, cx: &mut Converter, f: &str, result: &str) {
        let definition = format!(
            "fn ({}) -> {} {{\n    if ({}) {{\n{}  {}      {f}({})\n    }} else {{\n      {result}\n    }}\n  }}",
            self.params.join(", "),
            self.ret,
            self.test,
            self.prologue,
            self.body.replace('\n', "\n  ").trim_end_matches(' '),
            self.again.join(", "),
        );
        cx.bind_as(f, &definition);
    }
}

/// One accumulator variable per scan output of a `Loop` or `Scan` body.
struct Accumulators {
    /// The variables.
    names: Vec<String>,
    /// Their initial values: empty `[0, ...]` tensors.
    empty: Vec<String>,
    /// Their types, `Tensor[(?, ...)]`.
    types: Vec<String>,
}

/// The accumulators of `scanned`, the body's scan outputs.
///
/// # Errors
/// A scan output whose shape is not static.
fn accumulate(cx: &mut Converter, node: &Node, scanned: &[Value]) -> Result<Accumulators, ImportError> {
    let mut acc = Accumulators { names: vec![], empty: vec![], types: vec![] };
    for y in scanned {
        let element = on(node, known(&y.dims, "a scan output"))?;
        acc.names.push(cx.fresh_variable("scanned"));
        acc.types.push(tensor_type(y.dtype, &[&[None], &y.dims[..]].concat()));
        acc.empty.push(format!(
            "zeros(shape={}, dtype=\"{}\")",
            list(&[&[0], &element[..]].concat()),
            y.dtype
        ));
    }
    Ok(acc)
}

/// The one item itself, or a tuple of several (what [`project`] takes apart).
fn one_or_tuple(items: &[String]) -> String {
    match items {
        [one] => one.clone(),
        _ => format!("({})", items.join(", ")),
    }
}

/// Each accumulator with this iteration's scan output appended on its first axis.
fn appended(accumulators: &[String], scanned: &[Value]) -> Vec<String> {
    accumulators
        .iter()
        .zip(scanned)
        .map(|(acc, y)| format!("concatenate(({acc}, expand_dims({}, axis=0)), axis=0)", y.expr))
        .collect()
}

/// `Scan(initial states..., scan inputs...)`: a local function of the step number, the states
/// and one accumulator per scan output that runs the body on each scan input's slice along
/// its `scan_input_axes` axis (from the end for `scan_input_directions` 1), appends the
/// body's scan outputs to the accumulators and calls itself until every slice is seen. The
/// accumulated scan outputs are then reversed where `scan_output_directions` says so, given
/// their static length when it is known, and moved to their `scan_output_axes` axis.
pub fn scan(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let body = node.graph("body")?;
    let m = usize::try_from(node.int("num_scan_inputs", 0)?).unwrap_or(0);
    let n = node.proto.input.len().checked_sub(m).filter(|_| m > 0).ok_or_else(|| {
        node.error("attribute `num_scan_inputs` must be between 1 and the number of inputs")
    })?;
    let k = body.output.len().checked_sub(n).ok_or_else(|| node.error("the body has too few outputs"))?;
    let per = |name: &str, count: usize| -> Result<Vec<i64>, ImportError> {
        let v = node.ints(name)?.unwrap_or_else(|| vec![0; count]);
        if v.len() != count {
            return Err(node.error(format!("attribute `{name}` must have {count} entries")));
        }
        Ok(v)
    };
    let (in_axes, in_reverse) = (per("scan_input_axes", m)?, per("scan_input_directions", m)?);
    let (out_axes, out_reverse) = (per("scan_output_axes", k)?, per("scan_output_directions", k)?);
    let states: Vec<Value> = (0..n).map(|i| cx.input(node, i)).collect::<Result<_, _>>()?;
    let inputs: Vec<Value> = (n..n + m).map(|i| cx.input(node, i)).collect::<Result<_, _>>()?;
    let in_axes: Vec<usize> = inputs
        .iter()
        .zip(&in_axes)
        .map(|(x, &a)| normalize_axis(a, x.dims.len()))
        .collect::<Result<_, _>>()
        .map_err(|e| node.error(e))?;
    let (first, axis) = (&inputs[0], in_axes[0]);
    let steps = first.dims[axis];
    let count = match steps {
        Some(t) => dtype::literal(DType::I64, t as f64),
        None => format!("take(shape_of({}, dtype=\"int64\"), {axis}i64)", first.expr),
    };
    let (f, i) = (cx.fresh_variable("scan"), cx.fresh_variable("step"));
    let carried: Vec<String> = states.iter().map(|_| cx.fresh_variable("state")).collect();
    let mut slices = vec![];
    let mut lets = String::new();
    for ((x, &a), &reverse) in inputs.iter().zip(&in_axes).zip(&in_reverse) {
        let name = cx.fresh_variable("scan_slice");
        let at = if reverse != 0 { format!("subtract(subtract({count}, 1i64), {i})") } else { i.clone() };
        lets += &format!("      let {name} = take({}, {at}, axis={a});\n", x.expr);
        let dims = [&x.dims[..a], &x.dims[a + 1..]].concat();
        slices.push(Value::new(name, x.dtype, dims));
    }
    let (text, outputs, dims) = carried_block(cx, node, body, (vec![], 0), &states, &carried, &slices)?;
    let scanned = &outputs[n..];
    let Accumulators { names: accumulators, empty, mut types } = accumulate(cx, node, scanned)?;
    types.splice(0..0, states.iter().zip(&dims).map(|(v, d)| tensor_type(v.dtype, d)));
    let mut params = vec![format!("{i}: int64")];
    params.extend(carried.iter().chain(&accumulators).zip(&types).map(|(name, ty)| format!("{name}: {ty}")));
    let mut again = vec![format!("add({i}, 1i64)")];
    again.extend(outputs[..n].iter().map(|v| v.expr.clone()));
    again.extend(appended(&accumulators, scanned));
    let finals: Vec<String> = carried.iter().chain(&accumulators).cloned().collect();
    let test = format!("less({i}, {count})");
    let function =
        TailLoop { params: &params, ret: tuple(&types), test, prologue: &lets, body: &text, again: &again };
    function.bind(cx, &f, &tuple(&finals));
    let mut start = vec![dtype::literal(DType::I64, 0.0)];
    start.extend(states.iter().map(|v| v.expr.clone()));
    start.extend(empty);
    let whole =
        cx.bind(&node.name_hint(), Value::new(format!("{f}({})", start.join(", ")), DType::BOOL, vec![]));
    let mut results: Vec<Value> = states
        .iter()
        .zip(dims)
        .enumerate()
        .map(|(j, (v, d))| Value::new(format!("{}.{j}", whole.expr), v.dtype, d))
        .collect();
    for (j, y) in scanned.iter().enumerate() {
        let mut expr = format!("{}.{}", whole.expr, n + j);
        if out_reverse[j] != 0 {
            expr = format!("reverse({expr}, axis=0)");
        }
        let mut dims: Dims = [&[steps], &y.dims[..]].concat();
        if let Some(shape) = dims.iter().copied().collect::<Option<Vec<i64>>>() {
            expr = format!("reshape({expr}, newshape={})", list(&shape));
        }
        let a = on(node, normalize_axis(out_axes[j], dims.len()))?;
        if a != 0 {
            let mut axes: Vec<i64> = (1..dims.len() as i64).collect();
            axes.insert(a, 0);
            expr = format!("transpose({expr}, axes={})", list(&axes));
            let t = dims.remove(0);
            dims.insert(a, t);
        }
        results.push(Value::new(expr, y.dtype, dims));
    }
    Ok(results)
}

/// Converts `body`, whose inputs are `before`, then the carried values `carried` (variables
/// with `initial`'s types), then `after`, and whose outputs list the carried values' new
/// ones after `skip` others. Returns the body's text, its outputs and the
/// carried values' shapes: the initial ones, or, if the body changes one, all sizes `?` and
/// the body converted again (a second pass cannot change them further; `MAX_SUBGRAPH_DEPTH`
/// bounds what nested loops cost).
fn carried_block(
    cx: &mut Converter,
    node: &Node,
    body: &GraphProto,
    (before, skip): (Vec<Value>, usize),
    initial: &[Value],
    carried: &[String],
    after: &[Value],
) -> Result<(String, Vec<Value>, Vec<Dims>), ImportError> {
    let mut dims: Vec<Dims> = initial.iter().map(|v| v.dims.clone()).collect();
    loop {
        let mut inputs = before.clone();
        inputs.extend(
            initial
                .iter()
                .zip(carried)
                .zip(&dims)
                .map(|((v, name), d)| Value::new(name.clone(), v.dtype, d.clone())),
        );
        inputs.extend_from_slice(after);
        let (text, outputs) = cx.block(body, inputs)?;
        if outputs.len() < skip + initial.len() {
            return Err(node.error("the body has fewer outputs than carried values"));
        }
        let mut merged = vec![];
        for ((v, d), out) in initial.iter().zip(&dims).zip(&outputs[skip..]) {
            merged.push(merge(node, &Value::new(String::new(), v.dtype, d.clone()), out)?);
        }
        if merged == dims {
            return Ok((text, outputs, dims));
        }
        dims = dims.iter().map(|d| vec![None; d.len()]).collect();
    }
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
