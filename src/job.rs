//! `relay-vm run` and `relay-vm bench`: one entry function, its bound weights, and the inputs
//! to run it on.

use crate::{read_file, write_stdout, Failure, Format, RunArgs, EXIT_TRAP};
use relay::batch::{self, InputLine, LatencyStats};
use relay::vm::{Value, Vm, VmConfig, VmFunction};
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

/// Runs of one entry function: its bound weights, the parameters the inputs fill, a VM.
pub(crate) struct Job<'p> {
    program: &'p Program,
    f: &'p VmFunction,
    bound: Vec<(usize, Value)>,
    free: Vec<usize>,
    vm: Vm<'p>,
    stats: bool,
}

impl<'p> Job<'p> {
    pub(crate) fn new(program: &'p Program, run: &RunArgs) -> Result<Job<'p>, Failure> {
        let f = program.function(&run.entry)?;
        let bound = match &run.params {
            Some(p) => relay::params::bind_params(f, &read_file(p)?)
                .map_err(|e| Failure::bad_input(format!("error: {}: {e}\n", p.display())))?,
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
        // Planning off means no reuse at all: every tensor from the system allocator.
        let vm = program.vm_with(VmConfig { reuse_memory: !run.no_memory_plan, ..VmConfig::default() });
        Ok(Job { program, f, bound, free, vm, stats: run.stats })
    }

    /// Runs every input, printing one result per input, and for labelled inputs a final
    /// accuracy line.
    pub(crate) fn run(mut self, inputs: Inputs, format: Format) -> Result<(), Failure> {
        let (mut correct, mut labelled, mut vm_time) = (0usize, 0usize, Duration::ZERO);
        for (what, text) in &inputs.items {
            let (line, args) = self.arguments(what, text)?;
            let start = Instant::now();
            let result = self.program.invoke(&mut self.vm, &self.f.name, args)?;
            vm_time += start.elapsed();
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
        if self.stats {
            let n = inputs.items.len().max(1) as u64;
            let s = self.vm.memory_stats();
            eprintln!("memory: {s}; per input: {} system allocation(s)", s.system_allocs / n);
            eprintln!("device {}: {}", self.program.device(), self.vm.copy_stats());
        }
        if labelled > 0 {
            let n = inputs.items.len();
            write_stdout(&format!(
                "accuracy: {correct}/{labelled} = {:.2}%, {:.1} inputs/s ({:.3} ms per input in the VM)\n",
                100.0 * correct as f64 / labelled as f64,
                n as f64 / vm_time.as_secs_f64().max(f64::MIN_POSITIVE),
                1e3 * vm_time.as_secs_f64() / n as f64
            ))?;
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
            if pass == warmup {
                self.vm.reset_memory_stats();
            }
            for args in &all {
                let start = Instant::now();
                self.program.invoke(&mut self.vm, &self.f.name, args.clone())?;
                if pass >= warmup {
                    samples.push(start.elapsed());
                }
            }
        }
        let Some(s) = LatencyStats::new(samples) else {
            return write_stdout("no timed runs (--reps 0)\n");
        };
        let ms = |d: Duration| 1e3 * d.as_secs_f64();
        let m = self.vm.memory_stats();
        let runs = (all.len() * reps).max(1) as f64;
        write_stdout(&format!(
            "memory (timed runs): {m}\nper input: {:.1} arena, {:.1} pool, {:.1} system tensor allocation(s)\n",
            m.arena_allocs as f64 / runs,
            m.pool_allocs as f64 / runs,
            m.system_allocs as f64 / runs
        ))?;
        if self.program.device().is_opencl() {
            let c = self.vm.copy_stats();
            write_stdout(&format!(
                "device {} (timed runs): {c}\nper input: {:.1} bytes host→device, {:.1} bytes device→host\n",
                self.program.device(),
                c.to_device_bytes as f64 / runs,
                c.to_host_bytes as f64 / runs
            ))?;
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
        let line = batch::parse_input_line(text).map_err(bad)?;
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
        let exe = self.program.executable();
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
        let exe = self.program.executable();
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
