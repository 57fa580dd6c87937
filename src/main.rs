//! The `relay-vm` command-line tool.
//!
//! Exit codes: 0 success; 1 the program does not compile (parse, name, type or lowering
//! errors, or an operator without a kernel); 2 a run-time trap; 3 a bad command line or an
//! unreadable input (file, executable, JSON argument, safetensors weights). Errors go to
//! stderr.

use clap::{Parser, Subcommand, ValueEnum};
use relay::vm::{Value, Vm, VmFunction};
use relay::{Error, Program};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit code for a program that does not compile (parse, name or type errors).
const EXIT_COMPILE_ERROR: u8 = 1;
/// Exit code for a run-time trap.
const EXIT_TRAP: u8 = 2;
/// Exit code for a bad command line or an unreadable input file.
const EXIT_BAD_INPUT: u8 = 3;

/// The first bytes of an executable file (`relay-vm compile` output).
const EXECUTABLE_MAGIC: &[u8] = b"RELAYVM\0";

/// Run, check and format Relay programs (TVM's `#[version = "0.0.5"]` text format).
///
/// The prelude (List, Option, Tree, map, foldl, ...) is in scope for every program.
#[derive(Parser, Debug)]
#[command(name = "relay-vm", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
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
    /// Print a Relay file in canonical form (comments are dropped; the prelude is not printed).
    Fmt {
        /// The `.relay` file to format.
        file: PathBuf,
    },
    /// Run a function of a Relay file or a compiled executable and print its result.
    ///
    /// Arguments are JSON: a tensor as {"dtype": "float32", "shape": [2], "data": [1, 2]} or,
    /// since the parameter's type fixes the dtype, as a number or nested arrays; a tuple as
    /// an array; a constructor as {"con": "Cons", "fields": [...]} (a List also as an array);
    /// a reference as {"ref": value}. Exit 2 on a run-time trap.
    Run {
        /// A `.relay` file, or an executable written by `relay-vm compile`.
        file: PathBuf,
        /// The function to run.
        #[arg(long, default_value = "main")]
        entry: String,
        /// The arguments: a JSON array, one value per parameter not bound by --params.
        #[arg(long, conflicts_with = "input")]
        args: Option<String>,
        /// A JSONL file (`-` for stdin): runs once per line, each line an array like --args,
        /// printing one result per line.
        #[arg(long)]
        input: Option<PathBuf>,
        /// A safetensors file whose tensors bind the parameters of the same names.
        #[arg(long)]
        params: Option<PathBuf>,
        /// How to print results.
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
    },
    /// Compile a Relay file to an executable file.
    Compile {
        /// The `.relay` file to compile.
        file: PathBuf,
        /// Where to write the executable.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Print the bytecode of a compiled executable or of a Relay file.
    Disasm {
        /// An executable written by `relay-vm compile`, or a `.relay` file.
        file: PathBuf,
    },
}

/// How `run` prints results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// JSON, in the same forms the arguments take (tensors always as {"dtype", "shape", "data"}).
    Json,
    /// Relay-like syntax for people: `Cons(1, Nil)`, `(1f, 2f)`, `float32[[1, 2], [3, 4]]`.
    Text,
}

/// A failed command: the exit code and what to print on stderr (already rendered).
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn bad_input(message: impl Into<String>) -> Failure {
        Failure { code: EXIT_BAD_INPUT, message: message.into() }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        match e {
            Error::Compile(f) => {
                Failure { code: EXIT_COMPILE_ERROR, message: f.render(std::io::stderr().is_terminal()) }
            }
            Error::Kernel { .. } => Failure { code: EXIT_COMPILE_ERROR, message: format!("error: {e}\n") },
            Error::Trap(t) => Failure { code: EXIT_TRAP, message: format!("error: {t}\n") },
            Error::Load(_) | Error::Input(_) => Failure::bad_input(format!("error: {e}\n")),
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
    match cli.command {
        Command::Check { file, types } => with_source(&file, |name, text| {
            let checked = relay::check(name, text)?;
            if types {
                print_global_types(&checked);
            }
            Ok(())
        }),
        Command::Fmt { file } => with_source(&file, |name, text| {
            let (module, id) = relay::parse(name, text)?;
            print!("{}", relay::compiler::syntax::printer::print_module(&module, Some(id)));
            Ok(())
        }),
        Command::Run { file, entry, args, input, params, format } => {
            finish(run(&file, &entry, args.as_deref(), input.as_deref(), params.as_deref(), format))
        }
        Command::Compile { file, output } => finish(compile(&file, &output)),
        Command::Disasm { file } => {
            finish(load_program(&file).and_then(|p| write_stdout(&p.executable().disassemble())))
        }
    }
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
            eprint!("{}", failure.render(std::io::stderr().is_terminal()));
            ExitCode::from(EXIT_COMPILE_ERROR)
        }
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(path)
        .map_err(|e| Failure::bad_input(format!("error: cannot read {}: {e}\n", path.display())))
}

/// Loads an executable (recognised by its magic number) or compiles Relay source.
fn load_program(path: &Path) -> Result<Program, Failure> {
    let bytes = read_file(path)?;
    if bytes.starts_with(EXECUTABLE_MAGIC) {
        return Program::load(&bytes)
            .map_err(|e| Failure::bad_input(format!("error: {}: {e}\n", path.display())));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        Failure::bad_input(format!(
            "error: {} is neither UTF-8 Relay source nor an executable\n",
            path.display()
        ))
    })?;
    Ok(Program::compile(&path.display().to_string(), &text)?)
}

fn compile(file: &Path, output: &Path) -> Result<(), Failure> {
    let program = load_program(file)?;
    std::fs::write(output, program.save())
        .map_err(|e| Failure::bad_input(format!("error: cannot write {}: {e}\n", output.display())))
}

/// Writes to stdout; a closed pipe (`| head`) ends the output quietly.
fn write_stdout(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::bad_input(format!("error: cannot write the output: {e}\n"))),
    }
}

fn run(
    file: &Path,
    entry: &str,
    args: Option<&str>,
    input: Option<&Path>,
    params: Option<&Path>,
    format: Format,
) -> Result<(), Failure> {
    let program = load_program(file)?;
    let f = program.function(entry)?;
    let bound = match params {
        Some(p) => relay::params::bind_params(f, &read_file(p)?)
            .map_err(|e| Failure::bad_input(format!("error: {}: {e}\n", p.display())))?,
        None => vec![],
    };
    let free: Vec<usize> = (0..f.param_types.len()).filter(|i| !bound.iter().any(|(b, _)| b == i)).collect();
    let mut job = Job { program: &program, f, bound, free, format, vm: program.vm() };
    match (args, input) {
        (Some(a), _) => job.run_line(a, "--args"),
        (None, Some(path)) => job.run_lines(path),
        (None, None) if job.free.is_empty() => job.run_line("[]", "the arguments"),
        (None, None) => {
            let names: Vec<String> = job.free.iter().map(|&i| format!("%{}", f.param_names[i])).collect();
            Err(Failure::bad_input(format!(
                "error: `@{}` needs argument(s) for {}: give them with --args '[...]' or --input FILE.jsonl\n",
                f.name,
                names.join(", ")
            )))
        }
    }
}

/// Runs of one entry function: its bound weights, the parameters the JSON arrays fill, a VM.
struct Job<'p> {
    program: &'p Program,
    f: &'p VmFunction,
    bound: Vec<(usize, Value)>,
    free: Vec<usize>,
    format: Format,
    vm: Vm<'p>,
}

impl Job<'_> {
    fn run_lines(&mut self, path: &Path) -> Result<(), Failure> {
        let cannot =
            |e: std::io::Error| Failure::bad_input(format!("error: cannot read {}: {e}\n", path.display()));
        let reader: Box<dyn BufRead> = if path == Path::new("-") {
            Box::new(std::io::stdin().lock())
        } else {
            Box::new(std::io::BufReader::new(std::fs::File::open(path).map_err(cannot)?))
        };
        for (n, line) in reader.lines().enumerate() {
            let line = line.map_err(cannot)?;
            if !line.trim().is_empty() {
                self.run_line(&line, &format!("{}:{}", path.display(), n + 1))?;
            }
        }
        Ok(())
    }

    /// Runs the entry on one JSON array of arguments (`what` names it in errors) and prints
    /// the result.
    fn run_line(&mut self, json: &str, what: &str) -> Result<(), Failure> {
        let bad = |m: String| Failure::bad_input(format!("error: {what}: {m}\n"));
        let exe = self.program.executable();
        let items = match serde_json::from_str::<serde_json::Value>(json) {
            Ok(serde_json::Value::Array(items)) => items,
            Ok(_) => return Err(bad("expected a JSON array of arguments".to_string())),
            Err(e) if e.to_string().starts_with("recursion limit") => {
                return Err(bad(format!(
                    "JSON nested too deeply ({e}); write a List as a plain array [x, ...]"
                )))
            }
            Err(e) => return Err(bad(format!("malformed JSON: {e}"))),
        };
        if items.len() != self.free.len() {
            let names: Vec<String> =
                self.free.iter().map(|&i| format!("%{}", self.f.param_names[i])).collect();
            return Err(bad(format!(
                "`@{}` takes {} argument(s) here ({}), {} given",
                self.f.name,
                self.free.len(),
                names.join(", "),
                items.len()
            )));
        }
        let mut args: Vec<Option<Value>> = vec![None; self.f.param_types.len()];
        for (i, v) in &self.bound {
            args[*i] = Some(v.clone());
        }
        for (&i, j) in self.free.iter().zip(&items) {
            let v = relay::json::from_json(exe, &self.f.param_types[i], j)
                .map_err(|e| bad(format!("argument `%{}`: {e}", self.f.param_names[i])))?;
            args[i] = Some(v);
        }
        let result = self.program.invoke(&mut self.vm, &self.f.name, args.into_iter().flatten().collect())?;
        let printed = match self.format {
            Format::Json => relay::json::to_json(exe, &self.f.ret_type, &result),
            Format::Text => relay::text::to_text(exe, &self.f.ret_type, &result),
        };
        let printed = printed.map_err(|e| Failure {
            code: EXIT_TRAP,
            message: format!("error: cannot print the result: {e}\n"),
        })?;
        write_stdout(&(printed + "\n"))
    }
}
