//! Random fusible expression DAGs (elementwise and broadcasting ops over inputs of
//! broadcast-compatible shapes, sometimes ending in a reduction or a softmax), written as
//! Relay text, run at opt-level 0 (reference kernels, one op at a time) and opt-level 2
//! (FuseOps + JIT): the results must agree within [`TOL`] relative (absolute near zero).
//!
//! Random recurrent cells exercise the fusion rules beyond TVM's: a dense layer sliced into
//! gates (the anchor joins the gate arithmetic), several results of one elementwise DAG that
//! also feed each other (multi-output fusion), and, half the time, the cell as a local
//! function called twice (inlined).

use common::Lcg;
use proptest::prelude::*;
use relay::Program;
use serde_json::Value as Json;

mod common;

/// JIT float tolerance (approximated `tanh`/`sigmoid`, FMA contraction, reassociated sums).
const TOL: f64 = 1e-4;

/// A program with `inputs` parameters and `nodes` operations, and its arguments.
fn program(seed: u64, inputs: usize, nodes: usize) -> (String, Vec<Json>) {
    let mut rng = Lcg(seed);
    let rank = 1 + rng.below(3);
    let out: Vec<usize> = (0..rank).map(|_| 1 + rng.below(4)).collect();
    let mut params = vec![];
    let mut args = vec![];
    for i in 0..inputs {
        // A suffix of the output shape with some dimensions broadcast.
        let skip = rng.below(rank);
        let shape: Vec<usize> = out[skip..].iter().map(|&d| if rng.next() < 0.3 { 1 } else { d }).collect();
        let n: usize = shape.iter().product();
        let data: Vec<f64> = (0..n).map(|_| ((rng.next() * 4.0 - 2.0) * 64.0).round() / 64.0).collect();
        let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
        let ty = if shape.is_empty() {
            "float32".to_string()
        } else {
            format!("Tensor[({},), float32]", dims.join(", "))
        };
        params.push(format!("%x{i}: {ty}"));
        args.push(serde_json::json!({"dtype": "float32", "shape": shape, "data": data}));
    }
    let mut values: Vec<String> = (0..inputs).map(|i| format!("%x{i}")).collect();
    let mut body = String::new();
    for n in 0..nodes {
        let a = values[rng.below(values.len())].clone();
        let b = values[rng.below(values.len())].clone();
        let expr = match rng.below(9) {
            0 => format!("tanh({a})"),
            1 => format!("sigmoid({a})"),
            2 => format!("negative({a})"),
            3 => format!("nn.relu({a})"),
            4 => format!("add({a}, {b})"),
            5 => format!("subtract({a}, {b})"),
            6 => format!("multiply({a}, {b})"),
            7 => format!("maximum({a}, {b})"),
            _ => format!("clip({a}, a_min=-1f, a_max=1.5f)"),
        };
        body.push_str(&format!("  let %v{n} = {expr};\n"));
        values.push(format!("%v{n}"));
    }
    // Join every value so nothing is dead, then maybe reduce.
    let mut result = values[inputs..].first().cloned().unwrap_or_else(|| "%x0".into());
    for v in values.iter().skip(inputs + 1) {
        result = format!("add({result}, {v})");
    }
    let result = match rng.below(4) {
        0 => format!("sum({result}, axis=[-1])"),
        1 => format!("nn.softmax(add({result}, %x0))"),
        _ => result,
    };
    (format!("def @main({}) {{\n{body}  {result}\n}}\n", params.join(", ")), args)
}

/// A random cell `@main(%x: (1, K), %w: (3H, K), %b: (3H), %c: (1, H))`: gates sliced from
/// `bias_add(dense(x, w), b)`, an elementwise DAG over them and `%c`, and a tuple of two or
/// three of its values (the first the next `%c`); with `inline`, the cell is a local
/// function run twice, the second time on the first's state.
fn cell_program(seed: u64, nodes: usize, inline: bool) -> (String, Vec<Json>) {
    let mut rng = Lcg(seed);
    let (h, k) = (2 + rng.below(5), 1 + rng.below(5));
    let mut tensor = |shape: Vec<usize>| {
        let n: usize = shape.iter().product();
        let data: Vec<f64> = (0..n).map(|_| ((rng.next() * 2.0 - 1.0) * 64.0).round() / 64.0).collect();
        serde_json::json!({"dtype": "float32", "shape": shape, "data": data})
    };
    let args = vec![tensor(vec![1, k]), tensor(vec![3 * h, k]), tensor(vec![3 * h]), tensor(vec![1, h])];
    let mut values: Vec<String> = (0..3)
        .map(|g| format!("strided_slice(%g, begin=[{}], end=[{}], axes=[1])", g * h, (g + 1) * h))
        .chain(["%s".to_string()])
        .collect();
    let mut body = "  let %g = nn.bias_add(nn.dense(%a, %w), %b);\n".to_string();
    for n in 0..nodes {
        let a = values[rng.below(values.len())].clone();
        let b = values[rng.below(values.len())].clone();
        let expr = match rng.below(6) {
            0 => format!("tanh({a})"),
            1 => format!("sigmoid({a})"),
            2 => format!("add({a}, {b})"),
            3 => format!("multiply({a}, {b})"),
            4 => format!("subtract({a}, {b})"),
            _ => format!("maximum({a}, {b})"),
        };
        body.push_str(&format!("  let %v{n} = {expr};\n"));
        values.push(format!("%v{n}"));
    }
    let computed = &values[4..];
    let outputs: Vec<&str> =
        (0..2 + rng.below(2)).map(|_| computed[rng.below(computed.len())].as_str()).collect();
    let out_ty = vec![format!("Tensor[(1, {h}), float32]"); outputs.len()].join(", ");
    let result = format!("({})", outputs.join(", "));
    let params = format!(
        "%x: Tensor[(1, {k}), float32], %w: Tensor[({}, {k}), float32], %b: Tensor[({}), float32], %c: Tensor[(1, {h}), float32]",
        3 * h,
        3 * h
    );
    let src = if inline {
        format!(
            "def @main({params}) {{\n  let %cell = fn (%a: Tensor[(1, {k}), float32], %s: Tensor[(1, {h}), float32]) -> ({out_ty}) {{\n{body}  {result}\n  }};\n  let %first = %cell(%x, %c);\n  (%first, %cell(%x, %first.0))\n}}\n"
        )
    } else {
        format!("def @main({params}) {{\n  let %a = %x;\n  let %s = %c;\n{body}  {result}\n}}\n")
    };
    (src, args)
}

/// The elements of `@main`'s result (a tensor, or tuples of them), flat and row-major.
fn run(program: &Program, args: &[Json]) -> Result<Vec<f64>, String> {
    let json = common::run_main(program, args)?;
    let mut flat = vec![];
    let mut stack = vec![json];
    while let Some(j) = stack.pop() {
        match j {
            Json::Object(mut fields) => stack.push(fields.remove("data").unwrap_or(Json::Null)),
            Json::Array(xs) => stack.extend(xs.into_iter().rev()),
            Json::Number(n) => flat.push(n.as_f64().unwrap_or(f64::NAN)),
            other => return Err(format!("unexpected {other}")),
        }
    }
    Ok(flat)
}

/// Runs `src` at opt-levels 0 and 2 and compares; returns the fused program.
fn agree(src: &str, args: &[Json]) -> Result<Program, TestCaseError> {
    let reference = Program::builder()
        .source("dag.relay", src)
        .opt_level(0)
        .build()
        .map_err(|e| TestCaseError::fail(format!("{src}\n{e}")))?;
    let fused = Program::builder()
        .source("dag.relay", src)
        .opt_level(2)
        .build()
        .map_err(|e| TestCaseError::fail(format!("{src}\n{e}")))?;
    let want = run(&reference, args).map_err(TestCaseError::fail)?;
    let got = run(&fused, args).map_err(TestCaseError::fail)?;
    prop_assert_eq!(want.len(), got.len());
    for (w, g) in want.iter().zip(&got) {
        prop_assert!(
            (w - g).abs() <= TOL * w.abs().max(g.abs()).max(1.0),
            "{}\nreference {:?}\nfused     {:?}",
            src,
            want,
            got
        );
    }
    Ok(fused)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn fused_dags_match_op_by_op(seed in any::<u64>(), inputs in 1usize..4, nodes in 1usize..9) {
        let (src, args) = program(seed, inputs, nodes);
        let fused = agree(&src, &args)?;
        // The elementwise DAG is one kernel (a reduction joins it; TVM keeps elementwise
        // producers out of a softmax anchor, which is a second kernel).
        let kernels = fused.executable().kernels.len();
        prop_assert!(kernels <= 2, "{} kernels:\n{}", kernels, src);
        prop_assert!(fused.executable().kernels.iter().all(|k| k.kernel.is_some()));
    }

    #[test]
    fn fused_cells_match_op_by_op(seed in any::<u64>(), nodes in 1usize..8, inline in any::<bool>()) {
        let (src, args) = cell_program(seed, nodes, inline);
        agree(&src, &args)?;
    }
}
