//! Fused JIT kernels of the example models on their own, through the VM (`InvokePacked` of one
//! kernel per call, so the figure includes the per-call cost):
//!
//! - `gemv/NxK`: `nn.bias_add(nn.dense(x, w), b)` with `x: [1, K]`, `w: [N, K]` — the matrix-vector
//!   products that dominate the Tree-LSTM (450×300 leaves, 450×150 internal nodes, 150×150
//!   forget gates) and the LSTM (512×128). Throughput is in floating-point operations
//!   (2·N·K per call), so criterion's `thrpt` line reads as FLOP/s.
//! - `gemm/MxNxK`: the same layer on `M` input rows (`x: [M, K]`), a matrix product.
//! - `conv2d/CxHxW-O`: `nn.relu(nn.bias_add(nn.conv2d(x, w, padding=[1, 1]), b))`, 3×3 windows,
//!   one image of `C` channels to `O` (the convnet example's layers), as im2col and a matrix
//!   product; 2·O·C·9·H·W FLOP per call.
//!
//! Run with `cargo bench --bench kernels`.

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use relay::vm::Value;
use relay::{tensor, Program};
use std::hint::black_box;

fn data(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + seed * 131) % 256) as f32 / 128.0 - 1.0).collect()
}

/// Times `src`'s `@main` on `args`, counting `flops` per call.
fn bench_layer(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: String,
    src: &str,
    args: Vec<Value>,
    flops: usize,
) {
    let program = Program::builder().source("layer.relay", src).build().unwrap_or_else(|e| panic!("{e}"));
    let mut vm = program.vm();
    group.throughput(Throughput::Elements(flops as u64));
    group.bench_function(name, |b| {
        b.iter(|| black_box(program.invoke(&mut vm, "main", args.clone()).unwrap_or_else(|e| panic!("{e}"))))
    });
}

fn arg(shape: Vec<usize>, seed: usize) -> Value {
    let n = shape.iter().product();
    tensor(shape, data(n, seed)).unwrap_or_else(|e| panic!("{e}"))
}

fn bench_products(c: &mut Criterion) {
    for (group_name, shapes) in [
        ("gemv", &[(1, 450, 300), (1, 450, 150), (1, 150, 150), (1, 512, 128)][..]),
        (
            "gemm",
            &[(4, 450, 300), (8, 450, 300), (19, 450, 300), (31, 450, 300), (32, 450, 300), (64, 256, 256)][..],
        ),
    ] {
        let mut group = c.benchmark_group(group_name);
        for &(m, n, k) in shapes {
            let src = format!(
                "def @main(%x: Tensor[({m}, {k}), float32], %w: Tensor[({n}, {k}), float32], %b: Tensor[({n}), float32]) {{
                   nn.bias_add(nn.dense(%x, %w), %b)
                 }}"
            );
            let args = vec![arg(vec![m, k], 1), arg(vec![n, k], 2), arg(vec![n], 3)];
            let name = if m == 1 { format!("{n}x{k}") } else { format!("{m}x{n}x{k}") };
            bench_layer(&mut group, name, &src, args, 2 * m * n * k);
        }
        group.finish();
    }
}

fn bench_conv2d(c: &mut Criterion) {
    let mut group = c.benchmark_group("conv2d");
    for (ch, hw, out) in [(3, 32, 16), (16, 16, 32), (32, 8, 64)] {
        let src = format!(
            "def @main(%x: Tensor[(1, {ch}, {hw}, {hw}), float32], %w: Tensor[({out}, {ch}, 3, 3), float32], %b: Tensor[({out}), float32]) {{
               nn.relu(nn.bias_add(nn.conv2d(%x, %w, padding=[1, 1]), %b))
             }}"
        );
        let args = vec![arg(vec![1, ch, hw, hw], 1), arg(vec![out, ch, 3, 3], 2), arg(vec![out], 3)];
        bench_layer(&mut group, format!("{ch}x{hw}x{hw}-{out}"), &src, args, 2 * out * ch * 9 * hw * hw);
    }
    group.finish();
}

criterion_group!(benches, bench_products, bench_conv2d);
criterion_main!(benches);
