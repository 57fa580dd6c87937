//! Attributes of the quantized (`qnn.*`) operators (TVM `include/tvm/relay/qnn/attrs.h`,
//! v0.16). Scales and zero points are operands in TVM, not attributes; the products, the
//! convolution, `qnn.concatenate`, `qnn.leaky_relu` and `qnn.softmax` reuse the attributes
//! of their float operators.

use super::{attr_enum, op_attrs, FromAttr};
use relay_compiler::ir::AttrValue;
use relay_devices::DType;

attr_enum! {
    /// How `qnn.requantize` rounds a value midway between two integers.
    QnnRounding, "one of \"None\", \"UPWARD\", \"TONEAREST\"" {
        /// TVM's `RequantizeConfig` default, which is `UPWARD`.
        #[default]
        Unset = "None",
        /// Ties towards +infinity (`-2.5 -> -2`, `2.5 -> 3`).
        Upward = "UPWARD",
        /// Ties away from zero (`-2.5 -> -3`, `2.5 -> 3`).
        ToNearest = "TONEAREST",
    }
}

attr_enum! {
    /// The arithmetic `qnn.requantize` scales in.
    QnnComputeDtype, "one of \"None\", \"int64\", \"float32\", \"float64\"" {
        /// TVM's `RequantizeConfig` default, which is `int64`.
        #[default]
        Unset = "None",
        /// 64-bit fixed point: a 31-bit multiplier and a shift.
        Int64 = "int64",
        /// Float arithmetic (not run by the reference kernel: a type error).
        Float32 = "float32",
        /// Float arithmetic (not run by the reference kernel: a type error).
        Float64 = "float64",
    }
}

op_attrs! {
    /// `qnn.quantize` (TVM `QuantizeAttrs`).
    pub struct QuantizeAttrs {
        /// The channel axis of a per-channel `output_scale`/`output_zero_point`.
        axis: i64 = (-1),
        /// `int8`, `uint8`, `int16` or `int32` (Python's default `int8`).
        out_dtype: DType = (DType::I8),
    }
}

op_attrs! {
    /// `qnn.dequantize` (TVM `DequantizeAttrs`).
    pub struct DequantizeAttrs {
        /// The channel axis of a per-channel `input_scale`/`input_zero_point`.
        axis: i64 = (-1),
        /// `float32`.
        out_dtype: DType = (DType::F32),
    }
}

op_attrs! {
    /// `qnn.requantize` (TVM `RequantizeAttrs`).
    pub struct RequantizeAttrs {
        /// The channel axis of a per-channel `input_scale`/`input_zero_point`.
        axis: i64 = (-1),
        /// Rounding of the fixed-point multiplication; `"None"` is `UPWARD`.
        rounding: QnnRounding = (QnnRounding::Unset),
        /// `"None"` is `int64`, the fixed-point arithmetic the reference kernel runs.
        compute_dtype: QnnComputeDtype = (QnnComputeDtype::Unset),
        /// `int8`, `uint8`, `int16` or `int32` (Python's default `int8`).
        out_dtype: DType = (DType::I8),
    }
}

op_attrs! {
    /// `qnn.add`, `qnn.subtract`, `qnn.mul` (TVM `BroadcastAttrs`).
    pub struct QnnBinaryAttrs {
        /// The channel axis of a per-channel `lhs_scale`/`lhs_zero_point` (per-tensor only here).
        lhs_axis: i64 = (-1),
        /// The channel axis of a per-channel `rhs_scale`/`rhs_zero_point` (per-tensor only here).
        rhs_axis: i64 = (-1),
    }
}
