//! The cases of `fusion_ops` drawn on seeded random shapes, a generator per operator family:
//! resampling and grids (`image.*`, `nn.upsampling*`) and pooling of every rank with the
//! operators that share its test (`nn.fast_softmax`, the decomposed normalisations), and
//! float32 depthwise convolutions with MobileNet's epilogue.

use super::{Case, F};
use crate::common::Lcg;

/// The resampling and grid operators (`image.*`, `nn.upsampling*`): every method, rounding
/// method and coordinate transformation mode, both layouts, on seeded random sizes (down- and
/// upsampling, size 1 included). Crop boxes and grids are scaled so that samples fall both
/// inside and outside the image; box indices are brought into range (the fused kernel clamps
/// where the reference reports an error).
pub(crate) fn image_cases() -> Vec<(String, Vec<String>)> {
    let mut rng = Lcg(16);
    let mut size = |lo: usize, hi: usize| lo + rng.below(hi - lo + 1);
    let mut out: Vec<(String, Vec<String>)> = vec![];
    let mut push = |call: String, types: &[String]| out.push((call, types.to_vec()));
    let modes = ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn"];
    let roundings = ["", "round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"];
    for (i, mode) in modes.iter().enumerate() {
        for method in ["nearest_neighbor", "linear", "cubic"] {
            let (h, w, oh, ow) = (size(1, 6), size(1, 6), size(1, 9), size(1, 9));
            let rounding = roundings[(i + method.len()) % roundings.len()];
            push(
                format!(
                    "image.resize2d(%a, size=[{oh}, {ow}], method=\"{method}\", coordinate_transformation_mode=\"{mode}\", rounding_method=\"{rounding}\")"
                ),
                &[format!("Tensor[(2, 3, {h}, {w}), float32]")],
            );
        }
    }
    for rounding in roundings {
        let (w, ow) = (size(2, 7), size(2, 12));
        push(
            format!("image.resize1d(%a, size=[{ow}], method=\"nearest_neighbor\", coordinate_transformation_mode=\"align_corners\", rounding_method=\"{rounding}\")"),
            &[format!("Tensor[(1, 2, {w}), float32]")],
        );
    }
    let fixed = [
        ("image.resize1d(%a, size=[7], layout=\"NWC\", method=\"cubic\", cubic_alpha=-0.75, cubic_exclude=1)", "Tensor[(2, 4, 3), float32]"),
        ("image.resize2d(%a, size=[5, 6], method=\"cubic\", coordinate_transformation_mode=\"half_pixel\", cubic_exclude=1)", "Tensor[(1, 2, 3, 4), float32]"),
        ("image.resize2d(%a, size=[5, 7], layout=\"NHWC\", method=\"linear\", coordinate_transformation_mode=\"tf_crop_and_resize\", roi=[-0.2, 0.1, 0.9, 1.3], extrapolation_value=1.5)", "Tensor[(2, 4, 3, 3), float32]"),
        ("image.resize2d(%a, size=[4, 1], method=\"cubic\", coordinate_transformation_mode=\"tf_crop_and_resize\", roi=[0.1, 0.2, 0.8, 0.6])", "Tensor[(1, 2, 5, 4), float32]"),
        ("image.resize2d(%a, size=[3, 8], method=\"nearest_neighbor\", coordinate_transformation_mode=\"tf_crop_and_resize\", roi=[0.0, -0.5, 1.0, 1.5])", "Tensor[(1, 1, 4, 4), float32]"),
        ("image.resize2d(%a, size=[5, 3], method=\"linear\", out_dtype=\"float32\")", "Tensor[(1, 2, 3, 4), int32]"),
        ("image.resize2d(%a, size=[6, 6], method=\"nearest_neighbor\", coordinate_transformation_mode=\"asymmetric\")", "Tensor[(1, 2, 3, 4), int32]"),
        ("image.resize3d(%a, size=[3, 4, 5], method=\"linear\", coordinate_transformation_mode=\"align_corners\")", "Tensor[(1, 2, 2, 3, 3), float32]"),
        ("image.resize3d(%a, size=[2, 5, 3], layout=\"NDHWC\", method=\"nearest_neighbor\")", "Tensor[(2, 3, 2, 4, 2), float32]"),
        ("image.resize3d(%a, size=[3, 2, 4], method=\"cubic\", coordinate_transformation_mode=\"pytorch_half_pixel\")", "Tensor[(1, 1, 2, 3, 3), float32]"),
        ("nn.upsampling(%a, scale_h=2f, scale_w=3f)", "Tensor[(1, 2, 3, 2), float32]"),
        ("nn.upsampling(%a, scale_h=1.5f, scale_w=2.5f, method=\"bilinear\", align_corners=True)", "Tensor[(2, 2, 3, 4), float32]"),
        ("nn.upsampling(%a, scale_h=2f, scale_w=0.5f, method=\"bicubic\")", "Tensor[(1, 3, 3, 4), float32]"),
        ("nn.upsampling(%a, scale_h=3f, scale_w=2f, layout=\"NHWC\", method=\"bilinear\")", "Tensor[(2, 3, 2, 2), float32]"),
        ("nn.upsampling(%a, scale_h=2f, scale_w=2f)", "Tensor[(1, 1, 2, 3), int32]"),
        ("nn.upsampling3d(%a, scale_d=2f, scale_h=2f, scale_w=2f)", "Tensor[(1, 2, 2, 3, 2), float32]"),
        ("nn.upsampling3d(%a, scale_d=1.5f, scale_h=2f, scale_w=1f, method=\"trilinear\", coordinate_transformation_mode=\"align_corners\")", "Tensor[(1, 2, 2, 3, 2), float32]"),
        ("nn.upsampling3d(%a, scale_d=2f, scale_h=1f, scale_w=2f, layout=\"NDHWC\", method=\"trilinear\")", "Tensor[(1, 2, 2, 2, 3), float32]"),
        ("image.affine_grid(%a, target_shape=[3, 5])", "Tensor[(2, 2, 3), float32]"),
        ("image.affine_grid(%a, target_shape=[1, 4])", "Tensor[(1, 2, 3), float32]"),
    ];
    for (call, ty) in fixed {
        push(call.to_string(), &[ty.to_string()]);
    }
    for method in ["bilinear", "nearest", "bicubic"] {
        for padding in ["zeros", "border", "reflection"] {
            for align in ["False", "True"] {
                let (h, w, oh, ow) = (size(1, 5), size(1, 5), size(1, 6), size(1, 6));
                // Grid values of ±3 scaled to ±1.2 (mostly inside), or left wide for the
                // paddings that mirror and clamp them.
                let grid = if padding == "zeros" { "multiply(%b, 0.4f)" } else { "%b" };
                push(
                    format!("image.grid_sample(%a, {grid}, method=\"{method}\", padding_mode=\"{padding}\", align_corners={align})"),
                    &[format!("Tensor[(2, 3, {h}, {w}), float32]"), format!("Tensor[(2, 2, {oh}, {ow}), float32]")],
                );
            }
        }
    }
    for (method, layout, crop, extrapolation) in [
        ("bilinear", "NCHW", "[4, 5]", "0f"),
        ("nearest_neighbor", "NCHW", "[3, 6]", "-1f"),
        ("bilinear", "NHWC", "[1, 3]", "2f"),
        ("nearest_neighbor", "NHWC", "[5, 1]", "0f"),
    ] {
        let (h, w) = (size(1, 6), size(1, 6));
        let data = if layout == "NCHW" { format!("(3, 2, {h}, {w})") } else { format!("(3, {h}, {w}, 2)") };
        push(
            format!("image.crop_and_resize(%a, add(multiply(%b, 0.3f), 0.4f), floor_mod(%c, 3), crop_size={crop}, layout=\"{layout}\", method=\"{method}\", extrapolation_value={extrapolation})"),
            &[format!("Tensor[{data}, float32]"), "Tensor[(4, 4), float32]".to_string(), "Tensor[(4), int32]".to_string()],
        );
    }
    out
}

/// The pooling family on seeded random shapes: max and average pooling of 1, 2 and 3 spatial
/// axes in the canonical and the channel-last layout (odd extents, padding on either side,
/// strides, dilation, `ceil_mode`, `count_include_pad`; max pooling of `int32` too), adaptive
/// pooling (output extents below, at and above the input's), global pooling, windows of more
/// taps than are unrolled, `nn.fast_softmax`, and the normalisations `SimplifyInference`
/// decomposes (`nn.instance_norm`, `nn.group_norm`, `nn.l2_normalize`).
pub(crate) fn pool_cases() -> Vec<(String, Vec<String>)> {
    let mut rng = Lcg(17);
    let mut out: Vec<(String, Vec<String>)> = vec![];
    let layouts = [("NCW", "NWC"), ("NCHW", "NHWC"), ("NCDHW", "NDHWC")];
    let list = |v: &[usize]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
    // `[n, c, spatial..]` written in `layout` (canonical or channel-last).
    let shape = |n: usize, c: usize, spatial: &[usize], channel_last: bool| {
        let mut dims = vec![n];
        if !channel_last {
            dims.push(c);
        }
        dims.extend(spatial);
        if channel_last {
            dims.push(c);
        }
        format!("({})", list(&dims))
    };
    for (rank, (canonical, last)) in (1..=3).zip(layouts) {
        for round in 0..4 {
            let channel_last = round % 2 == 1;
            let layout = if channel_last { last } else { canonical };
            for op in ["max", "avg"] {
                let mut size = |lo: usize, hi: usize| lo + rng.below(hi - lo + 1);
                let (mut pool, mut strides, mut dilation, mut before, mut after, mut data) =
                    (vec![], vec![], vec![], vec![], vec![], vec![]);
                for _ in 0..rank {
                    let (k, d) = (size(1, 3), size(1, 2));
                    let (b, a) = (size(0, k - 1), size(0, 2));
                    let span = (k - 1) * d + 1;
                    pool.push(k);
                    dilation.push(d);
                    strides.push(size(1, 3));
                    before.push(b);
                    after.push(a);
                    data.push(span.saturating_sub(b + a).max(1) + size(0, 5));
                }
                let ceil = if size(0, 1) == 1 { "True" } else { "False" };
                let count = if size(0, 1) == 1 { ", count_include_pad=True" } else { "" };
                let (extra, dtype) = match op {
                    "avg" => (count, F),
                    _ => ("", if round < 2 { F } else { "int32" }),
                };
                let padding = list(&[before, after].concat());
                out.push((
                    format!(
                        "nn.{op}_pool{rank}d(%a, pool_size=[{}], strides=[{}], dilation=[{}], padding=[{padding}], layout=\"{layout}\", ceil_mode={ceil}{extra})",
                        list(&pool),
                        list(&strides),
                        list(&dilation)
                    ),
                    vec![format!("Tensor[{}, {dtype}]", shape(size(1, 2), size(1, 3), &data, channel_last))],
                ));
            }
            for op in ["avg", "max"] {
                let mut size = |lo: usize, hi: usize| lo + rng.below(hi - lo + 1);
                let data: Vec<usize> = (0..rank).map(|_| size(1, 9)).collect();
                let sizes: Vec<usize> = (0..rank).map(|_| size(1, 6)).collect();
                let dtype = if op == "max" && round == 3 { "int32" } else { F };
                out.push((
                    format!(
                        "nn.adaptive_{op}_pool{rank}d(%a, output_size=[{}], layout=\"{layout}\")",
                        list(&sizes)
                    ),
                    vec![format!("Tensor[{}, {dtype}]", shape(2, size(1, 3), &data, channel_last))],
                ));
            }
        }
    }
    let fixed: &[Case] = &[
        // 27 and 30 taps: loops over the taps rather than unrolled.
        ("nn.max_pool3d(%a, pool_size=[3, 3, 3], padding=[1, 1, 1])", &["Tensor[(1, 2, 5, 4, 6), float32]"]),
        (
            "nn.avg_pool2d(%a, pool_size=[5, 6], strides=[2, 3], padding=[2, 2, 1, 3], layout=\"NHWC\", count_include_pad=True)",
            &["Tensor[(2, 9, 11, 3), float32]"],
        ),
        ("nn.avg_pool1d(%a, pool_size=[4], strides=[3], padding=[2, 3], ceil_mode=True)", &["Tensor[(2, 3, 10), float32]"]),
        ("nn.max_pool1d(%a, pool_size=[2], layout=\"NWC\")", &["Tensor[(1, 7, 5), int32]"]),
        ("nn.global_max_pool2d(%a)", &["Tensor[(2, 3, 9, 8), float32]"]),
        ("nn.global_max_pool2d(%a)", &["Tensor[(1, 2, 3, 5), int32]"]),
        ("nn.global_max_pool2d(%a, layout=\"NHWC\")", &["Tensor[(2, 4, 3, 5), float32]"]),
        ("nn.global_avg_pool2d(%a, layout=\"NHWC\")", &["Tensor[(2, 7, 7, 6), float32]"]),
        ("nn.global_avg_pool2d(%a)", &["Tensor[(1, 3, 9, 11), float32]"]),
        ("nn.adaptive_avg_pool2d(%a, output_size=[1])", &["Tensor[(1, 3, 13, 12), float32]"]),
        ("nn.adaptive_max_pool2d(%a, output_size=[7, 3])", &["Tensor[(1, 2, 14, 9), float32]"]),
        ("nn.adaptive_avg_pool3d(%a, output_size=[2, 3, 4], layout=\"NDHWC\")", &["Tensor[(1, 5, 4, 9, 2), float32]"]),
        // SimplifyInference's decompositions of the normalisations, fused.
        (
            "nn.instance_norm(%a, %b, %c, epsilon=1e-3f)",
            &["Tensor[(2, 3, 4, 5), float32]", "Tensor[(3), float32]", "Tensor[(3), float32]"],
        ),
        (
            "nn.instance_norm(%a, %b, %c, axis=-1, center=False)",
            &["Tensor[(2, 5, 3), float32]", "Tensor[(3), float32]", "Tensor[(3), float32]"],
        ),
        (
            "nn.group_norm(%a, %b, %c, num_groups=2)",
            &["Tensor[(2, 6, 3, 3), float32]", "Tensor[(6), float32]", "Tensor[(6), float32]"],
        ),
        (
            "nn.group_norm(%a, %b, %c, num_groups=3, axis=2, scale=False)",
            &["Tensor[(2, 2, 3, 4), float32]", "Tensor[(3), float32]", "Tensor[(3), float32]"],
        ),
        ("nn.l2_normalize(%a, eps=1e-6f, axis=[1])", &["Tensor[(3, 4, 2), float32]"]),
        ("nn.l2_normalize(%a, eps=0.5f)", &["Tensor[(2, 3), float32]"]),
        ("nn.fast_softmax(%a)", &["Tensor[(3, 7), float32]"]),
        ("nn.fast_softmax(%a, axis=0)", &["Tensor[(4, 2, 5), float32]"]),
        ("nn.relu(nn.max_pool1d(%a, pool_size=[3], padding=[1]))", &["Tensor[(2, 4, 9), float32]"]),
    ];
    out.extend(fixed.iter().map(|(c, ts)| (c.to_string(), ts.iter().map(|t| t.to_string()).collect())));
    out
}

/// Float32 depthwise convolutions (multiplier 1: at stride 1 `stdlib`'s `compute/depthwise.rs`,
/// a window product per channel; at stride 2 `compute/window.rs`'s loops) on seeded random
/// shapes: strides 1 and 2, 3×3 and 5×5 windows,
/// padding 0 to the window's half on each side independently, channel counts that are a
/// multiple of nothing, and widths from below one 16-float vector to past four (full vectors
/// and a masked last one, several register tiles), each with MobileNet's bias + relu6
/// epilogue, half of them with a residual add as well. Rectangular and unequal-stride windows,
/// which `window.rs`'s loops keep, are in `cases`.
pub(crate) fn depthwise_cases() -> Vec<(String, Vec<String>)> {
    let mut rng = Lcg(21);
    let mut size = |lo: usize, hi: usize| lo + rng.below(hi - lo + 1);
    let mut out: Vec<(String, Vec<String>)> = vec![];
    for i in 0..16 {
        let (stride, window) = (1 + i % 2, [3, 5][i / 2 % 2]);
        let (c, h, w) = (size(1, 13), size(window, 23), size(window, 83));
        let pads: Vec<usize> = (0..4).map(|_| size(0, window / 2)).collect();
        let (oh, ow) =
            ((h + pads[0] + pads[2] - window) / stride + 1, (w + pads[1] + pads[3] - window) / stride + 1);
        let conv = format!(
            "clip(nn.bias_add(nn.conv2d(%a, %b, strides=[{stride}, {stride}], padding={pads:?}, groups={c}), %c), a_min=0f, a_max=6f)"
        );
        let mut types = vec![
            format!("Tensor[(1, {c}, {h}, {w}), float32]"),
            format!("Tensor[({c}, 1, {window}, {window}), float32]"),
            format!("Tensor[({c}), float32]"),
        ];
        let call = if i % 4 < 2 {
            conv
        } else {
            types.push(format!("Tensor[(1, {c}, {oh}, {ow}), float32]"));
            format!("add({conv}, %d)")
        };
        out.push((call, types));
    }
    out
}
