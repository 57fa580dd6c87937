//! `relay_vm._relay_vm`, the extension module of the `relay_vm` Python package: compile and
//! run Relay programs from Python (`relay_vm/__init__.py` re-exports it; the stubs are
//! `relay_vm/_relay_vm.pyi`).

mod convert;
mod program;

use program::PyProgram;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use relay::{Device, Error, Program};
use std::path::PathBuf;

create_exception!(_relay_vm, RelayError, PyException, "Base class of relay_vm's errors.");
create_exception!(
    _relay_vm,
    CompileError,
    RelayError,
    "The program does not parse, resolve or type-check, or a kernel cannot be built; the message is the rustc-style diagnostic."
);
create_exception!(
    _relay_vm,
    Trap,
    RelayError,
    "A run-time fault of the VM: `message` says what happened, `stack` where: the Relay call stack as `(function, defined_at, pc, at)` tuples, innermost first, so `stack[0]` is the faulting function and instruction (`at`: the `file:line:col` of the faulting expression or pending call); empty for a fault before any function ran."
);

/// `e` as the Python exception a caller expects: `CompileError`, `Trap` (with `message` and
/// `stack` attributes), `ValueError` for a wrong input, `RelayError` otherwise.
pub(crate) fn py_err(py: Python<'_>, e: Error) -> PyErr {
    match e {
        Error::Compile(f) => CompileError::new_err(f.render(false)),
        Error::Kernel { .. } => CompileError::new_err(e.to_string()),
        Error::Trap(trap) => {
            let err = Trap::new_err(trap.to_string());
            let value = err.value(py);
            // Setting attributes on a fresh exception object cannot fail.
            let _ = value.setattr("message", &trap.message);
            let stack: Vec<(String, String, usize, String)> =
                trap.stack.into_iter().map(|f| (f.function, f.source, f.pc, f.span)).collect();
            let _ = value.setattr("stack", stack);
            err
        }
        Error::Input(m) => PyValueError::new_err(m),
        other => RelayError::new_err(other.to_string()),
    }
}

/// A parsed Relay module (the user's file with the prelude).
#[pyclass(frozen, name = "Module", module = "relay_vm")]
struct PyModule_ {
    module: relay::compiler::ir::Module,
    file: relay::compiler::ir::FileId,
}

#[pymethods]
impl PyModule_ {
    /// The file's definitions in canonical Relay text (comments dropped, the prelude left out).
    fn astext(&self) -> String {
        relay::compiler::syntax::printer::print_module(&self.module, Some(self.file))
    }

    fn __repr__(&self) -> String {
        format!("<relay_vm.Module with {} function(s)>", self.module.functions.len())
    }
}

/// Parses Relay text (with the prelude in scope) into a Module; raises CompileError.
#[pyfunction]
#[pyo3(signature = (text, name = "<string>"))]
fn parse(py: Python<'_>, text: &str, name: &str) -> PyResult<PyModule_> {
    match relay::parse(name, text) {
        Ok((module, file)) => Ok(PyModule_ { module, file }),
        Err(f) => Err(py_err(py, Error::Compile(f))),
    }
}

/// Compiles a Relay program (a `.relay` file, an executable file, or `text=`) into a Program.
#[pyfunction]
#[pyo3(signature = (path = None, params = None, *, text = None, opt_level = relay::DEFAULT_OPT_LEVEL, device = "cpu", entry = "main", memory_plan = true))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, each with a default.
fn compile(
    py: Python<'_>,
    path: Option<PathBuf>,
    params: Option<PathBuf>,
    text: Option<String>,
    opt_level: u8,
    device: &str,
    entry: &str,
    memory_plan: bool,
) -> PyResult<PyProgram> {
    let device: Device = device.parse().map_err(|e| PyValueError::new_err(format!("device: {e}")))?;
    let mut builder =
        Program::builder().opt_level(opt_level).device(device).entry(entry).memory_plan(memory_plan);
    builder = match (path, text) {
        (Some(path), None) => builder.file(path),
        (None, Some(text)) => builder.source("<string>", text),
        _ => return Err(PyValueError::new_err("give either a path or text=")),
    };
    if let Some(params) = params {
        builder = builder.params(params);
    }
    // Compiling takes a while: other Python threads run meanwhile.
    let program = py.detach(|| builder.build()).map_err(|e| py_err(py, e))?;
    PyProgram::new(program).map_err(|e| py_err(py, e))
}

/// The extension module.
#[pymodule]
fn _relay_vm(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_class::<PyProgram>()?;
    m.add_class::<PyModule_>()?;
    m.add("RelayError", py.get_type::<RelayError>())?;
    m.add("CompileError", py.get_type::<CompileError>())?;
    m.add("Trap", py.get_type::<Trap>())?;
    Ok(())
}
