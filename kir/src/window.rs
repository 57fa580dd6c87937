//! The window geometry of [`crate::Stmt::DepthwiseConv2d`], and which output positions of a
//! window read inside its input (the rest read padding).

/// The geometry of [`crate::Stmt::DepthwiseConv2d`] (TVM's `Conv2DAttrs` for NCHW, with sizes known
/// when the kernel is built). Pairs are `[height, width]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DepthwiseWindow {
    /// Images `N`.
    pub images: i64,
    /// Channels `C` of each image, each convolved with its own window.
    pub channels: i64,
    /// Input height and width `[h, w]`.
    pub input: [i64; 2],
    /// Output height and width `[oh, ow]`.
    pub output: [i64; 2],
    /// Window height and width `[kh, kw]`.
    pub kernel: [i64; 2],
    /// Strides `[sh, sw]` (at least 1).
    pub strides: [i64; 2],
    /// Dilation `[dh, dw]` (at least 1).
    pub dilation: [i64; 2],
    /// Zero padding before the first row and column, `[pt, pl]`.
    pub padding: [i64; 2],
}

impl DepthwiseWindow {
    /// The fields in declaration order, pairs flattened (for serialization, hashing, and the
    /// native routine's arguments).
    pub fn to_array(&self) -> [i64; 14] {
        let [h, w] = self.input;
        let [oh, ow] = self.output;
        let [kh, kw] = self.kernel;
        let [sh, sw] = self.strides;
        let [dh, dw] = self.dilation;
        let [pt, pl] = self.padding;
        [self.images, self.channels, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl]
    }

    /// The inverse of [`DepthwiseWindow::to_array`].
    pub fn from_array(a: [i64; 14]) -> Self {
        let [images, channels, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl] = a;
        DepthwiseWindow {
            images,
            channels,
            input: [h, w],
            output: [oh, ow],
            kernel: [kh, kw],
            strides: [sh, sw],
            dilation: [dh, dw],
            padding: [pt, pl],
        }
    }

    /// Element counts of `[out, data, weight]`, or `None` when a field lies outside
    /// `0..2^30` (so that no position arithmetic overflows), a stride or dilation is below 1,
    /// or a count overflows `i64`.
    pub fn lens(&self) -> Option<[i64; 3]> {
        let a = self.to_array();
        if a.iter().any(|&v| !(0..1 << 30).contains(&v)) || a[8..12].iter().any(|&v| v < 1) {
            return None;
        }
        let planes = self.images.checked_mul(self.channels)?;
        let out = planes.checked_mul(self.output[0])?.checked_mul(self.output[1])?;
        let data = planes.checked_mul(self.input[0])?.checked_mul(self.input[1])?;
        let weight = self.channels.checked_mul(self.kernel[0])?.checked_mul(self.kernel[1])?;
        Some([out, data, weight])
    }
}

/// The output positions `o` in `0..out` whose input position `o·stride − offset` lies in
/// `0..len`, as a range `(first, end)` (empty when `first >= end`); `stride > 0`.
pub fn inside(out: i64, stride: i64, offset: i64, len: i64) -> (i64, i64) {
    // ceil(a / b) for b > 0 and any a.
    let ceil_div = |a: i64, b: i64| -((-a).div_euclid(b));
    (ceil_div(offset, stride).clamp(0, out), ceil_div(len + offset, stride).clamp(0, out))
}

#[cfg(test)]
mod tests {
    use super::inside;

    #[test]
    fn inside_is_the_range_of_outputs_reading_the_input() {
        for out in 0..7 {
            for stride in 1..4 {
                for offset in -5..6 {
                    for len in 0..8 {
                        let want: Vec<i64> =
                            (0..out).filter(|o| (0..len).contains(&(o * stride - offset))).collect();
                        let (first, end) = inside(out, stride, offset, len);
                        let got: Vec<i64> = (first..end).collect();
                        assert_eq!(got, want, "out {out} stride {stride} offset {offset} len {len}");
                    }
                }
            }
        }
    }
}
