//! Sentiment classification of Stanford Sentiment Treebank trees with the Tree-LSTM example,
//! embedding the VM through the library API: compile the model, bind its weights by name,
//! turn each PTB tree into a Relay `Tree[int32]` value and run it.
//!
//! ```text
//! cargo run --release --example sst_sentiment -- examples/treelstm/data/sst-test.txt [MODEL_DIR]
//! ```
//!
//! `MODEL_DIR` (default `examples/treelstm`) holds `treelstm.relay`, `weights.safetensors`
//! and `vocab.txt`. Prints the root accuracy and the speed of conversion plus inference.

// The treebank reader is the example's, not the library's; each user takes part of it.
#[allow(dead_code)]
#[path = "treelstm/sst.rs"]
mod sst;

use relay::Program;
use sst::{parse_trees, Vocab};
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let (Some(trees_path), dir, None) = (args.next(), args.next(), args.next()) else {
        return Err("usage: sst_sentiment TREES.txt [MODEL_DIR]".into());
    };
    let dir = dir.unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/treelstm"));
    let read = |path: &Path| std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()));
    let read_text =
        |path: &Path| String::from_utf8(read(path)?).map_err(|e| format!("{}: {e}", path.display()));

    let program =
        Program::builder().source("treelstm.relay", read_text(&dir.join("treelstm.relay"))?).build()?;
    let main = program.function("main")?;
    // `@main(weights..., %tree)`: the file binds every parameter but the tree, in order.
    let weights = relay::params::bind_params(main, &read(&dir.join("weights.safetensors"))?)?.values;
    let vocab = Vocab::parse(&read_text(&dir.join("vocab.txt"))?).map_err(|e| format!("vocab.txt: {e}"))?;
    let trees =
        parse_trees(&read_text(&trees_path)?).map_err(|e| format!("{}: {e}", trees_path.display()))?;

    let mut vm = program.vm();
    let (mut correct, start) = (0, Instant::now());
    for tree in &trees {
        let mut args: Vec<_> = weights.iter().map(|(_, w)| w.clone()).collect();
        args.push(tree.to_value(&program, |word| vocab.id(word))?);
        let logits = program.invoke(&mut vm, "main", args)?;
        // The predicted class is the largest of the (1, 5) logits.
        correct += usize::from(relay::batch::argmax(&logits) == Some(usize::from(tree.root().label)));
    }
    let seconds = start.elapsed().as_secs_f64();
    let n = trees.len();
    println!("accuracy: {correct}/{n} = {:.2}%", 100.0 * correct as f64 / n.max(1) as f64);
    println!(
        "{:.1} sentences/s ({:.3} ms each, one thread)",
        n as f64 / seconds,
        1e3 * seconds / n.max(1) as f64
    );
    Ok(())
}
