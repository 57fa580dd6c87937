//! Winograd convolutions (TVM `src/relay/op/nn/convolution.cc`
//! `Conv2DWinogradWeightTransformRel`, `Conv2DWinogradRel`; `topi.nn.winograd_util`): a 3×3,
//! stride-1 `nn.conv2d` as Lavin and Gray's minimal filtering `F(m×m, 3×3)` ("Fast Algorithms
//! for Convolutional Neural Networks", 2016, §4). Each `m×m` output tile is
//! `Aᵀ [Σ_c (G g_c Gᵀ) ⊙ (Bᵀ d_c B)] A` over `α×α` input tiles (`α = m + 2`, overlapping by
//! 2), so the `9·m²` multiply-adds per channel pair of a direct convolution become `α²`:
//! 16/36 of them for `F(2×2)`, 36/144 for `F(4×4)`. The transforms come from
//! [`Transforms::new`] (Cook–Toom, on TVM's interpolation points).
//!
//! `nn.contrib_conv2d_winograd_weight_transform` computes `U = G g Gᵀ` of `[o, i, 3, 3]`
//! weights as TVM lays it out, `[α, α, o, i]`. The convolution,
//! `nn.contrib_conv2d_winograd_without_weight_transform`, takes its weight in the layout this
//! backend's batched product reads, `[α, α, i, o]` (one `[i, o]` matrix per `(ξ, ν)`: the right
//! operand of kir's `gemm`): TVM's relation deliberately leaves that layout to each backend
//! (its arm_cpu rule transposes the weight transform's output too), and the `AlterOpLayout`
//! rule of `nn.conv2d` ([`winograd_layout`]) writes the `transpose` between the two.

use super::{padding, per_axis, window_out};
use crate::attrs::{Conv2dAttrs, Conv2dWinogradAttrs, ConvWinogradWeightTransformAttrs};
use crate::compute;
use crate::error::KernelError;
use crate::kernels::num::{cast, from_f64};
use crate::kernels::util::{args, floats, only_output};
use crate::kernels::{Checked, Float};
use crate::operator::{shape_text, AlterOpLayoutRule, ComputeRule, DTypeSet, OpEntry, Operator, ShapeDim};
use crate::ops::index::may_equal;
use relay_compiler::ir::{AttrValue, Dim, ExprId};
use relay_compiler::op::{Builder, OpPattern, RelType};
use relay_devices::{DType, Tensor};

/// The Winograd operators.
pub const WINOGRAD: &[OpEntry] =
    &[OpEntry::of::<Conv2dWinogradWeightTransform>(), OpEntry::of::<Conv2dWinogradWithoutWeightTransform>()];

/// The window side the transforms are built for (`r` of `F(m, r)`).
const R: usize = 3;

/// The transforms of `F(m×m, 3×3)`: `Aᵀ` (`m × α`), `Bᵀ` (`α × α`) and `G` (`α × 3`), with
/// `Y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A` the correlation of an `α×α` tile `d` with a 3×3 window `g`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Transforms {
    /// Output positions per tile side.
    pub m: usize,
    /// Input positions per tile side, `m + 2`.
    pub alpha: usize,
    /// `Aᵀ`, row-major `[m][α]`.
    pub at: Vec<Vec<f64>>,
    /// `Bᵀ`, row-major `[α][α]`.
    pub bt: Vec<Vec<f64>>,
    /// `G`, row-major `[α][3]`.
    pub g: Vec<Vec<f64>>,
}

impl Transforms {
    /// The transforms for tile size `m` (2, 4 or 6), by the modified Cook–Toom construction:
    /// the linear convolution `s = g * h` of a 3-tap and an `m`-tap polynomial is evaluated at
    /// `α − 1` finite points `a_j` and at infinity, `s(x) = Σ_j g(a_j) h(a_j) L_j(x) +
    /// g_2 h_{m−1} Π_j (x − a_j)` (`L_j` the Lagrange basis), and the correlation is that
    /// bilinear algorithm transposed (Lavin & Gray §4; Blahut, "Fast Algorithms for Signal
    /// Processing", 2010, ch. 5). Each `L_j`'s denominator `Π_{l≠j} (a_j − a_l)` goes into
    /// `G`, so `Bᵀ`'s rows are the coefficients of monic products. The points are TVM's
    /// (`topi.nn.winograd_util._interpolation_points`, chosen by Barabasz et al., "Error
    /// Analysis and Improving the Accuracy of Winograd Convolution for Deep Neural Networks",
    /// 2020, for accuracy); TVM's own matrices differ from these by row scalings, so its
    /// transformed weights are not interchangeable with ours.
    ///
    /// # Errors
    /// Another tile size.
    pub fn new(m: i64) -> Result<Transforms, KernelError> {
        let points: &[f64] = match m {
            2 => &[0.0, -1.0, 1.0],
            4 => &[0.0, -1.0, 1.0, 0.5, -2.0],
            6 => &[0.0, -1.0, 1.0, 0.5, -0.5, 2.0, -2.0],
            _ => {
                return Err(KernelError::Attr(format!("attribute `tile_size` must be 2, 4 or 6, found {m}")))
            }
        };
        let (m, alpha) = (points.len() - 1, points.len() + 1);
        let power = |a: f64, e: usize| (0..e).fold(1.0, |p, _| p * a);
        // `Π (x − a_l)` over the points `l` that `keep` selects, as coefficients, constant first.
        let monic = |keep: &dyn Fn(usize) -> bool| {
            let mut c = vec![1.0];
            for (_, &a) in points.iter().enumerate().filter(|&(l, _)| keep(l)) {
                let mut next = vec![0.0; c.len() + 1];
                for (t, &v) in c.iter().enumerate() {
                    next[t + 1] += v;
                    next[t] -= a * v;
                }
                c = next;
            }
            c.resize(alpha, 0.0);
            c
        };
        let mut at = vec![vec![0.0; alpha]; m];
        let (mut bt, mut g) = (Vec::with_capacity(alpha), Vec::with_capacity(alpha));
        for (j, &a) in points.iter().enumerate() {
            for (i, row) in at.iter_mut().enumerate() {
                row[j] = power(a, i);
            }
            let f: f64 = points.iter().enumerate().filter(|&(l, _)| l != j).map(|(_, &b)| a - b).product();
            g.push((0..R).map(|k| power(a, k) / f).collect());
            bt.push(monic(&|l| l != j));
        }
        at[m - 1][alpha - 1] = 1.0;
        g.push((0..R).map(|k| if k == R - 1 { 1.0 } else { 0.0 }).collect());
        bt.push(monic(&|_| true));
        Ok(Transforms { m, alpha, at, bt, g })
    }
}

/// The checked tile size and `α` of a `tile_size` attribute.
fn tile(tile_size: i64) -> Result<(usize, usize), KernelError> {
    let t = Transforms::new(tile_size)?;
    Ok((t.m, t.alpha))
}

/// `nn.contrib_conv2d_winograd_weight_transform(weight)`: `[o, i, 3, 3]` → `[α, α, o, i]`,
/// `U[ξ, ν, o, i] = Σ_{a, b} G[ξ, a] · weight[o, i, a, b] · G[ν, b]` with `α = tile_size + 2`.
/// `float32`/`float64`; the reference kernel sums in `float64` and rounds once, which is what
/// `FoldConstant` runs on constant weights.
#[derive(Debug)]
pub struct Conv2dWinogradWeightTransform;

impl Operator for Conv2dWinogradWeightTransform {
    const NAME: &'static str = "nn.contrib_conv2d_winograd_weight_transform";
    const PATTERN: OpPattern = OpPattern::Opaque;
    const NUM_INPUTS: usize = 1;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str = "Winograd weight transform G g G^T of 3x3 OIHW weights ([alpha, alpha, O, I])";
    type Attrs = ConvWinogradWeightTransformAttrs;
    const COMPUTE: Option<ComputeRule<Self::Attrs>> = Some(compute::winograd::weight_transform);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &Self::Attrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [w] = args(inputs)?;
        let (_, alpha) = tile(a.tile_size)?;
        match *w {
            [o, i, kh, kw] if may_equal(kh, D::known(R)) && may_equal(kw, D::known(R)) => {
                Ok(vec![vec![D::known(alpha), D::known(alpha), o, i]])
            }
            _ => Err(KernelError::Shape(format!("expects a [o, i, 3, 3] weight, found {}", shape_text(w)))),
        }
    }

    fn dtypes(inputs: &[DType], _: &Self::Attrs) -> Result<Vec<DType>, KernelError> {
        let [w] = args(inputs)?;
        Ok(vec![DTypeSet::Floats.check(w)?])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &Self::Attrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [w] = args(inputs)?;
        let t = Transforms::new(a.tile_size)?;
        let out = only_output(outputs)?;
        let &[o, i, ..] = w.shape() else { return Err(KernelError::Shape("weight rank".into())) };
        let alpha = t.alpha;
        floats!(w.dtype(), T => {
            let (w, u) = (w.as_slice::<T>()?, out.as_mut_slice::<T>()?);
            for oc in 0..o {
                for ic in 0..i {
                    let g = &w[(oc * i + ic) * R * R..][..R * R];
                    for xi in 0..alpha {
                        for nu in 0..alpha {
                            let mut s = 0.0f64;
                            for (a, ga) in t.g[xi].iter().enumerate() {
                                for (b, gb) in t.g[nu].iter().enumerate() {
                                    s += ga * cast::<T, f64>(g[a * R + b]) * gb;
                                }
                            }
                            u[((xi * alpha + nu) * o + oc) * i + ic] = from_f64::<T>(s);
                        }
                    }
                }
            }
            Ok(())
        })
    }
}

/// The geometry of a Winograd convolution call: `[pad_top, pad_left]` and the output's
/// spatial size, from checked attributes.
struct Plan {
    t: Transforms,
    pad: [usize; 2],
}

impl Plan {
    fn new(a: &Conv2dWinogradAttrs) -> Result<Plan, KernelError> {
        let unit = |v: &[i64], name: &str| -> Result<(), KernelError> {
            match per_axis(v, 2, name)? {
                [_, 1, 1] => Ok(()),
                _ => Err(KernelError::Attr(format!("attribute `{name}` must be 1, found {v:?}"))),
            }
        };
        unit(&a.strides, "strides")?;
        unit(&a.dilation, "dilation")?;
        if a.groups != 1 {
            return Err(KernelError::Attr(format!("attribute `groups` must be 1, found {}", a.groups)));
        }
        let canonical = a.data_layout == "NCHW"
            && a.kernel_layout == "OIHW"
            && (a.out_layout.is_empty() || a.out_layout == "NCHW");
        if !canonical {
            return Err(KernelError::Attr("only NCHW data and OIHW kernel layouts are supported".into()));
        }
        if a.kernel_size.as_ref().is_some_and(|k| k.iter().any(|&s| s != R as i64)) {
            return Err(KernelError::Attr(format!("kernel_size must be [3, 3], found {:?}", a.kernel_size)));
        }
        let [before, _] = padding(&a.padding, 2)?;
        Ok(Plan { t: Transforms::new(a.tile_size)?, pad: [before[1], before[2]] })
    }
}

/// `nn.contrib_conv2d_winograd_without_weight_transform(data, weight)`: `nn.conv2d` of `NCHW`
/// data `[n, c, h, w]` with a 3×3 window at stride 1, dilation 1, one group, whose
/// `OIHW` weight `g` is given transformed and transposed, `[α, α, c, o]` (see the module
/// documentation): `[n, o, oh, ow]`, `oh = h + pad_top + pad_bottom − 2` (likewise `ow`).
/// The reference kernel runs the algorithm itself (input tiles transformed, multiplied per
/// `(ξ, ν)`, output tiles transformed) in the operands' dtype, `float32` or `float64`.
#[derive(Debug)]
pub struct Conv2dWinogradWithoutWeightTransform;

impl Operator for Conv2dWinogradWithoutWeightTransform {
    const NAME: &'static str = "nn.contrib_conv2d_winograd_without_weight_transform";
    const PATTERN: OpPattern = OpPattern::OutEWiseFusable;
    const NUM_INPUTS: usize = 2;
    const DTYPES: DTypeSet = DTypeSet::Floats;
    const DOC: &'static str =
        "3x3 stride-1 conv2d by Winograd's minimal filtering, weight pre-transformed ([alpha, alpha, I, O])";
    type Attrs = Conv2dWinogradAttrs;
    const COMPUTE: Option<ComputeRule<Self::Attrs>> = Some(compute::winograd::conv2d_winograd);

    fn shapes<D: ShapeDim>(inputs: &[&[D]], a: &Self::Attrs) -> Result<Vec<Vec<D>>, KernelError> {
        let [data, weight] = args(inputs)?;
        let plan = Plan::new(a)?;
        let [n, c, h, w] = rank4(data, "data")?;
        let [u0, u1, ui, uo] = rank4(weight, "weight")?;
        let alpha = D::known(plan.t.alpha);
        let channels_ok =
            a.channels.is_none_or(|ch| usize::try_from(ch).is_ok_and(|ch| may_equal(D::known(ch), uo)));
        if !may_equal(u0, alpha) || !may_equal(u1, alpha) || !may_equal(ui, c) || !channels_ok {
            return Err(KernelError::Shape(format!(
                "expects a transformed weight [{alpha}, {alpha}, {}, channels] for data {}, found {}",
                super::dim_text(c),
                shape_text(data),
                shape_text(weight),
                alpha = plan.t.alpha
            )));
        }
        let [before, after] = padding(&a.padding, 2)?;
        let out = |size: D, axis: usize| {
            window_out(size, R, 1, 1, before[axis] + after[axis], false).map_err(|e| {
                KernelError::Shape(format!("{}: {}", crate::operator::message(e), shape_text(data)))
            })
        };
        Ok(vec![vec![n, uo, out(h, 1)?, out(w, 2)?]])
    }

    fn dtypes(inputs: &[DType], a: &Self::Attrs) -> Result<Vec<DType>, KernelError> {
        let [d, w] = args(inputs)?;
        let d = DTypeSet::Floats.check(d)?;
        if d != w || a.out_dtype.is_some_and(|o| o != d) {
            return Err(KernelError::DType(format!(
                "the data, weight and out_dtype must be one float dtype: `{d}`, `{w}`, {:?}",
                a.out_dtype
            )));
        }
        Ok(vec![d])
    }

    fn reference(
        inputs: &[&Tensor],
        a: &Self::Attrs,
        outputs: &mut [Tensor],
        _: Checked,
    ) -> Result<(), KernelError> {
        let [d, u] = args(inputs)?;
        let plan = Plan::new(a)?;
        let out = only_output(outputs)?;
        let (&[n, c, h, w], &[.., o, oh, ow]) = (d.shape(), out.shape()) else {
            return Err(KernelError::Shape("winograd operands must have rank 4".into()));
        };
        floats!(d.dtype(), T => {
            plan.run::<T>(d.as_slice::<T>()?, u.as_slice::<T>()?, out.as_mut_slice::<T>()?, [n, c, h, w, o, oh, ow]);
            Ok(())
        })
    }
}

/// The four dimensions of a rank-4 operand.
fn rank4<D: ShapeDim>(s: &[D], what: &str) -> Result<[D; 4], KernelError> {
    <[D; 4]>::try_from(s)
        .map_err(|_| KernelError::Shape(format!("{what} must have rank 4, found {}", shape_text(s))))
}

impl Plan {
    /// The algorithm over every image and output tile: `V = Bᵀ d B` per input channel,
    /// `M = Σ_c U ⊙ V` per output channel, `Y = Aᵀ M A`, the tile's positions inside the
    /// output written.
    fn run<T: Float>(&self, x: &[T], u: &[T], out: &mut [T], [n, c, h, w, o, oh, ow]: [usize; 7]) {
        let (m, alpha) = (self.t.m, self.t.alpha);
        let coef = |rows: &[Vec<f64>]| -> Vec<Vec<T>> {
            rows.iter().map(|r| r.iter().map(|&v| from_f64::<T>(v)).collect()).collect()
        };
        let (at, bt) = (coef(&self.t.at), coef(&self.t.bt));
        let a2 = alpha * alpha;
        // `left · tile · rightᵀ` of a `[rows][α]`-shaped `left` and `right` over an `α×α` tile.
        let sandwich = |left: &[Vec<T>], tile: &[T], right: &[Vec<T>]| -> Vec<T> {
            let mut half = vec![T::ZERO; left.len() * alpha];
            for (r, row) in left.iter().enumerate() {
                for j in 0..alpha {
                    half[r * alpha + j] = (0..alpha).fold(T::ZERO, |s, i| s + row[i] * tile[i * alpha + j]);
                }
            }
            let mut res = vec![T::ZERO; left.len() * right.len()];
            for r in 0..left.len() {
                for (q, col) in right.iter().enumerate() {
                    res[r * right.len() + q] =
                        (0..alpha).fold(T::ZERO, |s, j| s + half[r * alpha + j] * col[j]);
                }
            }
            res
        };
        let at_input = |b: usize, ic: usize, y: isize, xx: isize| -> T {
            let inside = (0..h as isize).contains(&y) && (0..w as isize).contains(&xx);
            if inside {
                x[((b * c + ic) * h + y as usize) * w + xx as usize]
            } else {
                T::ZERO
            }
        };
        let (pt, pl) = (self.pad[0] as isize, self.pad[1] as isize);
        let mut tile = vec![T::ZERO; a2];
        let mut v = vec![T::ZERO; c * a2];
        for b in 0..n {
            for ty in 0..oh.div_ceil(m) {
                for tx in 0..ow.div_ceil(m) {
                    for ic in 0..c {
                        for (i, row) in tile.chunks_exact_mut(alpha).enumerate() {
                            for (j, e) in row.iter_mut().enumerate() {
                                *e = at_input(b, ic, (ty * m + i) as isize - pt, (tx * m + j) as isize - pl);
                            }
                        }
                        v[ic * a2..][..a2].copy_from_slice(&sandwich(&bt, &tile, &bt));
                    }
                    for oc in 0..o {
                        let mut acc = vec![T::ZERO; a2];
                        for (e, s) in acc.iter_mut().enumerate() {
                            *s = (0..c).fold(T::ZERO, |s, ic| s + u[(e * c + ic) * o + oc] * v[ic * a2 + e]);
                        }
                        let y = sandwich(&at, &acc, &at);
                        for (dy, row) in y.chunks_exact(m).enumerate() {
                            for (dx, &val) in row.iter().enumerate() {
                                let (oy, ox) = (ty * m + dy, tx * m + dx);
                                if oy < oh && ox < ow {
                                    out[((b * o + oc) * oh + oy) * ow + ox] = val;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The float32 `nn.conv2d` calls [`winograd_layout`] rewrites, and with which tile size;
/// `None` for the others. Measured (`benches/vision.md`, "Winograd convolutions"): see
/// [`TILE_SIZE`].
fn winograd_tile(a: &Conv2dAttrs, data: &[Dim], weight: &[Dim], dtype: DType) -> Option<i64> {
    let unit = |v: &[i64]| v.iter().all(|&s| s == 1);
    let canonical = a.data_layout == "NCHW"
        && a.kernel_layout == "OIHW"
        && (a.out_layout.is_empty() || a.out_layout == "NCHW")
        && a.out_dtype.is_none_or(|o| o == dtype);
    let (&[_, Dim::Known(c), _, _], &[Dim::Known(o), _, Dim::Known(3), Dim::Known(3)]) = (data, weight)
    else {
        return None;
    };
    let take = dtype == DType::F32 && canonical && a.groups == 1 && unit(&a.strides) && unit(&a.dilation);
    (take && c * o <= MAX_CHANNEL_PRODUCT).then_some(TILE_SIZE)
}

/// The tile size of the convolutions `AlterOpLayout` rewrites.
const TILE_SIZE: i64 = 4;

/// The largest `in_channels · out_channels` rewritten: deeper layers are bound by reading
/// their weights, which the transform makes `α²/9` times larger.
const MAX_CHANNEL_PRODUCT: i64 = 256 * 256;

/// `nn.conv2d`'s `AlterOpLayout` rule (TVM's `conv2d_alter_layout` for CPUs): a float32
/// 3×3, stride-1, dilation-1, one-group `NCHW`/`OIHW` convolution whose weight is a constant
/// becomes `nn.contrib_conv2d_winograd_without_weight_transform(data,
/// transpose(nn.contrib_conv2d_winograd_weight_transform(weight), [0, 1, 3, 2]))`, which
/// `FoldConstant` then computes once. Declines every other call (and weights that are not
/// constants: the transform would run on every call).
pub(crate) fn winograd_layout(
    b: &mut Builder<'_>,
    args: &[ExprId],
    types: &[RelType],
    a: &Conv2dAttrs,
) -> Result<ExprId, String> {
    let (&[data, weight], [RelType::Tensor(dt), RelType::Tensor(wt)]) = (args, types) else {
        return Err("not a conv2d of two tensors".into());
    };
    let tile_size = winograd_tile(a, &dt.shape, &wt.shape, dt.dtype).ok_or("not a Winograd convolution")?;
    if !b.is_constant(weight) {
        return Err("the weight is not a constant".into());
    }
    let Dim::Known(channels) = wt.shape[0] else { return Err("unknown output channels".into()) };
    let u = b.call(
        "nn.contrib_conv2d_winograd_weight_transform",
        vec![weight],
        vec![("tile_size", AttrValue::Int(tile_size))],
    );
    let axes = AttrValue::List([0, 1, 3, 2].map(AttrValue::Int).to_vec());
    let u = b.call("transpose", vec![u], vec![("axes", axes)]);
    Ok(b.call_forwarding(
        "nn.contrib_conv2d_winograd_without_weight_transform",
        vec![data, u],
        vec![
            ("tile_size", AttrValue::Int(tile_size)),
            ("channels", AttrValue::Int(channels)),
            ("kernel_size", AttrValue::List(vec![AttrValue::Int(3), AttrValue::Int(3)])),
        ],
    ))
}

/// `nn.conv2d`'s `ALTER_OP_LAYOUT` facet.
pub(crate) const CONV2D_ALTER: Option<AlterOpLayoutRule<Conv2dAttrs>> = Some(winograd_layout);

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic value in `[-1, 1)` from `i` and a seed (a small LCG).
    fn noise(i: usize, seed: u64) -> f64 {
        let x = (i as u64 ^ seed).wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((x >> 40) as f64 / (1u64 << 24) as f64) * 2.0 - 1.0
    }

    #[test]
    fn transforms_compute_the_one_dimensional_correlation() {
        for m in [2, 4, 6] {
            let t = Transforms::new(m).unwrap();
            let g: Vec<f64> = (0..R).map(|i| noise(i, 1)).collect();
            let d: Vec<f64> = (0..t.alpha).map(|i| noise(i, 2)).collect();
            let gg: Vec<f64> = t.g.iter().map(|r| r.iter().zip(&g).map(|(a, b)| a * b).sum()).collect();
            let bd: Vec<f64> = t.bt.iter().map(|r| r.iter().zip(&d).map(|(a, b)| a * b).sum()).collect();
            for (i, row) in t.at.iter().enumerate() {
                let y: f64 = row.iter().zip(gg.iter().zip(&bd)).map(|(a, (p, q))| a * p * q).sum();
                let want: f64 = (0..R).map(|k| g[k] * d[i + k]).sum();
                assert!((y - want).abs() < 1e-12, "F({m}, 3) output {i}: {y} vs {want}");
            }
        }
        assert!(Transforms::new(3).is_err());
    }

    fn tensor<T: relay_devices::Element>(shape: &[usize], f: impl Fn(usize) -> T) -> Tensor {
        let n = shape.iter().product();
        Tensor::from_vec(shape.to_vec(), (0..n).map(f).collect()).unwrap()
    }

    /// The transformed, transposed (`[α, α, i, o]`) weight of `w` for tile size `m`.
    fn transformed(w: &Tensor, m: i64) -> Tensor {
        let a = ConvWinogradWeightTransformAttrs { tile_size: m };
        let u = crate::kernels::eval::<Conv2dWinogradWeightTransform>(&[w], &a).unwrap().remove(0);
        let &[alpha, _, o, i] = u.shape() else { panic!("rank") };
        let us = u.as_slice::<f32>().unwrap();
        tensor(&[alpha, alpha, i, o], |e| us[(e / (i * o) * o + e % o) * i + e / o % i])
    }

    /// The largest difference over the largest magnitude of `nn.conv2d` in float64, of the
    /// Winograd reference kernel in float32 with tile size `m` (`None`: `nn.conv2d` in
    /// float32) on a `[1, c, h, w]` image, `o` output channels, padding 1.
    fn error(m: Option<i64>, [c, o, h, w]: [usize; 4]) -> f64 {
        let (x, k) = (|e| noise(e, 7), |e| noise(e, 11) / 3.0);
        let conv = Conv2dAttrs { padding: vec![1, 1], ..Conv2dAttrs::default() };
        let run = |d: &Tensor, w: &Tensor| crate::kernels::eval::<super::super::Conv2d>(&[d, w], &conv);
        let want = run(&tensor(&[1, c, h, w], x), &tensor(&[o, c, 3, 3], k)).unwrap().remove(0);
        let (d32, w32) = (tensor(&[1, c, h, w], |e| x(e) as f32), tensor(&[o, c, 3, 3], |e| k(e) as f32));
        let got = match m {
            None => run(&d32, &w32).unwrap().remove(0),
            Some(m) => {
                let a = Conv2dWinogradAttrs {
                    tile_size: m,
                    padding: vec![1, 1],
                    channels: Some(o as i64),
                    ..Conv2dWinogradAttrs::default()
                };
                let u = transformed(&w32, m);
                crate::kernels::eval::<Conv2dWinogradWithoutWeightTransform>(&[&d32, &u], &a)
                    .unwrap()
                    .remove(0)
            }
        };
        let (want, got) = (want.as_slice::<f64>().unwrap(), got.as_slice::<f32>().unwrap());
        let scale = want.iter().fold(0f64, |s, v| s.max(v.abs()));
        want.iter().zip(got).fold(0f64, |e, (a, &b)| e.max((a - f64::from(b)).abs())) / scale
    }

    #[test]
    fn winograd_matches_conv2d_within_the_measured_error() {
        // Odd sizes (partial last tiles), one channel, and ResNet-18's 64-channel layer.
        let shapes = [[3, 5, 7, 9], [1, 2, 3, 3], [8, 8, 11, 6], [64, 64, 14, 14]];
        // Bounds over the largest output magnitude, from the errors measured here (direct
        // float32 0.9–8e-7; F(2×2) at that level, F(4×4) 0.6–2.4e-6, F(6×6) 0.8–8e-6:
        // `benches/vision.md`).
        let bounds = [(2, 1e-6), (4, 5e-6), (6, 1e-4)];
        for shape in shapes {
            let direct = error(None, shape);
            let errors: Vec<f64> = bounds.iter().map(|&(m, _)| error(Some(m), shape)).collect();
            eprintln!(
                "{shape:?}: direct {direct:.2e}, F(2) {:.2e}, F(4) {:.2e}, F(6) {:.2e}",
                errors[0], errors[1], errors[2]
            );
            for (&(m, bound), e) in bounds.iter().zip(&errors) {
                assert!(*e <= bound, "F({m}) on {shape:?}: {e:e} > {bound:e}");
            }
        }
    }
}
