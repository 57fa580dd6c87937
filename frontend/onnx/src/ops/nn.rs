//! Neural-network operators: convolution, pooling, batch normalisation, matrix products and
//! softmax (channels-first images, `NCW`/`NCHW`/`NCDHW`, as Relay's `nn` operators take them).

use super::{list_attr, on};
use crate::dtype;
use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;
use crate::shape::{broadcast, known, normalize_axis, product, Dims};

/// The spatial attributes shared by `Conv` and the pools, for a 1-, 2- or 3-D window.
struct Window {
    kernel: Vec<i64>,
    strides: Vec<i64>,
    dilations: Vec<i64>,
    /// The padding before each spatial axis, then after each (`[top, left, bottom, right]` in
    /// 2-D), as ONNX's `pads` and Relay's `padding`.
    pads: Vec<i64>,
}

impl Window {
    /// Reads `strides`, `dilations`, `pads` and `auto_pad` for input `x` and window `kernel`.
    fn read(node: &Node, x: &Value, kernel: Vec<i64>) -> Result<Window, ImportError> {
        let rank = kernel.len();
        if !(1..=3).contains(&rank) || x.dims.len() != rank + 2 {
            return Err(node.error(format!(
                "only 1-, 2- and 3-D windows over channels-first input are supported, got a {rank}-D window over rank {}",
                x.dims.len()
            )));
        }
        let per_axis = |name: &str| -> Result<Vec<i64>, ImportError> {
            let v = node.ints(name)?.unwrap_or_else(|| vec![1; rank]);
            if v.len() != rank || v.iter().any(|&s| s < 1) {
                return Err(node.error(format!("`{name}` must be {rank} positive integers, got {v:?}")));
            }
            Ok(v)
        };
        let (strides, dilations) = (per_axis("strides")?, per_axis("dilations")?);
        let pads = match node.string("auto_pad", "NOTSET")?.as_str() {
            "NOTSET" => node.ints("pads")?.unwrap_or_else(|| vec![0; 2 * rank]),
            "VALID" => vec![0; 2 * rank],
            mode @ ("SAME_UPPER" | "SAME_LOWER") => {
                let size = on(node, known(&x.dims[2..], "auto_pad"))?;
                let mut pads = vec![0; 2 * rank];
                for i in 0..rank {
                    // In i128: strides, dilations and kernel sizes are the file's, unbounded.
                    let (n, s, k, d) =
                        (size[i] as i128, strides[i] as i128, kernel[i] as i128, dilations[i] as i128);
                    let out = (n + s - 1) / s;
                    let total = ((out - 1) * s + (k - 1) * d + 1 - n).max(0);
                    let total = i64::try_from(total)
                        .map_err(|_| node.error("the padding `auto_pad` needs is too large"))?;
                    let small = total / 2;
                    let (begin, end) =
                        if mode == "SAME_UPPER" { (small, total - small) } else { (total - small, small) };
                    pads[i] = begin;
                    pads[i + rank] = end;
                }
                pads
            }
            other => return Err(node.error(format!("auto_pad `{other}` is not supported"))),
        };
        if pads.len() != 2 * rank || pads.iter().any(|&p| p < 0) {
            return Err(
                node.error(format!("`pads` must be {} non-negative integers, got {pads:?}", 2 * rank))
            );
        }
        Ok(Window { kernel, strides, dilations, pads })
    }

    /// The output size of spatial axis `i` over an input of `size` (rounding up with `ceil`);
    /// `None` if unknown or beyond `i64` (the type checker then reports the window).
    fn output(&self, i: usize, size: Option<i64>, ceil: bool) -> Option<i64> {
        let wide = |v: i64| v as i128;
        let span = wide(size?) + wide(self.pads[i]) + wide(self.pads[i + self.kernel.len()])
            - wide(self.dilations[i]) * (wide(self.kernel[i]) - 1)
            - 1;
        let s = wide(self.strides[i]);
        i64::try_from(if ceil { (span + s - 1).div_euclid(s) } else { span.div_euclid(s) } + 1).ok()
    }

    /// The output dimensions over input `x` (batch and spatial axes from `x`, `channels`).
    fn output_dims(&self, x: &Value, channels: Option<i64>, ceil: bool) -> Dims {
        let spatial = (0..self.kernel.len()).map(|i| self.output(i, x.dims[2 + i], ceil));
        [x.dims[0], channels].into_iter().chain(spatial).collect()
    }

    /// `strides=[..], padding=[..], dilation=[..]`.
    fn attrs(&self) -> String {
        format!(
            "{}, {}, {}",
            list_attr("strides", &self.strides),
            list_attr("padding", &self.pads),
            list_attr("dilation", &self.dilations)
        )
    }
}

/// `Conv` (1-, 2- or 3-D): `nn.conv1d`, `nn.conv2d` or `nn.conv3d`, plus `nn.bias_add` with a
/// bias.
pub fn conv(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (x, w) = (cx.input(node, 0)?, cx.input(node, 1)?);
    let wdims = on(node, known(&w.dims, "the weight"))?;
    let Some(spatial) = wdims.get(2..).filter(|s| !s.is_empty()) else {
        return Err(node.error(format!("the weight must have rank 3 to 5, got {}", wdims.len())));
    };
    let window = Window::read(node, &x, spatial.to_vec())?;
    let groups = node.int("group", 1)?;
    let dims = window.output_dims(&x, Some(wdims[0]), false);
    let mut expr = format!(
        "nn.conv{}d({}, {}, {}, groups={groups}, channels={}, {})",
        spatial.len(),
        x.expr,
        w.expr,
        window.attrs(),
        wdims[0],
        list_attr("kernel_size", &window.kernel)
    );
    if let Some(b) = cx.optional_input(node, 2)? {
        let conv = cx.bind(&node.name_hint(), Value::new(expr, x.dtype, dims.clone()));
        expr = format!("nn.bias_add({}, {})", conv.expr, b.expr);
    }
    Ok(vec![Value::new(expr, x.dtype, dims)])
}

/// `ConvTranspose` (1-, 2- or 3-D, weight `[c, m / group, k..]`): `nn.conv{1,2,3}d_transpose`,
/// plus `nn.bias_add` with a bias. Explicit `pads` (or `VALID`) and `output_padding`;
/// `output_shape` and the `SAME` paddings are not supported.
pub fn conv_transpose(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (x, w) = (cx.input(node, 0)?, cx.input(node, 1)?);
    let wdims = on(node, known(&w.dims, "the weight"))?;
    let Some(spatial) = wdims.get(2..).filter(|s| !s.is_empty()) else {
        return Err(node.error(format!("the weight must have rank 3 to 5, got {}", wdims.len())));
    };
    let auto_pad = node.string("auto_pad", "NOTSET")?;
    if !["NOTSET", "VALID"].contains(&auto_pad.as_str()) || node.ints("output_shape")?.is_some() {
        return Err(node.error("only explicit `pads` are supported (no `output_shape`, no SAME `auto_pad`)"));
    }
    let window = Window::read(node, &x, spatial.to_vec())?;
    let rank = spatial.len();
    let output_padding = node.ints("output_padding")?.unwrap_or_else(|| vec![0; rank]);
    if output_padding.len() != rank {
        return Err(node.error(format!("`output_padding` must have {rank} values, got {output_padding:?}")));
    }
    let groups = node.int("group", 1)?;
    let channels = wdims[1].checked_mul(groups).ok_or_else(|| node.error("`group` is too large"))?;
    // (in - 1) * stride + (k - 1) * dilation + 1 + output_padding - pads, in i128: the
    // file's values are unbounded.
    let spatial_dims = (0..rank).map(|i| {
        let wide = |v: i64| v as i128;
        let full = (wide(x.dims[2 + i]?) - 1) * wide(window.strides[i])
            + (wide(window.kernel[i]) - 1) * wide(window.dilations[i])
            + 1
            + wide(output_padding[i]);
        i64::try_from(full - wide(window.pads[i]) - wide(window.pads[i + rank])).ok()
    });
    let dims: Dims = [x.dims[0], Some(channels)].into_iter().chain(spatial_dims).collect();
    let mut expr = format!(
        "nn.conv{rank}d_transpose({}, {}, {}, {}, groups={groups}, channels={channels}, {})",
        x.expr,
        w.expr,
        window.attrs(),
        list_attr("output_padding", &output_padding),
        list_attr("kernel_size", &window.kernel)
    );
    if let Some(b) = cx.optional_input(node, 2)? {
        let conv = cx.bind(&node.name_hint(), Value::new(expr, x.dtype, dims.clone()));
        expr = format!("nn.bias_add({}, {})", conv.expr, b.expr);
    }
    Ok(vec![Value::new(expr, x.dtype, dims)])
}

/// `MaxPool` and `AveragePool` (1-, 2- or 3-D) as `nn.{op}_pool{rank}d`, with `extra`
/// attributes.
fn pool(cx: &mut Converter, node: &Node, op: &str, extra: &str) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let kernel = node.ints("kernel_shape")?.ok_or_else(|| node.error("`kernel_shape` is missing"))?;
    let window = Window::read(node, &x, kernel)?;
    let ceil = node.int("ceil_mode", 0)? != 0;
    let dims = window.output_dims(&x, x.dims[1], ceil);
    let expr = format!(
        "nn.{op}_pool{}d({}, {}, {}, ceil_mode={}{extra})",
        window.kernel.len(),
        x.expr,
        list_attr("pool_size", &window.kernel),
        window.attrs(),
        if ceil { "True" } else { "False" }
    );
    Ok(vec![Value::new(expr, x.dtype, dims)])
}

/// `MaxPool` (1-, 2- or 3-D; the optional `Indices` output is not supported).
pub fn max_pool(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    pool(cx, node, "max", "")
}

/// `AveragePool` (1-, 2- or 3-D).
pub fn average_pool(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let include = node.int("count_include_pad", 0)? != 0;
    pool(cx, node, "avg", if include { ", count_include_pad=True" } else { "" })
}

/// `GlobalAveragePool` (NCHW): `nn.global_avg_pool2d`.
pub fn global_average_pool(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    if x.dims.len() != 4 {
        return Err(node.error("only 4-d (NCHW) input is supported"));
    }
    let dims = vec![x.dims[0], x.dims[1], Some(1), Some(1)];
    Ok(vec![Value::new(format!("nn.global_avg_pool2d({})", x.expr), x.dtype, dims)])
}

/// `GlobalMaxPool`: the maximum over every axis after the first two, kept.
pub fn global_max_pool(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let axes: Vec<i64> = (2..x.dims.len() as i64).collect();
    let dims = x.dims.iter().enumerate().map(|(i, &d)| if i < 2 { d } else { Some(1) }).collect();
    Ok(vec![Value::new(
        format!("max({}, {}, keepdims=True)", x.expr, list_attr("axis", &axes)),
        x.dtype,
        dims,
    )])
}

/// `BatchNormalization` at inference: `nn.batch_norm(...).0`.
pub fn batch_norm(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    if node.int("training_mode", 0)? != 0 {
        return Err(node.error("training mode is not supported"));
    }
    let x = cx.input(node, 0)?;
    let mut operands = vec![x.expr.clone()];
    for i in 1..5 {
        operands.push(cx.input(node, i)?.expr);
    }
    let epsilon = node.float("epsilon", 1e-5)?;
    let expr = format!("nn.batch_norm({}, epsilon={epsilon:?}f).0", operands.join(", "));
    Ok(vec![Value::new(expr, x.dtype, x.dims)])
}

/// `Gemm`: `alpha * A' B' + beta * C` as `nn.dense` (B transposed) or `nn.matmul`.
pub fn gemm(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (a, b) = (cx.input(node, 0)?, cx.input(node, 1)?);
    if a.dims.len() != 2 || b.dims.len() != 2 {
        return Err(node.error("A and B must be matrices"));
    }
    let (ta, tb) = (node.int("transA", 0)? != 0, node.int("transB", 0)? != 0);
    let m = if ta { a.dims[1] } else { a.dims[0] };
    let n = if tb { b.dims[0] } else { b.dims[1] };
    let mut expr = if !ta && tb {
        format!("nn.dense({}, {})", a.expr, b.expr)
    } else {
        let flag = |t: bool| if t { "True" } else { "False" };
        format!("nn.matmul({}, {}, transpose_a={}, transpose_b={})", a.expr, b.expr, flag(ta), flag(tb))
    };
    let alpha = f64::from(node.float("alpha", 1.0)?);
    if alpha != 1.0 {
        expr = format!("multiply({expr}, {})", dtype::literal(a.dtype, alpha));
    }
    let mut dims = vec![m, n];
    if let Some(c) = cx.optional_input(node, 2)? {
        dims = on(node, broadcast(&dims, &c.dims))?;
        let beta = f64::from(node.float("beta", 1.0)?);
        let c = if beta == 1.0 {
            c.expr
        } else {
            format!("multiply({}, {})", c.expr, dtype::literal(a.dtype, beta))
        };
        expr = format!("add({expr}, {c})");
    }
    Ok(vec![Value::new(expr, a.dtype, dims)])
}

/// `MatMul` with NumPy semantics: a vector operand gains and then loses an axis; a matrix
/// right operand is `nn.matmul` over any leading axes; batches are `nn.batch_matmul` over
/// the broadcast batch axes, flattened to one.
pub fn matmul(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (mut a, mut b) = (cx.input(node, 0)?, cx.input(node, 1)?);
    let (vector_a, vector_b) = (a.dims.len() == 1, b.dims.len() == 1);
    let hint = node.name_hint();
    if vector_a {
        a = Value::new(
            format!("expand_dims({}, axis=0)", a.expr),
            a.dtype,
            [&[Some(1)], &a.dims[..]].concat(),
        );
    }
    if vector_b {
        b = Value::new(
            format!("expand_dims({}, axis=1)", b.expr),
            b.dtype,
            [&b.dims[..], &[Some(1)]].concat(),
        );
    }
    let (ra, rb) = (a.dims.len(), b.dims.len());
    if ra < 2 || rb < 2 {
        return Err(node.error("operands must have at least one axis"));
    }
    let (m, n) = (a.dims[ra - 2], b.dims[rb - 1]);
    let mut out = if rb == 2 {
        let dims = [&a.dims[..ra - 1], &[n]].concat();
        Value::new(format!("nn.matmul({}, {})", a.expr, b.expr), a.dtype, dims)
    } else {
        let batch = on(node, broadcast(&a.dims[..ra - 2], &b.dims[..rb - 2]))?;
        let dims = [&batch[..], &[m, n]].concat();
        let flat = |v: &Value, rows: usize| -> Result<String, ImportError> {
            let full: Dims = [&batch[..], &v.dims[rows..]].concat();
            let shape = on(node, known(&full, "a batched MatMul"))?;
            let k = full.len();
            Ok(format!(
                "reshape(broadcast_to({}, shape={}), newshape=[-1, {}, {}])",
                v.expr,
                crate::shape::list(&shape),
                shape[k - 2],
                shape[k - 1]
            ))
        };
        let (fa, fb) = (flat(&a, ra - 2)?, flat(&b, rb - 2)?);
        let shape = on(node, known(&dims, "a batched MatMul"))?;
        let product = format!("nn.batch_matmul({fa}, {fb})");
        Value::new(format!("reshape({product}, {})", list_attr("newshape", &shape)), a.dtype, dims)
    };
    if vector_a || vector_b {
        out = cx.bind(&hint, out);
        let r = out.dims.len();
        let axes: Vec<i64> = [(vector_a, r as i64 - 2), (vector_b, r as i64 - 1)]
            .into_iter()
            .filter_map(|(v, axis)| v.then_some(axis))
            .collect();
        let dims = out
            .dims
            .iter()
            .enumerate()
            .filter(|(i, _)| !axes.contains(&(*i as i64)))
            .map(|(_, &d)| d)
            .collect();
        out = Value::new(format!("squeeze({}, {})", out.expr, list_attr("axis", &axes)), out.dtype, dims);
    }
    Ok(vec![out])
}

/// `Softmax` and `LogSoftmax` as `op`. From opset 13 they normalise along `axis` (default
/// -1); before, over all axes from `axis` (default 1) on, as one flattened axis.
pub fn softmax(cx: &mut Converter, node: &Node, op: &str) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let rank = x.dims.len();
    let modern = cx.opset() >= 13;
    let axis = on(node, normalize_axis(node.int("axis", if modern { -1 } else { 1 })?, rank))?;
    if modern || axis + 1 == rank {
        return Ok(vec![Value::new(format!("{op}({}, axis={axis})", x.expr), x.dtype, x.dims)]);
    }
    let shape = on(node, known(&x.dims, "Softmax before opset 13 over several axes"))?;
    let rows = product(&x.dims[..axis]).unwrap_or(0);
    let flat = format!("reshape({}, newshape=[{rows}, -1])", x.expr);
    let expr = format!("reshape({op}({flat}, axis=1), {})", list_attr("newshape", &shape));
    Ok(vec![Value::new(expr, x.dtype, x.dims)])
}

/// `PRelu(x, slope)`: Relay `nn.prelu` along axis 1 when the slope is one value per channel
/// (shape `[C]` or `[C, 1, ...]`, as exporters write it); any other broadcastable slope as
/// `where(x > 0, x, x * slope)`.
pub fn prelu(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (x, slope) = (cx.input(node, 0)?, cx.input(node, 1)?);
    let dims = on(node, broadcast(&x.dims, &slope.dims))?;
    if dims != x.dims {
        return Err(node.error("the slope must broadcast to the input's shape"));
    }
    let channels = x.dims.get(1).copied().flatten();
    let per_channel = x.dims.len() >= 2
        && slope.dims.len() == x.dims.len() - 1
        && slope.dims[0] == channels
        && slope.dims[1..].iter().all(|&d| d == Some(1));
    let expr = if per_channel && channels.is_some() {
        let alpha = format!("reshape({}, newshape=[-1])", slope.expr);
        format!("nn.prelu({}, {alpha}, axis=1)", x.expr)
    } else {
        let zero = dtype::literal(x.dtype, 0.0);
        let scaled = cx.bind(
            &node.name_hint(),
            Value::new(format!("multiply({}, {})", x.expr, slope.expr), x.dtype, dims.clone()),
        );
        format!("where(greater({}, {zero}), {}, {})", x.expr, x.expr, scaled.expr)
    };
    Ok(vec![Value::new(expr, x.dtype, dims)])
}

/// `InstanceNormalization(x, scale, B)`: Relay `nn.instance_norm` over channel axis 1.
pub fn instance_norm(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (x, scale, b) = (cx.input(node, 0)?, cx.input(node, 1)?, cx.input(node, 2)?);
    let eps = node.float("epsilon", 1e-5)?;
    let expr = format!(
        "nn.instance_norm({}, {}, {}, axis=1, epsilon={:?})",
        x.expr,
        scale.expr,
        b.expr,
        f64::from(eps)
    );
    Ok(vec![Value::new(expr, x.dtype, x.dims)])
}

/// `LRN`: Relay `nn.lrn` across channel axis 1. ONNX's window for an even `size` is not
/// TVM's (it reaches one channel further up than down), so only odd sizes are converted.
pub fn lrn(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(node, 0)?;
    let size = node.int("size", 0)?;
    if size < 1 || size % 2 == 0 {
        return Err(node.error(format!("attribute `size` must be a positive odd number, got {size}")));
    }
    let (alpha, beta, bias) =
        (node.float("alpha", 1e-4)?, node.float("beta", 0.75)?, node.float("bias", 1.0)?);
    let expr = format!(
        "nn.lrn({}, size={size}, axis=1, bias={:?}, alpha={:?}, beta={:?})",
        x.expr,
        f64::from(bias),
        f64::from(alpha),
        f64::from(beta)
    );
    Ok(vec![Value::new(expr, x.dtype, x.dims)])
}

/// `LayerNormalization(X, Scale, B)`: each lane over the axes from `axis` on normalised by its
/// mean and variance, then scaled and shifted. Over the last axis alone this is Relay's
/// `nn.layer_norm`; over several it is composed from `mean`, `variance` and arithmetic.
/// Only the first output (`Y`) is converted.
pub fn layer_norm(cx: &mut Converter, node: &Node) -> Result<Vec<Value>, ImportError> {
    let (x, scale) = (cx.input(node, 0)?, cx.input(node, 1)?);
    let bias = cx.optional_input(node, 2)?;
    let rank = x.dims.len();
    let axis = on(node, normalize_axis(node.int("axis", -1)?, rank))?;
    let eps = f64::from(node.float("epsilon", 1e-5)?);
    let shift = |expr: String| match &bias {
        Some(b) => format!("add({expr}, {})", b.expr),
        None => expr,
    };
    let expr = if axis + 1 == rank {
        let beta = match &bias {
            Some(b) => b.expr.clone(),
            None => format!("zeros_like({})", scale.expr),
        };
        format!("nn.layer_norm({}, {}, {beta}, axis={axis}, epsilon={eps:?})", x.expr, scale.expr)
    } else {
        let axes: Vec<i64> = (axis as i64..rank as i64).collect();
        let over = format!("{}, keepdims=True", list_attr("axis", &axes));
        let centred = cx.bind(
            &node.name_hint(),
            Value::new(format!("subtract({x}, mean({x}, {over}))", x = x.expr), x.dtype, x.dims.clone()),
        );
        let variance = format!("mean(multiply({c}, {c}), {over})", c = centred.expr);
        let eps = dtype::literal(x.dtype, eps);
        let normalised = format!("divide({}, sqrt(add({variance}, {eps})))", centred.expr);
        shift(format!("multiply({normalised}, {})", scale.expr))
    };
    Ok(vec![Value::new(expr, x.dtype, x.dims)])
}
