//! Copy elimination: a temp that is only a full, identity copy of another buffer is replaced
//! by that buffer ([`eliminate_copies`]).
//!
//! Fused kernels compose their operators' compute rules, and two of those leave whole copies
//! behind that nothing needs: an anchor's product writes its (elementwise-fused) first operand
//! to a temp before the `gemm`, which is a plain copy when that operand is just an input
//! (`data[i] = in0[i]`, the Tree-LSTM leaf's embedding row), and a product sliced into gates
//! is copied from its temp into the slices' buffer (`t[i] = gemm[i]`). Each costs a pass over
//! the data at Cranelift's four lanes and a temp's worth of cache; without them the product
//! reads the input in place and the gates read the product's temp.

use crate::affine::affine;
use crate::coverage::{accesses, elements};
use crate::{BufferId, BufferRole, Expr, Index, Kernel, Stmt, VarId};
use std::collections::HashSet;

/// Removes every top-level statement of `kernel` that copies a whole buffer `src` into a temp
/// `dst` element for element (`dst[f] = src[f]` for every flat index `f`, proved from the
/// loop extents and the index, which must be the same for the store and the load), when the
/// kernel never writes `dst` elsewhere, reads it nowhere before the copy, and writes `src`
/// nowhere after it: every later read of `dst[f]` then reads `src[f]` (the same value), and
/// `dst` is dropped from the buffers. Anything else is left alone — a copy inside a loop,
/// a cast, a partial or permuted copy, buffers of different dtypes or element counts, sizes
/// known only at run time.
///
/// Run it on a verified kernel with simplified indices ([`super::KernelBuilder::finish`]
/// does both); the result means the same and verifies.
pub fn eliminate_copies(kernel: &mut Kernel) {
    while let Some((at, dst, src)) = find_copy(kernel) {
        kernel.body.remove(at);
        rename_buffers(&mut kernel.body, &mut |b| if b == dst { src } else { b });
        // `dst` is referenced nowhere now: drop its declaration and close the gap in the ids.
        kernel.buffers.remove(dst.index());
        rename_buffers(&mut kernel.body, &mut |b| if b.0 > dst.0 { BufferId(b.0 - 1) } else { b });
    }
}

/// The first removable copy: its position in the body, `dst` and `src`.
fn find_copy(kernel: &Kernel) -> Option<(usize, BufferId, BufferId)> {
    let facts: Vec<(HashSet<BufferId>, HashSet<BufferId>)> = kernel
        .body
        .iter()
        .map(|s| {
            let (mut stored, mut read) = (HashSet::new(), HashSet::new());
            accesses(s, &mut stored, &mut read);
            (stored, read)
        })
        .collect();
    kernel.body.iter().enumerate().find_map(|(at, s)| {
        let (dst, src) = identity_copy(kernel, s)?;
        let stored_elsewhere =
            facts.iter().enumerate().any(|(i, (stored, _))| i != at && stored.contains(&dst));
        let read_before = facts[..at].iter().any(|(_, read)| read.contains(&dst));
        let src_written_after = facts[at + 1..].iter().any(|(stored, _)| stored.contains(&src));
        (!stored_elsewhere && !read_before && !src_written_after).then_some((at, dst, src))
    })
}

/// `(dst, src)` when `s` is a perfect loop nest of constant extents whose one statement is
/// `dst[f] = src[f]`, `dst` a temp, with `f` running over every element of both buffers once
/// (`f` the row-major flat index of the loop variables, the loops in any order, loops of one
/// iteration anywhere).
fn identity_copy(kernel: &Kernel, s: &Stmt) -> Option<(BufferId, BufferId)> {
    let mut loops = Vec::new();
    let mut at = s;
    let (dst, index, src) = loop {
        match at {
            Stmt::For { var, extent, body, .. } if body.len() == 1 => {
                loops.push((*var, extent.as_const().filter(|&e| e >= 1)?));
                at = &body[0];
            }
            Stmt::Store { buf, index, value: Expr::Load { buf: src, index: read } } if index == read => {
                break (*buf, index, *src);
            }
            _ => return None,
        }
    };
    let (d, s) = (kernel.buffer(dst)?, kernel.buffer(src)?);
    if dst == src || d.role != BufferRole::Temp || d.dtype != s.dtype {
        return None;
    }
    let len = elements(kernel, dst)?;
    if elements(kernel, src)? != len {
        return None;
    }
    // `f = Σ stride·var`: the strides of the loops that iterate, smallest first, must be the
    // row-major ones of their extents (1, e₀, e₀·e₁, ...) and cover `len` exactly.
    let (constant, coefficients) = linear(index, &loops)?;
    let mut strides: Vec<(i64, i64)> = loops
        .iter()
        .zip(&coefficients)
        .filter(|((_, extent), _)| *extent > 1)
        .map(|((_, extent), &c)| (c, *extent))
        .collect();
    strides.sort_unstable();
    let mut next = 1i64;
    for (stride, extent) in strides {
        if stride != next {
            return None;
        }
        next = next.checked_mul(extent)?;
    }
    (constant == 0 && next == len).then_some((dst, src))
}

/// `i` as `constant + Σ coefficients[d]·loops[d].0`; `None` when it holds anything else (a
/// sym, another variable, a division, a product of variables).
fn linear(i: &Index, loops: &[(VarId, i64)]) -> Option<(i64, Vec<i64>)> {
    let a = affine(i)?;
    let mut coefficients = vec![0; loops.len()];
    for (term, c) in a.terms {
        let Index::Var(v) = term else { return None };
        coefficients[loops.iter().position(|(u, _)| *u == v)?] = c;
    }
    Some((a.constant, coefficients))
}

/// Replaces every buffer id in `body` (stores, loads — in values, indices, conditions and
/// extents — and a `gemm`'s three buffers) by `f` of it.
fn rename_buffers(body: &mut [Stmt], f: &mut dyn FnMut(BufferId) -> BufferId) {
    for s in body {
        match s {
            Stmt::For { extent, body, .. } => {
                rename_in_index(extent, f);
                rename_buffers(body, f);
            }
            Stmt::Store { buf, index, value } => {
                *buf = f(*buf);
                rename_in_index(index, f);
                rename_in_expr(value, f);
            }
            Stmt::Assign { value, .. } => rename_in_expr(value, f),
            Stmt::If { cond, then, otherwise } => {
                rename_in_expr(cond, f);
                rename_buffers(then, f);
                rename_buffers(otherwise, f);
            }
            Stmt::Gemm { out, a, b, b_offset, .. } => {
                for buf in [out, a, b] {
                    *buf = f(*buf);
                }
                rename_in_index(b_offset, f);
            }
        }
    }
}

fn rename_in_expr(e: &mut Expr, f: &mut dyn FnMut(BufferId) -> BufferId) {
    match e {
        Expr::Load { buf, index } => {
            *buf = f(*buf);
            rename_in_index(index, f);
        }
        Expr::Index(index) => rename_in_index(index, f),
        Expr::Binary(_, a, b) => {
            rename_in_expr(a, f);
            rename_in_expr(b, f);
        }
        Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Reinterpret(_, a) => rename_in_expr(a, f),
        Expr::Select(c, a, b) => {
            rename_in_expr(c, f);
            rename_in_expr(a, f);
            rename_in_expr(b, f);
        }
        Expr::Const(_) | Expr::Local(_) => {}
    }
}

fn rename_in_index(i: &mut Index, f: &mut dyn FnMut(BufferId) -> BufferId) {
    match i {
        Index::Value(e) => rename_in_expr(e, f),
        Index::Bin(_, a, b) => {
            rename_in_index(a, f);
            rename_in_index(b, f);
        }
        Index::Const(_) | Index::Var(_) | Index::Sym(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{interp, KernelBuilder, LoopKind};
    use relay_devices::{DType, Tensor};

    /// The printed kernel after `finish` (which runs the pass).
    fn printed(k: KernelBuilder) -> String {
        k.finish().unwrap().to_string()
    }

    #[test]
    fn an_input_copied_for_a_product_is_read_in_place() {
        // The Tree-LSTM leaf: `data[i] = in0[i]`, then `gemm(gemm, data, ...)`, then the
        // gates read a full copy of the product.
        let mut k = KernelBuilder::new("leaf");
        let x = k.input("x", DType::F32, [6]);
        let w = k.input("w", DType::F32, [4, 6]);
        let y = k.output("y", DType::F32, [2, 2]);
        let data = k.temp("data", DType::F32, [1, 6]);
        let gemm = k.temp("gemm", DType::F32, [4]);
        let t = k.temp("t", DType::F32, [2, 2]);
        k.for_(6, LoopKind::Vectorize, |k, i| k.store(data, i.clone(), Expr::load(x, i)));
        k.gemm(gemm, data, w, 1, 4, 6, true);
        k.for_(2, LoopKind::Serial, |k, i| {
            k.for_(2, LoopKind::Vectorize, |k, j| {
                let at = i.clone() * 2 + j;
                k.store(t, at.clone(), Expr::load(gemm, at))
            })
        });
        k.for_(2, LoopKind::Vectorize, |k, i| {
            let v = Expr::load(t, i.clone()) * Expr::load(t, i.clone() + 2);
            k.store(y, i, v)
        });
        let kernel = printed(k);
        assert!(!kernel.contains("data") && !kernel.contains("temp t"), "{kernel}");
        assert!(kernel.contains("gemm(gemm, x, w"), "{kernel}");
        assert!(kernel.contains("y[i3] = gemm[i3] * gemm[i3 + 2]"), "{kernel}");
    }

    #[test]
    fn the_kernel_means_what_it_meant() {
        // Column-major loops over a row-major copy are still a full identity copy; the
        // interpreter gives what the kernel computed with the copy.
        let mut k = KernelBuilder::new("t");
        let x = k.input("x", DType::F32, [3, 5]);
        let y = k.output("y", DType::F32, [15]);
        let c = k.temp("c", DType::F32, [15]);
        let other = k.temp("other", DType::F32, [2]);
        k.for_(2, LoopKind::Serial, |k, i| k.store(other, i.clone(), Expr::f32(2.0)));
        k.for_(5, LoopKind::Serial, |k, j| {
            k.for_(3, LoopKind::Vectorize, |k, i| {
                let at = i * 5 + j.clone();
                k.store(c, at.clone(), Expr::load(x, at))
            })
        });
        k.for_(15, LoopKind::Vectorize, |k, i| {
            let v = Expr::load(c, i.clone()) * Expr::load(other, 1);
            k.store(y, i, v)
        });
        let kernel = k.finish().unwrap();
        assert_eq!(kernel.buffers.len(), 3, "{kernel}");
        let data: Vec<f32> = (0..15).map(|v| v as f32 * 0.5 - 3.0).collect();
        let x = Tensor::from_vec(vec![3, 5], data.clone()).unwrap();
        let mut out = [Tensor::zeros(DType::F32, vec![15]).unwrap()];
        interp::run(&kernel, &[&x], &mut out, &[]).unwrap();
        let want: Vec<f32> = data.iter().map(|v| v * 2.0).collect();
        assert_eq!(out[0], Tensor::from_vec(vec![15], want).unwrap());
    }

    #[test]
    fn partial_permuted_overwritten_early_read_or_stale_copies_stay() {
        let mut k = KernelBuilder::new("t");
        let x = k.input("x", DType::F32, [4]);
        let y = k.output("y", DType::F32, [4]);
        let partial = k.temp("partial", DType::F32, [4]);
        let permuted = k.temp("permuted", DType::F32, [2, 2]);
        let overwritten = k.temp("overwritten", DType::F32, [4]);
        let read_first = k.temp("read_first", DType::F32, [4]);
        let source = k.temp("source", DType::F32, [4]);
        let stale = k.temp("stale", DType::F32, [4]);
        // Reads `read_first` while it still holds zeros.
        k.for_(4, LoopKind::Serial, |k, i| k.store(y, i.clone(), Expr::load(read_first, i)));
        k.for_(4, LoopKind::Serial, |k, i| k.store(read_first, i.clone(), Expr::load(x, i)));
        k.for_(3, LoopKind::Serial, |k, i| k.store(partial, i.clone(), Expr::load(x, i)));
        k.for_(2, LoopKind::Serial, |k, i| {
            k.for_(2, LoopKind::Serial, |k, j| {
                // Reads `x` transposed: the indices differ.
                k.store(permuted, i.clone() * 2 + j.clone(), Expr::load(x, j * 2 + i.clone()))
            })
        });
        k.for_(4, LoopKind::Serial, |k, i| k.store(overwritten, i.clone(), Expr::load(x, i)));
        k.for_(4, LoopKind::Serial, |k, i| k.store(overwritten, i, Expr::f32(1.0)));
        k.for_(4, LoopKind::Serial, |k, i| k.store(source, i, Expr::f32(3.0)));
        k.for_(4, LoopKind::Serial, |k, i| k.store(stale, i.clone(), Expr::load(source, i)));
        // `source` changes after the copy: `stale` must keep the old values.
        k.for_(4, LoopKind::Serial, |k, i| k.store(source, i, Expr::f32(4.0)));
        k.for_(4, LoopKind::Serial, |k, i| {
            let v = Expr::load(y, i.clone())
                + Expr::load(partial, i.clone())
                + Expr::load(permuted, i.clone())
                + Expr::load(overwritten, i.clone())
                + Expr::load(read_first, i.clone())
                + Expr::load(source, i.clone())
                + Expr::load(stale, i.clone());
            k.store(y, i, v)
        });
        let kernel = k.finish().unwrap();
        assert_eq!(kernel.buffers.len(), 8, "{kernel}");
    }
}
