//! Interpreter speed on control flow (ARCHITECTURE.md §3, "VM"): a tail-recursive loop, a
//! non-tail recursion, and `@foldl` over a long list. Throughput is in loop iterations, calls
//! or list elements, so criterion's `thrpt` line gives the rate; ns per element is
//! `1000 / (Melem/s)`. Targets: < 30 ns per loop iteration, < 50 ns per call and return,
//! < 100 ns per `@foldl` element.
//!
//! Run with `cargo bench --bench vm -- --warm-up-time 1 --measurement-time 3`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use relay::vm::Value;
use relay::{scalar, Program};
use std::hint::black_box;

const SOURCE: &str = r#"
#[version = "0.0.5"]
def @count(%n: int32, %acc: int32) -> int32 {
  if (%n == 0) { %acc } else { @count(%n - 1, %acc + 1) }
}

def @depth(%n: int32) -> int32 {
  if (%n == 0) { 0 } else { 1 + @depth(%n - 1) }
}

def @fold_sum(%xs: List[int32]) -> int32 {
  @foldl(fn (%acc: int32, %x: int32) { %acc + %x }, 0, %xs)
}
"#;

/// Loop iterations, recursion depth, and list length per measured call.
const LOOP: i32 = 1_000_000;
const DEPTH: i32 = 100_000;
const LIST: i32 = 1_000_000;

fn program() -> Program {
    match Program::builder().source("bench.relay", SOURCE).build() {
        Ok(p) => p,
        Err(e) => panic!("the benchmark program does not compile:\n{e}"),
    }
}

fn run(program: &Program, vm: &mut relay::vm::Vm<'_>, func: &str, args: Vec<Value>) -> Value {
    match program.invoke(vm, func, args) {
        Ok(v) => v,
        Err(e) => panic!("{func}: {e}"),
    }
}

fn bench_vm(c: &mut Criterion) {
    let program = program();
    let mut vm = program.vm();
    let mut group = c.benchmark_group("vm");

    group.throughput(Throughput::Elements(LOOP as u64));
    group.bench_function("tail_loop_iteration", |b| {
        b.iter(|| run(&program, &mut vm, "count", vec![scalar(black_box(LOOP)), scalar(0i32)]))
    });

    group.throughput(Throughput::Elements(DEPTH as u64));
    group.bench_function("call_and_return", |b| {
        b.iter(|| run(&program, &mut vm, "depth", vec![scalar(black_box(DEPTH))]))
    });

    let cons = |fields| program.constructor("Cons", fields).unwrap_or_else(|e| panic!("{e}"));
    let mut list = program.constructor("Nil", vec![]).unwrap_or_else(|e| panic!("{e}"));
    for i in (0..LIST).rev() {
        list = cons(vec![scalar(i), list]);
    }
    group.throughput(Throughput::Elements(LIST as u64));
    group.bench_function("foldl_element", |b| {
        b.iter(|| run(&program, &mut vm, "fold_sum", vec![black_box(list.clone())]))
    });
    group.finish();
}

criterion_group!(benches, bench_vm);
criterion_main!(benches);
