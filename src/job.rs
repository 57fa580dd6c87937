//! `relay-vm run` and `relay-vm bench`: one entry function, its bound weights, the inputs
//! to run it on, what runs it (the VM, or the reference interpreter), and the VM's limits
//! (`--max-memory`, `--timeout`, SIGINT).

use crate::{write_stdout, Failure, Format, RunArgs, EXIT_INTERRUPTED, EXIT_TRAP};
use relay::batch::{self, InputLine, LatencyStats};
use relay::interp::Interpreter;
use relay::vm::{Executable, StopReason, Value, Vm, VmConfig, VmFunction};
use relay::Program;
use std::io::BufRead;
use std::path::Path;
use std::time::{Duration, Instant};

/// The most timed runs (`--reps` × inputs) `bench` records: 64 MiB of samples.
const MAX_TIMED_RUNS: usize = 1 << 22;

/// The inputs of a run: `(where it came from, JSON text)` per run.
pub(crate) struct Inputs {
    items: Vec<(String, String)>,
}

impl Inputs {
    /// `--args`, every non-blank line of `--input` (`-` is stdin), or one empty argument list.
    pub(crate) fn read(args: Option<&str>, input: Option<&Path>) -> Result<Inputs, Failure> {
        let items = match (args, input) {
            (Some(a), _) => vec![("--args".to_string(), a.to_string())],
            (None, Some(path)) => {
                let cannot = |e: std::io::Error| {
                    Failure::bad_input(format!("error: cannot read {}: {e}\n", path.display()))
                };
                let reader: Box<dyn BufRead> = if path == Path::new("-") {
                    Box::new(std::io::stdin().lock())
                } else {
                    Box::new(std::io::BufReader::new(std::fs::File::open(path).map_err(cannot)?))
                };
                let mut items = vec![];
                for (n, line) in reader.lines().enumerate() {
                    let line = line.map_err(cannot)?;
                    if !line.trim().is_empty() {
                        items.push((format!("{}:{}", path.display(), n + 1), line));
                    }
                }
                items
            }
            (None, None) => vec![("the arguments".to_string(), "[]".to_string())],
        };
        Ok(Inputs { items })
    }
}

/// Weights to bind by name: a safetensors file's bytes and where they came from (for
/// messages).
pub(crate) struct Weights {
    /// The file named in messages: `--params`, or the ONNX model they were imported from.
    pub(crate) origin: String,
    /// The safetensors file.
    pub(crate) bytes: Vec<u8>,
}

/// What runs the entry function (`--executor`).
enum Engine<'p> {
    /// A compiled program on a VM.
    Vm { program: &'p Program, vm: Box<Vm<'p>> },
    /// The reference interpreter.
    Interp(&'p Interpreter),
}

/// Runs of one entry function: its bound weights, the parameters the inputs fill, what runs it.
pub(crate) struct Job<'p> {
    /// The types values are read and printed with.
    exe: &'p Executable,
    f: &'p VmFunction,
    bound: Vec<(usize, Value)>,
    free: Vec<usize>,
    engine: Engine<'p>,
    stats: bool,
}

impl<'p> Job<'p> {
    /// Runs of `program` on a VM.
    pub(crate) fn new(
        program: &'p Program,
        run: &RunArgs,
        weights: Option<&Weights>,
    ) -> Result<Job<'p>, Failure> {
        let defaults = VmConfig::default();
        let config = VmConfig {
            // Planning off means no reuse at all: every tensor from the system allocator.
            reuse_memory: !run.no_memory_plan,
            // One tensor cannot hold more than all of them.
            max_tensor_bytes: run
                .max_memory
                .map_or(defaults.max_tensor_bytes, |m| m.min(defaults.max_tensor_bytes)),
            max_memory_bytes: run.max_memory.unwrap_or(defaults.max_memory_bytes),
            deadline: run.timeout.and_then(|t| Instant::now().checked_add(t)),
            ..defaults
        };
        let vm = program.vm_with(config);
        Job::with_engine(
            program.executable(),
            program.function(&run.entry)?,
            Engine::Vm { program, vm: Box::new(vm) },
            run,
            weights,
        )
    }

    /// Runs of `interp`, the reference interpreter.
    pub(crate) fn interp(
        interp: &'p Interpreter,
        run: &RunArgs,
        weights: Option<&Weights>,
    ) -> Result<Job<'p>, Failure> {
        Job::with_engine(
            interp.signature(),
            interp.function(&run.entry)?,
            Engine::Interp(interp),
            run,
            weights,
        )
    }

    fn with_engine(
        exe: &'p Executable,
        f: &'p VmFunction,
        engine: Engine<'p>,
        run: &RunArgs,
        weights: Option<&Weights>,
    ) -> Result<Job<'p>, Failure> {
        let bound = match weights {
            Some(w) => relay::params::bind_params(f, &w.bytes)
                .map_err(|e| Failure::bad_input(format!("error: {}: {e}\n", w.origin)))?,
            None => vec![],
        };
        let free: Vec<usize> =
            (0..f.param_types.len()).filter(|i| !bound.iter().any(|(b, _)| b == i)).collect();
        if run.args.is_none() && run.input.is_none() && !free.is_empty() {
            let names: Vec<String> = free.iter().map(|&i| format!("%{}", f.param_names[i])).collect();
            return Err(Failure::bad_input(format!(
                "error: `@{}` needs argument(s) for {}: give them with --args '[...]' or --input FILE.jsonl\n",
                f.name,
                names.join(", ")
            )));
        }
        Ok(Job { exe, f, bound, free, engine, stats: run.stats })
    }

    /// Calls the entry function on `args`.
    fn invoke(&mut self, args: Vec<Value>) -> Result<Value, relay::Error> {
        match &mut self.engine {
            Engine::Vm { program, vm } => program.invoke(vm, &self.f.name, args),
            Engine::Interp(interp) => interp.invoke(&self.f.name, args),
        }
    }

    /// Whether the VM stopped because its run was cancelled (SIGINT).
    fn cancelled(&self) -> bool {
        matches!(&self.engine, Engine::Vm { vm, .. } if vm.cancel_handle().stop_reason() == Some(StopReason::Cancelled))
    }

    /// Runs every input, printing one result per input, and for labelled inputs a final
    /// accuracy line. SIGINT cancels the VM's run in progress: the summary then covers the
    /// inputs done, and the exit code is [`EXIT_INTERRUPTED`].
    pub(crate) fn run(mut self, inputs: Inputs, format: Format) -> Result<(), Failure> {
        if let Engine::Vm { vm, .. } = &self.engine {
            let cancel = vm.cancel_handle().clone();
            if let Err(e) = ctrlc::set_handler(move || cancel.cancel()) {
                eprintln!("warning: Ctrl-C will not print the results so far: {e}");
            }
        }
        let (mut correct, mut labelled, mut vm_time) = (0usize, 0usize, Duration::ZERO);
        let mut done = 0;
        for (what, text) in &inputs.items {
            let (line, args) = self.arguments(what, text)?;
            let start = Instant::now();
            let result = match self.invoke(args) {
                Ok(result) => result,
                Err(_) if self.cancelled() => break,
                Err(e) => return Err(e.into()),
            };
            vm_time += start.elapsed();
            done += 1;
            let printed = self.print(&result, format)?;
            let printed = match line.label {
                None => printed,
                Some(label) => {
                    let prediction = batch::argmax(&result);
                    labelled += 1;
                    correct += usize::from(prediction.map(|p| p as i64) == Some(label));
                    let shown = prediction.map_or("none".to_string(), |p| p.to_string());
                    match format {
                        Format::Json => {
                            format!("{{\"prediction\":{shown},\"label\":{label},\"output\":{printed}}}")
                        }
                        Format::Text => format!("prediction {shown} (label {label}): {printed}"),
                    }
                }
            };
            write_stdout(&(printed + "\n"))?;
        }
        if let (true, Engine::Vm { program, vm }) = (self.stats, &self.engine) {
            let n = done.max(1) as u64;
            let s = vm.memory_stats();
            eprintln!("memory: {s}; per input: {} system allocation(s)", s.system_allocs / n);
            eprintln!("device {}: {}", program.device(), vm.copy_stats());
        }
        if labelled > 0 {
            let n = done;
            write_stdout(&format!(
                "accuracy: {correct}/{labelled} = {:.2}%, {:.1} inputs/s ({:.3} ms per input in the VM)\n",
                100.0 * correct as f64 / labelled as f64,
                n as f64 / vm_time.as_secs_f64().max(f64::MIN_POSITIVE),
                1e3 * vm_time.as_secs_f64() / n as f64
            ))?;
        }
        if done < inputs.items.len() {
            return Err(Failure {
                code: EXIT_INTERRUPTED,
                message: format!("interrupted after {done} of {} input(s)\n", inputs.items.len()),
            });
        }
        Ok(())
    }

    /// Times every input `reps` times after `warmup` untimed passes and prints the latency
    /// statistics.
    pub(crate) fn bench(mut self, inputs: Inputs, warmup: usize, reps: usize) -> Result<(), Failure> {
        let mut all = Vec::with_capacity(inputs.items.len());
        for (what, text) in &inputs.items {
            all.push(self.arguments(what, text)?.1);
        }
        let too_many = || {
            Failure::bad_input(format!(
                "error: --warmup {warmup} and --reps {reps} over {} input(s): more than {MAX_TIMED_RUNS} runs\n",
                all.len()
            ))
        };
        let timed = all.len().checked_mul(reps).filter(|&n| n <= MAX_TIMED_RUNS).ok_or_else(too_many)?;
        let passes = warmup.checked_add(reps).ok_or_else(too_many)?;
        let mut samples = Vec::with_capacity(timed);
        for pass in 0..passes {
            if let (true, Engine::Vm { vm, .. }) = (pass == warmup, &mut self.engine) {
                vm.reset_memory_stats();
            }
            for args in &all {
                let start = Instant::now();
                self.invoke(args.clone())?;
                if pass >= warmup {
                    samples.push(start.elapsed());
                }
            }
        }
        let Some(s) = LatencyStats::new(samples) else {
            return write_stdout("no timed runs (--reps 0)\n");
        };
        let ms = |d: Duration| 1e3 * d.as_secs_f64();
        let runs = (all.len() * reps).max(1) as f64;
        if let Engine::Vm { program, vm } = &self.engine {
            let m = vm.memory_stats();
            write_stdout(&format!(
                "memory (timed runs): {m}\nper input: {:.1} arena, {:.1} pool, {:.1} system tensor allocation(s)\n",
                m.arena_allocs as f64 / runs,
                m.pool_allocs as f64 / runs,
                m.system_allocs as f64 / runs
            ))?;
            if program.device().is_opencl() {
                let c = vm.copy_stats();
                write_stdout(&format!(
                    "device {} (timed runs): {c}\nper input: {:.1} bytes host→device, {:.1} bytes device→host\n",
                    program.device(),
                    c.to_device_bytes as f64 / runs,
                    c.to_host_bytes as f64 / runs
                ))?;
            }
        }
        write_stdout(&format!(
            "@{}: {} input(s) x {reps} rep(s) after {warmup} warm-up pass(es), one thread\n\
             latency per input: mean {:.4} ms, p50 {:.4} ms, p90 {:.4} ms, max {:.4} ms\n\
             throughput: {:.1} inputs/s\n",
            self.f.name,
            all.len(),
            ms(s.mean),
            ms(s.p50),
            ms(s.p90),
            ms(s.max),
            s.throughput
        ))
    }

    /// The entry's arguments for one input line: bound weights plus the line's values.
    fn arguments(&self, what: &str, text: &str) -> Result<(InputLine, Vec<Value>), Failure> {
        let bad = |m: String| Failure::bad_input(format!("error: {what}: {m}\n"));
        let names: Vec<&str> = self.free.iter().map(|&i| self.f.param_names[i].as_str()).collect();
        let line = batch::parse_named_input_line(text, &names).map_err(bad)?;
        if line.args.len() != self.free.len() {
            let names: Vec<String> =
                self.free.iter().map(|&i| format!("%{}", self.f.param_names[i])).collect();
            return Err(bad(format!(
                "`@{}` takes {} argument(s) here ({}), {} given",
                self.f.name,
                self.free.len(),
                names.join(", "),
                line.args.len()
            )));
        }
        let exe = self.exe;
        let mut args: Vec<Option<Value>> = vec![None; self.f.param_types.len()];
        for (i, v) in &self.bound {
            args[*i] = Some(v.clone());
        }
        for (&i, j) in self.free.iter().zip(&line.args) {
            let v = relay::json::from_json(exe, &self.f.param_types[i], j)
                .map_err(|e| bad(format!("argument `%{}`: {e}", self.f.param_names[i])))?;
            args[i] = Some(v);
        }
        Ok((line, args.into_iter().flatten().collect()))
    }

    fn print(&self, result: &Value, format: Format) -> Result<String, Failure> {
        let exe = self.exe;
        let printed = match format {
            Format::Json => relay::json::to_json(exe, &self.f.ret_type, result),
            Format::Text => relay::text::to_text(exe, &self.f.ret_type, result),
        };
        printed.map_err(|e| Failure {
            code: EXIT_TRAP,
            message: format!("error: cannot print the result: {e}\n"),
        })
    }
}

/// A byte count for `--max-memory`: digits, optionally followed by a binary suffix `K`, `M`,
/// `G` or `T` (powers of 1024, either case).
///
/// # Errors
/// Anything else, zero, or a count past `usize`.
pub(crate) fn parse_bytes(text: &str) -> Result<usize, String> {
    let bad = || format!("`{text}` is not a byte count like 1048576, 512M or 4G");
    let (digits, shift) = match text.char_indices().last().ok_or_else(bad)? {
        (i, 'k' | 'K') => (&text[..i], 10),
        (i, 'm' | 'M') => (&text[..i], 20),
        (i, 'g' | 'G') => (&text[..i], 30),
        (i, 't' | 'T') => (&text[..i], 40),
        _ => (text, 0),
    };
    let n: usize = digits.parse().map_err(|_| bad())?;
    match n.checked_mul(1 << shift) {
        Some(0) => Err("the memory budget must be more than 0 bytes".to_string()),
        Some(bytes) => Ok(bytes),
        None => Err(format!("`{text}` is more bytes than this machine can address")),
    }
}

/// A duration for `--timeout`: seconds, fractions allowed.
///
/// # Errors
/// Not a number, or not a positive finite duration.
pub(crate) fn parse_seconds(text: &str) -> Result<Duration, String> {
    let bad = || format!("`{text}` is not a number of seconds above 0, like 1 or 0.5");
    let seconds: f64 = text.parse().map_err(|_| bad())?;
    match Duration::try_from_secs_f64(seconds) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_take_binary_suffixes() {
        assert_eq!(parse_bytes("1000"), Ok(1000));
        assert_eq!(parse_bytes("512M"), Ok(512 << 20));
        assert_eq!(parse_bytes("4g"), Ok(4 << 30));
        assert_eq!(parse_bytes("2K"), Ok(2048));
        for bad in ["", "G", "-1", "1.5G", "4GB", "0", "99999999999T"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn timeouts_are_positive_seconds() {
        assert_eq!(parse_seconds("1"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_seconds("0.25"), Ok(Duration::from_millis(250)));
        for bad in ["0", "-1", "nan", "inf", "1e30", "soon"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }
}
