//! Type relations of the operators (paper §3.2; TVM `src/relay/op/**` `*Rel` functions), one
//! file per family. Each relation defers (`Ok(None)`) until the inputs it needs are known,
//! then returns the output type or an error naming the offending types.

mod attr_util;
mod common;
mod nn;
mod nn_conv;

pub use common::{normalize_axis, tensor_arg};
pub use nn::{
    batch_matmul_rel, batch_norm_rel, bias_add_rel, check_product_dtypes, dense_rel, dropout_rel,
    layer_norm_rel, matmul_rel, softmax_rel,
};
pub use nn_conv::{conv2d_rel, global_pool2d_rel, pool2d_rel, window_out, Layout4};
