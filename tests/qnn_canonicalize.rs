//! `QnnCanonicalize` is sound: every quantized operator with a canonical form, on seeded
//! random `int8`/`uint8`/`int16`/`int32` data, random scales (tiny, ordinary and above 1) and
//! zero points, both rounding modes and per-channel parameters (the activations and
//! `qnn.concatenate` too), gives at opt-level 2 (the
//! canonical form, fused) exactly the integers of opt-level 0 (the reference kernels), and
//! at opt-level 2 every kernel is a fused JIT kernel — a call the rewrite declined would run
//! its reference kernel and fail the case. With `RELAY_TEST_DEVICE=opencl` the fused kernels
//! run as OpenCL C (CI does this on POCL).

use common::{run_main as run, Lcg};
use relay::Program;
use serde_json::{json, Value as Json};

mod common;

/// A case: the call over `%a`, `%b`, ... (typed by `params`), the tensor constants its
/// `meta[relay.Constant][i]` name (dtype, values), and how to draw each argument.
struct Case {
    call: String,
    params: Vec<(String, Draw)>,
    constants: Vec<(&'static str, Vec<f64>)>,
}

/// How to draw an argument's values.
#[derive(Clone, Copy)]
enum Draw {
    /// Integers over the whole range of the dtype.
    Int(i64, i64),
    /// Floats in `[-r, r]`, with some far beyond it (saturation) and some exact halves.
    Float(f64),
}

/// A random scale: tiny (below 2^-20), ordinary, or above 1.
fn scale(rng: &mut Lcg) -> f64 {
    let magnitude = [1e-7, 1e-3, 0.02, 0.3, 1.0, 7.5][rng.below(6)];
    // Rounded through float32, as the literal is.
    f64::from((magnitude * (0.5 + rng.next())) as f32)
}

/// A random zero point in `lo..=hi`.
fn zero_point(rng: &mut Lcg, lo: i64, hi: i64) -> i64 {
    lo + rng.below((hi - lo + 1) as usize) as i64
}

/// The range of an integer dtype.
fn range(dtype: &str) -> (i64, i64) {
    match dtype {
        "int8" => (-128, 127),
        "uint8" => (0, 255),
        "int16" => (-32768, 32767),
        _ => (i32::MIN as i64, i32::MAX as i64),
    }
}

/// A float literal of Relay text.
fn f(v: f64) -> String {
    format!("{v:e}f")
}

fn cases(rng: &mut Lcg) -> Vec<Case> {
    let mut out = vec![];
    for dtype in ["int8", "uint8", "int16", "int32"] {
        let (lo, hi) = range(dtype);
        // quantize / dequantize, per tensor and per channel of axis 1.
        out.push(Case {
            call: format!(
                "qnn.quantize(%a, {}, {}, out_dtype=\"{dtype}\")",
                f(scale(rng)),
                zero_point(rng, lo.max(-1000), hi.min(1000))
            ),
            params: vec![("Tensor[(2, 3, 4), float32]".into(), Draw::Float(300.0))],
            constants: vec![],
        });
        out.push(Case {
            call: format!("qnn.quantize(%a, meta[relay.Constant][0], meta[relay.Constant][1], axis=1, out_dtype=\"{dtype}\")"),
            params: vec![("Tensor[(2, 3, 4), float32]".into(), Draw::Float(300.0))],
            constants: vec![
                ("float32", (0..3).map(|_| scale(rng)).collect()),
                ("int32", (0..3).map(|_| zero_point(rng, lo.max(-1000), hi.min(1000)) as f64).collect()),
            ],
        });
        out.push(Case {
            call: "qnn.dequantize(%a, meta[relay.Constant][0], %b, axis=-1)".into(),
            params: vec![
                (format!("Tensor[(2, 3), {dtype}]"), Draw::Int(lo, hi)),
                ("Tensor[(3), int32]".into(), Draw::Int(-300, 300)),
            ],
            constants: vec![("float32", (0..3).map(|_| scale(rng)).collect())],
        });
        for (rounding, out_dtype) in
            [("UPWARD", "int8"), ("TONEAREST", "uint8"), ("None", "int32"), ("TONEAREST", "int16")]
        {
            let (olo, ohi) = range(out_dtype);
            // Ratios of a power of two (0.5, 0.25) put products exactly on halves, where
            // the rounding modes differ.
            let in_scale = scale(rng);
            let out_scale = [in_scale * 2.0, in_scale * 4.0, scale(rng)][rng.below(3)];
            out.push(Case {
                call: format!(
                    "qnn.requantize(%a, {}, {}, {}, {}, rounding=\"{rounding}\", out_dtype=\"{out_dtype}\")",
                    f(in_scale),
                    zero_point(rng, lo.max(-1000), hi.min(1000)),
                    f(out_scale),
                    zero_point(rng, olo.max(-100), ohi.min(100)),
                ),
                params: vec![(format!("Tensor[(3, 5), {dtype}]"), Draw::Int(lo, hi))],
                constants: vec![],
            });
            // Per channel of axis 0; one channel's scale equals the output's.
            let out_scale = scale(rng);
            out.push(Case {
                call: format!(
                    "qnn.requantize(%a, meta[relay.Constant][0], %b, {}, {}, axis=0, rounding=\"{rounding}\", out_dtype=\"{out_dtype}\")",
                    f(out_scale),
                    zero_point(rng, olo.max(-100), ohi.min(100)),
                ),
                params: vec![
                    (format!("Tensor[(3, 5), {dtype}]"), Draw::Int(lo, hi)),
                    ("Tensor[(3), int32]".into(), Draw::Int(-1000, 1000)),
                ],
                constants: vec![("float32", vec![scale(rng), out_scale, out_scale * 0.5])],
            });
        }
    }
    for dtype in ["int8", "uint8", "int32"] {
        let (lo, hi) = range(dtype);
        for op in ["add", "subtract", "mul"] {
            let params: Vec<String> = (0..3)
                .map(|_| format!("{}, {}", f(scale(rng)), zero_point(rng, lo.max(-100), hi.min(100))))
                .collect();
            out.push(Case {
                call: format!("qnn.{op}(%a, %b, {})", params.join(", ")),
                params: vec![
                    (format!("Tensor[(2, 3), {dtype}]"), Draw::Int(lo, hi)),
                    (format!("Tensor[(3), {dtype}]"), Draw::Int(lo, hi)),
                ],
                constants: vec![],
            });
        }
    }
    for dtype in ["int8", "uint8", "int16"] {
        let (lo, hi) = range(dtype);
        out.push(Case {
            call: "qnn.conv2d(%a, %b, %c, meta[relay.Constant][0], 0.5f, 0.25f, padding=[1, 1], strides=[2, 1], channels=3, kernel_size=[3, 3], out_dtype=\"int32\")".into(),
            params: vec![
                (format!("Tensor[(1, 2, 5, 4), {dtype}]"), Draw::Int(lo, hi)),
                (format!("Tensor[(3, 2, 3, 3), {dtype}]"), Draw::Int(lo, hi)),
                ("int32".into(), Draw::Int(-200, 200)),
            ],
            constants: vec![("int32", vec![3.0, -7.0, 100.0])],
        });
        out.push(Case {
            call: "qnn.dense(%a, %b, %c, %d, 0.5f, 0.25f, units=4)".into(),
            params: vec![
                (format!("Tensor[(2, 6), {dtype}]"), Draw::Int(lo, hi)),
                (format!("Tensor[(4, 6), {dtype}]"), Draw::Int(lo, hi)),
                ("int32".into(), Draw::Int(-200, 200)),
                ("Tensor[(4), int32]".into(), Draw::Int(-200, 200)),
            ],
            constants: vec![],
        });
        out.push(Case {
            call: "qnn.batch_matmul(%a, %b, %c, 5, 0.5f, 0.25f, transpose_b=True)".into(),
            params: vec![
                (format!("Tensor[(2, 3, 4), {dtype}]"), Draw::Int(lo, hi)),
                (format!("Tensor[(2, 5, 4), {dtype}]"), Draw::Int(lo, hi)),
                ("int32".into(), Draw::Int(-200, 200)),
            ],
            constants: vec![],
        });
    }
    // The activations (a table of the reference kernel) on every 8-bit dtype; the output
    // scale 1/256 is a sigmoid's usual one.
    for dtype in ["int8", "uint8"] {
        let (lo, hi) = range(dtype);
        for (op, attrs) in [("sigmoid", ""), ("tanh", ""), ("leaky_relu", ", alpha=0.1"), ("leaky_relu", "")]
        {
            let out_scale = [scale(rng), 1.0 / 256.0][rng.below(2)];
            out.push(Case {
                call: format!(
                    "qnn.{op}(%a, {}, {}, {}, {}{attrs})",
                    f(scale(rng)),
                    zero_point(rng, lo, hi),
                    f(out_scale),
                    zero_point(rng, lo, hi)
                ),
                params: vec![(format!("Tensor[(2, 3, 5), {dtype}]"), Draw::Int(lo, hi))],
                constants: vec![],
            });
        }
    }
    // softmax over the last and a middle axis, input scales whose `round(1 / scale)` is 1 to
    // about 100 (the canonical form declines larger ones, whose sums could wrap).
    for axis in [-1, 1] {
        let in_scale = f64::from(([0.01, 0.05, 0.1, 0.3, 1.0][rng.below(5)] * (0.5 + rng.next())) as f32);
        let out_scale = [scale(rng), 1.0 / 256.0][rng.below(2)];
        out.push(Case {
            call: format!(
                "qnn.softmax(%a, {}, {}, {}, {}, axis={axis})",
                f(in_scale),
                zero_point(rng, -128, 127),
                f(out_scale),
                zero_point(rng, -128, 127)
            ),
            params: vec![("Tensor[(2, 4, 6), int8]".into(), Draw::Int(-128, 127))],
            constants: vec![],
        });
    }
    // concatenate: two inputs requantized to the output's parameters, a third already on
    // them (left as it is), along a middle axis.
    for dtype in ["int8", "uint8", "int16", "int32"] {
        let (lo, hi) = range(dtype);
        let (out_scale, out_zp) = (scale(rng), zero_point(rng, lo.max(-100), hi.min(100)));
        let (s0, s1) = (scale(rng), [out_scale * 2.0, scale(rng)][rng.below(2)]);
        let (z0, z1) =
            (zero_point(rng, lo.max(-100), hi.min(100)), zero_point(rng, lo.max(-100), hi.min(100)));
        out.push(Case {
            call: format!(
                "qnn.concatenate((%a, %b, %c), ({}, {}, {}), ({z0}, {z1}, {out_zp}), {}, {out_zp}, axis=1)",
                f(s0),
                f(s1),
                f(out_scale),
                f(out_scale)
            ),
            params: vec![
                (format!("Tensor[(2, 3, 2), {dtype}]"), Draw::Int(lo, hi)),
                (format!("Tensor[(2, 1, 2), {dtype}]"), Draw::Int(lo, hi)),
                (format!("Tensor[(2, 2, 2), {dtype}]"), Draw::Int(lo, hi)),
            ],
            constants: vec![],
        });
    }
    // A model-like chain: quantize, conv2d, requantize (per channel), relu, dequantize.
    out.push(Case {
        call: "qnn.dequantize(nn.relu(qnn.requantize(qnn.conv2d(qnn.quantize(%a, 0.05f, 3, out_dtype=\"uint8\"), %b, 3, 0, 0.05f, meta[relay.Constant][0], padding=[1, 1], channels=2, kernel_size=[3, 3], kernel_layout=\"OIHW\"), meta[relay.Constant][1], 0, 0.1f, -5, axis=1, out_dtype=\"int8\")), 0.1f, -5)".into(),
        params: vec![
            ("Tensor[(1, 3, 6, 6), float32]".into(), Draw::Float(10.0)),
            ("Tensor[(2, 3, 3, 3), uint8]".into(), Draw::Int(0, 255)),
        ],
        constants: vec![("float32", vec![0.01, 0.002]), ("float32", vec![0.0005, 0.0001])],
    });
    out
}

/// Random values of `ty` (a `Tensor[(..), dtype]` or a scalar dtype) drawn as `draw` says.
fn argument(ty: &str, draw: Draw, rng: &mut Lcg) -> Json {
    let shape: Vec<usize> = match ty.split_once("[(") {
        Some((_, rest)) => rest
            .split(')')
            .next()
            .unwrap_or_default()
            .split(',')
            .filter_map(|d| d.trim().parse().ok())
            .collect(),
        None => vec![],
    };
    let mut value = |_: usize| match draw {
        Draw::Int(lo, hi) => json!(lo + (rng.next() * (hi - lo + 1) as f64) as i64),
        Draw::Float(r) => match rng.below(8) {
            0 => json!((rng.below(20) as f64 - 10.0) + 0.5),
            1 => json!((rng.next() - 0.5) * 2e10),
            _ => json!((rng.next() * 2.0 - 1.0) * r),
        },
    };
    fn nest(shape: &[usize], value: &mut dyn FnMut(usize) -> Json) -> Json {
        match shape.split_first() {
            None => value(0),
            Some((&n, rest)) => Json::Array((0..n).map(|_| nest(rest, value)).collect()),
        }
    }
    nest(&shape, &mut value)
}

/// The case as a Relay program.
fn source(case: &Case) -> String {
    let params: Vec<String> = case
        .params
        .iter()
        .enumerate()
        .map(|(i, (t, _))| format!("%{}: {t}", (b'a' + i as u8) as char))
        .collect();
    let mut src = format!("#[version = \"0.0.5\"]\ndef @main({}) {{ {} }}\n", params.join(", "), case.call);
    if !case.constants.is_empty() {
        let constants: Vec<Json> = case
            .constants
            .iter()
            .map(|(dtype, data)| json!({"dtype": dtype, "shape": [data.len()], "data": data}))
            .collect();
        src.push_str(&format!("#[metadata]\n{}\n", json!({ "relay.Constant": constants })));
    }
    src
}

#[test]
fn canonical_forms_compute_the_reference_kernels_integers() {
    let mut rng = Lcg(7);
    let cases = cases(&mut rng);
    assert!(cases.len() > 40, "only {} cases", cases.len());
    let mut failures = vec![];
    for case in &cases {
        let src = source(case);
        let build = |level| {
            Program::builder()
                .source("case.relay", &src)
                .opt_level(level)
                .device(common::test_device())
                .build()
        };
        let (reference, canonical) = match (build(0), build(2)) {
            (Ok(r), Ok(c)) => (r, c),
            (r, c) => {
                let why =
                    |r: Result<Program, relay::Error>| r.err().map(|e| e.to_string()).unwrap_or_default();
                failures.push(format!("{src}: does not compile: {} / {}", why(r), why(c)));
                continue;
            }
        };
        if canonical.executable().kernels.iter().any(|k| k.kernel.is_none()) {
            failures.push(format!("{src}: a reference kernel is left at opt-level 2"));
            continue;
        }
        for _ in 0..3 {
            let args: Vec<Json> = case.params.iter().map(|(t, d)| argument(t, *d, &mut rng)).collect();
            match (run(&reference, &args), run(&canonical, &args)) {
                (Ok(want), Ok(got)) if want == got => {}
                (want, got) => {
                    failures.push(format!("{src} on {args:?}:\n  reference {want:?}\n  canonical {got:?}"))
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn non_constant_scales_stay_with_the_reference_kernel() {
    let src = "def @main(%x: Tensor[(4), int8], %s: float32) { qnn.requantize(%x, %s, 0, 0.5f, 0) }";
    let program =
        Program::builder().source("case.relay", src).opt_level(2).build().map_err(|e| e.to_string());
    let program = program.unwrap_or_else(|e| panic!("{e}"));
    assert!(program.executable().kernels.iter().any(|k| k.kernel.is_none()));
    let got = run(&program, &[json!([1, -2, 3, 100]), json!(0.25)]).map(|v| v["data"].clone());
    assert_eq!(got, Ok(json!([1, -1, 2, 50])));
}
