//! Half floats (`float16`, `bfloat16`) in OpenCL C. kir only loads, stores and converts them to
//! and from `float32` (`relay_kir::half`), so an expression of a half-float dtype is written as
//! its `float` value (exact: a half float widens to `float` without rounding): a load widens
//! as it reads, a cast to `float32` is then nothing, and a cast from `float32` rounds and
//! widens back. `float16` uses the core built-ins `vload_half`/`vstore_half_rte` (no
//! `cl_khr_fp16` needed: buffers are `half*` only for them); `bfloat16`, which OpenCL C lacks,
//! is `ushort` bits with the rounding of the Cranelift backend's `half.rs` (nearest even, NaN
//! quieted).

use relay_devices::DType;

/// The helpers programs with half floats use (always emitted: they are small and static).
pub(super) const PRELUDE: &str = "\
static inline float relay_bf16_to_f32(ushort h) { uint x = h; if ((x & 0x7FFFu) > 0x7F80u) x |= 0x40u; return as_float(x << 16); }
static inline ushort relay_f32_to_bf16(float f) { uint x = as_uint(f); if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (ushort)((x >> 16) | 0x40u); return (ushort)((x >> 16) + (((x & 0x8000u) != 0 && (x & 0x17FFFu) != 0) ? 1u : 0u)); }
static inline float relay_round_bf16(float f) { return relay_bf16_to_f32(relay_f32_to_bf16(f)); }
static inline float relay_round_f16(float f) { ushort h; vstore_half_rte(f, 0, (__private half*)&h); return vload_half(0, (__private const half*)&h); }
";

/// The OpenCL C element type of a buffer of half float `dt`.
pub(super) fn buffer_type(dt: DType) -> &'static str {
    if dt == DType::F16 {
        "half"
    } else {
        "ushort"
    }
}

/// Element `index` of buffer `buf` of half float `dt`, as a `float`.
pub(super) fn load(dt: DType, buf: &str, index: &str) -> String {
    if dt == DType::F16 {
        format!("vload_half({index}, {buf})")
    } else {
        format!("relay_bf16_to_f32({buf}[{index}])")
    }
}

/// The `float` `value` rounded to half float `dt`, as a `float`.
pub(super) fn round(dt: DType, value: &str) -> String {
    if dt == DType::F16 {
        format!("relay_round_f16({value})")
    } else {
        format!("relay_round_bf16({value})")
    }
}

/// The statement storing the `float` `value`, rounded to half float `dt`, at `index` of `buf`.
pub(super) fn store(dt: DType, buf: &str, index: &str, value: &str) -> String {
    if dt == DType::F16 {
        format!("vstore_half_rte({value}, {index}, {buf});")
    } else {
        format!("{buf}[{index}] = relay_f32_to_bf16({value});")
    }
}
