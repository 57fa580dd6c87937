//! Attributes of the elementwise, reduction and transform operators
//! (TVM `include/tvm/relay/attrs/transform.h`, `reduce.h`, `nn.h`).

// `attr_enum!` names `FromAttr` and `AttrValue` where it expands.
use super::{attr_enum, op_attrs, FromAttr, IndicesOrSections, PadMode, SliceMode, TakeMode};
use relay_compiler::ir::AttrValue;
use relay_devices::DType;

op_attrs! {
    /// `nn.leaky_relu` (TVM `LeakyReluAttrs`).
    pub struct LeakyReluAttrs {
        /// Slope for negative inputs.
        alpha: f64 = 0.25,
    }
}

op_attrs! {
    /// `clip` (TVM `ClipAttrs`); both bounds are required.
    pub struct ClipAttrs {
        /// Lower bound, converted to the input's dtype.
        a_min: f64 = required,
        /// Upper bound, converted to the input's dtype.
        a_max: f64 = required,
    }
}

op_attrs! {
    /// `cast` (TVM `CastAttrs`).
    pub struct CastAttrs {
        /// Target dtype (required).
        dtype: DType = required,
    }
}

op_attrs! {
    /// `sum`, `mean`, `max`, `min`, `prod`, `all`, `any` (TVM `ReduceAttrs`).
    pub struct ReduceAttrs {
        /// Axes to reduce (negative counts from the end); `None` reduces all.
        axis: Option<Vec<i64>> = None,
        /// Keep reduced axes as size-1 dimensions.
        keepdims: bool = false,
        /// Reduce every axis *except* those in `axis`.
        exclude: bool = false,
    }
}

op_attrs! {
    /// `argmax`, `argmin` (TVM `ArgReduceAttrs`); the result is `int32`.
    pub struct ArgReduceAttrs {
        /// Axes to reduce; `None` reduces all (the index is then into the flattened input).
        axis: Option<Vec<i64>> = None,
        /// Keep reduced axes as size-1 dimensions.
        keepdims: bool = false,
        /// Reduce every axis *except* those in `axis`.
        exclude: bool = false,
        /// On ties, report the last index instead of the first.
        select_last_index: bool = false,
    }
}

op_attrs! {
    /// `variance`, `std` (TVM `VarianceAttrs`).
    pub struct VarianceAttrs {
        /// Axes to reduce (negative counts from the end); `None` reduces all.
        axis: Option<Vec<i64>> = None,
        /// Keep reduced axes as size-1 dimensions.
        keepdims: bool = false,
        /// Reduce every axis *except* those in `axis`.
        exclude: bool = false,
        /// Divide by `n - 1` (Bessel's correction) instead of `n`.
        unbiased: bool = false,
    }
}

op_attrs! {
    /// `cumsum`, `cumprod` (TVM `ScanopAttrs`).
    pub struct ScanopAttrs {
        /// The axis to scan along; `None` scans the flattened input.
        axis: Option<i64> = None,
        /// Output and accumulation dtype; `None`: the input dtype.
        dtype: Option<DType> = None,
        /// Leave element `i` out of output `i` (output 0 is the identity).
        exclusive: bool = false,
    }
}

op_attrs! {
    /// `reshape` (TVM `ReshapeAttrs`).
    pub struct ReshapeAttrs {
        /// Target shape with TVM's special values: `0` copies an input dimension, `-1` infers
        /// one, `-2` copies the rest, `-3` merges two, `-4` splits one into the next two.
        newshape: Vec<i64> = required,
        /// Take `0` literally as a zero-sized dimension.
        allowzero: bool = false,
    }
}

op_attrs! {
    /// `transpose` (TVM `TransposeAttrs`).
    pub struct TransposeAttrs {
        /// Output axis `k` is input axis `axes[k]`; `None` reverses the axes.
        axes: Option<Vec<i64>> = None,
    }
}

op_attrs! {
    /// `squeeze` (TVM `SqueezeAttrs`).
    pub struct SqueezeAttrs {
        /// Size-1 axes to remove; `None` removes all size-1 axes.
        axis: Option<Vec<i64>> = None,
    }
}

op_attrs! {
    /// `expand_dims` (TVM `ExpandDimsAttrs`).
    pub struct ExpandDimsAttrs {
        /// Where the new axes go, in `[-rank - 1, rank]`.
        axis: i64 = required,
        /// How many size-1 axes to insert.
        num_newaxis: i64 = 1,
    }
}

op_attrs! {
    /// `concatenate` (TVM `ConcatenateAttrs`).
    pub struct ConcatenateAttrs {
        /// The axis along which inputs are joined.
        axis: i64 = 0,
    }
}

op_attrs! {
    /// `einsum` (TVM `EinsumAttrs`).
    pub struct EinsumAttrs {
        /// The subscripts, in NumPy's grammar: comma-separated input terms of axis letters and
        /// `...`, optionally `->` and the output term (`"ij,jk->ik"`, `"...ii->...i"`).
        equation: String = required,
    }
}

op_attrs! {
    /// `stack` (TVM `StackAttrs`).
    pub struct StackAttrs {
        /// Position of the new axis in the output.
        axis: i64 = 0,
    }
}

op_attrs! {
    /// `split` (TVM `SplitAttrs`).
    pub struct SplitAttrs {
        /// Equal sections, or split points (required).
        indices_or_sections: IndicesOrSections = required,
        /// The axis to split.
        axis: i64 = 0,
    }
}

op_attrs! {
    /// `take` (TVM `TakeAttrs`).
    pub struct TakeAttrs {
        /// Leading dimensions shared by data and indices.
        batch_dims: i64 = 0,
        /// The axis to index; `None` indexes the flattened data.
        axis: Option<i64> = None,
        /// Out-of-range index handling.
        mode: TakeMode = (TakeMode::Clip),
    }
}

op_attrs! {
    /// `strided_slice` (TVM `StridedSliceAttrs`).
    pub struct StridedSliceAttrs {
        /// First index per sliced axis (negative counts from the end).
        begin: Vec<i64> = required,
        /// End per sliced axis (exclusive), or length in `size` mode.
        end: Vec<i64> = required,
        /// Step per sliced axis (missing ones are 1; may be negative).
        strides: Option<Vec<i64>> = None,
        /// How `end` is read.
        slice_mode: SliceMode = (SliceMode::End),
        /// The axes `begin`/`end`/`strides` refer to; `None` means `0, 1, ...`.
        axes: Option<Vec<i64>> = None,
    }
}

op_attrs! {
    /// `zeros`, `ones`, `full`, `broadcast_to` (TVM `InitOpAttrs`).
    pub struct InitOpAttrs {
        /// The output shape (required by every user here).
        shape: Option<Vec<i64>> = None,
        /// The output dtype; `None` is `float32` for `zeros`/`ones` and the fill value's dtype
        /// for `full`. Ignored by `broadcast_to`.
        dtype: Option<DType> = None,
    }
}

op_attrs! {
    /// `nn.pad` (TVM `PadAttrs`); the pad value is the second input.
    pub struct PadAttrs {
        /// `[before, after]` per axis.
        pad_width: Vec<Vec<i64>> = required,
        /// How the border is filled.
        pad_mode: PadMode = (PadMode::Constant),
    }
}

attr_enum! {
    /// Which mirror image `nn.mirror_pad` copies.
    MirrorPadMode, "\"SYMMETRIC\" or \"REFLECT\"" {
        /// The edge element is repeated: `[a, b, c]` padded by 2 gives `b a | a b c | c b`
        /// (TVM's default).
        #[default]
        Symmetric = "SYMMETRIC",
        /// The edge element is the mirror: `[a, b, c]` padded by 2 gives `c b | a b c | b a`.
        Reflect = "REFLECT",
    }
}

op_attrs! {
    /// `nn.mirror_pad` (TVM `MirrorPadAttrs`).
    pub struct MirrorPadAttrs {
        /// Which mirror image fills the border.
        mode: MirrorPadMode = (MirrorPadMode::Symmetric),
        /// `[before, after]` per axis.
        pad_width: Vec<Vec<i64>> = required,
    }
}

op_attrs! {
    /// `shape_of` (TVM `ShapeOfAttrs`).
    pub struct ShapeOfAttrs {
        /// `int32` or `int64`.
        dtype: DType = (DType::I32),
    }
}

op_attrs! {
    /// `arange` (TVM `ArangeAttrs`): `start, start + step, ...` below `stop` (above it for a
    /// negative `step`). TVM passes the bounds as constant operands; here they are attributes,
    /// so the output length is known when the program is type-checked.
    pub struct ArangeAttrs {
        /// The first value.
        start: f64 = 0.0,
        /// The bound, excluded.
        stop: f64 = required,
        /// The increment (not zero).
        step: f64 = 1.0,
        /// The output dtype.
        dtype: DType = (DType::F32),
    }
}

op_attrs! {
    /// `trilu` (TVM `TriluAttrs`); the diagonal offset `k` is the second input.
    pub struct TriluAttrs {
        /// Keep the upper triangle (`j - i >= k`) instead of the lower (`j - i <= k`).
        upper: bool = true,
    }
}

op_attrs! {
    /// `reshape_like` (TVM `ReshapeLikeAttrs`): `data`'s axes `lhs_begin..lhs_end` are replaced
    /// by `shape_like`'s axes `rhs_begin..rhs_end` (negative values count from the end).
    pub struct ReshapeLikeAttrs {
        /// First replaced axis of `data`.
        lhs_begin: i64 = 0,
        /// End of the replaced axes of `data` (exclusive); `None`: its rank.
        lhs_end: Option<i64> = None,
        /// First axis of `shape_like` taken.
        rhs_begin: i64 = 0,
        /// End of the axes of `shape_like` taken (exclusive); `None`: its rank.
        rhs_end: Option<i64> = None,
    }
}

op_attrs! {
    /// `slice_like` (TVM `SliceLikeAttrs`).
    pub struct SliceLikeAttrs {
        /// The axes sliced to `shape_like`'s size; `None`: the leading axes both tensors have.
        axes: Option<Vec<i64>> = None,
    }
}

op_attrs! {
    /// `ndarray_size` (TVM `NdarraySizeAttrs`).
    pub struct NdarraySizeAttrs {
        /// The dtype of the count (an integer type).
        dtype: DType = (DType::I32),
    }
}

attr_enum! {
    /// How `meshgrid` orders its output axes.
    MeshgridIndexing, "\"ij\" or \"xy\"" {
        /// Matrix indexing: output axis `i` runs along input `i` (TVM's default).
        #[default]
        Ij = "ij",
        /// Cartesian indexing: the first two output axes swapped.
        Xy = "xy",
    }
}

op_attrs! {
    /// `meshgrid` (TVM `MeshgridAttrs`).
    pub struct MeshgridAttrs {
        /// Matrix (`"ij"`) or Cartesian (`"xy"`) indexing.
        indexing: MeshgridIndexing = (MeshgridIndexing::Ij),
    }
}

op_attrs! {
    /// `sequence_mask` (TVM `SequenceMaskAttrs`).
    pub struct SequenceMaskAttrs {
        /// The value written past each sequence's length.
        mask_value: f64 = 0.0,
        /// The time axis, 0 or 1 (the batch axis is the other one).
        axis: i64 = 0,
    }
}

op_attrs! {
    /// `matrix_set_diag` (TVM `MatrixSetDiagAttrs`): diagonals `k1..=k2` of the innermost
    /// matrices replaced (TensorFlow's `MatrixSetDiagV3`).
    pub struct MatrixSetDiagAttrs {
        /// The lowest diagonal replaced (0 the main one, negative below it).
        k1: i64 = 0,
        /// The highest diagonal replaced.
        k2: i64 = 0,
        /// Diagonals above the main one are aligned to the right of their row of `diagonal`.
        super_diag_right_align: bool = false,
        /// Diagonals below the main one are aligned to the right of their row of `diagonal`.
        sub_diag_right_align: bool = false,
    }
}

op_attrs! {
    /// `layout_transform` (TVM `LayoutTransformAttrs`): layouts such as `"NCHW"`, `"NHWC"` or
    /// the blocked `"NCHW8c"` (upper case: a primal axis; `8c`: a sub-axis of 8 of axis `C`).
    pub struct LayoutTransformAttrs {
        /// The input's layout.
        src_layout: String = required,
        /// The output's layout.
        dst_layout: String = required,
    }
}
