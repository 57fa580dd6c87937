//! Detection operators: `RoiAlign` as `vision.roi_align` (TVM v0.16's ONNX frontend,
//! `RoiAlign._impl_v10`), `DeformConv` as `nn.deformable_conv2d` and `NonMaxSuppression` as
//! `vision.all_class_non_max_suppression` (`NonMaxSuppression._impl_v10`).

use crate::dtype::literal;
use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;
use relay_devices::DType;

/// `RoiAlign` (`X [n, c, h, w]`, `rois [r, 4]` of `(x1, y1, x2, y2)`, `batch_indices [r]`):
/// `vision.roi_align` over the rois with their batch index prepended as a first column, as
/// TVM's frontend builds it. ONNX's `output_half_pixel` coordinates are TVM's (no half-pixel
/// shift); opset 16's default `half_pixel` is not supported, as in TVM v0.16.
pub fn roi_align(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (x, rois, indices) = (cx.input(node, 0)?, cx.input(node, 1)?, cx.input(node, 2)?);
    if x.dims.len() != 4 || rois.dims.len() != 2 || indices.dims.len() != 1 {
        return Err(node.error(format!(
            "needs X of rank 4, rois of rank 2 and batch_indices of rank 1, got ranks {}, {} and {}",
            x.dims.len(),
            rois.dims.len(),
            indices.dims.len()
        )));
    }
    let default_mode = if cx.opset() >= 16 { "half_pixel" } else { "output_half_pixel" };
    let coordinates = node.string("coordinate_transformation_mode", default_mode)?;
    if coordinates != "output_half_pixel" {
        return Err(node.error(format!(
            "coordinate_transformation_mode `{coordinates}` is not supported (only output_half_pixel)"
        )));
    }
    let mode = node.string("mode", "avg")?;
    if mode != "avg" && mode != "max" {
        return Err(node.error(format!("mode `{mode}` is not supported")));
    }
    let (height, width) = (node.int("output_height", 1)?, node.int("output_width", 1)?);
    let ratio = node.int("sampling_ratio", 0)?;
    let scale = node.float("spatial_scale", 1.0)?;
    let boxes = format!(
        "concatenate((cast(expand_dims({}, axis=1), dtype=\"{}\"), {}), axis=1)",
        indices.expr, rois.dtype, rois.expr
    );
    let expr = format!(
        "vision.roi_align({}, {boxes}, pooled_size=[{height}, {width}], spatial_scale={scale:?}f, sample_ratio={ratio}, mode=\"{mode}\")",
        x.expr
    );
    let dims = vec![rois.dims[0], x.dims[1], Some(height), Some(width)];
    Ok(vec![Value::new(expr, x.dtype, dims)])
}

/// `DeformConv` (opset 19; `X [n, c, h, w]`, `W [o, c / group, kh, kw]`, `offset`, optional
/// `B`): `nn.deformable_conv2d(X, offset, W)` with `offset_group` as `deformable_groups`, plus
/// `nn.bias_add` with a bias. TVM samples by its own bilinear rule (0 at positions outside
/// the image, where ONNX zeroes only the corners outside), so the two agree where every
/// sampled position lies in the image. The modulation `mask` is not supported.
pub fn deform_conv(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (x, w, offset) = (cx.input(node, 0)?, cx.input(node, 1)?, cx.input(node, 2)?);
    if cx.optional_input(node, 4)?.is_some() {
        return Err(node.error("the modulation `mask` input is not supported"));
    }
    let wdims = crate::shape::known(&w.dims, "the weight").map_err(|m| node.error(m))?;
    if x.dims.len() != 4 || wdims.len() != 4 || offset.dims.len() != 4 {
        return Err(node.error("only 2-D deformable convolution (X, W and offset of rank 4) is supported"));
    }
    let pair = |name: &str, default: i64| -> Result<Vec<i64>, ImportError> {
        Ok(node.ints(name)?.unwrap_or_else(|| vec![default; 2]))
    };
    let (strides, dilations) = (pair("strides", 1)?, pair("dilations", 1)?);
    let pads = node.ints("pads")?.unwrap_or_else(|| vec![0; 4]);
    let list = |v: &[i64]| crate::shape::list(v);
    let expr = format!(
        "nn.deformable_conv2d({}, {}, {}, strides={}, padding={}, dilation={}, deformable_groups={}, groups={}, channels={}, kernel_size={})",
        x.expr,
        offset.expr,
        w.expr,
        list(&strides),
        list(&pads),
        list(&dilations),
        node.int("offset_group", 1)?,
        node.int("group", 1)?,
        wdims[0],
        list(&wdims[2..])
    );
    let dims = vec![x.dims[0], Some(wdims[0]), offset.dims[2], offset.dims[3]];
    let mut value = Value::new(expr, x.dtype, dims.clone());
    if let Some(b) = cx.optional_input(node, 3)? {
        let conv = cx.bind(&node.name_hint(), value);
        value = Value::new(format!("nn.bias_add({}, {})", conv.expr, b.expr), x.dtype, dims);
    }
    Ok(vec![value])
}

/// `NonMaxSuppression` (`boxes [batch, n, 4]`, `scores [batch, classes, n]`, optional scalar
/// `max_output_boxes_per_class`, `iou_threshold`, `score_threshold`): the rows
/// `vision.all_class_non_max_suppression` selects, sliced to their count (`int64 [?, 3]`), as
/// TVM's frontend builds it. `center_point_box = 1` boxes `(x, y, width, height)` become
/// corners `(y1, x1, y2, x2)` first. ONNX keeps no box for a limit `<= 0` (absent: 0), where
/// the operator, as TVM's, has no limit: the score threshold becomes `+inf` then, which no
/// score passes. An absent `score_threshold` is `-inf` (only NaN and `-inf` scores fail it),
/// an absent `iou_threshold` 0.
pub fn non_max_suppression(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (boxes, scores) = (cx.input(node, 0)?, cx.input(node, 1)?);
    if boxes.dims.len() != 3 || scores.dims.len() != 3 {
        return Err(node.error(format!(
            "needs boxes of rank 3 and scores of rank 3, got ranks {} and {}",
            boxes.dims.len(),
            scores.dims.len()
        )));
    }
    let mut operand = |i: usize, default: String| -> Result<String, ImportError> {
        Ok(cx.optional_input(node, i)?.map_or(default, |v| v.expr))
    };
    let limit = operand(2, "0i64".to_string())?;
    let iou = operand(3, literal(DType::F32, 0.0))?;
    let threshold = operand(4, literal(DType::F32, f64::NEG_INFINITY))?;
    let corners = match node.int("center_point_box", 0)? {
        0 => boxes.expr,
        1 => {
            let parts = cx.bind(
                "center_boxes",
                Value::new(
                    format!("split({}, indices_or_sections=4, axis=2)", boxes.expr),
                    boxes.dtype,
                    vec![],
                ),
            );
            let (p, half) = (&parts.expr, literal(boxes.dtype, 2.0));
            let corner = |op: &str, centre: usize, size: usize| {
                format!("{op}({p}.{centre}, divide({p}.{size}, {half}))")
            };
            format!(
                "concatenate(({}, {}, {}, {}), axis=2)",
                corner("subtract", 1, 3),
                corner("subtract", 0, 2),
                corner("add", 1, 3),
                corner("add", 0, 2)
            )
        }
        other => return Err(node.error(format!("center_point_box must be 0 or 1, got {other}"))),
    };
    let threshold = format!(
        "where(greater({limit}, {}), {threshold}, {})",
        literal(DType::I64, 0.0),
        literal(DType::F32, f64::INFINITY)
    );
    let nms = cx.bind(
        &node.name_hint(),
        Value::new(
            format!(
                "vision.all_class_non_max_suppression({corners}, {}, {limit}, {iou}, {threshold})",
                scores.expr
            ),
            DType::I64,
            vec![],
        ),
    );
    let expr = format!(
        "dyn.strided_slice({n}.0, zeros(shape=[1], dtype=\"int64\"), {n}.1, ones(shape=[1], dtype=\"int64\"))",
        n = nms.expr
    );
    Ok(vec![Value::new(expr, DType::I64, vec![None, Some(3)])])
}
