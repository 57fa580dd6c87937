//! What only the CPU target does, against the kir interpreter: the native matrix product
//! (`gemm`) and its packed shared weights, the kernel cache, and the stop flag. What every
//! target does is tested once in `kernels.rs`.

mod builders;
mod common;

use builders::{dense_layer, elementwise};
use common::{args, assert_close, jit};
use relay_devices::{DType, Tensor};
use relay_jit::{JitError, KernelCache};
use relay_kir::{Expr, KernelBuilder, LoopKind};
use std::sync::atomic::{AtomicU8, Ordering};

/// The stop flag of calls nobody stops.
static NEVER: AtomicU8 = AtomicU8::new(0);

/// Weights passed by shared handle call after call are read packed once enough calls passed
/// them (`run_shared`), for one row and for a few; results stay those of the interpreter, and
/// a handle that is not the input's is ignored.
#[test]
fn shared_weights_are_read_packed_with_the_same_results() {
    for (rows, units, k_dim) in
        [(1, 450, 300), (1, 150, 150), (1, 5, 150), (1, 17, 3), (4, 450, 300), (7, 17, 3)]
    {
        let kernel = dense_layer(rows, units, k_dim, true, |v| v);
        let compiled = jit().compile(&kernel).unwrap();
        for seed in [1, 2, 3] {
            let (inputs, outputs) = args(&kernel, &[], seed);
            let refs: Vec<&Tensor> = inputs.iter().collect();
            let mut expected = outputs.clone();
            relay_kir::interp::run(&kernel, &refs, &mut expected, &[]).unwrap();
            let weights = std::sync::Arc::new(inputs[1].clone());
            // Each call with its own input vector, the weights always by the same handle; more
            // calls than the cache waits for before packing (24).
            for call in 0..30 {
                let (x_in, _) = args(&kernel, &[], seed * 10 + call);
                let ins = [&x_in[0], &*weights, &inputs[2]];
                let mut want = outputs.clone();
                relay_kir::interp::run(&kernel, &ins, &mut want, &[]).unwrap();
                let mut got = outputs.clone();
                compiled.run_shared(&ins, &[None, Some(&weights), None], &mut got, &[], &NEVER).unwrap();
                assert_close(&want, &got, 1e-4);
            }
            let avx512 = cfg!(target_arch = "x86_64") && std::is_x86_feature_detected!("avx512f");
            assert_eq!(compiled.packed_bytes() > 0, avx512, "packed after enough calls on AVX-512");
            // A handle that is not the input's is ignored.
            let stranger = std::sync::Arc::new(inputs[1].clone());
            let mut got = outputs.clone();
            compiled.run_shared(&refs, &[None, Some(&stranger), None], &mut got, &[], &NEVER).unwrap();
            assert_close(&expected, &got, 1e-4);
        }
    }
}

/// Threads sharing one kernel and one weight tensor: the calls before the weights are packed,
/// the one that packs them and those that read the packed copy all match the interpreter.
#[test]
fn threads_share_packed_weights() {
    let mut kb = KernelBuilder::new("dense");
    let x = kb.input("x", DType::F32, [1, 150]);
    let w = kb.input("w", DType::F32, [150, 150]);
    let out = kb.output("out", DType::F32, [1, 150]);
    kb.gemm(out, x, w, 1, 150, 150, true);
    let kernel = kb.finish().unwrap();
    let compiled = std::sync::Arc::new(jit().compile(&kernel).unwrap());
    let (inputs, outputs) = args(&kernel, &[], 11);
    let weights = std::sync::Arc::new(inputs[1].clone());
    let mut expected = outputs.clone();
    relay_kir::interp::run(&kernel, &[&inputs[0], &*weights], &mut expected, &[]).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (compiled, x, weights, outputs, expected) =
                (compiled.clone(), &inputs[0], weights.clone(), outputs.clone(), &expected);
            s.spawn(move || {
                for _ in 0..40 {
                    let mut out = outputs.clone();
                    compiled
                        .run_shared(&[x, &*weights], &[None, Some(&weights)], &mut out, &[], &NEVER)
                        .unwrap();
                    assert_close(expected, &out, 1e-4);
                }
            });
        }
    });
    let avx512 = cfg!(target_arch = "x86_64") && std::is_x86_feature_detected!("avx512f");
    assert_eq!(compiled.packed_bytes() > 0, avx512);
}

#[test]
fn cache_shares_structurally_equal_kernels() {
    let cache = KernelCache::new();
    let a = elementwise(LoopKind::Vectorize, |a, b, c| a * b + c);
    let mut b = a.clone();
    b.name = "renamed".into();
    b.buffers[0].name = "p".into();
    let ka = jit().compile_cached(&cache, &a).unwrap();
    let kb = jit().compile_cached(&cache, &b).unwrap();
    assert!(std::sync::Arc::ptr_eq(&ka, &kb));
    let c = elementwise(LoopKind::Vectorize, |a, b, c| a * b - c);
    let kc = jit().compile_cached(&cache, &c).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&ka, &kc));
    assert_eq!(cache.len(), 2);
}

#[test]
fn a_stop_flag_ends_a_long_outermost_loop() {
    // 2^31 outer iterations of 4 additions: minutes of work if nothing stops it.
    let mut b = KernelBuilder::new("endless");
    let out = b.output("out", DType::F32, [4]);
    b.for_(1i64 << 31, LoopKind::Serial, |k, _| {
        k.for_(4, LoopKind::Serial, |k, j| k.store(out, j.clone(), Expr::load(out, j) + Expr::f32(1.0)))
    });
    let compiled = jit().compile(&b.finish().unwrap()).unwrap();
    let mut outs = vec![Tensor::zeros(DType::F32, vec![4]).unwrap()];
    // Set before the call: not even one outer iteration runs.
    let stop = AtomicU8::new(1);
    assert_eq!(compiled.run_shared(&[], &[], &mut outs, &[], &stop), Err(JitError::Stopped));
    assert_eq!(outs[0].as_slice::<f32>().unwrap(), &[0.0; 4]);
    // Set by another thread while the kernel runs.
    stop.store(0, Ordering::Relaxed);
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            stop.store(1, Ordering::Relaxed);
        });
        assert_eq!(compiled.run_shared(&[], &[], &mut outs, &[], &stop), Err(JitError::Stopped));
    });
    // Whole outer iterations only: all four elements saw the same number of additions.
    let done = outs[0].as_slice::<f32>().unwrap();
    assert!(done[0] > 0.0 && done.iter().all(|&x| x == done[0]), "{done:?}");
}

/// A product of `m` rows into a temp of `rows` wide rows per row (`gap` unused columns after
/// each `width`, as a window product leaves them), then the epilogue into rows `1..=rows` of
/// an `[m, rows + 1, width]` output: `act(g + bias (+ residual))`, the bias per product row
/// or per column. With `apart`, a store to another temp between the product and the nest
/// keeps the nest a loop nest (the same product, the epilogue at Cranelift's four lanes).
struct Epilogue {
    m: i64,
    rows: i64,
    width: i64,
    gap: i64,
    k: i64,
    trans_b: bool,
    bias_per_row: bool,
    residual: bool,
    act: fn(Expr) -> Expr,
}

impl Epilogue {
    fn kernel(&self, apart: bool) -> relay_kir::Kernel {
        let Epilogue { m, rows, width, gap, k, trans_b, bias_per_row, residual, act } = *self;
        let n = rows * (width + gap);
        let mut kb = KernelBuilder::new("epilogue");
        let x = kb.input("x", DType::F32, [m, k]);
        let w = kb.input("w", DType::F32, if trans_b { [n, k] } else { [k, n] });
        let bias = kb.input("bias", DType::F32, [if bias_per_row { m } else { rows * width }]);
        let res = kb.input("res", DType::F32, [m, rows + 1, width]);
        let out = kb.output("out", DType::F32, [m, rows + 1, width]);
        let g = kb.temp("g", DType::F32, [m * n]);
        let other = kb.temp("other", DType::F32, [1]);
        let anchor = kb.local("anchor", DType::F32);
        kb.gemm(g, x, w, m, n, k, trans_b);
        if apart {
            kb.store(other, 0i64, Expr::f32(1.0));
        }
        kb.for_(m, LoopKind::Serial, |kb, i| {
            kb.for_(rows, LoopKind::Serial, |kb, r| {
                kb.for_(width, LoopKind::Vectorize, |kb, c| {
                    let at_g = i.clone() * n + r.clone() * (width + gap) + c.clone();
                    kb.assign(anchor, Expr::load(g, at_g));
                    let at = (i.clone() * (rows + 1) + (r.clone() + 1)) * width + c.clone();
                    let b = if bias_per_row { i.clone() } else { r * width + c };
                    let mut v = Expr::local(anchor) + Expr::load(bias, b);
                    if residual {
                        v = v + Expr::load(res, at.clone());
                    }
                    kb.store(out, at, act(v))
                })
            })
        });
        kb.finish().unwrap()
    }
}

/// The native epilogue (`blas/epilogue.rs`) gives the bits of the loop nest it replaces, on
/// every product path (GEMV, GEMV rows, the window product, the `gemm` crate), for row and
/// column biases, with and without a residual, for identity, ReLU and clips in all three forms.
#[test]
fn native_epilogues_give_the_loops_bits() {
    let acts: [fn(Expr) -> Expr; 5] = [
        |v| v,
        builders::relu,
        |v| {
            let low = Expr::select(v.clone().ge(Expr::f32(0.0)), v, Expr::f32(0.0));
            Expr::select(low.clone().le(Expr::f32(0.5)), low, Expr::f32(0.5))
        },
        |v| v.max(Expr::f32(-0.25)).min(Expr::f32(0.25)),
        // Relay's `clip`.
        |v| {
            let high = Expr::select(v.clone().gt(Expr::f32(0.5)), Expr::f32(0.5), v.clone());
            Expr::select(v.lt(Expr::f32(-0.5)), Expr::f32(-0.5), high)
        },
    ];
    let avx512 = cfg!(target_arch = "x86_64") && std::is_x86_feature_detected!("avx512f");
    let shapes =
        [(1, 1, 5, 0, 7), (1, 2, 37, 3, 16), (3, 3, 20, 0, 9), (20, 2, 33, 1, 40), (40, 4, 16, 2, 8)];
    for (s, &(m, rows, width, gap, k)) in shapes.iter().enumerate() {
        for (a, &act) in acts.iter().enumerate() {
            for trans_b in [true, false] {
                let bias_per_row = (s + a) % 2 == 0;
                let residual = a % 2 == 1 || s == 2;
                let e = Epilogue { m, rows, width, gap, k, trans_b, bias_per_row, residual, act };
                let (native, looped) = (e.kernel(false), e.kernel(true));
                let (inputs, outputs) = args(&native, &[], 7 + s as u64);
                let refs: Vec<&Tensor> = inputs.iter().collect();
                let run = |k: &relay_kir::Kernel| {
                    let compiled = jit().compile(k).unwrap();
                    let mut out = outputs.clone();
                    compiled.run_shared(&refs, &[None; 4], &mut out, &[], &NEVER).unwrap();
                    (out, compiled.stats().vectorized_loops)
                };
                let ((got, native_loops), (want, loops)) = (run(&native), run(&looped));
                let what = format!("{m}x{rows}x{width}+{gap} k={k} trans_b={trans_b} act {a}");
                let bits = |t: &[Tensor]| {
                    t[0].as_slice::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                };
                assert_eq!(bits(&got), bits(&want), "{what}");
                assert_eq!(native_loops + usize::from(avx512), loops, "{what}: the nest ran natively");
                let mut expected = outputs.clone();
                relay_kir::interp::run(&native, &refs, &mut expected, &[]).unwrap();
                assert_close(&expected, &got, 1e-4);
            }
        }
    }
}
