//! Soundness of every registered pass: random well-typed programs (tensors and scalars,
//! `if`, `match` on Option and List, closures, references, prelude calls over lists, loops on
//! recursive closures with known and dynamic trip counts, and the
//! shapes each optimisation looks for: constant subexpressions, duplicates, unused lets,
//! reshape/transpose/cast chains, batch norm and dropout, scales around dense and conv2d, parallel dense calls,
//! row-wise chains over lookups in constant tables) run on the reference interpreter
//! before and after each pass (with the passes it requires) alone; the results must agree
//! (within [`TOL`]: `SimplifyInference` reassociates batch-norm arithmetic) and `@main` must
//! keep its type. The transformed module is printed and read back, so every pass's output
//! also parses and type-checks.

use common::Lcg;
use proptest::prelude::*;
use relay::interp::Interpreter;
use relay_compiler::pass::{registry, resolve, run_passes, PassContext, Silent};
use relay_compiler::syntax::printer::{print_module, print_type};
use serde_json::Value as Json;

mod common;

/// Relative tolerance (absolute near zero) on floats.
const TOL: f64 = 1e-5;

const T: &str = "Tensor[(2, 3), float32]";

/// A random program `@main(%x: T, %y: T, %n: int32)`.
fn program(seed: u64, lets: usize) -> String {
    let mut rng = Lcg(seed);
    let mut tensors: Vec<String> = vec!["%x".into(), "%y".into()];
    let mut scalars: Vec<String> = vec!["%n".into(), "3".into()];
    let mut body = String::new();
    for i in 0..lets {
        let a = tensors[rng.below(tensors.len())].clone();
        let b = tensors[rng.below(tensors.len())].clone();
        let s = scalars[rng.below(scalars.len())].clone();
        let (expr, is_tensor) = match rng.below(29) {
            0 => (format!("tanh({a})"), true),
            1 => (format!("add({a}, {b})"), true),
            2 => (format!("multiply({a}, 1f)"), true),
            3 => (format!("add(0f, {a})"), true),
            4 => (format!("reshape(reshape({a}, newshape=[3, 2]), newshape=[2, 3])"), true),
            5 => (format!("transpose(transpose({a}, axes=[1, 0]))"), true),
            6 => (format!("cast(cast({a}, dtype=\"float64\"), dtype=\"float32\")"), true),
            7 => (format!("add({a}, add(ones(shape=[2, 3], dtype=\"float32\"), 1f))"), true),
            8 => (
                format!(
                    "reshape(nn.batch_norm(reshape({a}, newshape=[1, 2, 3]), full(2f, shape=[2], dtype=\"float32\"), \
                     ones(shape=[2], dtype=\"float32\"), zeros(shape=[2], dtype=\"float32\"), \
                     full(4f, shape=[2], dtype=\"float32\")).0, newshape=[2, 3])"
                ),
                true,
            ),
            9 => (format!("nn.dropout({a}).0"), true),
            10 => (format!("if (less({s}, 2)) {{ {a} }} else {{ negative({b}) }}"), true),
            11 => (format!("if (less(1, 2)) {{ {a} }} else {{ {b} }}"), true),
            12 => (
                format!("match (if (less({s}, 1)) {{ Some({a}) }} else {{ None }}) {{ Some(%v{i}) => %v{i}, None => {b} }}"),
                true,
            ),
            13 => (format!("match (Cons({a}, Nil)) {{ Cons(%h{i}, _) => %h{i}, Nil => {b} }}"), true),
            14 => (format!("(fn (%p{i}: {T}) {{ multiply(%p{i}, {b}) }})({a})"), true),
            15 => (
                format!("(let %r{i} = ref({a}); let %w{i} = ref_write(%r{i}, tanh({b})); ref_read(%r{i}))"),
                true,
            ),
            16 => (
                format!(
                    "@foldl(fn (%acc{i}: {T}, %e{i}: {T}) {{ add(%acc{i}, %e{i}) }}, {a}, @map(fn (%m{i}: {T}) {{ negative(%m{i}) }}, Cons({a}, Cons({b}, Nil))))"
                ),
                true,
            ),
            17 => (format!("sum({a})"), false),
            18 => (format!("add({s}, multiply(2, 3))"), false),
            19 => (format!("if (less({s}, 0)) {{ {s} }} else {{ subtract(0, {s}) }}"), false),
            20 => (format!("tanh({a})"), true), // a duplicate of case 0 for EliminateCommonSubexpr
            // Scales before and after a dense and a conv2d, for FoldScaleAxis.
            21 => (
                format!(
                    "multiply(nn.dense(nn.relu(multiply({a}, 2f)), add(ones(shape=[3, 3], dtype=\"float32\"), sum({b}))), 0.5f)"
                ),
                true,
            ),
            22 => (
                format!(
                    "reshape(multiply(nn.conv2d(multiply(reshape({a}, newshape=[1, 2, 3, 1]), 3f), \
                     add(ones(shape=[2, 2, 1, 1], dtype=\"float32\"), sum({b})), kernel_size=[1, 1]), 0.5f), newshape=[2, 3])"
                ),
                true,
            ),
            // Parallel dense calls on one parameter, for CombineParallelDense.
            23 => (
                format!(
                    "add({a}, sum(concatenate((nn.dense(%x, %y), nn.dense(%x, {b}), nn.dense(%x, %y)), axis=1)))"
                ),
                true,
            ),
            // A loop on a local recursive closure: a known trip count from 0 (PartialEvaluate
            // unrolls it), a dynamic one from `{s}` (it stays a loop).
            24 | 25 => (
                format!(
                    "(let %loop{i} = fn (%k{i}: int32, %t{i}: {T}) -> {T} {{ if (less(%k{i}, 3)) {{ %loop{i}(add(%k{i}, 1), tanh(%t{i})) }} else {{ %t{i} }} }}; %loop{i}({}, {a}))",
                    if rng.below(2) == 0 { "0".to_string() } else { s.clone() }
                ),
                true,
            ),
            // Row-wise chains over lookups in constant tables, for HoistTake: by a vector
            // index (a product and a bias on the rows' axis), and by a scalar one (a new
            // leading axis, then a slice of the rows); the chain ends at an operand that is
            // not a constant.
            26 => (
                format!(
                    "(let %k{i}: Tensor[(2), int32] = full({s}, shape=[2], dtype=\"int32\"); \
                     multiply(nn.bias_add(nn.dense(sigmoid(take(meta[relay.Constant][0], %k{i}, axis=0)), \
                     meta[relay.Constant][1]), meta[relay.Constant][2], axis=-1), {a}))"
                ),
                true,
            ),
            27 => (
                format!(
                    "(let %w{i}: int32 = {s}; add(strided_slice(expand_dims(tanh(take(meta[relay.Constant][0], \
                     %w{i}, axis=0, mode=\"wrap\")), axis=0), begin=[1], end=[4], axes=[1]), {a}))"
                ),
                true,
            ),
            _ => (format!("@length(Cons({s}, Cons(1, Nil)))"), false),
        };
        let name = format!("%l{i}");
        let ty = if is_tensor {
            T.to_string()
        } else if expr.starts_with("sum") {
            "float32".into()
        } else {
            "int32".into()
        };
        body.push_str(&format!("  let {name}: {ty} = {expr};\n"));
        if ty == T {
            tensors.push(name);
        } else if ty == "int32" {
            scalars.push(name);
        }
        // float32 scalars are left unused: DeadCodeElimination removes them.
    }
    let result = format!("({}, {})", tensors[2.min(tensors.len() - 1)..].join(", "), scalars.join(", "));
    format!("def @main(%x: {T}, %y: {T}, %n: int32) {{\n{body}  {result}\n}}\n{TABLES}")
}

/// The constants of the HoistTake cases: a table of four rows of five, a [3, 5] weight and a
/// bias of three.
const TABLES: &str = r#"#[metadata]
{"relay.Constant": [
  {"dtype": "float32", "shape": [4, 5], "data": [0.5, -1.0, 0.25, 2.0, -0.75, 1.5, 0.0, -2.0, 0.125, 1.0,
    -0.5, 0.75, 1.25, -1.5, 0.375, 2.5, -0.25, 0.625, -1.25, 0.875]},
  {"dtype": "float32", "shape": [3, 5], "data": [0.25, -0.5, 1.0, 0.75, -1.0, 1.5, 0.5, -0.25, 0.0, 2.0,
    -1.5, 0.125, 0.5, -0.75, 1.0]},
  {"dtype": "float32", "shape": [3], "data": [0.5, -0.25, 1.0]}
]}
"#;

/// `@main`'s result as JSON and its type as text, on fixed arguments.
fn run(text: &str) -> Result<(Json, String), String> {
    let checked = relay::check("prop.relay", text).map_err(|e| format!("does not check:\n{e}\n{text}"))?;
    let main = checked.module.function_by_name("main").ok_or("no @main")?.name;
    let ty = print_type(&checked.module, checked.types.globals[&main]);
    let interp = Interpreter::compile("prop.relay", text).map_err(|e| e.to_string())?;
    let f = interp.function("main").map_err(|e| e.to_string())?;
    let args: Vec<Json> = vec![
        serde_json::json!([[0.5, -1.0, 2.0], [0.25, 0.0, -3.0]]),
        serde_json::json!([[1.5, 0.75, -0.5], [2.0, -2.0, 1.0]]),
        serde_json::json!(1),
    ];
    let exe = interp.signature();
    let values = args
        .iter()
        .zip(&f.param_types)
        .map(|(a, t)| relay::json::from_json(exe, t, a))
        .collect::<Result<Vec<_>, _>>()?;
    let out = interp.invoke("main", values).map_err(|e| e.to_string())?;
    let json = relay::json::to_json(exe, &f.ret_type, &out)?;
    Ok((serde_json::from_str(&json).map_err(|e| e.to_string())?, ty))
}

fn close(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(f64::NAN), y.as_f64().unwrap_or(f64::NAN));
            x == y || (x - y).abs() <= TOL * x.abs().max(y.abs()).max(1.0)
        }
        (Json::Array(x), Json::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| close(x, y)),
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| close(v, w)))
        }
        _ => a == b,
    }
}

/// Every registered pass on `text`: same result, same type.
fn check_every_pass(text: &str) -> Result<(), String> {
    let (want, want_ty) = run(text)?;
    let ops = relay_stdlib::op_registry();
    let cx =
        PassContext { ops: &ops, fuse: Default::default(), inline: Default::default(), entries: &["main"] };
    for pass in registry::PASSES {
        let (mut module, file) = relay::parse("prop.relay", text).map_err(|e| e.to_string())?;
        let passes = resolve(&[pass.name])?;
        run_passes(&mut module, &passes, &cx, &mut Silent)
            .map_err(|e| format!("{}: {}", pass.name, e.render(&module.sources, false)))?;
        let after = print_module(&module, Some(file));
        let (got, got_ty) = run(&after).map_err(|e| format!("after {}: {e}", pass.name))?;
        if !close(&want, &got) {
            return Err(format!(
                "{} changed the result: {want} became {got}\n{text}\nafter:\n{after}",
                pass.name
            ));
        }
        if want_ty != got_ty {
            return Err(format!("{} changed @main's type: {want_ty} became {got_ty}", pass.name));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn passes_preserve_results_and_types(seed in any::<u64>(), lets in 1usize..10) {
        let text = program(seed, lets);
        if let Err(e) = check_every_pass(&text) {
            prop_assert!(false, "{}", e);
        }
    }
}
