//! Converts Stanford Sentiment Treebank trees into the Tree-LSTM example's `relay-vm run
//! --input` file: one `{"args": [TREE], "label": ROOT_LABEL}` line per tree.
//!
//! ```text
//! cargo run --example sst_to_jsonl -- trees.txt vocab.txt > out.jsonl
//! ```
//!
//! `trees.txt` holds PTB-bracketed trees, one a line (SST's `train.txt`, `dev.txt`,
//! `test.txt`); `vocab.txt` one word a line, the line number being the word id and line 0 the
//! unknown token (`examples/treelstm/vocab.txt`). See `examples/treelstm/sst.rs` for the tree encoding.

// The treebank reader is the example's, not the library's; each user takes part of it.
#[allow(dead_code)]
#[path = "treelstm/sst.rs"]
mod sst;

use sst::{jsonl_line, parse_trees, Vocab};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [trees_path, vocab_path] = args.as_slice() else {
        return Err("usage: sst_to_jsonl TREES.txt VOCAB.txt > OUT.jsonl".to_string());
    };
    let read = |path: &str| std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"));
    let trees = parse_trees(&read(trees_path)?).map_err(|e| format!("{trees_path}: {e}"))?;
    let vocab = Vocab::parse(&read(vocab_path)?).map_err(|e| format!("{vocab_path}: {e}"))?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for tree in &trees {
        writeln!(out, "{}", jsonl_line(tree, &vocab)).map_err(|e| format!("cannot write: {e}"))?;
    }
    out.flush().map_err(|e| format!("cannot write: {e}"))
}
