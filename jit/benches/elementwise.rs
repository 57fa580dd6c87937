//! Fused elementwise kernels from the JIT against hand-written Rust loops over 1M floats,
//! and the compile time of a kernel.
//!
//! `cargo bench -p relay-jit --bench elementwise`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use relay_devices::{DType, Tensor};
use relay_jit::Jit;
use relay_kir::{Expr, Kernel, LoopKind};
use std::hint::black_box;

// The kernels the tests check are the kernels measured: written once, in the tests' builders.
#[path = "../tests/builders/mod.rs"]
mod builders;

const N: usize = 1 << 20;

/// `y[i] = f(a[i], b[i], c[i])` over `n` elements in a vectorised loop.
fn fused(f: impl Fn(Expr, Expr, Expr) -> Expr) -> Kernel {
    builders::elementwise(LoopKind::Vectorize, f)
}

fn data(seed: u32) -> Vec<f32> {
    (0..N as u32)
        .map(|i| {
            ((i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32 / (1 << 24) as f32) * 8.0 - 4.0
        })
        .collect()
}

fn elementwise(c: &mut Criterion) {
    let jit = Jit::new().expect("host supported");
    let (a, b, cc) = (data(1), data(2), data(3));
    let tensors = [&a, &b, &cc].map(|v| Tensor::from_vec(vec![N], v.clone()).expect("shape"));
    let inputs: Vec<&Tensor> = tensors.iter().collect();
    let mut group = c.benchmark_group("elementwise_1M");
    group.throughput(Throughput::Elements(N as u64));

    type RustLoop = fn(&[f32], &[f32], &[f32], &mut [f32]);
    let cases: [(&str, Kernel, RustLoop); 2] = [
        ("sigmoid(a*b+c)", fused(|a, b, c| (a * b + c).sigmoid()), |a, b, c, y| {
            for i in 0..y.len() {
                y[i] = 1.0 / (1.0 + (-(a[i] * b[i] + c[i])).exp());
            }
        }),
        ("relu(a*b+c)", fused(|a, b, c| (a * b + c).max(Expr::f32(0.0))), |a, b, c, y| {
            for i in 0..y.len() {
                let v = a[i] * b[i] + c[i];
                y[i] = if v > 0.0 { v } else { 0.0 };
            }
        }),
    ];
    for (name, kernel, rust) in cases {
        let compiled = jit.compile(&kernel).expect("compiles");
        let mut out = [Tensor::zeros(DType::F32, vec![N]).expect("alloc")];
        group.bench_function(BenchmarkId::new("jit", name), |bench| {
            bench.iter(|| compiled.run(black_box(&inputs), &mut out, &[N as i64]).expect("runs"))
        });
        let mut y = vec![0f32; N];
        group.bench_function(BenchmarkId::new("rust", name), |bench| {
            bench.iter(|| rust(black_box(&a), black_box(&b), black_box(&cc), &mut y))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("compile");
    let compile_cases = [
        ("a*b+c", fused(|a, b, c| a * b + c)),
        ("sigmoid(a*b+c)", fused(|a, b, c| (a * b + c).sigmoid())),
        ("softmax", builders::softmax(64)),
    ];
    for (name, kernel) in compile_cases {
        group.bench_function(name, |bench| bench.iter(|| jit.compile(black_box(&kernel)).expect("compiles")));
    }
    group.finish();
}

criterion_group!(benches, elementwise);
criterion_main!(benches);
