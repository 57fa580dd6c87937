//! The sanitising rule that turns a foreign name (an ONNX value, a PyTorch `state_dict` key)
//! into a Relay identifier. One rule serves the importer, which names `@main`'s parameters
//! after graph inputs and initializers, and `--params`, which binds a weight file's tensor to
//! the parameter of the same name or, failing that, of the same sanitised name.

/// Sanitises `name` into an identifier of the form `[A-Za-z_][A-Za-z0-9_]*`: every character
/// outside `[A-Za-z0-9_]` becomes `_`, and a name that is empty or starts with a digit gets a
/// leading `_`. `fc1.weight` → `fc1_weight`, `onnx::Conv_3` → `onnx__Conv_3`, `0` → `_0`.
///
/// Two different names may sanitise to the same identifier (`a.b` and `a_b`); callers that
/// name several things at once must make the results unique themselves.
pub fn sanitize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    if name.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        out.push('_');
    }
    out.extend(name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }));
    out
}

#[cfg(test)]
mod tests {
    use super::sanitize_name;

    #[test]
    fn foreign_names_become_identifiers() {
        assert_eq!(sanitize_name("fc1.weight"), "fc1_weight");
        assert_eq!(sanitize_name("onnx::Conv_3"), "onnx__Conv_3");
        assert_eq!(sanitize_name("/layer1/conv/Conv_output_0"), "_layer1_conv_Conv_output_0");
        assert_eq!(sanitize_name("0"), "_0");
        assert_eq!(sanitize_name(""), "_");
        assert_eq!(sanitize_name("x"), "x");
        assert_eq!(sanitize_name("é"), "_");
    }
}
