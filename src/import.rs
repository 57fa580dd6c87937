//! `relay-vm import` and ONNX models given to `run`/`bench`: the importer's Relay text and
//! weights, written to files or kept in memory.

use crate::{read_file, Failure};
use relay::onnx::Imported;
use std::path::Path;

/// Whether `path` names an ONNX model (by its extension, `.onnx`).
pub(crate) fn is_onnx(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
}

/// Reads and imports the ONNX model at `path`.
pub(crate) fn read_onnx(path: &Path) -> Result<Imported, Failure> {
    relay::onnx::import(&read_file(path)?)
        .map_err(|e| Failure::bad_input(format!("error: {}: {e}\n", path.display())))
}

/// `relay-vm import MODEL.onnx -o MODEL.relay [--params-out MODEL.safetensors]`: the Relay
/// text, type-checked before it is written, and the weights.
pub(crate) fn import(file: &Path, output: &Path, params_out: Option<&Path>) -> Result<(), Failure> {
    let imported = read_onnx(file)?;
    relay::check(&output.display().to_string(), &imported.text).map_err(relay::Error::from)?;
    let write = |path: &Path, bytes: &[u8]| {
        std::fs::write(path, bytes)
            .map_err(|e| Failure::bad_input(format!("error: cannot write {}: {e}\n", path.display())))
    };
    write(output, imported.text.as_bytes())?;
    match params_out {
        Some(p) => write(p, &imported.weights),
        None => {
            if relay::params::bound_shapes(&imported.weights).is_ok_and(|w| !w.is_empty()) {
                eprintln!("warning: the model has weights; --params-out FILE.safetensors writes them");
            }
            Ok(())
        }
    }
}
