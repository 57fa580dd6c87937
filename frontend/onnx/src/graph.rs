//! The converter: an ONNX graph, in dependency order, to the body of a Relay `@main`.
//!
//! Each node's outputs become `let` bindings named after the ONNX values (sanitised, made
//! unique); graph inputs become `@main`'s first parameters and initializers (and tensors of
//! `Constant` nodes) that an operator reads as data its further parameters, written out as
//! weights. Tensors read as attributes (shapes, axes, pads) never become parameters; scalar
//! constants become literals.

use crate::error::ImportError;
use crate::fold;
use crate::node::Node;
use crate::ops;
use crate::shape::{self, Dims, ShapeElement};
use crate::tensor::{element_count, Const};
use crate::{dtype, Imported};
use onnx_protobuf::tensor_shape_proto::dimension::Value as DimValue;
use onnx_protobuf::type_proto::Value as TypeValue;
use onnx_protobuf::{GraphProto, ValueInfoProto};
use relay_compiler::ir::sanitize_name;
use relay_devices::DType;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::fmt::Write;
use std::rc::Rc;

/// An ONNX value as the importer knows it.
#[derive(Clone, Debug)]
pub struct Value {
    /// The Relay expression that computes it: a variable (`%x`), a literal, or (for an
    /// operator's result before it is bound) a call.
    pub expr: String,
    /// Element type.
    pub dtype: DType,
    /// Shape.
    pub dims: Dims,
    /// The tensor, when it is known at import time (initializers, `Constant` outputs).
    pub constant: Option<Rc<Const>>,
    /// For an ONNX sequence (a prelude `List` of tensors of `dtype` and `dims`, `?` where the
    /// elements' sizes differ): its length, when the importer knows it.
    pub sequence: Option<Option<usize>>,
    /// For the `Shape` of a tensor with dynamic sizes (computed at run time), and for what the
    /// data-movement operators make of it: each element, known or the run-time size of an
    /// axis, so that the known ones fold and `Reshape` can read the others as "keep" or "infer".
    pub shape_elements: Option<Vec<ShapeElement>>,
}

impl Value {
    /// A computed value (no constant).
    pub fn new(expr: String, dtype: DType, dims: Dims) -> Value {
        Value { expr, dtype, dims, constant: None, sequence: None, shape_elements: None }
    }
}

/// Where a weight comes among `@main`'s weight parameters: the order operators first read them.
type WeightOrder = usize;

/// The deepest nesting of subgraphs (`If` branches, `Loop` bodies) converted: a `Loop` body
/// may be converted twice (see `ops/control.rs`), so nested loops cost 2^depth conversions.
pub const MAX_SUBGRAPH_DEPTH: usize = 8;

/// The state of one conversion.
pub struct Converter {
    /// How many subgraphs enclose the one being converted.
    depth: usize,
    opset: i64,
    values: HashMap<String, Value>,
    /// Every identifier given out (parameters and `let` variables).
    taken: HashSet<String>,
    /// The constants an operator has read as data: identifier → (order, tensor).
    weights: BTreeMap<String, (WeightOrder, Rc<Const>)>,
    body: String,
}

impl Converter {
    /// A unique identifier for the ONNX name `hint`.
    fn fresh(&mut self, hint: &str) -> String {
        let base = sanitize_name(hint);
        let mut name = base.clone();
        let mut n = 1;
        while !self.taken.insert(name.clone()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        name
    }

    /// A constant value: a literal if it is a finite scalar, else a parameter `%ident` that
    /// becomes a weight when an operator reads it as data.
    fn constant(&mut self, name: &str, c: Const) -> Value {
        let expr = c.scalar_literal().unwrap_or_else(|| format!("%{}", self.fresh(name)));
        let dims = c.dims.iter().map(|&d| Some(d)).collect();
        Value { expr, dtype: c.dtype, dims, constant: Some(Rc::new(c)), sequence: None, shape_elements: None }
    }

    /// Input `i` of `node` as data (a constant read this way becomes a weight).
    ///
    /// # Errors
    /// A missing input, or one that nothing defines.
    pub fn input(&mut self, node: &Node, i: usize) -> Result<Value, ImportError> {
        self.optional_input(node, i)?.ok_or_else(|| node.error(format!("input {i} is missing")))
    }

    /// Input `i` of `node` as data, if the node has it (ONNX leaves optional inputs out or
    /// names them `""`).
    pub fn optional_input(&mut self, node: &Node, i: usize) -> Result<Option<Value>, ImportError> {
        let Some(v) = self.lookup(node, i)? else { return Ok(None) };
        if let (Some(c), Some(ident)) = (&v.constant, v.expr.strip_prefix('%')) {
            let order = self.weights.len();
            self.weights.entry(ident.to_string()).or_insert((order, c.clone()));
        }
        Ok(Some(v))
    }

    /// Input `i` of `node`, which must be known at import time (a shape, axes, pads), if the
    /// node has it.
    pub fn constant_input(&mut self, node: &Node, i: usize) -> Result<Option<Rc<Const>>, ImportError> {
        match self.lookup(node, i)? {
            None => Ok(None),
            Some(Value { constant: Some(c), .. }) => Ok(Some(c)),
            Some(_) => Err(node.error(format!(
                "input {i} (`{}`) must be a constant (an initializer or a Constant node's output)",
                node.proto.input[i]
            ))),
        }
    }

    /// The elements of input `i` of `node` when it is a shape tensor computed at run time
    /// whose elements the importer follows (`Value::shape_elements`).
    ///
    /// # Errors
    /// An input that nothing defines.
    pub fn shape_elements(&self, node: &Node, i: usize) -> Result<Option<Vec<ShapeElement>>, ImportError> {
        Ok(self.lookup(node, i)?.filter(|v| v.constant.is_none()).and_then(|v| v.shape_elements))
    }

    fn lookup(&self, node: &Node, i: usize) -> Result<Option<Value>, ImportError> {
        match node.proto.input.get(i).filter(|n| !n.is_empty()) {
            None => Ok(None),
            Some(name) => self
                .values
                .get(name)
                .cloned()
                .map(Some)
                .ok_or_else(|| ImportError::Undefined { node: node.label.clone(), value: name.clone() }),
        }
    }

    /// Binds `value` to a fresh variable named after `hint` (`let %hint = expr;`) and returns
    /// the variable.
    pub fn bind(&mut self, hint: &str, value: Value) -> Value {
        let variable = self.fresh_variable(hint);
        self.bind_as(&variable, &value.expr);
        Value { expr: variable, ..value }
    }

    /// Binds the variable `%name` (from [`Converter::fresh_variable`]) to `expr`.
    pub fn bind_as(&mut self, variable: &str, expr: &str) {
        let _ = writeln!(self.body, "  let {variable} = {expr};");
    }

    /// Replaces the bindings written so far by `body` and returns them: a converter that
    /// builds a function's body swaps in an empty one, converts, and swaps the outer back.
    pub fn swap_body(&mut self, body: String) -> String {
        std::mem::replace(&mut self.body, body)
    }

    /// The model's default-domain opset.
    pub fn opset(&self) -> i64 {
        self.opset
    }

    /// A tensor known at import time, named after `node`'s first output (a `Constant`).
    pub fn constant_output(&mut self, node: &Node, c: Const) -> Value {
        self.constant(&node.name_hint(), c)
    }
}

/// The dtype and shape a graph input or output declares.
fn declared_type(v: &ValueInfoProto) -> Result<(DType, Dims), ImportError> {
    let bad = |message: String| ImportError::Value { name: v.name.clone(), message };
    let Some(TypeValue::TensorType(t)) = v.type_.as_ref().and_then(|t| t.value.as_ref()) else {
        return Err(bad("only tensor values are supported (not sequences, maps or optionals)".into()));
    };
    let dtype = dtype::from_onnx(t.elem_type).map_err(bad)?;
    let shape = t.shape.as_ref().ok_or_else(|| bad("the value declares no shape".into()))?;
    let dims: Dims = shape
        .dim
        .iter()
        .map(|d| match d.value {
            Some(DimValue::DimValue(n)) => Some(n),
            _ => None,
        })
        .collect();
    element_count(&dims).map_err(bad)?;
    Ok((dtype, dims))
}

/// The nodes of `graph` in an order where every node comes after the nodes it reads
/// (Kahn's algorithm, smallest index first, so a sorted graph keeps its order).
fn dependency_order(graph: &GraphProto) -> Result<Vec<usize>, ImportError> {
    let mut producer = HashMap::new();
    for (i, node) in graph.node.iter().enumerate() {
        for out in node.output.iter().filter(|o| !o.is_empty()) {
            if producer.insert(out.as_str(), i).is_some() {
                return Err(ImportError::Value {
                    name: out.clone(),
                    message: "is the output of two nodes".into(),
                });
            }
        }
    }
    let mut waiting = vec![0usize; graph.node.len()];
    let mut readers = vec![vec![]; graph.node.len()];
    for (i, node) in graph.node.iter().enumerate() {
        let deps: HashSet<usize> =
            node.input.iter().filter_map(|n| producer.get(n.as_str()).copied()).collect();
        waiting[i] = deps.len();
        for d in deps {
            readers[d].push(i);
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..graph.node.len()).filter(|&i| waiting[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(graph.node.len());
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        for &r in &readers[i] {
            waiting[r] -= 1;
            if waiting[r] == 0 {
                ready.push(Reverse(r));
            }
        }
    }
    if order.len() < graph.node.len() {
        let stuck: Vec<String> = (0..graph.node.len())
            .filter(|&i| waiting[i] > 0)
            .take(10)
            .map(|i| format!("`{}`", label(graph, i)))
            .collect();
        return Err(ImportError::Cycle(stuck.join(", ")));
    }
    Ok(order)
}

/// A node's name for messages: its `name`, or `#index` when it has none.
fn label(graph: &GraphProto, i: usize) -> String {
    let name = &graph.node[i].name;
    if name.is_empty() {
        format!("#{i}")
    } else {
        name.clone()
    }
}

/// One error listing every operator the importer does not convert, with its nodes.
fn check_supported(graph: &GraphProto) -> Result<(), ImportError> {
    let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    find_unsupported(graph, &mut missing);
    if missing.is_empty() {
        return Ok(());
    }
    let list: Vec<String> =
        missing.into_iter().map(|(op, nodes)| format!("{op} (node {})", nodes.join(", "))).collect();
    Err(ImportError::Unsupported(list.join("; ")))
}

/// Adds the unsupported operators of `graph` and its subgraphs to `missing`, with their nodes.
/// (rust-protobuf's recursion limit bounds how deep subgraphs nest.)
fn find_unsupported(graph: &GraphProto, missing: &mut BTreeMap<String, Vec<String>>) {
    for (i, node) in graph.node.iter().enumerate() {
        for a in &node.attribute {
            a.g.as_ref().into_iter().chain(&a.graphs).for_each(|g| find_unsupported(g, missing));
        }
        let default_domain = node.domain.is_empty() || node.domain == "ai.onnx";
        if !default_domain || ops::converter(&node.op_type).is_none() {
            let op = if default_domain {
                node.op_type.clone()
            } else {
                format!("{}::{}", node.domain, node.op_type)
            };
            missing.entry(op).or_default().push(format!("`{}`", label(graph, i)));
        }
    }
}

/// Converts `graph` (read under default-domain opset `opset`) to a Relay module and weights.
pub fn convert(graph: &GraphProto, opset: i64) -> Result<Imported, ImportError> {
    check_supported(graph)?;
    let mut cx = Converter {
        depth: 0,
        opset,
        values: HashMap::new(),
        taken: HashSet::new(),
        weights: BTreeMap::new(),
        body: String::new(),
    };
    let initializers: HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let mut params = vec![];
    let mut inputs = vec![];
    for v in graph.input.iter().filter(|v| !initializers.contains(v.name.as_str())) {
        let (dtype, dims) = declared_type(v)?;
        let ident = cx.fresh(&v.name);
        params.push(format!("%{ident}: {}", shape::tensor_type(dtype, &dims)));
        inputs.push(ident.clone());
        cx.values.insert(v.name.clone(), Value::new(format!("%{ident}"), dtype, dims));
    }
    let results = cx.graph(graph)?;
    let mut weights: Vec<(String, (WeightOrder, Rc<Const>))> = cx.weights.into_iter().collect();
    weights.sort_by_key(|(_, (order, _))| *order);
    for (ident, (_, c)) in &weights {
        let dims: Dims = c.dims.iter().map(|&d| Some(d)).collect();
        params.push(format!("%{ident}: {}", shape::tensor_type(c.dtype, &dims)));
    }
    let text = format!(
        "#[version = \"0.0.5\"]\ndef @main({}) {{\n{}  {}\n}}\n",
        params.join(",\n          "),
        cx.body,
        result_expr(&results)
    );
    let weights = write_weights(&weights)?;
    Ok(Imported { text, weights, inputs })
}

/// The expression of a graph's results: its one output, or a tuple of them.
pub fn result_expr(results: &[Value]) -> String {
    match results {
        [one] => one.expr.clone(),
        _ => format!("({})", results.iter().map(|v| v.expr.as_str()).collect::<Vec<_>>().join(", ")),
    }
}

impl Converter {
    /// Converts `graph`'s initializers and nodes (in dependency order) into bindings, and
    /// returns its outputs.
    fn graph(&mut self, graph: &GraphProto) -> Result<Vec<Value>, ImportError> {
        for t in &graph.initializer {
            let c = Const::from_proto(t)
                .map_err(|message| ImportError::Value { name: t.name.clone(), message })?;
            let v = self.constant(&t.name, c);
            self.values.insert(t.name.clone(), v);
        }
        for i in dependency_order(graph)? {
            let node = Node { proto: &graph.node[i], label: label(graph, i) };
            let convert = ops::converter(&node.proto.op_type).ok_or_else(|| node.error("unsupported"))?;
            let outputs = self.convert_folding(&node, convert)?;
            if node.used_outputs() > outputs.len() {
                return Err(node.error(format!(
                    "only the first {} output(s) are supported, and output {} is used",
                    outputs.len(),
                    node.used_outputs() - 1
                )));
            }
            for (name, value) in node.proto.output.iter().zip(outputs) {
                if name.is_empty() {
                    continue;
                }
                let plain = value.constant.is_some() || is_variable(&value.expr);
                let value = if plain { value } else { self.bind(name, value) };
                self.values.insert(name.clone(), value);
            }
        }
        let mut results = vec![];
        for out in &graph.output {
            let v = self.values.get(&out.name).cloned().ok_or_else(|| ImportError::Value {
                name: out.name.clone(),
                message: "is a graph output that no node computes".into(),
            })?;
            if let (Some(c), Some(ident)) = (&v.constant, v.expr.strip_prefix('%')) {
                let order = self.weights.len();
                self.weights.entry(ident.to_string()).or_insert((order, c.clone()));
            }
            results.push(v);
        }
        Ok(results)
    }

    /// `convert(node)`, with the outputs folded to constants when the node's inputs are all
    /// known and its operator folds (`fold.rs`). A folded node leaves no trace: the weights
    /// its converter read and the bindings it wrote are dropped.
    ///
    /// A data-movement operator (`fold::moves_elements`) on the elements of a partly dynamic
    /// `Shape` (and constants) is converted as usual, and its output remembers its elements;
    /// when they are all known, it folds too.
    fn convert_folding(&mut self, node: &Node, convert: ops::Convert) -> Result<Vec<Value>, ImportError> {
        let values: Vec<Option<Value>> =
            (0..node.proto.input.len()).map(|i| self.lookup(node, i)).collect::<Result<_, _>>()?;
        let inputs: Vec<Option<Rc<Const>>> =
            values.iter().map(|v| v.as_ref().and_then(|v| v.constant.clone())).collect();
        let known = node.proto.input.iter().zip(&inputs).all(|(name, c)| name.is_empty() || c.is_some());
        let op = node.proto.op_type.as_str();
        let partial = !known
            && fold::moves_elements(op)
            && values.iter().flatten().any(|v| v.shape_elements.is_some())
            && values.iter().flatten().all(|v| v.constant.is_some() || v.shape_elements.is_some());
        if !(partial || known && fold::foldable(op)) {
            return convert(self, node);
        }
        let (weights, body) = (self.weights.clone(), self.body.len());
        let mut outputs = convert(self, node)?;
        let folded = if known {
            fold::evaluate(node, &inputs, &outputs)
        } else {
            fold::evaluate_elements(node, &values, &outputs).map(|elements| {
                let elements = elements?;
                let sizes = elements.iter().map(ShapeElement::known).collect::<Option<Vec<i64>>>();
                let dims = outputs[0].dims.iter().map(|d| d.unwrap_or(0)).collect();
                if sizes.is_none() {
                    outputs[0].shape_elements = Some(elements);
                }
                sizes.map(|sizes| Const::from_i64s(outputs[0].dtype, dims, &sizes))
            })
        };
        match folded.map_err(|m| node.error(m))? {
            Some(c) => {
                self.weights = weights;
                self.body.truncate(body);
                Ok(vec![self.constant(&node.name_hint(), c)])
            }
            None => Ok(outputs),
        }
    }

    /// A subgraph (a branch of `If`, a `Loop` body) with its inputs bound to `inputs`: the
    /// `let` bindings of its nodes (indented one level) and its outputs. Its nodes see the
    /// enclosing graph's values; what it defines stays inside.
    pub fn block(
        &mut self,
        graph: &GraphProto,
        inputs: Vec<Value>,
    ) -> Result<(String, Vec<Value>), ImportError> {
        if graph.input.len() != inputs.len() {
            return Err(ImportError::Value {
                name: graph.name.clone(),
                message: format!(
                    "the subgraph takes {} inputs, {} expected",
                    graph.input.len(),
                    inputs.len()
                ),
            });
        }
        if self.depth == MAX_SUBGRAPH_DEPTH {
            return Err(ImportError::Value {
                name: graph.name.clone(),
                message: format!("subgraphs nest more than {MAX_SUBGRAPH_DEPTH} deep"),
            });
        }
        let outer_body = std::mem::take(&mut self.body);
        let outer_values = self.values.clone();
        self.depth += 1;
        for (v, value) in graph.input.iter().zip(inputs) {
            self.values.insert(v.name.clone(), value);
        }
        let results = self.graph(graph);
        self.depth -= 1;
        let body = std::mem::replace(&mut self.body, outer_body);
        self.values = outer_values;
        let indented: String = body.lines().map(|l| format!("  {l}\n")).collect();
        Ok((indented, results?))
    }

    /// A fresh identifier named after `hint`, for a variable the caller binds itself.
    pub fn fresh_variable(&mut self, hint: &str) -> String {
        format!("%{}", self.fresh(hint))
    }
}

/// Whether `expr` is a bare variable (`%x`), which needs no binding of its own.
fn is_variable(expr: &str) -> bool {
    expr.strip_prefix('%').is_some_and(|s| s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// The safetensors file of `weights`, keyed by parameter name.
fn write_weights(weights: &[(String, (WeightOrder, Rc<Const>))]) -> Result<Vec<u8>, ImportError> {
    let mut views = vec![];
    for (ident, (_, c)) in weights {
        let shape = c.dims.iter().map(|&d| d as usize).collect();
        let view = safetensors::tensor::TensorView::new(dtype::safetensors_dtype(c.dtype), shape, &c.data)
            .map_err(|e| ImportError::Value { name: ident.clone(), message: e.to_string() })?;
        views.push((ident.clone(), view));
    }
    safetensors::serialize(views, None)
        .map_err(|e| ImportError::Value { name: "weights".into(), message: e.to_string() })
}
