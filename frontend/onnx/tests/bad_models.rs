//! Malformed and unsupported ONNX models give errors that name the problem, never a panic:
//! each case mutates the committed CNN (`tests/onnx/cnn.onnx`) or builds a model by hand.

use onnx_protobuf::{AttributeProto, GraphProto, Message, ModelProto, NodeProto};
use relay_onnx::{import, ImportError};

fn cnn() -> ModelProto {
    let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/onnx/cnn.onnx")).unwrap();
    ModelProto::parse_from_bytes(&bytes).unwrap()
}

fn error_of(model: &ModelProto) -> String {
    match import(&model.write_to_bytes().unwrap()) {
        Ok(_) => panic!("the model imported"),
        Err(e) => e.to_string(),
    }
}

fn graph(model: &mut ModelProto) -> &mut GraphProto {
    model.graph.as_mut().unwrap()
}

#[test]
fn the_cnn_itself_imports() {
    let imported = import(&cnn().write_to_bytes().unwrap()).unwrap();
    assert_eq!(imported.inputs, ["image"]);
    assert!(imported.text.contains("%conv1_weight: Tensor[(8, 3, 3, 3), float32]"), "{}", imported.text);
}

#[test]
fn truncated_and_foreign_files_are_not_models() {
    let bytes = cnn().write_to_bytes().unwrap();
    for cut in [bytes.len() / 2, bytes.len() - 1, 7] {
        assert!(matches!(import(&bytes[..cut]), Err(ImportError::Decode(_))), "cut at {cut}");
    }
    assert!(import(b"def @main() { 1 }").is_err());
    assert!(matches!(import(&[]), Err(ImportError::NoOpset)));
}

#[test]
fn opsets_outside_11_to_21_are_refused() {
    for version in [9, 22] {
        let mut m = cnn();
        m.opset_import[0].version = version;
        let e = error_of(&m);
        assert!(e.contains(&format!("opset {version}")) && e.contains("11 to 21"), "{e}");
    }
}

#[test]
fn every_unsupported_operator_is_listed_once_with_its_nodes() {
    let mut m = cnn();
    let g = graph(&mut m);
    g.node[0].op_type = "StringNormalizer".into();
    g.node[4].op_type = "StringNormalizer".into();
    g.node[2].op_type = "Frobnicate".into();
    g.node[3].domain = "com.microsoft".into();
    let names: Vec<String> = g.node.iter().map(|n| n.name.clone()).collect();
    let (n0, n2, n3, n4) = (&names[0], &names[2], &names[3], &names[4]);
    let e = error_of(&m);
    assert!(e.starts_with("unsupported ONNX operator(s): "), "{e}");
    assert!(e.contains(&format!("StringNormalizer (node `{n0}`, `{n4}`)")), "{e}");
    assert!(e.contains(&format!("Frobnicate (node `{n2}`)")), "{e}");
    assert!(e.contains(&format!("com.microsoft::MaxPool (node `{n3}`)")), "{e}");
}

#[test]
fn a_cyclic_graph_is_an_error() {
    let mut m = cnn();
    let g = graph(&mut m);
    let last = g.node.last().unwrap().output[0].clone();
    g.node[0].input[0] = last;
    let e = error_of(&m);
    assert!(e.contains("cycle"), "{e}");
}

#[test]
fn huge_declared_dimensions_are_an_error() {
    use onnx_protobuf::tensor_shape_proto::dimension::Value as Dim;
    use onnx_protobuf::type_proto::Value as Type;
    for (size, message) in [(1 << 40, "elements"), (-3, "negative")] {
        let mut m = cnn();
        let g = graph(&mut m);
        let Some(Type::TensorType(t)) = g.input[0].type_.as_mut().unwrap().value.as_mut() else { panic!() };
        t.shape.as_mut().unwrap().dim[2].value = Some(Dim::DimValue(size));
        let e = error_of(&m);
        assert!(e.contains("image") && e.contains(message), "{e}");
    }
}

#[test]
fn a_missing_initializer_is_named() {
    let mut m = cnn();
    graph(&mut m).initializer.retain(|t| t.name != "fc.bias");
    let e = error_of(&m);
    assert!(
        e.contains("reads `fc.bias`, which is not a graph input, an initializer or a node output"),
        "{e}"
    );
}

#[test]
fn initializer_data_must_match_its_shape_and_live_in_the_file() {
    let mut m = cnn();
    graph(&mut m).initializer[0].raw_data.pop();
    let e = error_of(&m);
    assert!(e.contains("bytes"), "{e}");
    let mut m = cnn();
    graph(&mut m).initializer[0].data_location = onnx_protobuf::tensor_proto::DataLocation::EXTERNAL.into();
    assert!(error_of(&m).contains("external data"));
}

#[test]
fn a_model_without_a_graph_is_an_error() {
    let mut m = cnn();
    m.graph.clear();
    assert_eq!(error_of(&m), "the model has no graph");
}

#[test]
fn deeply_nested_subgraphs_are_a_decode_error_not_a_stack_overflow() {
    let mut inner = GraphProto::new();
    for _ in 0..10_000 {
        let mut attribute = AttributeProto::new();
        attribute.g = Some(inner).into();
        let mut node = NodeProto::new();
        node.attribute.push(attribute);
        inner = GraphProto::new();
        inner.node.push(node);
    }
    let mut m = cnn();
    m.graph = Some(inner).into();
    // Serialising recurses too: give it a thread with room.
    let bytes = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || m.write_to_bytes().unwrap())
        .unwrap()
        .join()
        .unwrap();
    assert!(matches!(import(&bytes), Err(ImportError::Decode(_))));
}

#[test]
fn an_unsupported_attribute_names_its_node() {
    let mut m = cnn();
    let g = graph(&mut m);
    let pool = g.node.iter_mut().find(|n| n.op_type == "MaxPool").unwrap();
    let name = pool.name.clone();
    let mut a = AttributeProto::new();
    a.name = "auto_pad".into();
    a.type_ = onnx_protobuf::attribute_proto::AttributeType::STRING.into();
    a.s = b"SIDEWAYS".to_vec();
    pool.attribute.push(a);
    let e = error_of(&m);
    assert_eq!(e, format!("node `{name}` (MaxPool): auto_pad `SIDEWAYS` is not supported"));
}

#[test]
fn unsupported_recurrent_attributes_and_inputs_name_the_node() {
    let mut m = model("op_lstm");
    let lstm = &mut graph(&mut m).node[0];
    let mut a = AttributeProto::new();
    a.name = "activations".into();
    a.type_ = onnx_protobuf::attribute_proto::AttributeType::STRINGS.into();
    a.strings = vec![b"Sigmoid".to_vec(), b"Affine".to_vec(), b"Tanh".to_vec()];
    lstm.attribute.push(a);
    assert_eq!(
        error_of(&m),
        "node `lstm_y` (LSTM): activation `Affine` needs a value in attribute `activation_alpha`"
    );
    let mut m = model("op_rnn");
    let rnn = &mut graph(&mut m).node[0];
    let mut a = AttributeProto::new();
    a.name = "layout".into();
    a.type_ = onnx_protobuf::attribute_proto::AttributeType::INT.into();
    a.i = 2;
    rnn.attribute.push(a);
    assert_eq!(error_of(&m), "node `rnn_y` (RNN): attribute `layout`: 2 is not 0 or 1");
    let mut m = model("op_gru");
    let gru = &mut graph(&mut m).node[0];
    let mut a = AttributeProto::new();
    a.name = "activations".into();
    a.type_ = onnx_protobuf::attribute_proto::AttributeType::STRINGS.into();
    a.strings = vec![b"Swish".to_vec(), b"Tanh".to_vec()];
    gru.attribute.push(a);
    assert_eq!(error_of(&m), "node `gru_y` (GRU): attribute `activations`: `Swish` is not supported");
}

fn model(name: &str) -> ModelProto {
    let path = format!("{}/../../tests/onnx/{name}.onnx", env!("CARGO_MANIFEST_DIR"));
    ModelProto::parse_from_bytes(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn subgraphs_nested_past_the_limit_are_an_error() {
    let nest = |levels: usize| {
        let mut m = model("op_if_then");
        let g = graph(&mut m);
        let at = g.node.iter().position(|n| n.op_type == "If").unwrap();
        let mut node = g.node[at].clone();
        for _ in 0..levels {
            let branch =
                node.attribute.iter().find(|a| a.name == "then_branch").unwrap().g.as_ref().unwrap().clone();
            let mut inner = node.clone();
            inner.output = branch.output.iter().map(|o| o.name.clone()).collect();
            let mut wrapper = branch;
            wrapper.node = vec![inner];
            wrapper.initializer.clear();
            node.attribute.iter_mut().find(|a| a.name == "then_branch").unwrap().g = Some(wrapper).into();
        }
        g.node[at] = node;
        import(&m.write_to_bytes().unwrap())
    };
    assert!(nest(6).is_ok());
    let e = nest(9).unwrap_err().to_string();
    assert!(e.contains("subgraphs nest more than 8 deep"), "{e}");
}

/// Every committed model (the PyTorch exports too), each node mutated in ways a corrupt or hostile file could: import
/// returns, with a model or an error, and never panics.
#[test]
fn mutated_nodes_never_panic() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/onnx");
    let mut imports = 0;
    let torch = std::fs::read_dir(format!("{dir}/torch")).unwrap();
    for entry in std::fs::read_dir(dir).unwrap().chain(torch) {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "onnx") {
            continue;
        }
        let original = ModelProto::parse_from_bytes(&std::fs::read(&path).unwrap()).unwrap();
        let nodes = original.graph.as_ref().unwrap().node.len();
        for i in 0..nodes {
            for mutation in 0..6 {
                let mut m = original.clone();
                let n = &mut graph(&mut m).node[i];
                match mutation {
                    0 => n.output.clear(),
                    1 => n.input.clear(),
                    2 => n.attribute.clear(),
                    3 => n.input.push("extra".into()),
                    _ => {
                        let big = if mutation == 4 { i64::MAX } else { i64::MIN };
                        for a in &mut n.attribute {
                            a.i = big;
                            a.ints.iter_mut().for_each(|v| *v = big);
                        }
                    }
                }
                let _ = import(&m.write_to_bytes().unwrap());
                imports += 1;
            }
        }
    }
    assert!(imports > 500, "{imports} imports");
}

/// Splitting an axis of size 0 into a sequence gives an empty sequence or an error, not a
/// panic (the size of the pieces was read from the first piece).
#[test]
fn splitting_an_empty_axis_into_a_sequence_does_not_panic() {
    let mut m = model("op_sequence_split");
    let x = &mut graph(&mut m).input[0];
    let Some(onnx_protobuf::type_proto::Value::TensorType(t)) = x.type_.as_mut().unwrap().value.as_mut()
    else {
        panic!("x is a tensor");
    };
    t.shape.as_mut().unwrap().dim[0].value =
        Some(onnx_protobuf::tensor_shape_proto::dimension::Value::DimValue(0));
    // Pieces of size 1 that keep the axis (`keepdims` 1, its default).
    let split = graph(&mut m).node.iter_mut().find(|n| n.op_type == "SplitToSequence").unwrap();
    split.attribute.retain(|a| a.name != "keepdims");
    let _ = import(&m.write_to_bytes().unwrap());
}
