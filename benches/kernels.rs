//! Fused JIT kernels of the example models on their own, through the VM (`InvokePacked` of one
//! kernel per call, so the figure includes the per-call cost):
//!
//! - `gemv/NxK`: `nn.bias_add(nn.dense(x, w), b)` with `x: [1, K]`, `w: [N, K]` — the matrix-vector
//!   products that dominate the Tree-LSTM (450×300 leaves, 450×150 internal nodes, 150×150
//!   forget gates) and the LSTM (512×128). Throughput is in floating-point operations
//!   (2·N·K per call), so criterion's `thrpt` line reads as FLOP/s.
//!
//! Run with `cargo bench --bench kernels`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use relay::{tensor, Program};
use std::hint::black_box;

fn data(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + seed * 131) % 256) as f32 / 128.0 - 1.0).collect()
}

fn bench_gemv(c: &mut Criterion) {
    let mut group = c.benchmark_group("gemv");
    for (n, k) in [(450, 300), (450, 150), (150, 150), (512, 128)] {
        let src = format!(
            "def @main(%x: Tensor[(1, {k}), float32], %w: Tensor[({n}, {k}), float32], %b: Tensor[({n}), float32]) {{
               nn.bias_add(nn.dense(%x, %w), %b)
             }}"
        );
        let program = Program::compile("gemv.relay", &src).unwrap_or_else(|e| panic!("{e}"));
        let args = vec![
            tensor(vec![1, k], data(k, 1)).unwrap_or_else(|e| panic!("{e}")),
            tensor(vec![n, k], data(n * k, 2)).unwrap_or_else(|e| panic!("{e}")),
            tensor(vec![n], data(n, 3)).unwrap_or_else(|e| panic!("{e}")),
        ];
        let mut vm = program.vm();
        group.throughput(Throughput::Elements(2 * (n * k) as u64));
        group.bench_function(format!("{n}x{k}"), |b| {
            b.iter(|| {
                black_box(program.invoke(&mut vm, "main", args.clone()).unwrap_or_else(|e| panic!("{e}")))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_gemv);
criterion_main!(benches);
