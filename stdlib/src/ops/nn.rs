//! Neural-network operators (TVM `src/relay/op/nn/nn.cc`, `convolution.cc`, `pooling.cc`).

use crate::op;
use crate::relations::*;
use relay_compiler::op::OpDef;

/// Products, convolution, pooling, normalisation and activations over axes, with TVM's
/// patterns (`bias_add`: `Broadcast`; the rest `OutEWiseFusable`).
pub const NN: &[OpDef] = &[
    op!("nn.dense", 2, dense_rel, OutEWiseFusable, "data [.., k] x weight [units, k]^T"),
    op!(
        "nn.matmul",
        2,
        matmul_rel,
        OutEWiseFusable,
        "tensor_a [.., k] x tensor_b [k, n], optionally transposed"
    ),
    op!("nn.batch_matmul", 2, batch_matmul_rel, OutEWiseFusable, "x [b, m, k] x y [b, k, n] per batch"),
    op!("nn.bias_add", 2, bias_add_rel, Broadcast, "add a [C] bias along axis"),
    op!("nn.conv2d", 2, conv2d_rel, OutEWiseFusable, "2-d convolution (NCHW data, OIHW weight by default)"),
    op!("nn.max_pool2d", 1, pool2d_rel, OutEWiseFusable, "2-d max pooling"),
    op!("nn.avg_pool2d", 1, pool2d_rel, OutEWiseFusable, "2-d average pooling"),
    op!("nn.global_avg_pool2d", 1, global_pool2d_rel, OutEWiseFusable, "mean over H and W"),
    op!("nn.batch_norm", 5, batch_norm_rel, OutEWiseFusable, "batch normalisation: (out, mean, var)"),
    op!("nn.layer_norm", 3, layer_norm_rel, OutEWiseFusable, "layer normalisation over axis"),
    op!("nn.softmax", 1, softmax_rel, OutEWiseFusable, "softmax over axis"),
    op!("nn.log_softmax", 1, softmax_rel, OutEWiseFusable, "log of softmax over axis"),
    op!("nn.dropout", 1, dropout_rel, OutEWiseFusable, "dropout: (out, mask); identity at inference"),
];
