//! Hand-built kernels: the JIT against the kir interpreter.

mod builders;
mod common;

use builders::{elementwise, int_tensor, relu};
use common::{args, assert_close, check, jit, run_both};
use relay_devices::{DType, Scalar, Tensor};
use relay_jit::{JitError, KernelCache};
use relay_kir::{BinOp, BoundsError, Expr, Index, Kernel, KernelBuilder, LoopKind, UnOp};
use std::sync::atomic::{AtomicU8, Ordering};

/// The stop flag of calls nobody stops.
static NEVER: AtomicU8 = AtomicU8::new(0);

/// Float tolerance for kernels without transcendentals (FMA contraction, reassociation).
const TOL: f64 = 1e-5;
/// With the approximated transcendentals.
const TOL_MATH: f64 = 2e-5;

#[test]
fn elementwise_chains_vectorise_and_match() {
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
    ];
    for (i, f) in chains.iter().enumerate() {
        for kind in [LoopKind::Vectorize, LoopKind::Serial] {
            let kernel = elementwise(kind, f);
            for n in [0, 1, 3, 4, 37] {
                let compiled = check(&kernel, &[n], TOL_MATH);
                let vectorised = usize::from(kind == LoopKind::Vectorize);
                assert_eq!(compiled.stats().vectorized_loops, vectorised, "chain {i}");
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
    assert_eq!(check(&flat, &[], TOL).stats().vectorized_loops, 1);

    let mut nest = KernelBuilder::new("broadcast_nest");
    let x = nest.input("x", DType::F32, [d0, d1, d2]);
    let s = nest.input("s", DType::F32, [d1]);
    let t = nest.input("t", DType::F32, [1, d2]);
    let out = nest.output("out", DType::F32, [d0, d1, d2]);
    nest.for_(d0, LoopKind::Serial, |k, i| {
        k.for_(d1, LoopKind::Serial, |k, j| {
            k.for_(d2, LoopKind::Vectorize, |k, l| {
                let idx = [i.clone(), j.clone(), l.clone()];
                let v = k.load(x, &idx) * k.load(s, &idx[1..2]) + k.load(t, &idx);
                k.store_at(out, &idx, v);
            })
        })
    });
    let nest = nest.finish().unwrap();
    let (inputs, outputs) = args(&flat, &[], 7);
    let (expected, _, _) = run_both(&flat, &inputs, &outputs, &[]);
    let (_, actual, _) = run_both(&nest, &inputs, &outputs, &[]);
    assert_close(&expected, &actual, TOL);
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
    for axis in [0, 1] {
        for kind in [LoopKind::Vectorize, LoopKind::Serial] {
            let kernel = row_sum(axis, kind);
            for (n, m) in [(0, 5), (3, 0), (1, 1), (4, 7), (9, 33)] {
                check(&kernel, &[n, m], TOL);
            }
        }
    }
}

#[test]
fn softmax_rows() {
    let kernel = builders::softmax(10);
    let compiled = check(&kernel, &[6], TOL_MATH);
    assert_eq!(compiled.stats().vectorized_loops, 3);
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
    for vectorise_j in [false, true] {
        for k_dim in [1, 4, 13] {
            let compiled = check(&dense(vectorise_j, k_dim), &[], TOL);
            assert_eq!(compiled.stats().vectorized_loops, 1);
        }
    }
}

/// The native matrix product (`gemm`) into a temp, then bias and relu: what the dense,
/// matmul and conv2d rules emit (the models' parity tests run such kernels many times, reusing
/// their temps). One row takes the GEMV, a few rows the GEMV per row, more the `gemm` crate;
/// `[k, n]` right operands always the crate.
#[test]
fn gemm_then_epilogue() {
    for (m, units, k_dim) in [(1, 1, 1), (1, 5, 16), (1, 9, 37), (1, 450, 300), (3, 9, 37), (12, 33, 20)] {
        for trans_b in [true, false] {
            let kernel = dense_layer(m, units, k_dim, trans_b, relu);
            // Sums of up to 300 products, reassociated (lanes, blocks): their rounding error
            // scales with the terms, not with a sum that cancels (inputs are in [-1, 1]).
            check(&kernel, &[], 1e-4);
        }
    }
}

/// `out = activation(x · w + b)` for `x: [m, k_dim]`, `w: [units, k_dim]` (`trans_b`) or
/// `[k_dim, units]`: a `gemm` into a temp, then the epilogue.
fn dense_layer(m: i64, units: i64, k_dim: i64, trans_b: bool, activation: fn(Expr) -> Expr) -> Kernel {
    let mut kb = KernelBuilder::new("dense_layer");
    let x = kb.input("x", DType::F32, [m, k_dim]);
    let w_shape = if trans_b { [units, k_dim] } else { [k_dim, units] };
    let w = kb.input("w", DType::F32, w_shape);
    let b = kb.input("b", DType::F32, [units]);
    let out = kb.output("out", DType::F32, [m, units]);
    let t = kb.temp("t", DType::F32, [m * units]);
    kb.gemm(t, x, w, m, units, k_dim, trans_b);
    kb.for_(m, LoopKind::Serial, |kb, i| {
        kb.for_(units, LoopKind::Vectorize, |kb, j| {
            let flat = i.clone() * units + j.clone();
            let v =
                activation(kb.load(t, std::slice::from_ref(&flat)) + kb.load(b, std::slice::from_ref(&j)));
            kb.store(out, flat, v);
        });
    });
    kb.finish().unwrap()
}

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
                let r = va.clone().binary(op, vb.clone()) + va.clone().unary(UnOp::Sign) - vb.clone().abs();
                k.store(y, i.clone(), r);
                k.store(lt, i, va.lt(vb));
            });
            check(&k.finish().unwrap(), &[23], 0.0);
        }
    }
}

#[test]
fn integer_division_edge_cases() {
    let min32 = i64::from(i32::MIN);
    for (dtype, cases) in [
        (DType::I32, vec![(7, 0), (-7, 2), (7, -2), (min32, -1), (-8, 3), (0, -5), (min32, 0)]),
        (DType::I8, vec![(-128, -1), (-7, 0), (100, -3), (-100, 7)]),
        (DType::U8, vec![(200, 0), (200, 7), (3, 200)]),
        (DType::I64, vec![(i64::MIN, -1), (i64::MIN, 0), (-9, 4), (9, -4)]),
    ] {
        let len = cases.len() as i64;
        let a_t = int_tensor(dtype, &cases.iter().map(|c| c.0).collect::<Vec<_>>());
        let b_t = int_tensor(dtype, &cases.iter().map(|c| c.1).collect::<Vec<_>>());
        for op in [BinOp::Div, BinOp::FloorDiv, BinOp::FloorMod] {
            let mut k = KernelBuilder::new("division");
            let a = k.input("a", dtype, [len]);
            let b = k.input("b", dtype, [len]);
            let y = k.output("y", dtype, [len]);
            k.for_(len, LoopKind::Serial, |k, i| {
                k.store(y, i.clone(), Expr::load(a, i.clone()).binary(op, Expr::load(b, i)));
            });
            let kernel = k.finish().unwrap();
            let out = [Tensor::zeros(dtype, vec![cases.len()]).unwrap()];
            let (expected, actual, _) = run_both(&kernel, &[a_t.clone(), b_t.clone()], &out, &[]);
            assert_close(&expected, &actual, 0.0);
        }
    }
}

#[test]
fn int8_products_accumulate_in_int32() {
    // y[i] = sum_k int32(a[i, k]) * int32(b[k]) + int32(u[i]), wrapping like the interpreter.
    let (rows, depth) = (5i64, 19i64);
    for kind in [LoopKind::Vectorize, LoopKind::Serial] {
        let mut k = KernelBuilder::new("qdot");
        let a = k.input("a", DType::I8, [rows, depth]);
        let b = k.input("b", DType::I8, [depth]);
        let u = k.input("u", DType::U8, [rows]);
        let y = k.output("y", DType::I32, [rows]);
        let acc = k.local("acc", DType::I32);
        k.for_(rows, LoopKind::Serial, |k, i| {
            k.assign(acc, Expr::load(u, i.clone()).cast(DType::I32));
            k.for_(depth, kind, |k, r| {
                let p =
                    k.load(a, &[i.clone(), r.clone()]).cast(DType::I32) * k.load(b, &[r]).cast(DType::I32);
                k.assign(acc, Expr::local(acc) + p);
            });
            k.store(y, i, Expr::local(acc));
        });
        check(&k.finish().unwrap(), &[], 0.0);
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
    let (expected, actual, _) = run_both(&kernel, &[input], &outputs, &[]);
    assert_close(&expected, &actual, 0.0);
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
    check(&k.finish().unwrap(), &[], 0.0);
}

#[test]
fn symbolic_extents_and_inferred_syms() {
    let kernel = row_sum(1, LoopKind::Vectorize);
    let x = common::random(&mut common::Rng(3), DType::F32, &[5, 9]);
    let syms = relay_kir::infer_syms(&kernel, &[x.shape()], &[&[5]]).unwrap();
    assert_eq!(syms, vec![5, 9]);
    let (expected, actual, compiled) =
        run_both(&kernel, std::slice::from_ref(&x), &[Tensor::zeros(DType::F32, vec![5]).unwrap()], &syms);
    assert_close(&expected, &actual, TOL);
    // The same compiled code with other sizes.
    let x2 = common::random(&mut common::Rng(4), DType::F32, &[2, 3]);
    let mut out = [Tensor::zeros(DType::F32, vec![2]).unwrap()];
    compiled.run(&[&x2], &mut out, &[2, 3]).unwrap();
    let data = x2.as_slice::<f32>().unwrap();
    let sums = [data[..3].iter().sum::<f32>(), data[3..].iter().sum::<f32>()];
    assert_close(&[Tensor::from_vec(vec![2], sums.to_vec()).unwrap()], &out, TOL);
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
    for n in [0, 8, 29] {
        check(&kernel, &[n], TOL_MATH);
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
    let compiled = check(&kernel, &[], 1e-6);
    assert_eq!(compiled.stats().vectorized_loops, 0, "pow and float64 keep the loop scalar");
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
    check(&build(true), &[11], 0.0);
    let raw = build(false);
    let compiled = jit().compile(&raw).unwrap();
    let (inputs, mut outputs) = args(&raw, &[3], 1);
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let err = compiled.run(&refs, &mut outputs, &[3]).unwrap_err();
    assert!(matches!(err, JitError::Bounds(BoundsError::OutOfBounds { .. })), "{err}");
}

#[test]
fn bad_calls_are_errors() {
    let kernel = row_sum(1, LoopKind::Vectorize);
    let compiled = jit().compile(&kernel).unwrap();
    let x = Tensor::zeros(DType::F32, vec![2, 3]).unwrap();
    let mut out = [Tensor::zeros(DType::F32, vec![2]).unwrap()];
    assert!(matches!(compiled.run(&[&x], &mut out, &[2, 4]), Err(JitError::Call(_))));
    assert!(matches!(compiled.run(&[&x], &mut out, &[2]), Err(JitError::Call(_))));
    assert!(matches!(compiled.run(&[], &mut out, &[2, 3]), Err(JitError::Call(_))));
    let ints = Tensor::zeros(DType::I32, vec![2, 3]).unwrap();
    assert!(matches!(compiled.run(&[&ints], &mut out, &[2, 3]), Err(JitError::Call(_))));
    assert_eq!(compiled.run(&[&x], &mut out, &[2, 3]), Ok(()));

    // A kernel without syms is proved at compile time.
    let mut k = KernelBuilder::new("oob");
    let x = k.input("x", DType::F32, [4]);
    let y = k.output("y", DType::F32, [4]);
    k.for_(4, LoopKind::Serial, |k, i| k.store(y, i.clone(), Expr::load(x, i + 1)));
    assert!(matches!(jit().compile(&k.finish().unwrap()), Err(JitError::Bounds(_))));
    // A malformed kernel is rejected.
    let mut bad = kernel.clone();
    bad.body.push(relay_kir::Stmt::Store {
        buf: relay_kir::BufferId(0),
        index: Index::Const(0),
        value: Expr::f32(0.0),
    });
    assert!(matches!(jit().compile(&bad), Err(JitError::Verify(_))));
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
fn compiled_kernels_run_on_many_threads() {
    let kernel = elementwise(LoopKind::Vectorize, |a, b, c| (a * b + c).tanh());
    let compiled = std::sync::Arc::new(jit().compile(&kernel).unwrap());
    let (inputs, outputs) = args(&kernel, &[101], 9);
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let mut expected = outputs.clone();
    compiled.run(&refs, &mut expected, &[101]).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (compiled, inputs, outputs, expected) =
                (compiled.clone(), &inputs, outputs.clone(), &expected);
            s.spawn(move || {
                let refs: Vec<&Tensor> = inputs.iter().collect();
                let mut out = outputs;
                compiled.run(&refs, &mut out, &[101]).unwrap();
                assert_eq!(&out, expected);
            });
        }
    });
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
    for n in [1, 2, 9] {
        let compiled = check(&kernel, &[n], TOL);
        assert_eq!(compiled.stats().vectorized_loops, 0);
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
    for n in [1, 4, 9, 150] {
        let compiled = check(&kernel, &[n], TOL_MATH);
        assert_eq!(compiled.stats().vectorized_loops, 1);
    }
}

/// Reused temps start every call zero-filled where the code may read what it did not write
/// (padding, as im2col's), whatever the previous call left there; temps written whole first
/// are not refilled and cannot tell.
#[test]
fn reused_temps_start_each_call_as_kir_promises() {
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
    let compiled = jit().compile(&kernel).unwrap();
    // The second call writes nothing into `padded`: it must read zeros, not the first
    // call's values.
    for x in [[1.0f32, 2.0, 3.0, 4.0], [-1.0; 4], [0.5, -2.0, 0.25, -1.0]] {
        let input = Tensor::from_vec(vec![4], x.to_vec()).unwrap();
        let mut expected = [Tensor::zeros(DType::F32, vec![6]).unwrap()];
        relay_kir::interp::run(&kernel, &[&input], &mut expected, &[]).unwrap();
        let mut actual = [Tensor::zeros(DType::F32, vec![6]).unwrap()];
        compiled.run(&[&input], &mut actual, &[]).unwrap();
        assert_close(&expected, &actual, TOL_MATH);
    }
}

/// A vectorised loop of constant extent that is not a multiple of the vector width ends on a
/// vector overlapping the previous one when its iterations are independent, and on scalar
/// iterations when it reads a buffer it writes (redoing an iteration would add twice); both
/// agree with the interpreter, and a local read after the loop holds the last element's value.
#[test]
fn vector_loops_end_on_an_overlapping_vector_only_when_iterations_are_independent() {
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
        check(&k.finish().unwrap(), &[], TOL_MATH);
    }
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
