//! 2-d convolution and pooling (TVM `src/relay/op/nn/convolution.h` `Conv2DRel`,
//! `pooling.cc` `Pool2DRel`, `GlobalPool2DRel`).
//!
//! Layouts are the four-letter permutations of `NCHW` (data, output) and `OIHW` (kernel), as
//! TVM's `BijectiveLayout` between plain layouts; packed layouts such as `NCHW4c` are not
//! supported.

use super::attr_util::{dims_agree, dtype_attr, padding_hw, pair_attr, show_dim, too_large};
use super::nn::check_product_dtypes;
use super::tensor_arg;
use crate::known;
use relay_compiler::ir::Dim;
use relay_compiler::op::{AttrReader, RelType, RelationResult, TensorType};

/// A plain 4-d layout: `pos[i]` is where the `i`-th letter of the canonical order (`NCHW` or
/// `OIHW`) sits in the layout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Layout4 {
    pos: [usize; 4],
}

impl Layout4 {
    /// Parses `layout` as a permutation of `canonical`'s letters.
    pub fn parse(layout: &str, canonical: &str) -> Result<Layout4, String> {
        let bad = || format!("unsupported layout {layout:?}: expected a permutation of {canonical:?}");
        let letters: Vec<char> = layout.chars().collect();
        if letters.len() != 4 {
            return Err(bad());
        }
        let mut pos = [0; 4];
        for (p, c) in pos.iter_mut().zip(canonical.chars()) {
            let mut at = letters.iter().enumerate().filter(|&(_, &l)| l == c).map(|(i, _)| i);
            match (at.next(), at.next()) {
                (Some(i), None) => *p = i,
                _ => return Err(bad()),
            }
        }
        Ok(Layout4 { pos })
    }

    /// The dimensions of `shape` (in this layout) in canonical order.
    pub fn to_canonical(self, shape: &[Dim]) -> [Dim; 4] {
        self.pos.map(|p| shape[p])
    }

    /// Canonical-order dimensions laid out in this layout.
    pub fn from_canonical(self, dims: [Dim; 4]) -> Vec<Dim> {
        let mut out = vec![Dim::Any; 4];
        for (d, p) in dims.into_iter().zip(self.pos) {
            out[p] = d;
        }
        out
    }
}

/// A tensor argument of rank 4, read in `layout`'s canonical order.
fn rank4(t: &TensorType, layout: Layout4, what: &str) -> Result<[Dim; 4], String> {
    if t.rank() != 4 {
        return Err(format!("{what} must have rank 4, found `{t}`"));
    }
    Ok(layout.to_canonical(&t.shape))
}

/// The output size of a sliding window over `size` input elements (TVM's conv and pool
/// formula): `(size + pad - ((window - 1) * dilation + 1)) / stride + 1`, rounding the
/// division up with `ceil_mode`. `?` stays `?`. A window larger than the padded input is an
/// error.
pub fn window_out(
    size: Dim,
    window: i64,
    stride: i64,
    dilation: i64,
    pad: i64,
    ceil_mode: bool,
) -> Result<Dim, String> {
    let Dim::Known(size) = size else { return Ok(Dim::Any) };
    let span = (window - 1).checked_mul(dilation).and_then(|x| x.checked_add(1)).ok_or_else(too_large)?;
    let padded = size.checked_add(pad).ok_or_else(too_large)?;
    if padded < span {
        return Err(format!("the window spans {span} elements, more than the {padded} of the padded input"));
    }
    let room = padded - span;
    // Both are non-negative here, so rounding up is `(room + stride - 1) / stride` without overflow.
    let steps = if ceil_mode { room / stride + i64::from(room % stride != 0) } else { room / stride };
    Ok(Dim::Known(steps + 1))
}

/// `nn.conv2d(data, weight, strides=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1,
/// channels=None, kernel_size=None, data_layout="NCHW", kernel_layout="OIHW", out_layout="",
/// out_dtype="")`. In canonical layouts, data `[N, C, H, W]` and weight `[O, C / groups, KH,
/// KW]` give `[N, O, OH, OW]`; `O` must divide into `groups` (depthwise: `groups = C`), and
/// `channels` and `kernel_size`, when given, must match the weight.
pub fn conv2d_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let data = known!(tensor_arg(args, 0));
    let weight = known!(tensor_arg(args, 1));
    check_product_dtypes(data, weight)?;
    let data_layout = attrs.str("data_layout", "NCHW")?;
    let dl = Layout4::parse(data_layout, "NCHW")?;
    let kl = Layout4::parse(attrs.str("kernel_layout", "OIHW")?, "OIHW")?;
    let ol = match attrs.str("out_layout", "")? {
        "" => dl,
        l => Layout4::parse(l, "NCHW")?,
    };
    let [n, c, h, w] = rank4(data, dl, "data")?;
    let [o, i, kh, kw] = rank4(weight, kl, "weight")?;
    let groups = attrs.int("groups", 1)?;
    if groups <= 0 {
        return Err(format!("groups must be positive, found {groups}"));
    }
    check_channels(data, weight, c, o, i, groups)?;
    if let Some(channels) = attrs.get("channels").map(|_| attrs.int("channels", 0)).transpose()? {
        if !dims_agree(Dim::Known(channels), o) {
            return Err(format!(
                "channels={channels} does not match the weight's {} output channels: `{weight}`",
                show_dim(o)
            ));
        }
    }
    if let Some([ah, aw]) = pair_attr(attrs, "kernel_size")? {
        if !dims_agree(Dim::Known(ah), kh) || !dims_agree(Dim::Known(aw), kw) {
            return Err(format!("kernel_size=[{ah}, {aw}] does not match the weight: `{weight}`"));
        }
    }
    let [sh, sw] = pair_attr(attrs, "strides")?.unwrap_or([1, 1]);
    let [dh, dw] = pair_attr(attrs, "dilation")?.unwrap_or([1, 1]);
    let [ph, pw] = padding_hw(attrs)?;
    let at = |size: Dim, k: Dim, s: i64, d: i64, p: i64, axis: &str| match k {
        Dim::Known(k) => window_out(size, k, s, d, p, false)
            .map_err(|e| format!("{e} along {axis}: `{data}` and `{weight}`")),
        Dim::Any => Ok(Dim::Any),
    };
    let oh = at(h, kh, sh, dh, ph, "H")?;
    let ow = at(w, kw, sw, dw, pw, "W")?;
    let dtype = dtype_attr(attrs, "out_dtype", data.dtype)?;
    Ok(Some(RelType::tensor(ol.from_canonical([n, o, oh, ow]), dtype)))
}

/// The grouped-convolution channel rules: `C = groups * I` and `groups` divides `O`.
fn check_channels(
    data: &TensorType,
    weight: &TensorType,
    c: Dim,
    o: Dim,
    i: Dim,
    groups: i64,
) -> Result<(), String> {
    if let Dim::Known(c) = c {
        if c % groups != 0 {
            return Err(format!("{c} input channels do not divide into groups={groups}: `{data}`"));
        }
        if !dims_agree(Dim::Known(c / groups), i) {
            return Err(format!(
                "the data has {c} input channels but the weight expects {} x groups={groups}: `{data}` and `{weight}`",
                show_dim(i)
            ));
        }
    }
    if let Dim::Known(o) = o {
        if o % groups != 0 {
            return Err(format!("{o} output channels do not divide into groups={groups}: `{weight}`"));
        }
    }
    Ok(())
}

/// The data layout of a pooling op; the output is in the same layout, so `out_layout` may
/// only repeat it.
fn pool_layout(attrs: &AttrReader) -> Result<Layout4, String> {
    let layout = attrs.str("layout", "NCHW")?;
    let out = attrs.str("out_layout", "")?;
    if !out.is_empty() && out != layout {
        return Err(format!("out_layout {out:?} differs from layout {layout:?}, which is not supported"));
    }
    Layout4::parse(layout, "NCHW")
}

/// `nn.max_pool2d(data, pool_size, strides=[1, 1], dilation=[1, 1], padding=[0, 0],
/// layout="NCHW", out_layout="", ceil_mode=False)` and `nn.avg_pool2d` (also
/// `count_include_pad=False`): `H` and `W` become window counts (see [`window_out`]).
pub fn pool2d_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let data = known!(tensor_arg(args, 0));
    let layout = pool_layout(attrs)?;
    let [n, c, h, w] = rank4(data, layout, "data")?;
    let [kh, kw] = pair_attr(attrs, "pool_size")?.ok_or("attribute `pool_size` is required")?;
    let [sh, sw] = pair_attr(attrs, "strides")?.unwrap_or([1, 1]);
    let [dh, dw] = pair_attr(attrs, "dilation")?.unwrap_or([1, 1]);
    let [ph, pw] = padding_hw(attrs)?;
    let ceil_mode = attrs.bool("ceil_mode", false)?;
    attrs.bool("count_include_pad", false)?;
    let oh = window_out(h, kh, sh, dh, ph, ceil_mode).map_err(|e| format!("{e} along H: `{data}`"))?;
    let ow = window_out(w, kw, sw, dw, pw, ceil_mode).map_err(|e| format!("{e} along W: `{data}`"))?;
    Ok(Some(RelType::tensor(layout.from_canonical([n, c, oh, ow]), data.dtype)))
}

/// `nn.global_avg_pool2d(data, layout="NCHW", out_layout="")`: `H` and `W` become 1.
pub fn global_pool2d_rel(args: &[RelType], attrs: &AttrReader) -> RelationResult {
    let data = known!(tensor_arg(args, 0));
    let layout = pool_layout(attrs)?;
    let [n, c, _, _] = rank4(data, layout, "data")?;
    Ok(Some(RelType::tensor(layout.from_canonical([n, c, Dim::Known(1), Dim::Known(1)]), data.dtype)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relations::attr_util::{int_list, run_rel};
    use relay_compiler::ir::AttrValue;
    use relay_devices::DType;
    use Dim::{Any, Known as K};

    fn t(shape: &[i64], dtype: DType) -> RelType {
        RelType::tensor(shape.iter().map(|&d| K(d)).collect(), dtype)
    }

    #[test]
    fn window_sizes() {
        assert_eq!(window_out(K(224), 7, 2, 1, 6, false), Ok(K(112)));
        assert_eq!(window_out(K(5), 3, 1, 2, 0, false), Ok(K(1)));
        assert_eq!(window_out(K(6), 3, 2, 1, 0, false), Ok(K(2)));
        assert_eq!(window_out(K(6), 3, 2, 1, 0, true), Ok(K(3)));
        assert_eq!(window_out(K(7), 3, 2, 1, 0, true), Ok(K(3)));
        assert_eq!(window_out(Any, 3, 2, 1, 0, true), Ok(Any));
        assert!(window_out(K(2), 3, 1, 1, 0, false).unwrap_err().contains("spans 3"));
        assert!(window_out(K(2), i64::MAX, 1, 2, 0, false).is_err());
    }

    #[test]
    fn layouts() {
        let nhwc = Layout4::parse("NHWC", "NCHW").unwrap();
        let shape = [K(1), K(8), K(9), K(3)];
        assert_eq!(nhwc.to_canonical(&shape), [K(1), K(3), K(8), K(9)]);
        assert_eq!(nhwc.from_canonical([K(1), K(3), K(8), K(9)]), shape.to_vec());
        assert!(Layout4::parse("NCHW4c", "NCHW").is_err());
        assert!(Layout4::parse("NCCW", "NCHW").is_err());
    }

    #[test]
    fn conv_shapes() {
        let data = t(&[1, 3, 224, 224], DType::F32);
        let w = t(&[64, 3, 7, 7], DType::F32);
        let attrs = [
            ("strides", int_list(&[2, 2])),
            ("padding", int_list(&[3, 3])),
            ("channels", AttrValue::Int(64)),
        ];
        assert_eq!(
            run_rel(conv2d_rel, &[data.clone(), w], &attrs),
            Ok(Some(t(&[1, 64, 112, 112], DType::F32)))
        );
        let dw = t(&[6, 1, 3, 3], DType::F32);
        let depthwise = [("groups", AttrValue::Int(3)), ("padding", AttrValue::Int(1))];
        assert_eq!(
            run_rel(conv2d_rel, &[data.clone(), dw], &depthwise),
            Ok(Some(t(&[1, 6, 224, 224], DType::F32)))
        );
        let bad = t(&[8, 4, 3, 3], DType::F32);
        let err = run_rel(conv2d_rel, &[data, bad], &[]).unwrap_err();
        assert!(err.contains("3 input channels but the weight expects 4"), "{err}");
    }

    #[test]
    fn conv_layouts_and_int8() {
        let data = t(&[1, 10, 10, 4], DType::I8);
        let w = t(&[3, 3, 4, 8], DType::I8);
        let attrs = [
            ("data_layout", AttrValue::Str("NHWC".into())),
            ("kernel_layout", AttrValue::Str("HWIO".into())),
            ("out_dtype", AttrValue::Str("int32".into())),
        ];
        assert_eq!(run_rel(conv2d_rel, &[data, w], &attrs), Ok(Some(t(&[1, 8, 8, 8], DType::I32))));
    }

    #[test]
    fn pools() {
        let data = t(&[1, 2, 7, 7], DType::F32);
        let attrs = [
            ("pool_size", int_list(&[2, 2])),
            ("strides", int_list(&[2, 2])),
            ("ceil_mode", AttrValue::Bool(true)),
        ];
        let data = std::slice::from_ref(&data);
        assert_eq!(run_rel(pool2d_rel, data, &attrs), Ok(Some(t(&[1, 2, 4, 4], DType::F32))));
        assert_eq!(run_rel(pool2d_rel, data, &attrs[..2]), Ok(Some(t(&[1, 2, 3, 3], DType::F32))));
        assert!(run_rel(pool2d_rel, data, &[]).is_err());
        assert_eq!(run_rel(global_pool2d_rel, data, &[]), Ok(Some(t(&[1, 2, 1, 1], DType::F32))));
    }
}
