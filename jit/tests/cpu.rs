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
