//! What a host embedding the library can rely on when a program asks for too much: a tensor
//! over the limit or a run over the memory budget traps while the host's other threads go
//! on, a run that never ends stops when another thread cancels it, and a kernel of the
//! program's own making is as large as the program asks (only a loaded file's are bounded).

use relay::vm::{StopReason, Value, VmConfig};
use relay::{scalar, Error, Program};
use std::time::Duration;

/// 40 GB of zeros (at -O0, so that nothing folds it at compile time).
const HUGE: &str = "def @main() { zeros(shape=[100000, 100000]) }\n";
/// One fused kernel of 10^10 statements, far over what a loaded file's kernel may claim
/// ([`relay::vm::Limits::default`]) but the program's own honest size.
const LONG_KERNEL: &str = "def @main() -> float32 { sum(zeros(shape=[100000, 100000])) }\n";
/// `@main(n, x)` builds a list of `n` live tensors, each `x + 1` (4000 bytes).
const GROW: &str = r#"
def @grow(%n: int32, %x: Tensor[(1000), float32], %acc: List[Tensor[(1000), float32]]) -> List[Tensor[(1000), float32]] {
  if (%n == 0) { %acc } else { @grow(%n - 1, %x, Cons(add(%x, 1f), %acc)) }
}
def @main(%n: int32, %x: Tensor[(1000), float32]) -> int32 { @length(@grow(%n, %x, Nil)) }
"#;
/// Never returns for `n != 0`.
const FOREVER: &str = "def @main(%n: int32) -> int32 { if (%n == 0) { 0 } else { @main(%n) } }\n";
/// Counts `n` down to 0.
const COUNT: &str = "def @main(%n: int32) -> int32 { if (%n == 0) { 0 } else { @main(%n - 1) } }\n";

fn trap_message(r: Result<Value, Error>) -> String {
    match r {
        Err(Error::Trap(t)) => t.message,
        other => panic!("expected a trap, got {other:?}"),
    }
}

fn int(r: Result<Value, Error>) -> i64 {
    match r {
        Ok(Value::Scalar(s)) => s.as_i64(),
        other => panic!("expected a scalar, got {other:?}"),
    }
}

#[test]
fn a_tensor_over_the_limit_traps_while_other_threads_go_on() {
    let huge = Program::builder().source("huge.relay", HUGE).opt_level(0).build().unwrap();
    let count = Program::builder().source("count.relay", COUNT).build().unwrap();
    std::thread::scope(|s| {
        let worker = s.spawn(|| {
            let mut vm = count.vm();
            (0..20).all(|_| int(count.invoke(&mut vm, "main", vec![scalar(100_000i32)])) == 0)
        });
        let mut vm = huge.vm();
        let m = trap_message(huge.invoke(&mut vm, "main", vec![]));
        assert!(m.contains("needs 40000000000 bytes, over the limit"), "{m}");
        // The VM that trapped runs again.
        assert!(huge.invoke(&mut vm, "main", vec![]).is_err());
        assert!(worker.join().unwrap(), "the other thread's runs finish with their results");
    });
}

#[test]
fn live_tensors_over_the_memory_budget_trap() {
    let program = Program::builder().source("grow.relay", GROW).build().unwrap();
    let x = || relay::tensor(vec![1000], vec![0f32; 1000]).unwrap();
    let mut vm = program.vm_with(VmConfig { max_memory_bytes: 1 << 20, ..VmConfig::default() });
    // 100 tensors of 4000 bytes fit in 1 MiB; 1000 do not.
    assert_eq!(int(program.invoke(&mut vm, "main", vec![scalar(100i32), x()])), 100);
    let m = trap_message(program.invoke(&mut vm, "main", vec![scalar(1000i32), x()]));
    assert!(m.contains("would exceed the memory budget of 1048576 bytes"), "{m}");
    // Within budget again once those are gone.
    assert_eq!(int(program.invoke(&mut vm, "main", vec![scalar(100i32), x()])), 100);
    let mut unlimited = program.vm();
    assert_eq!(int(program.invoke(&mut unlimited, "main", vec![scalar(1000i32), x()])), 1000);
}

#[test]
fn another_thread_cancels_an_endless_run() {
    let program = Program::builder().source("forever.relay", FOREVER).build().unwrap();
    let mut vm = program.vm();
    let cancel = vm.cancel_handle().clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        cancel.cancel();
    });
    let m = trap_message(program.invoke(&mut vm, "main", vec![scalar(1i32)]));
    canceller.join().unwrap();
    assert_eq!(m, "cancelled");
    assert_eq!(vm.cancel_handle().stop_reason(), Some(StopReason::Cancelled));
}

#[test]
fn a_compiled_kernel_over_the_file_limits_runs_until_cancelled() {
    let program = Program::builder().source("long.relay", LONG_KERNEL).build().unwrap();
    let mut vm = program.vm();
    let cancel = vm.cancel_handle().clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        cancel.cancel();
    });
    let m = trap_message(program.invoke(&mut vm, "main", vec![]));
    canceller.join().unwrap();
    assert_eq!(m, "cancelled");
    // Saved and read back, the same kernel is a file's claim, and it is over the limit.
    let Err(err) = Program::load(&program.save()) else {
        panic!("a loaded kernel of 10^10 statements is refused")
    };
    assert!(err.to_string().contains("over the limit of 2147483648"), "{err}");
}
