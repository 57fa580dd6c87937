//! Winograd convolutions through the JIT: `nn.contrib_conv2d_winograd_without_weight_transform`
//! on `nn.contrib_conv2d_winograd_weight_transform`'s output (transposed as `AlterOpLayout`
//! writes it), fused with a bias, a residual add and a ReLU at opt-level 2, against
//! `nn.conv2d`'s reference kernel (opt-level 0) on seeded random odd shapes and paddings.
//!
//! Tolerance: the largest difference at most [`TOL`] times the largest output magnitude.
//! Winograd's transforms scale the rounding errors of float32 (`F(4×4, 3×3)` by about 10×
//! a direct convolution's on these sizes; the reference kernel's unit test in
//! `stdlib/src/ops/nn/winograd.rs` measures them against float64).

use common::{run_main, Lcg};
use relay::Program;
use serde_json::{json, Value as Json};

mod common;

/// Largest difference allowed, relative to the largest output magnitude.
const TOL: f64 = 1e-5;

/// A float32 argument of `shape` with values in `[-1, 1)`.
fn argument(shape: &[usize], rng: &mut Lcg) -> Json {
    let n: usize = shape.iter().product();
    let data: Vec<f64> = (0..n).map(|_| rng.next() * 2.0 - 1.0).collect();
    json!({"dtype": "float32", "shape": shape, "data": data})
}

/// The numbers of a JSON tensor result.
fn numbers(v: &Json) -> Vec<f64> {
    match v {
        Json::Number(x) => vec![x.as_f64().unwrap_or(f64::NAN)],
        Json::Array(xs) => xs.iter().flat_map(numbers).collect(),
        Json::Object(o) => o.get("data").map(numbers).unwrap_or_default(),
        _ => vec![],
    }
}

/// The largest difference of `got` from `want` over the largest magnitude of `want`.
fn relative_error(want: &Json, got: &Json) -> f64 {
    let (want, got) = (numbers(want), numbers(got));
    assert_eq!(want.len(), got.len(), "result sizes differ");
    let scale = want.iter().fold(0f64, |m, v| m.max(v.abs())).max(1e-30);
    want.iter().zip(&got).fold(0f64, |m, (a, b)| m.max((a - b).abs())) / scale
}

fn compile(src: &str, opt_level: u8) -> Program {
    Program::builder()
        .source("winograd.relay", src)
        .opt_level(opt_level)
        .build()
        .unwrap_or_else(|e| panic!("{e}\n{src}"))
}

#[test]
fn jit_winograd_convolution_with_its_epilogue_matches_conv2d() {
    let mut rng = Lcg(21);
    for case in 0..8 {
        let tile = if case % 2 == 0 { 4 } else { 2 };
        let (n, c, o) = (1 + rng.below(2), 1 + rng.below(9), 1 + rng.below(12));
        let (h, w) = (3 + rng.below(12), 3 + rng.below(12));
        let (pt, pl, pb, pr) = (rng.below(2), rng.below(2), rng.below(2), rng.below(2));
        let (oh, ow) = (h + pt + pb - 2, w + pl + pr - 2);
        let types = format!(
            "%x: Tensor[({n}, {c}, {h}, {w}), float32], %w: Tensor[({o}, {c}, 3, 3), float32], \
             %b: Tensor[({o}), float32], %r: Tensor[({n}, {o}, {oh}, {ow}), float32]"
        );
        let pad = format!("padding=[{pt}, {pl}, {pb}, {pr}]");
        let conv = format!("nn.conv2d(%x, %w, {pad})");
        let winograd = format!(
            "nn.contrib_conv2d_winograd_without_weight_transform(%x, \
             transpose(nn.contrib_conv2d_winograd_weight_transform(%w, tile_size={tile}), axes=[0, 1, 3, 2]), \
             tile_size={tile}, channels={o}, kernel_size=[3, 3], {pad})"
        );
        let body = |call: &str| format!("def @main({types}) {{ nn.relu(add(nn.bias_add({call}, %b), %r)) }}");
        let reference = compile(&body(&conv), 0);
        let jit = compile(&body(&winograd), 2);
        let fused = jit.executable().kernels.iter().all(|k| k.kernel.is_some());
        assert!(fused, "case {case}: a kernel fell back to its reference kernel");
        let args: Vec<Json> = [vec![n, c, h, w], vec![o, c, 3, 3], vec![o], vec![n, o, oh, ow]]
            .iter()
            .map(|s| argument(s, &mut rng))
            .collect();
        let (want, got) = (run_main(&reference, &args).unwrap(), run_main(&jit, &args).unwrap());
        let err = relative_error(&want, &got);
        assert!(err <= TOL, "case {case} (tile {tile}, {types}, {pad}): error {err:e}");
    }
}
