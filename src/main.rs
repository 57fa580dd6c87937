//! The `relay-vm` command-line tool.
//!
//! Exit codes: 0 success; 1 the program does not compile (parse, name, type or lowering
//! errors, or an operator without a kernel); 2 a run-time trap (a memory limit or the
//! `--timeout` included); 3 a bad command line or an unreadable input (file, executable, JSON
//! argument, safetensors weights); 130 `run` interrupted by SIGINT (Ctrl-C), after printing
//! the results so far. Errors go to stderr.

mod fmt;
mod import;
mod job;
mod npy;
mod ops_list;
mod opt;
mod program_args;

use clap::{Args, Parser, Subcommand, ValueEnum};
use job::Job;
use program_args::ProgramArgs;
use relay::{Error, Program};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit code for a program that does not compile (parse, name or type errors).
const EXIT_COMPILE_ERROR: u8 = 1;
/// Exit code for a run-time trap.
pub(crate) const EXIT_TRAP: u8 = 2;
/// Exit code for a bad command line or an unreadable input file.
const EXIT_BAD_INPUT: u8 = 3;
/// Exit code for a `run` stopped by SIGINT (128 + the signal's number, as shells report it).
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

/// The highest `--opt-level`: TVM's levels are 0 to 3. Here 0 runs each operator on its
/// reference kernel and 1 and above fuse (2 and 3 currently do what 1 does).
const MAX_OPT_LEVEL: u8 = 3;

/// The most `bench --warmup` or `--reps` passes: a million passes over even one input take
/// longer than anyone waits, and a cap keeps the pass counts and their sum far from overflow.
const MAX_PASSES: u64 = 1_000_000;

/// `--opt-level`: 0 to [`MAX_OPT_LEVEL`].
fn opt_level_parser() -> clap::builder::RangedI64ValueParser<u8> {
    clap::value_parser!(u8).range(0..=i64::from(MAX_OPT_LEVEL))
}

/// `bench --warmup` and `--reps`: 0 to [`MAX_PASSES`].
pub(crate) fn passes_parser() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(0..=MAX_PASSES)
}

/// Run, check and format Relay programs (TVM's `#[version = "0.0.5"]` text format).
///
/// The prelude (List, Option, Tree, map, foldl, ...) is in scope for every program.
#[derive(Parser, Debug)]
#[command(name = "relay-vm", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Leave the prelude out: only the file's own definitions exist, as in TVM's
    /// `relay.parse` (without it, the file's definitions shadow the prelude's).
    #[arg(long, global = true)]
    no_prelude: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse, resolve and type-check a Relay file, printing every diagnostic; exit 1 on error.
    Check {
        /// The `.relay` file to check.
        file: PathBuf,
        /// Print every global function of the file with its inferred type.
        #[arg(long)]
        types: bool,
    },
    /// Print a Relay file in canonical form, keeping its comments (the prelude is not
    /// printed); or check or rewrite the file.
    Fmt {
        /// The `.relay` file to format.
        file: PathBuf,
        /// Print nothing; exit 1 and show the first differing lines if the file is not in
        /// canonical form.
        #[arg(long, conflicts_with = "write")]
        check: bool,
        /// Rewrite the file in place if it is not in canonical form (atomically: a temporary
        /// file beside it is renamed over it).
        #[arg(long)]
        write: bool,
    },
    /// Run a function of a Relay file or a compiled executable and print its result.
    ///
    /// Arguments are JSON: a tensor as {"dtype": "float32", "shape": [2], "data": [1, 2]} or,
    /// since the parameter's type fixes the dtype, as a number or nested arrays; a tuple as
    /// an array; a constructor as {"con": "Cons", "fields": [...]} (a List also as an array);
    /// a reference as {"ref": value}. Exit 2 on a run-time trap.
    ///
    /// With --input, a line may also be an object {"args": [...], "label": N}: the result's
    /// largest element is then the prediction, printed with the label, and a summary line
    /// gives the accuracy and inputs per second.
    Run {
        #[command(flatten)]
        run: RunArgs,
        /// How to print results.
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
        /// Worker threads for --input (at most 1024), each with its own VM on the one shared
        /// program and weights; results print in input order and are the same bits as with
        /// one. Default: the machine's cores. `--stats` and `--executor interp` use one.
        #[arg(short = 'j', long, value_parser = clap::value_parser!(u16).range(1..=1024))]
        jobs: Option<u16>,
        /// Inputs run together (at most 1024) on each -j thread: their calls of one fused
        /// kernel with the same weights become one batched call over stacked rows (DyNet's
        /// autobatching). Results equal those of 1 (the default) within the kernels' tolerance.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
        batch: u16,
    },
    /// Time a function over its inputs: per-input latency (mean, p50, p90, max) and
    /// throughput, on one thread.
    Bench {
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        passes: job::Passes,
        /// `text` for people, or `json`: one object with every figure.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Threads (at most 1024), each with its own VM making every pass over every input;
        /// throughput counts all their runs. Latency is per input on its thread.
        #[arg(short = 'j', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
        jobs: u16,
        /// Inputs run together on each -j thread, their kernel calls batched (see `run
        /// --batch`); latency is per input from its start to its result.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
        batch: u16,
    },
    /// Compile a Relay file to an executable file, and/or its fused kernels to OpenCL C.
    Compile {
        #[command(flatten)]
        program: ProgramArgs,
        /// Where to write the executable.
        #[arg(short, long, required_unless_present = "emit_opencl")]
        output: Option<PathBuf>,
        /// Write every fused kernel's OpenCL C (`.cl`) and a `manifest.json` (kernel → file,
        /// kir hash, buffers with dtype and shape, work sizes) into this directory, for
        /// offline OpenCL compilers (FPGA toolchains).
        #[arg(long, value_name = "DIR")]
        emit_opencl: Option<PathBuf>,
        /// With --emit-opencl: also build each program on --device and save its binary, for
        /// `run --opencl-binaries DIR`.
        #[arg(long, requires = "emit_opencl")]
        binaries: bool,
        /// The OpenCL device --binaries builds for.
        #[arg(long, default_value = "opencl")]
        device: String,
    },
    /// Print the bytecode of a compiled executable or of a Relay file.
    Disasm {
        #[command(flatten)]
        program: ProgramArgs,
        /// Print only this function (with or without `@`).
        #[arg(long, value_name = "NAME")]
        function: Option<String>,
        /// The device to plan a `.relay` file for (see `run`): with an OpenCL device the
        /// bytecode shows the `DeviceCopy` instructions of the device plan.
        #[arg(long, default_value = "cpu")]
        device: String,
    },
    /// List the devices kernels can run on: the host CPU and every OpenCL device (or why
    /// there are none).
    Devices,
    /// List every operator: its fusion pattern, operand dtypes, attributes with their
    /// defaults, and whether it has a fused (JIT/OpenCL) kernel.
    Ops {
        /// `text` for people, `json` for tools.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Where the time goes: runs the inputs like `bench` (one thread) and prints each
    /// kernel's calls and time, most first, the time outside kernels, and each VM instruction
    /// class's count and self time (call, kernel call, alloc, adt construct/match, move,
    /// branch, scalar, ...), most first.
    Profile {
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        passes: job::Passes,
        /// `text` (a sorted table) or `json`.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Run optimisation passes on a Relay file and print the transformed module as Relay
    /// text (which parses and type-checks again); reports go to stderr.
    Opt {
        /// The `.relay` file.
        file: PathBuf,
        /// Weights (safetensors) whose shapes specialise `@main`'s `?` dimensions, as `run
        /// --params` does before compiling.
        #[arg(long, value_name = "W")]
        params: Option<PathBuf>,
        /// Run this level's default pipeline (0 to 3; `relay-vm opt --help` of the compiler's
        /// pass registry says what each adds).
        #[arg(short = 'O', long = "opt-level", default_value_t = relay::DEFAULT_OPT_LEVEL, value_parser = opt_level_parser())]
        opt_level: u8,
        /// Run these passes, by TVM's names, instead (each after the passes it requires).
        #[arg(long, value_delimiter = ',', value_name = "A,B,...")]
        passes: Vec<String>,
        /// Print the module after every pass (on stderr).
        #[arg(long, conflicts_with = "print_after")]
        print_after_all: bool,
        /// Print the module after the pass of this name (on stderr).
        #[arg(long, value_name = "NAME")]
        print_after: Option<String>,
        /// Print each pass's time, the time of the type inference after it (`-` where the
        /// pass changed nothing; only the functions it changed are inferred again), and the
        /// module's expression nodes before and after it (on stderr).
        #[arg(long)]
        time_passes: bool,
        /// Print the transformed module's dataflow as Graphviz DOT instead of Relay text:
        /// one digraph, a cluster per global function, fused groups as nested clusters.
        #[arg(long, conflicts_with_all = ["print_after_all", "print_after"])]
        dot: bool,
    },
    /// Import an ONNX model (opsets 11 to 21) as Relay text and safetensors weights.
    ///
    /// `@main` takes the graph inputs, then the weights (initializers), named after the ONNX
    /// values with every character outside [A-Za-z0-9_] turned into `_`. `run` and `bench`
    /// also take a `.onnx` file directly.
    Import {
        /// The `.onnx` model.
        file: PathBuf,
        /// Where to write the Relay text.
        #[arg(short, long)]
        output: PathBuf,
        /// Where to write the weights (for `run --params`).
        #[arg(long, value_name = "FILE")]
        params_out: Option<PathBuf>,
    },
    /// Print the fused kernels of a compiled executable or of a Relay file as kir.
    Dump {
        #[command(flatten)]
        program: ProgramArgs,
        /// Print every kir kernel (what `dump` prints without --memory).
        #[arg(long)]
        kernels: bool,
        /// Print each function's memory plan: its arena's size next to the bytes of its
        /// tensors together (the sharing), and each arena tensor with size, offset and live
        /// interval (instruction positions in the disassembly).
        #[arg(long)]
        memory: bool,
        /// Print the compiled program's Relay dataflow (after the pipeline of its -O level)
        /// as Graphviz DOT instead: fused kernels are clusters. Needs a `.relay` file or an
        /// ONNX model, not an executable.
        #[arg(long, conflicts_with_all = ["kernels", "memory"])]
        dot: bool,
    },
}

/// What to run and on which inputs (shared by `run` and `bench`).
#[derive(Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    program: ProgramArgs,
    /// The arguments: a JSON array, one value per parameter not bound by --params, or an
    /// object keyed by parameter name (`{"input": ...}`; ONNX input names work as written).
    /// `@FILE` reads them from a file: a NumPy `.npy` array (the one parameter's), an `.npz`
    /// archive keyed by parameter name (`np.savez(f, x=...)`), or JSON text.
    #[arg(long, conflicts_with = "input")]
    args: Option<String>,
    /// A JSONL file (`-` for stdin): runs once per line, each line an array like --args (or
    /// {"args": [...], "label": N}), printing one result per line.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Print tensor allocation statistics (arena, pool, system; peak arena and pool bytes),
    /// the process's peak RSS and host↔device copies (count and bytes each way) on stderr.
    #[arg(long)]
    stats: bool,
    /// Where fused kernels run: `cpu` (Cranelift JIT) or an OpenCL device, `opencl`,
    /// `opencl:<platform>` or `opencl:<platform>:<device>` (see `relay-vm devices`), or several
    /// separated by commas, which take the fused kernels in turn (tensors cross between them
    /// through the host). Operators without fused kernels stay on the host.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Load the OpenCL programs from the binaries in this directory (written by `compile
    /// --emit-opencl DIR --binaries`) instead of building them from source; a kernel that is
    /// not there is an error.
    #[arg(long, value_name = "DIR")]
    opencl_binaries: Option<PathBuf>,
    /// The most memory the VM's tensors may hold at once, and the most one tensor may have:
    /// bytes, or a number with a binary suffix K, M, G or T (`512M`, `4G`). Going over is a
    /// trap (exit 2).
    #[arg(long, value_name = "BYTES", value_parser = job::parse_bytes)]
    max_memory: Option<usize>,
    /// Stop running after this many seconds (compilation not included; fractions allowed):
    /// the run in progress traps (exit 2), JIT kernels included.
    #[arg(long, value_name = "SECONDS", value_parser = job::parse_seconds)]
    timeout: Option<std::time::Duration>,
    /// What runs the program: `vm` compiles it (lowering passes, bytecode, kernels) and runs
    /// it on the VM; `interp` evaluates the type-checked Relay directly with the reference
    /// kernels (TVM's debug executor, the specification; a `.relay` file only, on the host).
    #[arg(long, value_enum, default_value_t = Executor::Vm)]
    executor: Executor,
    /// Threads (at most 1024) each large matrix product (a convolution's or a big dense
    /// layer's GEMM) splits its work over, within one run; products of under 16 rows (the
    /// NLP models' dense layers) stay on one. Results are the same bits as with 1, the default.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
}

/// What `run` and `bench` run a program with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Executor {
    /// The bytecode VM, on the compiled program.
    Vm,
    /// The reference interpreter, on the type-checked Relay.
    Interp,
}

/// How `run` prints results (and `ops` its listing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// JSON, in the same forms the arguments take (tensors always as {"dtype", "shape", "data"}).
    Json,
    /// Relay-like syntax for people: `Cons(1, Nil)`, `(1f, 2f)`, `float32[[1, 2], [3, 4]]`.
    Text,
}

/// A failed command: the exit code and what to print on stderr (already rendered).
pub(crate) struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    pub(crate) fn bad_input(message: impl Into<String>) -> Failure {
        Failure { code: EXIT_BAD_INPUT, message: message.into() }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        match e {
            Error::Compile(f) => Failure { code: EXIT_COMPILE_ERROR, message: f.render(use_color()) },
            Error::Kernel { .. } => Failure { code: EXIT_COMPILE_ERROR, message: format!("error: {e}\n") },
            Error::Trap(_) | Error::Fault(_) => Failure { code: EXIT_TRAP, message: format!("error: {e}\n") },
            Error::Load(_) | Error::File { .. } | Error::Input(_) | Error::Device(_) => {
                Failure::bad_input(format!("error: {e}\n"))
            }
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_BAD_INPUT } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let prelude = if cli.no_prelude { relay::Prelude::Off } else { relay::Prelude::InScope };
    match cli.command {
        Command::Check { file, types } => with_source(&file, |name, text| {
            let checked = relay::check_with(name, text, prelude)?;
            if types {
                print_global_types(&checked);
            }
            Ok(())
        }),
        Command::Fmt { file, check, write } => {
            let mode = if check {
                fmt::Mode::Check
            } else if write {
                fmt::Mode::Write
            } else {
                fmt::Mode::Print
            };
            let mut formatted = None;
            let parsed = with_source(&file, |name, text| {
                let (module, id) = relay::parse_with(name, text, prelude)?;
                formatted =
                    Some((text.to_string(), relay::compiler::syntax::printer::format_file(&module, id)));
                Ok(())
            });
            match formatted {
                Some((text, out)) => finish(fmt::apply(&file, &text, &out, mode)),
                None => parsed,
            }
        }
        Command::Run { run, format, jobs, batch } => {
            let jobs =
                jobs.map_or_else(|| std::thread::available_parallelism().map_or(1, usize::from), usize::from);
            finish(with_job(&run, prelude, |job, inputs| job.run(inputs, format, jobs, usize::from(batch))))
        }
        Command::Bench { run, passes, format, jobs, batch } => {
            finish(with_job(&run, prelude, |job, inputs| {
                job.bench(inputs, passes, format, usize::from(jobs), usize::from(batch))
            }))
        }
        Command::Compile { program, output, emit_opencl, binaries, device } => finish(compile(
            &program,
            output.as_deref(),
            emit_opencl.as_deref().map(|dir| (dir, binaries.then_some(device.as_str()))),
            prelude,
        )),
        Command::Disasm { program, function, device } => finish(
            parse_device(&device)
                .and_then(|d| program.load(d, prelude))
                .and_then(|p| disassemble(&p, function.as_deref()))
                .and_then(|text| write_stdout(&text)),
        ),
        Command::Profile { run, passes, format } => {
            finish(with_job(&run, prelude, |job, inputs| job.profile(inputs, passes, format)))
        }
        Command::Devices => finish(write_stdout(&relay::device_list::report())),
        Command::Ops { format } => finish(write_stdout(&ops_list::report(format))),
        Command::Opt { file, params, opt_level, passes, print_after_all, print_after, time_passes, dot } => {
            let args = opt::OptArgs {
                file: &file,
                params: params.as_deref(),
                opt_level,
                passes: &passes,
                print_after_all,
                print_after: print_after.as_deref(),
                time_passes,
                dot,
            };
            finish(opt::run(&args).and_then(|(module, log)| {
                eprint!("{log}");
                write_stdout(&module)
            }))
        }
        Command::Import { file, output, params_out } => {
            finish(import::import(&file, &output, params_out.as_deref()))
        }
        Command::Dump { program, dot: true, .. } => finish(dump_dot(&program).and_then(|d| write_stdout(&d))),
        Command::Dump { program, kernels, memory, .. } => finish(
            // Without a flag, the kernels: what the command is named for.
            program
                .load(relay::Device::Cpu, prelude)
                .and_then(|p| write_stdout(&dump(&p, kernels || !memory, memory))),
        ),
    }
}

/// Whether diagnostics on stderr are coloured: on a terminal, unless `NO_COLOR` is set to
/// something (no-color.org).
fn use_color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Prints a failure's message and turns the outcome into the exit code.
fn finish(outcome: Result<(), Failure>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprint!("{}", f.message);
            ExitCode::from(f.code)
        }
    }
}

/// Prints `@name: type` for every global function defined in the user's file.
fn print_global_types(checked: &relay::Checked) {
    let m = &checked.module;
    for g in m.functions.iter().filter(|g| g.span.file == checked.file) {
        if let Some(&t) = checked.types.globals.get(&g.name) {
            println!("@{}: {}", m.name(g.name), relay::compiler::syntax::printer::print_type(m, t));
        }
    }
}

/// Reads `path` and hands its text to `f`; renders diagnostics if `f` fails to compile it.
fn with_source(path: &Path, f: impl FnOnce(&str, &str) -> Result<(), relay::CompileFailure>) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", path.display());
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    match f(&path.display().to_string(), &text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprint!("{}", failure.render(use_color()));
            ExitCode::from(EXIT_COMPILE_ERROR)
        }
    }
}

pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(path)
        .map_err(|e| Failure::bad_input(format!("error: cannot read {}: {e}\n", path.display())))
}

/// Every memory plan (with `memory`) and kir kernel (with `kernels`) of the program, printed.
fn dump(program: &Program, kernels: bool, memory: bool) -> String {
    let mut out = String::new();
    if memory {
        let plans = relay::compiler::codegen::memory::analyse_executable(program.executable());
        // Functions without tensors (most of the prelude) have nothing to show.
        for plan in plans.iter().filter(|p| !p.tensors.is_empty() || p.kills > 0) {
            out.push_str(&plan.to_string());
        }
    }
    for (i, desc) in program.executable().kernels.iter().enumerate() {
        let Some(bytes) = desc.kernel.as_deref().filter(|_| kernels) else { continue };
        match relay::compiler::kir::Kernel::from_bytes(bytes) {
            Ok(k) => out.push_str(&format!("// kernel#{i}\n{k}\n")),
            Err(e) => out.push_str(&format!("// kernel#{i}: {e}\n")),
        }
    }
    out
}

/// `dump --dot`: the program's Relay text (an ONNX model's imported text) through its
/// level's pipeline, drawn as `opt --dot` draws it.
fn dump_dot(program: &ProgramArgs) -> Result<String, Failure> {
    let name = program.file.display().to_string();
    let text = match program.sources()?.onnx_text {
        Some(text) => text,
        None => String::from_utf8(read_file(&program.file)?).map_err(|_| {
            Failure::bad_input(format!(
                "error: {name}: --dot draws a Relay file or an ONNX model, not an executable\n"
            ))
        })?,
    };
    let args = opt::OptArgs {
        file: &program.file,
        params: program.params.as_deref(),
        opt_level: program.opt_level,
        passes: &[],
        print_after_all: false,
        print_after: None,
        time_passes: false,
        dot: true,
    };
    opt::transform(&name, &text, &args).map(|(dot, _)| dot)
}

fn parse_device(s: &str) -> Result<relay::Device, Failure> {
    s.parse().map_err(|e| Failure::bad_input(format!("error: --device: {e}\n")))
}

/// Opens the job `run` describes, on `--executor`, and hands it and its inputs to `f`.
fn with_job(
    run: &RunArgs,
    prelude: relay::Prelude,
    f: impl FnOnce(Job<'_>, job::Inputs) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let sources = run.program.sources()?;
    match run.executor {
        Executor::Vm => {
            relay::set_intra_op_threads(usize::from(run.threads));
            let program = run.program.build(sources, run_device(run)?, prelude)?;
            let inputs = job::Inputs::read(run.args.as_deref(), run.input.as_deref())?;
            f(Job::new(&program, run)?, inputs)
        }
        Executor::Interp => {
            if run.device != "cpu" || run.opencl_binaries.is_some() {
                return Err(Failure::bad_input(
                    "error: --executor interp runs on the host; --device is the VM's\n",
                ));
            }
            let file = &run.program.file;
            let bytes = match sources.onnx_text {
                Some(text) => text.into_bytes(),
                None => read_file(file)?,
            };
            let text = std::str::from_utf8(&bytes).ok().filter(|_| !bytes.starts_with(relay::vm::MAGIC));
            let text = text.ok_or_else(|| {
                Failure::bad_input(format!(
                    "error: --executor interp needs Relay source, not {}\n",
                    file.display()
                ))
            })?;
            let checked =
                relay::check_with(&file.display().to_string(), text, prelude).map_err(Error::from)?;
            let interp = relay::interp::Interpreter::new(checked)?;
            let inputs = job::Inputs::read(run.args.as_deref(), run.input.as_deref())?;
            f(Job::interp(&interp, run, sources.weights.as_ref())?, inputs)
        }
    }
}

/// The device `run`'s options name, with `--opencl-binaries`.
fn run_device(run: &RunArgs) -> Result<relay::Device, Failure> {
    let mut device = parse_device(&run.device)?;
    match (&mut device, &run.opencl_binaries) {
        (relay::Device::OpenCl { binaries, .. }, Some(dir)) => *binaries = Some(dir.clone()),
        (relay::Device::Cpu, Some(_)) => {
            return Err(Failure::bad_input("error: --opencl-binaries needs --device opencl\n"))
        }
        _ => {}
    }
    Ok(device)
}

/// The bytecode of `program`: every function, or only `function`.
fn disassemble(program: &Program, function: Option<&str>) -> Result<String, Failure> {
    let exe = program.executable();
    match function {
        None => Ok(exe.disassemble()),
        Some(name) => {
            // `function` gives the did-you-mean error; the index is then always found.
            let f = program.function(name)?;
            Ok(exe.function_index(&f.name).and_then(|i| exe.disassemble_function(i)).unwrap_or_default())
        }
    }
}

/// `relay-vm compile`: the executable to `output`, and with `opencl = (dir, device)` the
/// kernels' OpenCL C to `dir` (with binaries built on `device` when one is given).
fn compile(
    args: &ProgramArgs,
    output: Option<&Path>,
    opencl: Option<(&Path, Option<&str>)>,
    prelude: relay::Prelude,
) -> Result<(), Failure> {
    let program = args.load_unbound(relay::Device::Cpu, prelude)?;
    if let Some(output) = output {
        std::fs::write(output, program.save())
            .map_err(|e| Failure::bad_input(format!("error: cannot write {}: {e}\n", output.display())))?;
    }
    if let Some((dir, device)) = opencl {
        let opened = match device {
            Some(d) => parse_device(d)?.open().map_err(Error::from)?,
            None => Vec::new(),
        };
        if device.is_some() && opened.len() != 1 {
            return Err(Failure::bad_input("error: --binaries needs one OpenCL --device\n"));
        }
        let n = relay::opencl_files::emit(program.executable(), dir, opened.first())?;
        eprintln!("{n} OpenCL program(s) written to {}", dir.display());
    }
    Ok(())
}

/// Writes to stdout; a closed pipe (`| head`) ends the output quietly.
pub(crate) fn write_stdout(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::bad_input(format!("error: cannot write the output: {e}\n"))),
    }
}
