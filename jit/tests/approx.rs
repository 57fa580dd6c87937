//! Accuracy of the JIT's `exp log tanh sigmoid erf` against `f64` references on dense
//! grids, special values, and agreement of vector and scalar code.

mod common;

use common::jit;
use relay_devices::{DType, Tensor};
use relay_kir::{Expr, Kernel, KernelBuilder, LoopKind, UnOp};

fn unary_kernel(op: UnOp, kind: LoopKind) -> Kernel {
    let mut k = KernelBuilder::new(op.name());
    let n = k.sym("n");
    let x = k.input("x", DType::F32, [n]);
    let y = k.output("y", DType::F32, [n]);
    k.for_(n, kind, |k, i| k.store(y, i.clone(), Expr::load(x, i).unary(op)));
    k.finish().unwrap()
}

/// `op` over `xs` with the vectorised kernel; also checks the scalar kernel gives the same
/// bits (so results do not depend on whether an element is in a vector body or a tail).
fn eval(op: UnOp, xs: &[f32]) -> Vec<f32> {
    let input = Tensor::from_vec(vec![xs.len()], xs.to_vec()).unwrap();
    let mut results = Vec::new();
    for kind in [LoopKind::Vectorize, LoopKind::Serial] {
        let compiled = jit().compile(&unary_kernel(op, kind)).unwrap();
        let mut out = [Tensor::zeros(DType::F32, vec![xs.len()]).unwrap()];
        compiled.run(&[&input], &mut out, &[xs.len() as i64]).unwrap();
        let [out] = out;
        results.push(out.into_vec::<f32>().unwrap());
    }
    let (vector, scalar) = (&results[0], &results[1]);
    for (i, (v, s)) in vector.iter().zip(scalar).enumerate() {
        assert!(
            v.to_bits() == s.to_bits() || v.is_nan() && s.is_nan(),
            "{op:?}({}): vector {v}, scalar {s}",
            xs[i]
        );
    }
    results.swap_remove(0)
}

fn grid(lo: f32, hi: f32, n: usize) -> Vec<f32> {
    (0..n).map(|i| lo + (hi - lo) * (i as f32 / (n - 1) as f32)).collect()
}

/// Largest error of `op` over `xs` against `reference`: relative when `relative`, else
/// absolute. Returns (error, worst input).
fn max_error(op: UnOp, xs: &[f32], reference: impl Fn(f64) -> f64, relative: bool) -> (f64, f32) {
    let ys = eval(op, xs);
    let mut worst = (0.0, 0.0);
    for (&x, &y) in xs.iter().zip(&ys) {
        let r = reference(f64::from(x));
        let err = (f64::from(y) - r).abs();
        let err = if relative && r != 0.0 { err / r.abs() } else { err };
        assert!(err.is_finite() || y as f64 == r, "{op:?}({x}) = {y}, expected {r}");
        if err > worst.0 {
            worst = (err, x);
        }
    }
    println!(
        "{op:?}: max {} error {:.3e} at {}",
        if relative { "relative" } else { "absolute" },
        worst.0,
        worst.1
    );
    worst
}

#[test]
fn exp_relative_error() {
    let (err, at) = max_error(UnOp::Exp, &grid(-87.0, 88.0, 1 << 21), f64::exp, true);
    assert!(err <= 2e-6 * 0.2, "exp error {err:e} at {at}");
}

#[test]
fn log_relative_error_over_all_positive_floats() {
    // Every 997th positive bit pattern, from the smallest subnormal to f32::MAX.
    let xs: Vec<f32> = (1..0x7f80_0000u32).step_by(997).map(f32::from_bits).collect();
    let (err, at) = max_error(UnOp::Log, &xs, f64::ln, true);
    assert!(err <= 2e-6 * 0.2, "log error {err:e} at {at}");
    let near_one = grid(0.9, 1.1, 1 << 16);
    let (err, at) = max_error(UnOp::Log, &near_one, f64::ln, true);
    assert!(err <= 2e-6, "log error {err:e} at {at} near 1");
}

#[test]
fn tanh_sigmoid_erf_absolute_error() {
    let xs = grid(-20.0, 20.0, 1 << 21);
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    for (op, reference, range) in [
        (UnOp::Tanh, f64::tanh as fn(f64) -> f64, &xs),
        (UnOp::Sigmoid, sigmoid, &xs),
        (UnOp::Erf, libm::erf, &grid(-6.0, 6.0, 1 << 21)),
    ] {
        let (err, at) = max_error(op, range, reference, false);
        assert!(err <= 1e-5 * 0.05, "{op:?} error {err:e} at {at}");
    }
    // Near zero the odd polynomials keep the relative error small too.
    let small = grid(-0.6, 0.6, 1 << 16);
    for (op, reference) in [(UnOp::Tanh, f64::tanh as fn(f64) -> f64), (UnOp::Erf, libm::erf)] {
        let (err, at) = max_error(op, &small, reference, true);
        assert!(err <= 2e-6, "{op:?} relative error {err:e} at {at}");
    }
}

#[test]
fn special_values() {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let xs = [-inf, -1e30, -104.0, -88.0, -0.0, 0.0, 1e-40, 88.5, 89.0, 1e30, inf, nan];
    let check = |op: UnOp, expected: [f32; 12]| {
        let ys = eval(op, &xs);
        for ((&x, &y), &e) in xs.iter().zip(&ys).zip(&expected) {
            let ok =
                (y.is_nan() && e.is_nan()) || y == e || (e.is_finite() && (y - e).abs() <= 1e-6 * e.abs());
            assert!(ok, "{op:?}({x}) = {y}, expected {e}");
        }
    };
    let e = |x: f64| x.exp() as f32;
    check(UnOp::Exp, [0.0, 0.0, 0.0, e(-88.0), 1.0, 1.0, 1.0, e(88.5), inf, inf, inf, nan]);
    check(
        UnOp::Log,
        [
            nan,
            nan,
            nan,
            nan,
            -inf,
            -inf,
            (1e-40f64).ln() as f32,
            88.5f32.ln(),
            89f32.ln(),
            1e30f32.ln(),
            inf,
            nan,
        ],
    );
    check(UnOp::Tanh, [-1.0, -1.0, -1.0, -1.0, -0.0, 0.0, 1e-40, 1.0, 1.0, 1.0, 1.0, nan]);
    check(UnOp::Sigmoid, [0.0, 0.0, 0.0, 1.0 / (1.0 + e(88.0)), 0.5, 0.5, 0.5, 1.0, 1.0, 1.0, 1.0, nan]);
    check(
        UnOp::Erf,
        [
            -1.0,
            -1.0,
            -1.0,
            -1.0,
            -0.0,
            0.0,
            1e-40 * std::f32::consts::FRAC_2_SQRT_PI,
            1.0,
            1.0,
            1.0,
            1.0,
            nan,
        ],
    );
}
