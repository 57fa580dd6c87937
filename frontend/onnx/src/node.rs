//! One ONNX node as a converter sees it: its label for messages and its typed attributes.

use crate::error::ImportError;
use onnx_protobuf::attribute_proto::AttributeType;
use onnx_protobuf::{AttributeProto, GraphProto, NodeProto, TensorProto};

/// A node of the graph being converted.
pub struct Node<'a> {
    /// The node.
    pub proto: &'a NodeProto,
    /// Its name, or `#index` (its position in the graph) when it has none.
    pub label: String,
}

impl Node<'_> {
    /// An error about this node.
    pub fn error(&self, message: impl Into<String>) -> ImportError {
        ImportError::Node {
            node: self.label.clone(),
            op: self.proto.op_type.clone(),
            message: message.into(),
        }
    }

    /// The attribute `name` if present, checked to be of type `ty`.
    fn attribute(&self, name: &str, ty: AttributeType) -> Result<Option<&AttributeProto>, ImportError> {
        let Some(a) = self.proto.attribute.iter().find(|a| a.name == name) else { return Ok(None) };
        if a.type_.value() != ty as i32 {
            return Err(self.error(format!("attribute `{name}` is not of type {ty:?}")));
        }
        Ok(Some(a))
    }

    /// Integer attribute `name`, or `default`.
    pub fn int(&self, name: &str, default: i64) -> Result<i64, ImportError> {
        Ok(self.attribute(name, AttributeType::INT)?.map_or(default, |a| a.i))
    }

    /// Float attribute `name`, or `default`.
    pub fn float(&self, name: &str, default: f32) -> Result<f32, ImportError> {
        Ok(self.attribute(name, AttributeType::FLOAT)?.map_or(default, |a| a.f))
    }

    /// Integer list attribute `name`, if present.
    pub fn ints(&self, name: &str) -> Result<Option<Vec<i64>>, ImportError> {
        Ok(self.attribute(name, AttributeType::INTS)?.map(|a| a.ints.clone()))
    }

    /// Float list attribute `name`, if present.
    pub fn floats(&self, name: &str) -> Result<Option<Vec<f32>>, ImportError> {
        Ok(self.attribute(name, AttributeType::FLOATS)?.map(|a| a.floats.clone()))
    }

    /// String attribute `name`, or `default`.
    pub fn string(&self, name: &str, default: &str) -> Result<String, ImportError> {
        match self.attribute(name, AttributeType::STRING)? {
            Some(a) => String::from_utf8(a.s.clone())
                .map_err(|_| self.error(format!("attribute `{name}` is not UTF-8"))),
            None => Ok(default.to_string()),
        }
    }

    /// String list attribute `name`, if present.
    pub fn strings(&self, name: &str) -> Result<Option<Vec<String>>, ImportError> {
        let Some(a) = self.attribute(name, AttributeType::STRINGS)? else { return Ok(None) };
        let text = a.strings.iter().map(|s| String::from_utf8(s.clone()));
        text.collect::<Result<_, _>>()
            .map(Some)
            .map_err(|_| self.error(format!("attribute `{name}` is not UTF-8")))
    }

    /// Tensor attribute `name`, if present.
    pub fn tensor(&self, name: &str) -> Result<Option<&TensorProto>, ImportError> {
        match self.attribute(name, AttributeType::TENSOR)? {
            Some(a) => {
                a.t.as_ref().map(Some).ok_or_else(|| self.error(format!("attribute `{name}` has no tensor")))
            }
            None => Ok(None),
        }
    }

    /// Graph attribute `name` (a branch of `If`).
    pub fn graph(&self, name: &str) -> Result<&GraphProto, ImportError> {
        let a = self.attribute(name, AttributeType::GRAPH)?;
        a.and_then(|a| a.g.as_ref()).ok_or_else(|| self.error(format!("graph attribute `{name}` is missing")))
    }

    /// A name for the variables the node binds: its first output's (its label if it has none).
    pub fn name_hint(&self) -> String {
        self.proto.output.first().filter(|o| !o.is_empty()).unwrap_or(&self.label).clone()
    }

    /// The node's outputs that something may read (ONNX marks an unused optional output with
    /// an empty name).
    pub fn used_outputs(&self) -> usize {
        self.proto.output.iter().rposition(|o| !o.is_empty()).map_or(0, |i| i + 1)
    }
}
