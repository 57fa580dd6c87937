//! The recurrent operators `RNN`, `GRU` and `LSTM`, lowered to the cells of the RNN examples
//! (`examples/rnn/*.relay`): each direction's step is one local function of the state and
//! the step's input (`nn.dense` of the input and of the previous hidden state, the gates
//! split off the sum), reading the direction's weights, sliced and split once before it.
//! Over a static sequence length the cell is called once per step (unrolled, as TVM's
//! frontend does); over a length known only at run time each direction is a local function
//! that calls the cell and then itself, as `Loop` is. Forward, reverse and bidirectional; the
//! `activations` attribute, all eleven functions with their `activation_alpha`/`_beta`
//! (`activation.rs`), and `clip`; optional biases and initial
//! states; GRU's `linear_before_reset`; LSTM's peepholes `P` and `input_forget`; `layout` 1
//! (batch first);
//! `sequence_lens` (a step past a sequence's length keeps its state and outputs zeros, which
//! also makes a reverse pass start at each sequence's own end; a sequence of length 0 ends
//! in zero states, as in onnxruntime); a batch size known only at
//! run time (the zero initial states are then built from the input's first step).

mod activation;

use super::{on, tuple};
use crate::dtype;
use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;
use crate::shape::{known, tensor_type};
use activation::Activation;
use relay_devices::DType;

/// The recurrent cell of a node.
#[derive(Clone, Copy, PartialEq)]
pub enum Cell {
    /// `H = f(X W^T + H R^T + b)`.
    Rnn,
    /// Update gate `z`, reset gate `r`, candidate `h~`; `linear_before_reset` applies the reset
    /// gate after the recurrent product instead of before it.
    Gru { linear_before_reset: bool },
    /// Input, output, forget gates and the cell candidate, with a cell state `C`.
    Lstm,
}

impl Cell {
    /// The ONNX default `activations` of one direction.
    fn default_activations(self) -> &'static [&'static str] {
        match self {
            Cell::Rnn => &["Tanh"],
            Cell::Gru { .. } => &["Sigmoid", "Tanh"],
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
}

/// What one direction reads: its weights, biases and activations.
struct Direction {
    w: String,
    r: String,
    /// Input and recurrent biases (`Wb`, `Rb`), each of `gates * hidden` elements.
    bias: Option<(String, String)>,
    /// One per activation function the cell uses.
    activations: Vec<Activation>,
    /// LSTM's peephole weights, a tuple `(P_i, P_o, P_f)` of `[hidden]` vectors.
    peepholes: Option<String>,
    /// GRU without `linear_before_reset`: the candidate gate's recurrent weights `R_h` and
    /// bias `Rb_h`, applied to `r (.) H` rather than to `H`.
    reset: Option<(String, Option<String>)>,
}

/// The state of one conversion: the node, its dtype, and the converter binding each step.
struct Unroll<'a, 'n> {
    cx: &'a mut Converter,
    node: &'a Node<'n>,
    dtype: DType,
    /// Pre-activation clip, if the node sets `clip`.
    clip: Option<f32>,
    /// LSTM's `input_forget`: the forget gate is `1 - i`, coupled to the input gate.
    input_forget: bool,
}

impl Unroll<'_, '_> {
    /// Binds `expr` to a fresh variable and returns it.
    fn bind(&mut self, hint: &str, expr: String) -> String {
        self.cx.bind(&format!("{}_{hint}", self.node.name_hint()), Value::new(expr, self.dtype, vec![])).expr
    }

    /// Activation `f` of `x`, clipped first when the node says so.
    fn act(&mut self, f: Activation, x: &str) -> String {
        let x = match self.clip {
            Some(c) => format!("clip({x}, a_min={:?}, a_max={:?})", -f64::from(c), f64::from(c)),
            None => x.to_string(),
        };
        let x = if f.reads_twice() { self.bind("pre", x) } else { x };
        f.apply(&x, self.dtype)
    }

    /// `nn.dense(x, w)` plus `b` if given.
    fn affine(&mut self, hint: &str, x: &str, w: &str, b: Option<&str>) -> String {
        let dense = format!("nn.dense({x}, {w})");
        let expr = match b {
            Some(b) => format!("nn.bias_add({dense}, {b})"),
            None => dense,
        };
        self.bind(hint, expr)
    }

    /// One step of `cell` from hidden state `h` (and cell state `c`): the new `(h, c)`.
    ///
    /// # Errors
    /// An LSTM step without a cell state (the caller always gives one).
    fn step(
        &mut self,
        cell: Cell,
        d: &Direction,
        x: &str,
        h: &str,
        c: Option<&str>,
    ) -> Result<(String, Option<String>), ImportError> {
        let (wb, rb) = match &d.bias {
            Some((wb, rb)) => (Some(wb.as_str()), Some(rb.as_str())),
            None => (None, None),
        };
        let xw = self.affine("xw", x, &d.w, wb);
        let hr = self.affine("hr", h, &d.r, rb);
        let a = d.activations.as_slice();
        match cell {
            Cell::Rnn => {
                let h = self.act(a[0], &format!("add({xw}, {hr})"));
                Ok((self.bind("h", h), None))
            }
            Cell::Lstm => {
                let g = self.bind("gates", format!("split(add({xw}, {hr}), indices_or_sections=4, axis=1)"));
                let c_prev = c.ok_or_else(|| self.node.error("an LSTM step needs a cell state"))?;
                // Peepholes add `P (.) C` to a gate's input: the previous cell state for the
                // input and forget gates, the new one for the output gate.
                let peep = |gate: usize, part: usize, state: &str| match &d.peepholes {
                    Some(p) => format!("add({g}.{gate}, multiply({p}.{part}, {state}))"),
                    None => format!("{g}.{gate}"),
                };
                let i = self.act(a[0], &peep(0, 0, c_prev));
                let i = self.bind("i", i);
                let f = if self.input_forget {
                    format!("subtract({}, {i})", dtype::literal(self.dtype, 1.0))
                } else {
                    self.act(a[0], &peep(2, 2, c_prev))
                };
                let f = self.bind("f", f);
                let cand = self.act(a[1], &format!("{g}.3"));
                let cand = self.bind("c_candidate", cand);
                let c = self.bind("c", format!("add(multiply({f}, {c_prev}), multiply({i}, {cand}))"));
                let o = self.act(a[0], &peep(1, 1, &c));
                let o = self.bind("o", o);
                // `clip` bounds the gates' inputs, not the cell state (as onnxruntime).
                let h = self.bind("h", format!("multiply({o}, {})", a[2].apply(&c, self.dtype)));
                Ok((h, Some(c)))
            }
            Cell::Gru { linear_before_reset } => {
                let xs = self.bind("x_gates", format!("split({xw}, indices_or_sections=3, axis=1)"));
                let hs = self.bind("h_gates", format!("split({hr}, indices_or_sections=3, axis=1)"));
                let z = self.act(a[0], &format!("add({xs}.0, {hs}.0)"));
                let z = self.bind("z", z);
                let r = self.act(a[0], &format!("add({xs}.1, {hs}.1)"));
                let r = self.bind("r", r);
                let recurrent = match (linear_before_reset, &d.reset) {
                    (false, Some((rw, rbh))) => {
                        // (r * H) R_h^T + Rb_h: the recurrent weights and bias of the third gate.
                        let reset = format!("multiply({r}, {h})");
                        self.affine("reset_h", &reset, rw, rbh.as_deref())
                    }
                    _ => format!("multiply({r}, {hs}.2)"),
                };
                let cand = self.act(a[1], &format!("add({xs}.2, {recurrent})"));
                let cand = self.bind("h_candidate", cand);
                let one = dtype::literal(self.dtype, 1.0);
                let h = format!("add(multiply(subtract({one}, {z}), {cand}), multiply({z}, {h}))");
                Ok((self.bind("h", h), None))
            }
        }
    }

    /// The cell of direction `d` as a local function, in the form of the RNN examples' `%cell`:
    /// `fn (%h: state, %x: input) -> state` (LSTM: `fn (%state: (state, state), %x: input)`,
    /// the hidden and cell states), `state` and `input` being the Relay types of `[batch,
    /// hidden]` and `[batch, input]` tensors. Returns the function's variable.
    ///
    /// # Errors
    /// None in practice (an LSTM step always gets a cell state).
    fn cell_function(
        &mut self,
        cell: Cell,
        d: &Direction,
        state: &str,
        input: &str,
    ) -> Result<String, ImportError> {
        let f = self.cx.fresh_variable(&format!("{}_cell", self.node.name_hint()));
        let x = self.cx.fresh_variable("x");
        let (param, h, c, ty) = if cell == Cell::Lstm {
            let s = self.cx.fresh_variable("state");
            let ty = format!("({state}, {state})");
            (format!("{s}: {ty}"), format!("{s}.0"), Some(format!("{s}.1")), ty)
        } else {
            let h = self.cx.fresh_variable("h");
            (format!("{h}: {state}"), h, None, state.to_string())
        };
        let outer = self.cx.swap_body(String::new());
        let stepped = self.step(cell, d, &x, &h, c.as_deref());
        let body = self.cx.swap_body(outer);
        let result = match stepped? {
            (h, Some(c)) => format!("({h}, {c})"),
            (h, None) => h,
        };
        let definition = format!(
            "fn ({param}, {x}: {input}) -> {ty} {{\n{}    {result}\n  }}",
            body.lines().map(|l| format!("  {l}\n")).collect::<String>()
        );
        self.cx.bind_as(&f, &definition);
        Ok(f)
    }

    /// A call of cell function `f` on the state `(h, c)` and the step's input `x`: the new
    /// `(h, c)`.
    fn call(&mut self, f: &str, x: &str, (h, c): (&str, Option<&str>)) -> (String, Option<String>) {
        match c {
            Some(c) => {
                // The previous call's result itself, when its state is kept whole.
                let state = match (h.strip_suffix(".0"), c.strip_suffix(".1")) {
                    (Some(a), Some(b)) if a == b => a.to_string(),
                    _ => format!("({h}, {c})"),
                };
                let s = self.bind("state", format!("{f}({state}, {x})"));
                (format!("{s}.0"), Some(format!("{s}.1")))
            }
            None => (self.bind("h", format!("{f}({h}, {x})")), None),
        }
    }

    /// One step (a call of cell function `f`), masked when `valid` (`[batch, 1]`) says which
    /// sequences are still running: past its end a sequence keeps its state and outputs
    /// `zeros`. Returns the step's output and the new `(h, c)`.
    fn masked_step(
        &mut self,
        f: &str,
        x: &str,
        (h, c): (&str, Option<&str>),
        valid: Option<&str>,
        zeros: &str,
    ) -> (String, String, Option<String>) {
        let (h_next, c_next) = self.call(f, x, (h, c));
        let Some(valid) = valid else { return (h_next.clone(), h_next, c_next) };
        let y = self.bind("y_t", format!("where({valid}, {h_next}, {zeros})"));
        let h_kept = self.bind("h_kept", format!("where({valid}, {h_next}, {h})"));
        let c_kept = match (c_next, c) {
            (Some(new), Some(old)) => Some(self.bind("c_kept", format!("where({valid}, {new}, {old})"))),
            (new, _) => new,
        };
        (y, h_kept, c_kept)
    }

    /// One direction over a sequence whose length is known only at run time: a local function
    /// of the step number, the states and the outputs so far (`[?, batch, hidden]`, grown by
    /// `concatenate`, at the front when `reverse`) that calls cell function `cell` and then
    /// itself until the sequence ends. `valid` gives the mask of step `t` (see
    /// [`Unroll::masked_step`]). Returns the outputs `Y` of the direction and the final `(h, c)`.
    fn recurrence(
        &mut self,
        cell: &str,
        r: &Recurrence,
        (h0, c0): (&str, Option<&str>),
        valid: impl Fn(&mut Self, &str) -> Option<String>,
    ) -> (String, String, Option<String>) {
        let hint = self.node.name_hint();
        let (f, t) = (self.cx.fresh_variable(&format!("{hint}_recurrence")), self.cx.fresh_variable("t"));
        let (h, ys) = (self.cx.fresh_variable("h"), self.cx.fresh_variable("ys"));
        let c = c0.map(|_| self.cx.fresh_variable("c"));
        let count = format!("take(shape_of({}, dtype=\"int64\"), {}i64)", r.x, r.time_axis);
        let outer = self.cx.swap_body(String::new());
        let at = if r.reverse { format!("subtract(subtract({count}, 1i64), {t})") } else { t.clone() };
        let x = self.bind("x", format!("take({}, {at}, axis={})", r.x, r.time_axis));
        let mask = valid(self, &at);
        let (y_t, h_next, c_next) = self.masked_step(cell, &x, (&h, c.as_deref()), mask.as_deref(), r.zeros);
        let body = self.cx.swap_body(outer);
        let state = tensor_type(self.dtype, &[r.batch, Some(r.hidden)]);
        let outputs = tensor_type(self.dtype, &[None, r.batch, Some(r.hidden)]);
        let row = format!("expand_dims({y_t}, axis=0)");
        let grown = if r.reverse { format!("({row}, {ys})") } else { format!("({ys}, {row})") };
        let mut params = vec![format!("{t}: int64"), format!("{h}: {state}")];
        let mut again = vec![format!("add({t}, 1i64)"), h_next];
        let mut done = vec![h.clone()];
        let mut types = vec![state.clone()];
        if let (Some(c), Some(c_next)) = (&c, c_next) {
            params.push(format!("{c}: {state}"));
            again.push(c_next);
            done.push(c.clone());
            types.push(state.clone());
        }
        params.push(format!("{ys}: {outputs}"));
        again.push(format!("concatenate({grown}, axis=0)"));
        done.push(ys.clone());
        types.push(outputs);
        let definition = format!(
            "fn ({}) -> {} {{\n    if (less({t}, {count})) {{\n{}      {f}({})\n    }} else {{\n      {}\n    }}\n  }}",
            params.join(", "),
            tuple(&types),
            body.lines().map(|l| format!("    {l}\n")).collect::<String>(),
            again.join(", "),
            tuple(&done)
        );
        self.cx.bind_as(&f, &definition);
        let mut start = vec!["0i64".to_string(), h0.to_string()];
        start.extend(c0.map(str::to_string));
        // No outputs yet: `[0, batch, hidden]`, the batch taken from the initial state.
        start.push(format!("strided_slice(expand_dims({h0}, axis=0), begin=[0], end=[0], axes=[0])"));
        let result = self.bind("recurrence", format!("{f}({})", start.join(", ")));
        let last = done.len() - 1;
        let c = c0.map(|_| format!("{result}.1"));
        (format!("{result}.{last}"), format!("{result}.0"), c)
    }
}

/// What a direction over a dynamic-length sequence reads: the input and its layout, and the
/// sizes of the states.
struct Recurrence<'a> {
    /// The input `X` (a variable).
    x: &'a str,
    /// Its time axis: 0, or 1 with `layout` 1.
    time_axis: usize,
    /// Whether the direction runs from the end.
    reverse: bool,
    /// The batch size, `None` when known only at run time.
    batch: Option<i64>,
    hidden: i64,
    /// A `[batch, hidden]` tensor of zeros, the output past a sequence's end.
    zeros: &'a str,
}

/// `GRU`, with its `linear_before_reset` attribute.
pub fn gru(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let linear_before_reset = node.int("linear_before_reset", 0)? != 0;
    recurrent(cx, node, Cell::Gru { linear_before_reset })
}

/// `RNN`, `GRU` or `LSTM` as `cell`: outputs `Y` (`[T, directions, batch, hidden]`), `Y_h` and,
/// for LSTM, `Y_c` (`[directions, batch, hidden]`).
pub fn recurrent(cx: &mut Converter, node: &Node, cell: Cell) -> Result<Vec<Value>, ImportError> {
    let batch_first = match node.int("layout", 0)? {
        0 => false,
        1 => true,
        other => return Err(node.error(format!("attribute `layout`: {other} is not 0 or 1"))),
    };
    let input_forget = cell == Cell::Lstm && node.int("input_forget", 0)? != 0;
    let (x, w, r) = (cx.input(node, 0)?, cx.input(node, 1)?, cx.input(node, 2)?);
    let rdims = on(node, known(&r.dims, "the recurrent weights R"))?;
    let (&[a, b, _], &[_, _, hidden]) = (x.dims.as_slice(), rdims.as_slice()) else {
        return Err(node.error("X and R must have rank 3"));
    };
    // A static sequence unrolls; one known only at run time becomes a local function that
    // calls itself once per step.
    let (steps, batch) = if batch_first { (b, a) } else { (a, b) };
    if steps.is_some_and(|t| t < 1) {
        return Err(node.error("the sequence is empty"));
    }
    let directions: &[bool] = match node.string("direction", "forward")?.as_str() {
        "forward" => &[false],
        "reverse" => &[true],
        "bidirectional" => &[false, true],
        other => return Err(node.error(format!("attribute `direction`: `{other}` is not supported"))),
    };
    let per = cell.default_activations().len();
    let names = node.strings("activations")?;
    if let Some(n) = &names {
        if n.len() != per * directions.len() {
            return Err(
                node.error(format!("attribute `activations` must name {} functions", per * directions.len()))
            );
        }
    }
    let names: Vec<&str> = match &names {
        Some(n) => n.iter().map(String::as_str).collect(),
        None => directions.iter().flat_map(|_| cell.default_activations().iter().copied()).collect(),
    };
    let (alphas, betas) = (node.floats("activation_alpha")?, node.floats("activation_beta")?);
    let functions = Activation::parse(node, &names, &alphas.unwrap_or_default(), &betas.unwrap_or_default())?;
    let (bias, lens) = (cx.optional_input(node, 3)?, cx.optional_input(node, 4)?);
    let (h0, c0) = (cx.optional_input(node, 5)?, cx.optional_input(node, 6)?);
    let peepholes = if cell == Cell::Lstm { cx.optional_input(node, 7)? } else { None };
    let clip =
        node.proto.attribute.iter().any(|a| a.name == "clip").then(|| node.float("clip", 0.0)).transpose()?;
    let dtype = x.dtype;
    let state_type = tensor_type(dtype, &[batch, Some(hidden)]);
    let input_type = tensor_type(dtype, &[batch, x.dims[2]]);
    let mut u = Unroll { cx, node, dtype, clip, input_forget };
    // With `layout` 1, X is `[batch, T, input]`, the states `[batch, directions, hidden]`.
    let (time_axis, direction_axis) = if batch_first { (1, 1) } else { (0, 0) };
    let xs: Vec<String> = (0..steps.unwrap_or(0))
        .map(|t| u.bind("x", format!("take({}, {t}i64, axis={time_axis})", x.expr)))
        .collect();
    // `[batch, hidden]` zeros: the initial states by default, the output past a sequence's
    // end. A batch known only at run time comes from the input's first step (`[batch, 1]`
    // zeros broadcast against `[1, hidden]` ones).
    let zeros = match batch {
        Some(batch) => format!("zeros(shape=[{batch}, {hidden}], dtype=\"{dtype}\")"),
        None => {
            let first = format!("take({}, 0i64, axis={time_axis})", x.expr);
            let column = format!("zeros_like(sum({first}, axis=[1], keepdims=True))");
            u.bind("zeros", format!("add({column}, zeros(shape=[1, {hidden}], dtype=\"{dtype}\"))"))
        }
    };
    // Per step, `[batch, 1]`: whether the step is within each sequence's length.
    let valid = |u: &mut Unroll, t: &str| {
        lens.as_ref().map(|l| u.bind("valid", format!("expand_dims(less({t}, {}), axis=1)", l.expr)))
    };
    let masks: Vec<Option<String>> = (0..xs.len())
        .map(|t| valid(&mut u, &dtype::literal(lens.as_ref().map_or(DType::I64, |l| l.dtype), t as f64)))
        .collect();
    // `[batch, 1]`: whether each sequence has a step at all. One of length 0 ends in zero
    // states, as onnxruntime's RNN, GRU and LSTM all give, not in the initial states that
    // the per-step mask alone would keep.
    let started = lens.as_ref().map(|l| {
        let zero = dtype::literal(l.dtype, 0.0);
        u.bind("started", format!("expand_dims(greater({}, {zero}), axis=1)", l.expr))
    });
    let (mut ys, mut hs, mut cs) = (vec![], vec![], vec![]);
    for (k, &reverse) in directions.iter().enumerate() {
        let activations = functions[k * per..(k + 1) * per].to_vec();
        let bias = match &bias {
            Some(b) => {
                let parts =
                    u.bind("bias", format!("split(take({}, {k}i64, axis=0), indices_or_sections=2)", b.expr));
                Some((format!("{parts}.0"), format!("{parts}.1")))
            }
            None => None,
        };
        let peepholes = peepholes.as_ref().map(|p| {
            u.bind("peepholes", format!("split(take({}, {k}i64, axis=0), indices_or_sections=3)", p.expr))
        });
        let r_k = u.bind("r", format!("take({}, {k}i64, axis=0)", r.expr));
        let reset = match cell {
            Cell::Gru { linear_before_reset: false } => {
                let rw = u.bind("r_weights", format!("split({r_k}, indices_or_sections=3, axis=0)"));
                let rbh = bias.as_ref().map(|(_, rb)| {
                    format!("{}.2", u.bind("rb_gates", format!("split({rb}, indices_or_sections=3, axis=0)")))
                });
                Some((format!("{rw}.2"), rbh))
            }
            _ => None,
        };
        let d = Direction {
            w: u.bind("w", format!("take({}, {k}i64, axis=0)", w.expr)),
            r: r_k,
            bias,
            activations,
            peepholes,
            reset,
        };
        let f = u.cell_function(cell, &d, &state_type, &input_type)?;
        let initial = |v: &Option<Value>| {
            v.as_ref().map_or(zeros.clone(), |v| format!("take({}, {k}i64, axis={direction_axis})", v.expr))
        };
        let (h, c) = (initial(&h0), (cell == Cell::Lstm).then(|| initial(&c0)));
        let (y, h, c) = match steps {
            Some(_) => {
                let (mut h, mut c) = (h, c);
                let mut outputs = vec![String::new(); xs.len()];
                let order: Vec<usize> =
                    if reverse { (0..xs.len()).rev().collect() } else { (0..xs.len()).collect() };
                for t in order {
                    let (y_t, h_next, c_next) =
                        u.masked_step(&f, &xs[t], (&h, c.as_deref()), masks[t].as_deref(), &zeros);
                    outputs[t] = y_t;
                    (h, c) = (h_next, c_next);
                }
                (u.bind("y", format!("stack({}, axis=0)", tuple(&outputs))), h, c)
            }
            None => {
                let step = Recurrence { x: &x.expr, time_axis, reverse, batch, hidden, zeros: &zeros };
                u.recurrence(&f, &step, (&h, c.as_deref()), |u, t| {
                    let t =
                        lens.as_ref().map_or(t.to_string(), |l| format!("cast({t}, dtype=\"{}\")", l.dtype));
                    valid(u, &t)
                })
            }
        };
        let (h, c) = match &started {
            Some(started) => {
                let h = u.bind("h_last", format!("where({started}, {h}, {zeros})"));
                (h, c.map(|c| u.bind("c_last", format!("where({started}, {c}, {zeros})"))))
            }
            None => (h, c),
        };
        ys.push(y);
        hs.push(h);
        cs.extend(c);
    }
    let nd = Some(directions.len() as i64);
    let (b, hdim, t) = (batch, Some(hidden), steps);
    let state = |v: &[String]| {
        let dims = if batch_first { vec![b, nd, hdim] } else { vec![nd, b, hdim] };
        Value::new(format!("stack({}, axis={direction_axis})", tuple(v)), dtype, dims)
    };
    let y = format!("stack({}, axis=1)", tuple(&ys));
    let y = if batch_first {
        Value::new(format!("transpose({y}, axes=[2, 0, 1, 3])"), dtype, vec![b, t, nd, hdim])
    } else {
        Value::new(y, dtype, vec![t, nd, b, hdim])
    };
    let mut results = vec![y, state(&hs)];
    if cell == Cell::Lstm {
        results.push(state(&cs));
    }
    Ok(results)
}
