//! Strided views: a shape, strides in elements and an offset over a borrowed buffer.
//!
//! Reference kernels read transposed, broadcast and sliced operands through views instead of
//! materialising them, and write sub-blocks of outputs (concatenate, stack, pad) through
//! mutable views. A view checks when it is made that every position it can address lies
//! inside its buffer, so iterating it never indexes out of bounds.

use crate::storage::Element;
use crate::tensor::TensorError;
use smallvec::{smallvec, SmallVec};

/// Where the elements of a strided n-d array sit in a flat buffer: element `[i0, i1, ...]` is
/// at `offset + Σ ik * strides[k]`. Strides are in elements and may be 0 (broadcast) or
/// negative (reversed slices).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    // Inline up to rank 4: kernels make views on every call, and this keeps them off the heap.
    shape: Dims,
    strides: SmallVec<[isize; 4]>,
    offset: usize,
}

/// Up to four dimensions inline.
type Dims = SmallVec<[usize; 4]>;

impl Layout {
    /// The row-major layout of a contiguous array of `shape`.
    pub fn contiguous(shape: &[usize]) -> Layout {
        let mut strides: SmallVec<[isize; 4]> = smallvec![0isize; shape.len()];
        let mut step = 1isize;
        for (s, &d) in strides.iter_mut().zip(shape).rev() {
            *s = step;
            step = step.saturating_mul(isize::try_from(d).unwrap_or(isize::MAX));
        }
        Layout { shape: Dims::from_slice(shape), strides, offset: 0 }
    }

    /// A layout from its parts. Errors if `shape` and `strides` differ in length.
    pub fn new(shape: Vec<usize>, strides: Vec<isize>, offset: usize) -> Result<Layout, TensorError> {
        if shape.len() != strides.len() {
            return Err(TensorError::RankMismatch { expected: shape.len(), actual: strides.len() });
        }
        Ok(Layout { shape: Dims::from_vec(shape), strides: SmallVec::from_vec(strides), offset })
    }

    /// Dimensions, outermost first.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Element strides per dimension.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// Position of element `[0, 0, ...]`.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Number of addressable elements (saturating).
    pub fn len(&self) -> usize {
        self.shape.iter().fold(1usize, |n, &d| n.saturating_mul(d))
    }

    /// Whether some dimension is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The dimensions reordered: axis `k` of the result is axis `axes[k]` of `self`.
    pub fn permute(&self, axes: &[usize]) -> Result<Layout, TensorError> {
        let rank = self.shape.len();
        let mut seen = vec![false; rank];
        for &a in axes {
            match seen.get_mut(a) {
                Some(s) if !*s => *s = true,
                _ => return Err(TensorError::NotAPermutation(axes.to_vec())),
            }
        }
        if axes.len() != rank {
            return Err(TensorError::NotAPermutation(axes.to_vec()));
        }
        Ok(Layout {
            shape: axes.iter().map(|&a| self.shape[a]).collect(),
            strides: axes.iter().map(|&a| self.strides[a]).collect(),
            offset: self.offset,
        })
    }

    /// The layout seen as `shape` under NumPy broadcasting: dimensions are matched from the
    /// right, missing leading ones and size-1 ones repeat with stride 0.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout, TensorError> {
        let err = || TensorError::NotBroadcastable { from: self.shape.to_vec(), to: shape.to_vec() };
        let lead = shape.len().checked_sub(self.shape.len()).ok_or_else(err)?;
        let mut strides: SmallVec<[isize; 4]> = smallvec![0isize; shape.len()];
        for (k, (&d, &s)) in self.shape.iter().zip(&self.strides).enumerate() {
            let target = shape[lead + k];
            if d == target {
                strides[lead + k] = s;
            } else if d != 1 {
                return Err(err());
            }
        }
        Ok(Layout { shape: Dims::from_slice(shape), strides, offset: self.offset })
    }

    /// Axis `axis` restricted to the `len` indices `start, start + step, ...`, which must all
    /// lie inside the dimension (`step` may be negative; anything goes when `len` is 0).
    pub fn slice_axis(
        &self,
        axis: usize,
        start: usize,
        step: isize,
        len: usize,
    ) -> Result<Layout, TensorError> {
        let rank = self.shape.len();
        let dim = *self.shape.get(axis).ok_or(TensorError::AxisOutOfRange { axis, rank })?;
        let oob = || {
            TensorError::OutOfBounds(format!(
                "slice {start}, step {step}, length {len} of a dimension of {dim}"
            ))
        };
        let mut offset = self.offset;
        if len > 0 {
            let last = isize::try_from(len - 1)
                .ok()
                .and_then(|n| n.checked_mul(step))
                .and_then(|d| isize::try_from(start).ok()?.checked_add(d))
                .ok_or_else(oob)?;
            if start >= dim || last < 0 || last as usize >= dim {
                return Err(oob());
            }
            let shift = isize::try_from(start)
                .ok()
                .and_then(|s| s.checked_mul(self.strides[axis]))
                .ok_or_else(oob)?;
            offset = offset.checked_add_signed(shift).ok_or_else(oob)?;
        }
        let mut out = self.clone();
        out.shape[axis] = len;
        out.strides[axis] = self.strides[axis].saturating_mul(step);
        out.offset = offset;
        Ok(out)
    }

    /// Errors unless every addressable position lies in `0..buffer_len`.
    fn check_within(&self, buffer_len: usize) -> Result<(), TensorError> {
        if self.is_empty() {
            return Ok(());
        }
        let oob = || TensorError::OutOfBounds(format!("{self:?} in a buffer of {buffer_len} elements"));
        let base = isize::try_from(self.offset).map_err(|_| oob())?;
        let (mut lo, mut hi) = (base, base);
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            let reach = isize::try_from(d - 1).ok().and_then(|n| n.checked_mul(s)).ok_or_else(oob)?;
            if reach < 0 {
                lo = lo.checked_add(reach).ok_or_else(oob)?;
            } else {
                hi = hi.checked_add(reach).ok_or_else(oob)?;
            }
        }
        if lo < 0 || hi as usize >= buffer_len {
            return Err(oob());
        }
        Ok(())
    }

    /// Buffer positions in row-major order of the index space. Only meaningful for a layout
    /// that passed `check_within`.
    fn offsets(&self) -> Offsets<'_> {
        let next = if self.is_empty() { None } else { Some(self.offset as isize) };
        Offsets { layout: self, index: smallvec![0; self.shape.len()], next }
    }
}

/// Iterator over the buffer positions of a [`Layout`], last axis fastest.
struct Offsets<'a> {
    layout: &'a Layout,
    index: Dims,
    next: Option<isize>,
}

impl Iterator for Offsets<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let current = self.next?;
        let mut pos = current;
        self.next = None;
        for axis in (0..self.index.len()).rev() {
            let stride = self.layout.strides[axis];
            if self.index[axis] + 1 < self.layout.shape[axis] {
                self.index[axis] += 1;
                self.next = Some(pos.wrapping_add(stride));
                break;
            }
            pos = pos.wrapping_sub(stride.wrapping_mul(self.index[axis] as isize));
            self.index[axis] = 0;
        }
        Some(current as usize)
    }
}

/// A read-only strided view of `T` elements.
#[derive(Clone, Debug)]
pub struct TensorView<'a, T> {
    data: &'a [T],
    layout: Layout,
}

impl<'a, T: Element> TensorView<'a, T> {
    /// A view of `data` through `layout`. Errors if the layout reaches outside `data`.
    pub fn new(data: &'a [T], layout: Layout) -> Result<TensorView<'a, T>, TensorError> {
        layout.check_within(data.len())?;
        Ok(TensorView { data, layout })
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The view's shape.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }

    /// The elements in row-major order of the view's index space.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.layout.offsets().map(|o| self.data[o])
    }

    /// The elements copied into a contiguous row-major vector.
    pub fn to_vec(&self) -> Vec<T> {
        self.iter().collect()
    }

    /// The element at `index`, or `None` if the index has the wrong rank or is out of range.
    pub fn get(&self, index: &[usize]) -> Option<T> {
        if index.len() != self.layout.shape.len() {
            return None;
        }
        let mut pos = self.layout.offset as isize;
        for ((&i, &d), &s) in index.iter().zip(&self.layout.shape).zip(&self.layout.strides) {
            if i >= d {
                return None;
            }
            pos += i as isize * s;
        }
        self.data.get(pos as usize).copied()
    }

    /// The view with its axes reordered (see [`Layout::permute`]).
    pub fn permute(self, axes: &[usize]) -> Result<TensorView<'a, T>, TensorError> {
        let layout = self.layout.permute(axes)?;
        TensorView::new(self.data, layout)
    }

    /// The view broadcast to `shape` (see [`Layout::broadcast_to`]).
    pub fn broadcast_to(self, shape: &[usize]) -> Result<TensorView<'a, T>, TensorError> {
        let layout = self.layout.broadcast_to(shape)?;
        TensorView::new(self.data, layout)
    }

    /// The view sliced along one axis (see [`Layout::slice_axis`]).
    pub fn slice_axis(
        self,
        axis: usize,
        start: usize,
        step: isize,
        len: usize,
    ) -> Result<TensorView<'a, T>, TensorError> {
        let layout = self.layout.slice_axis(axis, start, step, len)?;
        TensorView::new(self.data, layout)
    }
}

/// A mutable strided view of `T` elements, for writing a sub-block of an output.
#[derive(Debug)]
pub struct TensorViewMut<'a, T> {
    data: &'a mut [T],
    layout: Layout,
}

impl<'a, T: Element> TensorViewMut<'a, T> {
    /// A mutable view of `data` through `layout`. Errors if the layout reaches outside `data`.
    pub fn new(data: &'a mut [T], layout: Layout) -> Result<TensorViewMut<'a, T>, TensorError> {
        layout.check_within(data.len())?;
        Ok(TensorViewMut { data, layout })
    }

    /// The view's shape.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }

    /// The view sliced along one axis (see [`Layout::slice_axis`]).
    pub fn slice_axis(
        self,
        axis: usize,
        start: usize,
        step: isize,
        len: usize,
    ) -> Result<TensorViewMut<'a, T>, TensorError> {
        let layout = self.layout.slice_axis(axis, start, step, len)?;
        TensorViewMut::new(self.data, layout)
    }

    /// Writes `values` to the view's positions in row-major order. Errors (after writing what
    /// fits) unless exactly as many values as positions are given.
    pub fn assign<I: IntoIterator<Item = T>>(&mut self, values: I) -> Result<(), TensorError> {
        let mut values = values.into_iter();
        let mut written = 0usize;
        for pos in self.layout.offsets() {
            let v = values.next().ok_or_else(|| self.count_error(written))?;
            self.data[pos] = v;
            written += 1;
        }
        match values.next() {
            None => Ok(()),
            Some(_) => Err(self.count_error(written + 1 + values.count())),
        }
    }

    /// Copies `src` into the view, like [`TensorViewMut::assign`] with `src`'s elements in
    /// row-major order. When the shapes are equal, rows that are contiguous in both (innermost
    /// stride 1) are copied as slices, which is what makes `split`, `concatenate` and slicing
    /// run at memory speed; otherwise elements are copied one by one.
    ///
    /// # Errors
    /// [`TensorError::ElementCount`] if the element counts differ.
    pub fn copy_from(&mut self, src: &TensorView<'_, T>) -> Result<(), TensorError> {
        if src.layout.shape != self.layout.shape {
            return self.assign(src.iter());
        }
        let rank = self.layout.shape.len();
        let rows = rank >= 1 && self.layout.strides[rank - 1] == 1 && src.layout.strides[rank - 1] == 1;
        if !rows {
            return self.assign(src.iter());
        }
        let run = self.layout.shape[rank - 1];
        let outer = |l: &Layout| Layout {
            shape: Dims::from_slice(&l.shape[..rank - 1]),
            strides: SmallVec::from_slice(&l.strides[..rank - 1]),
            offset: l.offset,
        };
        let (to, from) = (outer(&self.layout), outer(&src.layout));
        if to.is_empty() || run == 0 {
            return Ok(());
        }
        for (o, i) in to.offsets().zip(from.offsets()) {
            // Both layouts were checked to stay inside their buffers when the views were made.
            match (self.data.get_mut(o..o + run), src.data.get(i..i + run)) {
                (Some(dst), Some(row)) => dst.copy_from_slice(row),
                _ => return Err(self.count_error(src.layout.len())),
            }
        }
        Ok(())
    }

    /// Writes `value` to every position of the view.
    pub fn fill(&mut self, value: T) {
        for pos in self.layout.offsets() {
            self.data[pos] = value;
        }
    }

    fn count_error(&self, actual: usize) -> TensorError {
        TensorError::ElementCount { shape: self.layout.shape.to_vec(), expected: self.layout.len(), actual }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iota(n: usize) -> Vec<i32> {
        (0..n as i32).collect()
    }

    #[test]
    fn permute_broadcast_and_reverse() {
        let data = iota(6);
        let v = TensorView::new(&data, Layout::contiguous(&[2, 3])).unwrap();
        assert_eq!(v.clone().permute(&[1, 0]).unwrap().to_vec(), vec![0, 3, 1, 4, 2, 5]);
        let row = TensorView::new(&data[..3], Layout::contiguous(&[3])).unwrap();
        assert_eq!(row.broadcast_to(&[2, 3]).unwrap().to_vec(), vec![0, 1, 2, 0, 1, 2]);
        let rev = v.clone().slice_axis(1, 2, -1, 3).unwrap();
        assert_eq!(rev.to_vec(), vec![2, 1, 0, 5, 4, 3]);
        assert_eq!(rev.get(&[1, 0]), Some(5));
        assert_eq!(rev.get(&[2, 0]), None);
        assert!(v.clone().permute(&[0, 0]).is_err());
        assert!(v.clone().slice_axis(1, 1, 1, 3).is_err());
        assert!(v.broadcast_to(&[3, 3]).is_err());
    }

    #[test]
    fn copy_from_copies_rows_and_strided_views() {
        // Columns 1..3 of a 3x4 matrix into a 3x2 block: contiguous rows of 2.
        let data = iota(12);
        let cols =
            TensorView::new(&data, Layout::contiguous(&[3, 4])).unwrap().slice_axis(1, 1, 1, 2).unwrap();
        let mut out = vec![0; 6];
        TensorViewMut::new(&mut out, Layout::contiguous(&[3, 2])).unwrap().copy_from(&cols).unwrap();
        assert_eq!(out, vec![1, 2, 5, 6, 9, 10]);
        // A transposed source has no contiguous rows; a reshaped one is copied in order.
        let t = TensorView::new(&data[..6], Layout::contiguous(&[2, 3])).unwrap().permute(&[1, 0]).unwrap();
        TensorViewMut::new(&mut out, Layout::contiguous(&[3, 2])).unwrap().copy_from(&t).unwrap();
        assert_eq!(out, vec![0, 3, 1, 4, 2, 5]);
        let flat = TensorView::new(&data[..6], Layout::contiguous(&[6])).unwrap();
        TensorViewMut::new(&mut out, Layout::contiguous(&[1, 3, 2])).unwrap().copy_from(&flat).unwrap();
        assert_eq!(out, iota(6));
        let short = TensorView::new(&data[..5], Layout::contiguous(&[5])).unwrap();
        assert!(TensorViewMut::new(&mut out, Layout::contiguous(&[6])).unwrap().copy_from(&short).is_err());
    }

    #[test]
    fn scalars_and_empty_views() {
        let data = [9i32];
        let s = TensorView::new(&data, Layout::contiguous(&[])).unwrap();
        assert_eq!(s.to_vec(), vec![9]);
        let e = TensorView::new(&data[..0], Layout::contiguous(&[4, 0])).unwrap();
        assert_eq!(e.to_vec(), Vec::<i32>::new());
    }

    #[test]
    fn views_reaching_outside_are_rejected() {
        let data = iota(4);
        assert!(TensorView::new(&data, Layout::contiguous(&[5])).is_err());
        assert!(TensorView::new(&data, Layout::new(vec![2], vec![-1], 0).unwrap()).is_err());
        assert!(TensorView::new(&data, Layout::new(vec![2], vec![isize::MAX], 1).unwrap()).is_err());
    }

    #[test]
    fn assign_writes_a_sub_block() {
        let mut data = vec![0i32; 6];
        let mut col = TensorViewMut::new(&mut data, Layout::contiguous(&[2, 3]))
            .unwrap()
            .slice_axis(1, 1, 1, 1)
            .unwrap();
        col.assign([7, 8]).unwrap();
        assert!(col.assign([1]).is_err());
        assert!(col.assign([1, 2, 3]).is_err());
        col.fill(4);
        assert_eq!(data, vec![0, 4, 0, 0, 4, 0]);
    }
}
