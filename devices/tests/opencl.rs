//! The OpenCL device on whatever runtime is installed (POCL in CI). Without a runtime or a
//! device these tests print why and pass, unless `RELAY_REQUIRE_OPENCL=1` (CI), when they fail.
//! (Without the feature the stub's unit tests check the "not compiled in" error.)
#![cfg(feature = "opencl")]

use relay_devices::opencl::{self, OpenClDevice, OpenClError};
use relay_devices::{opencl::KernelArg, DType, DeviceMemory, Tensor};

fn device() -> Option<OpenClDevice> {
    match OpenClDevice::open("opencl") {
        Ok(d) => Some(d),
        Err(e @ (OpenClError::Unavailable(_) | OpenClError::NoSuchDevice { .. }))
            if !opencl::device_required() =>
        {
            eprintln!("skipping: {e} (set RELAY_REQUIRE_OPENCL=1 to fail instead)");
            None
        }
        Err(e) => panic!("no OpenCL device: {e} (RELAY_REQUIRE_OPENCL=1)"),
    }
}

#[test]
fn copies_builds_and_launches() {
    let Some(dev) = device() else { return };
    assert!(opencl::devices().unwrap().iter().any(|d| d.id() == dev.info().id()));
    let src = "__kernel void axpy(__global const float* x, __global float* y, long n) {
        long i = get_global_id(0);
        if (i < n) y[i] = 2.0f * x[i] + y[i];
    }";
    let program = dev.program(src, "").unwrap();
    assert_eq!(program.kernel_names(), vec!["axpy".to_string()]);
    assert!(std::sync::Arc::ptr_eq(&program, &dev.program(src, "").unwrap()));
    assert_eq!(dev.cached_programs(), 1);

    let x = Tensor::from_vec(vec![5], vec![1f32, 2.0, 3.0, 4.0, 5.0]).unwrap();
    let y = Tensor::from_vec(vec![5], vec![10f32; 5]).unwrap();
    let (xb, yb) = (dev.upload(&x).unwrap(), dev.upload(&y).unwrap());
    let args = [KernelArg::Buffer(&xb), KernelArg::Buffer(&yb), KernelArg::Long(5)];
    // SAFETY: (float*, float*, long) as declared; the kernel guards `i < n` with n = 5.
    unsafe { dev.launch(&program, "axpy", &args, &[5]) }.unwrap();
    let mut out = Tensor::zeros(DType::F32, vec![5]).unwrap();
    dev.read(&yb, &mut out).unwrap();
    assert_eq!(out.as_slice::<f32>().unwrap(), &[12.0, 14.0, 16.0, 18.0, 20.0]);

    // An empty grid queues nothing; a missing kernel and a bad grid are errors.
    // SAFETY: nothing runs.
    unsafe {
        assert_eq!(dev.launch(&program, "axpy", &[], &[0]), Ok(()));
        assert!(matches!(dev.launch(&program, "nope", &[], &[1]), Err(OpenClError::Api { .. })));
        assert_eq!(dev.launch(&program, "axpy", &[], &[1, 1, 1, 1]), Err(OpenClError::WorkDims(4)));
    }
    let mut small = Tensor::zeros(DType::F32, vec![2]).unwrap();
    assert_eq!(dev.read(&yb, &mut small), Err(OpenClError::SizeMismatch { buffer: 20, tensor: 8 }));
}

#[test]
fn bools_and_empty_buffers_round_trip() {
    let Some(dev) = device() else { return };
    let b = Tensor::from_vec(vec![3], vec![true, false, true]).unwrap();
    let buf = dev.upload(&b).unwrap();
    let mut back = Tensor::zeros(DType::BOOL, vec![3]).unwrap();
    dev.read(&buf, &mut back).unwrap();
    assert_eq!(back, b);
    let empty = Tensor::zeros(DType::I32, vec![0, 4]).unwrap();
    let buf = dev.upload(&empty).unwrap();
    assert!(buf.is_empty());
    let mut out = empty.clone();
    dev.read(&buf, &mut out).unwrap();
    assert_eq!(out, empty);
}

#[test]
fn build_errors_carry_the_log() {
    let Some(dev) = device() else { return };
    let err = dev.program("__kernel void f(__global float* y) { y[0] = undeclared_name; }", "").unwrap_err();
    match err {
        OpenClError::Build { log, device } => {
            assert!(log.contains("undeclared_name"), "{log}");
            assert_eq!(device, dev.info().id());
        }
        other => panic!("expected a build error, got {other}"),
    }
    assert!(matches!(OpenClDevice::open("opencl:99"), Err(OpenClError::NoSuchDevice { .. })));
    assert!(matches!(OpenClDevice::open("cuda"), Err(OpenClError::BadSelector(_))));
}
