//! `relay-vm opt`: runs a pass pipeline (a level's default, or named passes) on a Relay file
//! and prints the transformed module as Relay text; optionally the module after each pass,
//! and each pass's time and node counts; or, with `--dot`, the transformed module's
//! dataflow as Graphviz DOT (also `relay-vm dump --dot`).

use crate::{read_file, Failure};
use relay::compiler::dot::to_dot;
use relay::compiler::ir::{FileId, Module};
use relay::compiler::pass::{self, node_count, Instrument, PassContext, PassInfo};
use relay::compiler::syntax::printer::print_module;
use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

/// What `opt` runs and shows.
pub(crate) struct OptArgs<'a> {
    /// The `.relay` file.
    pub file: &'a Path,
    /// Weights whose shapes specialise `@main`'s `?` dimensions (as `run --params`).
    pub params: Option<&'a Path>,
    /// The level whose default pipeline runs when `passes` is empty.
    pub opt_level: u8,
    /// Passes to run instead of a level's pipeline (their required passes run first).
    pub passes: &'a [String],
    /// Print the module after every pass.
    pub print_after_all: bool,
    /// Print the module after the passes of this name.
    pub print_after: Option<&'a str>,
    /// Report each pass's time and node counts.
    pub time_passes: bool,
    /// Print Graphviz DOT of the transformed module instead of its text.
    pub dot: bool,
}

/// Runs `opt` and returns what to print on stdout (the module) and stderr (the reports).
pub(crate) fn run(args: &OptArgs) -> Result<(String, String), Failure> {
    if let Some(name) = args.print_after.filter(|n| pass::registry::lookup(n).is_none()) {
        return Err(Failure::bad_input(format!("error: --print-after: unknown pass `{name}`\n")));
    }
    let bytes = read_file(args.file)?;
    let name = args.file.display().to_string();
    let text =
        String::from_utf8(bytes).map_err(|_| Failure::bad_input(format!("error: {name} is not UTF-8\n")))?;
    transform(&name, &text, args)
}

/// Runs `opt` on the Relay text `text` (named `name` in diagnostics); returns what to print
/// on stdout and stderr as [`run`] does.
pub(crate) fn transform(name: &str, text: &str, args: &OptArgs) -> Result<(String, String), Failure> {
    let (mut module, file) = relay::parse(name, text).map_err(relay::Error::Compile)?;
    if let Some(p) = args.params {
        let bound = relay::params::bound_shapes(&read_file(p)?)
            .map_err(|e| Failure::bad_input(format!("error: {}: {e}\n", p.display())))?;
        // A missing @main is not this command's concern: the passes run all the same.
        let _ = pass::specialize_params(&mut module, "main", &bound);
    }
    let passes = if args.passes.is_empty() {
        pass::pipeline(args.opt_level)
    } else {
        let names: Vec<&str> = args.passes.iter().map(String::as_str).collect();
        pass::resolve(&names).map_err(|e| Failure::bad_input(format!("error: {e}\n")))?
    };
    let ops = relay::stdlib::op_registry();
    let cx = PassContext { ops: &ops, fuse: Default::default(), inline: Default::default(), entries: &[] };
    let mut report = Report { args, file, before: node_count(&module), log: String::new() };
    let types = match pass::run_passes(&mut module, &passes, &cx, &mut report) {
        Ok(types) => types,
        Err(error) => {
            let failure = relay::CompileFailure { error, sources: module.sources };
            return Err(relay::Error::Compile(failure).into());
        }
    };
    let out = if args.dot { to_dot(&module, &types, Some(file)) } else { print_module(&module, Some(file)) };
    Ok((out, report.log))
}

/// The `Instrument` that writes `--print-after`, `--print-after-all` and `--time-passes`.
struct Report<'a> {
    args: &'a OptArgs<'a>,
    file: FileId,
    /// Nodes before the pass now running.
    before: usize,
    log: String,
}

impl Instrument for Report<'_> {
    fn after(&mut self, pass: &PassInfo, module: &Module, elapsed: Duration, inferred: Option<Duration>) {
        let after = node_count(module);
        if self.args.time_passes {
            let ms = elapsed.as_secs_f64() * 1e3;
            let infer = match inferred {
                Some(t) => format!("{:>9.3} ms", t.as_secs_f64() * 1e3),
                None => format!("{:>12}", "-"),
            };
            let _ = writeln!(
                self.log,
                "{:<24} {ms:>9.3} ms  infer {infer}  nodes {:>7} -> {:>7}",
                pass.name, self.before, after
            );
        }
        if self.args.print_after_all || self.args.print_after == Some(pass.name) {
            let _ = write!(self.log, "// after {}\n{}", pass.name, print_module(module, Some(self.file)));
        }
        self.before = after;
    }
}
