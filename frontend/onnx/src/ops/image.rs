//! Image sampling: `GridSample` (opset 16's 2-D form) as `image.grid_sample`.

use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;

/// `GridSample(X, grid)`: `image.grid_sample` of `X` (`NCHW`) at ONNX's `[N, H_out, W_out, 2]`
/// grid transposed to TVM's `[N, 2, H_out, W_out]`. `mode` is opset 16's `bilinear`,
/// `nearest` or `bicubic` (opset 20's `linear` and `cubic` name the same), `padding_mode` and
/// `align_corners` (default 0, where TVM's default is 1) pass through.
pub fn grid_sample(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (x, grid) = (cx.input(node, 0)?, cx.input(node, 1)?);
    if x.dims.len() != 4 || grid.dims.len() != 4 {
        return Err(node.error(format!(
            "only 2-D sampling is supported: X of rank 4 and a grid of rank 4, got ranks {} and {}",
            x.dims.len(),
            grid.dims.len()
        )));
    }
    let method = match node.string("mode", "bilinear")?.as_str() {
        "bilinear" | "linear" => "bilinear",
        "nearest" => "nearest",
        "bicubic" | "cubic" => "bicubic",
        other => return Err(node.error(format!("mode `{other}` is not supported"))),
    };
    let padding_mode = node.string("padding_mode", "zeros")?;
    if !["zeros", "border", "reflection"].contains(&padding_mode.as_str()) {
        return Err(node.error(format!("padding_mode `{padding_mode}` is not supported")));
    }
    let align_corners = if node.int("align_corners", 0)? != 0 { "True" } else { "False" };
    let expr = format!(
        "image.grid_sample({}, transpose({}, axes=[0, 3, 1, 2]), method=\"{method}\", padding_mode=\"{padding_mode}\", align_corners={align_corners})",
        x.expr, grid.expr
    );
    let dims = vec![x.dims[0], x.dims[1], grid.dims[1], grid.dims[2]];
    Ok(vec![Value::new(expr, x.dtype, dims)])
}
