//! `relay_vm.Program`: a compiled program, called like a function, with a pool of VMs so that
//! Python threads each run on their own VM while the GIL is released.

use crate::convert::{to_python, Converter};
use crate::py_err;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use relay::batch::LatencyStats;
use relay::vm::{Value, ValueType, Vm};
use relay::{Error, Inputs, Program};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Idle VMs over a program: a VM keeps its tensor pool and frame layouts between calls, so a
/// call takes one from here (or makes one) and puts it back.
type VmPool<'p> = Mutex<Vec<Vm<'p>>>;

self_cell::self_cell!(
    /// A program and the VMs that borrow it.
    struct Compiled {
        owner: Program,
        #[not_covariant]
        dependent: VmPool,
    }
);

/// A compiled Relay program: call it with the entry function's inputs (those the weights do
/// not bind), by position or by keyword; NumPy arrays in and out.
#[pyclass(frozen, name = "Program", module = "relay_vm")]
pub struct PyProgram {
    compiled: Compiled,
    /// The entry's unbound parameters (what a call takes), with their types, in order: looked
    /// up once, not at every call.
    inputs: Vec<(String, ValueType)>,
    /// The entry's result type.
    ret_type: ValueType,
}

impl PyProgram {
    /// Wraps `program`, checking that it has its entry function.
    pub fn new(program: Program) -> Result<PyProgram, Error> {
        let f = program.function(program.entry())?;
        let free = program.inputs()?;
        let params = f.param_names.iter().zip(&f.param_types);
        let inputs = params.filter(|(n, _)| free.contains(&n.as_str())).map(|(n, t)| (n.clone(), t.clone()));
        let (inputs, ret_type) = (inputs.collect(), f.ret_type.clone());
        Ok(PyProgram { compiled: Compiled::new(program, |_| Mutex::new(vec![])), inputs, ret_type })
    }

    fn program(&self) -> &Program {
        self.compiled.borrow_owner()
    }

    /// Runs `f` on an idle VM (a new one if none is idle) and puts it back afterwards.
    fn with_vm<R>(&self, f: impl FnOnce(&Program, &mut Vm<'_>) -> R) -> R {
        self.compiled.with_dependent(|program, pool| {
            let idle = pool.lock().unwrap_or_else(PoisonError::into_inner).pop();
            let mut vm = idle.unwrap_or_else(|| program.vm());
            let r = f(program, &mut vm);
            pool.lock().unwrap_or_else(PoisonError::into_inner).push(vm);
            r
        })
    }

    /// The inputs of one call: positional arguments, then keyword arguments by name.
    fn call_inputs(&self, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Inputs> {
        let convert = Converter::new(self.program().executable());
        let entry = self.program().entry();
        let ty = |name: &str| {
            let found = self.inputs.iter().find(|(n, _)| n == name);
            found
                .map(|(_, t)| t)
                .ok_or_else(|| PyValueError::new_err(format!("`@{entry}` has no input `%{name}`")))
        };
        if args.len() > self.inputs.len() {
            let names: Vec<String> = self.inputs.iter().map(|(n, _)| format!("%{n}")).collect();
            return Err(PyValueError::new_err(format!(
                "`@{entry}` takes {} input(s) ({}), {} given",
                names.len(),
                names.join(", "),
                args.len()
            )));
        }
        let mut values = Vec::with_capacity(self.inputs.len());
        for ((_, ty), arg) in self.inputs.iter().zip(args.iter()) {
            values.push(convert.to_value(ty, &arg)?);
        }
        let Some(kwargs) = kwargs else { return Ok(Inputs::Positional(values)) };
        let mut named: Vec<(String, Value)> =
            self.inputs.iter().map(|(n, _)| n.clone()).zip(values).collect();
        for (k, v) in kwargs.iter() {
            let name: String = k.extract()?;
            let key = name.strip_prefix('%').unwrap_or(&name);
            named.push((key.to_string(), convert.to_value(ty(key)?, &v)?));
        }
        Ok(Inputs::Named(named))
    }

    /// Runs the program on `inputs` with the GIL released.
    fn run(&self, py: Python<'_>, inputs: Inputs) -> PyResult<Value> {
        py.detach(|| self.with_vm(|program, vm| program.run(vm, inputs))).map_err(|e| py_err(py, e))
    }
}

#[pymethods]
impl PyProgram {
    /// Runs the entry function on the inputs (NumPy arrays, DLPack producers (`__dlpack__`:
    /// PyTorch, JAX, CuPy tensors in host memory) or anything `numpy.asarray` takes;
    /// tuples; lists for `List`; `relay_vm.Adt` values) and returns its result (NumPy arrays,
    /// 0-d for scalars). A C-contiguous, aligned array of the parameter's dtype (not `bool`)
    /// is borrowed, not copied; results own their memory. Raises `Trap` on a run-time fault,
    /// `ValueError`/`TypeError` for inputs that do not fit.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let inputs = self.call_inputs(args, kwargs)?;
        let result = self.run(py, inputs)?;
        to_python(py, self.program().executable(), &self.ret_type, result)
    }

    /// Times the program over `inputs` (a list; each item is the tuple of one call's
    /// arguments, or the argument itself when the program takes one input) as `relay-vm
    /// bench` does: `warmup` untimed passes, then `reps` timed passes on one VM. Returns a
    /// dict: `inputs`, `reps`, `warmup`, `mean_ms`, `p50_ms`, `p90_ms`, `max_ms`,
    /// `throughput` (inputs/s) and `memory` (the VM's allocation counts, as text).
    #[pyo3(signature = (inputs, reps = 3, warmup = 1))]
    fn bench<'py>(
        &self,
        inputs: &Bound<'py, PyAny>,
        reps: usize,
        warmup: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let py = inputs.py();
        let single = self.inputs.len() == 1;
        let mut all = vec![];
        for item in inputs.try_iter()? {
            let item = item?;
            let args = match item.cast_into::<PyTuple>() {
                Ok(t) if !single => t,
                Ok(t) => PyTuple::new(py, [t])?,
                Err(e) => PyTuple::new(py, [e.into_inner()])?,
            };
            all.push(self.call_inputs(&args, None)?);
        }
        let runs = all.len().checked_mul(warmup.saturating_add(reps)).filter(|&n| n <= 100_000_000);
        runs.ok_or_else(|| PyValueError::new_err("too many runs"))?;
        let timed = py.detach(|| {
            self.with_vm(|program, vm| -> Result<(Vec<Duration>, String), Error> {
                let mut samples = Vec::with_capacity(all.len() * reps);
                for pass in 0..warmup + reps {
                    if pass == warmup {
                        vm.reset_memory_stats();
                    }
                    for inputs in &all {
                        let start = Instant::now();
                        program.run(vm, inputs.clone())?;
                        if pass >= warmup {
                            samples.push(start.elapsed());
                        }
                    }
                }
                Ok((samples, vm.memory_stats().to_string()))
            })
        });
        let (samples, memory) = timed.map_err(|e| py_err(py, e))?;
        let out = PyDict::new(py);
        out.set_item("inputs", all.len())?;
        out.set_item("reps", reps)?;
        out.set_item("warmup", warmup)?;
        if let Some(s) = LatencyStats::new(samples) {
            let ms = |d: Duration| 1e3 * d.as_secs_f64();
            out.set_item("mean_ms", ms(s.mean))?;
            out.set_item("p50_ms", ms(s.p50))?;
            out.set_item("p90_ms", ms(s.p90))?;
            out.set_item("max_ms", ms(s.max))?;
            out.set_item("throughput", s.throughput)?;
        }
        out.set_item("memory", memory)?;
        Ok(out)
    }

    /// A test helper: the address of each input's elements as a call with these arguments
    /// hands them to the VM (`None` for an input that is not an n-d tensor). An input array
    /// the call borrows, not copies, gives its own `array.ctypes.data`.
    #[pyo3(signature = (*args, **kwargs))]
    fn _input_addresses(
        &self,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Vec<Option<usize>>> {
        let values = match self.call_inputs(args, kwargs)? {
            Inputs::Positional(values) => values,
            Inputs::Named(values) => values.into_iter().map(|(_, v)| v).collect(),
        };
        let address = |v: &Value| match v {
            Value::Tensor(t) => Some(t.as_ptr() as usize),
            _ => None,
        };
        Ok(values.iter().map(address).collect())
    }

    /// The bytecode of every function, as `relay-vm disasm` prints it.
    fn disasm(&self) -> String {
        self.program().executable().disassemble()
    }

    /// One entry per kernel: the kir loop nest of a fused kernel, `reference <op>` for an
    /// operator that runs on its reference kernel.
    fn kernels(&self) -> Vec<String> {
        let kernels = &self.program().executable().kernels;
        kernels
            .iter()
            .map(|desc| match desc.kernel.as_deref().map(relay::compiler::kir::Kernel::from_bytes) {
                Some(Ok(k)) => k.to_string(),
                Some(Err(e)) => format!("{}: {e}", desc.op),
                None => format!("reference {}", desc.op),
            })
            .collect()
    }

    /// The executable file's bytes (`relay_vm.compile(path)` loads them back).
    fn save(&self) -> Vec<u8> {
        self.program().save()
    }

    /// The names of the inputs a call takes (the entry's parameters no weight binds), in order.
    #[getter(inputs)]
    fn input_names(&self) -> Vec<String> {
        self.inputs.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The entry function's name.
    #[getter]
    fn entry(&self) -> String {
        self.program().entry().to_string()
    }

    fn __repr__(&self) -> String {
        let p = self.program();
        format!("<relay_vm.Program @{} ({} kernel(s))>", p.entry(), p.executable().kernels.len())
    }
}
