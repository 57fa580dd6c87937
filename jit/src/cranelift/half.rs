//! Conversions between `float32` and the half floats (`float16`, `bfloat16`), the only
//! operations kir has on them (`relay_kir::half`): a half float is its 16 bits in an `i16`
//! register, widened to `float32` after a load and rounded back before a store.
//!
//! Cranelift's `fcvt`/`fpromote`/`fdemote` cover only `f32`/`f64` on every target, so both
//! conversions are written in integer operations, branch-free (every case is computed and the
//! right one selected). They give the bits of `half::f16::{from_f32, to_f32}` and
//! `half::bf16::{from_f32, to_f32}` (which the reference kernels use) for every input: round
//! to nearest even, overflow to ±infinity, subnormals, NaN quieted with its payload's top
//! bits kept. `tests/half.rs` checks all 65,536 patterns of each half float and a dense sweep
//! of `float32`.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{F32, I16, I32};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;
use relay_devices::DType;

/// The `float32` value of the half float `from` held in the `i16` `bits` (exact).
pub(crate) fn widen(b: &mut FunctionBuilder<'_>, from: DType, bits: Value) -> Value {
    let h = b.ins().uextend(I32, bits);
    let x = if from == DType::BF16 { bfloat16_to_f32_bits(b, h) } else { float16_to_f32_bits(b, h) };
    b.ins().bitcast(F32, MemFlagsData::new(), x)
}

/// The `float32` `v` rounded to the half float `to`, as its bits in an `i16`.
pub(crate) fn narrow(b: &mut FunctionBuilder<'_>, to: DType, v: Value) -> Value {
    let x = b.ins().bitcast(I32, MemFlagsData::new(), v);
    let h = if to == DType::BF16 { f32_bits_to_bfloat16(b, x) } else { f32_bits_to_float16(b, x) };
    b.ins().ireduce(I16, h)
}

/// Whether bits `round_bit` of `x` is set and so is the bit above it or one below it: round
/// to nearest, ties to even, after dropping the bits from `round_bit` down (as `i32` 0/1).
fn round_up(b: &mut FunctionBuilder<'_>, x: Value, round_bit: Value) -> Value {
    let at = b.ins().band(x, round_bit);
    let is_set = b.ins().icmp_imm_s(IntCC::NotEqual, at, 0);
    // `3·round_bit - 1`: the bit above (the kept lowest bit) and every bit below.
    let three = b.ins().imul_imm_s(round_bit, 3);
    let others = b.ins().iadd_imm_s(three, -1);
    let rest = b.ins().band(x, others);
    let any = b.ins().icmp_imm_s(IntCC::NotEqual, rest, 0);
    let up = b.ins().band(is_set, any);
    b.ins().uextend(I32, up)
}

/// IEEE binary32 bits `x` → binary16 bits (in the low 16 bits of an `i32`).
fn f32_bits_to_float16(b: &mut FunctionBuilder<'_>, x: Value) -> Value {
    let shifted = b.ins().ushr_imm_s(x, 16);
    let sign = b.ins().band_imm_s(shifted, 0x8000);
    let exp_field = b.ins().ushr_imm_s(x, 23);
    let exp = b.ins().band_imm_s(exp_field, 0xFF);
    let man = b.ins().band_imm_s(x, 0x7F_FFFF);
    let top_man = b.ins().ushr_imm_s(man, 13);

    // Infinity or NaN: the top of the payload, with the quiet bit for a NaN.
    let is_nan = b.ins().icmp_imm_s(IntCC::NotEqual, man, 0);
    let nan_bit = b.ins().uextend(I32, is_nan);
    let nan_bit = b.ins().ishl_imm_s(nan_bit, 9);
    let special = b.ins().bor_imm_s(sign, 0x7C00);
    let special = b.ins().bor(special, nan_bit);
    let special = b.ins().bor(special, top_man);

    // Normal: rebias the exponent, keep 10 bits, round (a carry may reach infinity).
    let half_exp = b.ins().iadd_imm_s(exp, -112);
    let exp_bits = b.ins().ishl_imm_s(half_exp, 10);
    let normal = b.ins().bor(sign, exp_bits);
    let normal = b.ins().bor(normal, top_man);
    let round_bit = b.ins().iconst(I32, 0x1000);
    let up = round_up(b, man, round_bit);
    let normal = b.ins().iadd(normal, up);

    // Subnormal (-10 <= half_exp <= 0): the significand with its hidden bit, shifted right by
    // `14 - half_exp` = `126 - exp` (14..=24), then rounded at the last bit shifted out.
    let full = b.ins().bor_imm_s(man, 0x80_0000);
    let c126 = b.ins().iconst(I32, 126);
    let shift = b.ins().isub(c126, exp);
    let sub_man = b.ins().ushr(full, shift);
    let one = b.ins().iconst(I32, 1);
    let below = b.ins().iadd_imm_s(shift, -1);
    let sub_round_bit = b.ins().ishl(one, below);
    let up = round_up(b, full, sub_round_bit);
    let sub = b.ins().bor(sign, sub_man);
    let sub = b.ins().iadd(sub, up);

    let inf = b.ins().bor_imm_s(sign, 0x7C00);
    // From the smallest exponent up: zero, subnormal, normal, overflow, infinity/NaN.
    let is_sub = b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, exp, 102);
    let r = b.ins().select(is_sub, sub, sign);
    let is_normal = b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, exp, 113);
    let r = b.ins().select(is_normal, normal, r);
    let overflows = b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, exp, 143);
    let r = b.ins().select(overflows, inf, r);
    let is_special = b.ins().icmp_imm_s(IntCC::Equal, exp, 0xFF);
    b.ins().select(is_special, special, r)
}

/// IEEE binary16 bits `h` (zero-extended to `i32`) → binary32 bits.
fn float16_to_f32_bits(b: &mut FunctionBuilder<'_>, h: Value) -> Value {
    let sign16 = b.ins().band_imm_s(h, 0x8000);
    let sign = b.ins().ishl_imm_s(sign16, 16);
    let exp_field = b.ins().ushr_imm_s(h, 10);
    let exp = b.ins().band_imm_s(exp_field, 0x1F);
    let man = b.ins().band_imm_s(h, 0x3FF);
    let man13 = b.ins().ishl_imm_s(man, 13);

    // Normal: rebias the exponent (15 → 127).
    let exp32 = b.ins().iadd_imm_s(exp, 112);
    let exp32 = b.ins().ishl_imm_s(exp32, 23);
    let normal = b.ins().bor(sign, exp32);
    let normal = b.ins().bor(normal, man13);

    // Subnormal: normalise. With `e` = leading zeros of the 10-bit significand in 16 bits
    // less 6, the value is 2^(-14 - e) · 1.f, `f` the bits below the leading one.
    let lz32 = b.ins().clz(man);
    let e = b.ins().iadd_imm_s(lz32, -22);
    let c112 = b.ins().iconst(I32, 112);
    let sub_exp = b.ins().isub(c112, e);
    let sub_exp = b.ins().ishl_imm_s(sub_exp, 23);
    let shift = b.ins().iadd_imm_s(e, 14);
    let sub_man = b.ins().ishl(man, shift);
    let sub_man = b.ins().band_imm_s(sub_man, 0x7F_FFFF);
    let sub = b.ins().bor(sign, sub_exp);
    let sub = b.ins().bor(sub, sub_man);

    // Infinity, or NaN with the quiet bit set.
    let inf = b.ins().bor_imm_s(sign, 0x7F80_0000);
    let nan = b.ins().bor_imm_s(sign, 0x7FC0_0000);
    let nan = b.ins().bor(nan, man13);
    let man_zero = b.ins().icmp_imm_s(IntCC::Equal, man, 0);
    let special = b.ins().select(man_zero, inf, nan);

    let zero_or_sub = b.ins().select(man_zero, sign, sub);
    let is_small = b.ins().icmp_imm_s(IntCC::Equal, exp, 0);
    let r = b.ins().select(is_small, zero_or_sub, normal);
    let is_special = b.ins().icmp_imm_s(IntCC::Equal, exp, 0x1F);
    b.ins().select(is_special, special, r)
}

/// IEEE binary32 bits `x` → bfloat16 bits (the top half, rounded to nearest even; a NaN
/// quieted).
fn f32_bits_to_bfloat16(b: &mut FunctionBuilder<'_>, x: Value) -> Value {
    let top = b.ins().ushr_imm_s(x, 16);
    let round_bit = b.ins().iconst(I32, 0x8000);
    let up = round_up(b, x, round_bit);
    let rounded = b.ins().iadd(top, up);
    let quiet = b.ins().bor_imm_s(top, 0x40);
    let magnitude = b.ins().band_imm_s(x, 0x7FFF_FFFF);
    let is_nan = b.ins().icmp_imm_s(IntCC::UnsignedGreaterThan, magnitude, 0x7F80_0000);
    b.ins().select(is_nan, quiet, rounded)
}

/// bfloat16 bits `h` (zero-extended to `i32`) → binary32 bits (a NaN quieted).
fn bfloat16_to_f32_bits(b: &mut FunctionBuilder<'_>, h: Value) -> Value {
    let magnitude = b.ins().band_imm_s(h, 0x7FFF);
    let is_nan = b.ins().icmp_imm_s(IntCC::UnsignedGreaterThan, magnitude, 0x7F80);
    let quiet = b.ins().bor_imm_s(h, 0x40);
    let h = b.ins().select(is_nan, quiet, h);
    b.ins().ishl_imm_s(h, 16)
}
