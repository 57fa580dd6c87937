//! Neural-network operators (TVM `src/relay/op/nn/nn.cc`, `convolution.cc`, `pooling.cc`).

use crate::op;
use crate::relations::*;
use relay_compiler::op::OpDef;

/// Products, convolution, pooling, normalisation and activations over axes, with TVM's
/// patterns (`bias_add`: `Broadcast`; the rest `OutEWiseFusable`).
pub const NN: &[OpDef] = &[
    op!(
        "nn.dense",
        2,
        ["units", "out_dtype"],
        dense_rel,
        OutEWiseFusable,
        "data [.., k] x weight [units, k]^T"
    ),
    op!(
        "nn.matmul",
        2,
        ["units", "out_dtype", "transpose_a", "transpose_b"],
        matmul_rel,
        OutEWiseFusable,
        "tensor_a [.., k] x tensor_b [k, n], optionally transposed"
    ),
    op!(
        "nn.batch_matmul",
        2,
        ["out_dtype", "transpose_a", "transpose_b"],
        batch_matmul_rel,
        OutEWiseFusable,
        "x [b, m, k] x y [b, k, n] per batch"
    ),
    op!("nn.bias_add", 2, ["axis"], bias_add_rel, Broadcast, "add a [C] bias along axis"),
    op!(
        "nn.conv2d",
        2,
        [
            "strides",
            "padding",
            "dilation",
            "groups",
            "channels",
            "kernel_size",
            "data_layout",
            "kernel_layout",
            "out_layout",
            "out_dtype"
        ],
        conv2d_rel,
        OutEWiseFusable,
        "2-d convolution (NCHW data, OIHW weight by default)"
    ),
    op!(
        "nn.max_pool2d",
        1,
        ["pool_size", "strides", "dilation", "padding", "layout", "out_layout", "ceil_mode"],
        pool2d_rel,
        OutEWiseFusable,
        "2-d max pooling"
    ),
    op!(
        "nn.avg_pool2d",
        1,
        [
            "pool_size",
            "strides",
            "dilation",
            "padding",
            "layout",
            "out_layout",
            "ceil_mode",
            "count_include_pad"
        ],
        pool2d_rel,
        OutEWiseFusable,
        "2-d average pooling"
    ),
    op!(
        "nn.global_avg_pool2d",
        1,
        ["layout", "out_layout"],
        global_pool2d_rel,
        OutEWiseFusable,
        "mean over H and W"
    ),
    op!(
        "nn.batch_norm",
        5,
        ["axis", "epsilon", "center", "scale"],
        batch_norm_rel,
        OutEWiseFusable,
        "batch normalisation: (out, mean, var)"
    ),
    op!(
        "nn.layer_norm",
        3,
        ["axis", "epsilon", "center", "scale"],
        layer_norm_rel,
        OutEWiseFusable,
        "layer normalisation over axis"
    ),
    op!("nn.softmax", 1, ["axis"], softmax_rel, OutEWiseFusable, "softmax over axis"),
    op!("nn.log_softmax", 1, ["axis"], softmax_rel, OutEWiseFusable, "log of softmax over axis"),
    op!(
        "nn.dropout",
        1,
        ["rate"],
        dropout_rel,
        OutEWiseFusable,
        "dropout: (out, mask); identity at inference"
    ),
];
