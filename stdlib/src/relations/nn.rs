//! Neural-network layers other than convolution and pooling (TVM `src/relay/op/nn/nn.cc`,
//! `nn.h`): `nn.dense`, `nn.matmul`, `nn.batch_matmul`, `nn.bias_add`, `nn.batch_norm`,
//! `nn.layer_norm`, `nn.softmax`, `nn.log_softmax`, `nn.dropout`.

use super::attr_util::{dims_agree, dtype_attr, show_dim};
use super::{normalize_axis, tensor_arg};
use crate::known;
use relay_compiler::ir::Dim;
use relay_compiler::op::{AttrReader, RelType, RelationResult, TensorType};

/// Checks that two operands of a product have one dtype. Integer operands may differ in
/// signedness and width (quantized `uint8 x int8` with `out_dtype="int32"`), as in TVM.
pub fn check_product_dtypes(a: &TensorType, b: &TensorType) -> Result<(), String> {
    if a.dtype != b.dtype && !(a.dtype.is_int() && b.dtype.is_int()) {
        return Err(format!("operand dtypes differ: `{a}` and `{b}`"));
    }
    Ok(())
}

/// Names of a product's operands, for messages.
struct Names {
    a: &'static str,
    b: &'static str,
}

/// TVM `MatmulRel`: `a` is `[..., k]` (`[..., k, m]` when `transpose_a`), `b` is `[n, k]` when
/// `transpose_b` else `[k, n]`; the output replaces the last dimension (last two, transposed)
/// by `[..., m, n]`. `units`, when given, must equal `n`.
fn matmul_shape(
    a: &TensorType,
    b: &TensorType,
    ta: bool,
    tb: bool,
    attrs: &AttrReader,
    names: &Names,
) -> RelationResult {
    check_product_dtypes(a, b)?;
    let need = if ta { 2 } else { 1 };
    if a.rank() < need {
        return Err(format!("{} must have rank at least {need}, found `{a}`", names.a));
    }
    if b.rank() != 2 {
        return Err(format!("{} must have rank 2, found `{b}`", names.b));
    }
    let r = a.rank();
    let (k, m) = if ta { (a.shape[r - 2], Some(a.shape[r - 1])) } else { (a.shape[r - 1], None) };
    let (bk, n) = if tb { (b.shape[1], b.shape[0]) } else { (b.shape[0], b.shape[1]) };
    if !dims_agree(k, bk) {
        return Err(format!(
            "{} dim {} does not match {} dim {}: {a} and {b}",
            names.a,
            show_dim(k),
            names.b,
            show_dim(bk)
        ));
    }
    if let Some(units) = attrs.get("units").map(|_| attrs.int("units", 0)).transpose()? {
        if !dims_agree(Dim::Known(units), n) {
            return Err(format!("units={units} does not match {} dim {}: {b}", names.b, show_dim(n)));
        }
    }
    let mut shape = a.shape.clone();
    if let Some(m) = m {
        shape[r - 2] = m;
    }
    shape[r - 1] = n;
    let dtype = dtype_attr(attrs, "out_dtype", a.dtype)?;
    Ok(Some(RelType::tensor(shape, dtype)))
}

/// `nn.dense(data, weight, units=None, out_dtype="")`: `data [..., k] x weight [units, k]^T
/// -> [..., units]`.
pub fn dense_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let a = known!(tensor_arg(args, 0));
    let b = known!(tensor_arg(args, 1));
    matmul_shape(a, b, false, true, attrs, &Names { a: "input", b: "weight" })
}

/// `nn.matmul(tensor_a, tensor_b, units=None, out_dtype="", transpose_a=False,
/// transpose_b=False)`: `[..., k] x [k, n] -> [..., n]`, either side optionally transposed.
pub fn matmul_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let a = known!(tensor_arg(args, 0));
    let b = known!(tensor_arg(args, 1));
    let ta = attrs.bool("transpose_a", false)?;
    let tb = attrs.bool("transpose_b", false)?;
    matmul_shape(a, b, ta, tb, attrs, &Names { a: "tensor_a", b: "tensor_b" })
}

/// `nn.batch_matmul(x, y, out_dtype="", transpose_a=False, transpose_b=False)`: `x [b, m, k]`
/// (`[b, k, m]` transposed) times `y [b, k, n]` (`[b, n, k]` with `transpose_b`) gives
/// `[b, m, n]`; a batch of 1 broadcasts, and a `?` batch makes the output batch `?`.
///
/// The defaults are TVM's C++ ones, which its text printer omits: Python's
/// `relay.nn.batch_matmul` passes `transpose_b=True` explicitly, so it appears in the text.
pub fn batch_matmul_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let x = known!(tensor_arg(args, 0));
    let y = known!(tensor_arg(args, 1));
    check_product_dtypes(x, y)?;
    if x.rank() != 3 || y.rank() != 3 {
        return Err(format!("expects two tensors of rank 3, found `{x}` and `{y}`"));
    }
    let ta = attrs.bool("transpose_a", false)?;
    let tb = attrs.bool("transpose_b", false)?;
    let (m, k) = if ta { (x.shape[2], x.shape[1]) } else { (x.shape[1], x.shape[2]) };
    let (yk, n) = if tb { (y.shape[2], y.shape[1]) } else { (y.shape[1], y.shape[2]) };
    let batch = match (x.shape[0], y.shape[0]) {
        (Dim::Known(p), Dim::Known(q)) if p == q || q == 1 => Dim::Known(p),
        (Dim::Known(1), Dim::Known(q)) => Dim::Known(q),
        (Dim::Known(p), Dim::Known(q)) => return Err(format!("batch sizes {p} and {q} differ: {x} and {y}")),
        _ => Dim::Any,
    };
    if !dims_agree(k, yk) {
        return Err(format!("x dim {} does not match y dim {}: {x} and {y}", show_dim(k), show_dim(yk)));
    }
    let dtype = dtype_attr(attrs, "out_dtype", x.dtype)?;
    Ok(Some(RelType::tensor(vec![batch, m, n], dtype)))
}

/// Checks that `v` is a `[C]` vector of `data`'s dtype, where `C = data.shape[axis]`.
fn check_channel_vector(data: &TensorType, axis: usize, v: &TensorType, what: &str) -> Result<(), String> {
    let c = data.shape[axis];
    if v.rank() != 1 || !dims_agree(v.shape[0], c) || v.dtype != data.dtype {
        return Err(format!(
            "{what} must be a vector of {} {} (axis {axis} of `{data}`), found `{v}`",
            show_dim(c),
            data.dtype
        ));
    }
    Ok(())
}

/// `axis` of `t` read from the attributes with TVM's default.
fn axis_of(t: &TensorType, attrs: &AttrReader, default: i64) -> Result<usize, String> {
    normalize_axis(attrs.int("axis", default)?, t.rank()).map_err(|e| format!("{e}: `{t}`"))
}

/// `nn.bias_add(data, bias, axis=1)`: `bias` is `[C]` with `C = data.shape[axis]`; the output
/// has `data`'s type.
pub fn bias_add_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let data = known!(tensor_arg(args, 0));
    let bias = known!(tensor_arg(args, 1));
    let axis = axis_of(data, attrs, 1)?;
    check_channel_vector(data, axis, bias, "bias")?;
    Ok(Some(RelType::Tensor(data.clone())))
}

/// Validates the normalisation attributes `epsilon`, `center` and `scale`.
fn check_norm_attrs(attrs: &AttrReader) -> Result<(), String> {
    let eps = attrs.float("epsilon", 1e-5)?;
    if eps.is_nan() || eps < 0.0 {
        return Err(format!("epsilon must not be negative, found {eps}"));
    }
    attrs.bool("center", true)?;
    attrs.bool("scale", true)?;
    Ok(())
}

/// `nn.batch_norm(data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5,
/// center=True, scale=True)`: the four parameters are `[C]` vectors; the output is the tuple
/// `(normalised data, new mean [C], new variance [C])`.
pub fn batch_norm_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let data = known!(tensor_arg(args, 0));
    let axis = axis_of(data, attrs, 1)?;
    check_norm_attrs(attrs)?;
    for (i, what) in ["gamma", "beta", "moving_mean", "moving_var"].into_iter().enumerate() {
        let v = known!(tensor_arg(args, i + 1));
        check_channel_vector(data, axis, v, what)?;
    }
    let vec = RelType::tensor(vec![data.shape[axis]], data.dtype);
    Ok(Some(RelType::Tuple(vec![RelType::Tensor(data.clone()), vec.clone(), vec])))
}

/// `nn.layer_norm(data, gamma, beta, axis=-1, epsilon=1e-5, center=True, scale=True)`:
/// `gamma` and `beta` are `[C]` vectors; the output has `data`'s type.
pub fn layer_norm_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let data = known!(tensor_arg(args, 0));
    let axis = axis_of(data, attrs, -1)?;
    check_norm_attrs(attrs)?;
    for (i, what) in ["gamma", "beta"].into_iter().enumerate() {
        let v = known!(tensor_arg(args, i + 1));
        check_channel_vector(data, axis, v, what)?;
    }
    Ok(Some(RelType::Tensor(data.clone())))
}

/// `nn.softmax(data, axis=-1)`, `nn.log_softmax`: a floating-point tensor, same type out.
pub fn softmax_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let data = known!(tensor_arg(args, 0));
    if !data.dtype.is_float() {
        return Err(format!("expects a floating-point tensor, found `{data}`"));
    }
    axis_of(data, attrs, -1)?;
    Ok(Some(RelType::Tensor(data.clone())))
}

/// `nn.dropout(data, rate=0.5)`: the tuple `(output, mask)`, both of `data`'s type (TVM
/// `DropoutRel`); at inference time the output is `data`.
pub fn dropout_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let data = known!(tensor_arg(args, 0));
    let rate = attrs.float("rate", 0.5)?;
    if !(0.0..1.0).contains(&rate) {
        return Err(format!("rate must be in [0, 1), found {rate}"));
    }
    let t = RelType::Tensor(data.clone());
    Ok(Some(RelType::Tuple(vec![t.clone(), t])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relations::attr_util::run_rel;
    use relay_compiler::ir::AttrValue;
    use relay_devices::DType;
    use Dim::{Any, Known as K};

    fn t(shape: &[Dim], dtype: DType) -> RelType {
        RelType::tensor(shape.to_vec(), dtype)
    }

    #[test]
    fn dense_shapes() {
        let out = run_rel(dense_rel, &[t(&[K(4), K(300)], DType::F32), t(&[K(10), K(300)], DType::F32)], &[]);
        assert_eq!(out, Ok(Some(t(&[K(4), K(10)], DType::F32))));
        let err = run_rel(dense_rel, &[t(&[K(1), K(300)], DType::F32), t(&[K(5), K(150)], DType::F32)], &[])
            .unwrap_err();
        assert_eq!(
            err,
            "input dim 300 does not match weight dim 150: Tensor[(1, 300), float32] and Tensor[(5, 150), float32]"
        );
        let q = run_rel(
            dense_rel,
            &[t(&[Any, K(8)], DType::U8), t(&[K(3), K(8)], DType::I8)],
            &[("out_dtype", AttrValue::Str("int32".into()))],
        );
        assert_eq!(q, Ok(Some(t(&[Any, K(3)], DType::I32))));
        let units = run_rel(
            dense_rel,
            &[t(&[K(2), K(8)], DType::F32), t(&[K(3), K(8)], DType::F32)],
            &[("units", AttrValue::Int(4))],
        );
        assert!(units.unwrap_err().contains("units=4"));
        assert_eq!(run_rel(dense_rel, &[RelType::Unknown, t(&[K(3), K(8)], DType::F32)], &[]), Ok(None));
    }

    #[test]
    fn matmul_transposes() {
        let a = t(&[K(5), K(2)], DType::F32);
        let b = t(&[K(3), K(5)], DType::F32);
        let out = run_rel(
            matmul_rel,
            &[a, b],
            &[("transpose_a", AttrValue::Bool(true)), ("transpose_b", AttrValue::Bool(true))],
        );
        assert_eq!(out, Ok(Some(t(&[K(2), K(3)], DType::F32))));
    }

    #[test]
    fn batch_matmul_broadcast() {
        let x = t(&[K(1), K(2), K(4)], DType::F32);
        let y = t(&[K(6), K(3), K(4)], DType::F32);
        let tb = [("transpose_b", AttrValue::Bool(true))];
        assert_eq!(
            run_rel(batch_matmul_rel, &[x.clone(), y], &tb),
            Ok(Some(t(&[K(6), K(2), K(3)], DType::F32)))
        );
        let y2 = t(&[K(6), K(4), K(3)], DType::F32);
        assert_eq!(
            run_rel(batch_matmul_rel, &[x, y2.clone()], &[]),
            Ok(Some(t(&[K(6), K(2), K(3)], DType::F32)))
        );
        let x5 = t(&[K(5), K(2), K(4)], DType::F32);
        assert!(run_rel(batch_matmul_rel, &[x5, y2], &[]).unwrap_err().contains("batch sizes 5 and 6"));
    }

    #[test]
    fn batch_norm_tuple() {
        let d = t(&[K(2), K(3), K(4), K(4)], DType::F32);
        let v = t(&[K(3)], DType::F32);
        let out = run_rel(batch_norm_rel, &[d.clone(), v.clone(), v.clone(), v.clone(), v.clone()], &[]);
        assert_eq!(out, Ok(Some(RelType::Tuple(vec![d.clone(), v.clone(), v.clone()]))));
        let bad = t(&[K(4)], DType::F32);
        let err = run_rel(batch_norm_rel, &[d, v.clone(), v.clone(), bad, v], &[]).unwrap_err();
        assert!(err.contains("moving_mean must be a vector of 3 float32"), "{err}");
    }
}
