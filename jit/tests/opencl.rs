//! What only the OpenCL target does (on POCL in CI): device-resident tensors and their buffer
//! pool, the program cache, and the float64 extension. What every target does is tested once
//! in `kernels.rs`, which runs on every OpenCL device in an `opencl` build. Without an OpenCL
//! device these tests print why and pass, unless `RELAY_REQUIRE_OPENCL=1` (CI), when they fail.
#![cfg(feature = "opencl")]

mod builders;
mod common;

use common::{assert_close, random, Rng, Target};
use relay_devices::opencl::OpenClDevice;
use relay_devices::{DType, Device, DeviceTensor, Scalar, Tensor};
use relay_jit::{opencl_source, JitError, KernelCache, OpenClKernel};
use relay_kir::{interp, Expr, Kernel, KernelBuilder, LoopKind};
use std::sync::Arc;

/// Every OpenCL device of [`Target::all`].
fn devices() -> Vec<Arc<OpenClDevice>> {
    Target::all()
        .into_iter()
        .filter_map(|t| match t {
            Target::OpenCl(dev) => Some(dev),
            Target::Cpu => None,
        })
        .collect()
}

/// `y[i] = sum_j x[i, j]`.
fn row_sum() -> Kernel {
    let mut k = KernelBuilder::new("sum");
    let (n, m) = (k.sym("n"), k.sym("m"));
    let x = k.input("x", DType::F32, [n, m]);
    let y = k.output("y", DType::F32, [n]);
    let acc = k.local("acc", DType::F32);
    k.for_(n, LoopKind::Parallel, |k, o| {
        k.assign(acc, Expr::f32(0.0));
        k.for_(m, LoopKind::Vectorize, |k, r| {
            let v = Expr::local(acc) + k.load(x, &[o.clone(), r]);
            k.assign(acc, v);
        });
        k.store(y, o, Expr::local(acc));
    });
    k.finish().unwrap()
}

#[test]
fn float64_kernels_enable_the_extension() {
    let mut k = KernelBuilder::new("f64");
    let d = k.input("d", DType::F64, [9]);
    let z = k.output("z", DType::F64, [9]);
    k.for_(9, LoopKind::Vectorize, |k, i| {
        k.store(z, i.clone(), Expr::load(d, i) * Expr::lit(DType::F64, Scalar::Float(0.5)))
    });
    let kernel = k.finish().unwrap();
    assert!(opencl_source(&kernel).unwrap().contains("cl_khr_fp64"));
}

#[test]
fn the_cache_shares_programs_between_structurally_equal_kernels() {
    for dev in devices() {
        let kernel = row_sum();
        let cache = KernelCache::new();
        let compiled = OpenClKernel::compile_cached(&cache, &dev, &kernel).unwrap();
        let mut renamed = kernel.clone();
        renamed.name = "other".into();
        assert!(Arc::ptr_eq(&compiled, &OpenClKernel::compile_cached(&cache, &dev, &renamed).unwrap()));
    }
}

#[test]
fn device_resident_tensors_run_without_host_copies_and_recycle_buffers() {
    for shared in devices() {
        // A device of its own: the pool counts below must not see other tests' buffers.
        let dev = Arc::new(OpenClDevice::open(&shared.info().id()).unwrap());
        let kernel = row_sum();
        let compiled = OpenClKernel::compile(&dev, &kernel).unwrap();
        let x = random(&mut Rng(11), DType::F32, &[6, 5]);
        let syms = relay_kir::infer_syms(&kernel, &[x.shape()], &[&[6]]).unwrap();
        let mut expected = [Tensor::zeros(DType::F32, vec![6]).unwrap()];
        interp::run(&kernel, &[&x], &mut expected, &syms).unwrap();

        let types = compiled.output_types(&[x.shape()]).unwrap();
        assert_eq!(types, vec![(DType::F32, vec![6])]);
        let mem: Arc<dyn Device> = dev.clone();
        let input = DeviceTensor::upload(&mem, &x).unwrap();
        let outputs = [DeviceTensor::zeros(&mem, DType::F32, &types[0].1).unwrap()];
        compiled.run_device(&[&input], &outputs).unwrap();
        assert_close(&expected, &[outputs[0].to_host().unwrap()], 1e-5);

        // A dead tensor's buffer serves the next tensor of its byte size.
        let (free_before, _) = dev.pooled();
        drop(outputs);
        assert_eq!(dev.pooled().0, free_before + 1);
        let again = DeviceTensor::empty(&mem, DType::I32, &[6]).unwrap();
        assert_eq!(dev.pooled().0, free_before);
        assert_eq!(again.size_bytes(), 24);

        // Shapes are checked as for host tensors.
        let wrong = [DeviceTensor::zeros(&mem, DType::F32, &[5]).unwrap()];
        assert!(matches!(compiled.run_device(&[&input], &wrong), Err(JitError::Call(_))));
    }
}
