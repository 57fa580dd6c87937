//! Which program a command works on and how it is compiled: the options `run`, `bench`,
//! `profile`, `compile`, `disasm` and `dump` share, so that each of them builds exactly the
//! program `run` runs (the same weights binding, the same shapes specialised).

use crate::job::Weights;
use crate::{import, Failure};
use clap::Args;
use relay::{BoundWeights, Program};
use std::path::PathBuf;

/// The program: its file, entry function, weights and optimisation level.
#[derive(Args, Debug)]
pub(crate) struct ProgramArgs {
    /// A `.relay` file, an executable written by `relay-vm compile`, or an ONNX model
    /// (`.onnx`, imported in memory with its weights).
    pub(crate) file: PathBuf,
    /// The entry function.
    #[arg(long, default_value = "main")]
    pub(crate) entry: String,
    /// A safetensors file whose tensors bind the parameters of the same names: a tensor `N`
    /// binds `%N`, else `%N` with every character outside [A-Za-z0-9_] made `_` (PyTorch's
    /// `fc1.weight` binds `%fc1_weight`). float16/bfloat16 and integer tensors convert to the
    /// parameter's dtype where every element converts exactly. Their shapes specialise the
    /// entry's `?` dimensions before compiling. Tensors that bind no parameter are ignored
    /// with a warning. The file is memory-mapped and tensors are read from it in place: it
    /// must not change while the program runs.
    #[arg(long)]
    pub(crate) params: Option<PathBuf>,
    /// Make a --params tensor that binds no parameter an error instead of a warning.
    #[arg(long, requires = "params")]
    pub(crate) strict_params: bool,
    /// Optimisation level for a `.relay` file, 0 to 3: 0 runs each operator on its reference
    /// kernel, 1 and above fuse operators into JIT-compiled kernels (`relay-vm opt --help`
    /// says what each level's pipeline adds).
    #[arg(short = 'O', long, default_value_t = relay::DEFAULT_OPT_LEVEL, value_parser = crate::opt_level_parser())]
    pub(crate) opt_level: u8,
    /// Compile a `.relay` file without the memory plan (every tensor from the VM's pool).
    #[arg(long)]
    pub(crate) no_memory_plan: bool,
    /// Make the --params weights constants the compiler sees (at -O2 and above; TVM's
    /// `bind_params_by_name`) instead of parameters bound at run time: what depends on them
    /// alone is computed while compiling — the Tree-LSTM's leaves become two table lookups,
    /// halving its time per sentence — at the price of compile time (1.5 s for the
    /// Tree-LSTM's tables) and memory (its peak RSS 36 → 168 MB), so it pays for long runs.
    /// An ONNX model's weights always stay parameters (binding them gained nothing and cost
    /// memory). `compile` always keeps them parameters: its executable holds no weights, so
    /// it runs with any weights file, mapped without copying.
    #[arg(long)]
    pub(crate) bind_params: bool,
}

/// A program's source text and weights, as read from the command line.
pub(crate) struct Sources {
    /// For an ONNX model, the imported Relay text (compiled instead of the file).
    pub(crate) onnx_text: Option<String>,
    /// The ONNX model's weights, or the `--params` file.
    pub(crate) weights: Option<Weights>,
}

impl ProgramArgs {
    /// Reads what the program is compiled from besides its file: for an ONNX model the
    /// imported text and weights, otherwise the `--params` weights, if given.
    pub(crate) fn sources(&self) -> Result<Sources, Failure> {
        if import::is_onnx(&self.file) {
            if self.params.is_some() {
                return Err(Failure::bad_input("error: --params: an ONNX model brings its own weights\n"));
            }
            let imported = import::read_onnx(&self.file)?;
            let weights = Weights { origin: self.file.display().to_string(), bytes: imported.weights.into() };
            return Ok(Sources { onnx_text: Some(imported.text), weights: Some(weights) });
        }
        let weights = match &self.params {
            Some(p) => Some(Weights {
                origin: p.display().to_string(),
                bytes: relay::params::map_file(p)
                    .map_err(|e| Failure::bad_input(format!("error: cannot read {}: {e}\n", p.display())))?,
            }),
            None => None,
        };
        Ok(Sources { onnx_text: None, weights })
    }

    /// Compiles (or loads) the program for `device` from `sources`, its weights bound and
    /// their shapes specialised; reports weights that bind nothing ([`check_unused`]).
    pub(crate) fn build(
        &self,
        sources: Sources,
        device: relay::Device,
        prelude: relay::Prelude,
    ) -> Result<Program, Failure> {
        // An ONNX model's own weights stay parameters: binding them changed no kernel of the
        // vision models at -O2 and cost compile time and memory (measured: VGG-16's peak RSS
        // 2.2 → 5.3 GB, ResNet-18's compile 45 → 1040 ms; `benches/pytorch/results.md`).
        let bind = self.bind_params && sources.onnx_text.is_none();
        self.build_binding(sources, device, prelude, bind)
    }

    /// [`ProgramArgs::build`], the weights bound as constants when `bind_params`
    /// ([`relay::ProgramBuilder::bind_params`]).
    fn build_binding(
        &self,
        sources: Sources,
        device: relay::Device,
        prelude: relay::Prelude,
        bind_params: bool,
    ) -> Result<Program, Failure> {
        let builder = Program::builder()
            .bind_params(bind_params)
            .opt_level(self.opt_level)
            .memory_plan(!self.no_memory_plan)
            .device(device)
            .entry(&self.entry)
            .prelude(prelude);
        // Taken by value: the weights (megabytes) move into the builder instead of being copied.
        let builder = match sources.onnx_text {
            Some(text) => builder.source(self.file.display().to_string(), text),
            None => builder.file(&self.file),
        };
        let builder = match sources.weights {
            Some(w) => builder.params_bytes(w.origin, w.bytes),
            None => builder,
        };
        let program = builder.build()?;
        if let Some(w) = program.bound_weights() {
            check_unused(w, program.entry(), self.strict_params)?;
        }
        Ok(program)
    }

    /// [`ProgramArgs::sources`] then [`ProgramArgs::build`].
    pub(crate) fn load(&self, device: relay::Device, prelude: relay::Prelude) -> Result<Program, Failure> {
        self.build(self.sources()?, device, prelude)
    }

    /// [`ProgramArgs::load`] with the weights kept parameters, for `compile`: an executable
    /// holds no weights, so it stays small and `run --params` maps them without copying.
    pub(crate) fn load_unbound(
        &self,
        device: relay::Device,
        prelude: relay::Prelude,
    ) -> Result<Program, Failure> {
        self.build_binding(self.sources()?, device, prelude, false)
    }
}

/// Weights file tensors that bind no parameter of `@entry`: an error with `strict`, else a
/// warning on stderr.
pub(crate) fn check_unused(weights: &BoundWeights, entry: &str, strict: bool) -> Result<(), Failure> {
    let unused = &weights.bound.unused;
    if unused.is_empty() {
        return Ok(());
    }
    let what = format!(
        "{}: {} tensor(s) bind no parameter of `@{entry}`: {}",
        weights.origin,
        unused.len(),
        unused.join(", ")
    );
    if strict {
        return Err(Failure::bad_input(format!("error: {what}\n")));
    }
    eprintln!("warning: {what} (ignored; --strict-params makes this an error)");
    Ok(())
}
