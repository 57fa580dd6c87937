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
    /// `nn.conv2d` (TVM `Conv2DAttrs`); any permutation of `NCHW`/`OIHW` runs (the reference
    /// kernel permutes other layouts to those; the kir rule fuses `NCHW`/`OIHW` only).
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
        /// Data layout: a permutation of `NCHW` (`NHWC`, ...).
        data_layout: String = ("NCHW".to_string()),
        /// Weight layout: a permutation of `OIHW` (`HWIO`, `OHWI`, ...).
        kernel_layout: String = ("OIHW".to_string()),
        /// Output layout; `""` (same as the data) or a permutation of `NCHW`.
        out_layout: String = (String::new()),
        /// Output and accumulation dtype (`int32` for `int8`/`uint8` inputs); `None`: the data
        /// dtype.
        out_dtype: Option<DType> = None,
    }
}

op_attrs! {
    /// `nn.contrib_conv2d_winograd_weight_transform` (TVM `ConvWinogradWeightTransformAttrs`).
    pub struct ConvWinogradWeightTransformAttrs {
        /// Output positions per tile side, `m` of `F(m×m, 3×3)`; the transformed tiles are
        /// `alpha = m + 2` on a side.
        tile_size: i64 = 4,
    }
}

op_attrs! {
    /// `nn.contrib_conv2d_winograd_without_weight_transform` (TVM `Conv2DWinogradAttrs`):
    /// `nn.conv2d`'s attributes and the tile size of the transformed weight it takes.
    pub struct Conv2dWinogradAttrs {
        /// Output positions per tile side (`m` of `F(m×m, 3×3)`).
        tile_size: i64 = 4,
        /// `[stride_h, stride_w]`: 1 only.
        strides: Vec<i64> = (vec![1, 1]),
        /// 1 value (all sides), 2 (`[top/bottom, left/right]`) or 4 (`[top, left, bottom, right]`).
        padding: Vec<i64> = (vec![0, 0]),
        /// `[dilation_h, dilation_w]`: 1 only.
        dilation: Vec<i64> = (vec![1, 1]),
        /// Channel groups: 1 only.
        groups: i64 = 1,
        /// Output channels; checked against the weight when given.
        channels: Option<i64> = None,
        /// `[kh, kw]` of the untransformed weight: `[3, 3]` when given.
        kernel_size: Option<Vec<i64>> = None,
        /// Data layout: `NCHW` only.
        data_layout: String = ("NCHW".to_string()),
        /// The untransformed weight's layout: `OIHW` only.
        kernel_layout: String = ("OIHW".to_string()),
        /// Output layout; `""` or `NCHW`.
        out_layout: String = (String::new()),
        /// Output dtype; `None` or `float32`.
        out_dtype: Option<DType> = None,
    }
}

op_attrs! {
    /// `nn.conv1d` (TVM `Conv1DAttrs`); any permutation of `NCW`/`OIW` runs.
    pub struct Conv1dAttrs {
        /// `[stride]`.
        strides: Vec<i64> = (vec![1]),
        /// `[p]` (both sides) or `[left, right]`.
        padding: Vec<i64> = (vec![0, 0]),
        /// `[dilation]`.
        dilation: Vec<i64> = (vec![1]),
        /// Channel groups; `groups == in_channels` is a depthwise convolution.
        groups: i64 = 1,
        /// Output channels; checked against the weight when given.
        channels: Option<i64> = None,
        /// `[k]`; checked against the weight when given.
        kernel_size: Option<Vec<i64>> = None,
        /// Data layout.
        data_layout: String = ("NCW".to_string()),
        /// Weight layout.
        kernel_layout: String = ("OIW".to_string()),
        /// Output layout; `""` (same as the data) or a permutation of `NCW`.
        out_layout: String = (String::new()),
        /// Output and accumulation dtype; `None`: the data dtype.
        out_dtype: Option<DType> = None,
    }
}

op_attrs! {
    /// `nn.conv3d` (TVM `Conv3DAttrs`); any permutation of `NCDHW`/`OIDHW` runs (`NDHWC`/`DHWIO`,
    /// ...).
    pub struct Conv3dAttrs {
        /// `[stride_d, stride_h, stride_w]` (one value applies to all).
        strides: Vec<i64> = (vec![1, 1, 1]),
        /// 1 value (all sides), 3 (`[front/back, top/bottom, left/right]`) or 6
        /// (`[front, top, left, back, bottom, right]`).
        padding: Vec<i64> = (vec![0, 0, 0]),
        /// `[dilation_d, dilation_h, dilation_w]` (one value applies to all).
        dilation: Vec<i64> = (vec![1, 1, 1]),
        /// Channel groups; `groups == in_channels` is a depthwise convolution.
        groups: i64 = 1,
        /// Output channels; checked against the weight when given.
        channels: Option<i64> = None,
        /// `[kd, kh, kw]`; checked against the weight when given.
        kernel_size: Option<Vec<i64>> = None,
        /// Data layout: a permutation of `NCDHW` (`NDHWC`, ...).
        data_layout: String = ("NCDHW".to_string()),
        /// Weight layout: a permutation of `OIDHW` (`DHWIO`, ...).
        kernel_layout: String = ("OIDHW".to_string()),
        /// Output layout; `""` (same as the data) or a permutation of `NCDHW`.
        out_layout: String = (String::new()),
        /// Output and accumulation dtype; `None`: the data dtype.
        out_dtype: Option<DType> = None,
    }
}

/// Declares a pooling attribute struct: the window fields that TVM's `MaxPool{1,2}DAttrs`
/// and `AvgPool{1,2}DAttrs` all have, in TVM's order, with the defaults of the struct's rank
/// (`ones` for `strides` and `dilation`, `zeros` for `padding`, and the layout), then the
/// struct's own fields.
macro_rules! pool_attrs {
    ($ones:expr, $zeros:expr, $layout:literal; $(#[$doc:meta])* pub struct $name:ident { $($own:tt)* }) => {
        op_attrs! {
            $(#[$doc])*
            pub struct $name {
                /// The window (required; one value applies to every spatial axis).
                pool_size: Vec<i64> = required,
                /// The step per spatial axis.
                strides: Vec<i64> = ($ones),
                /// The gap between window taps per spatial axis.
                dilation: Vec<i64> = ($ones),
                /// Per side, as for the convolution of this rank.
                padding: Vec<i64> = ($zeros),
                /// Data layout.
                layout: String = ($layout.to_string()),
                /// Output layout; `""` or the data layout.
                out_layout: String = (String::new()),
                /// Round the output size up: a last, partial window is kept.
                ceil_mode: bool = false,
                $($own)*
            }
        }
    };
}

pool_attrs! {
    vec![1, 1], vec![0, 0], "NCHW";
    /// `nn.max_pool2d` (TVM `MaxPool2DAttrs`); padded positions never win.
    pub struct MaxPool2dAttrs {}
}

pool_attrs! {
    vec![1, 1], vec![0, 0], "NCHW";
    /// `nn.avg_pool2d` (TVM `AvgPool2DAttrs`).
    pub struct AvgPool2dAttrs {
        /// Divide by the window size including explicit padding (not the extra `ceil_mode`
        /// border) instead of by the number of real elements.
        count_include_pad: bool = false,
    }
}

pool_attrs! {
    vec![1], vec![0], "NCW";
    /// `nn.max_pool1d` (TVM `MaxPool1DAttrs`); `padding` is `[p]` or `[left, right]`.
    pub struct MaxPool1dAttrs {}
}

pool_attrs! {
    vec![1], vec![0], "NCW";
    /// `nn.avg_pool1d` (TVM `AvgPool1DAttrs`); `padding` is `[p]` or `[left, right]`.
    pub struct AvgPool1dAttrs {
        /// Divide by the window size including explicit padding (not the extra `ceil_mode`
        /// border) instead of by the number of real elements.
        count_include_pad: bool = false,
    }
}

pool_attrs! {
    vec![1, 1, 1], vec![0, 0, 0], "NCDHW";
    /// `nn.max_pool3d` (TVM `MaxPool3DAttrs`); `padding` has 1, 3 or 6 values as for
    /// `nn.conv3d`; padded positions never win.
    pub struct MaxPool3dAttrs {}
}

pool_attrs! {
    vec![1, 1, 1], vec![0, 0, 0], "NCDHW";
    /// `nn.avg_pool3d` (TVM `AvgPool3DAttrs`); `padding` has 1, 3 or 6 values as for
    /// `nn.conv3d`.
    pub struct AvgPool3dAttrs {
        /// Divide by the window size including explicit padding (not the extra `ceil_mode`
        /// border) instead of by the number of real elements.
        count_include_pad: bool = false,
    }
}

op_attrs! {
    /// `nn.global_avg_pool2d` and `nn.global_max_pool2d` (TVM `GlobalPool2DAttrs`); any
    /// permutation of `NCHW` runs (the kir rule fuses `NCHW` only).
    pub struct GlobalPool2dAttrs {
        /// Data layout: a permutation of `NCHW` (`NHWC`, ...).
        layout: String = ("NCHW".to_string()),
        /// Output layout; `""` or the data layout.
        out_layout: String = (String::new()),
    }
}

op_attrs! {
    /// `nn.adaptive_avg_pool2d` and `nn.adaptive_max_pool2d` (TVM `AdaptivePool2DAttrs`); any
    /// permutation of `NCHW` runs.
    pub struct AdaptivePool2dAttrs {
        /// `[oh, ow]` (one value applies to both); empty: the input's `H` and `W`.
        output_size: Vec<i64> = (Vec::new()),
        /// Data layout.
        layout: String = ("NCHW".to_string()),
        /// Output layout; `""` or the data layout.
        out_layout: String = (String::new()),
    }
}

op_attrs! {
    /// `nn.adaptive_avg_pool1d` and `nn.adaptive_max_pool1d` (TVM `AdaptivePool1DAttrs`); any
    /// permutation of `NCW` runs.
    pub struct AdaptivePool1dAttrs {
        /// `[ow]`; empty: the input's `W`.
        output_size: Vec<i64> = (Vec::new()),
        /// Data layout.
        layout: String = ("NCW".to_string()),
        /// Output layout; `""` or the data layout.
        out_layout: String = (String::new()),
    }
}

op_attrs! {
    /// `nn.adaptive_avg_pool3d` and `nn.adaptive_max_pool3d` (TVM `AdaptivePool3DAttrs`); any
    /// permutation of `NCDHW` runs.
    pub struct AdaptivePool3dAttrs {
        /// `[od, oh, ow]` (one value applies to all); empty: the input's `D`, `H` and `W`.
        output_size: Vec<i64> = (Vec::new()),
        /// Data layout.
        layout: String = ("NCDHW".to_string()),
        /// Output layout; `""` or the data layout.
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
    /// `nn.group_norm` (TVM `GroupNormAttrs`): the channels of `axis` split into `num_groups`
    /// runs, each normalised with every axis but 0.
    pub struct GroupNormAttrs {
        /// How many groups the channels form; it must divide the channel count.
        num_groups: i64 = 0,
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

op_attrs! {
    /// `nn.l2_normalize` (TVM `L2NormalizeAttrs`): `x / sqrt(max(sum of x^2 over axis, eps))`.
    pub struct L2NormalizeAttrs {
        /// The floor of the sum of squares (required, as in TVM).
        eps: f64 = required,
        /// The axes summed over; `None`: all of them.
        axis: Option<Vec<i64>> = None,
    }
}

op_attrs! {
    /// `nn.conv2d_transpose` (TVM `Conv2DTransposeAttrs`): `NCHW` data, `IOHW` weights.
    pub struct Conv2dTransposeAttrs {
        /// Output channels; checked against the weight when given.
        channels: Option<i64> = None,
        /// `[kh, kw]`; checked against the weight when given.
        kernel_size: Option<Vec<i64>> = None,
        /// `[stride_h, stride_w]` (one value applies to both).
        strides: Vec<i64> = (vec![1, 1]),
        /// Extra rows and columns at the bottom and right, each below its stride.
        output_padding: Vec<i64> = (vec![0, 0]),
        /// Removed from the full output: 1, 2 or 4 values, as for `nn.conv2d`.
        padding: Vec<i64> = (vec![0, 0]),
        /// `[dilation_h, dilation_w]` (one value applies to both).
        dilation: Vec<i64> = (vec![1, 1]),
        /// Channel groups.
        groups: i64 = 1,
        /// Data layout; `NCHW` only.
        data_layout: String = ("NCHW".to_string()),
        /// Weight layout; `IOHW` only.
        kernel_layout: String = ("IOHW".to_string()),
        /// Output layout; `""` or `NCHW`.
        out_layout: String = (String::new()),
        /// Output and accumulation dtype; `None`: the data dtype.
        out_dtype: Option<DType> = None,
    }
}

op_attrs! {
    /// `nn.conv1d_transpose` (TVM `Conv1DTransposeAttrs`): `NCW` data, `IOW` weights.
    pub struct Conv1dTransposeAttrs {
        /// Output channels; checked against the weight when given.
        channels: Option<i64> = None,
        /// `[k]`; checked against the weight when given.
        kernel_size: Option<Vec<i64>> = None,
        /// `[stride]`.
        strides: Vec<i64> = (vec![1]),
        /// `[extra]`: elements added at the end, below the stride.
        output_padding: Vec<i64> = (vec![0]),
        /// `[p]` (both sides) or `[left, right]`.
        padding: Vec<i64> = (vec![0]),
        /// `[dilation]`.
        dilation: Vec<i64> = (vec![1]),
        /// Channel groups.
        groups: i64 = 1,
        /// Data layout; `NCW` only.
        data_layout: String = ("NCW".to_string()),
        /// Weight layout; `IOW` only.
        kernel_layout: String = ("IOW".to_string()),
        /// Output layout; `""` or `NCW`.
        out_layout: String = (String::new()),
        /// Output and accumulation dtype; `None`: the data dtype.
        out_dtype: Option<DType> = None,
    }
}

op_attrs! {
    /// `nn.deformable_conv2d` (TVM `DeformableConv2DAttrs`): `NCHW` data, `OIHW` weights.
    pub struct DeformableConv2dAttrs {
        /// `[stride_h, stride_w]` (one value applies to both).
        strides: Vec<i64> = (vec![1, 1]),
        /// 1, 2 or 4 values, as for `nn.conv2d`.
        padding: Vec<i64> = (vec![0, 0]),
        /// `[dilation_h, dilation_w]` (one value applies to both).
        dilation: Vec<i64> = (vec![1, 1]),
        /// Channel groups sharing one set of offsets.
        deformable_groups: i64 = 1,
        /// Channel groups of the convolution.
        groups: i64 = 1,
        /// Output channels; checked against the weight when given.
        channels: Option<i64> = None,
        /// `[kh, kw]`; checked against the weight when given.
        kernel_size: Option<Vec<i64>> = None,
        /// Data layout; `NCHW` only.
        data_layout: String = ("NCHW".to_string()),
        /// Weight layout; `OIHW` only.
        kernel_layout: String = ("OIHW".to_string()),
        /// Output layout; `""` or `NCHW`.
        out_layout: String = (String::new()),
        /// Output dtype; `None`: the data dtype.
        out_dtype: Option<DType> = None,
    }
}

op_attrs! {
    /// `nn.conv3d_transpose` (TVM `Conv3DTransposeAttrs`): `NCDHW` data, `IODHW` weights.
    pub struct Conv3dTransposeAttrs {
        /// Output channels; checked against the weight when given.
        channels: Option<i64> = None,
        /// `[kd, kh, kw]`; checked against the weight when given.
        kernel_size: Option<Vec<i64>> = None,
        /// `[stride_d, stride_h, stride_w]` (one value applies to all).
        strides: Vec<i64> = (vec![1, 1, 1]),
        /// Extra elements at the end of each spatial axis, each below its stride.
        output_padding: Vec<i64> = (vec![0, 0, 0]),
        /// Removed from the full output: 1, 3 or 6 values, as for `nn.conv3d`.
        padding: Vec<i64> = (vec![0, 0, 0]),
        /// `[dilation_d, dilation_h, dilation_w]` (one value applies to all).
        dilation: Vec<i64> = (vec![1, 1, 1]),
        /// Channel groups.
        groups: i64 = 1,
        /// Data layout; `NCDHW` only.
        data_layout: String = ("NCDHW".to_string()),
        /// Weight layout; `IODHW` only.
        kernel_layout: String = ("IODHW".to_string()),
        /// Output layout; `""` or `NCDHW`.
        out_layout: String = (String::new()),
        /// Output and accumulation dtype; `None`: the data dtype.
        out_dtype: Option<DType> = None,
    }
}

attr_enum! {
    /// How `nn.nll_loss` reduces the per-element losses.
    LossReduction, "one of \"mean\", \"sum\", \"none\"" {
        /// The weighted mean: the sum over the sum of the weights taken (TVM's default).
        #[default]
        Mean = "mean",
        /// The sum.
        Sum = "sum",
        /// No reduction: one loss per target.
        None = "none",
    }
}

op_attrs! {
    /// `nn.nll_loss` (TVM `NLLLossAttrs`).
    pub struct NllLossAttrs {
        /// How the per-target losses combine.
        reduction: LossReduction = (LossReduction::Mean),
        /// Targets equal to this contribute neither loss nor weight.
        ignore_index: i64 = (-100),
    }
}

op_attrs! {
    /// `nn.space_to_batch_nd` (TVM `SpaceToBatchNDAttrs`): the `M` spatial axes after the batch
    /// axis are padded, cut into blocks and the blocks moved into the batch axis.
    pub struct SpaceToBatchNdAttrs {
        /// The block side of each spatial axis (its length is `M`).
        block_shape: Vec<i64> = (vec![1, 1]),
        /// `[before, after]` padding of each spatial axis.
        paddings: Vec<Vec<i64>> = required,
        /// The value of the padding elements (converted to the data dtype).
        pad_value: f64 = 0.0,
    }
}

op_attrs! {
    /// `nn.batch_to_space_nd` (TVM `BatchToSpaceNDAttrs`): the inverse of
    /// `nn.space_to_batch_nd`, with `crops` removed instead of padding added.
    pub struct BatchToSpaceNdAttrs {
        /// The block side of each spatial axis (its length is `M`).
        block_shape: Vec<i64> = (vec![1, 1]),
        /// `[start, end]` elements cropped from each spatial axis.
        crops: Vec<Vec<i64>> = required,
    }
}
