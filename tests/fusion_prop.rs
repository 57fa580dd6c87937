//! Random fusible expression DAGs (elementwise and broadcasting ops over inputs of
//! broadcast-compatible shapes, sometimes ending in a reduction or a softmax), written as
//! Relay text, run at opt-level 0 (reference kernels, one op at a time) and opt-level 2
//! (FuseOps + JIT): the results must agree within [`TOL`] relative (absolute near zero).

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

/// The elements of `@main`'s tensor result, flat and row-major.
fn run(program: &Program, args: &[Json]) -> Result<Vec<f64>, String> {
    let json = common::run_main(program, args)?;
    let data = json.get("data").cloned().unwrap_or(json);
    let mut flat = vec![];
    let mut stack = vec![data];
    while let Some(j) = stack.pop() {
        match j {
            Json::Array(xs) => stack.extend(xs.into_iter().rev()),
            Json::Number(n) => flat.push(n.as_f64().unwrap_or(f64::NAN)),
            other => return Err(format!("unexpected {other}")),
        }
    }
    Ok(flat)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn fused_dags_match_op_by_op(seed in any::<u64>(), inputs in 1usize..4, nodes in 1usize..9) {
        let (src, args) = program(seed, inputs, nodes);
        let reference = Program::compile_with("dag.relay", &src, 0).map_err(|e| TestCaseError::fail(format!("{src}\n{e}")))?;
        let fused = Program::compile_with("dag.relay", &src, 2).map_err(|e| TestCaseError::fail(format!("{src}\n{e}")))?;
        let want = run(&reference, &args).map_err(TestCaseError::fail)?;
        let got = run(&fused, &args).map_err(TestCaseError::fail)?;
        prop_assert_eq!(want.len(), got.len());
        for (w, g) in want.iter().zip(&got) {
            prop_assert!((w - g).abs() <= TOL * w.abs().max(g.abs()).max(1.0), "{}\nreference {:?}\nfused     {:?}", src, want, got);
        }
        // The elementwise DAG is one kernel (a reduction joins it; TVM keeps elementwise
        // producers out of a softmax anchor, which is a second kernel).
        let kernels = fused.executable().kernels.len();
        prop_assert!(kernels <= 2, "{} kernels:\n{}", kernels, src);
        prop_assert!(fused.executable().kernels.iter().all(|k| k.kernel.is_some()));
    }
}
