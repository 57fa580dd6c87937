//! `relay-vm run` and `relay-vm bench`: one entry function, its bound weights, the inputs
//! to run it on, what runs it (the VM, or the reference interpreter), and the VM's limits
//! (`--max-memory`, `--timeout`, SIGINT). `run -j N` spreads the inputs over N worker
//! threads, each with its own VM on the one shared program (`parallel.rs`).

use crate::program_args::check_unused;
use crate::{write_stdout, Failure, Format, RunArgs, EXIT_INTERRUPTED, EXIT_TRAP};
use relay::batch::{self, LatencyStats};
use relay::devices::SharedBytes;
use relay::interp::Interpreter;
use relay::vm::{Executable, StopReason, Value, ValueType, Vm, VmConfig, VmFunction};

mod autobatch;
mod parallel;
mod profile;
use relay::{BoundWeights, Program};
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
    /// `--args` (its text, or with `@FILE` that file's: NumPy `.npy`/`.npz` or JSON), every
    /// non-blank line of `--input` (`-` is stdin), or one empty argument list.
    pub(crate) fn read(args: Option<&str>, input: Option<&Path>) -> Result<Inputs, Failure> {
        let items = match (args, input) {
            (Some(a), _) => match a.strip_prefix('@') {
                Some(file) => vec![(format!("--args @{file}"), crate::npy::args_file(Path::new(file))?)],
                None => vec![("--args".to_string(), a.to_string())],
            },
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

/// Weights to bind by name: a safetensors file's bytes (mapped, for `--params`) and where they
/// came from (for messages).
pub(crate) struct Weights {
    /// The file named in messages: `--params`, or the ONNX model they were imported from.
    pub(crate) origin: String,
    /// The safetensors file.
    pub(crate) bytes: SharedBytes,
}

/// What runs the entry function (`--executor`).
enum Engine<'p> {
    /// A compiled program on a VM; worker threads make more VMs with the same `config`.
    Vm { program: &'p Program, vm: Box<Vm<'p>>, config: VmConfig },
    /// The reference interpreter.
    Interp(&'p Interpreter),
}

/// The entry function, its bound weights and the parameters the inputs fill: what turns an
/// input line into arguments and a result into text. Shared by every worker thread.
struct Entry<'p> {
    /// The types values are read and printed with.
    exe: &'p Executable,
    f: &'p VmFunction,
    bound: Vec<(usize, Value)>,
    free: Vec<usize>,
    /// `--params`: the file's name and its tensors' names, for "not in the file" messages.
    weights: Option<(String, Vec<String>)>,
}

/// `bench`'s and `profile`'s passes over the inputs: untimed first, then measured.
#[derive(clap::Args, Debug)]
pub(crate) struct Passes {
    /// Untimed passes over the inputs first (at most a million).
    #[arg(long, default_value_t = 1, value_parser = crate::passes_parser())]
    pub(crate) warmup: usize,
    /// Measured passes over the inputs (at most a million). Without it, passes repeat until
    /// --min-time has passed.
    #[arg(long, value_parser = crate::passes_parser())]
    pub(crate) reps: Option<usize>,
    /// Without --reps: keep measuring passes over the inputs until this many seconds of them
    /// have passed (at least one pass).
    #[arg(long, value_name = "SECONDS", default_value = "1", value_parser = parse_seconds)]
    pub(crate) min_time: Duration,
}

impl Passes {
    /// Whether to time another pass after `done` passes begun at `started`, when one more
    /// would make `runs` timed runs: with `--reps`, until that many; else at least one, then
    /// until `--min-time` or the cap on recorded runs.
    fn another(&self, done: usize, started: Instant, runs: usize) -> bool {
        match self.reps {
            Some(n) => done < n,
            None => done == 0 || (started.elapsed() < self.min_time && runs <= MAX_TIMED_RUNS),
        }
    }
}

/// What `bench`'s timed passes measured, on one thread or summed over all.
struct Timed {
    /// One latency per timed run.
    samples: Vec<Duration>,
    /// Timed passes over the inputs (per thread).
    reps: usize,
    /// Wall time of the timed passes (of the slowest thread).
    wall: Duration,
    /// The VMs' allocation counts over the timed passes (none for the interpreter).
    memory: Option<relay::vm::MemoryStats>,
    /// With `--batch`: the batched calls by number of lanes, over the timed passes.
    groups: Option<relay::autobatch::GroupSizes>,
}

/// Runs of one entry function: its inputs' meaning and what runs it.
pub(crate) struct Job<'p> {
    entry: Entry<'p>,
    engine: Engine<'p>,
    stats: bool,
}

/// `run`'s tally of the results printed so far, for the final accuracy line.
#[derive(Default)]
struct Tally {
    done: usize,
    labelled: usize,
    correct: usize,
    /// The inputs' time in the VM, summed over inputs (not wall time).
    vm_time: Duration,
}

impl<'p> Job<'p> {
    /// Runs of `program` on a VM.
    /// The program's weights were bound when it was built.
    pub(crate) fn new(program: &'p Program, run: &RunArgs) -> Result<Job<'p>, Failure> {
        let defaults = VmConfig::default();
        let config = VmConfig {
            // Planning off means no reuse at all: every tensor from the system allocator.
            reuse_memory: !run.program.no_memory_plan,
            // One tensor cannot hold more than all of them.
            max_tensor_bytes: run
                .max_memory
                .map_or(defaults.max_tensor_bytes, |m| m.min(defaults.max_tensor_bytes)),
            max_memory_bytes: run.max_memory.unwrap_or(defaults.max_memory_bytes),
            deadline: run.timeout.and_then(|t| Instant::now().checked_add(t)),
            ..defaults
        };
        let vm = program.vm_with(config.clone());
        Job::with_engine(
            program.executable(),
            program.function(&run.program.entry)?,
            Engine::Vm { program, vm: Box::new(vm), config },
            run,
            program.bound_weights().cloned(),
        )
    }

    /// Runs of `interp`, the reference interpreter.
    pub(crate) fn interp(
        interp: &'p Interpreter,
        run: &RunArgs,
        weights: Option<&Weights>,
    ) -> Result<Job<'p>, Failure> {
        let f = interp.function(&run.program.entry)?;
        let bound = match weights {
            Some(w) => {
                let bound = BoundWeights {
                    origin: w.origin.clone(),
                    bound: relay::params::bind_shared_params(f, &w.bytes)
                        .map_err(|e| Failure::bad_input(format!("error: {}: {e}\n", w.origin)))?,
                };
                check_unused(&bound, &f.name, run.program.strict_params)?;
                Some(bound)
            }
            None => None,
        };
        Job::with_engine(interp.signature(), f, Engine::Interp(interp), run, bound)
    }

    fn with_engine(
        exe: &'p Executable,
        f: &'p VmFunction,
        engine: Engine<'p>,
        run: &RunArgs,
        weights: Option<BoundWeights>,
    ) -> Result<Job<'p>, Failure> {
        let (bound, weights) = match weights {
            Some(BoundWeights { origin, bound: b }) => (b.values, Some((origin, b.names))),
            None => (vec![], None),
        };
        let free: Vec<usize> =
            (0..f.param_types.len()).filter(|i| !bound.iter().any(|(b, _)| b == i)).collect();
        let entry = Entry { exe, f, bound, free, weights };
        if run.args.is_none() && run.input.is_none() && !entry.free.is_empty() {
            let names: Vec<String> = entry.free.iter().map(|&i| format!("%{}", f.param_names[i])).collect();
            return Err(Failure::bad_input(format!(
                "error: `@{}` needs argument(s) for {}: give them with --args '[...]' or --input FILE.jsonl{}\n",
                f.name,
                names.join(", "),
                entry.missing_weights(0).map(|m| format!("; {m}")).unwrap_or_default()
            )));
        }
        Ok(Job { entry, engine, stats: run.stats })
    }

    /// Calls the entry function on `args`.
    fn invoke(&mut self, args: Vec<Value>) -> Result<Value, relay::Error> {
        match &mut self.engine {
            Engine::Vm { program, vm, .. } => program.invoke(vm, &self.entry.f.name, args),
            Engine::Interp(interp) => interp.invoke(&self.entry.f.name, args),
        }
    }

    /// How long building the VM's program took (none for the interpreter).
    fn build_times(&self) -> Option<relay::BuildTimes> {
        match &self.engine {
            Engine::Vm { program, .. } => Some(program.build_times()),
            Engine::Interp(_) => None,
        }
    }

    /// Whether the VM stopped because its run was cancelled (SIGINT).
    fn cancelled(&self) -> bool {
        matches!(&self.engine, Engine::Vm { vm, .. } if vm.cancel_handle().stop_reason() == Some(StopReason::Cancelled))
    }

    /// Runs every input, printing one result per input in input order, and for labelled
    /// inputs a final accuracy line. With `jobs` > 1 (the VM only, without `--stats`) the
    /// inputs run on that many worker threads, each with its own VM; results are the same
    /// bits as on one. With `batch` > 1 (the VM only, without `--stats`) that many inputs run
    /// together on each of the `jobs` threads, their kernel calls batched (`autobatch.rs`). SIGINT cancels
    /// the runs in progress: the summary then covers the inputs printed, and the exit code is
    /// [`EXIT_INTERRUPTED`].
    pub(crate) fn run(
        mut self,
        inputs: Inputs,
        format: Format,
        jobs: usize,
        batch: usize,
    ) -> Result<(), Failure> {
        let batch = if self.stats { 1 } else { batch.clamp(1, inputs.items.len().max(1)) };
        let jobs = if self.stats { 1 } else { jobs.clamp(1, inputs.items.len().max(1)) };
        let mut tally = Tally::default();
        let started = Instant::now();
        let entry = &self.entry;
        match &self.engine {
            Engine::Vm { program, config, .. } if batch > 1 => {
                autobatch::run(program, config, entry, &inputs.items, batch, jobs, |line, result, time| {
                    tally.emit(entry, line, &result, time, format)
                })?;
            }
            Engine::Vm { program, config, .. } if jobs > 1 => {
                parallel::run(program, config, entry, &inputs.items, jobs, |line, result, time| {
                    tally.emit(entry, line, &result, time, format)
                })?;
            }
            _ => {
                if let Engine::Vm { vm, .. } = &self.engine {
                    let cancel = vm.cancel_handle().clone();
                    if let Err(e) = ctrlc::set_handler(move || cancel.cancel()) {
                        eprintln!("warning: Ctrl-C will not print the results so far: {e}");
                    }
                }
                for (what, text) in &inputs.items {
                    let (line, args) = self.entry.arguments(what, text)?;
                    let start = Instant::now();
                    let result = match self.invoke(args) {
                        Ok(result) => result,
                        Err(_) if self.cancelled() => break,
                        Err(e) => return Err(e.into()),
                    };
                    tally.emit(&self.entry, line, &result, start.elapsed(), format)?;
                }
            }
        }
        let wall = started.elapsed();
        if let (true, Engine::Vm { program, vm, .. }) = (self.stats, &self.engine) {
            let n = tally.done.max(1) as u64;
            let s = vm.memory_stats();
            eprintln!("memory: {s}; per input: {} system allocation(s)", s.system_allocs / n);
            match peak_rss_bytes() {
                Some(rss) => eprintln!("process: peak RSS {rss} bytes"),
                None => eprintln!("process: peak RSS unknown (no /proc/self/status)"),
            }
            eprintln!("device {}: {}", program.device(), vm.copy_stats());
        }
        if tally.labelled > 0 {
            let n = tally.done;
            let executor = match self.engine {
                Engine::Vm { .. } => "the VM",
                Engine::Interp(_) => "the interpreter",
            };
            // On stderr, so that stdout is JSONL only.
            eprintln!(
                "accuracy: {}/{} = {:.2}%, {:.1} inputs/s on {jobs} thread(s) ({:.3} ms per input in {executor})",
                tally.correct,
                tally.labelled,
                100.0 * tally.correct as f64 / tally.labelled as f64,
                n as f64 / wall.as_secs_f64().max(f64::MIN_POSITIVE),
                1e3 * tally.vm_time.as_secs_f64() / n as f64
            );
        }
        if tally.done < inputs.items.len() {
            return Err(Failure {
                code: EXIT_INTERRUPTED,
                message: format!("interrupted after {} of {} input(s)\n", tally.done, inputs.items.len()),
            });
        }
        Ok(())
    }

    /// Times every input over `passes` (untimed warm-up passes, then timed passes until
    /// `--reps` or `--min-time`) and prints the latency statistics, as text or one JSON
    /// object.
    pub(crate) fn bench(
        mut self,
        inputs: Inputs,
        passes: Passes,
        format: Format,
        jobs: usize,
        batch: usize,
    ) -> Result<(), Failure> {
        let mut all = Vec::with_capacity(inputs.items.len());
        for (what, text) in &inputs.items {
            all.push(self.entry.arguments(what, text)?.1);
        }
        let too_many = |reps: usize| {
            Failure::bad_input(format!(
                "error: --warmup {} and --reps {reps} over {} input(s): more than {MAX_TIMED_RUNS} runs\n",
                passes.warmup,
                all.len()
            ))
        };
        if let Some(reps) = passes.reps {
            all.len().checked_mul(reps).filter(|&n| n <= MAX_TIMED_RUNS).ok_or_else(|| too_many(reps))?;
            passes.warmup.checked_add(reps).ok_or_else(|| too_many(reps))?;
        }
        let mut timed = match &self.engine {
            Engine::Vm { program, config, .. } if batch > 1 => {
                autobatch::bench(program, config, &self.entry, &all, &passes, batch, jobs)?
            }
            Engine::Vm { program, config, .. } if jobs > 1 => {
                parallel::bench(program, config, &self.entry, &all, &passes, jobs)?
            }
            _ => self.bench_here(&all, &passes)?,
        };
        let (samples, reps, wall) = (std::mem::take(&mut timed.samples), timed.reps, timed.wall);
        let runs = samples.len().max(1) as f64;
        let Some(s) = LatencyStats::new(samples) else {
            return write_stdout("no timed runs (--reps 0 or no inputs)\n");
        };
        let throughput = runs / wall.as_secs_f64().max(f64::MIN_POSITIVE);
        let ms = |d: Duration| 1e3 * d.as_secs_f64();
        let memory = timed.memory;
        let copies = match &self.engine {
            Engine::Vm { program, vm, .. } if program.device().is_opencl() => {
                Some((program.device(), vm.copy_stats()))
            }
            _ => None,
        };
        if format == Format::Json {
            let mut out = serde_json::json!({
                "function": self.entry.f.name,
                "inputs": all.len(),
                "warmup": passes.warmup,
                "reps": reps,
                "threads": jobs,
                "batch": batch,
                "latency_ms": {
                    "mean": ms(s.mean), "p50": ms(s.p50), "p90": ms(s.p90), "p99": ms(s.p99), "max": ms(s.max),
                },
                "throughput_per_s": throughput,
            });
            if let Some(b) = self.build_times() {
                out["build_ms"] = serde_json::json!({"compile": ms(b.compile), "kernels": ms(b.kernels)});
            }
            if let Some(m) = &memory {
                out["allocations_per_input"] = serde_json::json!({
                    "arena": m.arena_allocs as f64 / runs,
                    "pool": m.pool_allocs as f64 / runs,
                    "system": m.system_allocs as f64 / runs,
                });
            }
            if let Some(g) = &timed.groups {
                let counts: serde_json::Map<_, _> =
                    g.counts().map(|(lanes, &calls)| (lanes.to_string(), calls.into())).collect();
                out["batched_calls_by_lanes"] = counts.into();
            }
            if let Some((_, c)) = &copies {
                out["device_bytes_per_input"] = serde_json::json!({
                    "to_device": c.to_device_bytes as f64 / runs,
                    "to_host": c.to_host_bytes as f64 / runs,
                });
            }
            return write_stdout(&format!("{out}\n"));
        }
        if let Some(b) = self.build_times() {
            write_stdout(&format!(
                "build: compile {:.1} ms, kernels (JIT) {:.1} ms\n",
                ms(b.compile),
                ms(b.kernels)
            ))?;
        }
        if let Some(m) = memory {
            write_stdout(&format!(
                "memory (timed runs): {m}\nper input: {:.1} arena, {:.1} pool, {:.1} system tensor allocation(s)\n",
                m.arena_allocs as f64 / runs,
                m.pool_allocs as f64 / runs,
                m.system_allocs as f64 / runs
            ))?;
        }
        if let Some(g) = &timed.groups {
            write_stdout(&format!("batched calls by lanes (timed runs): {g}\n"))?;
        }
        if let Some((device, c)) = copies {
            write_stdout(&format!(
                "device {device} (timed runs): {c}\nper input: {:.1} bytes host→device, {:.1} bytes device→host\n",
                c.to_device_bytes as f64 / runs,
                c.to_host_bytes as f64 / runs
            ))?;
        }
        write_stdout(&format!(
            "@{}: {} input(s) x {reps} rep(s) after {} warm-up pass(es), on {jobs} thread(s), batch {batch}\n\
             latency per input: mean {:.4} ms, p50 {:.4} ms, p90 {:.4} ms, p99 {:.4} ms, max {:.4} ms\n\
             throughput: {:.1} inputs/s\n",
            self.entry.f.name,
            all.len(),
            passes.warmup,
            ms(s.mean),
            ms(s.p50),
            ms(s.p90),
            ms(s.p99),
            ms(s.max),
            throughput
        ))
    }

    /// `bench`'s passes on this thread: warm-up, then timed passes.
    fn bench_here(&mut self, all: &[Vec<Value>], passes: &Passes) -> Result<Timed, Failure> {
        for _ in 0..passes.warmup {
            for args in all {
                self.invoke(args.clone())?;
            }
        }
        if let Engine::Vm { vm, .. } = &mut self.engine {
            vm.reset_memory_stats();
        }
        let mut samples = Vec::new();
        let started = Instant::now();
        let mut reps = 0;
        while passes.another(reps, started, samples.len() + all.len()) {
            for args in all {
                let start = Instant::now();
                self.invoke(args.clone())?;
                samples.push(start.elapsed());
            }
            reps += 1;
        }
        let memory = match &self.engine {
            Engine::Vm { vm, .. } => Some(vm.memory_stats()),
            Engine::Interp(_) => None,
        };
        Ok(Timed { samples, reps, wall: started.elapsed(), memory, groups: None })
    }
}

impl Entry<'_> {
    /// With `--params` and `given` arguments for the free parameters: the parameters no
    /// argument fills, said as missing from the weights file.
    fn missing_weights(&self, given: usize) -> Option<String> {
        let (file, names) = self.weights.as_ref()?;
        let missing: Vec<&str> =
            self.free.iter().skip(given).map(|&i| self.f.param_names[i].as_str()).collect();
        (!missing.is_empty()).then(|| relay::params::missing_message(&missing, file, names))
    }

    /// The entry's arguments for one input line (bound weights plus the line's values, read
    /// as the line is parsed), and the line's label.
    fn arguments(&self, what: &str, text: &str) -> Result<(Option<i64>, Vec<Value>), Failure> {
        let bad = |m: String| Failure::bad_input(format!("error: {what}: {m}\n"));
        let exe = self.exe;
        let free: Vec<(&str, &ValueType)> =
            self.free.iter().map(|&i| (self.f.param_names[i].as_str(), &self.f.param_types[i])).collect();
        let names: Vec<&str> = free.iter().map(|(n, _)| *n).collect();
        let reader = relay::json::Reader::new(exe);
        let line =
            batch::read_line(text, &names, &batch::TypedArguments::new(&reader, &free)).map_err(bad)?;
        if line.given < self.free.len() {
            if let Some(m) = self.missing_weights(line.given) {
                return Err(bad(m));
            }
        }
        if line.given != self.free.len() {
            let names: Vec<String> = names.iter().map(|n| format!("%{n}")).collect();
            return Err(bad(format!(
                "`@{}` takes {} argument(s) here ({}), {} given",
                self.f.name,
                self.free.len(),
                names.join(", "),
                line.given
            )));
        }
        let mut args: Vec<Option<Value>> = vec![None; self.f.param_types.len()];
        for (i, v) in &self.bound {
            args[*i] = Some(v.clone());
        }
        for (&i, v) in self.free.iter().zip(line.args) {
            args[i] = Some(v);
        }
        Ok((line.label, args.into_iter().flatten().collect()))
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

impl Tally {
    /// Prints one input's result (with the prediction for a labelled input) and counts it.
    fn emit(
        &mut self,
        entry: &Entry,
        label: Option<i64>,
        result: &Value,
        time: Duration,
        format: Format,
    ) -> Result<(), Failure> {
        self.done += 1;
        self.vm_time += time;
        let printed = entry.print(result, format)?;
        let printed = match label {
            None => printed,
            Some(label) => {
                let prediction = batch::argmax(result);
                self.labelled += 1;
                self.correct += usize::from(prediction.map(|p| p as i64) == Some(label));
                // A result without elements to rank predicts nothing: JSON's `null`.
                let shown = |none: &str| prediction.map_or(none.to_string(), |p| p.to_string());
                match format {
                    Format::Json => {
                        let shown = shown("null");
                        format!("{{\"prediction\":{shown},\"label\":{label},\"output\":{printed}}}")
                    }
                    Format::Text => format!("prediction {} (label {label}): {printed}", shown("none")),
                }
            }
        };
        write_stdout(&(printed + "\n"))
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

/// The process's peak resident set size (Linux's `VmHWM`), for `run --stats`; `None` where
/// `/proc` does not say.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
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
