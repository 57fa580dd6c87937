//! Why an ONNX model cannot be imported.

use thiserror::Error;

/// An ONNX model that cannot be imported. Every message names what is wrong (the node, the
/// value or the field), so that a user can find it in the model.
#[derive(Debug, Error)]
pub enum ImportError {
    /// The bytes are not a protobuf `ModelProto` (truncated, or not an ONNX file).
    #[error("not an ONNX model: {0}")]
    Decode(String),
    /// The model has no `graph`.
    #[error("the model has no graph")]
    NoGraph,
    /// The model imports no version of the default (`ai.onnx`) operator set.
    #[error("the model imports no opset of the default ONNX domain")]
    NoOpset,
    /// The default-domain opset is outside the supported range.
    #[error("opset {0} of the default ONNX domain is not supported (relay-vm imports opsets {min} to {max})", min = crate::MIN_OPSET, max = crate::MAX_OPSET)]
    Opset(i64),
    /// Operators the importer does not know: `Op (node names); ...`, all of them at once.
    #[error("unsupported ONNX operator(s): {0}")]
    Unsupported(String),
    /// The nodes named here depend on each other's outputs in a cycle.
    #[error("the graph has a cycle through node(s) {0}")]
    Cycle(String),
    /// A node reads a value that nothing defines (a missing initializer, a misspelt name).
    #[error("node `{node}` reads `{value}`, which is not a graph input, an initializer or a node output")]
    Undefined {
        /// The reading node.
        node: String,
        /// The undefined value's name.
        value: String,
    },
    /// A node whose attributes or operands the importer cannot convert.
    #[error("node `{node}` ({op}): {message}")]
    Node {
        /// The node's name (`#index` when it has none).
        node: String,
        /// Its operator type.
        op: String,
        /// What is wrong.
        message: String,
    },
    /// A graph input, output or initializer that is malformed or of an unsupported type.
    #[error("`{name}`: {message}")]
    Value {
        /// The value's ONNX name.
        name: String,
        /// What is wrong.
        message: String,
    },
}
