//! Hand-built kernels against the kir interpreter, each test body written once and run on
//! every target: the Cranelift JIT on the host CPU and, in an `opencl` build, every OpenCL
//! device (`common::Target::all`). Target-specific behaviour is in `cpu.rs` and `opencl.rs`.

mod builders;
mod common;

use builders::{dense_layer, elementwise, int_tensor, relu};
use common::{args, assert_close, check_on, random, run_both_on, Compiled, Rng, Target};
use relay_devices::{DType, Scalar, Tensor};
use relay_jit::JitError;
use relay_kir::{interp, BinOp, BoundsError, Expr, Index, Kernel, KernelBuilder, LoopKind, UnOp};
use std::sync::Arc;

/// Float tolerance without transcendentals (FMA contraction, reassociation, OpenCL `pow`).
const TOL: f64 = 1e-5;
/// With the approximated transcendentals (a few ulp; OpenCL's `erf` up to 16).
const TOL_MATH: f64 = 2e-5;

/// The plan every target gives a kernel that is one vectorised loop: one vector loop on the
/// CPU, one parallel phase on OpenCL.
fn one_parallel_loop(c: &Compiled) {
    c.expect_plan(Some(1), Some((1, 1)));
}

#[test]
fn elementwise_chains_match_the_interpreter() {
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
    for target in Target::all() {
        for f in &chains {
            for kind in [LoopKind::Vectorize, LoopKind::Serial] {
                let kernel = elementwise(kind, f);
                for n in [0, 1, 3, 4, 37, 1000] {
                    let compiled = check_on(&target, &kernel, &[n], TOL_MATH);
                    match kind {
                        LoopKind::Vectorize => one_parallel_loop(&compiled),
                        _ => compiled.expect_plan(Some(0), None),
                    }
                }
            }
        }
    }
}

#[test]
fn broadcasting_with_div_mod_indices() {
    // out[i, j, l] = x[i, j, l] * s[j] + t[l], over one flat loop decomposed with div/mod
    // (gathers) and over a nest (splats and contiguous loads).
    let (d0, d1, d2) = (3i64, 5i64, 6i64);
    let mut flat = KernelBuilder::new("broadcast_flat");
    let x = flat.input("x", DType::F32, [d0, d1, d2]);
    let s = flat.input("s", DType::F32, [d1]);
    let t = flat.input("t", DType::F32, [1, d2]);
    let out = flat.output("out", DType::F32, [d0, d1, d2]);
    flat.for_(d0 * d1 * d2, LoopKind::Vectorize, |k, f| {
        let j = f.clone().floor_div(d2).floor_mod(d1);
        let l = f.clone().floor_mod(d2);
        let v = Expr::load(x, f.clone()) * Expr::load(s, j) + Expr::load(t, l);
        k.store(out, f, v);
    });
    let flat = flat.finish().unwrap();

    let mut nest = KernelBuilder::new("broadcast_nest");
    let x = nest.input("x", DType::F32, [d0, d1, d2]);
    let s = nest.input("s", DType::F32, [d1]);
    let t = nest.input("t", DType::F32, [1, d2]);
    let out = nest.output("out", DType::F32, [d0, d1, d2]);
    nest.for_(d0, LoopKind::Parallel, |k, i| {
        k.for_(d1, LoopKind::Serial, |k, j| {
            k.for_(d2, LoopKind::Vectorize, |k, l| {
                let idx = [i.clone(), j.clone(), l.clone()];
                let v = k.load(x, &idx) * k.load(s, &idx[1..2]) + k.load(t, &idx);
                k.store_at(out, &idx, v);
            })
        })
    });
    let nest = nest.finish().unwrap();
    for target in Target::all() {
        one_parallel_loop(&check_on(&target, &flat, &[], TOL));
        one_parallel_loop(&check_on(&target, &nest, &[], TOL));
    }
}

/// `y[i] = sum_j x[i, j]` (or over axis 0), the inner loop marked `kind`.
fn row_sum(axis: usize, kind: LoopKind) -> Kernel {
    let mut k = KernelBuilder::new("sum");
    let (n, m) = (k.sym("n"), k.sym("m"));
    let x = k.input("x", DType::F32, [n, m]);
    let y = k.output("y", DType::F32, [if axis == 1 { n } else { m }]);
    let acc = k.local("acc", DType::F32);
    let (outer, inner) = if axis == 1 { (n, m) } else { (m, n) };
    k.for_(outer, LoopKind::Parallel, |k, o| {
        k.assign(acc, Expr::f32(0.0));
        k.for_(inner, kind, |k, r| {
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
    for target in Target::all() {
        for axis in [0, 1] {
            for kind in [LoopKind::Vectorize, LoopKind::Serial] {
                let kernel = row_sum(axis, kind);
                for (n, m) in [(0, 5), (3, 0), (1, 1), (4, 7), (9, 33), (300, 17)] {
                    let compiled = check_on(&target, &kernel, &[n, m], TOL);
                    compiled.expect_plan(None, Some((1, 1)));
                }
            }
        }
    }
}

#[test]
fn softmax_rows() {
    let kernel = builders::softmax(10);
    for target in Target::all() {
        for rows in [0, 1, 6, 65] {
            check_on(&target, &kernel, &[rows], TOL_MATH).expect_plan(Some(3), Some((1, 1)));
        }
    }
}

/// `out[i, j] = relu(sum_k x[i, k] * w[j, k] + b[j])` (TVM's dense layout), vectorised over
/// `k` (a reduction) or over `j` (a private accumulator around a serial `k` loop).
fn dense(vectorise_j: bool, k_dim: i64) -> Kernel {
    let (units, batch) = (6i64, 3i64);
    let mut kb = KernelBuilder::new("dense_bias_relu");
    let x = kb.input("x", DType::F32, [batch, k_dim]);
    let w = kb.input("w", DType::F32, [units, k_dim]);
    let b = kb.input("b", DType::F32, [units]);
    let out = kb.output("out", DType::F32, [batch, units]);
    let acc = kb.local("acc", DType::F32);
    let (j_kind, k_kind) = if vectorise_j {
        (LoopKind::Vectorize, LoopKind::Serial)
    } else {
        (LoopKind::Serial, LoopKind::Vectorize)
    };
    kb.for_(batch, LoopKind::Parallel, |kb, i| {
        kb.for_(units, j_kind, |kb, j| {
            kb.assign(acc, Expr::f32(0.0));
            kb.for_(k_dim, k_kind, |kb, r| {
                let v = Expr::local(acc) + kb.load(x, &[i.clone(), r.clone()]) * kb.load(w, &[j.clone(), r]);
                kb.assign(acc, v);
            });
            let v = relu(Expr::local(acc) + kb.load(b, std::slice::from_ref(&j)));
            kb.store_at(out, &[i.clone(), j], v);
        })
    });
    kb.finish().unwrap()
}

#[test]
fn dense_with_fused_bias_relu() {
    for target in Target::all() {
        for vectorise_j in [false, true] {
            for k_dim in [1, 4, 13] {
                let compiled = check_on(&target, &dense(vectorise_j, k_dim), &[], TOL);
                // `acc` is first assigned inside the `j` loop, so on OpenCL the batch loop
                // stays one work-item.
                compiled.expect_plan(Some(1), (!vectorise_j).then_some((1, 0)));
            }
        }
    }
}

/// The native matrix product (`gemm`) into a temp, then bias and relu: what the dense,
/// matmul and conv2d rules emit (the models' parity tests run such kernels many times, reusing
/// their temps). One row takes the GEMV, a few rows the GEMV per row, more the `gemm` crate;
/// `[k, n]` right operands always the crate. OpenCL expands the product into loops.
#[test]
fn gemm_then_epilogue() {
    for (m, units, k_dim) in [(1, 1, 1), (1, 5, 16), (1, 9, 37), (1, 450, 300), (3, 9, 37), (12, 33, 20)] {
        for trans_b in [true, false] {
            let kernel = dense_layer(m, units, k_dim, trans_b, relu);
            for target in Target::all() {
                // Sums of up to 300 products, reassociated (lanes, blocks): their rounding
                // error scales with the terms, not with a sum that cancels (inputs are in
                // [-1, 1]).
                check_on(&target, &kernel, &[], 1e-4);
            }
        }
    }
}

#[test]
fn int32_arithmetic_is_exact() {
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
    for target in Target::all() {
        for op in ops {
            for kind in [LoopKind::Vectorize, LoopKind::Serial] {
                let mut k = KernelBuilder::new("int");
                let n = k.sym("n");
                let a = k.input("a", DType::I32, [n]);
                let b = k.input("b", DType::I32, [n]);
                let y = k.output("y", DType::I32, [n]);
                let lt = k.output("lt", DType::BOOL, [n]);
                k.for_(n, kind, |k, i| {
                    let (va, vb) = (Expr::load(a, i.clone()), Expr::load(b, i.clone()));
                    let r =
                        va.clone().binary(op, vb.clone()) + va.clone().unary(UnOp::Sign) - vb.clone().abs();
                    k.store(y, i.clone(), r);
                    k.store(lt, i, va.lt(vb.clone()).and(!vb.equal(Expr::i32(3))));
                });
                check_on(&target, &k.finish().unwrap(), &[23], 0.0);
            }
        }
    }
}

#[test]
fn integer_edge_cases_wrap_and_never_trap() {
    let min32 = i64::from(i32::MIN);
    let cases = [
        (
            DType::I32,
            vec![(7, 0), (-7, 2), (7, -2), (min32, -1), (-8, 3), (0, -5), (min32, 0), (i32::MAX.into(), 2)],
        ),
        (DType::I8, vec![(-128, -1), (-7, 0), (100, -3), (-100, 7), (127, 127)]),
        (DType::U8, vec![(200, 0), (200, 7), (3, 200), (255, 255)]),
        (DType::I64, vec![(i64::MIN, -1), (i64::MIN, 0), (-9, 4), (9, -4), (i64::MAX, 2)]),
    ];
    for target in Target::all() {
        for (dtype, cases) in &cases {
            let (dtype, len) = (*dtype, cases.len() as i64);
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
            let (expected, actual, _) = run_both_on(&target, &kernel, &[a_t, b_t], &outs, &[]);
            assert_close(&expected, &actual, 0.0);
        }
    }
}

#[test]
fn int8_products_accumulate_in_int32() {
    // y[i] = sum_k int32(a[i, k]) * int32(b[k]) + int32(u[i]), wrapping like the interpreter.
    let (rows, depth) = (5i64, 19i64);
    for target in Target::all() {
        for kind in [LoopKind::Vectorize, LoopKind::Serial] {
            let mut k = KernelBuilder::new("qdot");
            let a = k.input("a", DType::I8, [rows, depth]);
            let b = k.input("b", DType::I8, [depth]);
            let u = k.input("u", DType::U8, [rows]);
            let y = k.output("y", DType::I32, [rows]);
            let acc = k.local("acc", DType::I32);
            k.for_(rows, LoopKind::Parallel, |k, i| {
                k.assign(acc, Expr::load(u, i.clone()).cast(DType::I32));
                k.for_(depth, kind, |k, r| {
                    let p = k.load(a, &[i.clone(), r.clone()]).cast(DType::I32)
                        * k.load(b, &[r]).cast(DType::I32);
                    k.assign(acc, Expr::local(acc) + p);
                });
                k.store(y, i, Expr::local(acc));
            });
            let compiled = check_on(&target, &k.finish().unwrap(), &[], 0.0);
            compiled.expect_plan(None, Some((1, 1)));
        }
    }
}

#[test]
fn casts_between_all_dtypes() {
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
    for target in Target::all() {
        let (expected, actual, _) =
            run_both_on(&target, &kernel, std::slice::from_ref(&input), &outputs, &[]);
        assert_close(&expected, &actual, 0.0);
    }
}

#[test]
fn size_zero_and_one_extents() {
    let mut k = KernelBuilder::new("tiny");
    let x = k.input("x", DType::F32, [1, 0]);
    let s = k.input("s", DType::F32, Vec::<i64>::new());
    let y = k.output("y", DType::F32, [1]);
    let z = k.output("z", DType::F32, [0, 3]);
    k.for_(1, LoopKind::Vectorize, |k, i| {
        k.store(y, i.clone(), Expr::load(s, 0) + Expr::f32(1.0));
        k.for_(0, LoopKind::Vectorize, |k, j| k.store(z, j.clone(), Expr::load(x, j)));
    });
    let kernel = k.finish().unwrap();
    for target in Target::all() {
        check_on(&target, &kernel, &[], 0.0);
    }
}

#[test]
fn symbolic_extents_reuse_one_compilation() {
    let kernel = row_sum(1, LoopKind::Vectorize);
    let x = random(&mut Rng(3), DType::F32, &[5, 9]);
    assert_eq!(relay_kir::infer_syms(&kernel, &[x.shape()], &[&[5]]).unwrap(), vec![5, 9]);
    for target in Target::all() {
        let compiled = target.compile(&kernel).unwrap();
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
}

#[test]
fn temps_conditionals_and_unrolled_loops() {
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
    // A private local read after its vectorised loop holds the last iteration's value.
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
    for target in Target::all() {
        for n in [0, 8, 29] {
            // On OpenCL the first loop runs in parallel; the rest shares locals and is one
            // serial phase.
            check_on(&target, &kernel, &[n], TOL_MATH).expect_plan(None, Some((2, 1)));
        }
    }
}

#[test]
fn pow_and_float64() {
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
    for target in Target::all() {
        if !target.fp64() {
            eprintln!("skipping {}: no fp64", target.name());
            continue;
        }
        // On the CPU, pow and float64 keep the loop scalar.
        check_on(&target, &kernel, &[], 1e-6).expect_plan(Some(0), None);
    }
}

#[test]
fn gathers_need_clamped_indices() {
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
    let raw = build(false);
    for target in Target::all() {
        check_on(&target, &build(true), &[11], 0.0);
        let compiled = target.compile(&raw).unwrap();
        let (inputs, mut outputs) = args(&raw, &[3], 1);
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let err = compiled.run(&refs, &mut outputs, &[3]).unwrap_err();
        assert!(matches!(err, JitError::Bounds(BoundsError::OutOfBounds { .. })), "{err}");
    }
}

#[test]
fn bad_calls_are_errors() {
    let kernel = row_sum(1, LoopKind::Vectorize);
    // A kernel without syms is proved at compile time.
    let mut k = KernelBuilder::new("oob");
    let x = k.input("x", DType::F32, [4]);
    let y = k.output("y", DType::F32, [4]);
    k.for_(4, LoopKind::Serial, |k, i| k.store(y, i.clone(), Expr::load(x, i + 1)));
    let out_of_bounds = k.finish().unwrap();
    // A malformed kernel is rejected.
    let mut malformed = kernel.clone();
    malformed.body.push(relay_kir::Stmt::Store {
        buf: relay_kir::BufferId(0),
        index: Index::Const(0),
        value: Expr::f32(0.0),
    });
    for target in Target::all() {
        let compiled = target.compile(&kernel).unwrap();
        let x = Tensor::zeros(DType::F32, vec![2, 3]).unwrap();
        let mut out = [Tensor::zeros(DType::F32, vec![2]).unwrap()];
        assert!(matches!(compiled.run(&[&x], &mut out, &[2, 4]), Err(JitError::Call(_))));
        assert!(matches!(compiled.run(&[&x], &mut out, &[2]), Err(JitError::Call(_))));
        assert!(matches!(compiled.run(&[], &mut out, &[2, 3]), Err(JitError::Call(_))));
        let ints = Tensor::zeros(DType::I32, vec![2, 3]).unwrap();
        assert!(matches!(compiled.run(&[&ints], &mut out, &[2, 3]), Err(JitError::Call(_))));
        assert_eq!(compiled.run(&[&x], &mut out, &[2, 3]), Ok(()));
        assert!(matches!(target.compile(&out_of_bounds), Err(JitError::Bounds(_))));
        assert!(matches!(target.compile(&malformed), Err(JitError::Verify(_))));
    }
}

#[test]
fn compiled_kernels_run_on_many_threads() {
    let kernel = elementwise(LoopKind::Vectorize, |a, b, c| (a * b + c).tanh());
    let (inputs, outputs) = args(&kernel, &[101], 9);
    let refs: Vec<&Tensor> = inputs.iter().collect();
    for target in Target::all() {
        let compiled = Arc::new(target.compile(&kernel).unwrap());
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
}

#[test]
fn loop_carried_dependences_stay_serial() {
    let mut k = KernelBuilder::new("dependences");
    let n = k.sym("n");
    let x = k.input("x", DType::F32, [n]);
    let prefix = k.output("prefix", DType::F32, [n]);
    let total = k.output("total", DType::F32, [1]);
    let shifted = k.output("shifted", DType::F32, [n]);
    let prev = k.local("prev", DType::F32);
    // prefix[i + 1] = prefix[i] + x[i + 1]: reads what the previous iteration wrote.
    k.for_(Index::from(n) - 1, LoopKind::Vectorize, |k, i| {
        let v = Expr::load(prefix, i.clone()) + Expr::load(x, i.clone() + 1);
        k.store(prefix, i + 1, v);
    });
    // total[0] += x[i]: every iteration writes the same element.
    k.for_(n, LoopKind::Vectorize, |k, i| k.store(total, 0, Expr::load(total, 0) + Expr::load(x, i)));
    // shifted[i] = prev; prev = x[i]: a local read before it is written.
    k.for_(n, LoopKind::Vectorize, |k, i| {
        k.store(shifted, i.clone(), Expr::local(prev));
        k.assign(prev, Expr::load(x, i));
    });
    let kernel = k.finish().unwrap();
    for target in Target::all() {
        for n in [1, 2, 9, 200] {
            // On OpenCL two loops plan as parallel, but their windows overlap at run time
            // (prefix reads what the previous iteration wrote; total's stride is 0): they get
            // one work-item.
            check_on(&target, &kernel, &[n], TOL).expect_plan(Some(0), Some((3, 2)));
        }
    }
}

#[test]
fn outputs_written_in_one_loop_share_a_private_local() {
    // The shape of a multi-output FuseOps kernel (the LSTM cell): `c` is computed once per
    // element into a local, stored, and read by the second output in the same iteration.
    let mut k = KernelBuilder::new("cell");
    let n = k.sym("n");
    let g = k.input("g", DType::F32, [n]);
    let fc = k.input("fc", DType::F32, [n]);
    let c_out = k.output("c", DType::F32, [n]);
    let h_out = k.output("h", DType::F32, [n]);
    let c = k.local("c", DType::F32);
    k.for_(n, LoopKind::Vectorize, |k, i| {
        k.assign(c, Expr::load(g, i.clone()).tanh() + Expr::load(fc, i.clone()));
        k.store(c_out, i.clone(), Expr::local(c));
        k.store(h_out, i.clone(), Expr::load(g, i).sigmoid() * Expr::local(c).tanh());
    });
    let kernel = k.finish().unwrap();
    for target in Target::all() {
        for n in [1, 4, 9, 150] {
            one_parallel_loop(&check_on(&target, &kernel, &[n], TOL_MATH));
        }
    }
}

/// Temps start every call zero-filled where the code may read what it did not write (padding,
/// as im2col's), whatever the previous call left there — the CPU reuses its temps between
/// calls; temps written whole first are not refilled and cannot tell.
#[test]
fn temps_start_each_call_as_kir_promises() {
    let mut k = KernelBuilder::new("padded");
    let x = k.input("x", DType::F32, [4]);
    let y = k.output("y", DType::F32, [6]);
    let padded = k.temp("padded", DType::F32, [6]);
    let whole = k.temp("whole", DType::F32, [6]);
    // The positive elements of `x` go to `padded[1..5]`; the rest, and 0 and 5, stay zero.
    k.for_(4, LoopKind::Serial, |k, i| {
        let v = Expr::load(x, i.clone());
        k.if_else(v.clone().gt(Expr::f32(0.0)), |k| k.store(padded, i.clone() + 1, v.clone()), |_| {})
    });
    k.for_(6, LoopKind::Vectorize, |k, i| k.store(whole, i.clone(), Expr::load(padded, i).exp()));
    k.for_(6, LoopKind::Vectorize, |k, i| {
        let v = Expr::load(whole, i.clone()) + Expr::load(padded, i.clone());
        k.store(y, i, v)
    });
    let kernel = k.finish().unwrap();
    for target in Target::all() {
        let compiled = target.compile(&kernel).unwrap();
        // The second call writes nothing into `padded`: it must read zeros, not the first
        // call's values.
        for x in [[1.0f32, 2.0, 3.0, 4.0], [-1.0; 4], [0.5, -2.0, 0.25, -1.0]] {
            let input = Tensor::from_vec(vec![4], x.to_vec()).unwrap();
            let mut expected = [Tensor::zeros(DType::F32, vec![6]).unwrap()];
            interp::run(&kernel, &[&input], &mut expected, &[]).unwrap();
            let mut actual = [Tensor::zeros(DType::F32, vec![6]).unwrap()];
            compiled.run(&[&input], &mut actual, &[]).unwrap();
            assert_close(&expected, &actual, TOL_MATH);
        }
    }
}

/// A vectorised loop of constant extent that is not a multiple of the vector width ends on a
/// vector overlapping the previous one when its iterations are independent, and on scalar
/// iterations when it reads a buffer it writes (redoing an iteration would add twice); both
/// agree with the interpreter, and a local read after the loop holds the last element's value.
#[test]
fn vector_loops_end_on_an_overlapping_vector_only_when_iterations_are_independent() {
    for target in Target::all() {
        for n in [5i64, 7, 150] {
            let mut k = KernelBuilder::new("tail");
            let x = k.input("x", DType::F32, [n]);
            let y = k.output("y", DType::F32, [n]);
            let twice = k.output("twice", DType::F32, [n]);
            let last = k.output("last", DType::F32, [1]);
            let l = k.local("l", DType::F32);
            k.for_(n, LoopKind::Vectorize, |k, i| {
                k.assign(l, Expr::load(x, i.clone()).tanh() * Expr::f32(2.0));
                k.store(y, i, Expr::local(l));
            });
            k.store(last, 0, Expr::local(l));
            k.for_(n, LoopKind::Vectorize, |k, i| k.store(twice, i.clone(), Expr::load(x, i)));
            k.for_(n, LoopKind::Vectorize, |k, i| {
                let v = Expr::load(twice, i.clone()) + Expr::load(x, i.clone());
                k.store(twice, i, v)
            });
            check_on(&target, &k.finish().unwrap(), &[], TOL_MATH);
        }
    }
}

#[test]
fn strided_loads_match_the_interpreter_at_every_extent_and_offset() {
    // out[i] = x[s·i + o] · 2 + k[s·i + o + 1] over float32 and int32: the lanes' loads are two
    // vectors and a shuffle (s = 2, 3) or gathers (s = 4); the extents leave every tail length,
    // with a symbolic extent (scalar tail) and a constant one (overlapping last vector). `x`
    // ends at the last lane's element, so a load past it would fail the bounds proof.
    let build = |s: i64, o: i64, dtype: DType, extent: Option<i64>| {
        let mut k = KernelBuilder::new("strided");
        let n = k.sym("n");
        let len = k.sym("len");
        let x = k.input("x", dtype, [len]);
        let y = k.input("y", dtype, [len]);
        let out = k.output("out", dtype, [n]);
        let extent = extent.map_or(Index::from(n), Index::Const);
        k.for_(extent, LoopKind::Vectorize, |k, i| {
            let at = i.clone() * s + o;
            let two = if dtype == DType::F32 { Expr::f32(2.0) } else { Expr::i32(2) };
            k.store(out, i, Expr::load(x, at.clone()) * two + Expr::load(y, at + 1));
        });
        k.finish().unwrap()
    };
    for s in [2, 3, 4] {
        for o in [0, 1, 2, 5] {
            for dtype in [DType::F32, DType::I32] {
                for n in [0, 1, 3, 4, 5, 6, 7, 8, 9, 13, 37] {
                    for extent in [None, Some(n)] {
                        let kernel = build(s, o, dtype, extent);
                        let compiled = check_on(&Target::Cpu, &kernel, &[n, s * n + o + 1], 0.0);
                        if extent.is_none() || n > 1 {
                            // (Over a constant 0 or 1 iterations the indices simplify to
                            // constants and the loop runs serially.)
                            compiled.expect_plan(Some(1), None);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn reinterpretation_keeps_every_bit() {
    // `float32` → `int32`/`uint32` and, after an integer step, back (the next float up); `int64`
    // → `float64` and back. Vectorised and scalar, bit for bit against `to_bits`, NaN and
    // signed zero included (the interpreter is compared apart from the NaN, which it quiets
    // only when signalling: this one is quiet).
    let xs = [1.0f32, -0.0, 0.1, f32::MAX, f32::MIN_POSITIVE / 2.0, f32::INFINITY, f32::NAN, -3.5, 7.0];
    let ls = [0i64, -1, 1 << 52, 0x7ff0_0000_0000_0000, i64::MIN, 4_611_686_018_427_387_904];
    for target in Target::all() {
        for kind in [LoopKind::Vectorize, LoopKind::Serial] {
            let mut k = KernelBuilder::new("bits");
            let (n, m) = (xs.len() as i64, ls.len() as i64);
            let x = k.input("x", DType::F32, [n]);
            let l = k.input("l", DType::I64, [m]);
            let yi = k.output("yi", DType::I32, [n]);
            let yu = k.output("yu", DType::U32, [n]);
            let up = k.output("up", DType::F32, [n]);
            let yd = k.output("yd", DType::F64, [m]);
            let yl = k.output("yl", DType::I64, [m]);
            // `uint32` has no vector lanes: its loop of its own, so that `kind` holds for the
            // first.
            k.for_(n, kind, |k, i| {
                let v = Expr::load(x, i.clone());
                k.store(yi, i.clone(), v.clone().reinterpret(DType::I32));
                let next = (v.reinterpret(DType::I32) + Expr::i32(1)).reinterpret(DType::F32);
                k.store(up, i, next);
            });
            k.for_(n, LoopKind::Serial, |k, i| {
                k.store(yu, i.clone(), Expr::load(x, i).reinterpret(DType::U32))
            });
            k.for_(m, LoopKind::Serial, |k, i| {
                let d = Expr::load(l, i.clone()).reinterpret(DType::F64);
                k.store(yd, i.clone(), d.clone());
                k.store(yl, i, d.reinterpret(DType::I64));
            });
            let kernel = k.finish().unwrap();
            let inputs =
                [Tensor::from_vec(vec![xs.len()], xs.to_vec()).unwrap(), int_tensor(DType::I64, &ls)];
            let outs = [
                Tensor::zeros(DType::I32, vec![xs.len()]).unwrap(),
                Tensor::zeros(DType::U32, vec![xs.len()]).unwrap(),
                Tensor::zeros(DType::F32, vec![xs.len()]).unwrap(),
                Tensor::zeros(DType::F64, vec![ls.len()]).unwrap(),
                Tensor::zeros(DType::I64, vec![ls.len()]).unwrap(),
            ];
            let (expected, actual, _) = run_both_on(&target, &kernel, &inputs, &outs, &[]);
            for (e, a) in expected.iter().zip(&actual).take(2) {
                assert_close(std::slice::from_ref(e), std::slice::from_ref(a), 0.0);
            }
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let want_i: Vec<i32> = xs.iter().map(|x| x.to_bits() as i32).collect();
            assert_eq!(actual[0].as_slice::<i32>().unwrap(), want_i.as_slice(), "{}", target.name());
            let want_u: Vec<u32> = xs.iter().map(|x| x.to_bits()).collect();
            assert_eq!(actual[1].as_slice::<u32>().unwrap(), want_u.as_slice(), "{}", target.name());
            let want_up: Vec<u32> = xs.iter().map(|x| x.to_bits().wrapping_add(1)).collect();
            assert_eq!(bits(actual[2].as_slice::<f32>().unwrap()), want_up, "{}", target.name());
            let doubles: Vec<u64> =
                actual[3].as_slice::<f64>().unwrap().iter().map(|d| d.to_bits()).collect();
            assert_eq!(doubles, ls.iter().map(|&v| v as u64).collect::<Vec<_>>(), "{}", target.name());
            assert_eq!(actual[4].as_slice::<i64>().unwrap(), ls.as_slice(), "{}", target.name());
        }
    }
}
