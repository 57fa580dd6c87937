//! The JIT's `float32` ↔ `float16`/`bfloat16` conversions (`src/cranelift/half.rs`) against
//! the `half` crate, which the reference kernels use: every half-float bit pattern widened,
//! and a dense sweep of `float32` bit patterns with every rounding boundary rounded, bit for
//! bit (NaNs included: their payloads are compared too).

mod common;

use common::jit;
use half::{bf16, f16};
use relay_devices::{DType, Tensor};
use relay_kir::{Expr, Kernel, KernelBuilder, LoopKind};

/// `y[i] = cast<to>(x[i])` over `n` elements.
fn convert(from: DType, to: DType) -> Kernel {
    let mut k = KernelBuilder::new("convert");
    let n = k.sym("n");
    let x = k.input("x", from, [n]);
    let y = k.output("y", to, [n]);
    k.for_(n, LoopKind::Vectorize, |k, i| k.store(y, i.clone(), Expr::load(x, i).cast(to)));
    k.finish().unwrap()
}

fn run(kernel: &Kernel, input: &Tensor, to: DType) -> Tensor {
    let n = input.len();
    let compiled = jit().compile(kernel).unwrap();
    let mut out = [Tensor::zeros(to, vec![n]).unwrap()];
    compiled.run(&[input], &mut out, &[n as i64]).unwrap();
    let [out] = out;
    out
}

#[test]
fn every_half_float_widens_as_half_does() {
    let all: Vec<u16> = (0..=u16::MAX).collect();
    let f16s = Tensor::from_vec(vec![all.len()], all.iter().map(|&b| f16::from_bits(b)).collect()).unwrap();
    let got = run(&convert(DType::F16, DType::F32), &f16s, DType::F32).into_vec::<f32>().unwrap();
    for (&b, g) in all.iter().zip(&got) {
        let want = f16::from_bits(b).to_f32();
        assert_eq!(g.to_bits(), want.to_bits(), "float16 {b:#06x}: {g} != {want}");
    }
    let bf16s = Tensor::from_vec(vec![all.len()], all.iter().map(|&b| bf16::from_bits(b)).collect()).unwrap();
    let got = run(&convert(DType::BF16, DType::F32), &bf16s, DType::F32).into_vec::<f32>().unwrap();
    for (&b, g) in all.iter().zip(&got) {
        let want = bf16::from_bits(b).to_f32();
        assert_eq!(g.to_bits(), want.to_bits(), "bfloat16 {b:#06x}: {g} != {want}");
    }
}

/// `float32` bit patterns: a stride through all of them, and around every point where
/// rounding to a 16-bit float changes (the halfway points between neighbouring half floats
/// of both kinds, and the float32 values next to them), plus the edges of the ranges.
fn sweep() -> Vec<u32> {
    let mut bits: Vec<u32> = (0..=u32::MAX).step_by(4093).collect();
    for h in 0..=u16::MAX {
        let lo = f16::from_bits(h).to_f32();
        let hi = f16::from_bits(h.wrapping_add(1)).to_f32();
        let mid = ((f64::from(lo) + f64::from(hi)) / 2.0) as f32;
        // bfloat16's halfway points are exactly the low 16 bits 0x8000.
        let bf_mid = (u32::from(h) << 16) | 0x8000;
        for x in [lo.to_bits(), mid.to_bits(), bf_mid, u32::from(h) << 16] {
            bits.extend([x.wrapping_sub(1), x, x.wrapping_add(1)]);
        }
    }
    bits.extend([0x7F80_0000, 0xFF80_0000, 0x7F80_0001, 0x7FC0_0000, 0xFFFF_FFFF, 0x7F7F_FFFF, 0x0000_0001]);
    bits.extend([65504f32, 65519.99, 65520.0, 5.96e-8, 2.98e-8, 2.99e-8, 6.1e-5].map(f32::to_bits));
    bits
}

#[test]
fn float32_sweep_rounds_as_half_does() {
    let bits = sweep();
    let input =
        Tensor::from_vec(vec![bits.len()], bits.iter().map(|&b| f32::from_bits(b)).collect()).unwrap();
    let got = run(&convert(DType::F32, DType::F16), &input, DType::F16).into_vec::<f16>().unwrap();
    for (&b, g) in bits.iter().zip(&got) {
        let want = f16::from_f32(f32::from_bits(b));
        assert_eq!(g.to_bits(), want.to_bits(), "float32 {b:#010x} to float16: {g} != {want}");
    }
    let got = run(&convert(DType::F32, DType::BF16), &input, DType::BF16).into_vec::<bf16>().unwrap();
    for (&b, g) in bits.iter().zip(&got) {
        let want = bf16::from_f32(f32::from_bits(b));
        assert_eq!(g.to_bits(), want.to_bits(), "float32 {b:#010x} to bfloat16: {g} != {want}");
    }
}
