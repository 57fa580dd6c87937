//! The native epilogue of a matrix product: `out = act(product + addend₀ + addend₁)` over a
//! loop nest of up to [`MAX_DIMS`] dimensions, at AVX-512 width.
//!
//! Every fused product (dense, convolution tiles) ends in a loop that reads the product's
//! temp element by element, adds a bias (and a residual), clamps and stores: Cranelift runs
//! it at four lanes. MobileNet-v2's 16→96 layer at 112² spent twice as long there as in the
//! product. The Cranelift backend recognises such a loop after a `gemm`
//! (`cranelift/epilogue.rs`) and calls [`relay_jit_epilogue`] instead, with the loop's
//! extents and each operand's strides in a [`Plan`]. Each element gets the loop's operations
//! in the loop's order — IEEE additions left to right, then each select — so the result is
//! the loop's, to the bit.

/// Loop dimensions a plan holds (outer to inner).
pub(crate) const MAX_DIMS: usize = 4;

/// Loads added to the product, in order (a bias, then a residual).
pub(crate) const MAX_ADDENDS: usize = 2;

/// Selects applied after the additions (a clip is two).
pub(crate) const MAX_STEPS: usize = 4;

/// The operands with strides: the output, the product, then the addends.
const OPERANDS: usize = 2 + MAX_ADDENDS;

/// The length of an encoded plan ([`Plan::encode`]): dims, extents, strides, the counts, steps.
pub(crate) const PLAN_LEN: usize = 1 + MAX_DIMS + OPERANDS * MAX_DIMS + 2 + 4 * MAX_STEPS;

/// A float comparison of kir: false when either side is NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
}

impl Cmp {
    /// `a op b`, as kir (and Rust) compare floats.
    fn holds(self, a: f32, b: f32) -> bool {
        match self {
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
        }
    }
}

/// One arm of a select: the running value or a constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Arm {
    /// The value compared.
    Value,
    /// A constant.
    Const(f32),
}

/// `v = if v cmp c { then } else { otherwise }`: ReLU is `v > 0 ? v : 0`, `max(v, c)` is
/// `v > c ? v : c`, a clip two such steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Step {
    /// The comparison of the value with `c`.
    pub cmp: Cmp,
    /// What the value is compared with.
    pub c: f32,
    /// The result where the comparison holds.
    pub then: Arm,
    /// The result elsewhere (NaN compares false).
    pub otherwise: Arm,
}

impl Step {
    fn apply(&self, v: f32) -> f32 {
        let arm = |a: Arm| match a {
            Arm::Value => v,
            Arm::Const(c) => c,
        };
        if self.cmp.holds(v, self.c) {
            arm(self.then)
        } else {
            arm(self.otherwise)
        }
    }
}

/// An epilogue: for every index `(i₀, …)` of the nest, `out[Σ i_d·s_out,d] = steps(product[Σ
/// i_d·s_product,d] + addend₀[…] + …)`, offsets from the pointers the call passes. The
/// innermost dimension is contiguous in the output, the product and every addend but a
/// broadcast one (stride 0: a per-row bias). Fixed arrays, so a call decodes it without
/// allocating.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Plan {
    dims: usize,
    /// Extents, outer to inner; the first `dims` count.
    extents: [i64; MAX_DIMS],
    /// The output, the product, then the addends.
    operands: usize,
    /// Element strides per operand and dimension.
    strides: [[i64; MAX_DIMS]; OPERANDS],
    steps: usize,
    /// The selects, in order; the first `steps` count.
    step: [Step; MAX_STEPS],
}

impl Plan {
    /// The plan of a nest of `extents` (outer to inner, each at least 1) where operand `o`
    /// (the output, the product, then each addend) is at `Σ i_d·strides[o][d]`, followed by
    /// `steps`; `None` past the limits above or when the innermost dimension is not
    /// contiguous as described at [`Plan`].
    pub(crate) fn new<S: AsRef<[i64]>>(extents: &[i64], strides: &[S], steps: &[Step]) -> Option<Plan> {
        let dims = extents.len();
        let contiguous = |(o, s): (usize, &[i64])| {
            s.len() == dims && dims > 0 && (s[dims - 1] == 1 || (o >= 2 && s[dims - 1] == 0))
        };
        let fits = (1..=MAX_DIMS).contains(&dims)
            && (2..=OPERANDS).contains(&strides.len())
            && steps.len() <= MAX_STEPS
            && extents.iter().all(|&e| e >= 1)
            && strides.iter().map(AsRef::as_ref).enumerate().all(contiguous);
        if !fits {
            return None;
        }
        let relu = Step { cmp: Cmp::Gt, c: 0.0, then: Arm::Value, otherwise: Arm::Const(0.0) };
        let mut plan = Plan {
            dims,
            extents: [1; MAX_DIMS],
            operands: strides.len(),
            strides: [[0; MAX_DIMS]; OPERANDS],
            steps: steps.len(),
            step: [relu; MAX_STEPS],
        };
        plan.extents[..dims].copy_from_slice(extents);
        for (to, from) in plan.strides.iter_mut().zip(strides) {
            to[..dims].copy_from_slice(from.as_ref());
        }
        plan.step[..steps.len()].copy_from_slice(steps);
        Some(plan)
    }

    /// The plan as the `i64`s the call reads (`PLAN_LEN` of them): dims, extents, strides of
    /// the output, product and addends, the number of operands and of steps, each step as
    /// comparison, constant bits and its two arms (`-1` the value, else constant bits).
    pub(crate) fn encode(&self) -> [i64; PLAN_LEN] {
        let mut p = [0i64; PLAN_LEN];
        p[0] = self.dims as i64;
        p[1..1 + MAX_DIMS].copy_from_slice(&self.extents);
        for (o, s) in self.strides.iter().enumerate() {
            p[1 + MAX_DIMS + o * MAX_DIMS..][..MAX_DIMS].copy_from_slice(s);
        }
        let counts = 1 + MAX_DIMS + OPERANDS * MAX_DIMS;
        p[counts] = self.operands as i64;
        p[counts + 1] = self.steps as i64;
        let arm = |a: Arm| match a {
            Arm::Value => -1,
            Arm::Const(c) => i64::from(c.to_bits()),
        };
        for (i, s) in self.step.iter().enumerate() {
            let code = [s.cmp as i64, i64::from(s.c.to_bits()), arm(s.then), arm(s.otherwise)];
            p[counts + 2 + 4 * i..][..4].copy_from_slice(&code);
        }
        p
    }

    /// The plan `encode` wrote; `None` for anything else.
    fn decode(p: &[i64; PLAN_LEN]) -> Option<Plan> {
        let dims = usize::try_from(p[0]).ok().filter(|&d| d <= MAX_DIMS)?;
        let counts = 1 + MAX_DIMS + OPERANDS * MAX_DIMS;
        let operands = usize::try_from(p[counts]).ok()?;
        let steps = usize::try_from(p[counts + 1]).ok()?;
        let bits = |v: i64| u32::try_from(v).ok().map(f32::from_bits);
        let arm = |v: i64| if v == -1 { Some(Arm::Value) } else { bits(v).map(Arm::Const) };
        let cmps = [Cmp::Gt, Cmp::Ge, Cmp::Lt, Cmp::Le];
        let mut step = [Step { cmp: Cmp::Gt, c: 0.0, then: Arm::Value, otherwise: Arm::Value }; MAX_STEPS];
        for (i, to) in step.iter_mut().enumerate().take(steps.min(MAX_STEPS)) {
            let s = &p[counts + 2 + 4 * i..][..4];
            *to = Step {
                cmp: *cmps.get(usize::try_from(s[0]).ok()?)?,
                c: bits(s[1])?,
                then: arm(s[2])?,
                otherwise: arm(s[3])?,
            };
        }
        let extents = &p[1..1 + dims];
        let strides: [&[i64]; OPERANDS] =
            std::array::from_fn(|o| &p[1 + MAX_DIMS + o * MAX_DIMS..][..extents.len()]);
        Plan::new(extents, strides.get(..operands)?, step.get(..steps)?)
    }
}

/// Runs the epilogue `plan` describes (`PLAN_LEN` `i64`s, [`Plan::encode`]) from the
/// pointers given (null for addends the plan does not have). A plan `encode` did not write
/// does nothing.
///
/// # Safety
/// Every element the plan's nest reads (from `product` and the addends) and writes (to `out`)
/// must be valid for reads and writes, and `out`'s elements must not overlap what is read:
/// the JIT calls it for the loop nest a verified kernel would run, whose bounds proof covers
/// exactly these elements.
pub(crate) unsafe extern "C" fn relay_jit_epilogue(
    out: *mut f32,
    product: *const f32,
    addend0: *const f32,
    addend1: *const f32,
    plan: *const i64,
) {
    // SAFETY: the caller passes `PLAN_LEN` readable `i64`s.
    let Some(plan) = Plan::decode(unsafe { &*plan.cast::<[i64; PLAN_LEN]>() }) else { return };
    let bases = [out.cast_const(), product, addend0, addend1];
    let n = plan.extents[plan.dims - 1] as usize;
    let steps = &plan.step[..plan.steps];
    // Each addend at the start of a row and whether it is contiguous (else broadcast) along it.
    let mut addends = [(std::ptr::null::<f32>(), false); MAX_ADDENDS];
    let count = plan.operands - 2;
    let addends_at = |at: &[isize; OPERANDS], to: &mut [(*const f32, bool); MAX_ADDENDS]| {
        for (a, slot) in to.iter_mut().enumerate().take(count) {
            *slot = (bases[2 + a].wrapping_offset(at[2 + a]), plan.strides[2 + a][plan.dims - 1] == 1);
        }
    };
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F.
        let splats = unsafe { x86::splats(steps) };
        return each_row(&plan, |at| {
            addends_at(at, &mut addends);
            let out = bases[0].wrapping_offset(at[0]).cast_mut();
            // SAFETY: the CPU has AVX-512F; the row's elements are the nest's (see above).
            unsafe {
                x86::row_avx512(out, bases[1].wrapping_offset(at[1]), &addends[..count], steps, &splats, n)
            }
        });
    }
    each_row(&plan, |at| {
        addends_at(at, &mut addends);
        // SAFETY: the row's elements are the nest's (see above).
        unsafe {
            row(
                bases[0].wrapping_offset(at[0]).cast_mut(),
                bases[1].wrapping_offset(at[1]),
                &addends[..count],
                steps,
                n,
            )
        }
    });
}

/// Calls `row` with each operand's element offset at the start of every innermost row of
/// the nest, in order: the outer dimensions odometer-wise, offsets kept up to date by adding
/// strides (a depthwise channel's 7-element rows cost a few additions each).
fn each_row(plan: &Plan, mut row: impl FnMut(&[isize; OPERANDS])) {
    let mut index = [0i64; MAX_DIMS];
    let mut at = [0isize; OPERANDS];
    loop {
        row(&at);
        let mut d = plan.dims - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            index[d] += 1;
            for (a, s) in at.iter_mut().zip(&plan.strides) {
                *a = a.wrapping_add(s[d] as isize);
            }
            if index[d] < plan.extents[d] {
                break;
            }
            // Back to the start of dimension `d`; the next outer one moves on.
            for (a, s) in at.iter_mut().zip(&plan.strides) {
                *a = a.wrapping_sub((s[d] * plan.extents[d]) as isize);
            }
            index[d] = 0;
        }
    }
}

/// One innermost row of `n` elements, one at a time.
///
/// # Safety
/// `out[..n]` writable, `product[..n]` readable, each addend `[..n]` (contiguous) or `[0]`
/// readable, `out` overlapping none of them.
unsafe fn row(out: *mut f32, product: *const f32, addends: &[(*const f32, bool)], steps: &[Step], n: usize) {
    for j in 0..n {
        // SAFETY: `j < n`, inside every contiguous range; a broadcast addend reads `[0]`.
        unsafe {
            let mut v = *product.add(j);
            for &(a, contiguous) in addends {
                v += *a.add(if contiguous { j } else { 0 });
            }
            *out.add(j) = steps.iter().fold(v, |v, s| s.apply(v));
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Arm, Cmp, Step, MAX_STEPS};
    use std::arch::x86_64::*;

    /// Each step's constant and arms, splatted: `[c, then, otherwise]` (an arm that is the
    /// value splats 0, unused).
    pub(super) type Splats = [[__m512; 3]; MAX_STEPS];

    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn splats(steps: &[Step]) -> Splats {
        let arm = |a: Arm| match a {
            Arm::Value => 0.0,
            Arm::Const(c) => c,
        };
        let mut splats = [[_mm512_setzero_ps(); 3]; MAX_STEPS];
        for (to, s) in splats.iter_mut().zip(steps) {
            *to = [_mm512_set1_ps(s.c), _mm512_set1_ps(arm(s.then)), _mm512_set1_ps(arm(s.otherwise))];
        }
        splats
    }

    /// [`super::row`] 16 lanes at a time, the last vector masked (masked loads read nothing
    /// past `n`).
    ///
    /// # Safety
    /// The CPU must have AVX-512F; the ranges of [`super::row`]; `splats` from [`splats`]
    /// of `steps`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn row_avx512(
        out: *mut f32,
        product: *const f32,
        addends: &[(*const f32, bool)],
        steps: &[Step],
        splats: &Splats,
        n: usize,
    ) {
        let mut j = 0;
        while j < n {
            let lanes = (n - j).min(16);
            let mask = (u32::MAX >> (32 - lanes)) as __mmask16;
            // SAFETY: lanes `j..j + lanes` are inside the row; masked lanes are not read.
            let mut v = unsafe { _mm512_maskz_loadu_ps(mask, product.add(j)) };
            for &(a, contiguous) in addends {
                // SAFETY: as above; a broadcast addend's one element is `[0]`.
                let x = unsafe {
                    if contiguous {
                        _mm512_maskz_loadu_ps(mask, a.add(j))
                    } else {
                        _mm512_set1_ps(*a)
                    }
                };
                v = _mm512_add_ps(v, x);
            }
            for (s, [c, then, otherwise]) in steps.iter().zip(splats) {
                let holds = match s.cmp {
                    Cmp::Gt => _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, *c),
                    Cmp::Ge => _mm512_cmp_ps_mask::<_CMP_GE_OQ>(v, *c),
                    Cmp::Lt => _mm512_cmp_ps_mask::<_CMP_LT_OQ>(v, *c),
                    Cmp::Le => _mm512_cmp_ps_mask::<_CMP_LE_OQ>(v, *c),
                };
                let then = if s.then == Arm::Value { v } else { *then };
                let otherwise = if s.otherwise == Arm::Value { v } else { *otherwise };
                v = _mm512_mask_blend_ps(holds, otherwise, then);
            }
            // SAFETY: as for the loads.
            unsafe { _mm512_mask_storeu_ps(out.add(j), mask, v) };
            j += 16;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_round_trip_and_malformed_ones_are_refused() {
        let clip = [
            Step { cmp: Cmp::Ge, c: 0.0, then: Arm::Value, otherwise: Arm::Const(0.0) },
            Step { cmp: Cmp::Le, c: 6.0, then: Arm::Value, otherwise: Arm::Const(6.0) },
        ];
        let strides = vec![vec![400, 20, 1], vec![40, 20, 1], vec![1, 0, 0], vec![400, 20, 1]];
        let plan = Plan::new(&[3, 2, 20], &strides, &clip).unwrap();
        assert_eq!(Plan::decode(&plan.encode()), Some(plan));
        let mut encoded = plan.encode();
        encoded[0] = 5;
        assert_eq!(Plan::decode(&encoded), None, "five dimensions");
        assert_eq!(Plan::new(&[2, 20], &[vec![40, 2], vec![20, 1]], &[]), None, "a strided output");
        assert_eq!(Plan::new(&[2, 20], &[vec![40, 1], vec![20, 0]], &[]), None, "a broadcast product");
        assert_eq!(Plan::new(&[0, 20], &[vec![40, 1], vec![20, 1]], &[]), None, "an empty nest");
    }

    #[test]
    fn each_element_gets_the_loop_operations_in_order() {
        // A 3 × 37 product (two full vectors and a masked one per row) into rows 50 apart,
        // a per-row bias and a residual, then a clip that NaN and -0.0 go through as the
        // kir loop's selects take them.
        let (rows, cols, ld) = (3usize, 37usize, 50usize);
        let mut product: Vec<f32> = (0..rows * cols).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
        product[5] = f32::NAN;
        product[6] = -0.0;
        let bias = [0.5f32, -0.25, 0.0];
        let residual: Vec<f32> = (0..rows * ld).map(|i| ((i * 13 % 29) as f32 - 14.0) / 3.0).collect();
        let steps = [
            Step { cmp: Cmp::Gt, c: 0.0, then: Arm::Value, otherwise: Arm::Const(0.0) },
            Step { cmp: Cmp::Lt, c: 6.0, then: Arm::Value, otherwise: Arm::Const(6.0) },
        ];
        let strides = [vec![ld as i64, 1], vec![cols as i64, 1], vec![1, 0], vec![ld as i64, 1]];
        let plan = Plan::new(&[rows as i64, cols as i64], &strides, &steps).unwrap();
        let mut out = vec![f32::INFINITY; rows * ld];
        // SAFETY: the nest reads `product[..rows·cols]`, `bias[..rows]`, `residual[..rows·ld]`
        // and writes `out[..rows·ld]` (columns below `cols`), all inside the vectors.
        unsafe {
            relay_jit_epilogue(
                out.as_mut_ptr(),
                product.as_ptr(),
                bias.as_ptr(),
                residual.as_ptr(),
                plan.encode().as_ptr(),
            )
        };
        for i in 0..rows {
            for j in 0..ld {
                let got = out[i * ld + j];
                if j >= cols {
                    assert_eq!(got, f32::INFINITY, "({i}, {j}) is not the nest's");
                    continue;
                }
                let v = product[i * cols + j] + bias[i] + residual[i * ld + j];
                let v = if v > 0.0 { v } else { 0.0 };
                let want = if v < 6.0 { v } else { 6.0 };
                assert_eq!(got.to_bits(), want.to_bits(), "({i}, {j})");
            }
        }
    }
}
