//! Kernel builders shared by the Cranelift and OpenCL tests, so both backends are checked on
//! the same kernels.

use relay_devices::{DType, Tensor};
use relay_kir::{Expr, Kernel, KernelBuilder, LoopKind};

/// `y[i] = f(a[i], b[i], c[i])` over `n` elements.
pub fn elementwise(kind: LoopKind, f: impl Fn(Expr, Expr, Expr) -> Expr) -> Kernel {
    let mut k = KernelBuilder::new("elementwise");
    let n = k.sym("n");
    let [a, b, c] = ["a", "b", "c"].map(|name| k.input(name, DType::F32, [n]));
    let y = k.output("y", DType::F32, [n]);
    k.for_(n, kind, |k, i| {
        let [va, vb, vc] = [a, b, c].map(|buf| Expr::load(buf, i.clone()));
        k.store(y, i, f(va, vb, vc));
    });
    k.finish().unwrap()
}

/// ReLU as compare+select (one `maxps` in vector code).
pub fn relu(x: Expr) -> Expr {
    x.max(Expr::f32(0.0))
}

/// A 1-d tensor of integer `dtype` holding `vals` (which must fit).
pub fn int_tensor(dtype: DType, vals: &[i64]) -> Tensor {
    let shape = vec![vals.len()];
    let t = match dtype {
        DType::I8 => Tensor::from_vec(shape, vals.iter().map(|&v| i8::try_from(v).unwrap()).collect()),
        DType::U8 => Tensor::from_vec(shape, vals.iter().map(|&v| u8::try_from(v).unwrap()).collect()),
        DType::I32 => Tensor::from_vec(shape, vals.iter().map(|&v| i32::try_from(v).unwrap()).collect()),
        _ => Tensor::from_vec(shape, vals.to_vec()),
    };
    t.unwrap()
}
