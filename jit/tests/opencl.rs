//! OpenCL kernels (on POCL in CI) against the kir interpreter, on the same kinds of
//! hand-built kernels the Cranelift tests use. Without an OpenCL platform these tests fail,
//! unless `RELAY_OPENCL_OPTIONAL=1`, when they print why and pass.
#![cfg(feature = "opencl")]

mod builders;
mod common;

use builders::{elementwise, int_tensor, relu};
use common::{args, assert_close, random, Rng};
use relay_devices::opencl::{OpenClDevice, OpenClError};
use relay_devices::{DType, Scalar, Tensor};
use relay_jit::{opencl_source, JitError, KernelCache, OpenClKernel};
use relay_kir::{interp, BinOp, BoundsError, Expr, Index, Kernel, KernelBuilder, LoopKind, UnOp};
use std::sync::{Arc, OnceLock};

/// Float tolerance without transcendentals (FMA contraction, OpenCL `pow`).
const TOL: f64 = 1e-5;
/// With OpenCL's `exp log tanh erf` (a few ulp; `erf` up to 16).
const TOL_MATH: f64 = 2e-5;

fn device() -> Option<Arc<OpenClDevice>> {
    static DEVICE: OnceLock<Option<Arc<OpenClDevice>>> = OnceLock::new();
    DEVICE
        .get_or_init(|| match OpenClDevice::open("opencl") {
            Ok(d) => Some(Arc::new(d)),
            Err(e @ (OpenClError::Unavailable(_) | OpenClError::NoSuchDevice { .. }))
                if std::env::var("RELAY_OPENCL_OPTIONAL").as_deref() == Ok("1") =>
            {
                eprintln!("skipping OpenCL tests: {e} (RELAY_OPENCL_OPTIONAL=1)");
                None
            }
            Err(e) => panic!("no OpenCL device: {e} (set RELAY_OPENCL_OPTIONAL=1 to skip)"),
        })
        .clone()
}

/// The interpreter's and the device's outputs for the same arguments.
fn run_both(
    dev: &Arc<OpenClDevice>,
    kernel: &Kernel,
    inputs: &[Tensor],
    outputs: &[Tensor],
    syms: &[i64],
) -> (Vec<Tensor>, Vec<Tensor>, OpenClKernel) {
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let mut expected = outputs.to_vec();
    interp::run(kernel, &refs, &mut expected, syms).expect("interpreter");
    let compiled = OpenClKernel::compile(dev, kernel)
        .unwrap_or_else(|e| panic!("{e}\n{}", opencl_source(kernel).unwrap()));
    let mut actual = outputs.to_vec();
    compiled.run(&refs, &mut actual, syms).expect("OpenCL run");
    (expected, actual, compiled)
}

/// Random inputs, both ways, compared within `tol`.
fn check(dev: &Arc<OpenClDevice>, kernel: &Kernel, syms: &[i64], tol: f64) -> OpenClKernel {
    let (inputs, outputs) = args(kernel, syms, 0x5eed);
    let (expected, actual, compiled) = run_both(dev, kernel, &inputs, &outputs, syms);
    assert_close(&expected, &actual, tol);
    compiled
}

#[test]
fn elementwise_chains_run_one_work_item_per_element() {
    let Some(dev) = device() else { return };
    type Chain = Box<dyn Fn(Expr, Expr, Expr) -> Expr>;
    let chains: Vec<Chain> = vec![
        Box::new(|a, b, c| (a * b + c).sigmoid()),
        Box::new(|a, b, c| relu(a.clone() - b) * c.tanh() + a.exp()),
        Box::new(|a, b, _| Expr::select(a.clone().gt(b.clone()), a.clone() / (b.abs() + Expr::f32(1.0)), -a)),
        Box::new(|a, b, c| {
            (a.clone().abs() + Expr::f32(1e-3)).log() + b.erf() * c.floor() + a.round().sign()
        }),
        Box::new(|a, b, c| {
            a.clone().min(b.clone()).max(c.clone()).sqrt() + a.floor_mod(Expr::f32(0.75)) + b.ceil()
        }),
        Box::new(|a, _, _| a.clone().rsqrt() + (-a).max(Expr::f32(f32::NAN)) + Expr::f32(-1.5)),
    ];
    for f in &chains {
        let kernel = elementwise(LoopKind::Vectorize, f);
        for n in [0, 1, 3, 37, 1000] {
            assert_eq!(check(&dev, &kernel, &[n], TOL_MATH).phases(), (1, 1));
        }
    }
}

#[test]
fn broadcasting_with_div_mod_indices() {
    let Some(dev) = device() else { return };
    let (d0, d1, d2) = (3i64, 5i64, 6i64);
    let mut k = KernelBuilder::new("broadcast_flat");
    let x = k.input("x", DType::F32, [d0, d1, d2]);
    let s = k.input("s", DType::F32, [d1]);
    let t = k.input("t", DType::F32, [1, d2]);
    let out = k.output("out", DType::F32, [d0, d1, d2]);
    k.for_(d0 * d1 * d2, LoopKind::Vectorize, |k, f| {
        let j = f.clone().floor_div(d2).floor_mod(d1);
        let l = f.clone().floor_mod(d2);
        k.store(out, f.clone(), Expr::load(x, f) * Expr::load(s, j) + Expr::load(t, l));
    });
    assert_eq!(check(&dev, &k.finish().unwrap(), &[], TOL).phases(), (1, 1));

    let mut k = KernelBuilder::new("broadcast_nest");
    let x = k.input("x", DType::F32, [d0, d1, d2]);
    let s = k.input("s", DType::F32, [d1]);
    let t = k.input("t", DType::F32, [1, d2]);
    let out = k.output("out", DType::F32, [d0, d1, d2]);
    k.for_(d0, LoopKind::Parallel, |k, i| {
        k.for_(d1, LoopKind::Serial, |k, j| {
            k.for_(d2, LoopKind::Vectorize, |k, l| {
                let idx = [i.clone(), j.clone(), l.clone()];
                let v = k.load(x, &idx) * k.load(s, &idx[1..2]) + k.load(t, &idx);
                k.store_at(out, &idx, v);
            })
        })
    });
    assert_eq!(check(&dev, &k.finish().unwrap(), &[], TOL).phases(), (1, 1));
}

/// `y[o] = sum_r x[o, r]` (axis 1) or `sum_r x[r, o]` (axis 0).
fn row_sum(axis: usize) -> Kernel {
    let mut k = KernelBuilder::new("sum");
    let (n, m) = (k.sym("n"), k.sym("m"));
    let x = k.input("x", DType::F32, [n, m]);
    let y = k.output("y", DType::F32, [if axis == 1 { n } else { m }]);
    let acc = k.local("acc", DType::F32);
    let (outer, inner) = if axis == 1 { (n, m) } else { (m, n) };
    k.for_(outer, LoopKind::Parallel, |k, o| {
        k.assign(acc, Expr::f32(0.0));
        k.for_(inner, LoopKind::Vectorize, |k, r| {
            let idx = if axis == 1 { [o.clone(), r] } else { [r, o.clone()] };
            let v = Expr::local(acc) + k.load(x, &idx);
            k.assign(acc, v);
        });
        k.store(y, o, Expr::local(acc));
    });
    k.finish().unwrap()
}

#[test]
fn reductions_over_either_axis() {
    let Some(dev) = device() else { return };
    for axis in [0, 1] {
        let kernel = row_sum(axis);
        for (n, m) in [(0, 5), (3, 0), (1, 1), (4, 7), (9, 33), (300, 17)] {
            assert_eq!(check(&dev, &kernel, &[n, m], TOL).phases(), (1, 1));
        }
    }
}

#[test]
fn softmax_rows() {
    let Some(dev) = device() else { return };
    let kernel = builders::softmax(10);
    for rows in [0, 1, 6, 65] {
        assert_eq!(check(&dev, &kernel, &[rows], TOL_MATH).phases(), (1, 1));
    }
}

#[test]
fn dense_with_fused_bias_relu() {
    let Some(dev) = device() else { return };
    for k_dim in [1i64, 4, 13] {
        let (units, batch) = (6i64, 3i64);
        let mut kb = KernelBuilder::new("dense_bias_relu");
        let x = kb.input("x", DType::F32, [batch, k_dim]);
        let w = kb.input("w", DType::F32, [units, k_dim]);
        let b = kb.input("b", DType::F32, [units]);
        let out = kb.output("out", DType::F32, [batch, units]);
        let acc = kb.local("acc", DType::F32);
        kb.for_(batch, LoopKind::Parallel, |kb, i| {
            kb.for_(units, LoopKind::Serial, |kb, j| {
                kb.assign(acc, Expr::f32(0.0));
                kb.for_(k_dim, LoopKind::Vectorize, |kb, r| {
                    let v =
                        Expr::local(acc) + kb.load(x, &[i.clone(), r.clone()]) * kb.load(w, &[j.clone(), r]);
                    kb.assign(acc, v);
                });
                let v = relu(Expr::local(acc) + kb.load(b, std::slice::from_ref(&j)));
                kb.store_at(out, &[i.clone(), j], v);
            })
        });
        // `acc` is first assigned inside the `j` loop, so the batch loop stays one work-item.
        assert_eq!(check(&dev, &kb.finish().unwrap(), &[], TOL).phases(), (1, 0));
    }
}

#[test]
fn int32_arithmetic_is_exact() {
    let Some(dev) = device() else { return };
    let ops = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::FloorDiv,
        BinOp::FloorMod,
        BinOp::Max,
        BinOp::Min,
        BinOp::And,
        BinOp::Or,
    ];
    for op in ops {
        let mut k = KernelBuilder::new("int");
        let n = k.sym("n");
        let a = k.input("a", DType::I32, [n]);
        let b = k.input("b", DType::I32, [n]);
        let y = k.output("y", DType::I32, [n]);
        let lt = k.output("lt", DType::BOOL, [n]);
        k.for_(n, LoopKind::Vectorize, |k, i| {
            let (va, vb) = (Expr::load(a, i.clone()), Expr::load(b, i.clone()));
            let r = va.clone().binary(op, vb.clone()) + va.clone().unary(UnOp::Sign) - vb.clone().abs();
            k.store(y, i.clone(), r);
            k.store(lt, i, va.lt(vb.clone()).and(!vb.clone().equal(Expr::i32(3))));
        });
        check(&dev, &k.finish().unwrap(), &[23], 0.0);
    }
}

#[test]
fn integer_edge_cases_wrap_and_never_trap() {
    let Some(dev) = device() else { return };
    let min32 = i64::from(i32::MIN);
    for (dtype, cases) in [
        (
            DType::I32,
            vec![(7, 0), (-7, 2), (7, -2), (min32, -1), (-8, 3), (0, -5), (min32, 0), (i32::MAX.into(), 2)],
        ),
        (DType::I8, vec![(-128, -1), (-7, 0), (100, -3), (-100, 7), (127, 127)]),
        (DType::U8, vec![(200, 0), (200, 7), (3, 200), (255, 255)]),
        (DType::I64, vec![(i64::MIN, -1), (i64::MIN, 0), (-9, 4), (9, -4), (i64::MAX, 2)]),
    ] {
        let len = cases.len() as i64;
        let a_t = int_tensor(dtype, &cases.iter().map(|c| c.0).collect::<Vec<_>>());
        let b_t = int_tensor(dtype, &cases.iter().map(|c| c.1).collect::<Vec<_>>());
        let ops = [BinOp::Div, BinOp::FloorDiv, BinOp::FloorMod, BinOp::Add, BinOp::Mul, BinOp::Sub];
        let mut k = KernelBuilder::new("division");
        let a = k.input("a", dtype, [len]);
        let b = k.input("b", dtype, [len]);
        let ys: Vec<_> = ops.iter().map(|op| (k.output(op.name(), dtype, [len]), *op)).collect();
        let neg = k.output("neg", dtype, [len]);
        let abs = k.output("abs", dtype, [len]);
        let not = k.output("not", dtype, [len]);
        k.for_(len, LoopKind::Serial, |k, i| {
            let (va, vb) = (Expr::load(a, i.clone()), Expr::load(b, i.clone()));
            for &(y, op) in &ys {
                k.store(y, i.clone(), va.clone().binary(op, vb.clone()));
            }
            k.store(neg, i.clone(), -va.clone());
            k.store(abs, i.clone(), va.clone().abs());
            k.store(not, i, !va);
        });
        let kernel = k.finish().unwrap();
        let outs: Vec<Tensor> =
            (0..ops.len() + 3).map(|_| Tensor::zeros(dtype, vec![cases.len()]).unwrap()).collect();
        let (expected, actual, _) = run_both(&dev, &kernel, &[a_t, b_t], &outs, &[]);
        assert_close(&expected, &actual, 0.0);
    }
}

#[test]
fn int8_products_accumulate_in_int32() {
    let Some(dev) = device() else { return };
    let (rows, depth) = (5i64, 19i64);
    let mut k = KernelBuilder::new("qdot");
    let a = k.input("a", DType::I8, [rows, depth]);
    let b = k.input("b", DType::I8, [depth]);
    let u = k.input("u", DType::U8, [rows]);
    let y = k.output("y", DType::I32, [rows]);
    let acc = k.local("acc", DType::I32);
    k.for_(rows, LoopKind::Parallel, |k, i| {
        k.assign(acc, Expr::load(u, i.clone()).cast(DType::I32));
        k.for_(depth, LoopKind::Vectorize, |k, r| {
            let p = k.load(a, &[i.clone(), r.clone()]).cast(DType::I32) * k.load(b, &[r]).cast(DType::I32);
            k.assign(acc, Expr::local(acc) + p);
        });
        k.store(y, i, Expr::local(acc));
    });
    assert_eq!(check(&dev, &k.finish().unwrap(), &[], 0.0).phases(), (1, 1));
}

#[test]
fn casts_between_all_dtypes() {
    let Some(dev) = device() else { return };
    let dtypes = [DType::F32, DType::F64, DType::I8, DType::I32, DType::I64, DType::U8, DType::BOOL];
    let mut k = KernelBuilder::new("casts");
    let x = k.input("x", DType::F32, [7]);
    let outs: Vec<_> = dtypes
        .iter()
        .flat_map(|&to| dtypes.iter().map(move |&via| (to, via)))
        .map(|(to, via)| (k.output(format!("{via}_{to}"), to, [7]), to, via))
        .collect();
    k.for_(7, LoopKind::Serial, |k, i| {
        for &(out, to, via) in &outs {
            k.store(out, i.clone(), (Expr::load(x, i.clone()) * Expr::f32(100.0)).cast(via).cast(to));
        }
    });
    let kernel = k.finish().unwrap();
    let special = [f32::NAN, -3.7e9, 3.7e9, -1.5, 0.0, 2.5, 127.9];
    let input = Tensor::from_vec(vec![7], special.to_vec()).unwrap();
    let outputs: Vec<Tensor> = outs.iter().map(|&(_, to, _)| Tensor::zeros(to, vec![7]).unwrap()).collect();
    let (expected, actual, _) = run_both(&dev, &kernel, &[input], &outputs, &[]);
    assert_close(&expected, &actual, 0.0);
}

#[test]
fn size_zero_and_one_extents() {
    let Some(dev) = device() else { return };
    let mut k = KernelBuilder::new("tiny");
    let x = k.input("x", DType::F32, [1, 0]);
    let s = k.input("s", DType::F32, Vec::<i64>::new());
    let y = k.output("y", DType::F32, [1]);
    let z = k.output("z", DType::F32, [0, 3]);
    k.for_(1, LoopKind::Vectorize, |k, i| {
        k.store(y, i.clone(), Expr::load(s, 0) + Expr::f32(1.0));
        k.for_(0, LoopKind::Vectorize, |k, j| k.store(z, j.clone(), Expr::load(x, j)));
    });
    check(&dev, &k.finish().unwrap(), &[], 0.0);
}

#[test]
fn symbolic_extents_reuse_one_program() {
    let Some(dev) = device() else { return };
    let kernel = row_sum(1);
    let compiled = OpenClKernel::compile(&dev, &kernel).unwrap();
    for (n, m) in [(5usize, 9usize), (2, 3), (0, 4), (64, 1)] {
        let x = random(&mut Rng(n as u64 + 3), DType::F32, &[n, m]);
        let syms = relay_kir::infer_syms(&kernel, &[x.shape()], &[&[n]]).unwrap();
        let mut expected = [Tensor::zeros(DType::F32, vec![n]).unwrap()];
        interp::run(&kernel, &[&x], &mut expected, &syms).unwrap();
        let mut actual = [Tensor::zeros(DType::F32, vec![n]).unwrap()];
        compiled.run(&[&x], &mut actual, &syms).unwrap();
        assert_close(&expected, &actual, TOL);
    }
}

#[test]
fn temps_conditionals_and_shared_locals() {
    let Some(dev) = device() else { return };
    let mut k = KernelBuilder::new("misc");
    let n = k.sym("n");
    let x = k.input("x", DType::F32, [n]);
    let t = k.temp("t", DType::F32, [n]);
    let y = k.output("y", DType::F32, [n]);
    let count = k.output("count", DType::I32, [1]);
    let c = k.local("c", DType::I32);
    k.for_(n, LoopKind::Vectorize, |k, i| k.store(t, i.clone(), Expr::load(x, i).exp()));
    k.for_(n, LoopKind::Serial, |k, i| {
        let v = Expr::load(t, i.clone());
        k.if_else(
            v.clone().gt(Expr::f32(1.0)),
            |k| {
                k.store(y, i.clone(), v.clone().log());
                k.assign(c, Expr::local(c) + Expr::i32(1));
            },
            |k| k.store(y, i.clone(), Expr::f32(0.0)),
        );
    });
    let last = k.local("last", DType::F32);
    let tail = k.output("tail", DType::F32, [1]);
    k.for_(n, LoopKind::Vectorize, |k, i| {
        k.assign(last, Expr::load(x, i.clone()) * Expr::f32(2.0));
        k.store(t, i, Expr::local(last));
    });
    k.store(tail, 0, Expr::local(last));
    k.for_(4, LoopKind::Unroll, |k, u| {
        let v = Expr::load(count, 0) + Expr::local(c) + Expr::index(u).cast(DType::I32);
        k.store(count, 0, v);
    });
    let kernel = k.finish().unwrap();
    for n in [0, 8, 29] {
        // The first loop runs in parallel; the rest shares locals and is one serial phase.
        assert_eq!(check(&dev, &kernel, &[n], TOL_MATH).phases(), (2, 1));
    }
}

#[test]
fn loop_carried_dependences_stay_serial() {
    let Some(dev) = device() else { return };
    let mut k = KernelBuilder::new("dependences");
    let n = k.sym("n");
    let x = k.input("x", DType::F32, [n]);
    let prefix = k.output("prefix", DType::F32, [n]);
    let total = k.output("total", DType::F32, [1]);
    let shifted = k.output("shifted", DType::F32, [n]);
    let prev = k.local("prev", DType::F32);
    k.for_(Index::from(n) - 1, LoopKind::Vectorize, |k, i| {
        let v = Expr::load(prefix, i.clone()) + Expr::load(x, i.clone() + 1);
        k.store(prefix, i + 1, v);
    });
    k.for_(n, LoopKind::Vectorize, |k, i| k.store(total, 0, Expr::load(total, 0) + Expr::load(x, i)));
    k.for_(n, LoopKind::Vectorize, |k, i| {
        k.store(shifted, i.clone(), Expr::local(prev));
        k.assign(prev, Expr::load(x, i));
    });
    let kernel = k.finish().unwrap();
    for n in [1, 2, 9, 200] {
        let compiled = check(&dev, &kernel, &[n], TOL);
        // Two loops plan as parallel, but their windows overlap at run time (prefix reads
        // what the previous iteration wrote; total's stride is 0): they get one work-item.
        assert_eq!(compiled.phases(), (3, 2));
    }
}

#[test]
fn pow_and_float64() {
    let Some(dev) = device() else { return };
    if !dev.info().fp64 {
        eprintln!("skipping: {} has no fp64", dev.info().id());
        return;
    }
    let mut k = KernelBuilder::new("pow");
    let x = k.input("x", DType::F32, [9]);
    let d = k.input("d", DType::F64, [9]);
    let y = k.output("y", DType::F32, [9]);
    let z = k.output("z", DType::F64, [9]);
    k.for_(9, LoopKind::Vectorize, |k, i| {
        let xv = Expr::load(x, i.clone()).abs();
        k.store(y, i.clone(), xv.clone().pow(Expr::f32(1.5)));
        let dv = Expr::load(d, i.clone());
        let f64c = |v: f64| Expr::lit(DType::F64, Scalar::Float(v));
        let r = (dv.clone() * dv.clone() + f64c(1.0)).sqrt().pow(f64c(0.5))
            + dv.clone().floor_div(f64c(0.3))
            + dv.round();
        k.store(z, i, r);
    });
    let kernel = k.finish().unwrap();
    assert!(opencl_source(&kernel).unwrap().contains("cl_khr_fp64"));
    check(&dev, &kernel, &[], 1e-6);
}

#[test]
fn gathers_need_clamped_indices() {
    let Some(dev) = device() else { return };
    let build = |clamp: bool| {
        let mut k = KernelBuilder::new("take");
        let n = k.sym("n");
        let data = k.input("data", DType::F32, [8]);
        let idx = k.input("idx", DType::I32, [n]);
        let out = k.output("out", DType::F32, [n]);
        k.for_(n, LoopKind::Vectorize, |k, i| {
            let at = Index::value(Expr::load(idx, i.clone()));
            let at = if clamp { at.clamp(0, 7) } else { at };
            k.store(out, i, Expr::load(data, at));
        });
        k.finish().unwrap()
    };
    check(&dev, &build(true), &[11], 0.0);
    let raw = build(false);
    let compiled = OpenClKernel::compile(&dev, &raw).unwrap();
    let (inputs, mut outputs) = args(&raw, &[3], 1);
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let err = compiled.run(&refs, &mut outputs, &[3]).unwrap_err();
    assert!(matches!(err, JitError::Bounds(BoundsError::OutOfBounds { .. })), "{err}");
}

#[test]
fn bad_calls_are_errors_and_the_cache_shares_programs() {
    let Some(dev) = device() else { return };
    let kernel = row_sum(1);
    let cache = KernelCache::new();
    let compiled = OpenClKernel::compile_cached(&cache, &dev, &kernel).unwrap();
    let x = Tensor::zeros(DType::F32, vec![2, 3]).unwrap();
    let mut out = [Tensor::zeros(DType::F32, vec![2]).unwrap()];
    assert!(matches!(compiled.run(&[&x], &mut out, &[2, 4]), Err(JitError::Call(_))));
    assert!(matches!(compiled.run(&[&x], &mut out, &[2]), Err(JitError::Call(_))));
    assert!(matches!(compiled.run(&[], &mut out, &[2, 3]), Err(JitError::Call(_))));
    let ints = Tensor::zeros(DType::I32, vec![2, 3]).unwrap();
    assert!(matches!(compiled.run(&[&ints], &mut out, &[2, 3]), Err(JitError::Call(_))));
    assert_eq!(compiled.run(&[&x], &mut out, &[2, 3]), Ok(()));

    let mut renamed = kernel.clone();
    renamed.name = "other".into();
    assert!(Arc::ptr_eq(&compiled, &OpenClKernel::compile_cached(&cache, &dev, &renamed).unwrap()));

    let mut k = KernelBuilder::new("oob");
    let x = k.input("x", DType::F32, [4]);
    let y = k.output("y", DType::F32, [4]);
    k.for_(4, LoopKind::Serial, |k, i| k.store(y, i.clone(), Expr::load(x, i + 1)));
    assert!(matches!(OpenClKernel::compile(&dev, &k.finish().unwrap()), Err(JitError::Bounds(_))));
}

#[test]
fn kernels_run_on_many_threads() {
    let Some(dev) = device() else { return };
    let kernel = elementwise(LoopKind::Vectorize, |a, b, c| (a * b + c).tanh());
    let compiled = Arc::new(OpenClKernel::compile(&dev, &kernel).unwrap());
    let (inputs, outputs) = args(&kernel, &[101], 9);
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let mut expected = outputs.clone();
    compiled.run(&refs, &mut expected, &[101]).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (compiled, inputs, mut out, expected) =
                (compiled.clone(), &inputs, outputs.clone(), &expected);
            s.spawn(move || {
                let refs: Vec<&Tensor> = inputs.iter().collect();
                compiled.run(&refs, &mut out, &[101]).unwrap();
                assert_eq!(&out, expected);
            });
        }
    });
}

#[test]
fn device_resident_tensors_run_without_host_copies_and_recycle_buffers() {
    if device().is_none() {
        return;
    }
    // A device of its own: the pool counts below must not see other tests' buffers.
    let dev = Arc::new(OpenClDevice::open("opencl").unwrap());
    let kernel = row_sum(1);
    let compiled = OpenClKernel::compile(&dev, &kernel).unwrap();
    let x = random(&mut Rng(11), DType::F32, &[6, 5]);
    let syms = relay_kir::infer_syms(&kernel, &[x.shape()], &[&[6]]).unwrap();
    let mut expected = [Tensor::zeros(DType::F32, vec![6]).unwrap()];
    interp::run(&kernel, &[&x], &mut expected, &syms).unwrap();

    let types = compiled.output_types(&[x.shape()]).unwrap();
    assert_eq!(types, vec![(DType::F32, vec![6])]);
    let input = dev.upload_tensor(&x).unwrap();
    let outputs = [dev.zeros_tensor(DType::F32, &types[0].1).unwrap()];
    compiled.run_device(&[&input], &outputs).unwrap();
    assert_close(&expected, &[outputs[0].to_host().unwrap()], TOL);

    // A dead tensor's buffer serves the next tensor of its byte size.
    let (free_before, _) = dev.pooled();
    drop(outputs);
    assert_eq!(dev.pooled().0, free_before + 1);
    let again = dev.alloc_tensor(DType::I32, &[6]).unwrap();
    assert_eq!(dev.pooled().0, free_before);
    assert_eq!(again.size_bytes(), 24);

    // Shapes are checked as for host tensors.
    let wrong = [dev.zeros_tensor(DType::F32, &[5]).unwrap()];
    assert!(matches!(compiled.run_device(&[&input], &wrong), Err(JitError::Call(_))));
}
