//! kir operators as Cranelift instructions, for scalars of every storable dtype and for
//! 4-lane vectors of `float32`, `int32` and `bool` (lane masks: all ones or all zeros).
//!
//! Scalar `bool`s are `i8` 0/1, which is also their byte in memory. The semantics are
//! [`relay_kir::eval_binary`] and friends; the integer division family is guarded
//! so that it never traps (`x / 0 == 0`, `MIN / -1` wraps).

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F32X4, F64, I16, I32, I32X4, I64, I8, I8X16};
use cranelift_codegen::ir::{ConstantData, Endianness, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::FunctionBuilder;
use relay_devices::{DType, DTypeCode};
use relay_kir::{BinOp, UnOp};

/// The Cranelift type holding one element of `dt` in a register.
pub(crate) fn scalar_type(dt: DType) -> Type {
    match (dt.code, dt.bits) {
        // A half float is its bits; kir only converts it (`half.rs`).
        _ if dt.is_half_float() => I16,
        (DTypeCode::Bool, _) | (_, 8) => I8,
        (DTypeCode::Float, 32) => F32,
        (DTypeCode::Float, _) => F64,
        (_, 16) => I16,
        (_, 32) => I32,
        _ => I64,
    }
}

/// The 4-lane vector type of a vectorisable dtype (`bool` lanes are `i32` masks).
pub(crate) fn vector_type(dt: DType) -> Type {
    if dt == DType::F32 {
        F32X4
    } else {
        I32X4
    }
}

/// Flags for bitcasts between vector types (Cranelift requires an explicit lane order).
fn lane_order() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

/// Instruction helpers over a function builder.
pub(crate) struct Ops<'a, 'f> {
    /// The builder instructions are appended to.
    pub b: &'a mut FunctionBuilder<'f>,
    /// Whether the ISA has a native fused multiply-add.
    pub fma: bool,
}

impl Ops<'_, '_> {
    pub(crate) fn ty(&self, v: Value) -> Type {
        self.b.func.dfg.value_type(v)
    }

    /// `c` as a value of float type `ty` (`f32`, `f32x4` or `f64`).
    pub(crate) fn fconst(&mut self, ty: Type, c: f32) -> Value {
        match ty {
            F64 => self.b.ins().f64const(f64::from(c)),
            F32 => self.b.ins().f32const(c),
            _ => self.vconst(ty, c.to_bits()),
        }
    }

    /// A vector of type `ty` with every 32-bit lane `bits`: one load from the constant pool
    /// where it is used (a splat of a scalar constant is two or three instructions where
    /// Cranelift's e-graph pass does not turn it into this).
    fn vconst(&mut self, ty: Type, bits: u32) -> Value {
        let lanes = ty.lane_count() as usize;
        let bytes: Vec<u8> = std::iter::repeat_n(bits.to_le_bytes(), lanes).flatten().collect();
        let handle = self.b.func.dfg.constants.insert(ConstantData::from(bytes));
        self.b.ins().vconst(ty, handle)
    }

    /// `c` (wrapped to the lane width) as a value of integer type `ty` (scalar, or a splat
    /// for a vector type). Cranelift wants narrow immediates zero-extended.
    pub(crate) fn iconst(&mut self, ty: Type, c: i64) -> Value {
        let lane = ty.lane_type();
        let bits = lane.bits();
        let c = if bits < 64 { c & ((1i64 << bits) - 1) } else { c };
        if ty.is_vector() && bits == 32 {
            return self.vconst(ty, c as u32);
        }
        let s = self.b.ins().iconst(lane, c);
        if ty.is_vector() {
            self.b.ins().splat(ty, s)
        } else {
            s
        }
    }

    /// `a * b + c`, fused when the ISA has FMA.
    pub(crate) fn mul_add(&mut self, a: Value, b: Value, c: Value) -> Value {
        if self.fma {
            self.b.ins().fma(a, b, c)
        } else {
            let p = self.b.ins().fmul(a, b);
            self.b.ins().fadd(p, c)
        }
    }

    /// Horner evaluation of `coeffs[0] + x * (coeffs[1] + x * ...)`.
    pub(crate) fn poly(&mut self, x: Value, coeffs: &[f32]) -> Value {
        let ty = self.ty(x);
        let (last, rest) = coeffs.split_last().unwrap_or((&0.0, &[]));
        let mut acc = self.fconst(ty, *last);
        for c in rest.iter().rev() {
            let c = self.fconst(ty, *c);
            acc = self.mul_add(acc, x, c);
        }
        acc
    }

    /// `cond ? a : b` where `cond` comes from a comparison of values of `a`'s shape.
    pub(crate) fn select(&mut self, cond: Value, a: Value, b: Value) -> Value {
        let ty = self.ty(a);
        if !self.ty(cond).is_vector() {
            return self.b.ins().select(cond, a, b);
        }
        let mask = if self.ty(cond) == ty { cond } else { self.b.ins().bitcast(ty, lane_order(), cond) };
        self.b.ins().bitselect(mask, a, b)
    }

    /// Reinterprets float bits as integers of the same shape, and back.
    pub(crate) fn float_bits(&mut self, x: Value) -> Value {
        let ty = if self.ty(x).is_vector() { I32X4 } else { I32 };
        self.bitcast(ty, x)
    }

    pub(crate) fn bits_float(&mut self, x: Value) -> Value {
        let ty = if self.ty(x).is_vector() { F32X4 } else { F32 };
        self.bitcast(ty, x)
    }

    /// Four 32-bit lanes chosen from the lanes of `a` (0–3) and `b` (4–7), as `lanes` says
    /// (an immediate shuffle: one `shufps` when the low two come from `a`, the high two from
    /// `b`), in `a`'s type.
    pub(crate) fn pick_lanes(&mut self, a: Value, b: Value, lanes: [u8; 4]) -> Value {
        let ty = self.ty(a);
        let (a, b) = (self.bitcast(I8X16, a), self.bitcast(I8X16, b));
        let bytes: Vec<u8> = lanes.iter().flat_map(|&l| (0..4).map(move |i| 4 * l + i)).collect();
        let mask = self.b.func.dfg.immediates.push(ConstantData::from(bytes));
        let picked = self.b.ins().shuffle(a, b, mask);
        self.bitcast(ty, picked)
    }

    fn bitcast(&mut self, ty: Type, x: Value) -> Value {
        let flags = if ty.is_vector() { lane_order() } else { MemFlagsData::new() };
        self.b.ins().bitcast(ty, flags, x)
    }

    /// `|magnitude|` with the sign of `sign` (f32 or f32x4).
    pub(crate) fn copysign(&mut self, magnitude: Value, sign: Value) -> Value {
        let (m, s) = (self.float_bits(magnitude), self.float_bits(sign));
        let ty = self.ty(m);
        let abs_mask = self.iconst(ty, 0x7fff_ffff);
        let sign_mask = self.iconst(ty, i64::from(i32::MIN));
        let m = self.b.ins().band(m, abs_mask);
        let s = self.b.ins().band(s, sign_mask);
        let r = self.b.ins().bor(m, s);
        self.bits_float(r)
    }

    /// `op(a, b)` for operands of kir dtype `dt`, except `pow` (a call, emitted by the caller).
    pub(crate) fn binary(&mut self, op: BinOp, dt: DType, a: Value, b: Value) -> Value {
        match dt.code {
            // kir holds no `bfloat16` (its verifier refuses half floats): never reached.
            DTypeCode::Float | DTypeCode::BFloat => self.float_binary(op, a, b),
            DTypeCode::Bool => match op {
                BinOp::And => self.b.ins().band(a, b),
                BinOp::Or => self.b.ins().bor(a, b),
                BinOp::Xor => self.b.ins().bxor(a, b),
                BinOp::Ne => self.b.ins().icmp(IntCC::NotEqual, a, b),
                _ => self.b.ins().icmp(IntCC::Equal, a, b),
            },
            DTypeCode::Int | DTypeCode::UInt => self.int_binary(op, dt.code == DTypeCode::Int, a, b),
        }
    }

    fn float_binary(&mut self, op: BinOp, a: Value, b: Value) -> Value {
        let cc = match op {
            BinOp::Add => return self.b.ins().fadd(a, b),
            BinOp::Sub => return self.b.ins().fsub(a, b),
            BinOp::Mul => return self.b.ins().fmul(a, b),
            BinOp::Div => return self.b.ins().fdiv(a, b),
            BinOp::FloorDiv => {
                let q = self.b.ins().fdiv(a, b);
                return self.b.ins().floor(q);
            }
            BinOp::FloorMod => {
                let q = self.b.ins().fdiv(a, b);
                let q = self.b.ins().floor(q);
                let p = self.b.ins().fmul(q, b);
                return self.b.ins().fsub(a, p);
            }
            // `b < a ? a : b` and `a < b ? a : b` are the forms x86 lowers to maxps/minps.
            BinOp::Max => {
                let c = self.b.ins().fcmp(FloatCC::LessThan, b, a);
                return self.select(c, a, b);
            }
            BinOp::Min => {
                let c = self.b.ins().fcmp(FloatCC::LessThan, a, b);
                return self.select(c, a, b);
            }
            BinOp::Eq => Some(FloatCC::Equal),
            BinOp::Ne => Some(FloatCC::NotEqual),
            BinOp::Lt => Some(FloatCC::LessThan),
            BinOp::Le => Some(FloatCC::LessThanOrEqual),
            BinOp::Gt => Some(FloatCC::GreaterThan),
            BinOp::Ge => Some(FloatCC::GreaterThanOrEqual),
            BinOp::Pow | BinOp::And | BinOp::Or | BinOp::Xor | BinOp::Shl | BinOp::Shr => None,
        };
        match cc {
            Some(cc) => self.b.ins().fcmp(cc, a, b),
            // Rejected by the verifier (and `pow` is a call): keep the value flowing.
            None => a,
        }
    }

    fn int_binary(&mut self, op: BinOp, signed: bool, a: Value, b: Value) -> Value {
        let cc = |s, u| if signed { s } else { u };
        match op {
            BinOp::Add => self.b.ins().iadd(a, b),
            BinOp::Sub => self.b.ins().isub(a, b),
            BinOp::Mul => self.b.ins().imul(a, b),
            BinOp::Div | BinOp::FloorDiv | BinOp::FloorMod => self.int_division(op, signed, a, b),
            BinOp::Max if signed => self.b.ins().smax(a, b),
            BinOp::Max => self.b.ins().umax(a, b),
            BinOp::Min if signed => self.b.ins().smin(a, b),
            BinOp::Min => self.b.ins().umin(a, b),
            BinOp::And => self.b.ins().band(a, b),
            BinOp::Or => self.b.ins().bor(a, b),
            BinOp::Xor => self.b.ins().bxor(a, b),
            // Cranelift takes the amount modulo the type's width, and `scalar_type` gives
            // every integer dtype a type of its own width: `relay_devices::arith`'s rule.
            BinOp::Shl => self.b.ins().ishl(a, b),
            BinOp::Shr if signed => self.b.ins().sshr(a, b),
            BinOp::Shr => self.b.ins().ushr(a, b),
            BinOp::Eq => self.b.ins().icmp(IntCC::Equal, a, b),
            BinOp::Ne => self.b.ins().icmp(IntCC::NotEqual, a, b),
            BinOp::Lt => self.b.ins().icmp(cc(IntCC::SignedLessThan, IntCC::UnsignedLessThan), a, b),
            BinOp::Le => {
                self.b.ins().icmp(cc(IntCC::SignedLessThanOrEqual, IntCC::UnsignedLessThanOrEqual), a, b)
            }
            BinOp::Gt => self.b.ins().icmp(cc(IntCC::SignedGreaterThan, IntCC::UnsignedGreaterThan), a, b),
            BinOp::Ge => self.b.ins().icmp(
                cc(IntCC::SignedGreaterThanOrEqual, IntCC::UnsignedGreaterThanOrEqual),
                a,
                b,
            ),
            BinOp::Pow => a,
        }
    }

    /// Scalar integer `/`, `floordiv`, `floormod` that never trap: the divisor is replaced by
    /// 1 where it is 0 (or -1, for signed ops) and the result is fixed up with selects.
    fn int_division(&mut self, op: BinOp, signed: bool, a: Value, d: Value) -> Value {
        let ty = self.ty(a);
        let zero = self.iconst(ty, 0);
        let one = self.iconst(ty, 1);
        let is_zero = self.b.ins().icmp_imm_s(IntCC::Equal, d, 0);
        if !signed {
            let safe = self.b.ins().select(is_zero, one, d);
            if op == BinOp::FloorMod {
                return self.b.ins().urem(a, safe);
            }
            let q = self.b.ins().udiv(a, safe);
            return self.b.ins().select(is_zero, zero, q);
        }
        let minus_one = self.iconst(ty, -1);
        let is_minus_one = self.b.ins().icmp(IntCC::Equal, d, minus_one);
        let bad = self.b.ins().bor(is_zero, is_minus_one);
        let safe = self.b.ins().select(bad, one, d);
        let r = self.b.ins().srem(a, safe);
        // The remainder needs adjusting when it is non-zero and its sign differs from d's.
        let r_nonzero = self.b.ins().icmp_imm_s(IntCC::NotEqual, r, 0);
        let signs = self.b.ins().bxor(r, d);
        let signs_differ = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, signs, 0);
        let adjust = self.b.ins().band(r_nonzero, signs_differ);
        if op == BinOp::FloorMod {
            let fixed = self.b.ins().iadd(r, d);
            return self.b.ins().select(adjust, fixed, r);
        }
        let q = self.b.ins().sdiv(a, safe);
        let q = if op == BinOp::FloorDiv {
            let q1 = self.b.ins().isub(q, one);
            self.b.ins().select(adjust, q1, q)
        } else {
            q
        };
        let neg = self.b.ins().ineg(a);
        let q = self.b.ins().select(is_minus_one, neg, q);
        self.b.ins().select(is_zero, zero, q)
    }

    /// `op(a)` for an operand of kir dtype `dt`.
    pub(crate) fn unary(&mut self, op: UnOp, dt: DType, a: Value) -> Value {
        match dt.code {
            DTypeCode::Float | DTypeCode::BFloat => self.float_unary(op, a),
            DTypeCode::Bool if self.ty(a).is_vector() => self.b.ins().bnot(a),
            DTypeCode::Bool => self.b.ins().bxor_imm_s(a, 1),
            DTypeCode::Int | DTypeCode::UInt => {
                let signed = dt.code == DTypeCode::Int;
                let ty = self.ty(a);
                match op {
                    UnOp::Neg => self.b.ins().ineg(a),
                    UnOp::Abs if signed => self.b.ins().iabs(a),
                    UnOp::Not => self.b.ins().bnot(a),
                    UnOp::Sign if signed => {
                        let one = self.iconst(ty, 1);
                        let minus_one = self.iconst(ty, -1);
                        let a = self.b.ins().smin(a, one);
                        self.b.ins().smax(a, minus_one)
                    }
                    UnOp::Sign => {
                        let nz = self.b.ins().icmp_imm_s(IntCC::NotEqual, a, 0);
                        self.b.ins().uextend(ty, nz)
                    }
                    _ => a,
                }
            }
        }
    }

    fn float_unary(&mut self, op: UnOp, a: Value) -> Value {
        let ty = self.ty(a);
        match op {
            UnOp::Neg => self.b.ins().fneg(a),
            UnOp::Abs => self.b.ins().fabs(a),
            UnOp::Sqrt => self.b.ins().sqrt(a),
            UnOp::Rsqrt => {
                let s = self.b.ins().sqrt(a);
                let one = self.fconst(ty, 1.0);
                self.b.ins().fdiv(one, s)
            }
            UnOp::Floor => self.b.ins().floor(a),
            UnOp::Ceil => self.b.ins().ceil(a),
            UnOp::Round => {
                // Ties away from zero: truncate, then step away when the dropped part is
                // at least one half (x - trunc(x) is exact).
                let t = self.b.ins().trunc(a);
                let frac = self.b.ins().fsub(a, t);
                let frac = self.b.ins().fabs(frac);
                let half = self.fconst(ty, 0.5);
                let away = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, frac, half);
                let one = self.fconst(ty, 1.0);
                let step = if ty == F64 { self.b.ins().fcopysign(one, a) } else { self.copysign(one, a) };
                let stepped = self.b.ins().fadd(t, step);
                self.select(away, stepped, t)
            }
            UnOp::Sign => {
                let zero = self.fconst(ty, 0.0);
                let one = self.fconst(ty, 1.0);
                let minus_one = self.fconst(ty, -1.0);
                let pos = self.b.ins().fcmp(FloatCC::GreaterThan, a, zero);
                let s = self.select(pos, one, a);
                let neg = self.b.ins().fcmp(FloatCC::LessThan, a, zero);
                self.select(neg, minus_one, s)
            }
            UnOp::Exp => self.exp(a),
            UnOp::Log => self.log(a),
            UnOp::Tanh => self.tanh(a),
            UnOp::Sigmoid => self.sigmoid(a),
            UnOp::Erf => self.erf(a),
            UnOp::Sin => self.sin(a),
            UnOp::Cos => self.cos(a),
            UnOp::Tan => self.tan(a),
            UnOp::Asin => self.asin(a),
            UnOp::Acos => self.acos(a),
            UnOp::Atan => self.atan(a),
            UnOp::Sinh => self.sinh(a),
            UnOp::Cosh => self.cosh(a),
            UnOp::Not => a,
        }
    }

    /// The bits of `v` as a value of kir dtype `to`, of the same width (scalars; for vectors
    /// `float32 <-> int32`): a move between register files, or nothing where both sides share
    /// a Cranelift type (`int32`/`uint32`).
    pub(crate) fn reinterpret(&mut self, to: DType, v: Value) -> Value {
        let ty = if self.ty(v).is_vector() { vector_type(to) } else { scalar_type(to) };
        if self.ty(v) == ty {
            v
        } else {
            self.bitcast(ty, v)
        }
    }

    /// `v` converted from kir dtype `from` to `to` with `as` semantics (scalars; for vectors
    /// only `float32 <-> int32`).
    pub(crate) fn cast(&mut self, from: DType, to: DType, v: Value) -> Value {
        if from == to {
            return v;
        }
        // The verifier allows only `float32` on the other side.
        if from.is_half_float() {
            return super::half::widen(self.b, from, v);
        }
        if to.is_half_float() {
            return super::half::narrow(self.b, to, v);
        }
        if self.ty(v).is_vector() {
            return if to == DType::F32 {
                self.b.ins().fcvt_from_sint(F32X4, v)
            } else {
                self.b.ins().fcvt_to_sint_sat(I32X4, v)
            };
        }
        let to_ty = scalar_type(to);
        let from_ty = scalar_type(from);
        match (from.code, to.code) {
            (DTypeCode::Float, DTypeCode::Bool) => {
                let zero =
                    if from_ty == F32 { self.b.ins().f32const(0.0) } else { self.b.ins().f64const(0.0) };
                self.b.ins().fcmp(FloatCC::NotEqual, v, zero)
            }
            (_, DTypeCode::Bool) => self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0),
            (DTypeCode::Float, DTypeCode::Float) if to_ty == F64 => self.b.ins().fpromote(F64, v),
            (DTypeCode::Float, DTypeCode::Float) => self.b.ins().fdemote(F32, v),
            (DTypeCode::Float, _) => self.float_to_int(v, to),
            (_, DTypeCode::Float) => {
                let signed = from.code == DTypeCode::Int;
                let v = if from_ty.bits() < 32 { self.extend(v, I32, signed) } else { v };
                if signed {
                    self.b.ins().fcvt_from_sint(to_ty, v)
                } else {
                    self.b.ins().fcvt_from_uint(to_ty, v)
                }
            }
            _ => {
                if to_ty.bits() > from_ty.bits() {
                    self.extend(v, to_ty, from.code == DTypeCode::Int)
                } else if to_ty.bits() < from_ty.bits() {
                    self.b.ins().ireduce(to_ty, v)
                } else {
                    v
                }
            }
        }
    }

    fn extend(&mut self, v: Value, to: Type, signed: bool) -> Value {
        if signed {
            self.b.ins().sextend(to, v)
        } else {
            self.b.ins().uextend(to, v)
        }
    }

    /// Saturating float → int (NaN → 0), as Rust's `as`.
    fn float_to_int(&mut self, v: Value, to: DType) -> Value {
        let signed = to.code == DTypeCode::Int;
        if to.bits >= 32 {
            let ty = scalar_type(to);
            return if signed {
                self.b.ins().fcvt_to_sint_sat(ty, v)
            } else {
                self.b.ins().fcvt_to_uint_sat(ty, v)
            };
        }
        // Narrow targets: saturate to i32, then clamp to the target's range.
        let wide = self.b.ins().fcvt_to_sint_sat(I32, v);
        let (lo, hi) = if signed {
            (-(1i64 << (to.bits - 1)), (1i64 << (to.bits - 1)) - 1)
        } else {
            (0, (1i64 << to.bits) - 1)
        };
        let lo = self.iconst(I32, lo);
        let hi = self.iconst(I32, hi);
        let clamped = self.b.ins().smax(wide, lo);
        let clamped = self.b.ins().smin(clamped, hi);
        self.b.ins().ireduce(scalar_type(to), clamped)
    }
}
