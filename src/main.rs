//! The `relay-vm` command-line tool.

use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit code for a program that does not compile (parse, name or type errors).
const EXIT_COMPILE_ERROR: u8 = 1;
/// Exit code for a bad command line or an unreadable input file.
const EXIT_BAD_INPUT: u8 = 3;

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
