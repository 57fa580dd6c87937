//! Detection operators: `RoiAlign` as `vision.roi_align` (TVM v0.16's ONNX frontend,
//! `RoiAlign._impl_v10`) and `DeformConv` as `nn.deformable_conv2d`.

use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;

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
