//! Attributes of the `nn.*` operators (TVM `include/tvm/relay/attrs/nn.h`).

use super::{attr_enum, op_attrs, FromAttr};
use relay_compiler::ir::AttrValue;
use relay_devices::DType;

op_attrs! {
    /// `nn.bias_add` (TVM `BiasAddAttrs`).
    pub struct BiasAddAttrs {
        /// The data axis the 1-d bias runs along.
        axis: i64 = 1,
    }
}

op_attrs! {
    /// `nn.dense` (TVM `DenseAttrs`): `data[..., in] × weight[units, in]ᵀ`.
    pub struct DenseAttrs {
        /// Output features; checked against the weight when given.
        units: Option<i64> = None,
        /// Output and accumulation dtype (`int32` for `int8` inputs); `None`: the data dtype.
        out_dtype: Option<DType> = None,
    }
}

op_attrs! {
    /// `nn.matmul` (TVM `MatmulAttrs`).
    pub struct MatmulAttrs {
        /// Output features; checked against the weight when given.
        units: Option<i64> = None,
        /// Output and accumulation dtype; `None`: the data dtype.
        out_dtype: Option<DType> = None,
        /// The data's last two axes are `[in, rows]`.
        transpose_a: bool = false,
        /// The weight is `[units, in]` rather than `[in, units]`.
        transpose_b: bool = false,
    }
}

op_attrs! {
    /// `nn.batch_matmul` (TVM `BatchMatmulAttrs`). The defaults are the C++ ones that TVM's
    /// text printer omits (`transpose_b=False`); Python's `relay.nn.batch_matmul` passes
    /// `transpose_b=True` explicitly, and it is printed.
    pub struct BatchMatmulAttrs {
        /// Output and accumulation dtype; `None`: the data dtype.
        out_dtype: Option<DType> = None,
        /// `x` is `[b, k, m]` rather than `[b, m, k]`.
        transpose_a: bool = false,
        /// `y` is `[b, n, k]` rather than `[b, k, n]`.
        transpose_b: bool = false,
    }
}

op_attrs! {
    /// `nn.conv2d` (TVM `Conv2DAttrs`). Only `NCHW` data with `OIHW` weights is supported.
    pub struct Conv2dAttrs {
        /// `[stride_h, stride_w]` (one value applies to both).
        strides: Vec<i64> = (vec![1, 1]),
        /// 1 value (all sides), 2 (`[top/bottom, left/right]`) or 4 (`[top, left, bottom, right]`).
        padding: Vec<i64> = (vec![0, 0]),
        /// `[dilation_h, dilation_w]` (one value applies to both).
        dilation: Vec<i64> = (vec![1, 1]),
        /// Channel groups; `groups == in_channels` is a depthwise convolution.
        groups: i64 = 1,
        /// Output channels; checked against the weight when given.
        channels: Option<i64> = None,
        /// `[kh, kw]`; checked against the weight when given.
        kernel_size: Option<Vec<i64>> = None,
        /// Data layout; `NCHW` only.
        data_layout: String = ("NCHW".to_string()),
        /// Weight layout; `OIHW` only.
        kernel_layout: String = ("OIHW".to_string()),
        /// Output layout; `""` (same as the data) or `NCHW`.
        out_layout: String = (String::new()),
        /// Output and accumulation dtype (`int32` for `int8`/`uint8` inputs); `None`: the data
        /// dtype.
        out_dtype: Option<DType> = None,
    }
}

/// Declares a 2-d pooling attribute struct: the window fields that TVM's `MaxPool2DAttrs` and
/// `AvgPool2DAttrs` both have, in TVM's order, then the struct's own.
macro_rules! pool2d_attrs {
    ($(#[$doc:meta])* pub struct $name:ident { $($own:tt)* }) => {
        op_attrs! {
            $(#[$doc])*
            pub struct $name {
                /// `[kh, kw]` (required; one value applies to both).
                pool_size: Vec<i64> = required,
                /// `[stride_h, stride_w]`.
                strides: Vec<i64> = (vec![1, 1]),
                /// `[dilation_h, dilation_w]`.
                dilation: Vec<i64> = (vec![1, 1]),
                /// 1, 2 or 4 values as for `nn.conv2d`.
                padding: Vec<i64> = (vec![0, 0]),
                /// Data layout; `NCHW` only.
                layout: String = ("NCHW".to_string()),
                /// Output layout; `""` or `NCHW`.
                out_layout: String = (String::new()),
                /// Round the output size up: a last, partial window is kept.
                ceil_mode: bool = false,
                $($own)*
            }
        }
    };
}

pool2d_attrs! {
    /// `nn.max_pool2d` (TVM `MaxPool2DAttrs`). `NCHW` only; padded positions never win.
    pub struct MaxPool2dAttrs {}
}

pool2d_attrs! {
    /// `nn.avg_pool2d` (TVM `AvgPool2DAttrs`). `NCHW` only.
    pub struct AvgPool2dAttrs {
        /// Divide by the window size including explicit padding (not the extra `ceil_mode`
        /// border) instead of by the number of real elements.
        count_include_pad: bool = false,
    }
}

op_attrs! {
    /// `nn.global_avg_pool2d` (TVM `GlobalPool2DAttrs`). `NCHW` only.
    pub struct GlobalPool2dAttrs {
        /// Data layout; `NCHW` only.
        layout: String = ("NCHW".to_string()),
        /// Output layout; `""` or `NCHW`.
        out_layout: String = (String::new()),
    }
}

op_attrs! {
    /// `nn.softmax` and `nn.log_softmax` (TVM `SoftmaxAttrs`).
    pub struct SoftmaxAttrs {
        /// The axis normalised over.
        axis: i64 = (-1),
    }
}

op_attrs! {
    /// `nn.batch_norm` in inference form (TVM `BatchNormAttrs`).
    pub struct BatchNormAttrs {
        /// The channel axis.
        axis: i64 = 1,
        /// Added to the variance.
        epsilon: f64 = 1e-5,
        /// Add `beta`.
        center: bool = true,
        /// Multiply by `gamma`.
        scale: bool = true,
    }
}

op_attrs! {
    /// `nn.layer_norm` (TVM `LayerNormAttrs`): normalises over one axis.
    pub struct LayerNormAttrs {
        /// The axis normalised over (and that `gamma`/`beta` run along).
        axis: i64 = (-1),
        /// Added to the variance.
        epsilon: f64 = 1e-5,
        /// Add `beta`.
        center: bool = true,
        /// Multiply by `gamma`.
        scale: bool = true,
    }
}

op_attrs! {
    /// `nn.dropout` (TVM `DropoutAttrs`); inference ignores the rate.
    pub struct DropoutAttrs {
        /// Fraction dropped during training.
        rate: f64 = 0.5,
    }
}

op_attrs! {
    /// `nn.prelu` (TVM `PReluAttrs`); the slopes are the second input.
    pub struct PReluAttrs {
        /// The channel axis the slopes run along (negative counts from the end).
        axis: i64 = 1,
    }
}

attr_enum! {
    /// How `nn.depth_to_space` orders the channels it moves into space.
    SubPixelMode, "\"DCR\" or \"CRD\"" {
        /// Depth-column-row: channel `(b_h * block + b_w) * C + c` (TVM's default, ONNX's).
        #[default]
        Dcr = "DCR",
        /// Column-row-depth: channel `(c * block + b_h) * block + b_w` (PyTorch's pixel shuffle).
        Crd = "CRD",
    }
}

op_attrs! {
    /// `nn.depth_to_space` and `nn.space_to_depth` (TVM `SubPixelAttrs`). `NCHW` only.
    pub struct SubPixelAttrs {
        /// The side of the square block moved between depth and space.
        block_size: i64 = required,
        /// Data layout; `NCHW` only.
        layout: String = ("NCHW".to_string()),
        /// Channel order (`nn.depth_to_space` only).
        mode: SubPixelMode = (SubPixelMode::Dcr),
    }
}

op_attrs! {
    /// `nn.instance_norm` (TVM `InstanceNormAttrs`): normalised over every axis but 0 and `axis`.
    pub struct InstanceNormAttrs {
        /// The channel axis `gamma` and `beta` run along.
        axis: i64 = 1,
        /// Added to the variance.
        epsilon: f64 = 1e-5,
        /// Add `beta`.
        center: bool = true,
        /// Multiply by `gamma`.
        scale: bool = true,
    }
}

op_attrs! {
    /// `nn.lrn` (TVM `LRNAttrs`): `x / (bias + alpha / size * sum of x^2 over size channels)^beta`.
    pub struct LrnAttrs {
        /// The window, in channels (centred: `size / 2` each side).
        size: i64 = 5,
        /// The channel axis.
        axis: i64 = 1,
        /// Added to the scaled sum.
        bias: f64 = 2.0,
        /// Scale of the sum (divided by `size`).
        alpha: f64 = 1e-4,
        /// The exponent.
        beta: f64 = 0.75,
    }
}
