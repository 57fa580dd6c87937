//! Neural-network operators (TVM `src/relay/op/nn/nn.cc`, `convolution.cc`, `pooling.cc`).

use super::legacy;
use crate::kernels::nn::{
    AvgPool2d, BatchMatmul, BatchNorm, BiasAdd, Conv2d, Dense, Dropout, GlobalAvgPool2d, LayerNorm,
    LogSoftmax, Matmul, MaxPool2d, Softmax,
};
use crate::operator::OpEntry;
use crate::relations::*;

/// Products, convolution, pooling, normalisation and activations over axes, with TVM's
/// patterns (`bias_add`: `Broadcast`; the rest `OutEWiseFusable`).
pub const NN: &[OpEntry] = &[
    legacy!(Dense, 2, dense_rel, OutEWiseFusable, "data [.., k] x weight [units, k]^T"),
    legacy!(
        Matmul,
        2,
        matmul_rel,
        OutEWiseFusable,
        "tensor_a [.., k] x tensor_b [k, n], optionally transposed"
    ),
    legacy!(BatchMatmul, 2, batch_matmul_rel, OutEWiseFusable, "x [b, m, k] x y [b, k, n] per batch"),
    legacy!(BiasAdd, 2, bias_add_rel, Broadcast, "add a [C] bias along axis"),
    legacy!(Conv2d, 2, conv2d_rel, OutEWiseFusable, "2-d convolution (NCHW data, OIHW weight by default)"),
    legacy!(MaxPool2d, 1, pool2d_rel, OutEWiseFusable, "2-d max pooling"),
    legacy!(AvgPool2d, 1, pool2d_rel, OutEWiseFusable, "2-d average pooling"),
    legacy!(GlobalAvgPool2d, 1, global_pool2d_rel, OutEWiseFusable, "mean over H and W"),
    legacy!(BatchNorm, 5, batch_norm_rel, OutEWiseFusable, "batch normalisation: (out, mean, var)"),
    legacy!(LayerNorm, 3, layer_norm_rel, OutEWiseFusable, "layer normalisation over axis"),
    legacy!(Softmax, 1, softmax_rel, OutEWiseFusable, "softmax over axis"),
    legacy!(LogSoftmax, 1, softmax_rel, OutEWiseFusable, "log of softmax over axis"),
    legacy!(Dropout, 1, dropout_rel, OutEWiseFusable, "dropout: (out, mask); identity at inference"),
];
