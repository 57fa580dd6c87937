//! Type relations of the operators (paper §3.2; TVM `src/relay/op/**` `*Rel` functions), one
//! file per family. Each relation defers (`Ok(None)`) until the inputs it needs are known,
//! then returns the output type or an error naming the offending types.

mod attr_util;
mod common;
mod nn;
mod nn_conv;
mod transform;
mod transform_index;
mod transform_init;
mod transform_join;

pub use common::{normalize_axis, tensor_arg};
pub use nn::{
    batch_matmul_rel, batch_norm_rel, bias_add_rel, check_product_dtypes, dense_rel, dropout_rel,
    layer_norm_rel, matmul_rel, softmax_rel,
};
pub use nn_conv::{conv2d_rel, global_pool2d_rel, pool2d_rel, window_out, Layout4};
pub use transform::{
    batch_flatten_rel, broadcast_to_rel, expand_dims_rel, infer_reshape, reshape_rel, squeeze_rel,
    transpose_rel,
};
pub use transform_index::{pad_rel, slice_len, strided_slice_rel, take_rel};
pub use transform_init::{full_rel, init_rel, shape_of_rel};
pub use transform_join::{concatenate_rel, split_rel, split_sizes, stack_rel};
