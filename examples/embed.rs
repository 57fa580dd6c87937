//! Embedding the VM in a host program: compile Relay source once, build argument values in
//! Rust, run the program on several threads (one VM each, the program shared), save the
//! executable and load it back, and handle a trap as a value.
//!
//! Run with `cargo run --example embed`.

use relay::vm::Value;
use relay::{scalar, tensor, Error, Program};
use std::sync::Arc;

const SOURCE: &str = r#"
#[version = "0.0.5"]
// Scales every vector of a list by `k` and sums them.
def @main(%xs: List[Tensor[(3), float32]], %k: float32) -> Tensor[(3), float32] {
  let %scaled = @map(fn (%x: Tensor[(3), float32]) { multiply(%x, %k) }, %xs);
  @foldl(fn (%a: Tensor[(3), float32], %b: Tensor[(3), float32]) { add(%a, %b) },
         zeros(shape=[3], dtype="float32"), %scaled)
}

def @checked_div(%a: int32, %b: int32) -> int32 {
  %a / %b
}
"#;

/// A `List` of the given values, built with the program's own constructors.
fn list(program: &Program, items: Vec<Value>) -> Result<Value, Error> {
    let mut xs = program.constructor("Nil", vec![])?;
    for x in items.into_iter().rev() {
        xs = program.constructor("Cons", vec![x, xs])?;
    }
    Ok(xs)
}

/// Prints `v` as `relay-vm run --format text` would, using the function's result type.
fn show(program: &Program, func: &str, v: &Value) -> Result<String, Error> {
    let f = program.function(func)?;
    relay::text::to_text(program.executable(), &f.ret_type, v).map_err(Error::Input)
}

fn main() -> Result<(), Error> {
    let program = Arc::new(Program::builder().source("embedded.relay", SOURCE).build()?);

    // One program, one VM per thread.
    let workers: Vec<_> = (1..=3)
        .map(|k| {
            let program = Arc::clone(&program);
            std::thread::spawn(move || -> Result<String, Error> {
                let vectors =
                    vec![tensor(vec![3], vec![1f32, 2.0, 3.0])?, tensor(vec![3], vec![10f32, 20.0, 30.0])?];
                let args = vec![list(&program, vectors)?, scalar(k as f32)];
                let mut vm = program.vm();
                let result = program.invoke(&mut vm, "main", args)?;
                Ok(format!("k = {k}: {}", show(&program, "main", &result)?))
            })
        })
        .collect();
    for w in workers {
        match w.join() {
            Ok(line) => println!("{}", line?),
            Err(_) => return Err(Error::Input("a worker thread panicked".to_string())),
        }
    }

    // The executable file round-trips; the loaded program runs the same way.
    let bytes = program.save();
    let loaded = Program::load(&bytes)?;
    let mut vm = loaded.vm();
    let q = loaded.invoke(&mut vm, "checked_div", vec![scalar(7i32), scalar(2i32)])?;
    println!("executable: {} bytes; checked_div(7, 2) = {}", bytes.len(), show(&loaded, "checked_div", &q)?);

    // A trap is an error value: the VM stays usable afterwards.
    match loaded.invoke(&mut vm, "checked_div", vec![scalar(1i32), scalar(0i32)]) {
        Err(Error::Trap(trap)) => {
            // The call stack's first frame is where the fault is.
            let at = trap.stack.first().map_or("", |frame| frame.function.as_str());
            println!("checked_div(1, 0) trapped in `{at}`: {}", trap.message)
        }
        other => println!("checked_div(1, 0) unexpectedly gave {other:?}"),
    }
    // So is a wrongly typed argument, caught before the VM runs.
    if let Err(e) = loaded.invoke(&mut vm, "checked_div", vec![scalar(1f32), scalar(0i32)]) {
        println!("checked_div(1f, 0): {e}");
    }
    Ok(())
}
