//! Helpers shared by the JIT tests: one `Jit` per process, deterministic random tensors,
//! the targets a kernel compiles for ([`target`]), and running a kernel through both the
//! interpreter and a target.

#![allow(dead_code, unused_imports)] // each test binary uses a different subset

pub mod target;
pub use target::{check, check_on, run_both, run_both_on, Compiled, Target};

use relay_devices::{DType, Scalar, Tensor};
use relay_jit::Jit;
use relay_kir::{buffer_shape, BufferRole, Kernel};
use std::sync::OnceLock;

pub fn jit() -> &'static Jit {
    static JIT: OnceLock<Jit> = OnceLock::new();
    JIT.get_or_init(|| Jit::new().expect("host supported"))
}

/// A xorshift generator: reproducible data without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `[lo, hi)`.
    pub fn f32(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }

    /// Uniform in `lo..=hi`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
}

/// A tensor of `dtype` and `shape` with random elements (floats in [-2, 2), ints in -50..=50,
/// unsigned in 0..=100).
pub fn random(rng: &mut Rng, dtype: DType, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let shape = shape.to_vec();
    match dtype {
        DType::F32 => Tensor::from_vec(shape, (0..n).map(|_| rng.f32(-2.0, 2.0)).collect()).unwrap(),
        DType::F64 => {
            Tensor::from_vec(shape, (0..n).map(|_| f64::from(rng.f32(-2.0, 2.0))).collect()).unwrap()
        }
        DType::I32 => Tensor::from_vec(shape, (0..n).map(|_| rng.int(-50, 50) as i32).collect()).unwrap(),
        DType::I64 => Tensor::from_vec(shape, (0..n).map(|_| rng.int(-50, 50)).collect()).unwrap(),
        DType::I8 => Tensor::from_vec(shape, (0..n).map(|_| rng.int(-128, 127) as i8).collect()).unwrap(),
        DType::U8 => Tensor::from_vec(shape, (0..n).map(|_| rng.int(0, 255) as u8).collect()).unwrap(),
        DType::BOOL => {
            Tensor::from_vec(shape, (0..n).map(|_| rng.next().is_multiple_of(2)).collect()).unwrap()
        }
        other => panic!("no generator for {other}"),
    }
}

/// Random inputs and zeroed outputs for `kernel` with `syms`.
pub fn args(kernel: &Kernel, syms: &[i64], seed: u64) -> (Vec<Tensor>, Vec<Tensor>) {
    let mut rng = Rng(seed | 1);
    let shape = |b: relay_kir::BufferId| -> Vec<usize> {
        buffer_shape(kernel, b, syms).unwrap().into_iter().map(|d| d as usize).collect()
    };
    let inputs = kernel
        .buffers_with_role(BufferRole::Input)
        .map(|b| random(&mut rng, kernel.buffers[b.index()].dtype, &shape(b)))
        .collect();
    let outputs = kernel
        .buffers_with_role(BufferRole::Output)
        .map(|b| Tensor::zeros(kernel.buffers[b.index()].dtype, shape(b)).unwrap())
        .collect();
    (inputs, outputs)
}

/// Asserts equal dtypes and shapes and elements within `tol * max(1, |expected|)` (exact
/// for non-float dtypes; NaNs and infinities must match).
pub fn assert_close(expected: &[Tensor], actual: &[Tensor], tol: f64) {
    assert_eq!(expected.len(), actual.len());
    for (e, a) in expected.iter().zip(actual) {
        assert_eq!((e.dtype(), e.shape()), (a.dtype(), a.shape()));
        for i in 0..e.len() {
            let (x, y) = (e.get(i).unwrap(), a.get(i).unwrap());
            match (x, y) {
                (Scalar::Float(x), Scalar::Float(y)) => {
                    let ok = (x.is_nan() && y.is_nan())
                        || x == y
                        || (x.is_finite() && (x - y).abs() <= tol * x.abs().max(1.0));
                    assert!(ok, "element {i}: expected {x}, got {y}");
                }
                _ => assert_eq!(x, y, "element {i}"),
            }
        }
    }
}
