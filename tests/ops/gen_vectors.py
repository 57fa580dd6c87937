#!/usr/bin/env python3
"""Writes tests/ops/vectors/<op>.json: reference cases for every operator of the reference
kernels (stdlib/src/kernels), checked by stdlib/tests/vectors.rs.

Expected values are computed with NumPy in float64 from the (float32) inputs and rounded to the
output dtype; convolution, pooling and normalisation references are written out plainly with
TVM's semantics (see the comments). Seeded: rerunning reproduces the committed files.

Case format: {"name", "inputs": [tensor], "attrs": {...}, "outputs": [tensor]} or, for inputs the
operator must reject, {"name", "inputs", "attrs", "error": true}. A tensor is
{"dtype", "shape", "data"} with data flattened row-major; non-finite floats are "nan", "inf",
"-inf". Optional "atol" widens the absolute tolerance of a case (accumulating ops).

Usage: python3 tests/ops/gen_vectors.py   (needs numpy)
"""

import json
import math
import os
import shutil

import numpy as np

RNG = np.random.default_rng(20240601)
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors")
CASES = {}


def enc(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (np.integer, int)):
        return int(v)
    f = float(v)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return f


def tensor(a, dtype=None):
    a = np.asarray(a)
    if dtype is not None:
        a = a.astype(dtype)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": [enc(v) for v in a.reshape(-1)]}


def case(op, name, inputs, outputs, attrs=None, atol=None, out_dtypes=None):
    """outputs: arrays; with out_dtypes, each is cast (float64 references to float32)."""
    outs = []
    for i, o in enumerate(outputs):
        dt = out_dtypes[i] if out_dtypes else None
        outs.append(tensor(o, dt))
    c = {"name": name, "inputs": [tensor(x) for x in inputs], "attrs": attrs or {}, "outputs": outs}
    if atol is not None:
        c["atol"] = atol
    CASES.setdefault(op, []).append(c)


def error(op, name, inputs, attrs=None):
    CASES.setdefault(op, []).append(
        {"name": name, "inputs": [tensor(x) for x in inputs], "attrs": attrs or {}, "error": True})


def f32(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def ints(*shape, lo=-10, hi=10, dtype="int32"):
    return RNG.integers(lo, hi, shape).astype(dtype)


def d64(a):
    return np.asarray(a).astype(np.float64)


# ---------------------------------------------------------------- unary elementwise

def unary_float(op, fn, lo=-2.0, hi=2.0):
    for name, x in [("2x3", f32(2, 3, lo=lo, hi=hi)), ("scalar", f32(lo=lo, hi=hi)), ("empty", f32(0, 3, lo=lo, hi=hi))]:
        case(op, name, [x], [fn(d64(x))], out_dtypes=["float32"])
    x = RNG.uniform(lo, hi, (5,))
    case(op, "float64", [x], [fn(x)])
    error(op, "int_rejected", [ints(3)])


unary_float("exp", np.exp, -4, 4)
unary_float("log", np.log, 0.1, 10)
unary_float("sqrt", np.sqrt, 0, 9)
unary_float("rsqrt", lambda x: 1 / np.sqrt(x), 0.1, 9)
unary_float("tanh", np.tanh, -4, 4)
unary_float("sigmoid", lambda x: 1 / (1 + np.exp(-x)), -6, 6)
unary_float("erf", np.vectorize(math.erf, otypes=[np.float64]), -3, 3)
halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.49, 0.51, 3.0, -3.7], dtype=np.float32)
for op, fn in [("floor", np.floor), ("ceil", np.ceil), ("round", lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5))]:
    unary_float(op, fn, -5, 5)
    case(op, "halves", [halves], [fn(d64(halves))], out_dtypes=["float32"])

for op, fn in [("negative", np.negative), ("abs", np.abs), ("sign", np.sign)]:
    x = f32(2, 3)
    x[0, 0] = 0
    case(op, "float32", [x], [fn(x)])
    xi = np.array([-2147483648, -5, 0, 7, 2147483647], dtype=np.int32)
    with np.errstate(over="ignore"):
        case(op, "int32_extremes", [xi], [fn(xi)])
    case(op, "int8_empty", [ints(0, 2, dtype="int8")], [np.zeros((0, 2), np.int8)])
    xu = np.array([0, 1, 200], dtype=np.uint8)
    with np.errstate(over="ignore"):
        case(op, "uint8", [xu], [{"negative": -xu, "abs": xu, "sign": np.sign(xu)}[op].astype(np.uint8)])
    error(op, "bool_rejected", [np.array([True])])

x = f32(3, 4)
case("nn.relu", "float32", [x], [np.maximum(x, 0)])
xi8 = ints(6, dtype="int8")
case("nn.relu", "int8", [xi8], [np.maximum(xi8, 0).astype(np.int8)])
case("nn.relu", "scalar", [np.float32(-3)], [np.float32(0)])
error("nn.relu", "bool_rejected", [np.array([True, False])])

x = f32(2, 5)
case("nn.leaky_relu", "default_alpha", [x], [np.where(d64(x) > 0, d64(x), 0.25 * d64(x))], out_dtypes=["float32"])
case("nn.leaky_relu", "alpha_0.1", [x], [np.where(d64(x) > 0, d64(x), 0.1 * d64(x))], {"alpha": 0.1}, out_dtypes=["float32"])
case("nn.leaky_relu", "empty", [f32(0)], [f32(0)], {"alpha": 0.2})
error("nn.leaky_relu", "int_rejected", [ints(2)])

x = f32(3, 3)
case("clip", "float32", [x], [np.clip(x, -0.5, 1.0)], {"a_min": -0.5, "a_max": 1.0})
xi = ints(8)
case("clip", "int32_truncated_bounds", [xi], [np.clip(xi, -1, 4)], {"a_min": -1.5, "a_max": 4.9})
x4 = f32(4)
case("clip", "int_valued_attrs", [x4], [np.clip(x4, 0, 1)], {"a_min": 0, "a_max": 1})
error("clip", "missing_a_max", [f32(2)], {"a_min": 0.0})

x = f32(2, 3, lo=-5, hi=5)
case("cast", "f32_to_i32_truncates", [x], [np.trunc(x).astype(np.int32)], {"dtype": "int32"})
xi = np.array([-129, -1, 0, 127, 128, 300], dtype=np.int32)
case("cast", "i32_to_i8_wraps", [xi], [xi.astype(np.int8)], {"dtype": "int8"})
case("cast", "f32_to_bool", [np.array([0.0, -0.5, 2.0], np.float32)], [np.array([False, True, True])], {"dtype": "bool"})
case("cast", "bool_to_f32", [np.array([True, False])], [np.array([1.0, 0.0], np.float32)], {"dtype": "float32"})
xi = ints(4, dtype="int64")
case("cast", "i64_to_f64", [xi], [xi.astype(np.float64)], {"dtype": "float64"})
xh = f32(2)
case("cast", "f32_to_float16_rounds_to_nearest_even", [xh], [xh.astype(np.float16)], {"dtype": "float16"})
case("cast", "float16_to_f32_is_exact", [xh.astype(np.float16)], [xh.astype(np.float16).astype(np.float32)],
     {"dtype": "float32"})

for name, x in [("float32", f32(2, 2)), ("bool", np.array([True, False, True])), ("int64_empty", ints(0, dtype="int64"))]:
    case("copy", name, [x], [x])
    case("zeros_like", name, [x], [np.zeros_like(x)])
    case("ones_like", name, [x], [np.ones_like(x)])

b = np.array([[True, False], [False, True]])
case("logical_not", "2x2", [b], [~b])
case("logical_not", "scalar", [np.bool_(False)], [np.bool_(True)])
case("logical_not", "empty", [np.zeros((0,), bool)], [np.zeros((0,), bool)])
error("logical_not", "float_rejected", [f32(2)])

# ---------------------------------------------------------------- broadcast


def trunc_div(a, b):
    q = np.abs(a) // np.abs(b)
    return (np.sign(a) * np.sign(b) * q).astype(a.dtype)


def binary(op, fn, kind="num", pos=False):
    lo = 0.5 if pos else -2.0
    shapes = [("same", (2, 3), (2, 3)), ("row", (2, 3), (3,)), ("outer", (2, 1, 3), (4, 1)),
              ("scalar", (), (2, 2)), ("empty", (0, 3), (1, 3))]
    for name, sa, sb in shapes:
        a, b = f32(*sa, lo=lo, hi=3.0), f32(*sb, lo=lo, hi=3.0)
        case(op, name, [a, b], [fn(d64(a), d64(b))], out_dtypes=[None if kind == "cmp" else "float32"])
    if kind != "float":
        a, b = ints(3, 4), ints(4, lo=1, hi=9)
        case(op, "int32", [a, b], [fn(a, b)])
    error(op, "shape_mismatch", [f32(2), f32(3)])
    error(op, "dtype_mismatch", [f32(2), ints(2)])


binary("add", np.add)
binary("subtract", np.subtract)
binary("multiply", np.multiply)
binary("maximum", np.maximum)
binary("minimum", np.minimum)
binary("power", np.power, kind="float", pos=True)
binary("divide", lambda a, b: a / b if a.dtype.kind == "f" else trunc_div(a, b))
binary("floor_divide", lambda a, b: np.floor(a / b) if a.dtype.kind == "f" else a // b)
binary("floor_mod", lambda a, b: a - np.floor(a / b) * b if a.dtype.kind == "f" else a - (a // b) * b)
with np.errstate(over="ignore"):
    big = np.array([2147483647, -2147483648], np.int32)
    case("add", "int32_wraps", [big, np.int32(1)], [big + np.int32(1)])
    case("multiply", "int8_wraps", [np.array([100, -100], np.int8), np.int8(3)], [np.array([100, -100], np.int8) * np.int8(3)])
a, b = np.array([7, -7, 7, -7], np.int32), np.array([2, 2, -2, -2], np.int32)
case("divide", "int32_truncates", [a, b], [np.array([3, -3, -3, 3], np.int32)])
case("floor_divide", "int32_signs", [a, b], [a // b])
case("floor_mod", "int32_signs", [a, b], [a % b])
# Integer division by zero gives 0 (relay_devices::arith; NumPy would warn and give 0 too).
for op, q in [("divide", [1, 0]), ("floor_divide", [1, 0]), ("floor_mod", [0, 0])]:
    case(op, "int_division_by_zero", [np.array([1, 2], np.int32), np.array([1, 0], np.int32)],
         [np.array(q, np.int32)])

for op, fn in [("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less), ("less_equal", np.less_equal),
               ("greater", np.greater), ("greater_equal", np.greater_equal)]:
    binary(op, fn, kind="cmp")
    a = np.array([1, 2, 3, 2], np.int64)
    case(op, "int64_ties", [a, np.int64(2)], [fn(a, 2)])
    bb = np.array([True, False])
    case(op, "bool", [bb, bb[:, None]], [fn(bb, bb[:, None])])

for op, fn in [("logical_and", np.logical_and), ("logical_or", np.logical_or)]:
    p, q = np.array([[True], [False]]), np.array([True, False, True])
    case(op, "outer", [p, q], [fn(p, q)])
    case(op, "scalar", [np.bool_(True), q], [fn(True, q)])
    case(op, "empty", [np.zeros((0, 2), bool), np.ones((2,), bool)], [np.zeros((0, 2), bool)])
    error(op, "float_rejected", [f32(2), f32(2)])

c = np.array([[True], [False]])
x, y = f32(2, 3), np.float32(-1)
case("where", "broadcast", [c, x, y], [np.where(c, x, y)])
xi, yi = ints(3), ints(3)
ci = np.array([True, False, True])
case("where", "int32", [ci, xi, yi], [np.where(ci, xi, yi)])
case("where", "empty", [np.zeros((0, 1), bool), f32(1, 2), f32(2)], [np.zeros((0, 2), np.float32)])
error("where", "cond_not_bool", [ints(2), f32(2), f32(2)])
error("where", "dtype_mismatch", [ci, xi, f32(3)])

# ---------------------------------------------------------------- reductions


def axes_of(nd, axis, exclude):
    if axis is None:
        return tuple(range(nd))
    ax = tuple(a % nd for a in axis)
    return tuple(a for a in range(nd) if a not in ax) if exclude else ax


def reduce_case(op, name, x, fn, axis=None, keepdims=False, exclude=False, **kw):
    ax = axes_of(x.ndim, axis, exclude)
    attrs = {"keepdims": keepdims, "exclude": exclude}
    if axis is not None:
        attrs["axis"] = axis
    ref = fn(d64(x) if x.dtype.kind == "f" else x, ax, keepdims)
    case(op, name, [x], [np.asarray(ref)], attrs, out_dtypes=[str(x.dtype)], **kw)


def int_mean(x, ax, kd):
    n = int(np.prod([x.shape[a] for a in ax])) if ax else 1
    s = np.sum(x, axis=ax, keepdims=kd, dtype=np.int64)
    return (np.sign(s) * (np.abs(s) // n))


REDUCERS = {
    "sum": lambda x, ax, kd: np.sum(x, axis=ax, keepdims=kd),
    "prod": lambda x, ax, kd: np.prod(x, axis=ax, keepdims=kd),
    "max": lambda x, ax, kd: np.max(x, axis=ax, keepdims=kd),
    "min": lambda x, ax, kd: np.min(x, axis=ax, keepdims=kd),
    "mean": lambda x, ax, kd: (np.mean(x, axis=ax, keepdims=kd) if x.dtype.kind == "f" else int_mean(x, ax, kd)),
}
for op, fn in REDUCERS.items():
    x = f32(2, 3, 4, lo=0.5 if op == "prod" else -2.0, hi=1.5 if op == "prod" else 2.0)
    reduce_case(op, "all", x, fn, atol=1e-5)
    reduce_case(op, "axis1_keepdims", x, fn, axis=[1], keepdims=True, atol=1e-5)
    reduce_case(op, "exclude_neg_axis", x, fn, axis=[-1], exclude=True, atol=1e-5)
    reduce_case(op, "two_axes", x, fn, axis=[0, 2], atol=1e-5)
    reduce_case(op, "int32_axis0", ints(3, 4, lo=-5, hi=6), fn, axis=[0])
    reduce_case(op, "empty_kept_axis", f32(0, 3), fn, axis=[1])
    error(op, "axis_out_of_range", [f32(2, 2)], {"axis": [2]})
    error(op, "bool_rejected", [np.array([True])])
reduce_case("sum", "empty_reduced_axis", f32(0, 3), REDUCERS["sum"], axis=[0])
reduce_case("prod", "empty_reduced_axis", f32(0, 3), REDUCERS["prod"], axis=[0])
error("max", "empty_reduction", [f32(0, 3)], {"axis": [0]})
error("min", "empty_reduction", [f32(0, 3)], {"axis": [0]})


def arg_case(op, name, x, axis=None, keepdims=False, last=False):
    fn = np.argmax if op == "argmax" else np.argmin
    attrs = {"keepdims": keepdims, "select_last_index": last}
    if axis is None:
        ref = fn(x[::-1] if last else x)
        ref = x.size - 1 - ref if last else ref
        ref = np.array(ref).reshape((1,) * x.ndim if keepdims else ())
    else:
        attrs["axis"] = [axis]
        xr = np.flip(x, axis) if last else x
        ref = fn(xr, axis=axis)
        ref = x.shape[axis] - 1 - ref if last else ref
        if keepdims:
            ref = np.expand_dims(ref, axis)
    case(op, name, [x], [np.asarray(ref, np.int32)], attrs)


for op in ["argmax", "argmin"]:
    x = f32(3, 4)
    arg_case(op, "axis1", x, axis=1)
    arg_case(op, "all", x)
    arg_case(op, "axis0_keepdims", x, axis=0, keepdims=True)
    ties = np.array([[1, 3, 3, 0], [2, 2, 0, 0]], np.int32)
    arg_case(op, "ties_first", ties, axis=1)
    arg_case(op, "ties_last", ties, axis=1, last=True)
    error(op, "empty_reduction", [f32(2, 0)], {"axis": [1]})


# ---------------------------------------------------------------- transforms

x = f32(2, 3, 4)
for name, ns, out, extra in [("copy_and_infer", [0, -1], (2, 12), {}), ("merge", [-3, 4], (6, 4), {}),
                             ("rest", [2, -2], (2, 3, 4), {}), ("split_dim", [2, -4, -1, 3, 4], (2, 1, 3, 4), {}),
                             ("flat", [-1], (24,), {})]:
    case("reshape", name, [x], [x.reshape(out)], {"newshape": ns, **extra})
case("reshape", "allowzero", [f32(0, 3)], [f32(3, 0)], {"newshape": [3, 0], "allowzero": True})
xs = f32(1, 1)
case("reshape", "to_scalar", [xs], [xs.reshape(())], {"newshape": []})
error("reshape", "count_mismatch", [x], {"newshape": [5, -1]})
error("reshape", "two_minus_ones", [x], {"newshape": [-1, -1]})

case("transpose", "reverse", [x], [x.transpose()])
case("transpose", "axes", [x], [x.transpose(1, 0, 2)], {"axes": [1, 0, 2]})
case("transpose", "negative_axes", [x], [x.transpose(2, 0, 1)], {"axes": [-1, 0, 1]})
case("transpose", "empty", [f32(0, 2)], [f32(2, 0)])
error("transpose", "not_a_permutation", [x], {"axes": [0, 0, 1]})

y = f32(1, 3, 1, 2)
case("squeeze", "all", [y], [y.reshape(3, 2)])
case("squeeze", "axis", [y], [y.reshape(3, 1, 2)], {"axis": [0]})
case("squeeze", "negative_axis", [y], [y.reshape(1, 3, 2)], {"axis": [-2]})
error("squeeze", "not_size_one", [y], {"axis": [1]})

case("expand_dims", "middle", [x], [x.reshape(2, 1, 3, 4)], {"axis": 1})
case("expand_dims", "end_two", [x], [x.reshape(2, 3, 4, 1, 1)], {"axis": -1, "num_newaxis": 2})
case("expand_dims", "scalar", [np.float32(1.5)], [np.array([1.5], np.float32)], {"axis": 0})
error("expand_dims", "axis_out_of_range", [x], {"axis": 5})

a, b, c3 = f32(2, 3), f32(1, 3), f32(4, 3)
case("concatenate", "axis0", [a, b, c3], [np.concatenate([a, b, c3], 0)])
p, q = f32(2, 1), f32(2, 2)
case("concatenate", "axis_last", [p, q, p], [np.concatenate([p, q, p], -1)], {"axis": -1})
case("concatenate", "with_empty", [a, f32(0, 3)], [a], {"axis": 0})
ii = ints(2, 2, dtype="int64")
case("concatenate", "int64_single", [ii], [ii], {"axis": 1})
error("concatenate", "shape_mismatch", [a, f32(2, 2)], {"axis": 0})

z = f32(2, 6)
case("split", "sections", [z], list(np.split(z, 3, axis=1)), {"indices_or_sections": 3, "axis": 1})
case("split", "indices", [z], list(np.split(z, [1, 4], axis=1)), {"indices_or_sections": [1, 4], "axis": -1})
case("split", "one_section", [z], [z], {"indices_or_sections": 1})
error("split", "uneven", [z], {"indices_or_sections": 4, "axis": 1})
error("split", "unsorted_indices", [z], {"indices_or_sections": [3, 2], "axis": 1})

s1, s2 = f32(2, 3), f32(2, 3)
case("stack", "axis0", [s1, s2], [np.stack([s1, s2], 0)])
case("stack", "axis_last", [s1, s2, s1], [np.stack([s1, s2, s1], -1)], {"axis": -1})
case("stack", "scalars", [np.int32(1), np.int32(2)], [np.array([1, 2], np.int32)])
error("stack", "shape_mismatch", [s1, f32(3, 2)])


def take_ref(data, idx, axis, mode):
    n = data.size if axis is None else data.shape[axis]
    if mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    else:
        idx = np.mod(idx, n)
    return np.take(data, idx, axis=axis)


emb = f32(5, 3)
ids = np.array([[0, 4], [2, 2]], np.int32)
case("take", "embedding", [emb, ids], [take_ref(emb, ids, 0, "clip")], {"axis": 0})
idc = np.array([-1, 0, 3, 9], np.int64)
case("take", "clip_axis1", [x, idc], [take_ref(x, idc, 1, "clip")], {"axis": 1})
case("take", "wrap", [x, idc], [take_ref(x, idc, 2, "wrap")], {"axis": -1, "mode": "wrap"})
case("take", "flat", [x, np.array([0, 23, 5], np.int32)], [x.reshape(-1)[[0, 23, 5]]])
bd = f32(2, 4)
bidx = np.array([[3, 0], [1, 1]], np.int32)
case("take", "batch_dims", [bd, bidx], [np.stack([bd[0][bidx[0]], bd[1][bidx[1]]])], {"axis": 1, "batch_dims": 1})
case("take", "fast_in_range", [emb, np.array([1, 4], np.int32)], [emb[[1, 4]]], {"axis": 0, "mode": "fast"})
error("take", "fast_out_of_range", [emb, np.array([5], np.int32)], {"axis": 0, "mode": "fast"})
error("take", "float_indices", [emb, f32(2)], {"axis": 0})

case("strided_slice", "basic", [x], [x[0:2, 1:3]], {"begin": [0, 1], "end": [2, 3]})
case("strided_slice", "strides", [x], [x[:, ::2, 1::2]], {"begin": [0, 0, 1], "end": [2, 3, 4], "strides": [1, 2, 2]})
case("strided_slice", "negative_stride", [x], [x[:, ::-1]], {"begin": [0, -1], "end": [2, -4], "strides": [1, -1]})
case("strided_slice", "axes", [x], [x[:, :, 1:]], {"begin": [1], "end": [100], "axes": [2]})
case("strided_slice", "size_mode", [x], [x[1:2, 0:3]], {"begin": [1, 0], "end": [1, -1], "slice_mode": "size"})
# A range running against its stride is a type error, as in TVM (not NumPy's empty slice).
error("strided_slice", "backward_range", [x], {"begin": [0, 2], "end": [2, 1]})
error("strided_slice", "zero_stride", [x], {"begin": [0], "end": [1], "strides": [0]})

v = f32(3)
case("broadcast_to", "row", [v], [np.broadcast_to(v, (2, 3))], {"shape": [2, 3]})
w = f32(2, 1)
case("broadcast_to", "column", [w], [np.broadcast_to(w, (2, 4))], {"shape": [2, 4]})
case("broadcast_to", "scalar", [np.int32(7)], [np.full((2, 2), 7, np.int32)], {"shape": [2, 2]})
error("broadcast_to", "incompatible", [v], {"shape": [2, 4]})

for op, val in [("zeros", 0), ("ones", 1)]:
    case(op, "default_f32", [], [np.full((2, 3), val, np.float32)], {"shape": [2, 3]})
    case(op, "int32", [], [np.full((4,), val, np.int32)], {"shape": [4], "dtype": "int32"})
    case(op, "bool_scalar", [], [np.full((), val, bool)], {"shape": [], "dtype": "bool"})
    case(op, "empty", [], [np.zeros((0, 2), np.int64)], {"shape": [0, 2], "dtype": "int64"})
    error(op, "missing_shape", [], {})
case("full", "f32", [np.float32(2.5)], [np.full((2, 2), 2.5, np.float32)], {"shape": [2, 2]})
case("full", "converted", [np.float32(3.7)], [np.full((3,), 3, np.int32)], {"shape": [3], "dtype": "int32"})
case("full", "bool", [np.bool_(True)], [np.ones((1, 2), bool)], {"shape": [1, 2]})
error("full", "non_scalar_fill", [f32(2)], {"shape": [2]})

case("nn.batch_flatten", "rank3", [x], [x.reshape(2, 12)])
case("nn.batch_flatten", "rank1", [v], [v.reshape(3, 1)])
case("nn.batch_flatten", "empty_batch", [f32(0, 2, 2)], [f32(0, 4)])
error("nn.batch_flatten", "scalar", [np.float32(1)])

m = f32(2, 3)
case("nn.pad", "constant", [m, np.float32(-1)], [np.pad(m, [[1, 0], [2, 1]], constant_values=-1)],
     {"pad_width": [[1, 0], [2, 1]]})
case("nn.pad", "edge", [m, np.float32(0)], [np.pad(m, [[1, 1], [0, 2]], mode="edge")],
     {"pad_width": [[1, 1], [0, 2]], "pad_mode": "edge"})
case("nn.pad", "reflect", [m, np.float32(0)], [np.pad(m, [[1, 1], [2, 2]], mode="reflect")],
     {"pad_width": [[1, 1], [2, 2]], "pad_mode": "reflect"})
mi = ints(2, 2)
case("nn.pad", "int32_float_value", [mi, np.float32(5.0)], [np.pad(mi, [[0, 1], [1, 0]], constant_values=5)],
     {"pad_width": [[0, 1], [1, 0]]})
error("nn.pad", "wrong_rank", [m, np.float32(0)], {"pad_width": [[1, 1]]})

case("shape_of", "default_int32", [x], [np.array([2, 3, 4], np.int32)])
case("shape_of", "int64", [f32(0, 5)], [np.array([0, 5], np.int64)], {"dtype": "int64"})
case("shape_of", "scalar", [np.bool_(True)], [np.zeros((0,), np.int32)])

# ---------------------------------------------------------------- nn


def matmul_cases():
    d, wt = f32(2, 3), f32(4, 3)
    case("nn.dense", "2d", [d, wt], [d64(d) @ d64(wt).T], out_dtypes=["float32"], atol=1e-5)
    d3 = f32(2, 2, 3)
    case("nn.dense", "3d_units", [d3, wt], [d64(d3) @ d64(wt).T], {"units": 4}, out_dtypes=["float32"], atol=1e-5)
    di, wi = ints(3, 5, lo=-128, hi=128, dtype="int8"), ints(2, 5, lo=-128, hi=128, dtype="int8")
    case("nn.dense", "int8_to_int32", [di, wi], [di.astype(np.int32) @ wi.astype(np.int32).T], {"out_dtype": "int32"})
    du = ints(2, 4, lo=0, hi=256, dtype="uint8")
    wu = ints(3, 4, lo=-128, hi=128, dtype="int8")
    case("nn.dense", "uint8_int8_to_int32", [du, wu], [du.astype(np.int32) @ wu.astype(np.int32).T],
         {"out_dtype": "int32"})
    error("nn.dense", "units_mismatch", [d, wt], {"units": 5})
    error("nn.dense", "k_mismatch", [d, f32(4, 2)])

    w2 = f32(3, 5)
    case("nn.matmul", "plain", [d, w2], [d64(d) @ d64(w2)], out_dtypes=["float32"], atol=1e-5)
    case("nn.matmul", "transpose_b", [d, wt], [d64(d) @ d64(wt).T], {"transpose_b": True}, out_dtypes=["float32"],
         atol=1e-5)
    dt = f32(3, 2)
    case("nn.matmul", "transpose_a", [dt, w2], [d64(dt).T @ d64(w2)], {"transpose_a": True}, out_dtypes=["float32"],
         atol=1e-5)
    error("nn.matmul", "k_mismatch", [d, f32(2, 5)])

    xb, yb = f32(2, 3, 4), f32(2, 4, 5)
    case("nn.batch_matmul", "default_no_transpose", [xb, yb], [d64(xb) @ d64(yb)], out_dtypes=["float32"], atol=1e-5)
    yt = f32(2, 5, 4)
    case("nn.batch_matmul", "transpose_b", [xb, yt], [d64(xb) @ np.swapaxes(d64(yt), 1, 2)], {"transpose_b": True},
         out_dtypes=["float32"], atol=1e-5)
    y1 = f32(1, 4, 2)
    case("nn.batch_matmul", "broadcast_batch", [xb, y1], [d64(xb) @ d64(y1)], out_dtypes=["float32"], atol=1e-5)
    xt = f32(2, 4, 3)
    case("nn.batch_matmul", "transpose_a", [xt, yb], [np.swapaxes(d64(xt), 1, 2) @ d64(yb)], {"transpose_a": True},
         out_dtypes=["float32"], atol=1e-5)
    error("nn.batch_matmul", "k_mismatch", [xb, f32(2, 3, 5)])

    data, bias = f32(2, 3, 2), f32(3)
    case("nn.bias_add", "axis1", [data, bias], [data + bias[None, :, None]])
    bias2 = f32(2)
    case("nn.bias_add", "axis_last", [data, bias2], [data + bias2], {"axis": -1})
    bi = ints(4)
    di2 = ints(2, 4)
    case("nn.bias_add", "int32_2d", [di2, bi], [di2 + bi])
    error("nn.bias_add", "bias_mismatch", [data, f32(2)])


matmul_cases()


def conv2d_ref(x, w, strides=(1, 1), pad=(0, 0, 0, 0), dil=(1, 1), groups=1, acc=np.float64):
    """Direct NCHW/OIHW convolution: pad = (top, left, bottom, right)."""
    n, c, h, wd = x.shape
    o, ci, kh, kw = w.shape
    xp = np.zeros((n, c, h + pad[0] + pad[2], wd + pad[1] + pad[3]), acc)
    xp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + wd] = x
    oh = (h + pad[0] + pad[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pad[1] + pad[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow), acc)
    per_group = o // groups
    for b in range(n):
        for f in range(o):
            g = f // per_group
            for y in range(oh):
                for xo in range(ow):
                    s = acc(0)
                    for i in range(ci):
                        for ky in range(kh):
                            for kx in range(kw):
                                s += xp[b, g * ci + i, y * strides[0] + ky * dil[0], xo * strides[1] + kx * dil[1]] \
                                    * acc(w[f, i, ky, kx])
                    out[b, f, y, xo] = s
    return out


x4 = f32(1, 2, 5, 5)
w4 = f32(3, 2, 3, 3)
case("nn.conv2d", "pad1", [x4, w4], [conv2d_ref(d64(x4), d64(w4), pad=(1, 1, 1, 1))],
     {"padding": [1, 1], "channels": 3, "kernel_size": [3, 3]}, out_dtypes=["float32"], atol=1e-5)
case("nn.conv2d", "stride2_asymmetric_pad", [x4, w4], [conv2d_ref(d64(x4), d64(w4), (2, 2), (1, 0, 0, 1))],
     {"strides": [2, 2], "padding": [1, 0, 0, 1]}, out_dtypes=["float32"], atol=1e-5)
x6 = f32(2, 2, 6, 6)
case("nn.conv2d", "dilation2", [x6, w4], [conv2d_ref(d64(x6), d64(w4), dil=(2, 2))], {"dilation": [2, 2]},
     out_dtypes=["float32"], atol=1e-5)
xg, wg = f32(1, 4, 4, 4), f32(4, 2, 2, 2)
case("nn.conv2d", "groups2", [xg, wg], [conv2d_ref(d64(xg), d64(wg), groups=2)], {"groups": 2},
     out_dtypes=["float32"], atol=1e-5)
wd_ = f32(4, 1, 3, 3)
case("nn.conv2d", "depthwise", [xg, wd_], [conv2d_ref(d64(xg), d64(wd_), pad=(1, 1, 1, 1), groups=4)],
     {"groups": 4, "padding": [1]}, out_dtypes=["float32"], atol=1e-5)
xi8, wi8 = ints(1, 2, 4, 4, lo=-128, hi=128, dtype="int8"), ints(2, 2, 3, 3, lo=-128, hi=128, dtype="int8")
case("nn.conv2d", "int8_to_int32", [xi8, wi8], [conv2d_ref(xi8, wi8, acc=np.int64).astype(np.int32)],
     {"out_dtype": "int32"})
error("nn.conv2d", "channels_mismatch", [x4, w4], {"channels": 4})
error("nn.conv2d", "kernel_too_large", [f32(1, 2, 2, 2), w4])
error("nn.conv2d", "packed_layout", [x4, w4], {"data_layout": "NCHW4c"})


def pool_ref(x, kind, pool, strides, pad, dil=(1, 1), ceil_mode=False, count_include_pad=False):
    """TVM pool semantics (topi pool_impl_nd), NCHW; pad = (top, left, bottom, right)."""
    n, c, h, w = x.shape
    dims = (h, w)
    outs = []
    for ax in range(2):
        span = (pool[ax] - 1) * dil[ax] + 1
        room = dims[ax] + pad[ax] + pad[ax + 2] - span
        outs.append((room + (strides[ax] - 1 if ceil_mode else 0)) // strides[ax] + 1)
    out = np.zeros((n, c, outs[0], outs[1]), np.float64)
    for y in range(outs[0]):
        for xo in range(outs[1]):
            taps, counted = [], 1
            for ax, o in enumerate((y, xo)):
                start = o * strides[ax] - pad[ax]
                pos = [start + i * dil[ax] for i in range(pool[ax])]
                taps.append([p for p in pos if 0 <= p < dims[ax]])
                counted *= len([p for p in pos if p < dims[ax] + pad[ax + 2]])
            vals = x[:, :, taps[0], :][:, :, :, taps[1]].reshape(n, c, -1)
            if kind == "max":
                out[:, :, y, xo] = vals.max(axis=2) if vals.shape[2] else -np.inf
            else:
                cnt = counted if count_include_pad else vals.shape[2]
                out[:, :, y, xo] = vals.sum(axis=2) / max(cnt, 1)
    return out


xp = f32(1, 2, 5, 5)
case("nn.max_pool2d", "2x2_stride2", [xp], [pool_ref(d64(xp), "max", (2, 2), (2, 2), (0, 0, 0, 0))],
     {"pool_size": [2, 2], "strides": [2, 2]}, out_dtypes=["float32"])
case("nn.max_pool2d", "3x3_pad1_ceil", [xp], [pool_ref(d64(xp), "max", (3, 3), (2, 2), (1, 1, 1, 1), ceil_mode=True)],
     {"pool_size": [3, 3], "strides": [2, 2], "padding": [1, 1], "ceil_mode": True}, out_dtypes=["float32"])
case("nn.max_pool2d", "dilated", [xp], [pool_ref(d64(xp), "max", (2, 2), (1, 1), (0, 0, 0, 0), dil=(2, 2))],
     {"pool_size": [2], "dilation": [2, 2]}, out_dtypes=["float32"])
xpi = ints(1, 1, 4, 4)
case("nn.max_pool2d", "int32", [xpi], [pool_ref(xpi, "max", (2, 2), (2, 2), (0, 0, 0, 0)).astype(np.int32)],
     {"pool_size": [2, 2], "strides": [2, 2]})
error("nn.max_pool2d", "window_too_large", [f32(1, 1, 2, 2)], {"pool_size": [3, 3]})

case("nn.avg_pool2d", "2x2_stride2", [xp], [pool_ref(d64(xp), "avg", (2, 2), (2, 2), (0, 0, 0, 0))],
     {"pool_size": [2, 2], "strides": [2, 2]}, out_dtypes=["float32"])
case("nn.avg_pool2d", "pad_excluded", [xp], [pool_ref(d64(xp), "avg", (3, 3), (2, 2), (1, 1, 1, 1))],
     {"pool_size": [3, 3], "strides": [2, 2], "padding": [1]}, out_dtypes=["float32"])
case("nn.avg_pool2d", "pad_included", [xp],
     [pool_ref(d64(xp), "avg", (3, 3), (2, 2), (1, 1, 1, 1), count_include_pad=True)],
     {"pool_size": [3, 3], "strides": [2, 2], "padding": [1], "count_include_pad": True}, out_dtypes=["float32"])
x46 = f32(1, 1, 4, 6)
case("nn.avg_pool2d", "ceil_asymmetric_include_pad", [x46],
     [pool_ref(d64(x46), "avg", (2, 3), (2, 2), (0, 1, 1, 0), ceil_mode=True, count_include_pad=True)],
     {"pool_size": [2, 3], "strides": [2, 2], "padding": [0, 1, 1, 0], "ceil_mode": True, "count_include_pad": True},
     out_dtypes=["float32"])
error("nn.avg_pool2d", "int_rejected", [xpi], {"pool_size": [2, 2]})

xg2 = f32(2, 3, 4, 5)
case("nn.global_avg_pool2d", "basic", [xg2], [d64(xg2).mean(axis=(2, 3), keepdims=True)], out_dtypes=["float32"])
xg1 = f32(1, 2, 1, 1)
case("nn.global_avg_pool2d", "1x1", [xg1], [xg1])
case("nn.global_avg_pool2d", "empty_batch", [f32(0, 2, 3, 3)], [f32(0, 2, 1, 1)])
error("nn.global_avg_pool2d", "rank3", [f32(2, 3, 4)])


def batch_norm_ref(x, g, b, m, v, axis=1, eps=1e-5, center=True, scale=True):
    shape = [1] * x.ndim
    shape[axis] = -1
    y = (d64(x) - d64(m).reshape(shape)) / np.sqrt(d64(v).reshape(shape) + eps)
    if scale:
        y = y * d64(g).reshape(shape)
    if center:
        y = y + d64(b).reshape(shape)
    return y


xb = f32(2, 3, 2, 2)
g, bb, mm, vv = f32(3), f32(3), f32(3), f32(3, lo=0.5, hi=2)
case("nn.batch_norm", "nchw", [xb, g, bb, mm, vv], [batch_norm_ref(xb, g, bb, mm, vv), mm, vv],
     out_dtypes=["float32", None, None])
xl = f32(4, 3)
case("nn.batch_norm", "last_axis_no_center", [xl, g, bb, mm, vv],
     [batch_norm_ref(xl, g, bb, mm, vv, axis=1, eps=1e-3, center=False), mm, vv],
     {"axis": -1, "epsilon": 1e-3, "center": False}, out_dtypes=["float32", None, None])
xa0 = f32(3, 2)
case("nn.batch_norm", "axis0_no_scale", [xa0, g, bb, mm, vv],
     [batch_norm_ref(xa0, g, bb, mm, vv, axis=0, scale=False), mm, vv], {"axis": 0, "scale": False},
     out_dtypes=["float32", None, None])
error("nn.batch_norm", "param_mismatch", [xb, f32(2), bb, mm, vv])


def layer_norm_ref(x, g, b, axis=-1, eps=1e-5, center=True, scale=True):
    xd = d64(x)
    mean = xd.mean(axis=axis, keepdims=True)
    var = ((xd - mean) ** 2).mean(axis=axis, keepdims=True)
    y = (xd - mean) / np.sqrt(var + eps)
    shape = [1] * x.ndim
    shape[axis] = -1
    if scale:
        y = y * d64(g).reshape(shape)
    if center:
        y = y + d64(b).reshape(shape)
    return y


xn = f32(2, 3, 4)
g4, b4 = f32(4), f32(4)
case("nn.layer_norm", "last_axis", [xn, g4, b4], [layer_norm_ref(xn, g4, b4)], out_dtypes=["float32"], atol=1e-5)
g3, b3 = f32(3), f32(3)
case("nn.layer_norm", "axis1_eps", [xn, g3, b3], [layer_norm_ref(xn, g3, b3, axis=1, eps=1e-3)],
     {"axis": 1, "epsilon": 1e-3}, out_dtypes=["float32"], atol=1e-5)
case("nn.layer_norm", "plain", [xn, g4, b4], [layer_norm_ref(xn, g4, b4, center=False, scale=False)],
     {"center": False, "scale": False}, out_dtypes=["float32"], atol=1e-5)
error("nn.layer_norm", "param_mismatch", [xn, g3, b4])


def softmax_ref(x, axis):
    e = np.exp(d64(x) - d64(x).max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


for op, fn in [("nn.softmax", softmax_ref), ("nn.log_softmax", lambda x, a: np.log(softmax_ref(x, a)))]:
    xs = f32(2, 5)
    case(op, "last_axis", [xs], [fn(xs, -1)], out_dtypes=["float32"])
    case(op, "axis0", [xs], [fn(xs, 0)], {"axis": 0}, out_dtypes=["float32"])
    big = np.array([[1000.0, 1001.0, 999.0]], np.float32)
    case(op, "large_values", [big], [fn(big, -1)], out_dtypes=["float32"])
    case(op, "empty", [f32(0, 3)], [f32(0, 3)])
    error(op, "axis_out_of_range", [xs], {"axis": 2})

xd = f32(2, 3)
case("nn.dropout", "identity", [xd], [xd, np.ones_like(xd)], {"rate": 0.3})
x1 = f32(4)
case("nn.dropout", "default_rate", [x1], [x1, np.ones_like(x1)])
case("nn.dropout", "empty", [f32(0)], [f32(0), f32(0)])
error("nn.dropout", "int_rejected", [ints(2)])


# ---------------------------------------------------------------- unary and broadcast operators of the model zoo
# (appended last, so the random draws of the cases above stay as they were)

unary_float("sin", np.sin, -4, 4)
unary_float("cos", np.cos, -4, 4)
unary_float("tan", np.tan, -1.2, 1.2)
unary_float("asin", np.arcsin, -1, 1)
unary_float("acos", np.arccos, -1, 1)
unary_float("atan", np.arctan, -5, 5)
unary_float("sinh", np.sinh, -3, 3)
unary_float("cosh", np.cosh, -3, 3)
unary_float("trunc", np.trunc, -5, 5)
case("trunc", "halves", [halves], [np.trunc(halves)])
unary_float("log2", np.log2, 0.1, 10)
unary_float("log10", np.log10, 0.1, 10)
case("asin", "out_of_domain", [np.array([2.0], np.float32)], [np.array([np.nan], np.float32)])

special = np.array([0.0, -1.5, np.inf, -np.inf, np.nan, 3.0], np.float32)
for op, fn in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)]:
    case(op, "specials", [special], [fn(special)])
    case(op, "float64_2x3", [special.astype(np.float64).reshape(2, 3)], [fn(special).reshape(2, 3)])
    case(op, "empty", [f32(0, 2)], [np.zeros((0, 2), bool)])
    error(op, "int_rejected", [ints(2)])

xi = np.array([0, 1, -1, 2147483647, -2147483648], np.int32)
case("bitwise_not", "int32", [xi], [~xi])
xu = np.array([0, 1, 255], np.uint8)
case("bitwise_not", "uint8", [xu], [~xu])
case("bitwise_not", "bool", [np.array([True, False])], [np.array([False, True])])
error("bitwise_not", "float_rejected", [f32(2)])


def fmod_ref(a, b):
    return np.fmod(a, b).astype(a.dtype)


binary("trunc_divide", lambda a, b: np.trunc(a / b) if a.dtype.kind == "f" else trunc_div(a, b))
binary("trunc_mod", fmod_ref)
binary("mod", fmod_ref)
a, b = np.array([7, -7, 7, -7], np.int32), np.array([2, 2, -2, -2], np.int32)
for op in ["trunc_divide", "trunc_mod", "mod"]:
    want = trunc_div(a, b) if op == "trunc_divide" else np.fmod(a, b)
    case(op, "int32_signs", [a, b], [want])
    q = [1, 0] if op == "trunc_divide" else [0, 0]
    case(op, "int_division_by_zero", [np.array([1, 2], np.int32), np.array([1, 0], np.int32)], [np.array(q, np.int32)])

p, q = np.array([[True], [False]]), np.array([True, False, True])
case("logical_xor", "outer", [p, q], [np.logical_xor(p, q)])
case("logical_xor", "scalar", [np.bool_(True), q], [np.logical_xor(True, q)])
case("logical_xor", "empty", [np.zeros((0, 2), bool), np.ones((2,), bool)], [np.zeros((0, 2), bool)])
error("logical_xor", "float_rejected", [f32(2), f32(2)])

for op, fn in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor)]:
    a, b = ints(3, 4, lo=-100, hi=100), ints(4, lo=-100, hi=100)
    case(op, "int32_row", [a, b], [fn(a, b)])
    au, bu = ints(2, 1, lo=0, hi=255, dtype="uint8"), ints(3, lo=0, hi=255, dtype="uint8")
    case(op, "uint8_outer", [au, bu], [fn(au, bu)])
    case(op, "bool", [p, q], [fn(p, q)])
    case(op, "empty", [ints(0, 3), ints(3)], [np.zeros((0, 3), np.int32)])
    error(op, "float_rejected", [f32(2), f32(2)])
    error(op, "shape_mismatch", [ints(2), ints(3)])

a, s = ints(2, 3, lo=-1000, hi=1000), ints(3, lo=0, hi=8)
case("left_shift", "int32", [a, s], [np.left_shift(a, s)])
case("right_shift", "int32_arithmetic", [a, s], [np.right_shift(a, s)])
au, su = np.array([1, 128, 255], np.uint8), np.array([1, 1, 4], np.uint8)
with np.errstate(over="ignore"):
    case("left_shift", "uint8_wraps", [au, su], [np.left_shift(au, su).astype(np.uint8)])
case("right_shift", "uint8", [au, su], [np.right_shift(au, su)])
ai = ints(4, dtype="int64")
case("left_shift", "int64_scalar_shift", [ai, np.int64(3)], [np.left_shift(ai, 3)])
case("right_shift", "int64_scalar_shift", [ai, np.int64(2)], [np.right_shift(ai, 2)])
for op in ["left_shift", "right_shift"]:
    error(op, "float_rejected", [f32(2), f32(2)])


# ---------------------------------------------------------------- reduce/scan additions
# (drawn last so that the cases above keep their random inputs)
# all / any: bool reductions with the same axis attributes.
for op, fn in [("all", np.all), ("any", np.any)]:
    b = RNG.random((2, 3, 4)) < (0.8 if op == "all" else 0.2)
    for name, axis, kd, ex in [("all", None, False, False), ("axis1_keepdims", [1], True, False),
                               ("exclude_neg_axis", [-1], False, True), ("two_axes", [0, 2], False, False)]:
        ax = axes_of(b.ndim, axis, ex)
        attrs = {"keepdims": kd, "exclude": ex}
        if axis is not None:
            attrs["axis"] = axis
        case(op, name, [b], [np.asarray(fn(b, axis=ax, keepdims=kd))], attrs)
    case(op, "empty_reduced_axis", [np.zeros((0, 3), bool)], [fn(np.zeros((0, 3), bool), axis=0)], {"axis": [0]})
    error(op, "float_rejected", [f32(2)])
    error(op, "axis_out_of_range", [np.array([[True]])], {"axis": [-3]})


def moments_case(op, name, x, axis=None, keepdims=False, exclude=False, unbiased=False):
    ax = axes_of(x.ndim, axis, exclude)
    attrs = {"keepdims": keepdims, "exclude": exclude, "unbiased": unbiased}
    if axis is not None:
        attrs["axis"] = axis
    ddof = 1 if unbiased else 0
    xd = d64(x)
    if op == "variance":
        m = np.mean(x, axis=ax, keepdims=True, dtype=np.float32)
        ref = np.sum((xd - d64(m)) ** 2, axis=ax, keepdims=keepdims) / (np.prod([x.shape[a] for a in ax]) - ddof)
        case(op, name, [x, m], [ref], attrs, atol=1e-5, out_dtypes=["float32"])
    else:
        case(op, name, [x], [np.std(xd, axis=ax, keepdims=keepdims, ddof=ddof)], attrs, atol=1e-5,
             out_dtypes=["float32"])


for op in ["variance", "std"]:
    x = f32(2, 3, 4)
    moments_case(op, "all", x)
    moments_case(op, "axis1_keepdims", x, axis=[1], keepdims=True)
    moments_case(op, "exclude_neg_axis_unbiased", x, axis=[-1], exclude=True, unbiased=True)
    moments_case(op, "two_axes", x, axis=[0, 2])
    error(op, "int_rejected", [ints(2, 2)] + ([ints(1, 1)] if op == "variance" else []))
error("variance", "mean_shape_mismatch", [f32(2, 3), f32(2)], {"axis": [1]})
error("variance", "mean_dtype_mismatch", [f32(2, 3), np.zeros((2, 1), np.float64)], {"axis": [1]})


def scan_case(op, name, x, axis=None, dtype=None, exclusive=False):
    fn = np.cumsum if op == "cumsum" else np.cumprod
    attrs = {"exclusive": exclusive}
    if axis is not None:
        attrs["axis"] = axis
    if dtype is not None:
        attrs["dtype"] = dtype
    out_dtype = dtype or str(x.dtype)
    src = x.astype(out_dtype)
    if axis is None:
        src = src.reshape(-1)
    ax = 0 if axis is None else axis
    with np.errstate(over="ignore"):
        ref = fn(src, axis=ax, dtype=out_dtype)
    if exclusive:
        ident = np.zeros_like if op == "cumsum" else np.ones_like
        first = ident(np.take(ref, [0], axis=ax))
        ref = np.concatenate([first, np.delete(ref, -1, axis=ax)], axis=ax) if ref.shape[ax] else ref
    case(op, name, [x], [ref], attrs, atol=1e-5, out_dtypes=[out_dtype])


for op in ["cumsum", "cumprod"]:
    x = f32(2, 3, 4, lo=0.5, hi=1.5)
    scan_case(op, "flattened", x)
    scan_case(op, "axis1", x, axis=1)
    scan_case(op, "neg_axis_exclusive", x, axis=-1, exclusive=True)
    scan_case(op, "int32_to_float64", ints(3, 2, lo=-3, hi=4), axis=0, dtype="float64")
    scan_case(op, "int8_wraps", ints(6, lo=50, hi=100, dtype="int8"), axis=0)
    scan_case(op, "empty_axis", f32(2, 0), axis=1)
    error(op, "axis_out_of_range", [f32(2, 3)], {"axis": 2})
    error(op, "bool_rejected", [np.array([True])])


# ---------------------------------------------------------------- gather, scatter, one_hot
# Written out as loops with TVM's semantics: negative indices count from the end.

def gather_ref(data, idx, axis):
    axis %= data.ndim
    out = np.empty(idx.shape, data.dtype)
    for p in np.ndindex(*idx.shape):
        q = list(p)
        q[axis] = idx[p]
        out[p] = data[tuple(q)]
    return out


d = f32(3, 4)
i = ints(3, 2, lo=-4, hi=4)
case("gather", "axis1_negative_indices", [d, i], [gather_ref(d, i, 1)], {"axis": 1})
case("gather", "negative_axis", [d, i], [gather_ref(d, i, -1)], {"axis": -1})
d, i = ints(4, 3), ints(2, 2, lo=0, hi=4, dtype="int64")
case("gather", "int64_smaller_off_axis", [d, i], [gather_ref(d, i, 0)], {"axis": 0})
case("gather", "empty", [f32(2, 3), ints(0, 3, lo=0, hi=2)], [np.zeros((0, 3), np.float32)], {"axis": 0})
error("gather", "index_out_of_range", [f32(2, 3), np.array([[0, 3]], np.int32)], {"axis": 1})
error("gather", "rank_mismatch", [f32(2, 3), ints(2, lo=0, hi=2)], {"axis": 0})
error("gather", "float_indices", [f32(2, 3), f32(2, 3)], {"axis": 0})


def gather_nd_ref(data, idx, b=0):
    m = idx.shape[0]
    out = np.empty(idx.shape[1:] + data.shape[b + m:], data.dtype)
    for p in np.ndindex(*idx.shape[1:]):
        out[p] = data[tuple(p[:b]) + tuple(idx[(slice(None),) + p])]
    return out


d = f32(3, 4)
i = np.stack([ints(5, lo=-3, hi=3), ints(5, lo=-4, hi=4)])
case("gather_nd", "full_index", [d, i], [gather_nd_ref(d, i)])
d, i = ints(2, 3, 4), ints(1, 2, lo=-2, hi=2)
case("gather_nd", "partial_index", [d, i], [gather_nd_ref(d, i)])
d, i = f32(2, 3, 4), ints(1, 2, 2, lo=0, hi=3, dtype="int64")
case("gather_nd", "batch_dims", [d, i], [gather_nd_ref(d, i, 1)], {"batch_dims": 1})
case("gather_nd", "empty", [f32(3, 2), np.zeros((1, 0), np.int32)], [np.zeros((0, 2), np.float32)])
error("gather_nd", "index_too_long", [f32(3, 2), ints(3, 1, lo=0, hi=2)])
error("gather_nd", "index_out_of_range", [f32(3, 2), np.array([[3]], np.int32)])


def scatter_combine(old, new, r):
    return {"update": new, "add": old + new, "mul": old * new, "min": np.minimum(old, new), "max": np.maximum(old, new)}[r]


def scatter_elements_ref(data, idx, upd, axis=0, r="update"):
    axis %= data.ndim
    out = data.copy()
    for p in np.ndindex(*idx.shape):
        q = list(p)
        q[axis] = idx[p]
        out[tuple(q)] = scatter_combine(out[tuple(q)], upd[p], r)
    return out


d, i, u = f32(3, 4), ints(2, 4, lo=-3, hi=3), f32(2, 4)
for r in ["update", "add", "mul", "min", "max"]:
    case("scatter_elements", r, [d, i, u], [scatter_elements_ref(d, i, u, 0, r)], {"reduction": r})
d, i, u = ints(2, 5), ints(2, 3, lo=0, hi=5, dtype="int64"), ints(2, 3)
case("scatter_elements", "int_axis_minus_1_add", [d, i, u], [scatter_elements_ref(d, i, u, -1, "add")],
     {"axis": -1, "reduction": "add"})
case("scatter_elements", "empty_updates", [d, ints(2, 0), ints(2, 0)], [d], {"axis": 1})
error("scatter_elements", "updates_shape", [d, i, ints(2, 2)])
error("scatter_elements", "bad_reduction", [d, i, u], {"reduction": "mean"})


def scatter_nd_ref(data, idx, upd, r="update"):
    m = idx.shape[0]
    out = data.copy()
    for p in np.ndindex(*idx.shape[1:]):
        q = tuple(idx[(slice(None),) + p])
        out[q] = scatter_combine(out[q], upd[p], r)
    return out


d = f32(4, 3)
i, u = np.array([[1, -1, 1]], np.int32), f32(3, 3)
for r in ["update", "add", "mul", "min", "max"]:
    case("scatter_nd", r, [d, i, u], [scatter_nd_ref(d, i, u, r)], {"mode": r})
i, u = np.array([[0, 3], [2, -1]], np.int64), f32(2)
case("scatter_nd", "elements", [d, i, u], [scatter_nd_ref(d, i, u)])
error("scatter_nd", "updates_shape", [d, i, f32(3)])
error("scatter_nd", "index_out_of_range", [d, np.array([[4]], np.int32), f32(1, 3)])


def one_hot_ref(idx, on, off, depth, axis, dtype):
    hot = idx[..., None] == np.arange(depth)
    out = np.where(hot, on, off).astype(dtype)
    return np.moveaxis(out, -1, axis if axis >= 0 else out.ndim + axis) if axis != -1 else out


i = ints(2, 3, lo=-1, hi=5)
on, off = np.float32(1.5), np.float32(-1.0)
case("one_hot", "last_axis_out_of_range_off", [i, on, off], [one_hot_ref(i, on, off, 4, -1, "float32")],
     {"depth": 4, "dtype": "float32"})
case("one_hot", "axis0_int32", [i, np.int32(7), np.int32(0)], [one_hot_ref(i, 7, 0, 3, 0, "int32")],
     {"depth": 3, "axis": 0, "dtype": "int32"})
i = ints(4, lo=0, hi=3, dtype="int64")
case("one_hot", "axis1_of_1d", [i, on, off], [one_hot_ref(i, on, off, 3, 1, "float64")],
     {"depth": 3, "axis": 1, "dtype": "float64"})
case("one_hot", "depth0", [i, on, off], [np.zeros((4, 0), np.float32)], {"depth": 0, "dtype": "float32"})
error("one_hot", "vector_on_value", [i, f32(2), off], {"depth": 3, "dtype": "float32"})
error("one_hot", "negative_depth", [i, on, off], {"depth": -2, "dtype": "float32"})


# ---------------------------------------------------------------- tile, repeat, reverse

x = f32(2, 3)
case("tile", "same_rank", [x], [np.tile(x, (2, 1))], {"reps": [2, 1]})
case("tile", "more_reps", [x], [np.tile(x, (2, 1, 3))], {"reps": [2, 1, 3]})
xi = ints(2, 1, 3)
case("tile", "fewer_reps_int", [xi], [np.tile(xi, (2,))], {"reps": [2]})
case("tile", "zero_reps", [x], [np.tile(x, (0, 2))], {"reps": [0, 2]})
error("tile", "negative_reps", [x], {"reps": [-1, 2]})
case("repeat", "axis0", [x], [np.repeat(x, 2, 0)], {"repeats": 2, "axis": 0})
case("repeat", "negative_axis_int", [xi], [np.repeat(xi, 3, -1)], {"repeats": 3, "axis": -1})
case("repeat", "empty", [np.zeros((0, 2), np.float32)], [np.zeros((0, 4), np.float32)], {"repeats": 2, "axis": 1})
error("repeat", "zero_repeats", [x], {"repeats": 0, "axis": 0})
error("repeat", "axis_out_of_range", [x], {"repeats": 2, "axis": 2})
case("reverse", "axis0", [x], [np.flip(x, 0)], {"axis": 0})
case("reverse", "negative_axis_int", [xi], [np.flip(xi, -1)], {"axis": -1})
x1 = f32(1, 4)
case("reverse", "size1_axis", [x1], [x1], {"axis": 0})
case("reverse", "empty", [np.zeros((0, 3), np.float32)], [np.zeros((0, 3), np.float32)], {"axis": 0})
error("reverse", "axis_out_of_range", [x], {"axis": -3})


# ---------------------------------------------------------------- sort, argsort, topk
# Stable sorts; descending keeps equal elements in their order (as TVM and onnxruntime).

def stable_argsort(x, axis, ascend):
    order = np.argsort(x if ascend else -x, axis=axis, kind="stable")
    return order


x = f32(3, 5)
x[0, 1] = x[0, 3]
case("sort", "ascending_last_axis", [x], [np.sort(x, -1)])
case("sort", "descending_axis0", [x], [-np.sort(-x, 0)], {"axis": 0, "is_ascend": False})
xi = ints(2, 4, lo=-3, hi=3)
case("sort", "int_ties", [xi], [np.sort(xi, 1)], {"axis": 1})
case("sort", "empty", [np.zeros((0, 3), np.float32)], [np.zeros((0, 3), np.float32)])
error("sort", "axis_out_of_range", [x], {"axis": 2})
case("argsort", "ascending", [x], [stable_argsort(x, -1, True).astype(np.int32)])
case("argsort", "descending_int64", [xi], [stable_argsort(xi, 1, False).astype(np.int64)],
     {"axis": 1, "is_ascend": False, "dtype": "int64"})
case("argsort", "axis0", [x], [stable_argsort(x, 0, True).astype(np.int32)], {"axis": 0})
error("argsort", "bool_rejected", [np.array([True, False])])


def topk_ref(x, k, axis, ascend):
    order = np.take(stable_argsort(x, axis, ascend), np.arange(k), axis=axis)
    return np.take_along_axis(x, order, axis), order


v, i = topk_ref(x, 2, -1, False)
case("topk", "both_k2", [x], [v, i.astype(np.int32)], {"k": 2})
v, i = topk_ref(x, 3, 0, True)
case("topk", "ascending_axis0_indices_int64", [x], [i.astype(np.int64)],
     {"k": 3, "axis": 0, "is_ascend": True, "ret_type": "indices", "dtype": "int64"})
v, i = topk_ref(xi, 4, 1, False)
case("topk", "values_whole_axis_ties", [xi], [v], {"k": 0, "ret_type": "values"})
case("topk", "empty", [np.zeros((0, 3), np.float32)], [np.zeros((0, 1), np.float32), np.zeros((0, 1), np.int32)], {"k": 1})
error("topk", "k_too_large", [x], {"k": 6})
error("topk", "bad_ret_type", [x], {"k": 1, "ret_type": "all"})

# A repeat count whose product with the dimension does not fit: an error, not a wrapped size.
error("tile", "reps_overflow", [np.ones((2, 3), np.float32)], {"reps": [2**62, 4]})
error("repeat", "repeats_overflow", [np.ones((2, 3), np.float32)], {"repeats": 2**62, "axis": 1})


# ---------------------------------------------------------------- fast_*, creation, trilu, prelu,
# sub-pixel, normalisation, searchsorted
# The fast approximations are checked against the exact functions within their documented bounds.

erf64 = np.vectorize(math.erf, otypes=[np.float64])
for op, fn, lo, hi in [("fast_exp", np.exp, -10, 10), ("fast_tanh", np.tanh, -12, 12), ("fast_erf", erf64, -5, 5)]:
    x = f32(4, 5, lo=lo, hi=hi)
    case(op, "float32", [x], [fn(d64(x))], out_dtypes=["float32"], atol=1e-6)
    case(op, "empty", [f32(0, 2)], [f32(0, 2)])
    x = RNG.uniform(lo, hi, (5,))
    case(op, "float64_exact", [x], [fn(x)])
    error(op, "int_rejected", [ints(3)])
x = np.array([-100.0, -88.0, 0.0, 88.0], np.float32)
case("fast_exp", "clamped_below", [x], [np.exp(d64(x))], out_dtypes=["float32"], atol=1e-6)

case("arange", "default_start_step", [], [np.arange(5, dtype=np.float32)], {"stop": 5})
case("arange", "negative_step_int32", [], [np.arange(10, 1, -3, dtype=np.int32)], {"start": 10, "stop": 1, "step": -3, "dtype": "int32"})
case("arange", "fractional_float64", [], [np.arange(0.5, 2.0, 0.25)], {"start": 0.5, "stop": 2.0, "step": 0.25, "dtype": "float64"})
case("arange", "empty", [], [np.zeros((0,), np.float32)], {"start": 3, "stop": 1})
error("arange", "zero_step", [], {"stop": 4, "step": 0})
error("arange", "missing_stop", [], {})
error("arange", "bool_dtype", [], {"stop": 2, "dtype": "bool"})

x = f32(2, 3)
case("full_like", "float32", [x, np.float32(1.5)], [np.full_like(x, 1.5)])
xi = ints(3, dtype="int64")
case("full_like", "converted_to_int64", [xi, np.float32(2.7)], [np.full_like(xi, 2)])
case("full_like", "bool_empty", [np.zeros((0, 2), bool), np.int32(1)], [np.zeros((0, 2), bool)])
error("full_like", "non_scalar_fill", [x, f32(1)])

x = f32(3, 4)
case("trilu", "upper", [x, np.int32(0)], [np.triu(x)])
xb = f32(2, 3, 3)
case("trilu", "lower_k1_batched", [xb, np.int64(1)], [np.tril(xb, 1)], {"upper": False})
xi = ints(4, 2)
case("trilu", "upper_negative_k_int", [xi, np.int32(-1)], [np.triu(xi, -1)])
case("trilu", "k_past_the_matrix", [x, np.int32(9)], [np.triu(x, 9)])
error("trilu", "rank1", [f32(3), np.int32(0)])
error("trilu", "float_k", [x, np.float32(0)])

x = f32(2, 3, 4)
a = f32(3)
case("nn.prelu", "axis1", [x, a], [np.where(x > 0, x, x * a[None, :, None])])
a4 = f32(4)
case("nn.prelu", "last_axis", [x, a4], [np.where(x > 0, x, x * a4)], {"axis": -1})
case("nn.prelu", "empty", [f32(0, 3), a], [f32(0, 3)])
error("nn.prelu", "alpha_length", [x, f32(2)])
error("nn.prelu", "int_rejected", [ints(2, 3), ints(3)])


def depth_to_space_ref(x, b, mode):
    n, c, h, w = x.shape
    if mode == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


def space_to_depth_ref(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


x = f32(2, 8, 2, 3)
case("nn.depth_to_space", "dcr", [x], [depth_to_space_ref(x, 2, "DCR")], {"block_size": 2})
case("nn.depth_to_space", "crd", [x], [depth_to_space_ref(x, 2, "CRD")], {"block_size": 2, "mode": "CRD"})
xi = ints(1, 9, 1, 2)
case("nn.depth_to_space", "block3_int", [xi], [depth_to_space_ref(xi, 3, "DCR")], {"block_size": 3})
error("nn.depth_to_space", "channels_not_divisible", [f32(1, 6, 2, 2)], {"block_size": 2})
error("nn.depth_to_space", "nhwc_rejected", [x], {"block_size": 2, "layout": "NHWC"})
error("nn.depth_to_space", "bad_mode", [x], {"block_size": 2, "mode": "XYZ"})
x = f32(2, 3, 4, 6)
case("nn.space_to_depth", "block2", [x], [space_to_depth_ref(x, 2)], {"block_size": 2})
case("nn.space_to_depth", "round_trip", [depth_to_space_ref(x, 1, "DCR")], [x], {"block_size": 1})
error("nn.space_to_depth", "height_not_divisible", [f32(1, 1, 3, 4)], {"block_size": 2})
error("nn.space_to_depth", "zero_block", [x], {"block_size": 0})


def instance_norm_ref(x, g, b, axis=1, eps=1e-5, center=True, scale=True):
    x = d64(x)
    ax = tuple(i for i in range(1, x.ndim) if i != axis % x.ndim)
    mean = x.mean(axis=ax, keepdims=True)
    var = x.var(axis=ax, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    shape = [1] * x.ndim
    shape[axis] = -1
    if scale:
        y = y * d64(g).reshape(shape)
    if center:
        y = y + d64(b).reshape(shape)
    return y


x, g, b = f32(2, 3, 4, 5), f32(3), f32(3)
case("nn.instance_norm", "nchw", [x, g, b], [instance_norm_ref(x, g, b)], out_dtypes=["float32"], atol=1e-5)
x3, g5, b5 = f32(2, 4, 5), f32(5), f32(5)
case("nn.instance_norm", "last_axis_no_center", [x3, g5, b5], [instance_norm_ref(x3, g5, b5, axis=-1, eps=1e-3, center=False)],
     {"axis": -1, "epsilon": 1e-3, "center": False}, out_dtypes=["float32"], atol=1e-5)
error("nn.instance_norm", "gamma_length", [x, f32(2), b])
error("nn.instance_norm", "rank2", [f32(2, 3), f32(3), f32(3)])


def lrn_ref(x, size=5, axis=1, bias=2.0, alpha=1e-4, beta=0.75):
    x = d64(x)
    xm = np.moveaxis(x, axis, 0)
    sq = np.zeros_like(xm)
    n = xm.shape[0]
    for c in range(n):
        lo = max(c - size // 2, 0)
        hi = min(c - size // 2 + size, n)
        sq[c] = (xm[lo:hi] ** 2).sum(axis=0)
    return np.moveaxis(xm / (bias + alpha / size * sq) ** beta, 0, axis)


x = f32(2, 6, 3, 3)
case("nn.lrn", "defaults", [x], [lrn_ref(x)], out_dtypes=["float32"])
case("nn.lrn", "size3_strong", [x], [lrn_ref(x, 3, 1, 1.0, 0.5, 0.5)], {"size": 3, "bias": 1.0, "alpha": 0.5, "beta": 0.5},
     out_dtypes=["float32"])
x2 = f32(4, 5)
case("nn.lrn", "even_size_last_axis", [x2], [lrn_ref(x2, 2, 1, 1.0, 1.0, 1.0)], {"size": 2, "axis": -1, "bias": 1.0, "alpha": 1.0, "beta": 1.0},
     out_dtypes=["float32"])
error("nn.lrn", "zero_size", [x], {"size": 0})
error("nn.lrn", "int_rejected", [ints(2, 3)])

seq = np.sort(f32(6))
seq[2] = seq[3]
vals = np.concatenate([f32(5), seq[2:4]])
case("searchsorted", "left_1d", [seq, vals], [np.searchsorted(seq, vals, "left").astype(np.int32)])
case("searchsorted", "right_int64", [seq, vals], [np.searchsorted(seq, vals, "right").astype(np.int64)], {"right": True, "dtype": "int64"})
rows = np.sort(ints(2, 5), axis=1)
v = ints(2, 3)
want = np.stack([np.searchsorted(rows[i], v[i]) for i in range(2)]).astype(np.int32)
case("searchsorted", "batched_rows_int", [rows, v], [want])
case("searchsorted", "empty_values", [seq, np.zeros((0,), np.float32)], [np.zeros((0,), np.int32)])
error("searchsorted", "leading_dims_differ", [np.sort(f32(3, 4), axis=1), f32(2, 2)])
error("searchsorted", "bad_dtype", [seq, vals], {"dtype": "float32"})
error("searchsorted", "scalar_sequence", [np.float32(1), np.float32(2)])
xi = ints(1, 2, 3, 6)
case("nn.space_to_depth", "block3_int", [xi], [space_to_depth_ref(xi, 3)], {"block_size": 3})
x3, g4, b4 = f32(3, 4, 2), f32(4), f32(4)
case("nn.instance_norm", "rank3_no_scale", [x3, g4, b4], [instance_norm_ref(x3, g4, b4, scale=False)], {"scale": False},
     out_dtypes=["float32"], atol=1e-5)


xgm = f32(2, 3, 4, 5)
case("nn.global_max_pool2d", "basic", [xgm], [xgm.max(axis=(2, 3), keepdims=True)])
xgmi = ints(1, 2, 3, 3, dtype="int8")
case("nn.global_max_pool2d", "int8", [xgmi], [xgmi.max(axis=(2, 3), keepdims=True)])
case("nn.global_max_pool2d", "1x1", [xg1], [xg1])
case("nn.global_max_pool2d", "empty_batch", [f32(0, 2, 3, 3)], [f32(0, 2, 1, 1)])
error("nn.global_max_pool2d", "rank3", [f32(2, 3, 4)])
error("nn.global_max_pool2d", "bad_layout", [xgm], {"layout": "NCHW4c"})


def adaptive_pool_ref(x, out_hw, kind):
    """TVM's adaptive windows: rows floor(i * H / OH) .. ceil((i + 1) * H / OH)."""
    n, c, h, w = x.shape
    oh, ow = out_hw
    out = np.zeros((n, c, oh, ow), dtype=x.dtype)
    for i in range(oh):
        r0, r1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        for j in range(ow):
            c0, c1 = (j * w) // ow, -((-(j + 1) * w) // ow)
            win = x[:, :, r0:r1, c0:c1]
            out[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
    return out


xa = f32(2, 3, 7, 5)
case("nn.adaptive_avg_pool2d", "7x5_to_3x2", [xa], [adaptive_pool_ref(d64(xa), (3, 2), "avg")],
     {"output_size": [3, 2]}, out_dtypes=["float32"])
case("nn.adaptive_avg_pool2d", "one_value_1", [xa], [d64(xa).mean(axis=(2, 3), keepdims=True)],
     {"output_size": [1]}, out_dtypes=["float32"])
case("nn.adaptive_avg_pool2d", "default_is_identity", [xa], [xa])
xa46 = f32(1, 1, 4, 6)
case("nn.adaptive_avg_pool2d", "larger_output", [xa46], [adaptive_pool_ref(d64(xa46), (5, 8), "avg")],
     {"output_size": [5, 8]}, out_dtypes=["float32"])
error("nn.adaptive_avg_pool2d", "int_rejected", [ints(1, 1, 4, 4)], {"output_size": [2]})
error("nn.adaptive_avg_pool2d", "zero_size", [xa], {"output_size": [0, 2]})
error("nn.adaptive_avg_pool2d", "three_values", [xa], {"output_size": [1, 2, 3]})

case("nn.adaptive_max_pool2d", "7x5_to_3x2", [xa], [adaptive_pool_ref(xa, (3, 2), "max")], {"output_size": [3, 2]})
xai = ints(1, 2, 5, 5)
case("nn.adaptive_max_pool2d", "int32_to_2", [xai], [adaptive_pool_ref(xai, (2, 2), "max")], {"output_size": [2]})
case("nn.adaptive_max_pool2d", "larger_output", [xa46], [adaptive_pool_ref(xa46, (5, 8), "max")],
     {"output_size": [5, 8]})
error("nn.adaptive_max_pool2d", "rank3", [f32(2, 3, 4)], {"output_size": [1]})


def pool1d_ref(x, kind, k, s, pad, dil=1, **kw):
    """A 1-d pool as a 2-d one of height 1 (pad: (left, right))."""
    return pool_ref(x[:, :, None, :], kind, (1, k), (1, s), (0, pad[0], 0, pad[1]), dil=(1, dil), **kw)[:, :, 0, :]


xp1 = f32(2, 3, 9)
case("nn.max_pool1d", "k3_s2", [xp1], [pool1d_ref(d64(xp1), "max", 3, 2, (0, 0))], {"pool_size": [3], "strides": [2]},
     out_dtypes=["float32"])
case("nn.max_pool1d", "pad_ceil_dilated", [xp1], [pool1d_ref(d64(xp1), "max", 2, 2, (1, 2), dil=2, ceil_mode=True)],
     {"pool_size": [2], "strides": [2], "padding": [1, 2], "dilation": [2], "ceil_mode": True}, out_dtypes=["float32"])
xp1i = ints(1, 2, 6)
case("nn.max_pool1d", "int32", [xp1i], [pool1d_ref(xp1i, "max", 2, 2, (0, 0)).astype(np.int32)],
     {"pool_size": [2], "strides": [2]})
error("nn.max_pool1d", "two_values", [xp1], {"pool_size": [2, 2]})
error("nn.max_pool1d", "rank4", [f32(1, 1, 2, 2)], {"pool_size": [1]})
error("nn.max_pool1d", "window_too_large", [f32(1, 1, 2)], {"pool_size": [3]})

case("nn.avg_pool1d", "k3_s2", [xp1], [pool1d_ref(d64(xp1), "avg", 3, 2, (0, 0))], {"pool_size": [3], "strides": [2]},
     out_dtypes=["float32"])
case("nn.avg_pool1d", "pad_excluded", [xp1], [pool1d_ref(d64(xp1), "avg", 3, 1, (1, 1))],
     {"pool_size": [3], "padding": [1]}, out_dtypes=["float32"])
case("nn.avg_pool1d", "pad_included_ceil", [xp1],
     [pool1d_ref(d64(xp1), "avg", 3, 2, (1, 0), ceil_mode=True, count_include_pad=True)],
     {"pool_size": [3], "strides": [2], "padding": [1, 0], "ceil_mode": True, "count_include_pad": True},
     out_dtypes=["float32"])
error("nn.avg_pool1d", "int_rejected", [xp1i], {"pool_size": [2]})
error("nn.avg_pool1d", "packed_layout", [xp1], {"pool_size": [2], "layout": "NCW4c"})



def conv1d_ref(x, w, stride=1, pad=(0, 0), dil=1, groups=1, acc=np.float64):
    """NCW/OIW convolution as a 2-d one of height 1 (pad: (left, right))."""
    return conv2d_ref(x[:, :, None, :], w[:, :, None, :], (1, stride), (0, pad[0], 0, pad[1]), (1, dil), groups,
                      acc)[:, :, 0, :]


xc1, wc1 = f32(2, 2, 9), f32(3, 2, 3)
case("nn.conv1d", "pad1", [xc1, wc1], [conv1d_ref(d64(xc1), d64(wc1), pad=(1, 1))],
     {"padding": [1], "channels": 3, "kernel_size": [3]}, out_dtypes=["float32"], atol=1e-5)
case("nn.conv1d", "stride2_dilation2_asymmetric", [xc1, wc1], [conv1d_ref(d64(xc1), d64(wc1), 2, (2, 0), 2)],
     {"strides": [2], "padding": [2, 0], "dilation": [2]}, out_dtypes=["float32"], atol=1e-5)
xc4, wc4 = f32(1, 4, 6), f32(4, 1, 3)
case("nn.conv1d", "depthwise", [xc4, wc4], [conv1d_ref(d64(xc4), d64(wc4), pad=(1, 1), groups=4)],
     {"groups": 4, "padding": [1, 1]}, out_dtypes=["float32"], atol=1e-5)
xc8, wc8 = ints(1, 2, 5, lo=-128, hi=128, dtype="int8"), ints(2, 2, 2, lo=-128, hi=128, dtype="int8")
case("nn.conv1d", "int8_to_int32", [xc8, wc8], [conv1d_ref(xc8, wc8, acc=np.int64).astype(np.int32)],
     {"out_dtype": "int32"})
error("nn.conv1d", "channels_mismatch", [xc1, wc1], {"channels": 4})
error("nn.conv1d", "kernel_too_large", [f32(1, 2, 2), wc1])
error("nn.conv1d", "two_strides", [xc1, wc1], {"strides": [1, 1]})
error("nn.conv1d", "packed_layout", [xc1, wc1], {"data_layout": "NCW2c"})


def l2_normalize_ref(x, eps, axis=None):
    x = d64(x)
    s = (x ** 2).sum(axis=None if axis is None else tuple(axis), keepdims=True)
    return x / np.sqrt(np.maximum(s, eps))


x = f32(2, 3, 4)
case("nn.l2_normalize", "axis1", [x], [l2_normalize_ref(x, 1e-10, [1])], {"eps": 1e-10, "axis": [1]},
     out_dtypes=["float32"])
case("nn.l2_normalize", "axes_neg", [x], [l2_normalize_ref(x, 1e-10, [0, -1])], {"eps": 1e-10, "axis": [0, -1]},
     out_dtypes=["float32"])
case("nn.l2_normalize", "all_axes", [x], [l2_normalize_ref(x, 1e-10)], {"eps": 1e-10}, out_dtypes=["float32"])
xs = (f32(2, 3) * 0.01).astype(np.float32)
case("nn.l2_normalize", "eps_floor", [xs], [l2_normalize_ref(xs, 1.0, [1])], {"eps": 1.0, "axis": [1]},
     out_dtypes=["float32"])
error("nn.l2_normalize", "axis_out_of_range", [x], {"eps": 1e-10, "axis": [3]})
error("nn.l2_normalize", "repeated_axis", [x], {"eps": 1e-10, "axis": [1, -2]})
error("nn.l2_normalize", "negative_eps", [x], {"eps": -1.0, "axis": [1]})
error("nn.l2_normalize", "int_rejected", [ints(2, 3)], {"eps": 1e-10, "axis": [1]})
error("nn.l2_normalize", "eps_missing", [x], {"axis": [1]})


x = f32(2, 3, 4)
for mode, np_mode in [("SYMMETRIC", "symmetric"), ("REFLECT", "reflect")]:
    pw = [[0, 0], [2, 1], [1, 3]] if mode == "SYMMETRIC" else [[1, 0], [2, 2], [0, 3]]
    case("nn.mirror_pad", mode.lower(), [x], [np.pad(x, pw, mode=np_mode)], {"mode": mode, "pad_width": pw})
xi = ints(3, 2)
case("nn.mirror_pad", "default_symmetric_int", [xi], [np.pad(xi, [[3, 3], [2, 0]], mode="symmetric")],
     {"pad_width": [[3, 3], [2, 0]]})
error("nn.mirror_pad", "symmetric_too_wide", [x], {"pad_width": [[0, 0], [4, 0], [0, 0]]})
error("nn.mirror_pad", "reflect_too_wide", [x], {"mode": "REFLECT", "pad_width": [[0, 0], [0, 3], [0, 0]]})
error("nn.mirror_pad", "negative_width", [x], {"pad_width": [[0, 0], [-1, 0], [0, 0]]})
error("nn.mirror_pad", "rank_mismatch", [x], {"pad_width": [[1, 1]]})
error("nn.mirror_pad", "bad_mode", [x], {"mode": "EDGE", "pad_width": [[0, 0], [1, 1], [0, 0]]})


def group_norm_ref(x, g, b, groups, axis=1, eps=1e-5, center=True, scale=True):
    x = np.moveaxis(d64(x), axis, 1)
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    mean = xg.mean(axis=2, keepdims=True)
    var = xg.var(axis=2, keepdims=True)
    y = ((xg - mean) / np.sqrt(var + eps)).reshape(x.shape)
    bshape = (1, c) + (1,) * (x.ndim - 2)
    if scale:
        y = y * d64(g).reshape(bshape)
    if center:
        y = y + d64(b).reshape(bshape)
    return np.moveaxis(y, 1, axis)


x = f32(2, 6, 3, 3)
g6, b6 = f32(6), f32(6)
case("nn.group_norm", "nchw_3_groups", [x, g6, b6], [group_norm_ref(x, g6, b6, 3)], {"num_groups": 3},
     out_dtypes=["float32"], atol=1e-5)
case("nn.group_norm", "one_group_no_scale", [x, g6, b6], [group_norm_ref(x, g6, b6, 1, scale=False)],
     {"num_groups": 1, "scale": False}, out_dtypes=["float32"], atol=1e-5)
x2 = f32(3, 4, 6)
case("nn.group_norm", "last_axis_2d_groups", [x2, g6, b6], [group_norm_ref(x2, g6, b6, 2, axis=-1, eps=1e-3, center=False)],
     {"num_groups": 2, "axis": -1, "epsilon": 1e-3, "center": False}, out_dtypes=["float32"], atol=1e-5)
error("nn.group_norm", "groups_do_not_divide", [x, g6, b6], {"num_groups": 4})
error("nn.group_norm", "zero_groups", [x, g6, b6], {"num_groups": 0})
error("nn.group_norm", "gamma_length", [x, f32(3), b6], {"num_groups": 3})
error("nn.group_norm", "batch_axis", [x, f32(2), f32(2)], {"num_groups": 1, "axis": 0})

# ---------------------------------------------------------------- the _like family, ndarray_size

x = f32(2, 6, 5)
case("reshape_like", "whole", [x, f32(10, 6)], [x.reshape(10, 6)])
case("reshape_like", "middle_axes", [x, f32(3, 2, 7)], [x.reshape(2, 3, 2, 5)],
     {"lhs_begin": 1, "lhs_end": -1, "rhs_begin": 0, "rhs_end": 2})
xi = ints(4, 3)
case("reshape_like", "rhs_tail_int", [xi, ints(9, 2, 6)], [xi.reshape(2, 6)], {"rhs_begin": -2})
case("reshape_like", "empty", [np.zeros((0, 3), np.float32), f32(3, 0)], [np.zeros((3, 0), np.float32)])
error("reshape_like", "count_mismatch", [x, f32(7, 9)])
error("reshape_like", "backward_range", [x, f32(60)], {"lhs_begin": 2, "lhs_end": 1})

x = f32(3, 1)
case("broadcast_to_like", "matrix", [x, f32(2, 3, 4)], [np.broadcast_to(x, (2, 3, 4))])
case("broadcast_to_like", "scalar_int", [np.int32(7), ints(2, 2)], [np.full((2, 2), 7, "int32")])
case("broadcast_to_like", "size_0", [f32(1), f32(0)], [np.zeros(0, np.float32)])
error("broadcast_to_like", "incompatible", [f32(3), f32(2, 4)])

x = f32(4, 5, 6)
case("slice_like", "leading_axes", [x, f32(2, 3)], [x[:2, :3]])
case("slice_like", "negative_axis", [x, f32(1, 1, 4)], [x[:, :, :4]], {"axes": [-1]})
xi = ints(4, 5, 6)
case("slice_like", "axes_0_2_int", [xi, ints(3, 9, 1)], [xi[:3, :, :1]], {"axes": [0, 2]})
case("slice_like", "to_size_0", [x, f32(0, 5)], [x[:0]])
error("slice_like", "target_longer", [x, f32(5)])
error("slice_like", "axis_out_of_range", [x, f32(2, 2)], {"axes": [3]})

x = f32(2, 3, 4)
case("collapse_sum_like", "lead_and_ones", [x, f32(3, 1)], [d64(x).sum(axis=0).sum(axis=1, keepdims=True)],
     out_dtypes=["float32"])
case("collapse_sum_like", "to_scalar", [x, np.float32(0)], [d64(x).sum()], out_dtypes=["float32"])
xi = ints(3, 4)
case("collapse_sum_like", "int_rows", [xi, ints(1, 4)], [xi.sum(axis=0, keepdims=True)], out_dtypes=["int32"])
case("collapse_sum_like", "same_shape", [x, f32(2, 3, 4)], [x])
error("collapse_sum_like", "does_not_broadcast_back", [x, f32(2, 4)])
error("collapse_sum_like", "bool", [np.ones((2, 2), bool), np.ones(2, bool)])

x = f32(2, 3) * 4
case("cast_like", "to_int32", [x, ints(1)], [x.astype("int32")])
xi = ints(3, 2)
case("cast_like", "int_to_float64", [xi, np.zeros(2)], [xi.astype(np.float64)])
case("cast_like", "to_bool", [np.array([0.0, 1.5, -2.0], np.float32), np.array(True)],
     [np.array([False, True, True])])
case("cast_like", "empty", [np.zeros((0, 2), np.float32), np.int64(0)], [np.zeros((0, 2), np.int64)])

case("ndarray_size", "default_int32", [f32(2, 3, 4)], [np.int32(24)])
case("ndarray_size", "int64_of_scalar", [np.float32(1)], [np.int64(1)], {"dtype": "int64"})
case("ndarray_size", "size_0", [np.zeros((3, 0), bool)], [np.int32(0)])
error("ndarray_size", "float_dtype", [f32(2)], {"dtype": "float32"})

# ---------------------------------------------------------------- meshgrid, sequence_mask, matrix_set_diag

a, b, c = f32(3), f32(4), f32(2)
case("meshgrid", "ij_three", [a, b, c], np.meshgrid(a, b, c, indexing="ij"))
case("meshgrid", "xy_three", [a, b, c], np.meshgrid(a, b, c, indexing="xy"), {"indexing": "xy"})
case("meshgrid", "xy_scalar_and_empty_int", [np.int32(5), np.zeros(0, "int32")],
     np.meshgrid(np.array([5], "int32"), np.zeros(0, "int32"), indexing="xy"), {"indexing": "xy"})
case("meshgrid", "one_vector", [a], [a])
error("meshgrid", "matrix_field", [f32(2, 2), a])
error("meshgrid", "mixed_dtypes", [a, ints(2)])
error("meshgrid", "bad_indexing", [a, b], {"indexing": "ji"})


def sequence_mask_ref(x, lens, axis=0, value=0.0):
    y = x.copy()
    for bi, n in enumerate(lens):
        if axis == 0:
            y[max(n, 0):, bi] = value
        else:
            y[bi, max(n, 0):] = value
    return y


x = f32(5, 3, 2)
lens = np.array([2, 5, 0], "int32")
case("sequence_mask", "time_major", [x, lens], [sequence_mask_ref(x, lens)])
x2 = f32(3, 4)
lens2 = np.array([1, 7, 3], "int64")
case("sequence_mask", "batch_major_value", [x2, lens2], [sequence_mask_ref(x2, lens2, 1, -1.5)],
     {"axis": 1, "mask_value": -1.5})
xi = ints(4, 2, 2)
lens3 = np.array([-1, 3], "int32")
case("sequence_mask", "int_negative_length", [xi, lens3], [sequence_mask_ref(xi, lens3, 0, 9)], {"mask_value": 9.0})
case("sequence_mask", "empty_time", [np.zeros((0, 2), np.float32), lens3], [np.zeros((0, 2), np.float32)])
error("sequence_mask", "axis_2", [x, lens], {"axis": 2})
error("sequence_mask", "length_shape", [x, np.array([1, 2], "int32")])
error("sequence_mask", "float_lengths", [x, np.zeros(3, np.float32)])
error("sequence_mask", "rank_1", [f32(3), np.array([1], "int32")])


def matrix_set_diag_ref(x, diag, k1=0, k2=0, super_right=False, sub_right=False):
    """TensorFlow's MatrixSetDiagV3, written out: diagonal row k2 - k holds diagonal k."""
    y = x.copy()
    m, n = x.shape[-2:]
    max_len = max(min(m + min(k2, 0), n - max(k1, 0)), 0)
    for idx in np.ndindex(*x.shape):
        i, j = idx[-2:]
        k = j - i
        if not k1 <= k <= k2:
            continue
        length = min(m + min(k, 0), n - max(k, 0))
        right = super_right if k >= 0 else sub_right
        col = min(i, j) + (max_len - length if right else 0)
        src = idx[:-2] + ((k2 - k,) if k1 != k2 else ()) + (col,)
        y[idx] = diag[src]
    return y


x = f32(2, 3, 4)
d = f32(2, 3)
case("matrix_set_diag", "main_diagonal", [x, d], [matrix_set_diag_ref(x, d)])
d = f32(2, 3, 3)
case("matrix_set_diag", "band_right_left", [x, d], [matrix_set_diag_ref(x, d, -1, 1, True, False)],
     {"k1": -1, "k2": 1, "super_diag_right_align": True})
x2 = ints(4, 3)
d2 = ints(2, 3)
case("matrix_set_diag", "sub_band_left_right_int", [x2, d2], [matrix_set_diag_ref(x2, d2, -2, -1, False, True)],
     {"k1": -2, "k2": -1, "sub_diag_right_align": True})
x3 = f32(3, 3)
d3 = f32(2)
case("matrix_set_diag", "one_superdiagonal", [x3, d3], [matrix_set_diag_ref(x3, d3, 1, 1)], {"k1": 1, "k2": 1})
error("matrix_set_diag", "diagonal_length", [x, f32(2, 4)])
error("matrix_set_diag", "k1_above_k2", [x, d], {"k1": 1, "k2": -1})
error("matrix_set_diag", "diagonal_off_the_matrix", [x3, f32(1)], {"k1": 3, "k2": 3})
error("matrix_set_diag", "dtype_mismatch", [x3, ints(3)])

# ---------------------------------------------------------------- layout_transform

x = f32(2, 16, 3, 2)
blocked = x.reshape(2, 2, 8, 3, 2).transpose(0, 1, 3, 4, 2)
case("layout_transform", "nchw_to_nchw8c", [x], [blocked], {"src_layout": "NCHW", "dst_layout": "NCHW8c"})
case("layout_transform", "nchw8c_to_nchw", [blocked], [x], {"src_layout": "NCHW8c", "dst_layout": "NCHW"})
case("layout_transform", "nchw8c_to_nhwc", [blocked], [x.transpose(0, 2, 3, 1)],
     {"src_layout": "NCHW8c", "dst_layout": "NHWC"})
case("layout_transform", "nchw8c_to_nchw4c", [blocked], [x.reshape(2, 4, 4, 3, 2).transpose(0, 1, 3, 4, 2)],
     {"src_layout": "NCHW8c", "dst_layout": "NCHW4c"})
xi = ints(2, 3, 4)
case("layout_transform", "nhw_to_whn_int", [xi], [xi.transpose(2, 1, 0)], {"src_layout": "NHW", "dst_layout": "WHN"})
error("layout_transform", "not_divisible", [f32(1, 12, 2, 2)], {"src_layout": "NCHW", "dst_layout": "NCHW8c"})
error("layout_transform", "rank_mismatch", [f32(2, 3)], {"src_layout": "NCHW", "dst_layout": "NHWC"})
error("layout_transform", "axes_differ", [f32(1, 2, 3, 4)], {"src_layout": "NCHW", "dst_layout": "NCDW"})
error("layout_transform", "bad_block", [blocked], {"src_layout": "NCHW4c", "dst_layout": "NCHW"})


# ---------------------------------------------------------------- image resampling (TVM topi/image/resize.py)

def resize_coord(mode, n_in, n_out, roi=(0.0, 0.0)):
    x = np.arange(n_out, dtype=np.float64)
    scale = n_in / n_out
    if mode == "half_pixel":
        return (x + 0.5) * scale - 0.5
    if mode == "align_corners":
        return x * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros(n_out)
    if mode == "asymmetric":
        return x * scale
    if mode == "pytorch_half_pixel":
        return (x + 0.5) * scale - 0.5 if n_out > 1 else np.zeros(n_out)
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) * scale
    s, e = roi
    if n_out > 1:
        return s * (n_in - 1) + x * (e - s) * (n_in - 1) / (n_out - 1)
    return np.full(n_out, 0.5 * (s + e) * (n_in - 1))


def resize_axis_matrix(n_in, n_out, method, mode, rounding, alpha, exclude, roi):
    """(n_out, n_in) weights of one axis, clamped taps added up; and the outside mask."""
    c = resize_coord(mode, n_in, n_out, roi)
    m = np.zeros((n_out, n_in))
    clamp = lambda i: min(max(int(i), 0), n_in - 1)
    for o, co in enumerate(c):
        if method == "nearest_neighbor":
            r = rounding or ("round" if mode == "align_corners" else "floor")
            i = {"round": np.round(co), "round_prefer_floor": np.ceil(co - 0.5),
                 "round_prefer_ceil": np.floor(co + 0.5), "floor": np.floor(co + 1e-5),
                 "ceil": np.ceil(co - 1e-5)}[r]
            m[o, clamp(i)] += 1.0
        elif method == "linear":
            f = np.floor(co)
            m[o, clamp(f)] += 1.0 - (co - f)
            m[o, clamp(f + 1)] += co - f
        else:
            f = np.floor(co)
            t = co - f
            a = alpha
            w = [a * (t**3 - 2 * t**2 + t), (a + 2) * t**3 - (3 + a) * t**2 + 1,
                 -(a + 2) * t**3 + (3 + 2 * a) * t**2 - a * t, -a * t**3 + a * t**2]
            idx = [int(f) - 1 + k for k in range(4)]
            if exclude:
                w = [0.0 if not 0 <= i < n_in else wk for wk, i in zip(w, idx)]
                w = [wk / sum(w) for wk in w]
            for wk, i in zip(w, idx):
                m[o, clamp(i)] += wk
    outside = (c < 0) | (c > n_in - 1) if mode == "tf_crop_and_resize" else np.zeros(n_out, bool)
    return m, outside


def resize_ref(x, size, layout, method="linear", mode="half_pixel", rounding="", alpha=-0.5,
               exclude=0, extrap=0.0, roi=None):
    nsp = len(size)
    axes = list(range(2, 2 + nsp)) if layout[1] == "C" else list(range(1, 1 + nsp))
    roi = roi or [0.0] * (2 * nsp)
    y = d64(x)
    outside_any = None
    for k, (a, n_out) in enumerate(zip(axes, size)):
        m, out_k = resize_axis_matrix(y.shape[a], n_out, method, mode, rounding, alpha, exclude,
                                      (roi[k], roi[k + nsp]))
        y = np.moveaxis(np.tensordot(m, np.moveaxis(y, a, 0), axes=(1, 0)), 0, a)
        shape = [1] * x.ndim
        shape[a] = n_out
        o = out_k.reshape(shape)
        outside_any = o if outside_any is None else (outside_any | o)
    return np.where(outside_any, extrap, y)


x = f32(2, 3, 4, 5)
for method in ["nearest_neighbor", "linear", "cubic"]:
    for mode in ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn"]:
        a = {"size": [7, 3], "method": method, "coordinate_transformation_mode": mode}
        case("image.resize2d", f"{method}_{mode}", [x], [resize_ref(x, [7, 3], "NCHW", method, mode)], a,
             out_dtypes=["float32"], atol=1e-5)
for r in ["round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
    a = {"size": [8, 10], "method": "nearest_neighbor", "coordinate_transformation_mode": "asymmetric",
         "rounding_method": r}
    case("image.resize2d", f"rounding_{r}", [x], [resize_ref(x, [8, 10], "NCHW", "nearest_neighbor", "asymmetric", r)],
         a, out_dtypes=["float32"])
a = {"size": [6, 9], "method": "cubic", "cubic_alpha": -0.75, "cubic_exclude": 1}
case("image.resize2d", "cubic_alpha_exclude", [x], [resize_ref(x, [6, 9], "NCHW", "cubic", alpha=-0.75, exclude=1)],
     a, out_dtypes=["float32"], atol=1e-5)
roi = [0.1, -0.2, 0.9, 1.3]
a = {"size": [5, 6], "coordinate_transformation_mode": "tf_crop_and_resize", "roi": roi, "extrapolation_value": -7.5}
case("image.resize2d", "tf_crop_and_resize", [x], [resize_ref(x, [5, 6], "NCHW", roi=roi, mode="tf_crop_and_resize",
     extrap=-7.5)], a, out_dtypes=["float32"], atol=1e-5)
xh = f32(1, 4, 3, 2)
case("image.resize2d", "nhwc_linear", [xh], [resize_ref(xh, [2, 5], "NHWC")], {"size": [2, 5], "layout": "NHWC"},
     out_dtypes=["float32"], atol=1e-5)
x1 = f32(1, 1, 1, 1)
case("image.resize2d", "size_one_dims", [x1], [resize_ref(x1, [3, 1], "NCHW", "cubic")],
     {"size": [3, 1], "method": "cubic"}, out_dtypes=["float32"], atol=1e-5)
xi = ints(1, 2, 3, 3, lo=0, hi=50)
case("image.resize2d", "int_nearest_to_float", [xi],
     [resize_ref(xi, [5, 4], "NCHW", "nearest_neighbor")],
     {"size": [5, 4], "method": "nearest_neighbor", "out_dtype": "float32"}, out_dtypes=["float32"])
error("image.resize2d", "packed_layout", [x], {"size": [2, 2], "layout": "NCHW4c"})
error("image.resize2d", "size_length", [x], {"size": [2]})
error("image.resize2d", "size_missing", [x], {})
error("image.resize2d", "negative_size", [x], {"size": [2, -1]})
error("image.resize2d", "rank3", [f32(2, 3, 4)], {"size": [2, 2]})
error("image.resize2d", "bad_method", [x], {"size": [2, 2], "method": "bilinear"})
error("image.resize2d", "bad_mode", [x], {"size": [2, 2], "coordinate_transformation_mode": "corners"})
error("image.resize2d", "roi_length", [x], {"size": [2, 2], "coordinate_transformation_mode": "tf_crop_and_resize",
                                            "roi": [0.0, 1.0]})
error("image.resize2d", "empty_source", [f32(1, 1, 0, 2)], {"size": [2, 2]})
error("image.resize2d", "bool_rejected", [np.zeros((1, 1, 2, 2), bool)], {"size": [2, 2]})

x = f32(2, 3, 6)
for method in ["nearest_neighbor", "linear", "cubic"]:
    case("image.resize1d", f"{method}_ncw", [x], [resize_ref(x, [4], "NCW", method)], {"size": [4], "method": method},
         out_dtypes=["float32"], atol=1e-5)
xw = f32(2, 5, 3)
case("image.resize1d", "nwc_align_corners", [xw], [resize_ref(xw, [9], "NWC", "linear", "align_corners")],
     {"size": [9], "layout": "NWC", "coordinate_transformation_mode": "align_corners"}, out_dtypes=["float32"],
     atol=1e-5)
error("image.resize1d", "size_length", [x], {"size": [2, 2]})
error("image.resize1d", "layout", [x], {"size": [2], "layout": "NCHW"})

x = f32(1, 2, 3, 4, 2)
for method in ["nearest_neighbor", "linear", "cubic"]:
    case("image.resize3d", f"{method}_ncdhw", [x], [resize_ref(x, [2, 5, 3], "NCDHW", method)],
         {"size": [2, 5, 3], "method": method}, out_dtypes=["float32"], atol=1e-5)
xd = f32(1, 3, 2, 2, 2)
case("image.resize3d", "ndhwc_asymmetric", [xd], [resize_ref(xd, [4, 4, 1], "NDHWC", "linear", "asymmetric")],
     {"size": [4, 4, 1], "layout": "NDHWC", "coordinate_transformation_mode": "asymmetric"}, out_dtypes=["float32"],
     atol=1e-5)
error("image.resize3d", "size_length", [x], {"size": [2, 2]})


def upsampling_ref(x, scales, layout, method, mode):
    nsp = len(scales)
    axes = list(range(2, 2 + nsp)) if layout[1] == "C" else list(range(1, 1 + nsp))
    size = [int(np.round(x.shape[a] * s)) for a, s in zip(axes, scales)]
    return resize_ref(x, size, layout, method, mode)


x = f32(1, 2, 3, 4)
case("nn.upsampling", "nearest_default", [x], [upsampling_ref(x, [2, 2], "NCHW", "nearest_neighbor", "asymmetric")],
     {"scale_h": 2.0, "scale_w": 2.0}, out_dtypes=["float32"])
case("nn.upsampling", "bilinear_align_corners", [x],
     [upsampling_ref(x, [1.5, 2.5], "NCHW", "linear", "align_corners")],
     {"scale_h": 1.5, "scale_w": 2.5, "method": "bilinear", "align_corners": True}, out_dtypes=["float32"], atol=1e-5)
case("nn.upsampling", "bicubic_asymmetric", [x], [upsampling_ref(x, [2, 1], "NCHW", "cubic", "asymmetric")],
     {"scale_h": 2.0, "scale_w": 1.0, "method": "bicubic"}, out_dtypes=["float32"], atol=1e-5)
xh = f32(2, 3, 4, 2)
case("nn.upsampling", "nhwc_nearest", [xh], [upsampling_ref(xh, [3, 0.5], "NHWC", "nearest_neighbor", "asymmetric")],
     {"scale_h": 3.0, "scale_w": 0.5, "layout": "NHWC"}, out_dtypes=["float32"])
xi = ints(1, 1, 2, 2)
case("nn.upsampling", "int_nearest", [xi], [upsampling_ref(xi, [2, 3], "NCHW", "nearest_neighbor", "asymmetric")],
     {"scale_h": 2, "scale_w": 3}, out_dtypes=["int32"])
error("nn.upsampling", "zero_scale", [x], {"scale_h": 0.0})
error("nn.upsampling", "bad_method", [x], {"method": "linear"})
error("nn.upsampling", "layout", [x], {"layout": "NCDHW"})

x = f32(1, 2, 2, 3, 2)
case("nn.upsampling3d", "nearest_default", [x],
     [upsampling_ref(x, [2, 2, 2], "NCDHW", "nearest_neighbor", "half_pixel")],
     {"scale_d": 2.0, "scale_h": 2.0, "scale_w": 2.0}, out_dtypes=["float32"])
case("nn.upsampling3d", "trilinear_align_corners", [x],
     [upsampling_ref(x, [1.5, 2, 1], "NCDHW", "linear", "align_corners")],
     {"scale_d": 1.5, "scale_h": 2.0, "method": "trilinear", "coordinate_transformation_mode": "align_corners"},
     out_dtypes=["float32"], atol=1e-5)
xd = f32(1, 2, 2, 2, 3)
case("nn.upsampling3d", "ndhwc_trilinear", [xd], [upsampling_ref(xd, [2, 1, 2], "NDHWC", "linear", "half_pixel")],
     {"scale_d": 2.0, "scale_w": 2.0, "layout": "NDHWC", "method": "trilinear"}, out_dtypes=["float32"], atol=1e-5)
error("nn.upsampling3d", "bad_method", [x], {"method": "bilinear"})


# ---------------------------------------------------------------- transposed convolution

def conv2d_transpose_ref(x, w, strides=(1, 1), pad=(0, 0, 0, 0), dil=(1, 1), opad=(0, 0), groups=1):
    """TVM's topi formulation: the data dilated by the strides, padded by dil * (k - 1) - pad
    (plus output_padding at the bottom/right; a negative pad crops), convolved at stride 1
    with the spatially flipped IOHW weight regrouped to OIHW."""
    x, w = d64(x), d64(w)
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    xd = np.zeros((n, c, (h - 1) * strides[0] + 1, (wd - 1) * strides[1] + 1))
    xd[:, :, ::strides[0], ::strides[1]] = x
    sides = [dil[0] * (kh - 1) - pad[0], dil[1] * (kw - 1) - pad[1],
             dil[0] * (kh - 1) - pad[2] + opad[0], dil[1] * (kw - 1) - pad[3] + opad[1]]
    xd = np.pad(xd, [(0, 0), (0, 0), (max(sides[0], 0), max(sides[2], 0)), (max(sides[1], 0), max(sides[3], 0))])
    t, l = max(-sides[0], 0), max(-sides[1], 0)
    b, r = xd.shape[2] - max(-sides[2], 0), xd.shape[3] - max(-sides[3], 0)
    xd = xd[:, :, t:b, l:r]
    cg = c // groups
    wc = np.zeros((og * groups, cg, kh, kw))
    for g in range(groups):
        for oo in range(og):
            wc[g * og + oo] = w[g * cg:(g + 1) * cg, oo, ::-1, ::-1]
    return conv2d_ref(xd, wc, dil=dil, groups=groups)


x = f32(1, 2, 3, 4)
w = f32(2, 3, 3, 2)
case("nn.conv2d_transpose", "default", [x, w], [conv2d_transpose_ref(x, w)], {}, out_dtypes=["float32"], atol=1e-5)
case("nn.conv2d_transpose", "stride2_pad1_output_padding", [x, w],
     [conv2d_transpose_ref(x, w, (2, 2), (1, 1, 1, 1), opad=(1, 0))],
     {"strides": [2, 2], "padding": [1, 1], "output_padding": [1, 0], "channels": 3, "kernel_size": [3, 2]},
     out_dtypes=["float32"], atol=1e-5)
case("nn.conv2d_transpose", "asymmetric_pad_dilation", [x, w],
     [conv2d_transpose_ref(x, w, (3, 1), (0, 1, 2, 0), dil=(2, 2))],
     {"strides": [3, 1], "padding": [0, 1, 2, 0], "dilation": [2, 2]}, out_dtypes=["float32"], atol=1e-5)
xg, wg = f32(2, 4, 2, 3), f32(4, 1, 2, 2)
case("nn.conv2d_transpose", "groups2", [xg, wg], [conv2d_transpose_ref(xg, wg, (2, 1), groups=2)],
     {"strides": [2, 1], "groups": 2}, out_dtypes=["float32"], atol=1e-5)
x1, w1 = f32(1, 1, 1, 1), f32(1, 1, 1, 1)
case("nn.conv2d_transpose", "size_one", [x1, w1], [conv2d_transpose_ref(x1, w1, (2, 2), opad=(1, 1))],
     {"strides": [2, 2], "output_padding": [1, 1]}, out_dtypes=["float32"], atol=1e-6)
xi, wi = ints(1, 2, 2, 2, dtype="int8"), ints(2, 1, 2, 2, dtype="int8")
case("nn.conv2d_transpose", "int8_to_int32", [xi, wi], [conv2d_transpose_ref(xi, wi, (2, 2))],
     {"strides": [2, 2], "out_dtype": "int32"}, out_dtypes=["int32"])
error("nn.conv2d_transpose", "channel_mismatch", [x, f32(3, 3, 3, 2)])
error("nn.conv2d_transpose", "channels_attr", [x, w], {"channels": 4})
error("nn.conv2d_transpose", "output_padding_not_below_stride", [x, w], {"output_padding": [1, 1]})
error("nn.conv2d_transpose", "padding_too_large", [x, w], {"padding": [3, 0]})
error("nn.conv2d_transpose", "oihw_layout", [x, w], {"kernel_layout": "OIHW"})
error("nn.conv2d_transpose", "nhwc_layout", [x, w], {"data_layout": "NHWC"})
error("nn.conv2d_transpose", "groups_do_not_divide", [f32(1, 3, 2, 2), f32(3, 1, 2, 2)], {"groups": 2})
error("nn.conv2d_transpose", "rank3", [f32(2, 3, 4), w])

x = f32(2, 2, 5)
w = f32(2, 3, 3)
for name, a, kw in [("default", {}, {}),
                    ("stride2_pad_output_padding", {"strides": [2], "padding": [1, 2], "output_padding": [1]},
                     {"strides": (1, 2), "pad": (0, 1, 0, 2), "opad": (0, 1)}),
                    ("dilation3_pad1", {"dilation": [3], "padding": [1]}, {"dil": (1, 3), "pad": (0, 1, 0, 1)})]:
    ref = conv2d_transpose_ref(x[:, :, None, :], w[:, :, None, :], **kw)[:, :, 0, :]
    case("nn.conv1d_transpose", name, [x, w], [ref], a, out_dtypes=["float32"], atol=1e-5)
error("nn.conv1d_transpose", "two_strides", [x, w], {"strides": [1, 1]})
error("nn.conv1d_transpose", "layout", [x, w], {"kernel_layout": "OIW"})


xs = f32(3, 4, lo=-10, hi=10)
case("nn.fast_softmax", "last_axis", [xs], [softmax_ref(xs, -1)], out_dtypes=["float32"], atol=1e-5)
case("nn.fast_softmax", "axis0_size_one", [xs[:1]], [softmax_ref(xs[:1], 0)], {"axis": 0}, out_dtypes=["float32"],
     atol=1e-6)
big = np.array([[1000.0, 1001.0, 999.0, -1000.0]], np.float32)
case("nn.fast_softmax", "large_values", [big], [softmax_ref(big, -1)], out_dtypes=["float32"], atol=1e-5)
error("nn.fast_softmax", "axis_out_of_range", [xs], {"axis": -3})
error("nn.fast_softmax", "int_rejected", [ints(2, 3)])


# ---------------------------------------------------------------- losses (topi.nn.loss)

pr = RNG.uniform(0.05, 1.0, (3, 4)).astype(np.float32)
tg = RNG.uniform(0.0, 1.0, (3, 4)).astype(np.float32)
case("nn.cross_entropy", "basic", [pr, tg], [-(np.log(d64(pr)) * d64(tg)).sum() / 3], out_dtypes=["float32"],
     atol=1e-5)
case("nn.cross_entropy", "batch_one", [pr[:1], tg[:1]], [-(np.log(d64(pr[:1])) * d64(tg[:1])).sum()],
     out_dtypes=["float32"], atol=1e-5)
case("nn.cross_entropy", "float64", [d64(pr), d64(tg)], [-(np.log(d64(pr)) * d64(tg)).sum() / 3],
     out_dtypes=["float64"], atol=1e-12)
error("nn.cross_entropy", "shape_mismatch", [pr, tg[:2]])
error("nn.cross_entropy", "rank3", [f32(1, 2, 3), f32(1, 2, 3)])


def nll_loss_ref(p, t, w, reduction="mean", ignore_index=-100):
    p, w = d64(p), d64(w)
    losses = np.zeros(t.shape)
    wsum = 0.0
    for q in np.ndindex(*t.shape):
        c = int(t[q])
        if c == ignore_index:
            continue
        losses[q] = -p[(q[0], c) + q[1:]] * w[c]
        wsum += w[c]
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.sum() / wsum


lp = f32(4, 3)
tt = np.array([0, 2, 1, 2], np.int32)
wt = RNG.uniform(0.5, 1.5, 3).astype(np.float32)
case("nn.nll_loss", "mean", [lp, tt, wt], [nll_loss_ref(lp, tt, wt)], out_dtypes=["float32"], atol=1e-5)
case("nn.nll_loss", "sum_ignore", [lp, tt, wt], [nll_loss_ref(lp, tt, wt, "sum", 2)],
     {"reduction": "sum", "ignore_index": 2}, out_dtypes=["float32"], atol=1e-5)
lp4 = f32(2, 3, 2, 1)
t4 = np.array([[[1], [0]], [[2], [1]]], np.int64)
case("nn.nll_loss", "none_spatial", [lp4, t4, wt], [nll_loss_ref(lp4, t4, wt, "none")], {"reduction": "none"},
     out_dtypes=["float32"], atol=1e-6)
error("nn.nll_loss", "target_out_of_range", [lp, np.array([0, 3, 1, 2], np.int32), wt])
error("nn.nll_loss", "float_targets", [lp, f32(4), wt])
error("nn.nll_loss", "target_shape", [lp, tt[:3], wt])
error("nn.nll_loss", "weights_length", [lp, tt, wt[:2]])
error("nn.nll_loss", "bad_reduction", [lp, tt, wt], {"reduction": "max"})

# ---------------------------------------------------------------- qnn (TVM v0.16 canonicalizations)
# Written from TVM's lowering, not from the Rust: requantization is exact rational arithmetic on
# TVM's 31-bit significand (Python ints and Fractions) with the rounding stated explicitly;
# quantize/dequantize are float32 as TVM computes them.

from fractions import Fraction

QRANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "int32": (-2 ** 31, 2 ** 31 - 1)}


def sc(v):
    return np.float32(v)


def zp(v):
    return np.int32(v)


def round_away(v):
    """Round half away from zero (C `round`, TVM's `round`), exactly, on float64 or Fraction."""
    s = -1 if v < 0 else 1
    return s * math.floor(abs(v) + Fraction(1, 2))


def tvm_multiplier(m):
    """TVM GetFixedPointMultiplierShift: m ~ sig * 2^(e - 31), sig a 31-bit integer."""
    if m == 0:
        return 0, 0
    f, e = math.frexp(m)
    sig = round_away(Fraction(f) * 2 ** 31)
    if sig == 2 ** 31:
        sig, e = sig // 2, e + 1
    return sig, e


def fixed_mul(x, m, rounding="UPWARD"):
    """x * m with TVM's fixed-point multiplier: UPWARD rounds ties up, TONEAREST away from 0."""
    sig, e = tvm_multiplier(m)
    v = Fraction(int(x) * sig * 2 ** max(e, 0), 2 ** (31 + max(-e, 0)))
    return math.floor(v + Fraction(1, 2)) if rounding == "UPWARD" else round_away(v)


def requant(x, s_in, z_in, s_out, z_out, rounding="UPWARD"):
    """One value of qnn.requantize before saturation (scales are float32, the ratio float64)."""
    m = float(np.float32(s_in)) / float(np.float32(s_out))
    shifted = int(x) - int(z_in)
    scaled = shifted if np.float32(s_in) == np.float32(s_out) else fixed_mul(shifted, m, rounding)
    return scaled + int(z_out)


def saturate(values, dtype):
    lo, hi = QRANGE[dtype]
    return np.clip(np.asarray(values, dtype=object), lo, hi).astype(dtype)


def per_channel(a, shape, axis):
    """Parameter a (scalar or 1-d) broadcast against a tensor of shape along axis."""
    a = np.asarray(a)
    if a.ndim == 0:
        return np.broadcast_to(a, shape)
    view = [1] * len(shape)
    view[axis] = a.shape[0]
    return np.broadcast_to(a.reshape(view), shape)


def quantize_ref(x, s, z, dtype="int8", axis=-1):
    ss, zz = per_channel(s, x.shape, axis), per_channel(z, x.shape, axis)
    scaled = (x.astype(np.float32) / ss.astype(np.float32)).astype(np.float64)
    # TVM adds the zero point in float32 after rounding.
    vals = [int(np.float32(round_away(v)) + np.float32(q)) for v, q in zip(scaled.reshape(-1), zz.reshape(-1))]
    return saturate(vals, dtype).reshape(x.shape)


def dequantize_ref(x, s, z, axis=-1):
    ss, zz = per_channel(s, x.shape, axis), per_channel(z, x.shape, axis)
    return (x.astype(np.int32) - zz.astype(np.int32)).astype(np.float32) * ss.astype(np.float32)


def requantize_ref(x, s_in, z_in, s_out, z_out, dtype="int8", axis=-1, rounding="UPWARD"):
    ss, zz = per_channel(s_in, x.shape, axis), per_channel(z_in, x.shape, axis)
    vals = [requant(v, a, b, s_out, z_out, rounding) for v, a, b in zip(x.reshape(-1), ss.reshape(-1), zz.reshape(-1))]
    return saturate(vals, dtype).reshape(x.shape)


xq = np.array([[-1.0, -0.25, 0.0, 0.26], [0.75, -1.25, 100.0, -100.0]], np.float32)
case("qnn.quantize", "int8_ties_saturate", [xq, sc(0.5), zp(3)], [quantize_ref(xq, 0.5, 3)])
case("qnn.quantize", "uint8", [xq, sc(0.5), zp(128)], [quantize_ref(xq, 0.5, 128, "uint8")], {"out_dtype": "uint8"})
case("qnn.quantize", "int32", [xq * 1e6, sc(1e-3), zp(-7)], [quantize_ref(xq * 1e6, 1e-3, -7, "int32")],
     {"out_dtype": "int32"})
xc = f32(2, 3, 4, lo=-3, hi=3)
sch, zch = np.array([0.02, 0.05, 0.1], np.float32), np.array([0, -5, 7], np.int32)
case("qnn.quantize", "per_channel_axis1", [xc, sch, zch], [quantize_ref(xc, sch, zch, axis=1)], {"axis": 1})
case("qnn.quantize", "scalar_data", [np.float32(1.3), sc(0.1), zp(0)], [quantize_ref(np.float32(1.3), 0.1, 0)])
error("qnn.quantize", "int_data", [ints(3, dtype="int8"), sc(0.5), zp(0)])
error("qnn.quantize", "float64_scale", [xq, np.float64(0.5), zp(0)])
error("qnn.quantize", "float_zero_point", [xq, sc(0.5), np.float32(0)])
error("qnn.quantize", "channel_count", [xc, sch[:2], zp(0)], {"axis": 1})
error("qnn.quantize", "axis_out_of_range", [xc, sch, zch], {"axis": 3})
error("qnn.quantize", "float_out_dtype", [xq, sc(0.5), zp(0)], {"out_dtype": "float32"})

xd = np.array([[-128, -1, 0, 127], [5, 6, 7, 8]], np.int8)
case("qnn.dequantize", "int8", [xd, sc(0.25), zp(-2)], [dequantize_ref(xd, 0.25, -2)])
xdu = np.array([0, 128, 255], np.uint8)
case("qnn.dequantize", "uint8", [xdu, sc(0.1), zp(128)], [dequantize_ref(xdu, 0.1, 128)])
xdc = ints(2, 3, lo=-100, hi=100, dtype="int8")
case("qnn.dequantize", "per_channel_axis0", [xdc, np.array([0.5, 2.0], np.float32), np.array([1, -1], np.int32)],
     [dequantize_ref(xdc, np.array([0.5, 2.0], np.float32), np.array([1, -1], np.int32), axis=0)], {"axis": 0})
xd32 = np.array([2 ** 31 - 1, -2 ** 31, 12345], np.int32)
case("qnn.dequantize", "int32", [xd32, sc(1e-4), zp(0)], [dequantize_ref(xd32, 1e-4, 0)])
error("qnn.dequantize", "float_data", [f32(3), sc(0.5), zp(0)])
error("qnn.dequantize", "int8_zero_point", [xd, sc(0.5), np.int8(0)])
error("qnn.dequantize", "channel_count", [xdc, np.array([0.5, 2.0, 1.0], np.float32), zp(0)], {"axis": 0})

xr = np.array([-7, -5, -3, -1, 0, 1, 3, 5, 7, 1000, -1000, 255], np.int32)
for rounding in ["UPWARD", "TONEAREST"]:
    case("qnn.requantize", "ties_" + rounding.lower(), [xr, sc(0.5), zp(0), sc(1.0), zp(0)],
         [requantize_ref(xr, 0.5, 0, 1.0, 0, rounding=rounding)], {"rounding": rounding})
case("qnn.requantize", "default_rounding_is_upward", [xr, sc(0.5), zp(0), sc(1.0), zp(0)],
     [requantize_ref(xr, 0.5, 0, 1.0, 0)])
xr8 = ints(3, 4, lo=-128, hi=128, dtype="int8")
case("qnn.requantize", "int8_to_uint8_zero_points", [xr8, sc(0.0173), zp(-3), sc(0.0311), zp(120)],
     [requantize_ref(xr8, 0.0173, -3, 0.0311, 120, "uint8")], {"out_dtype": "uint8"})
case("qnn.requantize", "saturates_int8", [xr, sc(1.7), zp(0), sc(0.3), zp(10)],
     [requantize_ref(xr, 1.7, 0, 0.3, 10)], {"rounding": "TONEAREST"})
xr32 = ints(2, 3, 2, lo=-5000, hi=5000, dtype="int32")
sr = np.array([0.001, 0.0023, 0.0007], np.float32)
zr = np.array([0, 4, -9], np.int32)
for rounding in ["UPWARD", "TONEAREST"]:
    case("qnn.requantize", "per_channel_" + rounding.lower(), [xr32, sr, zr, sc(0.02), zp(-1)],
         [requantize_ref(xr32, sr, zr, 0.02, -1, axis=1, rounding=rounding)],
         {"axis": 1, "rounding": rounding, "compute_dtype": "int64"})
case("qnn.requantize", "to_int32", [xr32, sc(3.5), zp(1), sc(0.25), zp(0)],
     [requantize_ref(xr32, 3.5, 1, 0.25, 0, "int32")], {"out_dtype": "int32"})
error("qnn.requantize", "float_compute_dtype", [xr, sc(0.5), zp(0), sc(1.0), zp(0)], {"compute_dtype": "float32"})
error("qnn.requantize", "bad_rounding", [xr, sc(0.5), zp(0), sc(1.0), zp(0)], {"rounding": "DOWN"})
error("qnn.requantize", "per_channel_output", [xr32, sr, zr, sr, zp(0)], {"axis": 1})
error("qnn.requantize", "float_data", [f32(3), sc(0.5), zp(0), sc(1.0), zp(0)])


def qnn_binary_ref(op, l, r, ls, lz, rs, rz, os_, oz):
    shape = np.broadcast_shapes(l.shape, r.shape)
    a, b = np.broadcast_to(l, shape).reshape(-1), np.broadcast_to(r, shape).reshape(-1)
    lo, hi = QRANGE["int32"]
    vals = []
    for x, y in zip(a, b):
        if op == "qnn.mul":
            m = np.float32(np.float32(ls) * np.float32(rs))
            vals.append(requant((int(x) - lz) * (int(y) - rz), m, 0, os_, oz))
            continue
        qx = min(max(requant(x, ls, lz, os_, oz), lo), hi)
        qy = min(max(requant(y, rs, rz, os_, oz), lo), hi)
        vals.append(qx + qy - oz if op == "qnn.add" else qx - qy + oz)
    return saturate(vals, str(l.dtype)).reshape(shape)


bl = ints(2, 3, lo=-128, hi=128, dtype="int8")
br = ints(3, lo=-128, hi=128, dtype="int8")
bu = ints(4, 1, lo=0, hi=256, dtype="uint8")
bv = ints(1, 3, lo=0, hi=256, dtype="uint8")
for op in ["qnn.add", "qnn.subtract", "qnn.mul"]:
    p = (0.05, 2, 0.03, -4, 0.07, 1)
    if op == "qnn.mul":
        p = (0.05, 2, 0.03, -4, 0.2, 1)
    ps = [sc(p[0]), zp(p[1]), sc(p[2]), zp(p[3]), sc(p[4]), zp(p[5])]
    case(op, "int8_broadcast", [bl, br] + ps, [qnn_binary_ref(op, bl, br, *p)])
    pu = (0.02, 128, 0.02, 128, 0.01, 120)
    psu = [sc(pu[0]), zp(pu[1]), sc(pu[2]), zp(pu[3]), sc(pu[4]), zp(pu[5])]
    case(op, "uint8_saturates", [bu, bv] + psu, [qnn_binary_ref(op, bu, bv, *pu)])
    same = [sc(0.1), zp(0), sc(0.1), zp(0), sc(0.1), zp(0)]
    case(op, "same_params", [bl, bl] + same, [qnn_binary_ref(op, bl, bl, 0.1, 0, 0.1, 0, 0.1, 0)])
    error(op, "dtype_mismatch", [bl, bu] + ps)
    error(op, "per_channel_scale", [bl, br, np.array([0.1, 0.2, 0.3], np.float32)] + ps[1:])
    error(op, "shape_mismatch", [bl, ints(4, dtype="int8")] + ps)

c1 = ints(2, 2, lo=-128, hi=128, dtype="int8")
c2 = ints(2, 3, lo=-128, hi=128, dtype="int8")


def qnn_concat_ref(xs, scales, zps, os_, oz, axis):
    parts = []
    for x, s, z in zip(xs, scales, zps):
        vals = [requant(v, s, z, os_, oz) for v in x.reshape(-1)]
        parts.append(saturate(vals, str(x.dtype)).reshape(x.shape))
    return np.concatenate(parts, axis=axis)


case("qnn.concatenate", "requantized_axis1", [c1, c2, sc(0.5), sc(0.05), zp(3), zp(-2), sc(0.1), zp(1)],
     [qnn_concat_ref([c1, c2], [0.5, 0.05], [3, -2], 0.1, 1, 1)], {"axis": 1})
case("qnn.concatenate", "same_params_negative_axis", [c1, c1, sc(0.1), sc(0.1), zp(1), zp(1), sc(0.1), zp(1)],
     [qnn_concat_ref([c1, c1], [0.1, 0.1], [1, 1], 0.1, 1, -2)], {"axis": -2})
cu = ints(3, lo=0, hi=256, dtype="uint8")
case("qnn.concatenate", "uint8_one_input", [cu, sc(0.3), zp(100), sc(0.1), zp(128)],
     [qnn_concat_ref([cu], [0.3], [100], 0.1, 128, 0)])
error("qnn.concatenate", "dtype_mismatch", [c1, c2.astype(np.uint8), sc(0.5), sc(0.05), zp(3), zp(-2), sc(0.1), zp(1)],
      {"axis": 1})
error("qnn.concatenate", "float_zero_point", [c1, c2, sc(0.5), sc(0.05), np.float32(3), zp(-2), sc(0.1), zp(1)],
      {"axis": 1})
error("qnn.concatenate", "missing_scale", [c1, c2, sc(0.5), zp(3), zp(-2), sc(0.1), zp(1)], {"axis": 1})
error("qnn.concatenate", "axis_mismatch", [c1, c2, sc(0.5), sc(0.05), zp(3), zp(-2), sc(0.1), zp(1)], {"axis": 0})


def shifted(x, z, axis=0):
    return x.astype(np.int64) - per_channel(z, x.shape, axis).astype(np.int64)


dd = ints(3, 5, lo=-128, hi=128, dtype="int8")
dw = ints(4, 5, lo=-128, hi=128, dtype="int8")
dparams = [zp(3), zp(-2), sc(0.05), sc(0.02)]
case("qnn.dense", "int8", [dd, dw] + dparams, [(shifted(dd, 3) @ shifted(dw, -2).T).astype(np.int32)])
dzc, dsc = np.array([1, 0, -1, 5], np.int32), np.array([0.1, 0.2, 0.3, 0.4], np.float32)
du = ints(2, 5, lo=0, hi=256, dtype="uint8")
case("qnn.dense", "uint8_per_channel_kernel", [du, dw, zp(128), dzc, sc(0.05), dsc],
     [(shifted(du, 128) @ shifted(dw, dzc).T).astype(np.int32)], {"units": 4, "out_dtype": "int32"})
dd3 = ints(2, 2, 5, lo=-128, hi=128, dtype="int8")
case("qnn.dense", "rank3_data", [dd3, dw] + dparams, [(shifted(dd3, 3) @ shifted(dw, -2).T).astype(np.int32)])
error("qnn.dense", "float_data", [f32(3, 5), dw] + dparams)
error("qnn.dense", "kernel_scale_length", [dd, dw, zp(0), zp(0), sc(0.1), dsc[:3]])
error("qnn.dense", "vector_input_zero_point", [dd, dw, dzc, zp(0), sc(0.1), sc(0.1)])
error("qnn.dense", "int8_out_dtype", [dd, dw] + dparams, {"out_dtype": "int8"})

bx = ints(2, 3, 4, lo=-128, hi=128, dtype="int8")
by = ints(2, 4, 5, lo=-128, hi=128, dtype="int8")
byt = ints(2, 5, 4, lo=-128, hi=128, dtype="int8")
bparams = [zp(-1), zp(2), sc(0.1), sc(0.1)]
case("qnn.batch_matmul", "int8", [bx, by] + bparams, [np.matmul(shifted(bx, -1), shifted(by, 2)).astype(np.int32)])
case("qnn.batch_matmul", "transpose_b", [bx, byt] + bparams,
     [np.matmul(shifted(bx, -1), shifted(byt, 2).transpose(0, 2, 1)).astype(np.int32)], {"transpose_b": True})
bx1 = ints(1, 2, 4, lo=0, hi=256, dtype="uint8")
case("qnn.batch_matmul", "uint8_broadcast_batch", [bx1, by.astype(np.uint8), zp(128), zp(0), sc(0.1), sc(0.1)],
     [np.matmul(shifted(bx1, 128), shifted(by.astype(np.uint8), 0)).astype(np.int32)])
error("qnn.batch_matmul", "per_channel_zero_point", [bx, by, zp(0), np.array([1, 2, 3, 4, 5], np.int32),
                                                     sc(0.1), sc(0.1)])
error("qnn.batch_matmul", "k_mismatch", [bx, byt] + bparams)


def qnn_conv2d_ref(x, w, iz, kz, pad=(0, 0, 0, 0), **kw):
    """TVM pads the data with its zero point, then subtracts the zero points."""
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])), constant_values=iz)
    return conv2d_ref(xp - iz, shifted(w, kz), acc=np.int64, **kw).astype(np.int32)


qx = ints(1, 2, 5, 5, lo=-128, hi=128, dtype="int8")
qw = ints(3, 2, 3, 3, lo=-128, hi=128, dtype="int8")
qparams = [zp(5), zp(-3), sc(0.02), sc(0.01)]
case("qnn.conv2d", "int8_pad1", [qx, qw] + qparams, [qnn_conv2d_ref(qx, qw, 5, -3, pad=(1, 1, 1, 1))],
     {"padding": [1, 1], "out_dtype": "int32"})
qzc, qsc = np.array([0, 2, -1], np.int32), np.array([0.01, 0.02, 0.03], np.float32)
qxu = ints(1, 2, 6, 6, lo=0, hi=256, dtype="uint8")
case("qnn.conv2d", "uint8_per_channel_stride2", [qxu, qw, zp(128), qzc, sc(0.02), qsc],
     [qnn_conv2d_ref(qxu, qw, 128, qzc, pad=(1, 0, 0, 1), strides=(2, 2))],
     {"strides": [2, 2], "padding": [1, 0, 0, 1], "channels": 3, "kernel_size": [3, 3]})
qwg = ints(4, 1, 3, 3, lo=-128, hi=128, dtype="int8")
case("qnn.conv2d", "groups2", [qx, qwg, zp(0), zp(1), sc(0.1), sc(0.1)],
     [qnn_conv2d_ref(qx, qwg, 0, 1, groups=2)], {"groups": 2})
error("qnn.conv2d", "kernel_zero_point_length", [qx, qw, zp(0), np.array([1, 2], np.int32), sc(0.1), sc(0.1)])
error("qnn.conv2d", "float_weight", [qx, f32(3, 2, 3, 3)] + qparams)
error("qnn.conv2d", "channels_mismatch", [qx, qw] + qparams, {"channels": 4})


def qnn_unary_ref(x, fn, s, z, os_, oz):
    real = (x.astype(np.int32) - np.int32(z)).astype(np.float32) * np.float32(s)
    y = fn(real).astype(np.float32)
    return quantize_ref(y, os_, oz, str(x.dtype))


ua = np.array([-128, -100, -20, -1, 0, 1, 20, 100, 127], np.int8)
uu = np.array([0, 30, 127, 128, 200, 255], np.uint8)
for op, fn in [("qnn.sigmoid", lambda v: np.float32(1) / (np.float32(1) + np.exp(-v))), ("qnn.tanh", np.tanh)]:
    case(op, "int8", [ua, sc(0.05), zp(0), sc(1 / 256), zp(-128)], [qnn_unary_ref(ua, fn, 0.05, 0, 1 / 256, -128)])
    case(op, "uint8", [uu, sc(0.03), zp(128), sc(1 / 128), zp(128)],
         [qnn_unary_ref(uu, fn, 0.03, 128, 1 / 128, 128)])
    case(op, "saturates", [ua, sc(0.1), zp(0), sc(0.001), zp(0)], [qnn_unary_ref(ua, fn, 0.1, 0, 0.001, 0)])
    error(op, "int32_data", [ua.astype(np.int32), sc(0.05), zp(0), sc(0.01), zp(0)])
    error(op, "vector_scale", [ua, np.full(9, 0.05, np.float32), zp(0), sc(0.01), zp(0)])


def qnn_leaky_relu_ref(x, alpha, s, z, os_, oz):
    lo, hi = QRANGE["int32"]
    vals = []
    for v in x.reshape(-1):
        r = min(max(requant(v, s, z, os_, oz), lo), hi)
        vals.append(fixed_mul(r, alpha) + fixed_mul(oz, 1 - alpha) if int(v) < z else r)
    return saturate(vals, str(x.dtype)).reshape(x.shape)


case("qnn.leaky_relu", "int8_alpha0.1", [ua, sc(0.05), zp(-3), sc(0.04), zp(2)],
     [qnn_leaky_relu_ref(ua, 0.1, 0.05, -3, 0.04, 2)], {"alpha": 0.1})
case("qnn.leaky_relu", "uint8_default_alpha", [uu, sc(0.02), zp(128), sc(0.02), zp(128)],
     [qnn_leaky_relu_ref(uu, 0.25, 0.02, 128, 0.02, 128)])
case("qnn.leaky_relu", "saturates", [ua, sc(0.1), zp(0), sc(0.01), zp(0)],
     [qnn_leaky_relu_ref(ua, 0.3, 0.1, 0, 0.01, 0)], {"alpha": 0.3})
error("qnn.leaky_relu", "float_data", [f32(3), sc(0.1), zp(0), sc(0.1), zp(0)])


def qnn_softmax_ref(x, s, z, os_, oz, axis=-1):
    """TVM's integer softmax (arXiv 2207.01405 Alg. 1), as Python integers."""
    q = np.moveaxis(x.astype(np.int64) - z, axis, -1)
    x0 = round_away(float(np.float32(np.float32(1) / np.float32(s))))
    out = np.zeros(q.shape, np.int64)
    for idx in np.ndindex(*q.shape[:-1]):
        lane = [int(v) for v in q[idx]]
        m = max(lane)
        exps = []
        for v in lane:
            t = v - m
            tp = t + (t >> 1) - (t >> 4)          # Python >> is arithmetic
            quo = (-tp) // x0                     # tp <= 0: truncation of tp / -x0
            rem = tp + quo * x0
            xb = (rem >> 1) + x0
            exps.append(xb * 2 ** (8 - quo) if quo <= 8 else 0)
        share = (1 << 30) // sum(exps)
        out[idx] = [(share * e) >> 23 for e in exps]
    vals = [requant(v, 1 / 128, 0, os_, oz) for v in np.moveaxis(out, -1, axis).reshape(-1)]
    return saturate(vals, "int8").reshape(x.shape)


sm = ints(2, 5, lo=-128, hi=128, dtype="int8")
case("qnn.softmax", "last_axis", [sm, sc(0.05), zp(0), sc(1 / 256), zp(-128)],
     [qnn_softmax_ref(sm, 0.05, 0, 1 / 256, -128)])
sm3 = ints(2, 3, 2, lo=-128, hi=128, dtype="int8")
case("qnn.softmax", "axis1_zero_point", [sm3, sc(0.1), zp(-10), sc(1 / 128), zp(0)],
     [qnn_softmax_ref(sm3, 0.1, -10, 1 / 128, 0, axis=1)], {"axis": 1})
case("qnn.softmax", "wide_range", [ua.reshape(1, 9), sc(0.2), zp(0), sc(1 / 256), zp(-128)],
     [qnn_softmax_ref(ua.reshape(1, 9), 0.2, 0, 1 / 256, -128)])
error("qnn.softmax", "uint8_data", [uu, sc(0.1), zp(0), sc(0.1), zp(0)])
error("qnn.softmax", "axis_out_of_range", [sm, sc(0.1), zp(0), sc(0.1), zp(0)], {"axis": 2})


def space_to_batch_ref(x, block, pads, value=0.0):
    # TensorFlow's documented steps: pad, split each spatial axis into (S / b, b), move the
    # block axes in front of the batch, merge them into it.
    m = len(block)
    width = [(0, 0)] + [tuple(p) for p in pads] + [(0, 0)] * (x.ndim - 1 - m)
    padded = np.pad(x, width, constant_values=np.array(value).astype(x.dtype))
    n, rest = x.shape[0], list(x.shape[1 + m:])
    split = [n]
    for i, b in enumerate(block):
        split += [padded.shape[1 + i] // b, b]
    y = padded.reshape(split + rest)
    order = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    order += list(range(1 + 2 * m, y.ndim))
    y = y.transpose(order)
    return y.reshape([n * int(np.prod(block))] + [padded.shape[1 + i] // b for i, b in enumerate(block)] + rest)


def batch_to_space_ref(x, block, crops):
    m = len(block)
    n = x.shape[0] // int(np.prod(block))
    rest = list(x.shape[1 + m:])
    y = x.reshape(list(block) + [n] + list(x.shape[1:]))
    order = [m]
    for i in range(m):
        order += [m + 1 + i, i]
    order += list(range(2 * m + 1, y.ndim))
    y = y.transpose(order).reshape([n] + [x.shape[1 + i] * b for i, b in enumerate(block)] + rest)
    index = (slice(None),) + tuple(slice(c[0], y.shape[1 + i] - c[1]) for i, c in enumerate(crops))
    return y[index]


sb = f32(2, 3, 4, 5)
case("nn.space_to_batch_nd", "nhwc_2x2", [sb], [space_to_batch_ref(sb, [2, 2], [[1, 0], [0, 0]])],
     {"block_shape": [2, 2], "paddings": [[1, 0], [0, 0]]})
case("nn.space_to_batch_nd", "pad_value", [sb], [space_to_batch_ref(sb, [3, 2], [[2, 1], [1, 1]], 7.5)],
     {"block_shape": [3, 2], "paddings": [[2, 1], [1, 1]], "pad_value": 7.5})
sbi = ints(3, 6, 2)
case("nn.space_to_batch_nd", "one_axis_int", [sbi], [space_to_batch_ref(sbi, [4], [[1, 1]], -3)],
     {"block_shape": [4], "paddings": [[1, 1]], "pad_value": -3.0})
case("nn.space_to_batch_nd", "size1_block", [sb], [sb], {"block_shape": [1, 1], "paddings": [[0, 0], [0, 0]]})
error("nn.space_to_batch_nd", "not_divisible", [sb], {"block_shape": [2, 2], "paddings": [[0, 0], [0, 0]]})
error("nn.space_to_batch_nd", "pair_count", [sb], {"block_shape": [2, 2], "paddings": [[1, 0]]})
error("nn.space_to_batch_nd", "rank_too_low", [f32(4, 4)], {"block_shape": [2, 2], "paddings": [[0, 0], [0, 0]]})
error("nn.space_to_batch_nd", "negative_pad", [sb], {"block_shape": [2, 2], "paddings": [[-1, 0], [0, 0]]})
error("nn.space_to_batch_nd", "zero_block", [sb], {"block_shape": [0, 1], "paddings": [[0, 0], [0, 0]]})
bs = f32(8, 2, 3, 2)
case("nn.batch_to_space_nd", "nhwc_2x2", [bs], [batch_to_space_ref(bs, [2, 2], [[0, 0], [0, 0]])],
     {"block_shape": [2, 2], "crops": [[0, 0], [0, 0]]})
case("nn.batch_to_space_nd", "cropped", [bs], [batch_to_space_ref(bs, [2, 2], [[1, 0], [2, 1]])],
     {"block_shape": [2, 2], "crops": [[1, 0], [2, 1]]})
bsi = ints(12, 2, 3, dtype="int64")
case("nn.batch_to_space_nd", "one_axis_int64", [bsi], [batch_to_space_ref(bsi, [3], [[1, 2]])],
     {"block_shape": [3], "crops": [[1, 2]]})
rt = space_to_batch_ref(sb, [3, 2], [[2, 1], [1, 1]])
case("nn.batch_to_space_nd", "inverts_space_to_batch", [rt], [sb],
     {"block_shape": [3, 2], "crops": [[2, 1], [1, 1]]})
error("nn.batch_to_space_nd", "batch_not_divisible", [f32(6, 2, 2)], {"block_shape": [2, 2], "crops": [[0, 0], [0, 0]]})
error("nn.batch_to_space_nd", "crops_too_large", [bs], {"block_shape": [2, 2], "crops": [[3, 2], [0, 0]]})


# ---------------------------------------------------------------- layouts
# Channels-last and other plain layouts: the canonical cases above with every operand
# transposed (NCHW -> NHWC is axes (0, 2, 3, 1), OIHW -> HWIO (2, 3, 1, 0)).

NHWC, HWIO, NWC, WIO = (0, 2, 3, 1), (2, 3, 1, 0), (0, 2, 1), (2, 1, 0)
case("nn.conv2d", "nhwc_hwio_stride2_asymmetric_pad", [x4.transpose(NHWC), w4.transpose(HWIO)],
     [conv2d_ref(d64(x4), d64(w4), (2, 2), (1, 0, 0, 1)).transpose(NHWC)],
     {"strides": [2, 2], "padding": [1, 0, 0, 1], "data_layout": "NHWC", "kernel_layout": "HWIO"},
     out_dtypes=["float32"], atol=1e-5)
case("nn.conv2d", "nhwc_depthwise_hwoi", [xg.transpose(NHWC), wd_.transpose(2, 3, 0, 1)],
     [conv2d_ref(d64(xg), d64(wd_), pad=(1, 1, 1, 1), groups=4).transpose(NHWC)],
     {"groups": 4, "padding": [1], "data_layout": "NHWC", "kernel_layout": "HWOI"}, out_dtypes=["float32"], atol=1e-5)
case("nn.conv2d", "nchw_in_nhwc_out_ohwi", [x4, w4.transpose(0, 2, 3, 1)],
     [conv2d_ref(d64(x4), d64(w4), pad=(1, 1, 1, 1)).transpose(NHWC)],
     {"padding": [1, 1], "kernel_layout": "OHWI", "out_layout": "NHWC"}, out_dtypes=["float32"], atol=1e-5)
case("nn.conv2d", "nhwc_int8_to_int32", [xi8.transpose(NHWC), wi8.transpose(HWIO)],
     [conv2d_ref(xi8, wi8, acc=np.int64).astype(np.int32).transpose(NHWC)],
     {"out_dtype": "int32", "data_layout": "NHWC", "kernel_layout": "HWIO"})
case("nn.conv1d", "nwc_wio_stride2_dilation2", [xc1.transpose(NWC), wc1.transpose(WIO)],
     [conv1d_ref(d64(xc1), d64(wc1), 2, (2, 0), 2).transpose(NWC)],
     {"strides": [2], "padding": [2, 0], "dilation": [2], "data_layout": "NWC", "kernel_layout": "WIO"},
     out_dtypes=["float32"], atol=1e-5)
case("nn.max_pool2d", "nhwc_3x3_pad1_ceil", [xp.transpose(NHWC)],
     [pool_ref(d64(xp), "max", (3, 3), (2, 2), (1, 1, 1, 1), ceil_mode=True).transpose(NHWC)],
     {"pool_size": [3, 3], "strides": [2, 2], "padding": [1, 1], "ceil_mode": True, "layout": "NHWC",
      "out_layout": "NHWC"}, out_dtypes=["float32"])
case("nn.avg_pool2d", "nhwc_ceil_asymmetric_include_pad", [x46.transpose(NHWC)],
     [pool_ref(d64(x46), "avg", (3, 2), (2, 3), (1, 0, 2, 1), ceil_mode=True, count_include_pad=True).transpose(NHWC)],
     {"pool_size": [3, 2], "strides": [2, 3], "padding": [1, 0, 2, 1], "ceil_mode": True, "count_include_pad": True,
      "layout": "NHWC"}, out_dtypes=["float32"])
case("nn.max_pool1d", "nwc_k3_s2", [xp1.transpose(NWC)], [pool1d_ref(d64(xp1), "max", 3, 2, (0, 0)).transpose(NWC)],
     {"pool_size": [3], "strides": [2], "layout": "NWC"}, out_dtypes=["float32"])
case("nn.avg_pool1d", "nwc_pad_excluded", [xp1.transpose(NWC)],
     [pool1d_ref(d64(xp1), "avg", 3, 1, (1, 1)).transpose(NWC)], {"pool_size": [3], "padding": [1], "layout": "NWC"},
     out_dtypes=["float32"])
case("nn.global_avg_pool2d", "nhwc", [xg2.transpose(NHWC)], [d64(xg2).mean(axis=(2, 3), keepdims=True).transpose(NHWC)],
     {"layout": "NHWC"}, out_dtypes=["float32"])
case("nn.global_max_pool2d", "nhwc_int8", [xgmi.transpose(NHWC)], [xgmi.max(axis=(2, 3), keepdims=True).transpose(NHWC)],
     {"layout": "NHWC"})
case("nn.adaptive_avg_pool2d", "nhwc_7x5_to_3x2", [xa.transpose(NHWC)],
     [adaptive_pool_ref(d64(xa), (3, 2), "avg").transpose(NHWC)], {"output_size": [3, 2], "layout": "NHWC"},
     out_dtypes=["float32"])
case("nn.adaptive_max_pool2d", "hwnc_int32", [xai.transpose(2, 3, 0, 1)],
     [adaptive_pool_ref(xai, (2, 2), "max").transpose(2, 3, 0, 1)], {"output_size": [2], "layout": "HWNC"})
error("nn.max_pool2d", "packed_layout", [xp], {"pool_size": [2, 2], "layout": "NCHW4c"})
error("nn.global_avg_pool2d", "not_a_permutation", [xg2], {"layout": "NHWW"})
error("nn.adaptive_avg_pool2d", "packed_layout", [xa], {"layout": "NCHW2c"})


def adaptive_pool1d_ref(x, out_w, kind):
    """An adaptive 1-d pool as a 2-d one of height 1."""
    return adaptive_pool_ref(x[:, :, None, :], (1, out_w), kind)[:, :, 0, :]


xa1 = f32(2, 3, 7)
case("nn.adaptive_avg_pool1d", "7_to_3", [xa1], [adaptive_pool1d_ref(d64(xa1), 3, "avg")], {"output_size": [3]},
     out_dtypes=["float32"])
case("nn.adaptive_avg_pool1d", "larger_output", [xa1], [adaptive_pool1d_ref(d64(xa1), 10, "avg")],
     {"output_size": [10]}, out_dtypes=["float32"])
case("nn.adaptive_avg_pool1d", "default_is_identity", [xa1], [xa1])
case("nn.adaptive_avg_pool1d", "nwc_to_1", [xa1.transpose(NWC)], [d64(xa1).mean(axis=2, keepdims=True).transpose(NWC)],
     {"output_size": [1], "layout": "NWC"}, out_dtypes=["float32"])
error("nn.adaptive_avg_pool1d", "int_rejected", [ints(1, 1, 4)], {"output_size": [2]})
error("nn.adaptive_avg_pool1d", "two_values", [xa1], {"output_size": [2, 2]})
error("nn.adaptive_avg_pool1d", "rank4", [f32(1, 1, 2, 2)], {"output_size": [1]})
xa1i = ints(1, 2, 9, dtype="int8")
case("nn.adaptive_max_pool1d", "int8_9_to_4", [xa1i], [adaptive_pool1d_ref(xa1i, 4, "max")], {"output_size": [4]})
case("nn.adaptive_max_pool1d", "wnc_7_to_2", [xa1.transpose(2, 0, 1)],
     [adaptive_pool1d_ref(xa1, 2, "max").transpose(2, 0, 1)], {"output_size": [2], "layout": "WNC"})
case("nn.adaptive_max_pool1d", "default_is_identity", [xa1], [xa1])
error("nn.adaptive_max_pool1d", "zero_size", [xa1], {"output_size": [0]})
error("nn.adaptive_max_pool1d", "packed_layout", [xa1], {"layout": "NCW4c"})


# ---------------------------------------------------------------- 3-d convolution and pooling, einsum
# (helper ops3d's section: its own random stream, so that sections appended by others do not
# shift it.) References written from TVM's definitions (topi conv3d_ncdhw, pool_impl_nd,
# adaptive_pool) in plain NumPy, N-d over the spatial axes; einsum from np.einsum.

RNG = np.random.default_rng(316)


def conv3d_ref(x, w, strides=(1, 1, 1), pad=(0,) * 6, dil=(1, 1, 1), groups=1, acc=np.float64):
    """Direct NCDHW/OIDHW convolution: pad = (front, top, left, back, bottom, right)."""
    n = x.shape[0]
    o, ci = w.shape[:2]
    k = w.shape[2:]
    xp = np.pad(x.astype(acc), [(0, 0), (0, 0)] + [(pad[i], pad[i + 3]) for i in range(3)])
    span = [(k[i] - 1) * dil[i] + 1 for i in range(3)]
    sizes = [(xp.shape[2 + i] - span[i]) // strides[i] + 1 for i in range(3)]
    out = np.zeros((n, o, *sizes), acc)
    per_group = o // groups
    for f in range(o):
        g = f // per_group
        for pos in np.ndindex(*sizes):
            win = xp[(slice(None), slice(g * ci, (g + 1) * ci)) + tuple(
                slice(pos[i] * strides[i], pos[i] * strides[i] + span[i], dil[i]) for i in range(3))]
            out[(slice(None), f) + pos] = (win * w[f].astype(acc)).sum(axis=(1, 2, 3, 4))
    return out


def pool_nd_ref(x, kind, pool, strides, pad, dil=None, ceil_mode=False, count_include_pad=False):
    """TVM pooling over the trailing len(pool) axes: pad = befores then afters."""
    r = len(pool)
    dil = dil or (1,) * r
    dims = x.shape[-r:]
    sizes = []
    for ax in range(r):
        room = dims[ax] + pad[ax] + pad[ax + r] - ((pool[ax] - 1) * dil[ax] + 1)
        sizes.append((room + (strides[ax] - 1 if ceil_mode else 0)) // strides[ax] + 1)
    out = np.zeros(x.shape[:-r] + tuple(sizes), np.float64)
    for pos in np.ndindex(*sizes):
        taps, counted = [], 1
        for ax in range(r):
            starts = [pos[ax] * strides[ax] - pad[ax] + i * dil[ax] for i in range(pool[ax])]
            taps.append([p for p in starts if 0 <= p < dims[ax]])
            counted *= len([p for p in starts if p < dims[ax] + pad[ax + r]])
        vals = x[(Ellipsis,) + np.ix_(*taps)].reshape(x.shape[:-r] + (-1,)) if all(taps) else np.zeros(x.shape[:-r] + (0,))
        if kind == "max":
            out[(Ellipsis,) + pos] = vals.max(axis=-1)
        else:
            out[(Ellipsis,) + pos] = vals.sum(axis=-1) / max(counted if count_include_pad else vals.shape[-1], 1)
    return out


def adaptive_nd_ref(x, sizes, kind):
    """TVM's adaptive windows over the trailing axes: floor(i * L / O) .. ceil((i + 1) * L / O)."""
    r = len(sizes)
    dims = x.shape[-r:]
    out = np.zeros(x.shape[:-r] + tuple(sizes), x.dtype)
    for pos in np.ndindex(*sizes):
        win = x[(Ellipsis,) + tuple(slice(pos[a] * dims[a] // sizes[a], -(-(pos[a] + 1) * dims[a] // sizes[a]))
                                    for a in range(r))].reshape(x.shape[:-r] + (-1,))
        out[(Ellipsis,) + pos] = win.max(axis=-1) if kind == "max" else win.mean(axis=-1)
    return out


NDHWC, DHWIO = (0, 2, 3, 4, 1), (2, 3, 4, 1, 0)
x3 = f32(2, 4, 5, 6, 5)
w3 = f32(6, 4, 3, 2, 3)
case("nn.conv3d", "basic", [x3, w3], [conv3d_ref(d64(x3), d64(w3))], out_dtypes=["float32"], atol=1e-5)
case("nn.conv3d", "stride_asymmetric_pad6", [x3, w3],
     [conv3d_ref(d64(x3), d64(w3), (2, 1, 2), (1, 0, 2, 0, 1, 1))],
     {"strides": [2, 1, 2], "padding": [1, 0, 2, 0, 1, 1]}, out_dtypes=["float32"], atol=1e-5)
case("nn.conv3d", "pad3_dilation", [x3, w3], [conv3d_ref(d64(x3), d64(w3), pad=(1, 1, 1, 1, 1, 1), dil=(2, 2, 1))],
     {"padding": [1, 1, 1], "dilation": [2, 2, 1], "channels": 6, "kernel_size": [3, 2, 3]},
     out_dtypes=["float32"], atol=1e-5)
wg3 = f32(6, 2, 1, 3, 3)
case("nn.conv3d", "groups2_pad1", [x3, wg3], [conv3d_ref(d64(x3), d64(wg3), pad=(1,) * 6, groups=2)],
     {"groups": 2, "padding": [1]}, out_dtypes=["float32"], atol=1e-5)
wd3 = f32(4, 1, 2, 2, 2)
case("nn.conv3d", "depthwise_ndhwc_dhwio", [x3.transpose(NDHWC), wd3.transpose(DHWIO)],
     [conv3d_ref(d64(x3), d64(wd3), groups=4).transpose(NDHWC)],
     {"groups": 4, "data_layout": "NDHWC", "kernel_layout": "DHWIO"}, out_dtypes=["float32"], atol=1e-5)
case("nn.conv3d", "ncdhw_in_ndhwc_out", [x3, w3], [conv3d_ref(d64(x3), d64(w3), (1, 2, 1)).transpose(NDHWC)],
     {"strides": [1, 2, 1], "out_layout": "NDHWC"}, out_dtypes=["float32"], atol=1e-5)
xi3, wi3 = ints(1, 2, 3, 4, 4, dtype="int8"), ints(3, 2, 2, 2, 2, dtype="int8")
case("nn.conv3d", "int8_to_int32", [xi3, wi3], [conv3d_ref(xi3, wi3, acc=np.int64).astype(np.int32)],
     {"out_dtype": "int32"})
case("nn.conv3d", "empty_batch", [f32(0, 4, 5, 6, 5), w3], [np.zeros((0, 6, 3, 5, 3), np.float32)])
error("nn.conv3d", "channels_mismatch", [x3, f32(6, 3, 3, 2, 3)])
error("nn.conv3d", "kernel_too_large", [f32(1, 4, 2, 6, 5), w3])
error("nn.conv3d", "padding_two_values", [x3, w3], {"padding": [1, 1]})
error("nn.conv3d", "rank4_data", [f32(2, 4, 5, 6), w3])
error("nn.conv3d", "packed_layout", [x3, w3], {"data_layout": "NCDHW4c"})
error("nn.conv3d", "kernel_size_mismatch", [x3, w3], {"kernel_size": [3, 3, 3]})

xq = f32(2, 3, 5, 6, 7)
case("nn.max_pool3d", "2x2x2_stride2", [xq], [pool_nd_ref(d64(xq), "max", (2, 2, 2), (2, 2, 2), (0,) * 6)],
     {"pool_size": [2, 2, 2], "strides": [2, 2, 2]}, out_dtypes=["float32"])
case("nn.max_pool3d", "pad6_ceil_dilated", [xq],
     [pool_nd_ref(d64(xq), "max", (2, 3, 2), (2, 2, 3), (1, 0, 1, 0, 1, 0), dil=(1, 2, 1), ceil_mode=True)],
     {"pool_size": [2, 3, 2], "strides": [2, 2, 3], "padding": [1, 0, 1, 0, 1, 0], "dilation": [1, 2, 1],
      "ceil_mode": True}, out_dtypes=["float32"])
case("nn.max_pool3d", "ndhwc_one_value", [xq.transpose(NDHWC)],
     [pool_nd_ref(d64(xq), "max", (3, 3, 3), (1, 1, 1), (1,) * 6).transpose(NDHWC)],
     {"pool_size": [3], "padding": [1], "layout": "NDHWC"}, out_dtypes=["float32"])
xqi = ints(1, 2, 4, 4, 4, dtype="int32")
case("nn.max_pool3d", "int32", [xqi], [pool_nd_ref(xqi, "max", (2, 2, 2), (2, 2, 2), (0,) * 6).astype(np.int32)],
     {"pool_size": [2, 2, 2], "strides": [2, 2, 2]})
error("nn.max_pool3d", "window_too_large", [f32(1, 1, 2, 4, 4)], {"pool_size": [3, 3, 3]})
error("nn.max_pool3d", "two_values", [xq], {"pool_size": [2, 2]})
case("nn.avg_pool3d", "pad3_excluded", [xq], [pool_nd_ref(d64(xq), "avg", (3, 3, 3), (2, 2, 2), (1,) * 6)],
     {"pool_size": [3, 3, 3], "strides": [2, 2, 2], "padding": [1, 1, 1]}, out_dtypes=["float32"])
case("nn.avg_pool3d", "pad_included", [xq],
     [pool_nd_ref(d64(xq), "avg", (3, 3, 3), (2, 2, 2), (1,) * 6, count_include_pad=True)],
     {"pool_size": [3, 3, 3], "strides": [2, 2, 2], "padding": [1], "count_include_pad": True}, out_dtypes=["float32"])
case("nn.avg_pool3d", "ceil_asymmetric_include_pad_ndhwc", [xq.transpose(NDHWC)],
     [pool_nd_ref(d64(xq), "avg", (2, 3, 2), (2, 2, 2), (0, 1, 1, 1, 0, 1), ceil_mode=True,
                  count_include_pad=True).transpose(NDHWC)],
     {"pool_size": [2, 3, 2], "strides": [2], "padding": [0, 1, 1, 1, 0, 1], "ceil_mode": True,
      "count_include_pad": True, "layout": "NDHWC"}, out_dtypes=["float32"])
error("nn.avg_pool3d", "int_rejected", [xqi], {"pool_size": [2, 2, 2]})
error("nn.avg_pool3d", "padding_four_values", [xq], {"pool_size": [2, 2, 2], "padding": [1, 1, 1, 1]})

case("nn.adaptive_avg_pool3d", "to_2x3x4", [xq], [adaptive_nd_ref(d64(xq), (2, 3, 4), "avg")],
     {"output_size": [2, 3, 4]}, out_dtypes=["float32"])
case("nn.adaptive_avg_pool3d", "one_value_1", [xq], [d64(xq).mean(axis=(2, 3, 4), keepdims=True)],
     {"output_size": [1]}, out_dtypes=["float32"])
case("nn.adaptive_avg_pool3d", "default_is_identity", [xq], [xq])
error("nn.adaptive_avg_pool3d", "two_values", [xq], {"output_size": [1, 2]})
case("nn.adaptive_max_pool3d", "ndhwc_larger_output", [xq.transpose(NDHWC)],
     [adaptive_nd_ref(xq, (7, 4, 9), "max").transpose(NDHWC)], {"output_size": [7, 4, 9], "layout": "NDHWC"})
xai3 = ints(1, 2, 3, 5, 4, dtype="int8")
case("nn.adaptive_max_pool3d", "int8_to_2", [xai3], [adaptive_nd_ref(xai3, (2, 2, 2), "max")], {"output_size": [2]})
case("nn.adaptive_max_pool3d", "default_is_identity", [xq], [xq])
error("nn.adaptive_max_pool3d", "zero_size", [xq], {"output_size": [0, 1, 1]})


def einsum_case(name, equation, *xs, atol=None):
    want = np.einsum(equation, *[d64(x) if x.dtype.kind == "f" else x.astype(np.int64) for x in xs])
    case("einsum", name, list(xs), [np.asarray(want).astype(xs[0].dtype)], {"equation": equation}, atol=atol)


a34, b45, v4 = f32(3, 4), f32(4, 5), f32(4)
einsum_case("matmul", "ij,jk->ik", a34, b45, atol=1e-5)
einsum_case("matmul_implicit", "ij,jk", a34, b45, atol=1e-5)
einsum_case("transpose_implicit", "ba", a34)
einsum_case("trace", "ii", f32(4, 4), atol=1e-5)
einsum_case("diagonal", "ii->i", f32(4, 4))
einsum_case("sum_all", "ij->", a34, atol=1e-5)
einsum_case("outer", "i,j->ij", v4, f32(3))
einsum_case("matvec", "ij,j->i", a34, v4, atol=1e-5)
einsum_case("batch_matmul_ellipsis", "...ij,...jk->...ik", f32(2, 1, 3, 4), f32(5, 4, 2), atol=1e-5)
einsum_case("ellipsis_middle", "i...j,j->...i", f32(2, 3, 2, 4), v4, atol=1e-5)
einsum_case("three_operands", "ij,jk,kl->il", f32(2, 3), f32(3, 4), f32(4, 2), atol=1e-5)
einsum_case("bilinear", "bn,anm,bm->ba", f32(2, 3), f32(4, 3, 5), f32(2, 5), atol=1e-5)
einsum_case("int32", "ij,jk->ik", ints(2, 3), ints(3, 2))
einsum_case("int64_diagonal_sum", "iij->j", ints(3, 3, 2, dtype="int64"))
einsum_case("empty_contraction", "ij,jk->ik", f32(2, 0), f32(0, 3))
einsum_case("scalars", ",->", np.float32(1.5), np.float32(-2.0))
error("einsum", "label_size_mismatch", [a34, f32(5, 5)], {"equation": "ij,jk->ik"})
error("einsum", "term_count", [a34], {"equation": "ij,jk->ik"})
error("einsum", "rank_mismatch", [a34], {"equation": "ijk->k"})
error("einsum", "unknown_output_label", [a34], {"equation": "ij->iz"})
error("einsum", "ellipsis_dropped", [f32(2, 3, 4)], {"equation": "i...->i"})
error("einsum", "dtype_mismatch", [a34, ints(4, 5)], {"equation": "ij,jk->ik"})
error("einsum", "bool_rejected", [np.array([True, False])], {"equation": "i->i"})


def affine_grid_ref(theta, h, w):
    """TVM's affine_grid: the maps applied to y = -1 + 2 i / (h - 1), x = -1 + 2 j / (w - 1)."""
    ys, xs = np.linspace(-1.0, 1.0, h), np.linspace(-1.0, 1.0, w)
    return (theta[:, :, 0, None, None] * xs[None, None, None, :] + theta[:, :, 1, None, None] * ys[None, None, :, None]
            + theta[:, :, 2, None, None])


theta = f32(2, 2, 3)
case("image.affine_grid", "4x5", [theta], [affine_grid_ref(d64(theta), 4, 5)], {"target_shape": [4, 5]},
     out_dtypes=["float32"])
case("image.affine_grid", "identity_3x3", [np.array([[[1, 0, 0], [0, 1, 0]]], np.float32)],
     [affine_grid_ref(np.array([[[1.0, 0, 0], [0, 1, 0]]]), 3, 3)], {"target_shape": [3, 3]}, out_dtypes=["float32"])
theta64 = RNG.uniform(-1, 1, (1, 2, 3))
case("image.affine_grid", "float64", [theta64], [affine_grid_ref(theta64, 2, 6)], {"target_shape": [2, 6]})
error("image.affine_grid", "not_2x3", [f32(2, 3, 2)], {"target_shape": [4, 5]})
error("image.affine_grid", "one_size", [theta], {"target_shape": [4]})
error("image.affine_grid", "int_rejected", [ints(1, 2, 3)], {"target_shape": [2, 2]})


def grid_sample_ref(x, grid, method, padding_mode, align_corners):
    """PyTorch's grid_sample, which TVM follows, over TVM's [N, 2, OH, OW] grid (x first)."""
    n, c, h, w = x.shape
    oh, ow = grid.shape[2:]

    def unnormalize(g, size):
        return (g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2

    def reflect(p, twice_low, twice_high):
        if twice_low == twice_high:
            return 0.0
        low, span = twice_low / 2, (twice_high - twice_low) / 2
        d = abs(p - low)
        extra, flips = math.fmod(d, span), math.floor(d / span)
        return extra + low if flips % 2 == 0 else span - extra + low

    def padded(p, size):
        if padding_mode == "reflection":
            p = reflect(p, 0, 2 * (size - 1)) if align_corners else reflect(p, -1, 2 * size - 1)
        if padding_mode != "zeros":
            p = min(max(p, 0), size - 1)
        return p

    def cubic(t, a=-0.75):
        near = lambda s: ((a + 2) * s - (a + 3)) * s * s + 1
        far = lambda s: ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
        return [far(t + 1), near(t), near(1 - t), far(2 - t)]

    out = np.zeros((n, c, oh, ow))
    for b, i, j in np.ndindex(n, oh, ow):
        gx, gy = unnormalize(grid[b, 0, i, j], w), unnormalize(grid[b, 1, i, j], h)
        img = x[b]

        def read(iy, ix):
            return img[:, iy, ix] if 0 <= iy < h and 0 <= ix < w else np.zeros(c)

        if method == "nearest":
            v = read(int(np.rint(padded(gy, h))), int(np.rint(padded(gx, w))))
        elif method == "bilinear":
            px, py = padded(gx, w), padded(gy, h)
            x0, y0 = math.floor(px), math.floor(py)
            tx, ty = px - x0, py - y0
            v = sum(wy * wx * read(y0 + dy, x0 + dx) for dy, wy in ((0, 1 - ty), (1, ty))
                    for dx, wx in ((0, 1 - tx), (1, tx)))
        else:
            x0, y0 = math.floor(gx), math.floor(gy)
            wx, wy = cubic(gx - x0), cubic(gy - y0)
            v = sum(wy[p] * wx[q] * read(int(padded(y0 - 1 + p, h)), int(padded(x0 - 1 + q, w)))
                    for p in range(4) for q in range(4))
        out[b, :, i, j] = v
    return out


xs_img = f32(2, 3, 4, 5)
grid = RNG.uniform(-1.3, 1.3, (2, 2, 3, 4)).astype(np.float32)
for method in ("nearest", "bilinear", "bicubic"):
    for padding_mode in ("zeros", "border", "reflection"):
        for align_corners in (True, False):
            case("image.grid_sample", f"{method}_{padding_mode}_{'align' if align_corners else 'edges'}",
                 [xs_img, grid], [grid_sample_ref(d64(xs_img), d64(grid), method, padding_mode, align_corners)],
                 {"method": method, "padding_mode": padding_mode, "align_corners": align_corners},
                 out_dtypes=["float32"], atol=1e-5)
case("image.grid_sample", "default_attrs_float64", [d64(xs_img[:1]), d64(grid[:1])],
     [grid_sample_ref(d64(xs_img[:1]), d64(grid[:1]), "bilinear", "zeros", True)])
error("image.grid_sample", "nhwc_rejected", [xs_img, grid], {"layout": "NHWC"})
error("image.grid_sample", "grid_last_axis_2", [xs_img, grid.transpose(0, 2, 3, 1)])
error("image.grid_sample", "batch_mismatch", [xs_img, grid[:1]])
error("image.grid_sample", "dtype_mismatch", [xs_img, d64(grid)])


def crop_and_resize_ref(x, boxes, box_indices, crop, method="bilinear", extrapolation_value=0.0):
    """TensorFlow's crop_and_resize (TVM's), NCHW: box (y1, x1, y2, x2) in normalised coordinates."""
    _, c, h, w = x.shape
    ch, cw = crop
    out = np.zeros((len(boxes), c, ch, cw))
    for b, (y1, x1, y2, x2) in enumerate(boxes):
        img = x[box_indices[b]]
        ys = [y1 * (h - 1) + i * (y2 - y1) * (h - 1) / (ch - 1) for i in range(ch)] if ch > 1 else [0.5 * (y1 + y2) * (h - 1)]
        xs = [x1 * (w - 1) + j * (x2 - x1) * (w - 1) / (cw - 1) for j in range(cw)] if cw > 1 else [0.5 * (x1 + x2) * (w - 1)]
        for i, y in enumerate(ys):
            for j, xx in enumerate(xs):
                if not (0 <= y <= h - 1 and 0 <= xx <= w - 1):
                    out[b, :, i, j] = extrapolation_value
                elif method == "nearest_neighbor":
                    out[b, :, i, j] = img[:, int(np.rint(y)), int(np.rint(xx))]
                else:
                    t, l = math.floor(y), math.floor(xx)
                    bt, r = min(t + 1, h - 1), min(l + 1, w - 1)
                    fy, fx = y - t, xx - l
                    top = img[:, t, l] * (1 - fx) + img[:, t, r] * fx
                    bottom = img[:, bt, l] * (1 - fx) + img[:, bt, r] * fx
                    out[b, :, i, j] = top * (1 - fy) + bottom * fy
    return out


x_crop = f32(2, 3, 6, 7)
boxes = np.array([[0.1, 0.2, 0.8, 0.9], [0.0, 0.0, 1.0, 1.0], [-0.2, 0.3, 0.5, 1.2], [0.7, 0.6, 0.2, 0.1]], np.float32)
box_indices = np.array([1, 0, 1, 0], np.int32)
case("image.crop_and_resize", "bilinear", [x_crop, boxes, box_indices],
     [crop_and_resize_ref(d64(x_crop), d64(boxes), box_indices, (4, 5))], {"crop_size": [4, 5]},
     out_dtypes=["float32"], atol=1e-5)
case("image.crop_and_resize", "nearest_extrapolate", [x_crop, boxes, box_indices],
     [crop_and_resize_ref(d64(x_crop), d64(boxes), box_indices, (3, 3), "nearest_neighbor", -1.0)],
     {"crop_size": [3, 3], "method": "nearest_neighbor", "extrapolation_value": -1.0}, out_dtypes=["float32"])
case("image.crop_and_resize", "nhwc_1x1_crop", [x_crop.transpose(0, 2, 3, 1), boxes, box_indices],
     [crop_and_resize_ref(d64(x_crop), d64(boxes), box_indices, (1, 1)).transpose(0, 2, 3, 1)],
     {"crop_size": [1, 1], "layout": "NHWC"}, out_dtypes=["float32"], atol=1e-5)
case("image.crop_and_resize", "no_boxes", [x_crop, np.zeros((0, 4), np.float32), np.zeros(0, np.int32)],
     [np.zeros((0, 3, 2, 2), np.float32)], {"crop_size": [2, 2]})
error("image.crop_and_resize", "index_out_of_range", [x_crop, boxes, np.array([0, 2, 1, 0], np.int32)], {"crop_size": [2, 2]})
error("image.crop_and_resize", "boxes_not_4", [x_crop, boxes[:, :3], box_indices], {"crop_size": [2, 2]})
error("image.crop_and_resize", "float_indices", [x_crop, boxes, box_indices.astype(np.float32)], {"crop_size": [2, 2]})


# ---------------------------------------------------------------- data-dependent shapes: argwhere,
# unique, the dyn.* operators (shape operands as tensors), adv_index, reinterpret. Own stream,
# so sections appended by others do not shift it.
RNG = np.random.default_rng(4242)


def i32(*values):
    return np.array(values, np.int32)


def i64(*values):
    return np.array(values, np.int64)


xw = f32(3, 4)
xw[np.abs(xw) < 0.8] = 0
case("argwhere", "float_2d", [xw], [np.argwhere(xw).astype(np.int32)])
xwb = RNG.integers(0, 2, (2, 3, 2)).astype(bool)
case("argwhere", "bool_3d", [xwb], [np.argwhere(xwb).astype(np.int32)])
case("argwhere", "none_nonzero", [np.zeros((2, 2), np.int8)], [np.zeros((0, 2), np.int32)])
case("argwhere", "scalar_nonzero", [np.array(5, np.int32)], [np.zeros((1, 0), np.int32)])
case("argwhere", "nan_is_nonzero", [np.array([0, np.nan, 1], np.float32)], [i32(1, 2).reshape(2, 1)])


def unique_ref(x, is_sorted, counts):
    """TVM's unique from NumPy's: first-occurrence order unless sorted; padded past the count
    with 0 (values, counts) and len(x) (first occurrences)."""
    uniq, index, inverse, cnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if not is_sorted:
        order = np.argsort(index, kind="stable")
        position = np.argsort(order)
        uniq, index, cnt, inverse = uniq[order], index[order], cnt[order], position[inverse]
    n, k = len(x), len(uniq)
    out = np.zeros(n, x.dtype)
    out[:k] = uniq
    first = np.full(n, n, np.int32)
    first[:k] = index
    count = np.zeros(n, np.int32)
    count[:k] = cnt
    res = [out, first, inverse.astype(np.int32), i32(k)]
    return res + [count] if counts else res


xu = ints(12, lo=-3, hi=4)
case("unique", "sorted_counts", [xu], unique_ref(xu, True, True), {"return_counts": True})
xu64 = ints(9, lo=0, hi=5, dtype="int64")
case("unique", "unsorted_int64", [xu64], unique_ref(xu64, False, False), {"sorted": False})
xu8 = ints(7, lo=-2, hi=2, dtype="int8")
case("unique", "unsorted_counts_int8", [xu8], unique_ref(xu8, False, True), {"sorted": False, "return_counts": True})
case("unique", "defaults", [i32(4, 5, 1, 2, 3, 3, 4, 5)], unique_ref(i32(4, 5, 1, 2, 3, 3, 4, 5), True, False))
error("unique", "two_dims", [ints(2, 2)])
error("unique", "floats", [f32(3)])

xr = f32(2, 3, 4)
case("dyn.reshape", "zero_copies_minus_one_infers", [xr, i64(4, 0, -1)], [xr.reshape(4, 3, 2)])
case("dyn.reshape", "flatten_int32_shape", [xr, i32(-1)], [xr.reshape(-1)])
case("dyn.reshape", "merge_two", [xr, i64(-3, 4)], [xr.reshape(6, 4)])
case("dyn.reshape", "allowzero", [np.zeros((0, 3), np.float32), i32(3, 0)], [np.zeros((3, 0), np.float32)],
     {"allowzero": True})
error("dyn.reshape", "minus_two_makes_rank_dynamic", [xr, i64(-2)])
error("dyn.reshape", "wrong_size", [xr, i64(5, 5)])
error("dyn.reshape", "float_shape", [xr, np.array([24.0], np.float32)])

xbt = f32(3, 1)
case("dyn.broadcast_to", "to_rank_3", [xbt, i64(2, 3, 4)], [np.broadcast_to(xbt, (2, 3, 4))])
xbi = ints(1, dtype="int8")
case("dyn.broadcast_to", "int8_int32_shape", [xbi, i32(5)], [np.broadcast_to(xbi, (5,))])
xbb = RNG.integers(0, 2, (2, 1)).astype(bool)
case("dyn.broadcast_to", "bool", [xbb, i64(2, 2)], [np.broadcast_to(xbb, (2, 2))])
error("dyn.broadcast_to", "incompatible", [xbt, i64(2, 2)])
error("dyn.broadcast_to", "shape_as_attribute", [xbt, i64(3, 4)], {"shape": [3, 4]})

case("dyn.full", "float", [np.array(1.5, np.float32), i64(2, 3)], [np.full((2, 3), 1.5, np.float32)])
case("dyn.full", "to_int32", [np.array(2.7, np.float32), i32(4)], [np.full((4,), 2, np.int32)], {"dtype": "int32"})
case("dyn.full", "empty", [np.array(7, np.int64), i32(0, 2)], [np.zeros((0, 2), np.int64)])
error("dyn.full", "fill_not_scalar", [f32(2), i64(2)])
error("dyn.full", "negative_size", [np.array(1.0, np.float32), i64(-1)])

case("dyn.zeros", "float32_default", [i64(2, 3)], [np.zeros((2, 3), np.float32)])
case("dyn.zeros", "int8", [i32(4)], [np.zeros(4, np.int8)], {"dtype": "int8"})
case("dyn.zeros", "scalar", [np.zeros(0, np.int64)], [np.zeros((), np.float32)])
error("dyn.zeros", "negative_size", [i64(2, -3)])
error("dyn.zeros", "two_d_shape", [np.ones((2, 2), np.int64)])

case("dyn.ones", "float32_default", [i32(3, 1)], [np.ones((3, 1), np.float32)])
case("dyn.ones", "int64", [i64(2, 2)], [np.ones((2, 2), np.int64)], {"dtype": "int64"})
case("dyn.ones", "bool", [i64(3)], [np.ones(3, bool)], {"dtype": "bool"})
error("dyn.ones", "float_shape", [np.array([2.0], np.float32)])

xt = f32(2, 3)
case("dyn.tile", "same_rank", [xt, i64(2, 1)], [np.tile(xt, (2, 1))])
case("dyn.tile", "more_reps", [xt, i32(2, 1, 2)], [np.tile(xt, (2, 1, 2))])
case("dyn.tile", "fewer_reps", [xt, i64(3)], [np.tile(xt, (3,))])
error("dyn.tile", "negative", [xt, i64(-1, 1)])

xs = f32(4, 5, 3)
case("dyn.strided_slice", "two_axes", [xs, i64(1, 0), i64(4, 5), i64(2, 2)], [xs[1:4:2, 0:5:2]])
case("dyn.strided_slice", "negative_stride", [xs, i32(3), i32(0), i32(-1)], [xs[3:0:-1]])
case("dyn.strided_slice", "size_mode", [xs, i64(1, 1), i64(2, -1), i64(1, 1)], [xs[1:3, 1:]],
     {"slice_mode": "size"})
case("dyn.strided_slice", "end_past_extent", [xs, i64(0, 0, 1), i64(9, 9, 9), i64(1, 1, 1)], [xs[:, :, 1:]])
error("dyn.strided_slice", "lengths_differ", [xs, i64(0), i64(1, 2), i64(1)])
error("dyn.strided_slice", "zero_stride", [xs, i64(0), i64(2), i64(0)])

xk = f32(3, 5)
order_desc = np.argsort(-xk, axis=-1, kind="stable")
case("dyn.topk", "k2_both", [xk, np.array(2, np.int32)],
     [np.take_along_axis(xk, order_desc[:, :2], -1), order_desc[:, :2].astype(np.int32)])
order_asc0 = np.argsort(xk, axis=0, kind="stable")
case("dyn.topk", "ascending_axis0_indices", [xk, i64(2)], [order_asc0[:2].astype(np.int32)],
     {"axis": 0, "is_ascend": True, "ret_type": "indices"})
case("dyn.topk", "k0_whole_axis_values", [xk, np.array(0, np.int64)], [np.take_along_axis(xk, order_desc, -1)],
     {"ret_type": "values"})
error("dyn.topk", "k_as_attribute", [xk, np.array(2, np.int32)], {"k": 2})
error("dyn.topk", "k_too_large", [xk, np.array(6, np.int32)])


def one_hot_ref(idx, on, off, depth, axis, dtype):
    res = np.where(idx[..., None] == np.arange(depth), on, off).astype(dtype)
    return res if axis == -1 else np.moveaxis(res, -1, axis)


xo = i32(0, 2, -1, 1, 3)
on, off = np.array(1.0, np.float32), np.array(0.0, np.float32)
case("dyn.one_hot", "last_axis", [xo, on, off, np.array(3, np.int32)], [one_hot_ref(xo, 1.0, 0.0, 3, -1, np.float32)],
     {"dtype": "float32"})
xo2 = ints(2, 3, lo=0, hi=4, dtype="int64")
case("dyn.one_hot", "axis0_int64_depth", [xo2, np.array(5, np.int32), np.array(-1, np.int32), i64(4)],
     [one_hot_ref(xo2, 5, -1, 4, 0, np.int32)], {"axis": 0, "dtype": "int32"})
case("dyn.one_hot", "middle_axis", [xo2, on, off, np.array(2, np.int64)],
     [one_hot_ref(xo2, 1.0, 0.0, 2, 1, np.float32)], {"axis": 1, "dtype": "float32"})
error("dyn.one_hot", "dtype_required", [xo, on, off, np.array(3, np.int32)])
error("dyn.one_hot", "negative_depth", [xo, on, off, np.array(-3, np.int32)], {"dtype": "float32"})

xq = f32(1, 3, 1, 2)
case("dyn.squeeze", "two_axes", [xq, i64(0, 2)], [xq.reshape(3, 2)])
case("dyn.squeeze", "negative_axis", [xq, i32(-2)], [xq.reshape(1, 3, 2)])
case("dyn.squeeze", "no_axes", [xq, np.zeros(0, np.int64)], [xq])
error("dyn.squeeze", "size_three", [xq, i64(1)])

xe = f32(2, 3)
case("dyn.expand_dims", "middle", [xe, np.array(1, np.int32)], [xe.reshape(2, 1, 3)])
case("dyn.expand_dims", "two_at_end", [xe, np.array(-1, np.int64)], [xe.reshape(2, 3, 1, 1)], {"num_newaxis": 2})
case("dyn.expand_dims", "front_one_value_list", [xe, i64(0)], [xe.reshape(1, 2, 3)])
error("dyn.expand_dims", "out_of_range", [xe, np.array(4, np.int32)])

xp = f32(2, 3)
pw = np.array([[1, 0], [2, 1]], np.int64)
case("dyn.nn.pad", "constant", [xp, pw, np.array(9.5, np.float32)],
     [np.pad(xp, [(1, 0), (2, 1)], constant_values=9.5)])
case("dyn.nn.pad", "edge_int32_widths", [xp, pw.astype(np.int32), np.array(0.0, np.float32)],
     [np.pad(xp, [(1, 0), (2, 1)], mode="edge")], {"pad_mode": "edge"})
pw2 = np.array([[1, 1], [1, 2]], np.int64)
case("dyn.nn.pad", "reflect", [xp, pw2, np.array(0.0, np.float32)], [np.pad(xp, [(1, 1), (1, 2)], mode="reflect")],
     {"pad_mode": "reflect"})
error("dyn.nn.pad", "widths_not_pairs", [xp, np.zeros((2, 3), np.int64), np.array(0.0, np.float32)])
error("dyn.nn.pad", "negative_width", [xp, np.array([[0, -1], [0, 0]], np.int64), np.array(0.0, np.float32)])

xup = f32(1, 2, 2, 3)
case("dyn.nn.upsampling", "nearest_nchw", [xup, np.array(2.0, np.float32), np.array(3.0, np.float32)],
     [xup.repeat(2, axis=2).repeat(3, axis=3)])
case("dyn.nn.upsampling", "nearest_nhwc_int_scales", [xup.transpose(0, 2, 3, 1), np.array(3, np.int32),
     np.array(1, np.int32)], [xup.transpose(0, 2, 3, 1).repeat(3, axis=1)], {"layout": "NHWC"})
xupi = ints(1, 1, 2, 2, dtype="int32")
case("dyn.nn.upsampling", "int32_data", [xupi, np.array(2.0, np.float64), np.array(2.0, np.float64)],
     [xupi.repeat(2, axis=2).repeat(2, axis=3)])
error("dyn.nn.upsampling", "zero_scale", [xup, np.array(0.0, np.float32), np.array(2.0, np.float32)])


def bilinear_align_corners(x, oh, ow):
    """NCHW bilinear resampling with the corner pixels' centres aligned."""
    _, _, h, w = x.shape
    ys = np.arange(oh) * ((h - 1) / (oh - 1)) if oh > 1 else np.zeros(1)
    xs = np.arange(ow) * ((w - 1) / (ow - 1)) if ow > 1 else np.zeros(1)
    y0 = np.floor(ys).astype(int)
    x0 = np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (ys - y0)[:, None], (xs - x0)[None, :]
    x = d64(x)
    top = x[:, :, y0][:, :, :, x0] * (1 - wx) + x[:, :, y0][:, :, :, x1] * wx
    bottom = x[:, :, y1][:, :, :, x0] * (1 - wx) + x[:, :, y1][:, :, :, x1] * wx
    return top * (1 - wy) + bottom * wy


roi0 = np.zeros(4, np.float32)
xrs = f32(1, 2, 2, 3)
case("dyn.image.resize2d", "nearest_asymmetric", [xrs, i64(4, 6), roi0], [xrs.repeat(2, axis=2).repeat(2, axis=3)],
     {"method": "nearest_neighbor", "coordinate_transformation_mode": "asymmetric"})
case("dyn.image.resize2d", "linear_align_corners", [xrs, i32(3, 5), roi0], [bilinear_align_corners(xrs, 3, 5)],
     {"coordinate_transformation_mode": "align_corners"}, atol=1e-5, out_dtypes=["float32"])
xrn = f32(1, 2, 3, 2)
case("dyn.image.resize2d", "nhwc_nearest", [xrn, i64(4, 3), roi0], [xrn.repeat(2, axis=1)],
     {"layout": "NHWC", "method": "nearest_neighbor", "coordinate_transformation_mode": "asymmetric"})
error("dyn.image.resize2d", "three_sizes", [xrs, i64(4, 6, 2), roi0])

xai = f32(3, 4)
rows, cols = i64(2, -3).reshape(2, 1), i32(1, 0, 3)
case("adv_index", "two_broadcast_indices", [xai, rows, cols], [xai[rows, cols]])
xa3 = f32(4, 2, 3)
ia = i32(3, 0, 3)
case("adv_index", "one_index_keeps_rest", [xa3, ia], [xa3[ia]])
xa8 = ints(3, 2, 2, dtype="int8")
ib, ic = i64(0, 2), i64(1, 1)
case("adv_index", "int8_two_of_three_axes", [xa8, ib, ic], [xa8[ib, ic]])
error("adv_index", "out_of_range", [xai, i32(3)])
error("adv_index", "float_index", [xai, np.array([1.0], np.float32)])
error("adv_index", "too_many_indices", [f32(2), i32(0), i32(0)])

xri = f32(2, 3)
case("reinterpret", "float32_as_int32", [xri], [xri.view(np.int32)], {"dtype": "int32"})
# Floats exact in short decimal: JSON readers need not round-trip every float64 bit.
xr64 = np.array([1.5, -2.25, 1e6, 0.125, -0.0])
case("reinterpret", "float64_as_int64", [xr64], [xr64.view(np.int64)], {"dtype": "int64"})
xr8 = ints(5, lo=-128, hi=127, dtype="int8")
case("reinterpret", "int8_as_uint8", [xr8], [xr8.view(np.uint8)], {"dtype": "uint8"})
error("reinterpret", "width_differs", [xri], {"dtype": "int64"})
error("reinterpret", "bool", [np.array([True, False])], {"dtype": "int8"})

# ---------------------------------------------------------------- vision (helper vops)
# TVM v0.16's vision operators written from their documented semantics
# (python/tvm/topi/vision, python/tvm/topi/testing), independently of the Rust.
RNG = np.random.default_rng(5151)


def q8(*shape):
    """Float32 multiples of 1/8 in [-2, 2]: exact and short in JSON (the vectors stay small)."""
    return (RNG.integers(-16, 17, shape) / 8).astype(np.float32)


def multibox_prior_ref(shape, sizes, ratios, steps=(-1.0, -1.0), offsets=(0.5, 0.5), clip=False):
    h, w = shape[2], shape[3]
    step_h = steps[0] if steps[0] > 0 else 1.0 / h
    step_w = steps[1] if steps[1] > 0 else 1.0 / w
    half = [(s * h / w / 2, s / 2) for s in sizes]
    half += [(sizes[0] * h / w * np.sqrt(r) / 2, sizes[0] / np.sqrt(r) / 2) for r in ratios[1:]]
    half = np.array(half)  # (boxes, 2): half width, half height
    cy, cx = np.meshgrid((np.arange(h) + offsets[0]) * step_h, (np.arange(w) + offsets[1]) * step_w,
                         indexing="ij")
    cx, cy = cx[:, :, None], cy[:, :, None]
    out = np.stack([cx - half[:, 0], cy - half[:, 1], cx + half[:, 0], cy + half[:, 1]], axis=-1)
    out = out.reshape(1, -1, 4)
    return np.clip(out, 0, 1) if clip else out


xmp = q8(1, 1, 1, 2)
case("vision.multibox_prior", "defaults", [xmp], [multibox_prior_ref(xmp.shape, [1.0], [1.0])],
     out_dtypes=["float32"])
mp_attrs = {"sizes": [0.5, 0.25], "ratios": [1.0, 2.0, 0.5]}
case("vision.multibox_prior", "sizes_and_ratios", [xmp],
     [multibox_prior_ref(xmp.shape, [0.5, 0.25], [1.0, 2.0, 0.5])], mp_attrs, out_dtypes=["float32"])
case("vision.multibox_prior", "steps_offsets_clip", [q8(1, 1, 2, 1)],
     [multibox_prior_ref((1, 1, 2, 1), [0.9], [1.0, 3.0], (0.4, 0.3), (0.2, 0.7), True)],
     {"sizes": [0.9], "ratios": [1.0, 3.0], "steps": [0.4, 0.3], "offsets": [0.2, 0.7], "clip": True},
     out_dtypes=["float32"])
error("vision.multibox_prior", "three_d_data", [q8(1, 2, 2)])
error("vision.multibox_prior", "one_step", [xmp], {"steps": [0.1]})
error("vision.multibox_prior", "no_sizes", [xmp], {"sizes": []})


def yolo_reorg_ref(x, s):
    # Darknet's reorg (forward=0): the input read as (b, c / s^2, h * s, w * s), each s x s
    # block of that image becomes a group of channels.
    b, c, h, w = x.shape
    blocks = x.reshape(b, c // (s * s), h, s, w, s).transpose(0, 3, 5, 1, 2, 4)
    return blocks.reshape(b, c * s * s, h // s, w // s)


xyr = q8(1, 4, 2, 4)
case("vision.yolo_reorg", "stride2", [xyr], [yolo_reorg_ref(xyr, 2)], {"stride": 2})
xyr3 = ints(1, 9, 3, 3, dtype="int32")
case("vision.yolo_reorg", "stride3_int32", [xyr3], [yolo_reorg_ref(xyr3, 3)], {"stride": 3})
xyr1 = q8(1, 1, 2, 2)
case("vision.yolo_reorg", "stride1_identity", [xyr1], [xyr1], {"stride": 1})
error("vision.yolo_reorg", "height_not_divisible", [q8(1, 4, 3, 2)], {"stride": 2})
error("vision.yolo_reorg", "channels_not_divisible", [q8(1, 2, 2, 2)], {"stride": 2})
error("vision.yolo_reorg", "zero_stride", [xyr], {"stride": 0})


def roi_bilinear(img, y, x):
    """TVM roi_align's sample of one (c, h, w) image: 0 beyond one pixel outside."""
    _, h, w = img.shape
    if y < -1.0 or x < -1.0 or y > h or x > w:
        return np.zeros(img.shape[0])
    y, x = min(max(y, 0.0), h - 1), min(max(x, 0.0), w - 1)
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    y1, x1 = min(int(np.ceil(y)), h - 1), min(int(np.ceil(x)), w - 1)
    ly, lx = y - y0, x - x0
    return (img[:, y0, x0] * (1 - ly) * (1 - lx) + img[:, y0, x1] * (1 - ly) * lx
            + img[:, y1, x0] * ly * (1 - lx) + img[:, y1, x1] * ly * lx)


def roi_align_ref(x, rois, pooled, scale, ratio=-1, mode="avg", layout="NCHW"):
    if layout == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    x, rois = d64(x), d64(rois)
    ph, pw = pooled
    out = np.zeros((len(rois), x.shape[1], ph, pw))
    for r, (bi, x1, y1, x2, y2) in enumerate(rois):
        img = x[int(bi)]
        x1, y1, x2, y2 = x1 * scale, y1 * scale, x2 * scale, y2 * scale
        rh, rw = max(y2 - y1, 1.0), max(x2 - x1, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = ratio if ratio > 0 else int(np.ceil(rh / ph))
        gw = ratio if ratio > 0 else int(np.ceil(rw / pw))
        for i in range(ph):
            for j in range(pw):
                samples = [roi_bilinear(img, y1 + i * bh + (a + 0.5) * bh / gh, x1 + j * bw + (b + 0.5) * bw / gw)
                           for a in range(gh) for b in range(gw)]
                out[r, :, i, j] = np.mean(samples, axis=0) if mode == "avg" else np.max(samples, axis=0)
    return out.transpose(0, 2, 3, 1) if layout == "NHWC" else out


xra = q8(2, 1, 5, 6)
rois_a = np.array([[0, 1.0, 1.5, 9.0, 8.0], [1, -1.0, 0.5, 4.5, 3.0], [1, 10.0, 11.0, 14.5, 13.0],
                   [0, 3.0, 3.0, 3.2, 3.1]], np.float32)
case("vision.roi_align", "avg_adaptive", [xra, rois_a], [roi_align_ref(xra, rois_a, (2, 3), 0.5)],
     {"pooled_size": [2, 3], "spatial_scale": 0.5}, atol=1e-5, out_dtypes=["float32"])
case("vision.roi_align", "max_ratio2", [xra, rois_a], [roi_align_ref(xra, rois_a, (3, 3), 0.5, 2, "max")],
     {"pooled_size": [3], "spatial_scale": 0.5, "sample_ratio": 2, "mode": "max"}, atol=1e-5,
     out_dtypes=["float32"])
xrn = xra.transpose(0, 2, 3, 1).copy()
case("vision.roi_align", "nhwc_scale1", [xrn, rois_a], [roi_align_ref(xrn, rois_a, (2, 2), 1.0, 1, "avg", "NHWC")],
     {"pooled_size": [2, 2], "spatial_scale": 1.0, "sample_ratio": 1, "layout": "NHWC"}, atol=1e-5,
     out_dtypes=["float32"])
xre = q8(1, 1, 2, 2)  # the small data of the error cases
error("vision.roi_align", "rois_of_four", [xre, rois_a[:, 1:]], {"pooled_size": [2], "spatial_scale": 1.0})
error("vision.roi_align", "batch_index_out_of_range", [xre, np.array([[2, 0, 0, 1, 1]], np.float32)],
      {"pooled_size": [2], "spatial_scale": 1.0})
error("vision.roi_align", "no_spatial_scale", [xre, rois_a], {"pooled_size": [2]})


def roi_pool_ref(x, rois, pooled, scale, layout="NCHW"):
    if layout == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    x, rois = d64(x), d64(rois)
    ph, pw = pooled
    _, _, h, w = x.shape
    out = np.zeros((len(rois), x.shape[1], ph, pw))
    for r, roi in enumerate(rois):
        img = x[int(roi[0])]
        x1, y1, x2, y2 = (int(np.round(v * scale)) for v in roi[1:])
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bh, bw = rh / ph, rw / pw
        for i in range(ph):
            for j in range(pw):
                ys = min(max(int(np.floor(i * bh + 1e-5)) + y1, 0), h)
                ye = min(max(int(np.ceil((i + 1) * bh - 1e-5)) + y1, 0), h)
                xs = min(max(int(np.floor(j * bw + 1e-5)) + x1, 0), w)
                xe = min(max(int(np.ceil((j + 1) * bw - 1e-5)) + x1, 0), w)
                out[r, :, i, j] = img[:, ys:ye, xs:xe].max(axis=(1, 2)) if ys < ye and xs < xe else 0
    return out.transpose(0, 2, 3, 1) if layout == "NHWC" else out


rois_p = np.array([[0, 1.0, 1.0, 9.0, 8.0], [1, -2.0, 0.0, 4.0, 3.0], [1, 20.0, 20.0, 24.0, 26.0],
                   [0, 6.0, 2.0, 6.0, 2.0]], np.float32)
case("vision.roi_pool", "scale_half", [xra, rois_p], [roi_pool_ref(xra, rois_p, (2, 3), 0.5)],
     {"pooled_size": [2, 3], "spatial_scale": 0.5}, out_dtypes=["float32"])
case("vision.roi_pool", "scale1_3x3", [xra, rois_p], [roi_pool_ref(xra, rois_p, (3, 3), 1.0)],
     {"pooled_size": [3], "spatial_scale": 1.0}, out_dtypes=["float32"])
case("vision.roi_pool", "nhwc", [xrn, rois_p], [roi_pool_ref(xrn, rois_p, (2, 2), 0.75, "NHWC")],
     {"pooled_size": [2, 2], "spatial_scale": 0.75, "layout": "NHWC"}, out_dtypes=["float32"])
error("vision.roi_pool", "rois_dtype", [xre, rois_p.astype(np.float64)], {"pooled_size": [2], "spatial_scale": 1.0})
error("vision.roi_pool", "pooled_size_three", [xre, rois_p], {"pooled_size": [2, 2, 2], "spatial_scale": 1.0})
error("vision.roi_pool", "nchw4c", [xre, rois_p], {"pooled_size": [2], "spatial_scale": 1.0, "layout": "NCHW4c"})


def conv_transpose_ref(x, w, strides, before, after, output_padding, dilation, groups=1):
    """Each input element scatters x * w over the full output, then `before`/`after` are cut."""
    x, w = d64(x), d64(w)
    n, c, spatial, k, og = x.shape[0], x.shape[1], x.shape[2:], w.shape[2:], w.shape[1]
    full = [(s - 1) * st + (kk - 1) * d + 1 + op for s, st, kk, d, op in zip(spatial, strides, k, dilation, output_padding)]
    out = np.zeros([n, og * groups] + full)
    per = c // groups
    for ch in range(c):
        g = ch // per
        for idx in np.ndindex(*spatial):
            for tap in np.ndindex(*k):
                pos = tuple(i * st + t * d for i, st, t, d in zip(idx, strides, tap, dilation))
                out[(slice(None), slice(g * og, (g + 1) * og)) + pos] += (
                    x[(slice(None), ch) + idx][:, None] * w[(ch, slice(None)) + tap][None, :])
    crop = tuple(slice(b, f - a) for b, a, f in zip(before, after, full))
    return out[(slice(None), slice(None)) + crop]


xct = q8(1, 2, 2, 2, 2)
wct = q8(2, 1, 2, 2, 2)
case("nn.conv3d_transpose", "defaults", [xct, wct], [conv_transpose_ref(xct, wct, (1, 1, 1), (0, 0, 0), (0, 0, 0),
                                                                        (0, 0, 0), (1, 1, 1))],
     atol=1e-5, out_dtypes=["float32"])
xct2 = q8(1, 2, 2, 1, 2)
wct2 = q8(2, 1, 2, 2, 2)
case("nn.conv3d_transpose", "strides_padding6_output_padding_groups", [xct2, wct2],
     [conv_transpose_ref(xct2, wct2, (2, 1, 3), (1, 0, 1), (0, 1, 2), (1, 0, 2), (1, 1, 1), 2)],
     {"strides": [2, 1, 3], "padding": [1, 0, 1, 0, 1, 2], "output_padding": [1, 0, 2], "groups": 2, "channels": 2},
     atol=1e-5, out_dtypes=["float32"])
case("nn.conv3d_transpose", "dilation_padding1", [xct, wct],
     [conv_transpose_ref(xct, wct, (2, 2, 2), (1, 1, 1), (1, 1, 1), (0, 0, 0), (2, 1, 2))],
     {"strides": [2], "padding": [1], "dilation": [2, 1, 2], "kernel_size": [2, 2, 2]}, atol=1e-5,
     out_dtypes=["float32"])
xci = ints(1, 1, 2, 2, 2, lo=-3, hi=3, dtype="int8")
wci = ints(1, 2, 2, 1, 2, lo=-3, hi=3, dtype="int8")
case("nn.conv3d_transpose", "int8_out_int32", [xci, wci],
     [conv_transpose_ref(xci, wci, (1, 1, 1), (0, 0, 0), (0, 0, 0), (0, 0, 0), (1, 1, 1)).astype(np.int32)],
     {"out_dtype": "int32"})
error("nn.conv3d_transpose", "weight_channels_differ", [xct, q8(3, 1, 2, 2, 2)])
error("nn.conv3d_transpose", "output_padding_not_below_stride", [xct, wct], {"output_padding": [1, 0, 0]})
error("nn.conv3d_transpose", "layout_oidhw", [xct, wct], {"kernel_layout": "OIDHW"})
error("nn.conv3d_transpose", "padding_four_values", [xct, wct], {"padding": [1, 1, 1, 1]})


def deformable_conv2d_ref(x, offset, w, strides=(1, 1), pads=(0, 0), dilation=(1, 1), dgroups=1, groups=1):
    """TVM's deformable_conv2d_nchw: each tap samples the data at its position plus its offset
    (bilinear, 0 outside [0, h) x [0, w), the upper neighbours clamped to the edge), then a
    grouped convolution contracts the samples."""
    x, offset, w = d64(x), d64(offset), d64(w)
    n, c, h, wd = x.shape
    o, ci, kh, kw = w.shape
    oh, ow = offset.shape[2:]
    cols = np.zeros((n, c, kh, kw, oh, ow))
    for b, ch, ky, kx, y, xx in np.ndindex(n, c, kh, kw, oh, ow):
        base = (ch // (c // dgroups)) * kh * kw * 2 + (ky * kw + kx) * 2
        py = y * strides[0] - pads[0] + ky * dilation[0] + offset[b, base, y, xx]
        px = xx * strides[1] - pads[1] + kx * dilation[1] + offset[b, base + 1, y, xx]
        if py < 0 or px < 0 or py >= h or px >= wd:
            continue
        y0, x0 = int(np.floor(py)), int(np.floor(px))
        y1, x1 = min(int(np.ceil(py)), h - 1), min(int(np.ceil(px)), wd - 1)
        ly, lx = py - y0, px - x0
        img = x[b, ch]
        cols[b, ch, ky, kx, y, xx] = ((img[y0, x0] * (1 - lx) + img[y0, x1] * lx) * (1 - ly)
                                      + (img[y1, x0] * (1 - lx) + img[y1, x1] * lx) * ly)
    out = np.zeros((n, o, oh, ow))
    per = o // groups
    for f in range(o):
        first = (f // per) * ci
        out[:, f] = np.einsum("bcklyx,ckl->byx", cols[:, first:first + ci], w[f])
    return out


xdc = q8(1, 2, 3, 3)
wdc = q8(2, 2, 2, 2)
odc = q8(1, 16, 4, 4)
case("nn.deformable_conv2d", "padding1_two_deformable_groups", [xdc, odc, wdc],
     [deformable_conv2d_ref(xdc, odc, wdc, pads=(1, 1), dgroups=2)],
     {"padding": [1], "deformable_groups": 2, "channels": 2, "kernel_size": [2, 2]}, atol=1e-5, out_dtypes=["float32"])
odz = np.zeros((1, 8, 2, 2), np.float32)
case("nn.deformable_conv2d", "zero_offsets_are_conv2d", [xdc, odz, wdc],
     [deformable_conv2d_ref(xdc, odz, wdc)], atol=1e-5, out_dtypes=["float32"])
xdg = q8(1, 2, 5, 5)
wdg = q8(2, 1, 2, 2)
odg = q8(1, 8, 2, 2)
case("nn.deformable_conv2d", "strides_dilation_groups", [xdg, odg, wdg],
     [deformable_conv2d_ref(xdg, odg, wdg, strides=(2, 3), dilation=(2, 1), groups=2)],
     {"strides": [2, 3], "dilation": [2, 1], "groups": 2}, atol=1e-5, out_dtypes=["float32"])
xde, wde = q8(1, 1, 2, 2), q8(1, 1, 1, 1)  # the small operands of the error cases
error("nn.deformable_conv2d", "offset_channels", [xde, np.zeros((1, 3, 2, 2), np.float32), wde])
error("nn.deformable_conv2d", "offset_dtype", [xde, np.zeros((1, 2, 2, 2)), wde])
error("nn.deformable_conv2d", "nhwc", [xde, np.zeros((1, 2, 2, 2), np.float32), wde], {"data_layout": "NHWC"})



# ---------------------------------------------------------------- vision: non-maximum suppression
# TVM v0.16's documented semantics (topi.vision.nms, ONNX NonMaxSuppression), written in plain
# NumPy/Python: no code shared with the Rust kernels.
RNG = np.random.default_rng(6161)


def box_iou(a, b):
    """Intersection over union of two boxes, each two opposite corners (p0, q0, p1, q1) in
    either order; 0 when the union has no area."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    lo_a, hi_a = np.minimum(a[:2], a[2:]), np.maximum(a[:2], a[2:])
    lo_b, hi_b = np.minimum(b[:2], b[2:]), np.maximum(b[:2], b[2:])
    inter = np.prod(np.clip(np.minimum(hi_a, hi_b) - np.maximum(lo_a, lo_b), 0, None))
    union = np.prod(hi_a - lo_a) + np.prod(hi_b - lo_b) - inter
    return inter / union if union > 0 else 0.0


def descending(scores):
    """Positions by score, highest first, ties by position, NaN last."""
    return sorted(range(len(scores)), key=lambda j: (np.isnan(scores[j]), -np.nan_to_num(scores[j]), j))


def random_boxes(n, span=4.0):
    """n boxes (p0, q0, p1, q1) of sizes 0.5..2.5 around centres in [0, span], some corners
    swapped, so that some overlap."""
    centre = RNG.uniform(0, span, (n, 2))
    half = RNG.uniform(0.25, 1.25, (n, 2))
    lo, hi = centre - half, centre + half
    swap = RNG.random(n) < 0.3
    first = np.where(swap[:, None], hi, lo)
    second = np.where(swap[:, None], lo, hi)
    return np.concatenate([first, second], axis=1)


def valid_counts_ref(data, threshold, id_index=0, score_index=1):
    b, n, _ = data.shape
    count = np.zeros(b, np.int32)
    out = np.full(data.shape, -1, data.dtype)
    indices = np.full((b, n), -1, np.int32)
    for i in range(b):
        valid = [j for j in range(n)
                 if data[i, j, score_index] > threshold and (id_index < 0 or data[i, j, id_index] >= 0)]
        count[i] = len(valid)
        out[i, :len(valid)] = data[i, valid]
        indices[i, :len(valid)] = valid
    return [count, out, indices]


def detections(b, n, classes=3, coord_start=2, score_index=1, id_index=0, k=6):
    """Rows of k columns: a class id in [-1, classes), a score in [0, 1), a box."""
    data = np.zeros((b, n, k), np.float32)
    for i in range(b):
        data[i, :, coord_start:coord_start + 4] = random_boxes(n)
    data[:, :, score_index] = RNG.random((b, n))
    if id_index >= 0:
        data[:, :, id_index] = RNG.integers(-1, classes, (b, n))
    return data


def nms_ref(data, valid_count, indices, max_output_size, iou_threshold, force_suppress=False, top_k=-1,
            coord_start=2, score_index=1, id_index=0, return_indices=True, invalid_to_bottom=False):
    b, n, k = data.shape
    out = np.full((b, n, k), -1.0)
    kept = np.full((b, n), -1, np.int64)
    for i in range(b):
        v = min(max(int(valid_count[i]), 0), n)
        if iou_threshold > 0:
            order = descending([float(data[i, j, score_index]) for j in range(v)])
            keep = top_k if 0 < top_k < v else v
            for j in range(keep):
                out[i, j], kept[i, j] = data[i, order[j]], order[j]
            count = 0
            for j in range(v):
                if count == max_output_size:
                    out[i, j], kept[i, j] = -1, -1
                    continue
                if not out[i, j, score_index] > 0:
                    continue
                suppressed = False
                for o in range(j):
                    active = out[i, o, score_index] > 0 and (id_index < 0 or out[i, o, id_index] >= 0)
                    same = force_suppress or id_index < 0 or out[i, o, id_index] == out[i, j, id_index]
                    box_j = out[i, j, coord_start:coord_start + 4]
                    box_o = out[i, o, coord_start:coord_start + 4]
                    if active and same and box_iou(box_j, box_o) >= iou_threshold:
                        suppressed = True
                if suppressed:
                    out[i, j], kept[i, j] = -1, -1
                else:
                    count += 1
        else:
            out[i, :v], kept[i, :v] = data[i, :v], np.arange(v)
        if return_indices:
            for j in range(v):
                if kept[i, j] >= 0:
                    kept[i, j] = indices[i, kept[i, j]]
    if return_indices:
        result = np.full((b, n), -1, np.int32)
        counts = np.zeros((b, 1), np.int32)
        for i in range(b):
            entries = []
            for d in kept[i]:
                if d >= 0:
                    entries.append(d)
                if d > n or d < -n:
                    entries.append(0)
            result[i, :min(len(entries), n)] = entries[:n]
            counts[i, 0] = len(entries)
        return [result, counts]
    if invalid_to_bottom:
        moved = np.full((b, n, k), -1.0)
        for i in range(b):
            rows = [r for r in out[i] if r[0] >= 0]
            moved[i, :len(rows)] = rows
        out = moved
    return [out.astype(data.dtype)]


def all_class_nms_ref(boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold):
    b, classes, n = scores.shape
    rows = []
    for i in range(b):
        for c in range(classes):
            kept = []
            for j in descending([float(s) for s in scores[i, c]]):
                if 0 < max_output_boxes_per_class <= len(kept) or not scores[i, c, j] > score_threshold:
                    break
                if all(not box_iou(boxes[i, j], boxes[i, o]) > iou_threshold for o in kept):
                    kept.append(j)
            rows += [[i, c, j] for j in kept]
    selected = np.zeros((b * classes * n, 3), np.int64)
    selected[:len(rows)] = np.array(rows, np.int64).reshape(-1, 3)
    return [selected, np.array([len(rows)], np.int64)]


xvc = detections(2, 5)
xvc[0, 2, 1] = np.nan
thr = np.float32(0.3)
case("vision.get_valid_counts", "defaults_nan_score", [xvc, thr], valid_counts_ref(xvc, thr))
xvc5 = detections(1, 6, coord_start=1, score_index=0, id_index=-1, k=5)
thr = np.float32(0.5)
case("vision.get_valid_counts", "no_class_score_first", [xvc5, thr], valid_counts_ref(xvc5, thr, -1, 0),
     {"id_index": -1, "score_index": 0})
case("vision.get_valid_counts", "no_boxes", [np.zeros((2, 0, 6), np.float32), np.float32(0)],
     valid_counts_ref(np.zeros((2, 0, 6), np.float32), 0))
error("vision.get_valid_counts", "two_d_data", [np.zeros((2, 6), np.float32), np.float32(0)])
error("vision.get_valid_counts", "score_column_missing", [xvc, np.float32(0)], {"score_index": 6})
error("vision.get_valid_counts", "threshold_not_scalar", [xvc, np.zeros(2, np.float32)])

xn = detections(2, 8)
vn, dn, in_ = valid_counts_ref(xn, np.float32(0.1))
case("vision.non_max_suppression", "indices_per_class",
     [dn, vn, in_, np.int32(-1), np.float32(0.3)], nms_ref(dn, vn, in_, -1, 0.3))
case("vision.non_max_suppression", "boxes_force_suppress_top_k",
     [dn, vn, in_, np.int32(-1), np.float32(0.2)], nms_ref(dn, vn, in_, -1, 0.2, True, 4, return_indices=False),
     {"force_suppress": True, "top_k": 4, "return_indices": False})
case("vision.non_max_suppression", "to_bottom_max_output",
     [dn, vn, in_, np.int32(2), np.float32(0.3)],
     nms_ref(dn, vn, in_, 2, 0.3, return_indices=False, invalid_to_bottom=True),
     {"return_indices": False, "invalid_to_bottom": True})
case("vision.non_max_suppression", "zero_threshold_keeps_order",
     [dn, vn, in_, np.int32(1), np.float32(0.0)], nms_ref(dn, vn, in_, 1, 0.0))
xn5 = detections(1, 7, coord_start=1, score_index=0, id_index=-1, k=5)
vn5 = np.array([5], np.int32)
in5 = np.arange(7, dtype=np.int32)[None, ::-1].copy()
case("vision.non_max_suppression", "no_class_int64_limit",
     [xn5, vn5, in5, np.int64(3), np.float32(0.1)],
     nms_ref(xn5, vn5, in5, 3, 0.1, coord_start=1, score_index=0, id_index=-1),
     {"coord_start": 1, "score_index": 0, "id_index": -1})
error("vision.non_max_suppression", "valid_count_int64", [dn, vn.astype(np.int64), in_, np.int32(-1), np.float32(0.5)])
error("vision.non_max_suppression", "coordinates_past_the_row", [dn, vn, in_, np.int32(-1), np.float32(0.5)],
      {"coord_start": 3})
error("vision.non_max_suppression", "indices_shape", [dn, vn, in_[:, :3], np.int32(-1), np.float32(0.5)])

ba = np.stack([random_boxes(7) for _ in range(2)]).astype(np.float32)
sa = RNG.random((2, 3, 7)).astype(np.float32)
case("vision.all_class_non_max_suppression", "limit_two",
     [ba, sa, np.int64(2), np.float32(0.3), np.float32(0.2)], all_class_nms_ref(ba, sa, 2, 0.3, 0.2))
case("vision.all_class_non_max_suppression", "no_limit_int32",
     [ba, sa, np.int32(-1), np.float32(0.5), np.float32(0.0)], all_class_nms_ref(ba, sa, -1, 0.5, 0.0))
sa_tied = np.round(sa * 2) / 2
case("vision.all_class_non_max_suppression", "tied_scores",
     [ba, sa_tied, np.int64(0), np.float32(0.2), np.float32(-1.0)], all_class_nms_ref(ba, sa_tied, 0, 0.2, -1.0))
error("vision.all_class_non_max_suppression", "boxes_of_five",
      [np.zeros((1, 2, 5), np.float32), np.zeros((1, 1, 2), np.float32), np.int64(1), np.float32(0.5), np.float32(0)])
error("vision.all_class_non_max_suppression", "scores_dtype",
      [ba, sa.astype(np.float64), np.int64(1), np.float32(0.5), np.float32(0)])
error("vision.all_class_non_max_suppression", "float_limit",
      [ba, sa, np.float32(1), np.float32(0.5), np.float32(0)])


# ---------------------------------------------------------------- Winograd convolutions

def winograd_g(m):
    """`G` of F(m x m, 3 x 3) (alpha x 3) from the interpolation points that
    stdlib/src/ops/nn/winograd.rs takes (TVM's): row j is a_j^k / prod_{l != j} (a_j - a_l), the
    last row picks the highest coefficient."""
    points = {2: [0.0, -1.0, 1.0], 4: [0.0, -1.0, 1.0, 0.5, -2.0]}[m]
    rows = []
    for j, a in enumerate(points):
        f = np.prod([a - b for l, b in enumerate(points) if l != j])
        rows.append([a ** k / f for k in range(3)])
    rows.append([0.0, 0.0, 1.0])
    return np.array(rows)


def winograd_weight_ref(w, m):
    """[o, i, 3, 3] -> [alpha, alpha, o, i]: G g G^T per (o, i)."""
    g = winograd_g(m)
    return np.einsum("xk,oikl,yl->xyoi", g, d64(w), g)


for m in (2, 4):
    w = f32(3, 2, 3, 3)
    case("nn.contrib_conv2d_winograd_weight_transform", f"tile{m}", [w], [winograd_weight_ref(w, m)],
         {"tile_size": m}, out_dtypes=["float32"], atol=1e-5)
    # The convolution of the transformed weight (laid out [alpha, alpha, in, out]) is the direct
    # convolution of the untransformed one, exactly in exact arithmetic.
    x = f32(1, 2, 7, 6)
    u = winograd_weight_ref(w, m).transpose(0, 1, 3, 2).astype(np.float32)
    case("nn.contrib_conv2d_winograd_without_weight_transform", f"tile{m}_pad1", [x, u],
         [conv2d_ref(d64(x), d64(w), pad=(1, 1, 1, 1))],
         {"tile_size": m, "padding": [1, 1], "channels": 3, "kernel_size": [3, 3]},
         out_dtypes=["float32"], atol=1e-4)
    xb = f32(2, 2, 5, 9)
    case("nn.contrib_conv2d_winograd_without_weight_transform", f"tile{m}_batch2_nopad", [xb, u],
         [conv2d_ref(d64(xb), d64(w))], {"tile_size": m}, out_dtypes=["float32"], atol=1e-4)
w1 = f32(1, 1, 3, 3)
case("nn.contrib_conv2d_winograd_weight_transform", "default_tile4_one_channel", [w1],
     [winograd_weight_ref(w1, 4)], {}, out_dtypes=["float32"], atol=1e-5)
error("nn.contrib_conv2d_winograd_weight_transform", "tile_size_3", [f32(3, 2, 3, 3)], {"tile_size": 3})
error("nn.contrib_conv2d_winograd_without_weight_transform", "alpha_mismatch",
      [f32(1, 2, 7, 6), f32(4, 4, 2, 3)], {"tile_size": 4})


def main():
    if os.path.isdir(OUT_DIR):
        shutil.rmtree(OUT_DIR)
    os.makedirs(OUT_DIR)
    total = 0
    for op in sorted(CASES):
        with open(os.path.join(OUT_DIR, op + ".json"), "w") as f:
            json.dump({"op": op, "cases": CASES[op]}, f, separators=(",", ":"))
            f.write("\n")
        total += len(CASES[op])
    print(f"{len(CASES)} ops, {total} cases -> {OUT_DIR}")


if __name__ == "__main__":
    main()
