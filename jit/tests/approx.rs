//! Accuracy of the JIT's `exp log tanh sigmoid erf` and `sin cos tan asin acos atan sinh
//! cosh` against `f64` references on dense grids, special values, and agreement of vector and
//! scalar code.

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

/// The sweeps behind `trig.rs`'s table: each bound is a little above the error measured.
#[test]
fn trigonometric_and_hyperbolic_errors() {
    let wide = grid(-1e4, 1e4, 1 << 21);
    let period = grid(-std::f32::consts::PI, std::f32::consts::PI, 1 << 20);
    type Sweep<'a> = (UnOp, fn(f64) -> f64, &'a [f32], bool, f64);
    let sweeps: [Sweep; 10] = [
        (UnOp::Sin, f64::sin, &wide, false, 1.2e-7),
        (UnOp::Cos, f64::cos, &wide, false, 1.2e-7),
        (UnOp::Sin, f64::sin, &period, true, 1.5e-7),
        (UnOp::Cos, f64::cos, &grid(-1.5, 1.5, 1 << 20), true, 1.5e-7),
        (UnOp::Tan, f64::tan, &wide, true, 3e-7),
        (UnOp::Asin, f64::asin, &grid(-1.0, 1.0, 1 << 21), true, 3e-7),
        (UnOp::Acos, f64::acos, &grid(-1.0, 1.0, 1 << 21), true, 3e-7),
        (UnOp::Atan, f64::atan, &wide, true, 1.5e-7),
        (UnOp::Sinh, f64::sinh, &grid(-89.0, 89.0, 1 << 21), true, 1.5e-7),
        (UnOp::Cosh, f64::cosh, &grid(-89.0, 89.0, 1 << 21), true, 1.5e-7),
    ];
    for (op, reference, xs, relative, bound) in sweeps {
        let (err, at) = max_error(op, xs, reference, relative);
        assert!(err <= bound, "{op:?} error {err:e} at {at}");
    }
    // Near zero the odd functions keep their relative error.
    let small = grid(-1e-3, 1e-3, 1 << 16);
    for (op, reference) in [
        (UnOp::Sin, f64::sin as fn(f64) -> f64),
        (UnOp::Tan, f64::tan),
        (UnOp::Asin, f64::asin),
        (UnOp::Atan, f64::atan),
        (UnOp::Sinh, f64::sinh),
    ] {
        let (err, at) = max_error(op, &small, reference, true);
        assert!(err <= 1.5e-7, "{op:?} relative error {err:e} at {at}");
    }
}

/// Past the exact range of the reduction (`|x| > 12868`) the error grows with `|x|`, as
/// `trig.rs` states (slowly with FMA: still about an ulp of 1 at 1e7); however large, `sin`
/// and `cos` stay within [-1, 1].
#[test]
fn sine_and_cosine_of_huge_arguments() {
    for (limit, bound) in [(1e5, 1.5e-7), (1e7, 2e-7), (1e9, 1e-5)] {
        for (op, reference) in [(UnOp::Sin, f64::sin as fn(f64) -> f64), (UnOp::Cos, f64::cos)] {
            let (err, at) = max_error(op, &grid(-limit, limit, 1 << 20), reference, false);
            assert!(err <= bound, "{op:?} error {err:e} at {at} within {limit}");
        }
    }
    let huge = [1e8, -3e9, 1e10, 6e12, -1e20, f32::MAX, f32::MIN];
    for op in [UnOp::Sin, UnOp::Cos] {
        for (&x, y) in huge.iter().zip(eval(op, &huge)) {
            assert!((-1.0..=1.0).contains(&y), "{op:?}({x}) = {y}");
        }
    }
}

#[test]
fn trigonometric_special_values() {
    use std::f32::consts::{FRAC_PI_2, PI};
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let xs = [-inf, -2.0, -1.0, -0.0, 0.0, 1.0, 2.0, inf, nan];
    let check = |op: UnOp, expected: [f32; 9]| {
        for ((&x, y), e) in xs.iter().zip(eval(op, &xs)).zip(expected) {
            let ok = (y.is_nan() && e.is_nan())
                || (y == e && y.is_sign_negative() == e.is_sign_negative())
                || (e.is_finite() && e != 0.0 && (y - e).abs() <= 1.5e-7 * e.abs());
            assert!(ok, "{op:?}({x}) = {y}, expected {e}");
        }
    };
    let f = |g: fn(f64) -> f64, x: f64| g(x) as f32;
    let (sin, cos, tan) =
        (f64::sin as fn(f64) -> f64, f64::cos as fn(f64) -> f64, f64::tan as fn(f64) -> f64);
    check(UnOp::Sin, [nan, f(sin, -2.0), f(sin, -1.0), -0.0, 0.0, f(sin, 1.0), f(sin, 2.0), nan, nan]);
    check(UnOp::Cos, [nan, f(cos, -2.0), f(cos, -1.0), 1.0, 1.0, f(cos, 1.0), f(cos, 2.0), nan, nan]);
    check(UnOp::Tan, [nan, f(tan, -2.0), f(tan, -1.0), -0.0, 0.0, f(tan, 1.0), f(tan, 2.0), nan, nan]);
    check(UnOp::Asin, [nan, nan, -FRAC_PI_2, -0.0, 0.0, FRAC_PI_2, nan, nan, nan]);
    check(UnOp::Acos, [nan, nan, PI, FRAC_PI_2, FRAC_PI_2, 0.0, nan, nan, nan]);
    let atan = f64::atan as fn(f64) -> f64;
    check(
        UnOp::Atan,
        [-FRAC_PI_2, f(atan, -2.0), f(atan, -1.0), -0.0, 0.0, f(atan, 1.0), f(atan, 2.0), FRAC_PI_2, nan],
    );
    let sinh = f64::sinh as fn(f64) -> f64;
    check(UnOp::Sinh, [-inf, f(sinh, -2.0), f(sinh, -1.0), -0.0, 0.0, f(sinh, 1.0), f(sinh, 2.0), inf, nan]);
    let cosh = f64::cosh as fn(f64) -> f64;
    check(UnOp::Cosh, [inf, f(cosh, -2.0), f(cosh, -1.0), 1.0, 1.0, f(cosh, 1.0), f(cosh, 2.0), inf, nan]);
    // `cosh`/`sinh` stay finite up to their own overflow, past `exp`'s.
    let edge = [89.0f32, 89.4, -89.4, 89.5];
    for ((&x, c), s) in edge.iter().zip(eval(UnOp::Cosh, &edge)).zip(eval(UnOp::Sinh, &edge)) {
        let (wc, ws) = (f64::from(x).cosh() as f32, f64::from(x).sinh() as f32);
        assert!(c == wc || (c - wc).abs() <= 3e-7 * wc.abs(), "cosh({x}) = {c}, expected {wc}");
        assert!(s == ws || (s - ws).abs() <= 3e-7 * ws.abs(), "sinh({x}) = {s}, expected {ws}");
    }
}
