//! The ONNX operators the importer converts: one table from operator type to converter, which
//! both dispatches and decides what is supported. Semantics follow TVM v0.16's ONNX frontend
//! (`python/tvm/relay/frontend/onnx.py`).

mod control;
mod elementwise;
mod generate;
mod image;
mod indexing;
mod nn;
mod rearrange;
mod recurrent;
mod reduce;
mod sequence;
mod transform;
mod vision;

use crate::error::ImportError;
use crate::graph::{Converter, Value};
use crate::node::Node;

pub use transform::slice_ranges;

/// A converter: the node's outputs, as Relay expressions over its inputs.
pub type Convert = fn(&mut Converter, &Node) -> Result<Vec<Value>, ImportError>;

/// Every supported operator of the default domain.
const OPERATORS: &[(&str, Convert)] = &[
    ("Abs", |cx, n| elementwise::unary(cx, n, "abs")),
    ("Add", |cx, n| elementwise::binary(cx, n, "add")),
    ("And", |cx, n| elementwise::binary(cx, n, "logical_and")),
    ("AveragePool", nn::average_pool),
    ("BatchNormalization", nn::batch_norm),
    ("Cast", elementwise::cast),
    ("Ceil", |cx, n| elementwise::unary(cx, n, "ceil")),
    ("Clip", elementwise::clip),
    ("Concat", transform::concat),
    ("ConcatFromSequence", sequence::concat),
    ("Constant", transform::constant),
    ("ConstantOfShape", generate::constant_of_shape),
    ("Conv", nn::conv),
    ("ConvTranspose", nn::conv_transpose),
    ("CumSum", rearrange::cumsum),
    ("DeformConv", vision::deform_conv),
    ("DepthToSpace", rearrange::depth_to_space),
    ("Div", |cx, n| elementwise::binary(cx, n, "divide")),
    ("Dropout", transform::identity),
    ("Elu", elementwise::elu),
    ("Equal", |cx, n| elementwise::compare(cx, n, "equal")),
    ("Erf", |cx, n| elementwise::unary(cx, n, "erf")),
    ("Exp", |cx, n| elementwise::unary(cx, n, "exp")),
    ("Expand", transform::expand),
    ("Flatten", transform::flatten),
    ("Floor", |cx, n| elementwise::unary(cx, n, "floor")),
    ("GRU", recurrent::gru),
    ("Gather", transform::gather),
    ("GatherElements", indexing::gather_elements),
    ("GatherND", indexing::gather_nd),
    ("Gemm", nn::gemm),
    ("GlobalAveragePool", nn::global_average_pool),
    ("GlobalMaxPool", nn::global_max_pool),
    ("Greater", |cx, n| elementwise::compare(cx, n, "greater")),
    ("GreaterOrEqual", |cx, n| elementwise::compare(cx, n, "greater_equal")),
    ("GridSample", image::grid_sample),
    ("Identity", transform::identity),
    ("If", control::if_),
    ("InstanceNormalization", nn::instance_norm),
    ("LRN", nn::lrn),
    ("LSTM", |cx, n| recurrent::recurrent(cx, n, recurrent::Cell::Lstm)),
    ("LayerNormalization", nn::layer_norm),
    ("LeakyRelu", elementwise::leaky_relu),
    ("Less", |cx, n| elementwise::compare(cx, n, "less")),
    ("LessOrEqual", |cx, n| elementwise::compare(cx, n, "less_equal")),
    ("Log", |cx, n| elementwise::unary(cx, n, "log")),
    ("LogSoftmax", |cx, n| nn::softmax(cx, n, "nn.log_softmax")),
    ("Loop", control::loop_),
    ("MatMul", nn::matmul),
    ("Max", |cx, n| elementwise::variadic(cx, n, "maximum")),
    ("MaxPool", nn::max_pool),
    ("Min", |cx, n| elementwise::variadic(cx, n, "minimum")),
    ("Mod", elementwise::mod_),
    ("Mul", |cx, n| elementwise::binary(cx, n, "multiply")),
    ("Neg", |cx, n| elementwise::unary(cx, n, "negative")),
    ("NonMaxSuppression", vision::non_max_suppression),
    ("NonZero", indexing::non_zero),
    ("Not", |cx, n| elementwise::unary(cx, n, "logical_not")),
    ("OneHot", indexing::one_hot),
    ("Or", |cx, n| elementwise::binary(cx, n, "logical_or")),
    ("PRelu", nn::prelu),
    ("Pad", transform::pad),
    ("Pow", elementwise::pow),
    ("RNN", |cx, n| recurrent::recurrent(cx, n, recurrent::Cell::Rnn)),
    ("Range", generate::range),
    ("Reciprocal", elementwise::reciprocal),
    ("ReduceMax", |cx, n| reduce::reduce(cx, n, "max")),
    ("ReduceMean", |cx, n| reduce::reduce(cx, n, "mean")),
    ("ReduceMin", |cx, n| reduce::reduce(cx, n, "min")),
    ("ReduceProd", |cx, n| reduce::reduce(cx, n, "prod")),
    ("ReduceSum", |cx, n| reduce::reduce(cx, n, "sum")),
    ("Relu", |cx, n| elementwise::unary(cx, n, "nn.relu")),
    ("Reshape", transform::reshape),
    ("RoiAlign", vision::roi_align),
    ("Scan", control::scan),
    ("ScatterElements", indexing::scatter_elements),
    ("ScatterND", indexing::scatter_nd),
    ("SequenceAt", sequence::at),
    ("SequenceConstruct", sequence::construct),
    ("SequenceEmpty", sequence::empty),
    ("SequenceInsert", sequence::insert),
    ("SequenceLength", sequence::length),
    ("Shape", transform::shape),
    ("Sigmoid", |cx, n| elementwise::unary(cx, n, "sigmoid")),
    ("Sign", |cx, n| elementwise::unary(cx, n, "sign")),
    ("Slice", transform::slice),
    ("Softmax", |cx, n| nn::softmax(cx, n, "nn.softmax")),
    ("SpaceToDepth", rearrange::space_to_depth),
    ("Split", transform::split),
    ("SplitToSequence", sequence::split),
    ("Sqrt", |cx, n| elementwise::unary(cx, n, "sqrt")),
    ("Squeeze", transform::squeeze),
    ("Sub", |cx, n| elementwise::binary(cx, n, "subtract")),
    ("Sum", |cx, n| elementwise::variadic(cx, n, "add")),
    ("Tanh", |cx, n| elementwise::unary(cx, n, "tanh")),
    ("Tile", indexing::tile),
    ("TopK", indexing::topk),
    ("Transpose", transform::transpose),
    ("Trilu", rearrange::trilu),
    ("Unsqueeze", transform::unsqueeze),
    ("Where", elementwise::where_),
    ("Xor", |cx, n| elementwise::binary(cx, n, "logical_xor")),
];

/// The converter of default-domain operator `op_type`, if it is supported.
pub fn converter(op_type: &str) -> Option<Convert> {
    OPERATORS.iter().find(|(name, _)| *name == op_type).map(|&(_, f)| f)
}

/// A Relay tuple (value or type) of `items` (a one-element tuple keeps its trailing comma).
fn tuple(items: &[String]) -> String {
    let comma = if items.len() == 1 { "," } else { "" };
    format!("({}{comma})", items.join(", "))
}

/// `name=[...]` for an integer-list attribute.
fn list_attr(name: &str, values: &[i64]) -> String {
    format!("{name}={}", crate::shape::list(values))
}

/// An integer list that is attribute `name` before opset `since` and constant input `input`
/// from then on (axes, split sizes), if the node gives it.
fn int_list(
    cx: &mut Converter,
    node: &Node,
    input: usize,
    name: &str,
    since: i64,
) -> Result<Option<Vec<i64>>, ImportError> {
    if cx.opset() < since {
        return node.ints(name);
    }
    match cx.constant_input(node, input)? {
        Some(c) => c.to_i64().map(Some).map_err(|m| node.error(m)),
        None => Ok(None),
    }
}

/// A constant input that must be given (a shape, the slice bounds).
fn required_ints(cx: &mut Converter, node: &Node, i: usize) -> Result<Vec<i64>, ImportError> {
    let c = cx.constant_input(node, i)?.ok_or_else(|| node.error(format!("input {i} is missing")))?;
    c.to_i64().map_err(|m| node.error(m))
}

/// `Ok` of a shape computation, or the node's error.
fn on<T>(node: &Node, r: Result<T, String>) -> Result<T, ImportError> {
    r.map_err(|m| node.error(m))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_is_sorted_and_unique() {
        let names: Vec<&str> = super::OPERATORS.iter().map(|(n, _)| *n).collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]), "{names:?}");
        assert!(super::converter("Conv").is_some() && super::converter("StringNormalizer").is_none());
    }
}
