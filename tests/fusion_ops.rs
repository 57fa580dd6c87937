//! Every operator with a compute rule (the elementwise and broadcast ones taken from the
//! library's operator list): its JIT-compiled kir kernel (opt-level 2) against its
//! reference kernel (opt-level 0), on shapes including size-1 and size-0 dimensions and
//! broadcasting, with pseudo-random inputs. Floats must agree within [`TOL`] (relative, or
//! absolute near zero; NaN matches NaN), everything else exactly.
//!
//! Each case is one call written as Relay over `%a`, `%b`, ... with their types; at
//! opt-level 2 the program must contain a JIT kernel, so a case that silently fell back to
//! the reference kernel fails. With `RELAY_TEST_DEVICE=opencl` the fused kernels run as
//! OpenCL C on that device (CI does this on POCL).

use common::{run_main as run, Lcg};
use relay::compiler::op::OpPattern;
use relay::stdlib::operator::DTypeSet;
use relay::stdlib::ops::operators;
use relay::Program;
use serde_json::Value as Json;

mod common;
/// The operator families whose cases are drawn on seeded random shapes.
#[path = "fusion_ops/sampled.rs"]
mod sampled;
use sampled::{depthwise_cases, image_cases, pool_cases};

/// Tolerance of the JIT's float results (approximated `exp`/`tanh`/... and FMA).
const TOL: f64 = 2e-5;

/// `(call, parameter types)`.
type Case = (&'static str, &'static [&'static str]);

const F: &str = "float32";

fn cases() -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = vec![];
    let shapes = ["(2, 3)", "(1)", "(0, 4)", "(3, 1, 5)", "(1, 1)"];
    for (op, dtype) in listed_ops(OpPattern::ElemWise, 1) {
        for s in shapes {
            out.push((format!("{op}(%a)"), vec![tensor(s, dtype)]));
        }
    }
    for s in shapes {
        out.push(("nn.leaky_relu(%a, alpha=0.1)".into(), vec![tensor(s, F)]));
        out.push(("clip(%a, a_min=-0.5, a_max=0.7)".into(), vec![tensor(s, F)]));
        out.push(("cast(%a, dtype=\"int32\")".into(), vec![tensor(s, F)]));
    }
    let pairs =
        [("(2, 3)", "(3)"), ("(4, 1)", "(1, 5)"), ("(0, 3)", "(3)"), ("(1)", "(2, 2)"), ("(2, 3)", "()")];
    // `nn.prelu`'s and `nn.bias_add`'s second operands are one value per channel, not
    // broadcast operands: their cases are below.
    // `broadcast_to_like`'s second operand is a target shape, not a broadcast operand.
    let per_channel = |op: &str| matches!(op, "nn.prelu" | "nn.bias_add" | "broadcast_to_like");
    for (op, dtype) in listed_ops(OpPattern::Broadcast, 2).into_iter().filter(|(op, _)| !per_channel(op)) {
        for (x, y) in pairs {
            out.push((format!("{op}(%a, %b)"), vec![tensor(x, dtype), tensor(y, dtype)]));
        }
    }
    // Integer division and remainders, dividing by zero included (the operands are small).
    let int_ops = [
        "add",
        "subtract",
        "multiply",
        "maximum",
        "minimum",
        "equal",
        "less",
        "divide",
        "floor_divide",
        "floor_mod",
        "trunc_divide",
        "trunc_mod",
        "mod",
    ];
    for op in int_ops {
        out.push((format!("{op}(%a, %b)"), vec![tensor("(2, 3)", "int32"), tensor("(3)", "int32")]));
    }
    out.push((
        "where(%a, %b, %c)".into(),
        vec![tensor("(2, 1)", "bool"), tensor("(2, 3)", F), tensor("(3)", F)],
    ));
    for (op, dtype) in listed_ops(OpPattern::CommReduce, 1) {
        for attrs in ["", ", axis=[1]", ", axis=[0, 2], keepdims=True", ", axis=[1], exclude=True"] {
            out.push((format!("{op}(%a{attrs})"), vec![tensor("(2, 3, 4)", dtype)]));
        }
        out.push((format!("{op}(%a, axis=[0])"), vec![tensor("(1, 5)", dtype)]));
    }
    out.push(("sum(%a, axis=[1])".into(), vec![tensor("(3, 0)", F)]));
    out.push(("sum(%a, axis=[0])".into(), vec![tensor("(0, 3)", F)]));
    out.push(("sum(%a)".into(), vec![tensor("(4, 3)", "int32")]));
    let mut fixed: Vec<Case> = vec![
        ("nn.dense(%a, %b)", &["Tensor[(3, 5), float32]", "Tensor[(4, 5), float32]"]),
        ("nn.dense(%a, %b)", &["Tensor[(1, 7), float32]", "Tensor[(2, 7), float32]"]),
        ("nn.dense(%a, %b)", &["Tensor[(0, 3), float32]", "Tensor[(2, 3), float32]"]),
        ("nn.dense(%a, %b)", &["Tensor[(2, 2, 3), float32]", "Tensor[(4, 3), float32]"]),
        ("nn.matmul(%a, %b)", &["Tensor[(3, 5), float32]", "Tensor[(5, 4), float32]"]),
        ("nn.matmul(%a, %b, transpose_b=True)", &["Tensor[(3, 5), float32]", "Tensor[(4, 5), float32]"]),
        ("nn.batch_matmul(%a, %b)", &["Tensor[(2, 3, 5), float32]", "Tensor[(2, 5, 4), float32]"]),
        (
            "nn.batch_matmul(%a, %b, transpose_b=True)",
            &["Tensor[(2, 3, 5), float32]", "Tensor[(2, 4, 5), float32]"],
        ),
        (
            "nn.batch_matmul(%a, %b, transpose_a=True)",
            &["Tensor[(1, 5, 3), float32]", "Tensor[(1, 5, 4), float32]"],
        ),
        ("nn.bias_add(%a, %b)", &["Tensor[(2, 3, 4), float32]", "Tensor[(3), float32]"]),
        ("nn.bias_add(%a, %b, axis=-1)", &["Tensor[(2, 4), float32]", "Tensor[(4), float32]"]),
        ("nn.softmax(%a)", &["Tensor[(3, 5), float32]"]),
        ("nn.softmax(%a, axis=0)", &["Tensor[(3, 5), float32]"]),
        ("nn.log_softmax(%a)", &["Tensor[(2, 1, 6), float32]"]),
        (
            "nn.conv2d(%a, %b, padding=[1, 1])",
            &["Tensor[(1, 3, 5, 5), float32]", "Tensor[(4, 3, 3, 3), float32]"],
        ),
        (
            "nn.conv2d(%a, %b, strides=[2, 2], padding=[1, 0, 0, 1], dilation=[1, 2])",
            &["Tensor[(2, 2, 6, 7), float32]", "Tensor[(3, 2, 2, 2), float32]"],
        ),
        ("nn.conv2d(%a, %b, groups=2)", &["Tensor[(1, 4, 4, 4), float32]", "Tensor[(6, 2, 3, 3), float32]"]),
        // Depthwise (one input channel per group): strides 1 and 2, padding 0 and 1, windows
        // 3 and 5, odd sizes, a channel multiplier, and a window larger than the image.
        (
            "nn.conv2d(%a, %b, padding=[1, 1], groups=3)",
            &["Tensor[(2, 3, 7, 9), float32]", "Tensor[(3, 1, 3, 3), float32]"],
        ),
        (
            "nn.conv2d(%a, %b, strides=[2, 2], padding=[1, 1], groups=3)",
            &["Tensor[(1, 3, 9, 11), float32]", "Tensor[(3, 1, 3, 3), float32]"],
        ),
        ("nn.conv2d(%a, %b, groups=2)", &["Tensor[(1, 2, 7, 6), float32]", "Tensor[(2, 1, 3, 3), float32]"]),
        (
            "nn.conv2d(%a, %b, padding=[2, 2], groups=2)",
            &["Tensor[(1, 2, 9, 13), float32]", "Tensor[(2, 1, 5, 5), float32]"],
        ),
        (
            "nn.conv2d(%a, %b, strides=[2, 2], padding=[2, 1, 1, 2], groups=2)",
            &["Tensor[(1, 2, 11, 7), float32]", "Tensor[(4, 1, 5, 5), float32]"],
        ),
        // Stride 2 (`window.rs`'s loops; `depthwise.rs`'s products take stride 1): batch 2,
        // 3×3 and 5×5, padding 1 and 2, odd sizes, a window of one row and one of one column,
        // with a bias and a clip.
        (
            "clip(nn.bias_add(nn.conv2d(%a, %b, strides=[2, 2], padding=[1, 1], groups=5), %c), a_min=0f, a_max=6f)",
            &["Tensor[(2, 5, 13, 37), float32]", "Tensor[(5, 1, 3, 3), float32]", "Tensor[(5), float32]"],
        ),
        (
            "clip(nn.bias_add(nn.conv2d(%a, %b, strides=[2, 2], padding=[2, 2], groups=3), %c), a_min=-1f, a_max=1f)",
            &["Tensor[(2, 3, 15, 9), float32]", "Tensor[(3, 1, 5, 5), float32]", "Tensor[(3), float32]"],
        ),
        (
            "nn.bias_add(nn.conv2d(%a, %b, strides=[2, 2], padding=[0, 1], groups=2), %c)",
            &["Tensor[(2, 2, 6, 7), float32]", "Tensor[(2, 1, 1, 3), float32]", "Tensor[(2), float32]"],
        ),
        (
            "nn.conv2d(%a, %b, strides=[2, 2], padding=[1, 0], groups=2)",
            &["Tensor[(1, 2, 8, 5), float32]", "Tensor[(2, 1, 3, 1), float32]"],
        ),
        (
            "nn.conv2d(%a, %b, padding=[3, 3], dilation=[2, 1], groups=2)",
            &["Tensor[(1, 2, 3, 4), float32]", "Tensor[(2, 1, 5, 5), float32]"],
        ),
        ("nn.conv2d(%a, %b, padding=[1, 1], groups=2)", &["Tensor[(1, 2, 5, 5), int32]", "Tensor[(2, 1, 3, 3), int32]"]),
        // A window of more taps than are unrolled, grouped, padded.
        (
            "nn.conv2d(%a, %b, padding=[3, 2], groups=2)",
            &["Tensor[(1, 4, 8, 9), float32]", "Tensor[(2, 2, 7, 6), float32]"],
        ),
        (
            "nn.layer_norm(%a, %b, %c)",
            &["Tensor[(2, 5), float32]", "Tensor[(5), float32]", "Tensor[(5), float32]"],
        ),
        (
            "nn.layer_norm(%a, %b, %c, axis=0, center=False)",
            &["Tensor[(3, 2), float32]", "Tensor[(3), float32]", "Tensor[(3), float32]"],
        ),
        ("nn.global_avg_pool2d(%a)", &["Tensor[(2, 3, 4, 5), float32]"]),
        ("nn.max_pool2d(%a, pool_size=[2, 2], strides=[2, 2])", &["Tensor[(1, 2, 5, 6), float32]"]),
        (
            "nn.max_pool2d(%a, pool_size=[3, 2], padding=[1, 1, 2, 0], dilation=[1, 2], ceil_mode=True)",
            &["Tensor[(2, 1, 5, 5), float32]"],
        ),
        ("nn.max_pool2d(%a, pool_size=[2, 2], padding=[1, 1])", &["Tensor[(1, 2, 3, 3), int32]"]),
        ("nn.max_pool2d(%a, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])", &["Tensor[(1, 3, 13, 11), float32]"]),
        (
            "nn.max_pool2d(%a, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], ceil_mode=True)",
            &["Tensor[(1, 2, 10, 9), float32]"],
        ),
        ("nn.avg_pool2d(%a, pool_size=[3, 3], padding=[1, 1])", &["Tensor[(1, 2, 9, 10), float32]"]),
        (
            "nn.avg_pool2d(%a, pool_size=[3, 3], padding=[1, 1], count_include_pad=True)",
            &["Tensor[(1, 2, 9, 10), float32]"],
        ),
        (
            "nn.avg_pool2d(%a, pool_size=[6, 6], padding=[2, 3, 1, 0], count_include_pad=True)",
            &["Tensor[(1, 1, 8, 9), float32]"],
        ),
        // Windows that never reach padding (the unrolled form), with dilation and a ceil-mode
        // output that still stays inside.
        ("nn.max_pool2d(%a, pool_size=[3, 2], dilation=[1, 2])", &["Tensor[(2, 3, 5, 7), int32]"]),
        ("nn.avg_pool2d(%a, pool_size=[2, 3], strides=[1, 2])", &["Tensor[(2, 3, 5, 7), float32]"]),
        ("nn.avg_pool2d(%a, pool_size=[2, 2], strides=[2, 2], ceil_mode=True)", &["Tensor[(1, 2, 5, 4), float32]"]),
        ("nn.avg_pool2d(%a, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])", &["Tensor[(1, 2, 5, 6), float32]"]),
        (
            "nn.avg_pool2d(%a, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], count_include_pad=True, ceil_mode=True)",
            &["Tensor[(1, 2, 6, 6), float32]"],
        ),
        ("reshape(%a, newshape=[3, -1])", &["Tensor[(2, 6), float32]"]),
        ("transpose(%a, axes=[1, 2, 0])", &["Tensor[(2, 3, 4), float32]"]),
        ("transpose(%a)", &["Tensor[(2, 3), float32]"]),
        ("squeeze(%a)", &["Tensor[(1, 3, 1), float32]"]),
        ("expand_dims(%a, axis=1, num_newaxis=2)", &["Tensor[(2, 3), float32]"]),
        ("nn.batch_flatten(%a)", &["Tensor[(2, 3, 4), float32]"]),
        ("broadcast_to(%a, shape=[2, 3, 4])", &["Tensor[(3, 1), float32]"]),
        ("concatenate((%a, %b), axis=1)", &["Tensor[(2, 3), float32]", "Tensor[(2, 2), float32]"]),
        ("concatenate((%a, %b, %a))", &["Tensor[(1, 3), float32]", "Tensor[(0, 3), float32]"]),
        ("stack((%a, %b), axis=1)", &["Tensor[(2, 3), float32]", "Tensor[(2, 3), float32]"]),
        ("strided_slice(%a, begin=[1, 0], end=[3, 4], strides=[1, 2])", &["Tensor[(3, 5), float32]"]),
        ("strided_slice(%a, begin=[-1], end=[-6], strides=[-2], axes=[1])", &["Tensor[(3, 5), float32]"]),
        ("strided_slice(%a, begin=[0, 1], end=[2, -1], slice_mode=\"size\")", &["Tensor[(3, 5), float32]"]),
        ("take(%a, %b, axis=1)", &["Tensor[(3, 4), float32]", "Tensor[(2, 2), int32]"]),
        ("take(%a, %b)", &["Tensor[(3, 4), float32]", "Tensor[(5), int32]"]),
        ("take(%a, %b, axis=0, mode=\"wrap\")", &["Tensor[(3, 4), float32]", "Tensor[(5), int32]"]),
        ("gather(%a, %b, axis=1)", &["Tensor[(3, 6), float32]", "Tensor[(3, 2), int32]"]),
        ("gather(%a, %b, axis=0)", &["Tensor[(6, 2), int32]", "Tensor[(1, 2), int32]"]),
        ("one_hot(%a, %b, %c, depth=4, dtype=\"float32\")", &["Tensor[(2, 3), int32]", "float32", "float32"]),
        ("one_hot(%a, 1, 0, depth=3, axis=0, dtype=\"int32\")", &["Tensor[(5), int32]"]),
        ("tile(%a, reps=[2, 1, 3])", &["Tensor[(2, 3), float32]"]),
        ("tile(%a, reps=[2])", &["Tensor[(3, 1, 2), int32]"]),
        ("repeat(%a, repeats=3, axis=-1)", &["Tensor[(2, 3), float32]"]),
        ("reverse(%a, axis=0)", &["Tensor[(3, 4), float32]"]),
        ("nn.space_to_batch_nd(%a, block_shape=[2, 2], paddings=[[1, 0], [0, 1]], pad_value=2.5f)", &["Tensor[(2, 3, 3, 2), float32]"]),
        ("nn.batch_to_space_nd(%a, block_shape=[2, 2], crops=[[1, 0], [0, 1]])", &["Tensor[(8, 2, 2, 3), int32]"]),
        ("nn.mirror_pad(%a, pad_width=[[1, 2], [0, 4]])", &["Tensor[(3, 4), float32]"]),
        ("nn.mirror_pad(%a, pad_width=[[2, 1], [3, 3]], mode=\"REFLECT\")", &["Tensor[(3, 4), int32]"]),
        ("collapse_sum_like(%a, %b)", &["Tensor[(2, 3, 4), float32]", "Tensor[(3, 1), float32]"]),
        ("collapse_sum_like(%a, %b)", &["Tensor[(4, 1, 5), int32]", "Tensor[(1, 5), int32]"]),
        ("variance(%a, %b, axis=[1], unbiased=True)", &["Tensor[(2, 3, 4), float32]", "Tensor[(2, 1, 4), float32]"]),
        ("variance(%a, %b, keepdims=True)", &["Tensor[(3, 5), float32]", "Tensor[(1, 1), float32]"]),
        // `ndarray_size` of a static type folds at opt-level 2; its rule: the test below.
        ("add(%a, cast(ndarray_size(%a, dtype=\"int64\"), dtype=\"float32\"))", &["Tensor[(3, 4), float32]"]),
        // Infinities and NaN (`x / 0`) next to the finite values of the listed cases.
        ("isinf(divide(%a, 0f))", &["Tensor[(2, 3), float32]"]),
        ("isfinite(divide(%a, 0f))", &["Tensor[(2, 3), float32]"]),
        // Shift amounts past the width are taken modulo it on every path.
        ("left_shift(%a, 33)", &["Tensor[(2, 5), int32]"]),
        ("right_shift(%a, add(%a, 64))", &["Tensor[(2, 5), int32]"]),
        ("nn.pad(%a, 1.5f, pad_width=[[1, 0], [2, 1]])", &["Tensor[(2, 3), float32]"]),
        ("nn.pad(%a, 0f, pad_width=[[0, 2], [1, 1]], pad_mode=\"edge\")", &["Tensor[(2, 3), float32]"]),
        // Creation ops of up to MAX_FOLDED_ELEMENTS elements are folded at compile time
        // (FoldConstant); larger ones, next to an input, fuse into its kernel.
        ("add(%a, zeros(shape=[257, 256], dtype=\"float32\"))", &["Tensor[(257, 256), float32]"]),
        ("multiply(%a, ones(shape=[65537], dtype=\"int32\"))", &["Tensor[(65537), int32]"]),
        ("full(%a, shape=[2, 2], dtype=\"float32\")", &["float32"]),
        ("full_like(%a, %b)", &["Tensor[(2, 3), int32]", "float32"]),
        ("add(%a, arange(start=-3, stop=65534, dtype=\"float32\"))", &["Tensor[(65537), float32]"]),
        ("trilu(%a, %b)", &["Tensor[(2, 3, 4), float32]", "int32"]),
        ("trilu(%a, -1i64, upper=False)", &["Tensor[(4, 3), int32]"]),
        ("nn.prelu(%a, %b)", &["Tensor[(2, 3, 4), float32]", "Tensor[(3), float32]"]),
        ("nn.prelu(%a, %b, axis=-1)", &["Tensor[(2, 3, 4), float32]", "Tensor[(4), float32]"]),
        ("nn.depth_to_space(%a, block_size=2)", &["Tensor[(2, 8, 2, 3), float32]"]),
        ("nn.depth_to_space(%a, block_size=2, mode=\"CRD\")", &["Tensor[(1, 4, 3, 2), int32]"]),
        ("nn.space_to_depth(%a, block_size=2)", &["Tensor[(2, 3, 4, 6), float32]"]),
        ("layout_transform(%a, src_layout=\"NCHW\", dst_layout=\"NCHW4c\")", &["Tensor[(2, 8, 3, 5), float32]"]),
        ("layout_transform(%a, src_layout=\"NCHW8c\", dst_layout=\"NHWC\")", &["Tensor[(1, 2, 3, 4, 8), int32]"]),
        ("layout_transform(%a, src_layout=\"NCHW4c\", dst_layout=\"NCHW8c\")", &["Tensor[(2, 4, 2, 3, 4), float32]"]),
        ("layout_transform(%a, src_layout=\"NHWC\", dst_layout=\"NCHW\")", &["Tensor[(1, 3, 5, 7), float32]"]),
        ("vision.yolo_reorg(%a, stride=2)", &["Tensor[(2, 8, 4, 6), float32]"]),
        ("vision.yolo_reorg(%a, stride=3)", &["Tensor[(1, 9, 6, 3), int32]"]),
        ("reshape_like(%a, %b)", &["Tensor[(2, 6), float32]", "Tensor[(3, 4), int32]"]),
        ("reshape_like(%a, %b, lhs_begin=1, rhs_end=2)", &["Tensor[(2, 6), float32]", "Tensor[(3, 2, 7), float32]"]),
        ("broadcast_to_like(%a, %b)", &["Tensor[(3, 1), float32]", "Tensor[(2, 3, 4), float32]"]),
        ("slice_like(%a, %b, axes=[-1])", &["Tensor[(3, 5), float32]", "Tensor[(1, 2), float32]"]),
        ("cast_like(%a, %b)", &["Tensor[(2, 3), float32]", "Tensor[(1), int32]"]),
    ];
    fixed.extend(trigonometric_cases());
    fixed.extend(injective_cases());
    out.extend(fixed.drain(..).map(|(c, ts)| (c.to_string(), ts.iter().map(|t| t.to_string()).collect())));
    out
}

/// The trigonometric and hyperbolic operators past the listed cases' [-3, 3]: periods far
/// from 0 (the JIT's argument reduction), `asin`/`acos` inside [-1, 1], and `sinh`/`cosh`
/// up to their overflow (the operands are multiples of 1/64 in [-3, 3]).
fn trigonometric_cases() -> Vec<Case> {
    const T: &[&str] = &["Tensor[(3, 7), float32]"];
    vec![
        ("sin(multiply(%a, 3000f))", T),
        ("cos(multiply(%a, 3000f))", T),
        ("tan(multiply(%a, 3000f))", T),
        ("atan(multiply(%a, 1000f))", T),
        ("asin(divide(%a, 3f))", T),
        ("acos(divide(%a, 3f))", T),
        ("sinh(multiply(%a, 29.8f))", T),
        ("cosh(multiply(%a, 29.8f))", T),
    ]
}

/// The library's operators of `pattern` and `arity` (elementwise and reductions: 1, broadcast:
/// 2) that have a compute rule and no required attribute, each with a dtype of its set.
fn listed_ops(pattern: OpPattern, arity: usize) -> Vec<(&'static str, &'static str)> {
    operators()
        .filter(|e| e.def.num_inputs == arity && e.def.pattern == pattern && e.def.compute.is_some())
        .filter(|e| (e.reference.attr_defaults)().iter().all(|(_, default)| default.is_some()))
        // `full`'s one input is its 0-d fill value, not an elementwise operand (a fixed case).
        .filter(|e| e.def.name != "full")
        .map(|e| {
            let dtype = match e.dtypes {
                DTypeSet::Bools => "bool",
                DTypeSet::Ints | DTypeSet::IntsBools => "int32",
                DTypeSet::Floats | DTypeSet::Nums | DTypeSet::Any => F,
            };
            (e.def.name, dtype)
        })
        .collect()
}

fn tensor(shape: &str, dtype: &str) -> String {
    if shape == "()" {
        dtype.to_string()
    } else {
        format!("Tensor[{shape}, {dtype}]")
    }
}

/// A JSON argument for parameter type `ty` (`Tensor[(2, 3), float32]` or a bare dtype).
fn argument(ty: &str, rng: &mut Lcg) -> Json {
    let (dims, dtype): (Vec<usize>, &str) = match ty.strip_prefix("Tensor[(") {
        Some(rest) => {
            let (dims, dtype) = rest.split_once("), ").unwrap_or(("", "float32"));
            let dims = dims
                .split(',')
                .filter(|d| !d.trim().is_empty())
                .map(|d| d.trim().parse().unwrap_or(0))
                .collect();
            (dims, dtype.trim_end_matches(']'))
        }
        None => (vec![], ty),
    };
    let n: usize = dims.iter().product();
    let data: Vec<Json> = (0..n)
        .map(|_| {
            let u = rng.next();
            match dtype {
                "bool" => Json::from(u < 0.5),
                "int32" => Json::from((u * 11.0) as i64 - 5),
                _ => Json::from(((u * 6.0 - 3.0) * 64.0).round() / 64.0),
            }
        })
        .collect();
    serde_json::json!({"dtype": dtype, "shape": dims, "data": data})
}

fn close(a: &Json, b: &Json) -> bool {
    within(a, b, TOL)
}

/// Whether `a` and `b` agree, numbers within `tol` (relative, or absolute near zero).
fn within(a: &Json, b: &Json, tol: f64) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(f64::NAN), y.as_f64().unwrap_or(f64::NAN));
            x == y || (x - y).abs() <= tol * x.abs().max(y.abs()).max(1.0)
        }
        (Json::Array(xs), Json::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| within(x, y, tol))
        }
        (Json::Object(xs), Json::Object(ys)) => {
            xs.len() == ys.len() && xs.iter().all(|(k, x)| ys.get(k).is_some_and(|y| within(x, y, tol)))
        }
        _ => a == b,
    }
}

#[test]
fn jit_kernels_match_reference_kernels() {
    let cases = cases();
    assert!(cases.len() > 150, "only {} cases", cases.len());
    let failures = mismatches(&cases, &mut Lcg(42));
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

/// The resampling and grid operators' cases ([`image_cases`]), a test of their own so that
/// they can run alone on a slow OpenCL device.
#[test]
fn image_kernels_match_reference_kernels() {
    let failures = mismatches(&image_cases(), &mut Lcg(42));
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

/// The float32 depthwise convolutions' cases ([`depthwise_cases`]), a test of their own so
/// that they can run alone on a slow OpenCL device.
#[test]
fn depthwise_kernels_match_reference_kernels() {
    let failures = mismatches(&depthwise_cases(), &mut Lcg(42));
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

/// The pooling operators', `nn.fast_softmax`'s and the normalisations' cases ([`pool_cases`]), a test of their own
/// so that they can run alone on a slow OpenCL device.
#[test]
fn pool_kernels_match_reference_kernels() {
    let failures = mismatches(&pool_cases(), &mut Lcg(42));
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

/// Each case compiled at opt-level 0 and 2 and run on three draws of pseudo-random
/// arguments: a line for each case that does not compile, has no JIT kernel at opt-level 2,
/// or whose results differ.
fn mismatches(cases: &[(String, Vec<String>)], rng: &mut Lcg) -> Vec<String> {
    let mut failures = vec![];
    for (call, types) in cases {
        let params: Vec<String> =
            types.iter().enumerate().map(|(i, t)| format!("%{}: {t}", (b'a' + i as u8) as char)).collect();
        let src = format!("def @main({}) {{ {call} }}", params.join(", "));
        let compiled = (
            Program::builder().source("case.relay", &src).opt_level(0).build(),
            Program::builder().source("case.relay", &src).opt_level(2).device(common::test_device()).build(),
        );
        let (reference, jit) = match compiled {
            (Ok(r), Ok(j)) => (r, j),
            (r, j) => {
                let why =
                    |r: Result<Program, relay::Error>| r.err().map(|e| e.to_string()).unwrap_or_default();
                failures.push(format!("{src}: does not compile: {} / {}", why(r), why(j)));
                continue;
            }
        };
        if jit.executable().kernels.iter().all(|k| k.kernel.is_none()) {
            failures.push(format!("{src}: no JIT kernel at opt-level 2"));
            continue;
        }
        for _ in 0..3 {
            let args: Vec<Json> = types.iter().map(|t| argument(t, rng)).collect();
            match (run(&reference, &args), run(&jit, &args)) {
                (Ok(want), Ok(got)) if close(&want, &got) => {}
                (want, got) => {
                    failures.push(format!("{src} on {args:?}:\n  reference {want:?}\n  jit       {got:?}"))
                }
            }
        }
    }
    failures
}

/// `ndarray_size` of a statically shaped tensor is a constant at opt-level 2 (FoldConstant, as
/// TVM's); below it the call runs its kir rule.
#[test]
fn ndarray_size_folds_at_opt_level_2_and_fuses_below() {
    let src = "def @main(%a: Tensor[(3, 4), float32]) { ndarray_size(%a, dtype=\"int64\") }";
    let build = |level| {
        let b = Program::builder().source("t.relay", src).opt_level(level);
        b.device(common::test_device()).build().unwrap_or_else(|e| panic!("{e}"))
    };
    let args = [argument("Tensor[(3, 4), float32]", &mut Lcg(3))];
    let want = run(&build(0), &args).unwrap();
    for (level, jit_kernels) in [(1, 1), (2, 0)] {
        let program = build(level);
        let kernels = program.executable().kernels.iter().filter(|k| k.kernel.is_some()).count();
        assert_eq!(kernels, jit_kernels, "JIT kernels at opt-level {level}");
        assert_eq!(run(&program, &args).unwrap(), want, "opt-level {level}");
    }
}

/// Compiles `src` at opt-level 0 and 2 and checks the fused program against the reference on
/// pseudo-random arguments; returns the fused program.
fn fused_matches_reference(src: &str, types: &[&str]) -> Program {
    let reference =
        Program::builder().source("t.relay", src).opt_level(0).build().unwrap_or_else(|e| panic!("{e}"));
    let fused = Program::builder()
        .source("t.relay", src)
        .opt_level(2)
        .device(common::test_device())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut rng = Lcg(7);
    let args: Vec<Json> = types.iter().map(|t| argument(t, &mut rng)).collect();
    let (want, got) = (run(&reference, &args).unwrap(), run(&fused, &args).unwrap());
    assert!(close(&want, &got), "reference {want}\nfused {got}");
    fused
}

#[test]
fn anchors_apply_their_elementwise_consumers_in_the_epilogue() {
    let types = ["Tensor[(1, 3, 6, 6), float32]", "Tensor[(4, 3, 3, 3), float32]", "Tensor[(4), float32]"];
    let src = "def @main(%a: Tensor[(1, 3, 6, 6), float32], %b: Tensor[(4, 3, 3, 3), float32], %c: Tensor[(4), float32]) {
        nn.relu(nn.bias_add(nn.conv2d(%a, %b, padding=[1, 1]), %c))
    }";
    let fused = fused_matches_reference(src, &types);
    let kernels = &fused.executable().kernels;
    assert_eq!(kernels.len(), 1, "{kernels:?}");
    let k = relay::compiler::kir::Kernel::from_bytes(kernels[0].kernel.as_deref().unwrap()).unwrap();
    // The convolution is im2col and one native matrix product; bias and relu are applied as
    // its result is read into the output, not in passes of their own.
    let temps: Vec<_> = k.buffers_with_role(relay::compiler::kir::BufferRole::Temp).collect();
    assert_eq!(temps.len(), 2, "an im2col buffer and the product:\n{k}");
    assert!(k.has_intrinsics(), "{k}");
    assert_eq!(k.to_string().matches("out[").count(), 1, "one store to the output:\n{k}");
}

/// [`fused_matches_reference`] on parameter types built at run time; the fused program's first
/// kernel.
fn first_kernel_matching_reference(src: &str, types: &[String]) -> relay::compiler::kir::Kernel {
    let types: Vec<&str> = types.iter().map(String::as_str).collect();
    let fused = fused_matches_reference(src, &types);
    relay::compiler::kir::Kernel::from_bytes(fused.executable().kernels[0].kernel.as_deref().unwrap())
        .unwrap()
}

#[test]
fn einsum_matrix_products_are_native_products() {
    // A contraction whose `a` is the output's leading axes then the summed ones, and whose `b`
    // is the summed axes and the last output axis (either order), is kir's `gemm`; a
    // different output order, a diagonal, a batch label on both sides or integers stay loops.
    let f32s = |a: &str, b: &str| [format!("Tensor[{a}, float32]"), format!("Tensor[{b}, float32]")];
    for (equation, [a, b], native) in [
        ("ij,jk->ik", f32s("(3, 4)", "(4, 5)"), true),
        ("ik,jk->ij", f32s("(3, 4)", "(5, 4)"), true),
        ("bij,jk->bik", f32s("(2, 3, 4)", "(4, 5)"), true),
        ("ijl,jlk->ik", f32s("(3, 4, 2)", "(4, 2, 5)"), true),
        ("j,jk->k", f32s("(4)", "(4, 5)"), true),
        ("ij,jk->ki", f32s("(3, 4)", "(4, 5)"), false),
        ("ij,jk->k", f32s("(3, 4)", "(4, 5)"), false),
        ("bij,bjk->bik", f32s("(2, 3, 4)", "(2, 4, 5)"), false),
        ("ii,ik->ik", f32s("(4, 4)", "(4, 5)"), false),
        ("ij,jk->ik", ["Tensor[(3, 4), int32]".into(), "Tensor[(4, 5), int32]".into()], false),
    ] {
        let src = format!("def @main(%a: {a}, %b: {b}) {{ einsum((%a, %b), equation=\"{equation}\") }}");
        let k = first_kernel_matching_reference(&src, &[a.clone(), b.clone()]);
        assert_eq!(k.has_intrinsics(), native, "{equation}:\n{k}");
    }
}

#[test]
fn strided_columns_are_copied_by_vectorised_gathers() {
    // Column stride 3 and 2 with padding: im2col's row copies load every third (second)
    // element in vector loops, tails included (11 and 6 output columns).
    for (stride, width) in [(3, 31), (2, 13)] {
        let types =
            [format!("Tensor[(1, 3, 9, {width}), float32]"), "Tensor[(5, 3, 3, 3), float32]".to_string()];
        let src = format!(
            "def @main(%a: Tensor[(1, 3, 9, {width}), float32], %b: Tensor[(5, 3, 3, 3), float32]) {{
                nn.conv2d(%a, %b, strides=[1, {stride}], padding=[1, 1])
            }}"
        );
        let k = first_kernel_matching_reference(&src, &types);
        let text = k.to_string();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let copies: Vec<usize> = (1..lines.len()).filter(|&i| lines[i].starts_with("im2col[")).collect();
        assert!(!copies.is_empty(), "{k}");
        for i in copies {
            assert!(lines[i - 1].ends_with("vectorize {"), "a scalar im2col copy:\n{k}");
        }
    }
}

#[test]
fn pointwise_convolutions_of_one_image_read_the_data_in_place() {
    // A MobileNet-v2 projection (1×1, stride 1, no padding, one image): the product reads
    // the NCHW data as the `[c, h·w]` matrix, so the kernel's only temp is the product's; so
    // does each image of two. With padding or a stride the windows are no longer that
    // matrix: im2col.
    for (data, attrs, temps) in [
        ("(1, 6, 5, 7)", "", 1),
        ("(1, 6, 5, 7)", ", padding=[1, 0]", 2),
        ("(1, 6, 5, 7)", ", strides=[2, 1]", 2),
        ("(2, 6, 5, 7)", "", 1),
    ] {
        let types = [
            format!("Tensor[{data}, float32]"),
            "Tensor[(4, 6, 1, 1), float32]".into(),
            "Tensor[(4), float32]".into(),
        ];
        let src = format!(
            "def @main(%a: {}, %b: {}, %c: {}) {{
                clip(nn.bias_add(nn.conv2d(%a, %b{attrs}), %c), a_min=0.0, a_max=6.0)
            }}",
            types[0], types[1], types[2]
        );
        let k = first_kernel_matching_reference(&src, &types);
        let found = k.buffers_with_role(relay::compiler::kir::BufferRole::Temp).count();
        assert_eq!(found, temps, "{data}{attrs}:\n{k}");
        assert!(k.has_intrinsics(), "{k}");
    }
}

#[test]
fn convolutions_tiled_by_output_rows_match_the_reference() {
    // Enough output rows for several tiles (`stdlib`'s `compute/im2col.rs`): a 3×3 window
    // with padding 1 at stride (2, 1), whose first tile and short last tile lose rows to the
    // top and bottom padding that the looped tiles between them fill with data in the reused
    // im2col temp (a last tile that left them would read the previous tile's rows); a
    // pointwise convolution of two images read in place, a block of columns per tile; and at
    // stride 1 the window product (`compute/window_gemm.rs`), its looped tiles and a short
    // last one each reading the padded image in place at their first row.
    for (data, weights, oc, attrs, form) in [
        ("(1, 16, 64, 64)", "(4, 16, 3, 3)", 4, ", padding=[1, 1], strides=[2, 1]", "ldb="),
        ("(2, 4, 20, 128)", "(64, 4, 1, 1)", 64, "", "ldb="),
        ("(1, 4, 64, 64)", "(64, 4, 3, 3)", 64, ", padding=[1, 1]", "rows=[(4, 4356), (3, 66), (3, 1)]"),
    ] {
        let types = [
            format!("Tensor[{data}, float32]"),
            format!("Tensor[{weights}, float32]"),
            format!("Tensor[({oc}), float32]"),
        ];
        let src = format!(
            "def @main(%a: {}, %b: {}, %c: {}) {{
                nn.relu(nn.bias_add(nn.conv2d(%a, %b{attrs}), %c))
            }}",
            types[0], types[1], types[2]
        );
        let k = first_kernel_matching_reference(&src, &types);
        let text = k.to_string();
        assert!(text.matches("gemm(").count() >= 2, "several tiles:\n{k}");
        assert!(text.contains(form), "{form}:\n{k}");
    }
}

#[test]
fn convolutions_of_several_images_are_one_matrix_product() {
    // Three images, strides and asymmetric padding: each image's tiles multiply a block of the
    // im2col matrix by the weights in one native product.
    let types = ["Tensor[(3, 2, 7, 5), float32]", "Tensor[(4, 2, 3, 3), float32]"];
    let src = "def @main(%a: Tensor[(3, 2, 7, 5), float32], %b: Tensor[(4, 2, 3, 3), float32]) {
        nn.relu(nn.conv2d(%a, %b, strides=[2, 1], padding=[1, 0], dilation=[1, 2]))
    }";
    let fused = fused_matches_reference(src, &types);
    let kernels = &fused.executable().kernels;
    assert_eq!(kernels.len(), 1, "{kernels:?}");
    let k = relay::compiler::kir::Kernel::from_bytes(kernels[0].kernel.as_deref().unwrap()).unwrap();
    assert!(k.has_intrinsics(), "{k}");
}

#[test]
fn depthwise_convolutions_are_window_products_and_padded_pools_read_windows_without_bounds_checks() {
    // A MobileNet block's depthwise layer with its bias, relu6 and residual add: one kernel,
    // at stride 1 one window product per channel over the padded channel with the epilogue
    // fused, relu6's `clip` the only select; at stride 2 (`depthwise.rs`'s `MAX_STRIDE`)
    // `window.rs`'s loops, one nest per region. And a padded max pool, whose window reads
    // need no selects or clamps (the output is split into regions by the taps inside the
    // image).
    let dw = |stride: usize, out: &str| {
        let types = [
            "Tensor[(1, 4, 9, 10), float32]".to_string(),
            "Tensor[(4, 1, 3, 3), float32]".to_string(),
            "Tensor[(4), float32]".to_string(),
            format!("Tensor[{out}, float32]"),
        ];
        let src = format!(
            "def @main(%a: {}, %b: {}, %c: {}, %d: {}) {{
                add(clip(nn.bias_add(nn.conv2d(%a, %b, strides=[{stride}, {stride}], padding=[1, 1], groups=4), %c), a_min=0.0, a_max=6.0), %d)
            }}",
            types[0], types[1], types[2], types[3]
        );
        (src, types.to_vec())
    };
    // Stride 1: rows `[(3, wp = 12), (3, 1)]`.
    let (src, types) = dw(1, "(1, 4, 9, 10)");
    let k = first_kernel_matching_reference(&src, &types);
    let text = k.to_string();
    assert_eq!(text.matches("gemm(").count(), 1, "one product per channel:\n{k}");
    assert!(text.contains("rows=[(3, 12), (3, 1)]"), "{k}");
    assert_eq!(text.matches("out[").count(), 1, "{k}");
    assert_eq!(text.matches("select(").count(), 2, "{k}");
    let (src, types) = dw(2, "(1, 4, 5, 5)");
    let k = first_kernel_matching_reference(&src, &types);
    let text = k.to_string();
    let stores = text.matches("out[").count();
    assert!(!text.contains("gemm(") && stores > 1, "one loop nest per region:\n{k}");
    assert_eq!(text.matches("select(").count(), 2 * stores, "{k}");
    assert!(!text.contains("min(") && !text.contains("clamp("), "{k}");
    let pool_types = ["Tensor[(1, 3, 13, 11), float32]"];
    let pool_src = "def @main(%a: Tensor[(1, 3, 13, 11), float32]) {
        nn.max_pool2d(%a, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])
    }";
    let fused = fused_matches_reference(pool_src, &pool_types);
    let kernels = &fused.executable().kernels;
    assert_eq!(kernels.len(), 1, "{kernels:?}");
    let k = relay::compiler::kir::Kernel::from_bytes(kernels[0].kernel.as_deref().unwrap()).unwrap();
    let text = k.to_string();
    assert!(text.matches("out[").count() > 1, "one loop nest per region:\n{k}");
    assert!(!text.contains("select(") && !text.contains("min(") && !text.contains("clamp("), "{k}");
}

#[test]
fn a_batch_matmul_against_one_matrix_is_one_matrix_product() {
    // `y` broadcast over the batch: the 3×4 rows of `x` times `y`, transposed or not.
    for (y_shape, tb) in [("(1, 6, 5)", "True"), ("(1, 5, 6)", "False")] {
        let types = ["Tensor[(3, 4, 5), float32]".to_string(), format!("Tensor[{y_shape}, float32]")];
        let src = format!(
            "def @main(%x: Tensor[(3, 4, 5), float32], %y: Tensor[{y_shape}, float32]) {{
                nn.batch_matmul(%x, %y, transpose_b={tb})
            }}"
        );
        let k = first_kernel_matching_reference(&src, &types);
        assert!(k.has_intrinsics(), "{k}");
    }
}

#[test]
fn an_anchor_tail_stops_at_a_reduction() {
    // TVM's rule: the dense absorbs its elementwise consumers, but an anchor group does not
    // fuse into a reduction, so `sum` is a second kernel.
    let types = ["Tensor[(2, 5), float32]", "Tensor[(3, 5), float32]"];
    let src = "def @main(%a: Tensor[(2, 5), float32], %b: Tensor[(3, 5), float32]) {
        let %d = nn.dense(%a, %b);
        let %e = exp(negative(%d));
        sum(%e, axis=[1])
    }";
    let fused = fused_matches_reference(src, &types);
    let names: Vec<&str> = fused.executable().kernels.iter().map(|k| k.op.as_str()).collect();
    assert_eq!(names, ["fused_nn_dense_negative_exp", "fused_sum"]);
}

#[test]
fn fused_executables_save_and_load() {
    let src = "def @main(%a: Tensor[(3, 4), float32], %b: Tensor[(4), float32]) { tanh(add(%a, %b)) }";
    let fused = fused_matches_reference(src, &["Tensor[(3, 4), float32]", "Tensor[(4), float32]"]);
    let loaded = Program::load_on(&fused.save(), fused.device()).unwrap();
    assert_eq!(loaded.executable(), fused.executable());
    let mut rng = Lcg(9);
    let args: Vec<Json> =
        ["Tensor[(3, 4), float32]", "Tensor[(4), float32]"].iter().map(|t| argument(t, &mut rng)).collect();
    assert_eq!(run(&loaded, &args).unwrap(), run(&fused, &args).unwrap());
}

/// The injective operators whose rules came with the trigonometric ones. The index operands
/// are in [-5, 5], so every indexed axis has at least 6 elements (the reference kernel
/// refuses an index outside `-n..n`).
fn injective_cases() -> Vec<Case> {
    vec![
        ("gather_nd(%a, %b)", &["Tensor[(6, 7, 3), float32]", "Tensor[(2, 4), int32]"]),
        ("gather_nd(%a, %b)", &["Tensor[(6, 6), int32]", "Tensor[(2, 3, 2), int32]"]),
        ("gather_nd(%a, %b, batch_dims=1)", &["Tensor[(2, 6, 3), float32]", "Tensor[(1, 2, 5), int32]"]),
        ("gather_nd(%a, %b)", &["Tensor[(6, 2), float32]", "Tensor[(1, 0), int32]"]),
        ("matrix_set_diag(%a, %b)", &["Tensor[(2, 3, 4), float32]", "Tensor[(2, 3), float32]"]),
        ("matrix_set_diag(%a, %b, k1=-1, k2=2)", &["Tensor[(4, 3), int32]", "Tensor[(4, 3), int32]"]),
        (
            "matrix_set_diag(%a, %b, k1=-2, k2=1, super_diag_right_align=True, sub_diag_right_align=False)",
            &["Tensor[(2, 5, 4), float32]", "Tensor[(2, 4, 4), float32]"],
        ),
        ("matrix_set_diag(%a, %b, k1=1, k2=1)", &["Tensor[(3, 2), float32]", "Tensor[(1), float32]"]),
        (
            "adv_index((%a, %b, %c))",
            &["Tensor[(6, 7, 3), float32]", "Tensor[(2, 1), int32]", "Tensor[(4), int32]"],
        ),
        ("adv_index((%a, %b))", &["Tensor[(6, 2), int32]", "Tensor[(3, 1, 2), int32]"]),
        ("adv_index((%a, %b, %c))", &["Tensor[(6, 6), float32]", "Tensor[(1), int32]", "Tensor[(0), int32]"]),
        // `einsum`: products, a transpose, diagonals, an outer product, sums (one over an
        // empty axis), `...` broadcasting, integers.
        ("einsum((%a, %b), equation=\"ij,jk->ik\")", &["Tensor[(3, 4), float32]", "Tensor[(4, 5), float32]"]),
        (
            "einsum((%a, %b), equation=\"bij,bkj\")",
            &["Tensor[(2, 3, 4), float32]", "Tensor[(2, 5, 4), float32]"],
        ),
        ("einsum((%a,), equation=\"ij->ji\")", &["Tensor[(3, 4), float32]"]),
        ("einsum((%a,), equation=\"ii->i\")", &["Tensor[(4, 4), float32]"]),
        ("einsum((%a,), equation=\"ii\")", &["Tensor[(4, 4), float32]"]),
        ("einsum((%a, %b), equation=\"i,j->ij\")", &["Tensor[(3), float32]", "Tensor[(4), float32]"]),
        ("einsum((%a,), equation=\"ij->\")", &["Tensor[(3, 4), float32]"]),
        ("einsum((%a,), equation=\"ij->i\")", &["Tensor[(3, 0), float32]"]),
        (
            "einsum((%a, %b), equation=\"...ij,...jk->...ik\")",
            &["Tensor[(2, 1, 3, 4), float32]", "Tensor[(3, 4, 2), float32]"],
        ),
        (
            "einsum((%a, %b, %c), equation=\"ij,jk,k\")",
            &["Tensor[(2, 3), int32]", "Tensor[(3, 4), int32]", "Tensor[(4), int32]"],
        ),
        // `reinterpret`: both directions between `float32` and the 32-bit integers (with a
        // consumer between them: the next float up), 64 and 8 bits through casts. (Half
        // floats: the rule declines, and the reference kernel fails on them, being handed
        // operands widened to `float32`.)
        ("reinterpret(%a, dtype=\"int32\")", &["Tensor[(2, 9), float32]"]),
        ("reinterpret(%a, dtype=\"uint32\")", &["Tensor[(3), float32]"]),
        ("reinterpret(%a, dtype=\"float32\")", &["Tensor[(2, 9), int32]"]),
        (
            "reinterpret(add(reinterpret(%a, dtype=\"int32\"), 1), dtype=\"float32\")",
            &["Tensor[(3, 9), float32]"],
        ),
        ("reinterpret(cast(%a, dtype=\"float64\"), dtype=\"int64\")", &["Tensor[(5), float32]"]),
        ("reinterpret(cast(%a, dtype=\"int64\"), dtype=\"float64\")", &["Tensor[(5), int32]"]),
        ("reinterpret(cast(%a, dtype=\"int8\"), dtype=\"uint8\")", &["Tensor[(5), int32]"]),
        // `meshgrid` (its canonical form: one `broadcast_to` per grid), whole and read by a
        // consumer, with a 0-d field.
        ("meshgrid((%a, %b))", &["Tensor[(3), float32]", "Tensor[(4), float32]"]),
        ("meshgrid((%a, %b, %c), indexing=\"xy\")", &["Tensor[(3), int32]", "Tensor[(2), int32]", "int32"]),
        (
            "let %g = meshgrid((%a, %b), indexing=\"xy\"); add(%g.0, %g.1)",
            &["Tensor[(3), float32]", "Tensor[(4), float32]"],
        ),
    ]
}

/// The float32 cases of [`cases`] that the half-float test runs again in `float16` and
/// `bfloat16`: every listed elementwise, broadcast and reduction operator, the anchors
/// (dense, convolution, softmax, layer norm) with their elementwise consumers, and the
/// pooling cases ([`pool_cases`]).
fn half_float_cases() -> Vec<(String, Vec<String>)> {
    let float = |(_, types): &(String, Vec<String>)| types.iter().any(|t| t.contains(F));
    let mut out: Vec<(String, Vec<String>)> = cases()
        .into_iter()
        .chain(pool_cases())
        .filter(float)
        .filter(not_standardised)
        .step_by(half_float_stride())
        .collect();
    out.push((
        "nn.relu(nn.bias_add(nn.conv2d(%a, %b, padding=[1, 1]), %c))".into(),
        vec![
            "Tensor[(1, 3, 6, 6), float32]".into(),
            "Tensor[(4, 3, 3, 3), float32]".into(),
            "Tensor[(4), float32]".into(),
        ],
    ));
    // Chains whose intermediate results need more bits than a half float has: each operator
    // rounds, so a kernel rounding only its output differs.
    let pair = || vec!["Tensor[(4, 6), float32]".to_string(), "Tensor[(6), float32]".to_string()];
    for chain in [
        "add(multiply(%a, %b), %a)",
        "divide(add(%a, %b), %b)",
        "subtract(multiply(%a, %a), multiply(%b, %b))",
    ] {
        out.push((chain.into(), pair()));
    }
    out.push((
        "sigmoid(add(nn.dense(%a, %b), %c))".into(),
        vec![
            "Tensor[(2, 8), float32]".into(),
            "Tensor[(3, 8), float32]".into(),
            "Tensor[(3), float32]".into(),
        ],
    ));
    out
}

/// Whether a case is not an `nn.instance_norm` or `nn.group_norm`: SimplifyInference
/// decomposes them into a mean, a variance and arithmetic, each rounded to the half float (as
/// TVM's decomposition does), where the reference kernel rounds once, so they differ by more
/// than a neighbouring half float; their `float32` cases hold them to [`TOL`].
fn not_standardised((call, _): &(String, Vec<String>)) -> bool {
    !call.contains("instance_norm") && !call.contains("group_norm")
}

/// Every how many listed cases [`half_float_cases`] takes: all on the CPU; every third on an
/// OpenCL device, where what is particular to half floats is the loads, stores and rounding
/// of `opencl_c/half.rs`, the same for every operator, and each operator's `float32`
/// arithmetic is [`jit_kernels_match_reference_kernels`]' there. POCL compiles each case's
/// kernels anew, and all of them took CI's POCL step past its 45-minute bound.
fn half_float_stride() -> usize {
    match common::test_device() {
        relay::Device::Cpu => 1,
        _ => 3,
    }
}

/// The operators whose fused kernels may differ from their reference kernels in `float32`
/// (the JIT's polynomial `exp`/`log`/`tanh`/`sigmoid`/`erf`, fused multiply-adds, sums in
/// another order): their half-float results may then round to the neighbouring half float.
fn approximated(call: &str) -> bool {
    let words = [
        "exp",
        "log",
        "tanh",
        "sigmoid",
        "erf",
        // The polynomial trigonometric and hyperbolic functions (`sin` also names `asin` and
        // `sinh`, `cos` `acos` and `cosh`, `tan` `atan`).
        "sin",
        "cos",
        "tan",
        "softmax",
        "sum",
        "mean",
        "prod",
        "dense",
        "matmul",
        "conv2d",
        "avg_pool",
        "layer_norm",
        "l2_normalize",
        "variance",
        "std",
        "power",
        "collapse_sum",
        "gelu",
        "softplus",
        "selu",
        "elu",
        "silu",
        "mish",
        "celu",
        "hard",
        "norm",
    ];
    words.iter().any(|w| call.contains(w))
}

/// Fused kernels over `float16` and `bfloat16` compute in `float32` and round each operator's
/// result once, as the reference kernels do: their results are the reference's bit for bit,
/// except where the `float32` values themselves may differ ([`approximated`]), which agree
/// within one unit in the last place of the half float.
#[test]
fn half_float_kernels_match_reference_kernels_bit_for_bit() {
    let mut failures = vec![];
    let mut rng = Lcg(16);
    let cases = half_float_cases();
    let (mut exact, mut fused) = (0, 0);
    for (dtype, ulp) in [("float16", 2f64.powi(-10)), ("bfloat16", 2f64.powi(-7))] {
        for (call, types) in &cases {
            let types: Vec<String> = types.iter().map(|t| t.replace(F, dtype)).collect();
            let call = call.replace(F, dtype);
            let params: Vec<String> = types
                .iter()
                .enumerate()
                .map(|(i, t)| format!("%{}: {t}", (b'a' + i as u8) as char))
                .collect();
            let src = format!("def @main({}) {{ {call} }}", params.join(", "));
            let compiled = (
                Program::builder().source("case.relay", &src).opt_level(0).build(),
                Program::builder()
                    .source("case.relay", &src)
                    .opt_level(2)
                    .device(common::test_device())
                    .build(),
            );
            let (Ok(reference), Ok(jit)) = compiled else {
                // An operator without half-float support is not this test's subject.
                continue;
            };
            if jit.executable().kernels.iter().all(|k| k.kernel.is_none()) {
                failures.push(format!("{src}: no JIT kernel at opt-level 2"));
                continue;
            }
            fused += 1;
            let tol = if approximated(&call) { ulp } else { 0.0 };
            exact += usize::from(tol == 0.0);
            for _ in 0..3 {
                let args: Vec<Json> = types.iter().map(|t| argument(t, &mut rng)).collect();
                match (run(&reference, &args), run(&jit, &args)) {
                    (Ok(want), Ok(got)) if want == got || within(&want, &got, tol) => {}
                    (want, got) => failures
                        .push(format!("{src} on {args:?}:\n  reference {want:?}\n  jit       {got:?}")),
                }
            }
        }
    }
    let stride = half_float_stride();
    assert!(fused > 200 / stride && exact > 100 / stride, "{fused} fused cases, {exact} exact");
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}
